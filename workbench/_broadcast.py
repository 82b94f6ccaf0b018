"""PyTorch's broadcasting rule and its errors.

PyTorch broadcasts an op's operands in argument order (TensorIterator's ``compute_shape``: ``infer_size`` of
the shape so far and the next operand), and raises a RuntimeError naming the first dimension, from the right,
where two sizes differ and neither is 1. NumPy and CuPy raise a ValueError instead ("operands could not be
broadcast together with shapes (2,3) (4,3)"), from inside whichever ufunc met the shapes. The ops leave the
broadcasting to the array library (no shape check on the success path); where they enter, a failed
broadcast is turned into PyTorch's error by ``broadcast_error``, only when it happens.

>>> infer_size([(5, 2, 3), (4, 3)])
Traceback (most recent call last):
...
RuntimeError: The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1
"""
import functools
import re
import warnings

from ._backend import numpy as _numpy
from ._backend.dtypes import is_half

_SHAPE = re.compile(r"\(([\d,\s]*)\)")


def _infer2(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = [1] * n
    for i in range(n - 1, -1, -1):  # from the right, as PyTorch, which names the first mismatch from there
        sa, sb = a[i], b[i]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                               f"non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return tuple(out)


def infer_size(shapes):
    """The shape ``shapes`` (tuples, in the op's argument order) broadcast to, or PyTorch's RuntimeError.

    >>> infer_size([(2, 1), (3,)])
    (2, 3)
    """
    out = ()
    for s in shapes:
        out = _infer2(out, tuple(s))
    return out


def _shapes_in(msg):
    return [tuple(int(d) for d in g.replace(",", " ").split()) for g in _SHAPE.findall(msg)]


def broadcast_error(exc, operands):
    """PyTorch's RuntimeError for ``exc``, the ValueError the array library raised on operands that do not
    broadcast (or on other shapes its kernel cannot take), or None when ``exc`` is about something else.

    ``operands``: the op's arguments in PyTorch's order (tensors, arrays, numbers, anything: what has a shape
    takes part). When they do broadcast, the shapes that failed were the op's own (an output, a step inside
    it), read from the message: an output that is too small for the result gives PyTorch's in-place error.

    >>> import numpy as np
    >>> try:
    ...     np.ones((2, 3)) + np.ones((4, 3))
    ... except ValueError as e:
    ...     print(broadcast_error(e, (np.ones((2, 3)), np.ones((4, 3)))))
    The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0
    """
    msg = str(exc)
    if "broadcast" not in msg:
        # NumPy's other shape errors inside a kernel (a gufunc's core dimensions, a reshape): PyTorch's type
        return RuntimeError(msg) if "core dimension" in msg or msg.startswith("cannot reshape array") else None
    try:
        infer_size([a.shape for a in operands if hasattr(a, "shape")])
    except RuntimeError as e:
        return e
    found = _shapes_in(msg)
    if len(found) == 2 and ("output operand" in msg or "input array from" in msg):
        out, shape = found if "output operand" in msg else found[::-1]
        return RuntimeError(f"output with shape {list(out)} doesn't match the broadcast shape {list(shape)}")
    try:
        infer_size(found)
    except RuntimeError as e:
        return e
    return RuntimeError(msg)


def broadcasting(fn):
    """Decorate a public op that computes on its operands' arrays itself (no primitive's ``apply`` around it,
    which translates the error for every other op): NumPy's broadcasting error becomes PyTorch's, operands in
    the op's argument order."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            raise broadcast_error(e, args) or e from None

    return op


def sum_to(x, shape):
    """Array ``x`` summed over the dims broadcasting added or stretched, down to ``shape`` (which must expand
    to x's): sum_to_size's forward, and the engine's for a broadcast operand's gradient. 16-bit floats are
    summed in float32 and rounded once."""
    if x.ndim == 2 and len(shape) == 1 and shape[0] == x.shape[1] and not is_half(x.dtype):
        return x.sum(0)  # a bias's gradient summed over the batch (the same sums)
    nd = x.ndim - len(shape)
    axes = tuple(range(nd)) + tuple(i + nd for i, s in enumerate(shape) if s == 1 and x.shape[i + nd] != 1)
    if not axes:
        return x.reshape(shape)
    if is_half(x.dtype):
        return x.sum(axis=axes, keepdims=True, dtype="float32").astype(x.dtype).reshape(shape)
    return x.sum(axis=axes, keepdims=True, dtype=x.dtype).reshape(shape)


_BASIC = (int, slice, type(None), type(Ellipsis), _numpy.integer)


def no_partial_overlap(out, a):
    """PyTorch's error for an in-place op whose operand ``a`` covers part of the memory it writes (``out``) but is
    not ``out`` itself: ``y.sub_(y[2])`` would read elements it already changed. As PyTorch, only contiguous
    pairs are judged (for others the overlap is too costly to decide and the op runs)."""
    if (a is not out and out.__class__ is _numpy.ndarray and a.__class__ is out.__class__
            and (a.base is not None or out.base is not None)  # two arrays that own their memory never share it
            and _numpy.may_share_memory(out, a) and out.flags.c_contiguous and a.flags.c_contiguous
            and (a.nbytes != out.nbytes or _address(a) != _address(out))):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


def _address(a):
    return a.__array_interface__["data"][0]


def write_through(a, value, region=None, fill=False):
    """``a[region] = value`` (``a[...]`` without a region) for read-only ``a``, a view that expand made: NumPy's
    broadcast views are read-only, and PyTorch writes through them. Where the destination has internal overlap,
    one memory element under several indices (a stretched dim), PyTorch's RuntimeError instead, before anything
    is written: an elementwise write there has no single answer. ``fill``: every element gets one value (fill_,
    zero_), which PyTorch allows even then. An advanced index (``index_put_``) writes through with PyTorch's
    deprecation warning. An array read-only for another reason (a read-only buffer) gives NumPy's ValueError."""
    overlap_ok = fill
    if region is not None:
        keys = region if region.__class__ is tuple else (region,)
        if basic_index(keys):
            # a basic index: the destination is a view of a (with an Ellipsis: a 0-d view, not a scalar)
            a = a[keys if any(k is Ellipsis for k in keys) else keys + (Ellipsis,)]
            region = None
        elif stretched(a):
            warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
                          "performing this operation. This also applies to advanced indexing e.g. "
                          "tensor[indices] = tensor", UserWarning, stacklevel=4)
            overlap_ok = True
    if not overlap_ok and stretched(a):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    w = a.view()
    w.flags.writeable = True  # ValueError where the memory itself is read-only
    if region is None:
        w[...] = value
    else:
        w[region] = value


def basic_index(keys):
    """Whether index tuple ``keys`` is basic (ints, slices, None, Ellipsis): it selects a view."""
    return all(k.__class__ is not bool and isinstance(k, _BASIC) for k in keys)


def stretched(a):
    """Whether array a has a dim of several elements at one memory element (stride 0): an expanded view."""
    return any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))
