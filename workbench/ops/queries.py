"""What a tensor is: device and layout predicates, sign and size questions, the conj/neg view bits,
and the small conversions old and new code reaches for (``type_as``, ``get_device``, ``H``/``mH``).

workbench tensors are dense, strided, never quantized or nested, and live on the CPU or a CUDA device, so
the other devices' and layouts' predicates are False, as PyTorch's are for such tensors.

>>> import workbench as wb
>>> x = wb.ones(2, 3)
>>> x.is_xpu, x.is_sparse, x.get_device(), x.is_signed()
(False, False, -1, True)
"""
from .._core import Tensor
from .._layouts import strided


def _false(name):
    return property(lambda self: False, doc=f"False: workbench tensors are never {name}.")


def is_nonzero(input):
    """Whether a one-element tensor is nonzero (PyTorch's error for any other size).

    >>> import workbench as wb
    >>> wb.is_nonzero(wb.tensor([1.5]))
    True
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other):
    """Whether two tensors have the same shape.  >>> wb.is_same_size(wb.ones(2), wb.zeros(2))  ->  True"""
    return input.shape == other.shape


def is_signed(input):
    """Whether the dtype is signed (floats and signed integers).  >>> wb.is_signed(wb.tensor([1]))  ->  True"""
    return input.dtype.is_signed


def is_conj(input):
    """False: workbench conjugates eagerly (``conj()`` computes), so no tensor carries a lazy conj bit."""
    return False


def is_neg(input):
    """False: workbench negates eagerly, so no tensor carries a lazy negation bit."""
    return False


def resolve_conj(input):
    """``input`` itself: there is never a lazy conjugation to materialise.  >>> wb.resolve_conj(wb.ones(1))  ->  tensor([1.])"""
    return input


def resolve_neg(input):
    """``input`` itself: there is never a lazy negation to materialise.  >>> wb.resolve_neg(wb.ones(1))  ->  tensor([1.])"""
    return input


def get_device(input):
    """The CUDA device index, or -1 for a CPU tensor.  >>> wb.get_device(wb.ones(1))  ->  -1"""
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


def type_as(self, tensor):
    """``self`` converted to ``tensor``'s dtype and device (itself when both match).

    >>> import workbench as wb
    >>> wb.tensor([1, 2]).type_as(wb.zeros(1)).dtype
    workbench.float32
    """
    return self.to(dtype=tensor.dtype, device=tensor.device)


def _H(self):
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor. "
                           "Use tensor.mH for batches of matrices")
    return self.conj() if self.ndim == 0 else self.transpose(0, 1).conj()


def _mH(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1).conj()


__all__ = ["is_nonzero", "is_same_size", "is_signed", "is_conj", "is_neg", "resolve_conj", "resolve_neg",
           "get_device"]
METHODS = {name: globals()[name] for name in __all__ if not name.startswith("resolve_")}  # elementwise has those
METHODS.update({
    "type_as": type_as,
    "H": property(_H, doc="The conjugate transpose of a matrix (a 0-d tensor's conjugate)."),
    "mH": property(_mH, doc="The conjugate transpose of the last two dims."),
    "layout": property(lambda self: strided, doc="workbench.strided: every workbench tensor is dense and strided."),
    "is_xpu": _false("on an Intel XPU"), "is_mps": _false("on Apple's MPS"), "is_ipu": _false("on a Graphcore IPU"),
    "is_xla": _false("on an XLA device"), "is_mtia": _false("on an MTIA device"), "is_maia": _false("on a MAIA device"),
    "is_meta": _false("meta tensors"), "is_vulkan": _false("on Vulkan"), "is_mkldnn": _false("oneDNN tensors"),
    "is_quantized": _false("quantized"), "is_sparse": _false("sparse"), "is_sparse_csr": _false("sparse CSR"),
    "is_nested": _false("nested"),
})
