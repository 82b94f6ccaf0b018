"""Build the compiled core (``workbench._accel``): ``python -m workbench._accel_build [jobs]``.

Cython compiles each listed module whose current source has no build yet into a C extension, in a temporary
directory (no generated file lands in the checkout), and each lands in the cache under the name
``_accel.artifact`` gives it. Without Cython, setuptools or a C compiler nothing is built, and workbench runs
as Python.
"""
import os
import shutil
import sys
import tempfile

from ._accel import MODULES, artifact, builds, cache_dir, current, source_path

KEEP = 4  # builds kept per module (prune)
DIRECTIVES = {
    "language_level": 3,
    "binding": True,  # functions keep __name__, __doc__, signatures and default arguments as Python's
    "annotation_typing": False,  # annotations stay hints: Cython must not turn them into type checks
}


def build(jobs=None, quiet=False):
    """Compile the listed modules whose current source has no build yet; returns the names built. Without
    Cython, setuptools or a C compiler it says so and builds nothing (workbench then runs as Python)."""
    say = (lambda *a: None) if quiet else (lambda *a: print("workbench._accel:", *a, file=sys.stderr))
    todo = [n for n in MODULES if not os.path.exists(current(n))]
    if not todo:
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
    except ImportError as e:
        say(f"not compiled ({e.name} is not installed: pip install cython setuptools); workbench runs as Python")
        return []
    with tempfile.TemporaryDirectory(prefix="workbench-accel-") as tmp:
        # each source is copied under its package path (Cython names the module by it; tracebacks show
        # workbench/autograd/engine.py) and hashed as copied; no generated file lands in the checkout
        src_root, where, rels = os.path.join(tmp, "src"), {}, {}
        for name in todo:
            rels[name] = os.path.join(*name.split(".")) + ".py"
            dst = os.path.join(src_root, rels[name])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(source_path(name), "rb") as f:
                src = f.read()
            with open(dst, "wb") as f:
                f.write(src)
            where[name] = artifact(name, src)
        cwd = os.getcwd()
        os.chdir(src_root)
        try:
            exts = cythonize([Extension(n, [rels[n]], extra_compile_args=["-O2", "-g0"]) for n in todo],
                             compiler_directives=DIRECTIVES, quiet=True, nthreads=jobs or 0,
                             build_dir=os.path.join(tmp, "c"))
            cmd = Distribution({"ext_modules": exts, "script_name": "workbench-accel"}).get_command_obj("build_ext")
            cmd.build_lib, cmd.build_temp = os.path.join(tmp, "lib"), os.path.join(tmp, "tmp")
            cmd.parallel = jobs or os.cpu_count() or 1
            cmd.ensure_finalized()
            cmd.run()
        except Exception as e:  # no compiler, a compile error: say so, keep Python
            say(f"not compiled ({type(e).__name__}: {e}); workbench runs as Python")
            return []
        finally:
            os.chdir(cwd)
        os.makedirs(cache_dir(), exist_ok=True)
        for name in todo:
            part = f"{where[name]}.{os.getpid()}.part"
            shutil.copyfile(cmd.get_ext_fullpath(name), part)
            os.replace(part, where[name])  # atomic: a process importing meanwhile sees all of it or nothing
            prune(name)
    say(f"compiled {len(todo)} module(s) into {cache_dir()}")
    return todo


def prune(name, keep=KEEP):
    """Delete all but the ``keep`` newest builds of ``name`` (each edit of its source adds one; checkouts of
    different versions share the cache, so more than the current one is kept)."""
    for path in sorted(builds(name), key=os.path.getmtime, reverse=True)[keep:]:
        os.remove(path)


if __name__ == "__main__":  # python -m workbench._accel_build [jobs]
    build(jobs=int(sys.argv[1]) if len(sys.argv) > 1 else None)
