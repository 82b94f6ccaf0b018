"""``workbench.utils.cpp_extension``: C++ (and CUDA) kernels from source, as ``torch.utils.cpp_extension``.

``load_inline(name, cpp_sources, functions=[...])`` and ``load(name, sources=[...])`` compile with the system
compiler and bind each ``extern "C"`` function: a tensor or NumPy array passed to a pointer parameter passes its
contiguous buffer, a Python number passes to a scalar parameter::

    mod = load_inline("axpy_ext", 'extern "C" void axpy(float a, const float* x, float* y, long n) {'
                                  '  for (long i = 0; i < n; ++i) y[i] += a * x[i]; }', functions=["axpy"])
    mod.axpy(2.0, x, y, x.numel())   # y += 2 x, in place

Building: each C++ source with ``$CXX`` (default ``c++``), each C source with ``$CC`` (default ``cc``), as
``-O3 -fPIC -std=c++17`` (C: ``-O3 -fPIC``) plus ``extra_cflags``, ``-I`` of ``extra_include_paths`` and of
workbench's own ``include`` folder (``workbench/extension.h``: a ``const wb_tensor* x`` parameter receives the shape,
strides and dtype of any tensor, non-contiguous ones included), linked with
``-shared`` plus ``extra_ldflags``. The library lands in ``build_directory`` (default
``$WORKBENCH_EXTENSIONS_DIR/<name>``, else ``~/.cache/workbench_extensions/<name>``) under a name keyed on a hash
of the compiler, flags and sources; a later load with the same inputs (and unchanged included headers) reuses it
without compiling. A failed build raises RuntimeError carrying the compiler's own messages.

CUDA: ``cuda_sources`` (and ``.cu`` files in ``sources``) are compiled with NVRTC through CuPy's RawModule when a
kernel is first launched; each ``extern "C" __global__`` kernel is bound like a C function and launched on the
current stream of its tensors' device. Sources written against libtorch's C++ API (``torch/extension.h``,
``at::Tensor``, ``PYBIND11_MODULE``) are refused: workbench has no libtorch.
"""
import ctypes
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import types

from . import _c_abi

_LIBTORCH = re.compile(r'#\s*include\s*[<"](torch/|ATen/|c10/|pybind11/)[^>"]*[>"]|\btorch::\w+|\bat::Tensor\b|'
                       r'\bPYBIND11_MODULE\b|\bTORCH_LIBRARY(_IMPL)?\b|\bTORCH_CHECK\b')
_LOADED = {}  # library path -> ctypes.CDLL (a library is opened once per process)


def _refuse_libtorch(name, label, text):
    code = _c_abi.strip_comments(text)
    m = _LIBTORCH.search(code)
    if m is None:
        return
    line = code.count("\n", 0, m.start()) + 1
    raise RuntimeError(
        f"Error building extension '{name}': {label}, line {line}, uses libtorch's C++ API ({m.group(0).strip()!r}), "
        "which workbench does not have. Write the kernel as extern \"C\" functions on plain pointers and numbers, "
        "e.g. extern \"C\" void axpy(float a, const float* x, float* y, long n); workbench passes each tensor's "
        "contiguous buffer to a pointer parameter and Python numbers to scalar ones. Register it as an op with "
        "workbench.library.custom_op for autograd (see docs/extensions.md).")


def get_default_build_root():
    """Where extensions are built when no build_directory is given: $WORKBENCH_EXTENSIONS_DIR, else
    ~/.cache/workbench_extensions.

    >>> import os, workbench as wb
    >>> os.environ["WORKBENCH_EXTENSIONS_DIR"] = "/tmp/my_exts"
    >>> wb.utils.cpp_extension.get_default_build_root()
    '/tmp/my_exts'
    >>> del os.environ["WORKBENCH_EXTENSIONS_DIR"]
    """
    return os.environ.get("WORKBENCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                       "workbench_extensions")


def include_paths(device_type="cpu", torch_include_dirs=True):
    """The include folders every build gets: workbench's own (``workbench/extension.h``).

    >>> import workbench as wb
    >>> import os; os.path.exists(os.path.join(wb.utils.cpp_extension.include_paths()[0], "workbench", "extension.h"))
    True
    """
    return [_c_abi.include_dir()]


def _compiler(var, default, name):
    cmd = shlex.split(os.environ.get(var, "")) or [default]
    found = shutil.which(cmd[0])
    if found is None:
        alts = {"c++": ["g++", "clang++"], "cc": ["gcc", "clang"]}.get(default, [])
        found = next((shutil.which(a) for a in alts if shutil.which(a)), None)
        if found is None:
            raise RuntimeError(f"Error building extension '{name}': no compiler found ({cmd[0]!r}, set ${var} or "
                               f"install g++ or clang)")
    return [found] + cmd[1:]


def _file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _deps_ok(deps_file):
    # the headers the last build included must be unchanged for its library to be reused
    try:
        with open(deps_file) as f:
            deps = json.load(f)
        return all(os.path.exists(p) and _file_hash(p) == h for p, h in deps.items())
    except (OSError, ValueError):
        return False


def _read_depfile(path):
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    return [p for p in text.split(":", 1)[1].split()] if ":" in text else []


def _build(name, sources, extra_cflags, extra_ldflags, extra_include_paths, build_directory, verbose):
    """Compile and link ``sources`` ((path, is_c) pairs) into a shared library; returns (path, was_cached)."""
    cxx = _compiler("CXX", "c++", name)
    cc = _compiler("CC", "cc", name) if any(is_c for _, is_c in sources) else None
    includes = [f"-I{os.path.abspath(p)}" for p in extra_include_paths or ()] + [f"-I{_c_abi.include_dir()}"]
    cflags = list(extra_cflags or ())
    ldflags = list(extra_ldflags or ())
    h = hashlib.sha256()
    h.update(json.dumps([cxx, cc, includes, cflags, ldflags, sys.platform]).encode())
    for path, _ in sources:
        h.update(path.encode() + b"\0" + _file_hash(path).encode())
    key = h.hexdigest()[:16]
    build_dir = build_directory or os.path.join(get_default_build_root(), name)
    os.makedirs(build_dir, exist_ok=True)
    prefix = f"{name}_{key}_"
    for f in sorted(os.listdir(build_dir)):
        lib = os.path.join(build_dir, f)
        if f.startswith(prefix) and f.endswith(".so") and _deps_ok(lib + ".deps.json"):
            if verbose:
                print(f"Using the cached build of extension '{name}': {lib}")
            return lib, True
    work = tempfile.mkdtemp(prefix=f"{name}_", dir=build_dir)
    try:
        objects, deps = [], {}
        for k, (path, is_c) in enumerate(sources):
            obj = os.path.join(work, f"{k}.o")
            dep = os.path.join(work, f"{k}.d")
            base = (cc + ["-O3", "-fPIC"]) if is_c else (cxx + ["-O3", "-fPIC", "-std=c++17"])
            cmd = base + includes + cflags + ["-MMD", "-MF", dep, "-c", path, "-o", obj]
            _run(name, cmd, verbose)
            objects.append(obj)
            for d in _read_depfile(dep):
                d = os.path.abspath(d)
                if d != os.path.abspath(path) and os.path.exists(d):
                    deps[d] = _file_hash(d)
        tmp = os.path.join(work, "lib.so")
        _run(name, cxx + ["-shared"] + objects + ["-o", tmp] + ldflags, verbose)
        # the name also hashes the included headers: a rebuild after a header changed gets a new file, which the
        # dynamic loader opens afresh (it would hand back the old library for a reused path)
        deps_key = hashlib.sha256(json.dumps(sorted(deps.items())).encode()).hexdigest()[:8]
        lib = os.path.join(build_dir, prefix + deps_key + ".so")
        with open(lib + ".deps.json", "w") as f:
            json.dump(deps, f)
        os.replace(tmp, lib)  # atomic: a concurrent build of the same sources gives the same file
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lib, False


def _run(name, cmd, verbose):
    if verbose:
        print(" ".join(shlex.quote(c) for c in cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if verbose and r.stdout:
        print(r.stdout)
    if r.returncode != 0:
        raise RuntimeError(f"Error building extension '{name}': the compiler failed (exit status {r.returncode}).\n"
                           f"Command: {' '.join(shlex.quote(c) for c in cmd)}\n{r.stderr.strip() or r.stdout.strip()}")


def _module(name, lib_path, cpu_sigs, cuda_sigs, cuda_source, cuda_options, functions):
    mod = types.ModuleType(name, f"workbench extension '{name}' ({lib_path or 'CUDA only'})")
    mod.__file__ = lib_path
    docs = functions if isinstance(functions, dict) else {}
    wanted = list(functions) if functions is not None else list(cpu_sigs) + list(cuda_sigs)
    missing = [f for f in wanted if f not in cpu_sigs and f not in cuda_sigs]
    if missing:
        found = sorted(cpu_sigs) + sorted(cuda_sigs)
        raise RuntimeError(f"Error building extension '{name}': no extern \"C\" function named {missing} in its sources "
                           f"(found: {found or 'none'}). Declare each as extern \"C\" (C++ mangles other names), e.g. "
                           "extern \"C\" void axpy(float a, const float* x, float* y, long n) {...}")
    dll = None
    for fname in wanted:
        if fname in cpu_sigs:
            if dll is None:
                dll = _LOADED.get(lib_path)
                if dll is None:
                    dll = _LOADED[lib_path] = ctypes.CDLL(lib_path)
            try:
                cfn = getattr(dll, fname)
            except AttributeError:
                raise RuntimeError(f"Error building extension '{name}': {fname} is declared but its symbol is missing "
                                   "from the library: define it (not only declare it) inside extern \"C\"") from None
            setattr(mod, fname, _c_abi.CFunction(name, cpu_sigs[fname], cfn, docs.get(fname)))
        else:
            setattr(mod, fname, _c_abi.CudaFunction(name, cuda_sigs[fname], cuda_source, cuda_options, docs.get(fname)))
    return mod


def _signatures(name, labelled_texts, c_flags):
    sigs = {}
    for (label, text), is_c in zip(labelled_texts, c_flags):
        for fname, sig in _c_abi.functions_in(text, whole_file_is_c=is_c).items():
            _c_abi.check_signature(sig, f"extension '{name}' ({label})")
            sigs[fname] = sig
    return sigs


def _load(name, cpu_files, cuda_texts, functions, extra_cflags, extra_cuda_cflags, extra_ldflags,
          extra_include_paths, build_directory, verbose, is_python_module):
    if not name.isidentifier():
        raise ValueError(f"extension name {name!r} must be a valid Python identifier")
    texts = []
    for path, _ in cpu_files:
        with open(path) as f:
            texts.append((path, f.read()))
    for label, text in texts + cuda_texts:
        _refuse_libtorch(name, label, text)
    cpu_sigs = _signatures(name, texts, [is_c for _, is_c in cpu_files])
    cuda_sigs = {k: v for k, v in _signatures(name, cuda_texts, [False] * len(cuda_texts)).items() if v.is_kernel}
    lib = None
    if cpu_files:
        lib, _ = _build(name, cpu_files, extra_cflags, extra_ldflags, extra_include_paths, build_directory, verbose)
    if not is_python_module:
        if lib is not None:
            _LOADED.setdefault(lib, ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL))
        return lib
    options = ("-std=c++17",) + tuple(f"-I{os.path.abspath(p)}" for p in extra_include_paths or ()) + tuple(
        extra_cuda_cflags or ())
    return _module(name, lib, cpu_sigs, cuda_sigs, "\n".join(t for _, t in cuda_texts), options, functions)


def load_inline(name, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_sycl_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_cuda=None, with_sycl=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False, no_implicit_headers=False):
    """Compile C++ (and CUDA) source strings and bind their ``extern "C"`` functions, as PyTorch's load_inline.

    ``functions``: the names to bind (a list, or a dict name -> docstring); all extern "C" functions when None.
    The C++ sources are written to ``<build_directory>/<name>.cpp`` (compiler messages name it); ``cuda_sources``
    are compiled with NVRTC on first launch. The PyTorch-only options (sycl, pch, error handling) have no effect.

    >>> import workbench as wb, tempfile
    >>> mod = wb.utils.cpp_extension.load_inline("doc_axpy",
    ...     'extern "C" void axpy(float a, const float* x, float* y, long n)'
    ...     ' { for (long i = 0; i < n; ++i) y[i] += a * x[i]; }',
    ...     functions=["axpy"], build_directory=tempfile.mkdtemp())
    >>> x, y = wb.ones(3), wb.zeros(3)
    >>> mod.axpy(2.0, x, y, x.numel()); y
    tensor([2., 2., 2.])
    """
    if sycl_sources:
        raise ValueError("sycl_sources: workbench builds C++ for the CPU and CUDA through CuPy; SYCL is not supported")
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if isinstance(cuda_sources, str):
        cuda_sources = [cuda_sources]
    cpu_files = []
    code = "\n".join(cpp_sources or [])
    if code.strip():
        build_dir = build_directory or os.path.join(get_default_build_root(), name)
        os.makedirs(build_dir, exist_ok=True)
        path = os.path.join(build_dir, f"{name}.cpp")
        _refuse_libtorch(name, "cpp_sources", code)
        _write_if_changed(path, code)
        cpu_files.append((path, False))
    return _load(name, cpu_files, [("cuda_sources", t) for t in cuda_sources or []], functions, extra_cflags,
                 extra_cuda_cflags, extra_ldflags, extra_include_paths, build_directory, verbose, is_python_module)


def _write_if_changed(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None, with_sycl=None,
         is_python_module=True, is_standalone=False, keep_intermediates=True):
    """Compile source files (``.cpp``/``.cc``/``.cxx``, ``.c``, and ``.cu`` for CUDA) and bind every ``extern "C"``
    function (every non-static function of a ``.c`` file), as PyTorch's load.

    >>> import workbench as wb, tempfile, os
    >>> d = tempfile.mkdtemp(); src = os.path.join(d, "dot.c")
    >>> _ = open(src, "w").write("double dot(const double* a, const double* b, long n) {"
    ...                          " double s = 0; for (long i = 0; i < n; ++i) s += a[i] * b[i]; return s; }")
    >>> mod = wb.utils.cpp_extension.load("doc_dot", [src], build_directory=d)
    >>> mod.dot(wb.ones(4, dtype=wb.float64), wb.arange(4.0, dtype=wb.float64), 4)
    6.0
    """
    if isinstance(sources, str):
        sources = [sources]
    cpu_files, cuda_texts = [], []
    for s in sources:
        ext = os.path.splitext(s)[1].lower()
        if not os.path.exists(s):
            raise FileNotFoundError(f"Error building extension '{name}': source file {s!r} does not exist")
        if ext == ".cu":
            with open(s) as f:
                cuda_texts.append((s, f.read()))
        elif ext in (".c", ".cpp", ".cc", ".cxx", ".c++"):
            cpu_files.append((os.path.abspath(s), ext == ".c"))
        else:
            raise ValueError(f"Error building extension '{name}': {s!r} is not a .c, .cpp, .cc, .cxx or .cu file")
    return _load(name, cpu_files, cuda_texts, None, extra_cflags, extra_cuda_cflags, extra_ldflags,
                 extra_include_paths, build_directory, verbose, is_python_module)


def cuda_source_text(module):
    """The CUDA C source a module's kernels compile from (what CI compiles with nvcc), or None."""
    for v in vars(module).values():
        if isinstance(v, _c_abi.CudaFunction):
            return v._source
    return None
