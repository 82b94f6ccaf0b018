"""``y += a * x`` in one pass, through the BLAS that NumPy itself links (OpenBLAS in NumPy's wheels), and
which orientation of linear's product that BLAS runs faster (``transposed_product_pays``).

NumPy has no scaled in-place add: as ufuncs it is two passes over memory and a temporary, which is
most of an SGD step on large layers (benchmarks/train_cpu.py, the wide MLP). BLAS's axpy is one pass.
The library is the one the process already has mapped (read from /proc/self/maps), so nothing new is
loaded; where none is found (another OS, a build without a BLAS exposing axpy) ``axpy`` returns False
and the caller keeps its NumPy form. Results are the same as NumPy's up to rounding (a fused
multiply-add may skip one rounding), as with PyTorch's own kernels.
"""
import ctypes
import os

import numpy

MIN_SIZE = 1 << 14  # below this the ufunc pair is as fast as a foreign call
_INT32_MAX = (1 << 31) - 1
_FUNCS = None  # {numpy dtype: (function, index type)} once looked up


def _mapped_blas_paths():
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split()[-1] for line in f if "/" in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in paths if "blas" in os.path.basename(p).lower()))


def _lookup():
    # ILP64 builds (NumPy's wheels) name their CBLAS symbols with a 64_ suffix, and take 64-bit sizes
    names = [("scipy_cblas_{}axpy64_", ctypes.c_int64), ("cblas_{}axpy64_", ctypes.c_int64),
             ("cblas_{}axpy", ctypes.c_int32)]
    for path in _mapped_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, index in names:
            found = {}
            for prefix, npd, scalar in (("s", numpy.float32, ctypes.c_float), ("d", numpy.float64, ctypes.c_double)):
                fn = getattr(lib, pattern.format(prefix), None)
                if fn is None:
                    break
                fn.restype = None
                fn.argtypes = [index, scalar, ctypes.c_void_p, index, ctypes.c_void_p, index]
                found[numpy.dtype(npd)] = (fn, index)
            if len(found) == 2:
                return found
    return {}


def available():
    """Whether a BLAS axpy was found (looked up on the first call)."""
    global _FUNCS
    if _FUNCS is None:
        _FUNCS = _lookup()
    return bool(_FUNCS)


def axpy(alpha, x, y):
    """y += alpha * x in place, in one pass; False (nothing done) unless x and y are large, C-contiguous,
    non-overlapping NumPy arrays of one float32/float64 dtype and size and a BLAS axpy that rounds every entry
    once was found (``fuses``)."""
    if (y.__class__ is not numpy.ndarray or x.__class__ is not numpy.ndarray or y.size < MIN_SIZE
            or x.size != y.size or x.dtype != y.dtype or not one_pass()):
        return False
    entry = _FUNCS.get(y.dtype)
    if (entry is None or not (x.flags.c_contiguous and y.flags.c_contiguous and y.flags.writeable)
            or numpy.may_share_memory(x, y)):
        return False
    fn, index = entry
    n = y.size
    px, py, step = x.ctypes.data, y.ctypes.data, y.itemsize
    chunk = n if index is ctypes.c_int64 else _INT32_MAX
    for start in range(0, n, chunk):
        fn(min(chunk, n - start), alpha, px + start * step, 1, py + start * step, 1)
    return True


_FUSES = []  # [whether axpy rounds every entry once], probed on first use


def one_pass():
    """Whether ``axpy`` runs: a BLAS axpy was found and it rounds every entry once (``fuses``)."""
    return available() and fuses()


def fuses():
    """Whether the BLAS axpy computes every entry of y + a x with one rounding (a fused multiply-add), which the
    optimizers' one-pass loops then reproduce bit for bit (``fused._add_scaled``). Probed once, in float32, on an
    array long enough for OpenBLAS to split it across its threads: its Haswell kernels (an AMD EPYC here) leave the
    last entries of each thread's part unfused (2 of 73,200 differed), and a form that mixes both roundings is
    matched by neither loop, so then ``axpy`` declines and the callers take their two-pass NumPy form, as the
    loops then do. The probe's y is minus a x rounded, so every entry tells: one rounding leaves the product's
    rounding error (exact in float32, and in the float64 reference), two leave 0."""
    if not _FUSES:
        ok = False
        if available():
            x = numpy.random.default_rng(0).standard_normal(4 * MIN_SIZE + 37).astype(numpy.float32)
            a = numpy.float32(-0.0123)
            y = -(x * a)
            want = (numpy.float64(a) * x.astype(numpy.float64) + y).astype(numpy.float32)
            fn, _index = _FUNCS[numpy.dtype(numpy.float32)]
            fn(x.size, a, x.ctypes.data, 1, y.ctypes.data, 1)
            ok = bool(numpy.array_equal(y, want))
        _FUSES.append(ok)
    return _FUSES[0]


_CORE = []  # [OpenBLAS's kernel name for this CPU, or None], looked up on first use
# the kernels on which transposed_product_pays was measured (faster, and the same bits in float32)
TRANSPOSED_PRODUCT_CORES = {"SkylakeX"}


def core():
    """OpenBLAS's name for the kernels it picked for this CPU ("SkylakeX", "Haswell"...), None if NumPy's BLAS
    is not an OpenBLAS that says."""
    if not _CORE:
        name = None
        for path in _mapped_blas_paths():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            fn = next((f for f in (getattr(lib, s, None) for s in (
                "scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                "openblas_get_corename")) if f is not None), None)
            if fn is not None:
                fn.restype, fn.argtypes = ctypes.c_char_p, []
                name = fn().decode()
                break
        _CORE.append(name)
    return _CORE[0]


def transposed_product_pays(m, n, k):
    """Whether float32 ``x @ w.T`` (x m x k, w n x k, both C-contiguous) is faster as ``(w @ x.T)``, n x m, moved
    back into rows (``fused.transpose_add``, which adds the bias in the same pass), than as it is written.

    OpenBLAS packs the operand that spans the output's rows transposed: for ``x @ w.T`` that is the weight, for
    ``w @ x.T`` the (smaller) batch. Measured with one thread on its SkylakeX kernels (NumPy's wheels on an
    AMD EPYC Zen 4), with the bias added, as written / transposed and moved back: the digits MLP's layers
    64 x 64 by 64 x 256 33.6 / 30.9 us and 64 x 256 by 256 x 256 112 / 97 us; 8 x 64 by 64 x 256 0.77x, 64 x 256 by
    256 x 128 0.82x, 128 x 256 by 256 x 256 0.95x. The transposed form pays for a batch of 8 to 128 rows against at
    least 2x as many (and 128) outputs, over at least as many inputs as rows, from 2**17 multiply-adds; a
    narrower sum (64 x 32 by 32 x 256) runs alike, and for fewer rows or fewer multiply-adds the move back costs
    more than the packing saves (4 x 64 by 64 x 256: 1.05x, 8 x 8 by 8 x 128: 1.17x). There, in float32, both give
    the same bits (400 random shapes in the rule, and tests/ops/test_linear_layout.py); in float64 the edge
    kernels sum differently (1 ulp), so float64 keeps the product as written, as do other kernels (not
    measured)."""
    return (8 <= m <= 128 and n >= 2 * m and n >= 128 and k >= m and m * n * k >= 1 << 17
            and core() in TRANSPOSED_PRODUCT_CORES)
