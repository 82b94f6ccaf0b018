"""Flatten parameters into one vector and back."""
from ... import ops
from ...tensor import Tensor


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated (differentiable).

    >>> import workbench as wb
    >>> wb.nn.utils.parameters_to_vector(wb.nn.Linear(2, 1).parameters()).shape
    workbench.Size([3])
    """
    vec = []
    dev = None
    for p in parameters:
        if dev is None:
            dev = p.device
        elif p.device != dev:
            raise TypeError(f"Found two parameters on different devices, this is currently not supported "
                            f"({dev} and {p.device}); move them to one device first")
        vec.append(p.reshape(-1))
    return ops.cat(vec)


def vector_to_parameters(vec, parameters):
    """Make the parameters views of consecutive slices of ``vec`` (as PyTorch's ``param.data = ...``).

    >>> import workbench as wb
    >>> m = wb.nn.Linear(2, 1); wb.nn.utils.vector_to_parameters(wb.zeros(3), m.parameters())
    >>> m.bias
    Parameter containing:
    tensor([0.], requires_grad=True)
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: vec has {vec.numel()} elements but the parameters hold {total}")
    pointer = 0
    flat = vec.detach()._data.reshape(-1)
    for p in params:
        n = p.numel()
        p._data = flat[pointer:pointer + n].reshape(p._data.shape).astype(p._data.dtype, copy=False)
        p._vbox[0] += 1
        pointer += n
