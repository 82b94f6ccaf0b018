"""The compiled core: the autograd recorder, the engine, the Tensor core and the view ops, compiled by Cython
from these same Python files into C extension modules, and imported instead of them where a build of exactly
that source exists. Optional: without Cython or a C compiler, or with ``WORKBENCH_ACCEL=0``, they run as Python.

Why: on tiny tensors an op's cost is the interpreter running workbench's bookkeeping (make the node, link
its edges, wrap the result; the engine's walk), not NumPy. The same code compiled runs that bookkeeping
without the interpreter's dispatch: the 10-op chain fwd+bwd on 4x4 falls from ~94 to ~60 us (PyTorch:
~59), see benchmarks/RESULTS.md. The code stays the Python in the repository; nothing is written twice.

How:

* ``python -m workbench._accel_build`` (``make setup`` and ``make lab`` run it) compiles ``MODULES`` into the
  cache directory (``$WORKBENCH_ACCEL_DIR``, else ``$XDG_CACHE_HOME/workbench/accel``, else
  ``~/.cache/workbench/accel``), one extension per module, named by a hash of its source and of ``BUILD``.
  Up-to-date modules are skipped, so running it again is cheap; the 4 newest builds of a module are kept.
* ``install()``, which ``import workbench`` runs first, puts a finder in front of the usual ones: a listed
  module whose current source has a build in the cache is imported from it; anything else (an edited file,
  a new Python, no build) imports as Python. A build can be missing, never stale.

What differs, compiled: the code has no Python frames of its own. ``graph.user_frame`` therefore walks from
the innermost Python frame instead of skipping a fixed number of frames; NumPy warnings raised by a call
made directly from compiled code would be attributed to the user's line, so the modules listed do no array
arithmetic of their own except through ``workbench._pyframe`` (a frame in workbench, where the warnings
filter finds it); and ``inspect.getsource`` finds a compiled module's and class's source, not a function's.

>>> import workbench._accel as accel
>>> build = accel.current("workbench.autograd.engine")  # where the engine's build is, or would be
>>> "workbench.autograd.engine" in accel.MODULES, build.startswith(accel.cache_dir())
(True, True)
"""
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys

# the modules compiled: those whose per-op Python is the cost on small tensors. nn stays Python: compiled,
# Module calls measured no faster in a training step, and a compiled function's source is not there for
# inspect.getsource or IPython's ?? (what a class reads layers through)
MODULES = (
    "workbench._core",
    "workbench.tensor",
    "workbench.autograd.function",
    "workbench.autograd.engine",
    "workbench.autograd.graph",
    "workbench.autograd.backprop",
    "workbench.autograd.grad_mode",
    "workbench.ops.views",
)
BUILD = "1"  # bump when workbench._accel_build's compiler directives or flags change: every build is redone
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_LOADED = []  # the modules this process imported compiled


def cache_dir():
    """Where the builds live (see the module docstring)."""
    d = os.environ.get("WORKBENCH_ACCEL_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "workbench", "accel")


def source_path(name):
    """The .py file of a listed module, inside this package."""
    return os.path.join(_PACKAGE, *name.split(".")[1:]) + ".py"


def artifact(name, source):
    """The file a build of ``name`` from ``source`` (bytes) is (or would be) in the cache."""
    h = hashlib.sha256(BUILD.encode() + b"\0" + _SUFFIX.encode() + b"\0" + source).hexdigest()[:20]
    return os.path.join(cache_dir(), f"{name}.{h}{_SUFFIX}")


def builds(name):
    """The cached builds of ``name``, for any source (paths)."""
    d = cache_dir()
    pattern = re.compile(re.escape(name) + r"\.[0-9a-f]{20}" + re.escape(_SUFFIX))
    return [os.path.join(d, f) for f in os.listdir(d) if pattern.fullmatch(f)] if os.path.isdir(d) else []


def current(name):
    """The cache file for ``name``'s source as it is now (None if the source cannot be read)."""
    try:
        with open(source_path(name), "rb") as f:
            return artifact(name, f.read())
    except OSError:
        return None


class _Finder:
    """A meta path finder for ``MODULES``: the cached build of the module's current source, if there is one."""

    def find_spec(self, name, path=None, target=None):
        if name not in MODULES:
            return None
        so = current(name)
        if so is None or not os.path.exists(so):
            return None
        _LOADED.append(name)
        return importlib.util.spec_from_file_location(name, so, loader=_Loader(name, so))


class _Loader(importlib.machinery.ExtensionFileLoader):
    """Loads a build, then points the module's ``__file__`` at its source (the spec's origin stays the build):
    ``inspect.getsource`` and IPython's ``??`` show the code, as for a Python module."""

    def exec_module(self, module):
        super().exec_module(module)
        module.__file__ = source_path(module.__name__)


def install():
    """Import ``MODULES`` compiled from now on, where built (``import workbench`` calls this first)."""
    if os.environ.get("WORKBENCH_ACCEL", "1") == "0" or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())


def compiled():
    """The listed modules this process runs compiled.

    >>> import workbench, workbench._accel as accel
    >>> set(accel.compiled()) <= set(accel.MODULES)
    True
    """
    return [n for n in _LOADED if n in sys.modules]


def compiled_any():
    """Whether any module runs compiled (then code has fewer Python frames than it reads)."""
    return bool(_LOADED)
