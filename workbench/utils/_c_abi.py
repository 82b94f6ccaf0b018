"""The C ABI of extensions: ``extern "C"`` prototypes read from the sources, and the Python callables bound to
them, which pass a tensor's (or NumPy array's) contiguous buffer to each pointer parameter, a ``wb_tensor``
description (data, shape, strides, dtype: workbench/extension.h) to each ``wb_tensor*`` parameter, and a Python
number to each scalar one.

``CFunction`` calls compiled C/C++ through ctypes (the GIL is released during the call); ``CudaFunction``
launches a ``__global__`` kernel through CuPy on the current stream of the tensors' device. Both check every
argument against the declared type first (dtype, contiguity, device, writability) and bump the version counter
of each tensor passed to a non-const pointer, so autograd notices the write.
"""
import ctypes
import numbers
import os
import re

from .. import _backend
from ..autograd import graph
from ..autograd.grad_mode import STATE
from ..tensor import Tensor

np = _backend.numpy

# C type spelling -> (ctypes scalar type, NumPy dtype of a buffer of it)
_TYPES = {
    "float": (ctypes.c_float, np.float32), "double": (ctypes.c_double, np.float64),
    "int": (ctypes.c_int, np.int32), "int32_t": (ctypes.c_int32, np.int32),
    "unsigned": (ctypes.c_uint, np.uint32), "unsigned int": (ctypes.c_uint, np.uint32),
    "uint32_t": (ctypes.c_uint32, np.uint32),
    "long": (ctypes.c_long, np.dtype(f"i{ctypes.sizeof(ctypes.c_long)}")),
    "long int": (ctypes.c_long, np.dtype(f"i{ctypes.sizeof(ctypes.c_long)}")),
    "long long": (ctypes.c_longlong, np.int64), "int64_t": (ctypes.c_int64, np.int64),
    "ptrdiff_t": (ctypes.c_ssize_t, np.intp), "ssize_t": (ctypes.c_ssize_t, np.intp),
    "unsigned long": (ctypes.c_ulong, np.dtype(f"u{ctypes.sizeof(ctypes.c_ulong)}")),
    "unsigned long long": (ctypes.c_ulonglong, np.uint64), "uint64_t": (ctypes.c_uint64, np.uint64),
    "size_t": (ctypes.c_size_t, np.uintp),
    "short": (ctypes.c_short, np.int16), "int16_t": (ctypes.c_int16, np.int16),
    "unsigned short": (ctypes.c_ushort, np.uint16), "uint16_t": (ctypes.c_uint16, np.uint16),
    "char": (ctypes.c_char, np.int8), "signed char": (ctypes.c_byte, np.int8), "int8_t": (ctypes.c_int8, np.int8),
    "unsigned char": (ctypes.c_ubyte, np.uint8), "uint8_t": (ctypes.c_uint8, np.uint8),
    "bool": (ctypes.c_bool, np.bool_), "_Bool": (ctypes.c_bool, np.bool_),
    "void": (None, None),
    # CUDA's half types (buffers only)
    "__half": (None, np.float16), "half": (None, np.float16),
    # workbench/extension.h: a tensor's description (pointer parameters only; any dtype and strides)
    "wb_tensor": (None, None),
}
_WB_DTYPES = {"bool": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float16": 6, "bfloat16": 7,
              "float32": 8, "float64": 9, "complex64": 10, "complex128": 11, "uint16": 12, "uint32": 13, "uint64": 14}


class WBTensor(ctypes.Structure):
    """``wb_tensor`` of workbench/extension.h."""

    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int64), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("numel", ctypes.c_int64), ("dtype", ctypes.c_int32),
                ("itemsize", ctypes.c_int32)]


def describe(fname, p, i, arr):
    """A WBTensor for array ``arr`` (with the ctypes arrays it points to, to keep alive for the call)."""
    code = _WB_DTYPES.get(arr.dtype.name)
    if code is None:
        raise TypeError(f"{fname}(): argument {i} '{p.name}' (wb_tensor) has dtype {arr.dtype.name}, which "
                        "workbench/extension.h has no code for")
    if any(st % arr.itemsize for st in arr.strides):
        raise RuntimeError(f"{fname}(): argument {i} '{p.name}' has byte strides {list(arr.strides)} that are not "
                           f"whole elements of {arr.itemsize} bytes; pass x.contiguous()")
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(arr.ndim, 1))(*[st // arr.itemsize for st in arr.strides])
    t = WBTensor(arr.ctypes.data, arr.ndim, shape, strides, arr.size, code, arr.itemsize)
    return t, (shape, strides)


def include_dir():
    """The folder holding workbench/extension.h (on every build's include path)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
_FLOAT_TYPES = {"float", "double"}
_QUALIFIERS = re.compile(r"\b(static|inline|__inline__|__forceinline__|__global__|__host__|__device__|__noinline__|"
                         r"extern|__restrict__|__restrict|restrict|volatile|register|struct|"
                         r"__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\))")


class Param:
    __slots__ = ("name", "type", "pointer", "const")  # pointer: how many '*' (0 for a scalar)

    def __init__(self, name, type_, pointer, const):
        self.name, self.type, self.pointer, self.const = name, type_, pointer, const

    def __str__(self):
        return f"{'const ' if self.const else ''}{self.type}{'*' * self.pointer} {self.name or ''}".strip()


class Signature:
    __slots__ = ("name", "ret", "params", "is_kernel")

    def __init__(self, name, ret, params, is_kernel):
        self.name, self.ret, self.params, self.is_kernel = name, ret, params, is_kernel

    def __str__(self):
        return f"{self.ret} {self.name}({', '.join(str(p) for p in self.params)})"


def strip_comments(text):
    """The source without comments (kept line for line, so line numbers stay right)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r'//[^\n]*|/\*.*?\*/', blank, text, flags=re.S)


def _strip_code(text):
    text = re.sub(r'extern\s*"C(\+\+)?"', lambda m: "__WB_EXTERN_C__" if m.group(1) is None else " ",
                  strip_comments(text))
    text = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', text)  # string and char literals
    return re.sub(r"^[ \t]*#[^\n]*(\\\n[^\n]*)*", "", text, flags=re.M)  # preprocessor lines


def _match_brace(text, i):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def _top_level_headers(block):
    # every 'header {' or 'header;' at brace depth 0 of block: function definitions and declarations
    out = []
    start = 0
    i = 0
    while i < len(block):
        ch = block[i]
        if ch == "{":
            out.append(block[start:i])
            i = _match_brace(block, i) + 1
            start = i
            continue
        if ch == ";":
            out.append(block[start:i])
            start = i + 1
        i += 1
    return out


def _parse_header(header):
    header = " ".join(header.split())
    m = re.match(r"^(?P<ret>.*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*(noexcept|const)?\s*$", header)
    if m is None or not m.group("ret").strip() and "__global__" not in header:
        return None
    if re.search(r"\bstatic\b", m.group("ret")):  # internal linkage: no symbol to bind
        return None
    is_kernel = "__global__" in m.group("ret")
    ret = " ".join(_QUALIFIERS.sub(" ", m.group("ret")).split())
    if not ret or ret.startswith(("return", "else", "typedef", "using")) or "=" in ret:
        return None
    params = []
    text = m.group("params").strip()
    if text and text != "void":
        for k, p in enumerate(text.split(",")):
            params.append(_parse_param(p, k, header))
    return Signature(m.group("name"), ret, params, is_kernel)


def _parse_param(p, k, header):
    p = _QUALIFIERS.sub(" ", p)
    pointer = p.count("*") + p.count("[")
    p = re.sub(r"\[[^\]]*\]", " ", p.replace("*", " "))
    words = p.split()
    const = "const" in words
    words = [w for w in words if w != "const"]
    name = words[-1] if len(words) > 1 else None
    type_ = " ".join(words[:-1] if len(words) > 1 else words)
    type_ = {"signed": "int", "signed int": "int", "long long int": "long long", "unsigned long int": "unsigned long",
             "short int": "short", "std::size_t": "size_t", "std::int64_t": "int64_t",
             "std::int32_t": "int32_t"}.get(type_, type_)
    return Param(name or f"arg{k}", type_, pointer, const)


def functions_in(source, whole_file_is_c=False):
    """name -> Signature of every ``extern "C"`` function declared or defined in ``source`` (every function of a C
    file with whole_file_is_c)."""
    text = _strip_code(source)
    headers = []
    if whole_file_is_c:
        headers = _top_level_headers(text)
    else:
        for m in re.finditer(r"__WB_EXTERN_C__\s*", text):
            rest = text[m.end():]
            if rest.startswith("{"):
                end = _match_brace(rest, 0)
                headers += _top_level_headers(rest[1:end])
            else:
                cut = min([i for i in (rest.find("{"), rest.find(";")) if i >= 0], default=len(rest))
                headers.append(rest[:cut])
    out = {}
    for h in headers:
        sig = _parse_header(h.replace("__WB_EXTERN_C__", " "))
        if sig is not None and not sig.name.startswith("__"):
            out[sig.name] = sig
    return out


def check_signature(sig, where):
    """Raise if workbench cannot pass this function's parameters or return value."""
    for k, p in enumerate(sig.params):
        if p.pointer > 1:
            raise ValueError(f"{where}: parameter {k} of {sig} is a pointer to a pointer, which workbench cannot pass; "
                             "take one flat buffer per tensor")
        if p.type not in _TYPES or (not p.pointer and _TYPES[p.type][0] is None and not sig.is_kernel):
            raise ValueError(f"{where}: parameter '{p.name}' of {sig} has type '{p}', which the C ABI binding does "
                             f"not know; use one of {sorted(t for t in _TYPES if _TYPES[t][0] is not None)} or a "
                             "pointer to one")
        if not p.pointer and p.type in ("void", "wb_tensor"):
            raise ValueError(f"{where}: parameter '{p.name}' of {sig} is a {p.type} by value; take a pointer "
                             f"({p.type}* {p.name})")
        if p.type == "wb_tensor" and sig.is_kernel:
            raise ValueError(f"{where}: the CUDA kernel {sig} takes a wb_tensor, which describes host memory; pass "
                             "the buffer (const float* x) and its sizes instead")
    if sig.ret != "void" and (sig.ret not in _TYPES or _TYPES[sig.ret][0] is None):
        raise ValueError(f"{where}: {sig} returns '{sig.ret}'; bound functions return void or a number (write "
                         "results into an output buffer instead)")
    if sig.is_kernel and sig.ret != "void":
        raise ValueError(f"{where}: the CUDA kernel {sig} must return void")


# --- arguments ---------------------------------------------------------------------------------------------
def _buffer(fname, p, i, a, want_device):
    """(array, tensor or None) for pointer parameter p: a tensor's or array's own contiguous memory."""
    t = a if isinstance(a, Tensor) else None
    arr = a._data if t is not None else a
    xp = _backend.xp_of(arr) if isinstance(arr, np.ndarray) or (
        _backend.cupy_loaded() and isinstance(arr, _backend.cupy().ndarray)) else None
    if xp is None:
        raise TypeError(f"{fname}(): argument {i} '{p.name}' ({p}) takes a tensor or an array, got "
                        f"{type(a).__name__}")
    dev = _backend.device_of(arr)
    if dev.type != want_device:
        hint = ("C/C++ functions read host memory: pass x.cpu(), or write a CUDA kernel (cuda_sources)"
                if want_device == "cpu" else "CUDA kernels read device memory: pass x.cuda()")
        raise RuntimeError(f"{fname}(): argument {i} '{p.name}' ({p}) expected a {want_device.upper()} tensor, but "
                           f"got one on {dev}. {hint}")
    want = _TYPES[p.type][1]
    described = p.type == "wb_tensor"
    if want is not None and arr.dtype != want:
        raise TypeError(f"{fname}(): argument {i} '{p.name}' ({p}) expected a {np.dtype(want).name} buffer, but got "
                        f"dtype {arr.dtype.name}. Convert it first, e.g. x.to(wb.{np.dtype(want).name}), or declare "
                        "the parameter with the matching C type")
    if not described and not arr.flags.c_contiguous:
        raise RuntimeError(f"{fname}(): argument {i} '{p.name}' ({p}) must be contiguous (the function reads one flat "
                           f"buffer), but got shape {list(arr.shape)} with strides {list(arr.strides)}. Pass "
                           "x.contiguous() (a copy), and copy results back if the function writes to it")
    if not p.const:
        if t is not None and t.requires_grad and t.grad_fn is None and STATE.enabled:
            raise RuntimeError(f"{fname}(): argument {i} '{p.name}' is a non-const pointer (the function may write "
                               "to it), and a leaf Variable that requires grad cannot be modified in place. Declare it "
                               "const, or call under workbench.no_grad()")
        if xp is np and not arr.flags.writeable:
            raise RuntimeError(f"{fname}(): argument {i} '{p.name}' ({p}) may be written to, but the array is "
                               "read-only. Pass a writable copy, or declare the parameter const")
    return arr, t


def _scalar(fname, p, i, a):
    if isinstance(a, Tensor) or (isinstance(a, np.ndarray) and a.ndim):
        raise TypeError(f"{fname}(): argument {i} '{p.name}' is a {p.type} and takes a Python number, got a "
                        f"{type(a).__name__}; pass x.item() for a one-element tensor")
    ok = isinstance(a, numbers.Real) if p.type in _FLOAT_TYPES else isinstance(a, numbers.Integral)
    if not ok:
        raise TypeError(f"{fname}(): argument {i} '{p.name}' is a {p.type} and takes "
                        f"{'a number' if p.type in _FLOAT_TYPES else 'an integer'}, got {type(a).__name__} {a!r}")
    return a


def _bind_args(fname, sig, args, device_type):
    if len(args) != len(sig.params):
        raise TypeError(f"{fname}() takes {len(sig.params)} arguments ({sig}) but {len(args)} were given")
    values, written, keep = [], [], []
    for i, (p, a) in enumerate(zip(sig.params, args)):
        if p.pointer:
            if a is None:
                values.append(None)
                continue
            arr, t = _buffer(fname, p, i, a, device_type)
            keep.append(arr)
            values.append(arr)
            if t is not None and not p.const:
                written.append(t)
        else:
            values.append(_scalar(fname, p, i, a))
    return values, written, keep


def _bump(fname, written):
    site = graph.user_site(3)
    scope = graph.SCOPE.get()
    for t in written:
        t._vbox[0] += 1
        t._vbox[1] = (fname, scope, site)


class CFunction:
    """A compiled ``extern "C"`` function; call it with tensors/arrays for pointers and numbers for scalars."""

    def __init__(self, module, sig, cfn, doc=None):
        self._module, self._sig, self._cfn = module, sig, cfn
        self.__name__ = sig.name
        self.__doc__ = (doc + "\n\n" if doc else "") + f"extern \"C\" {sig}"
        cfn.argtypes = [ctypes.c_void_p if p.pointer else _TYPES[p.type][0] for p in sig.params]
        cfn.restype = _TYPES[sig.ret][0]

    def __repr__(self):
        return f"<extension function {self._module}.{self.__name__}: {self._sig}>"

    def __call__(self, *args):
        params = self._sig.params
        if len(args) == len(params):
            conv = self._fast_args(params, args)
            if conv is not None:  # the usual call: contiguous CPU buffers of the declared dtypes, plain numbers
                out = self._cfn(*conv)
                _bump(self._module + "." + self.__name__, [a for p, a in zip(params, args)
                                                           if p.pointer and not p.const and a.__class__ is Tensor])
                return out
        return self._call_checked(args)

    @staticmethod
    def _fast_args(params, args):
        # raw pointers and numbers for the common case; None (take the checked path) for anything else
        conv = []
        for p, a in zip(params, args):
            if p.pointer:
                arr = a._data if a.__class__ is Tensor else a
                if arr.__class__ is not np.ndarray or p.type == "wb_tensor" or not arr.flags.c_contiguous or (
                        _TYPES[p.type][1] is not None and arr.dtype != _TYPES[p.type][1]):
                    return None
                if not p.const and (not arr.flags.writeable or (a.__class__ is Tensor and a._rg and STATE.enabled)):
                    return None
                conv.append(arr.__array_interface__["data"][0])
            elif a.__class__ is int or (a.__class__ is float and p.type in _FLOAT_TYPES):
                conv.append(a)
            else:
                return None
        return conv

    def _call_checked(self, args):
        fname = f"{self._module}.{self.__name__}"
        values, written, keep = _bind_args(fname, self._sig, args, "cpu")
        conv = []
        for i, (p, v) in enumerate(zip(self._sig.params, values)):
            if isinstance(v, np.ndarray):
                if p.type == "wb_tensor":
                    desc, arrays = describe(fname, p, i, v)
                    keep += [desc, arrays]
                    v = ctypes.addressof(desc)
                else:
                    v = v.ctypes.data
            conv.append(v)
        out = self._cfn(*conv)
        del keep
        _bump(fname, written)
        return out.decode() if isinstance(out, bytes) else out


_THREADS = 256


class CudaFunction:
    """A ``__global__`` kernel compiled with NVRTC (CuPy's RawModule), launched on the current stream of its
    tensors' device: ``mod.kernel(x, y, 2.0, n)`` (one thread per element of the largest tensor argument, 256 per
    block) or with ``grid=``/``block=``/``shared_mem=`` given."""

    def __init__(self, module, sig, source, options, doc=None):
        self._module, self._sig, self._source, self._options = module, sig, source, tuple(options)
        self._compiled = {}  # device index -> cupy RawKernel
        self.__name__ = sig.name
        self.__doc__ = (doc + "\n\n" if doc else "") + f"extern \"C\" {sig}"

    def __repr__(self):
        return f"<extension CUDA kernel {self._module}.{self.__name__}: {self._sig}>"

    def __call__(self, *args, grid=None, block=None, shared_mem=0):
        fname = f"{self._module}.{self.__name__}"
        cp = _backend.cupy()
        values, written, keep = _bind_args(fname, self._sig, args, "cuda")
        devs = {a.device.id for a in keep}
        if len(devs) > 1:
            raise RuntimeError(f"{fname}(): the tensors are on several devices {sorted(devs)}; move them to one")
        dev = devs.pop() if devs else cp.cuda.Device().id
        conv = []
        for p, v in zip(self._sig.params, values):
            if p.pointer:
                conv.append(v if v is not None else 0)
            else:
                conv.append(np.dtype(_TYPES[p.type][1]).type(v))
        if block is None:
            block = (_THREADS,)
        if grid is None:
            n = max([a.size for a in keep], default=1)
            per = block[0] if isinstance(block, tuple) else int(block)
            grid = (max(1, (n + per - 1) // per),)
        with cp.cuda.Device(dev):
            k = self._compiled.get(dev)
            if k is None:
                mod = cp.RawModule(code=self._source, options=self._options)
                k = self._compiled[dev] = mod.get_function(self.__name__)
            k(tuple(grid) if isinstance(grid, tuple) else (int(grid),),
              tuple(block) if isinstance(block, tuple) else (int(block),), tuple(conv), shared_mem=shared_mem)
        del keep
        _bump(fname, written)
