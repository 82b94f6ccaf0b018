"""Discrete Fourier transforms (``torch.fft``): complex-to-complex, real-to-half-spectrum and back, with
PyTorch's n/s, dim and norm arguments, on ``xp.fft`` (NumPy's pocketfft, cuFFT through CuPy).

Three primitives carry every transform: ``C2C`` (fft/ifft and their 2-D/n-D forms), ``R2C`` (rfft*)
and ``C2R`` (irfft*); hfft*/ihfft* are conjugated C2R/R2C with the opposite normalisation, as in NumPy.
A transform is linear, so each backward is the adjoint transform, written with the same public
functions (so it differentiates again): the opposite direction with the dual norm ("backward" <->
"forward", "ortho" stays), the zero-padding or truncation to ``s`` undone by ``Resize``, R2C's missing
half of the spectrum zero, and C2R's interior bins counted twice (each stands for itself and its
conjugate partner).
"""
from .._backend import dtypes as _dt
from .._core import Tensor
from ..autograd.function import Function
from ..creation import tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, wrap_dim, writes_out

_NORMS = ("backward", "forward", "ortho")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _complex_of(npd):
    return _dt.complex64.np if npd.itemsize <= 4 or npd.kind == "c" and npd.itemsize == 8 else _dt.complex128.np


def _input(op, x, real_only=False):
    """x as a transform takes it: float32/64 or complex (integers in the default float dtype)."""
    if _AUTOCAST[0]:  # every fft_* is on the CPU autocast's float32 list
        x, = _autocast_cast("fft", x)
    if not isinstance(x, Tensor):
        raise TypeError(f"fft.{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    npd = x._data.dtype
    if npd.kind in "biu":
        return x.to(_dt.get_default_dtype())
    if npd.name in ("float16", "bfloat16"):
        raise RuntimeError(f"Unsupported dtype {x.dtype._scalar_name}: {op} runs in "
                           "float32/float64; cast the input with .float() first (autocast does this for you)")
    if real_only and npd.kind == "c":
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype._scalar_name}")
    return x


def _dims_and_sizes(op, x, s, dim, default_all=True):
    """PyTorch's (s, dim) rules: dims unique and wrapped; s gives the transformed sizes (-1: unchanged)."""
    nd = x.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None and isinstance(s, int):
        s = (s,)
    if dim is None:
        if s is not None:
            if len(s) > nd:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
            dims = tuple(range(nd - len(s), nd))
        else:
            dims = tuple(range(nd)) if default_all else (nd - 1,)
    else:
        dims = tuple(wrap_dim(d, nd) for d in dim)
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    sizes = tuple(x.shape[d] if s is None or s[i] == -1 else int(s[i]) for i, d in enumerate(dims))
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, sizes


def _resize_array(xp, x, dims, sizes):
    # truncate or zero-pad x along dims to sizes (what s/n do before a transform)
    if all(x.shape[d] == n for d, n in zip(dims, sizes)):
        return x
    shape = list(x.shape)
    src = [slice(None)] * x.ndim
    for d, n in zip(dims, sizes):
        src[d] = slice(0, min(n, x.shape[d]))
        shape[d] = n
    out = xp.zeros(shape, x.dtype)
    out[tuple(src)] = x[tuple(src)]
    return out


class Resize(Function):
    """Truncate or zero-pad along dims; its adjoint is the resize back."""

    _raw = True

    @staticmethod
    def forward(ctx, x, dims, sizes):
        ctx.back = tuple(x.shape[d] for d in dims)
        ctx.dims = dims
        return _resize_array(ctx.xp, x, dims, sizes)

    @staticmethod
    def backward(ctx, g):
        return Resize.apply(g, ctx.dims, ctx.back), None, None


def _resize(t, dims, sizes):
    if all(t.shape[d] == n for d, n in zip(dims, sizes)):
        return t
    return Resize.apply(t, dims, sizes)


class C2C(Function):
    _raw = True
    op_name = "fft_c2c"

    @staticmethod
    def forward(ctx, x, dims, norm, forward):
        xp = ctx.xp
        ctx.real = x.dtype.kind != "c"
        y = (xp.fft.fftn if forward else xp.fft.ifftn)(x, axes=dims, norm=norm)
        ctx.args = (dims, norm, forward)
        return y.astype(_complex_of(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, g):
        dims, norm, forward = ctx.args
        gx = C2C.apply(g, dims, _DUAL[norm], not forward)
        return (gx.real if ctx.real else gx), None, None, None


class R2C(Function):
    _raw = True
    op_name = "fft_r2c"

    @staticmethod
    def forward(ctx, x, dims, norm):
        y = ctx.xp.fft.rfftn(x, axes=dims, norm=norm)
        ctx.args = (dims, norm, x.shape[dims[-1]])
        return y.astype(_complex_of(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, g):
        dims, norm, n = ctx.args
        full = _resize(g, (dims[-1],), (n,))  # the dropped half of the spectrum got no gradient
        return C2C.apply(full, dims, _DUAL[norm], False).real, None, None


class C2R(Function):
    _raw = True
    op_name = "fft_c2r"

    @staticmethod
    def forward(ctx, x, dims, norm, n):
        # x's last transformed dim is already n // 2 + 1 long (the caller resized it)
        y = ctx.xp.fft.irfftn(x, s=[x.shape[d] for d in dims[:-1]] + [n], axes=dims, norm=norm)
        ctx.args = (dims, norm, n)
        ctx.real = x.dtype.kind != "c"
        single = _complex_of(x.dtype) == _dt.complex64.np
        return y.astype(_dt.float32.np if single else _dt.float64.np, copy=False)

    @staticmethod
    def backward(ctx, g):
        dims, norm, n = ctx.args
        G = R2C.apply(g, dims, _DUAL[norm])
        h = n // 2 + 1
        w = [1.0] + [2.0] * (n - h) + [1.0] * (h - 1 - (n - h))  # interior bins appear twice in the signal
        shape = [1] * g.ndim
        shape[dims[-1]] = h
        weight = Tensor._make(ctx.xp.asarray(w, dtype=g._data.dtype).reshape(shape))
        gx = G * weight
        return (gx.real if ctx.real else gx), None, None, None


def _c2c(op, input, s, dim, norm, forward, default_all=True):
    x = _input(op, input)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_all)
    return C2C.apply(_resize(x, dims, sizes), dims, _norm(norm), forward)


def _r2c(op, input, s, dim, norm, default_all=True):
    x = _input(op, input, real_only=True)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_all)
    return R2C.apply(_resize(x, dims, sizes), dims, _norm(norm))


def _c2r(op, input, s, dim, norm, default_all=True):
    x = _input(op, input)
    if s is None:
        dims, sizes = _dims_and_sizes(op, x, None, dim, default_all)
        sizes = sizes[:-1] + (2 * (x.shape[dims[-1]] - 1),)
    else:
        dims, sizes = _dims_and_sizes(op, x, s, dim, default_all)
    n = sizes[-1]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return C2R.apply(_resize(x, dims, sizes[:-1] + (n // 2 + 1,)), dims, _norm(norm), n)


def _one(n):
    return None if n is None else (n,)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along ``dim`` (zero-padded or cut to ``n``).

    >>> import workbench as wb
    >>> wb.fft.fft(wb.tensor([1.0, 2.0, 0.0, 0.0])).imag
    tensor([ 0., -2.,  0.,  2.])
    """
    return _out(_c2c("fft", input, _one(n), (dim,), norm, True), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft.  >>> wb.fft.ifft(wb.fft.fft(wb.tensor([1.0, 2.0]))).real  ->  tensor([1., 2.])"""
    return _out(_c2c("ifft", input, _one(n), (dim,), norm, False), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D transform over ``dim``.  >>> wb.fft.fft2(wb.ones(2, 2))[0, 0]  ->  tensor(4.+0.j)"""
    return _out(_c2c("fft2", input, s, dim, norm, True), out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of fft2.  >>> wb.fft.ifft2(wb.fft.fft2(wb.ones(2, 2))).real  ->  tensor([[1., 1.], [1., 1.]])"""
    return _out(_c2c("ifft2", input, s, dim, norm, False), out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform over ``dim`` (all dims by default).  >>> wb.fft.fftn(wb.ones(2, 2, 2))[0, 0, 0]  ->  tensor(8.+0.j)"""
    return _out(_c2c("fftn", input, s, dim, norm, True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of fftn.  >>> wb.fft.ifftn(wb.fft.fftn(wb.ones(2, 2))).real.sum()  ->  tensor(4.)"""
    return _out(_c2c("ifftn", input, s, dim, norm, False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a real signal: the n // 2 + 1 non-negative frequencies.

    >>> import workbench as wb
    >>> wb.fft.rfft(wb.tensor([1.0, 1.0, 1.0, 1.0])).real
    tensor([4., 0., 0.])
    """
    return _out(_r2c("rfft", input, _one(n), (dim,), norm), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of length n (2 * (m - 1) by default).

    >>> import workbench as wb
    >>> wb.fft.irfft(wb.fft.rfft(wb.tensor([1.0, 2.0, 3.0, 4.0])))
    tensor([1., 2., 3., 4.])
    """
    return _out(_c2r("irfft", input, _one(n), (dim,), norm), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """rfft over the last of ``dim``, fft over the other.  >>> wb.fft.rfft2(wb.ones(2, 4)).shape  ->  workbench.Size([2, 3])"""
    return _out(_r2c("rfft2", input, s, dim, norm), out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2.  >>> wb.fft.irfft2(wb.fft.rfft2(wb.ones(2, 4))).shape  ->  workbench.Size([2, 4])"""
    return _out(_c2r("irfft2", input, s, dim, norm), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """rfft over the last of ``dim``, fft over the rest.  >>> wb.fft.rfftn(wb.ones(2, 2, 4)).shape  ->  workbench.Size([2, 2, 3])"""
    return _out(_r2c("rfftn", input, s, dim, norm), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn.  >>> wb.fft.irfftn(wb.fft.rfftn(wb.ones(2, 4))).shape  ->  workbench.Size([2, 4])"""
    return _out(_c2r("irfftn", input, s, dim, norm), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half (a real result).

    >>> import workbench as wb
    >>> wb.fft.hfft(wb.tensor([1.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    return _out(_c2r("hfft", input.conj(), _one(n), (dim,), _DUAL[_norm(norm)]), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: half of the Hermitian spectrum of a real signal.

    >>> import workbench as wb
    >>> wb.fft.ihfft(wb.tensor([1.0, 1.0, 1.0, 1.0])).real
    tensor([1., 0., 0.])
    """
    return _out(_r2c("ihfft", input, _one(n), (dim,), _DUAL[_norm(norm)]).conj(), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """hfft over two dims.  >>> wb.fft.hfft2(wb.ones(2, 3)).shape  ->  workbench.Size([2, 4])"""
    return _out(_c2r("hfft2", input.conj(), s, dim, _DUAL[_norm(norm)]), out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of hfft2.  >>> wb.fft.ihfft2(wb.ones(2, 4)).shape  ->  workbench.Size([2, 3])"""
    return _out(_r2c("ihfft2", input, s, dim, _DUAL[_norm(norm)]).conj(), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """hfft over ``dim`` (all by default).  >>> wb.fft.hfftn(wb.ones(2, 3)).shape  ->  workbench.Size([2, 4])"""
    return _out(_c2r("hfftn", input.conj(), s, dim, _DUAL[_norm(norm)]), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn.  >>> wb.fft.ihfftn(wb.ones(2, 4)).shape  ->  workbench.Size([2, 3])"""
    return _out(_r2c("ihfftn", input, s, dim, _DUAL[_norm(norm)]).conj(), out)


def _freq_tensor(values, dtype, device, requires_grad):
    dt = dtype or _dt.get_default_dtype()
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


@writes_out
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of fft(x, n): [0, 1, ..., n/2 - 1, -n/2, ..., -1] / (d * n).

    >>> import workbench as wb
    >>> wb.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    vals = [(k if k < (n + 1) // 2 else k - n) / (d * n) for k in range(n)]
    return _freq_tensor(vals, dtype, device, requires_grad)


@writes_out
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft(x, n): [0, 1, ..., n // 2] / (d * n).

    >>> import workbench as wb
    >>> wb.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    return _freq_tensor([k / (d * n) for k in range(n // 2 + 1)], dtype, device, requires_grad)


def _shift(input, dim, sign):
    dims = range(input.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    dims = [wrap_dim(d, input.ndim) for d in dims]
    if not dims:
        return input
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the middle (a roll by n // 2 over ``dim``).

    >>> import workbench as wb
    >>> wb.fft.fftshift(wb.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift.  >>> wb.fft.ifftshift(wb.fft.fftshift(wb.arange(5)))  ->  tensor([0, 1, 2, 3, 4])"""
    return _shift(input, dim, -1)
