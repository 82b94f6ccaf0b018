"""Padding: constant, reflect, replicate and circular (``F.pad``)."""
from .. import creation
from .._backend import dtypes as _dt
from ..autograd.function import Function
from .index import index_select


# --- padding (re-exported as workbench.nn.functional.pad) ------------------------------------------
class ConstantPad(Function):
    _raw = True
    op_name = "constant_pad_nd"

    @staticmethod
    def forward(ctx, x, pads, value):
        ctx.pads = pads
        n = len(pads) // 2
        shape = list(x.shape)
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        for i in range(n):
            d = x.ndim - 1 - i
            lo, hi = pads[2 * i], pads[2 * i + 1]
            size = shape[d] + lo + hi
            if size < 0:
                raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} resulted in a "
                                   f"negative output size, which is invalid. Check dimension {d} of your input.")
            src[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
            dst[d] = slice(max(lo, 0), max(lo, 0) + max(shape[d] - max(-lo, 0) - max(-hi, 0), 0))
            shape[d] = size
        out = ctx.xp.full(tuple(shape), value, dtype=x.dtype)
        out[tuple(dst)] = x[tuple(src)]
        return out

    @staticmethod
    def backward(ctx, g):
        return ConstantPad.apply(g, tuple(-p for p in ctx.pads), 0), None, None


def _pad_index(mode, n, lo, hi):
    idx = list(range(-lo, n + hi))
    if mode == "reflect":
        return [(-i if i < 0 else (2 * (n - 1) - i if i >= n else i)) for i in idx]
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in idx]
    return [i % n for i in idx]  # circular


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_lo, last_hi, prev_lo, prev_hi, ...)``.

    Modes: 'constant' (with ``value``, negative pads crop), 'reflect', 'replicate', 'circular'.
    ``workbench.nn.functional.pad`` is this function.

    >>> import workbench as wb
    >>> from workbench.ops.pad import pad
    >>> pad(wb.tensor([[1., 2.]]), (1, 1), mode='reflect')
    tensor([[2., 1., 2., 1.]])
    """
    pads = tuple(int(p) for p in pad)
    if len(pads) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got pad={list(pads)}")
    if len(pads) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pads)} and input of dimension {input.ndim}")
    if mode == "constant":
        return ConstantPad.apply(input, pads, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        # PyTorch's type for this input error
        raise NotImplementedError(f"Unrecognised padding mode {mode}: use 'constant', 'reflect', 'replicate' or "
                                  "'circular'")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")

    k = len(pads) // 2
    if not k + 1 <= input.ndim <= k + 2:  # PyTorch's rule: (batch,) channels and k padded dims
        raise NotImplementedError(f"Padding size {len(pads)} is not supported for {input.ndim}D input tensor in "
                                  f"mode '{mode}': it pads {k}-D spatial input of {k + 1}D or {k + 2}D")
    x = input
    for i in range(k):
        d = input.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        if lo < 0 or hi < 0:  # negative pads crop first; the positive ones then pad the cropped dim
            x = x.narrow(d, max(-lo, 0), x.shape[d] - max(-lo, 0) - max(-hi, 0))
            lo, hi = max(lo, 0), max(hi, 0)
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) at "
                               f"dimension {d} of input {list(input.shape)}")
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"pad: replicate padding of an empty dimension {d} of input {list(input.shape)}")
        if lo or hi:
            idx = creation.tensor(_pad_index(mode, n, lo, hi), dtype=_dt.int64, device=x.device)
            x = index_select(x, d, idx)
    return x
