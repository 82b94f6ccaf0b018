"""nn.init: fill tensors in place from PyTorch's initialisation distributions (no autograd recorded).

Every function writes into the tensor's own array on its device, bumps its version counter and
returns the tensor, as PyTorch's do.
"""
import math
import warnings

from .. import _backend
from ..random import default_generator
from ..tensor import Tensor


def _check(tensor, fn):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn}() expects a workbench Tensor, got {type(tensor).__name__}")


def _stream(tensor, generator):
    return (generator or default_generator)._stream(tensor.device)


def _write(tensor, arr):
    with _backend.on_device(tensor.device):
        tensor._data[...] = arr
    tensor._vbox[0] += 1
    return tensor


def _normal_array(tensor, generator, shape=None):
    rs = _stream(tensor, generator)
    shape = tuple(tensor.shape) if shape is None else shape
    with _backend.on_device(tensor.device):
        return rs.standard_normal(shape)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for an activation (PyTorch's table).

    >>> import workbench as wb
    >>> wb.nn.init.calculate_gain("relu")
    1.4142135623730951
    """
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps, num_output_fmaps = tensor.shape[1], tensor.shape[0]
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return num_input_fmaps * receptive, num_output_fmaps * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b).  >>> wb.nn.init.uniform_(wb.empty(3), -1, 1).shape  ->  workbench.Size([3])"""
    _check(tensor, "uniform_")
    rs = _stream(tensor, generator)
    with _backend.on_device(tensor.device):
        arr = rs.uniform(a, b, tuple(tensor.shape))
    return _write(tensor, arr)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std**2).  >>> wb.nn.init.normal_(wb.empty(3), 0, 0.02).shape  ->  workbench.Size([3])"""
    _check(tensor, "normal_")
    return _write(tensor, _normal_array(tensor, generator) * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std**2) truncated to [a, b] (values outside are redrawn).

    >>> import workbench as wb
    >>> float(wb.nn.init.trunc_normal_(wb.empty(1000), std=1.0, a=-0.5, b=0.5).abs().max()) <= 0.5
    True
    """
    _check(tensor, "trunc_normal_")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    xp = _backend.xp_of(tensor._data)
    shape = tuple(tensor.shape)
    out = _normal_array(tensor, generator, shape) * std + mean
    bad = (out < a) | (out > b)
    while bool(bad.any()):
        k = int(bad.sum())
        out[bad] = _normal_array(tensor, generator, (k,)) * std + mean
        bad = (out < a) | (out > b)
    return _write(tensor, xp.clip(out, a, b))


def constant_(tensor, val):
    """Fill with ``val``.  >>> wb.nn.init.constant_(wb.empty(2), 0.5)  ->  tensor([0.5000, 0.5000])"""
    _check(tensor, "constant_")
    return _write(tensor, val)


def ones_(tensor):
    """Fill with 1.  >>> wb.nn.init.ones_(wb.empty(2))  ->  tensor([1., 1.])"""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0.  >>> wb.nn.init.zeros_(wb.empty(2))  ->  tensor([0., 0.])"""
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix.  >>> wb.nn.init.eye_(wb.empty(2, 3))  ->  tensor([[1., 0., 0.], [0., 1., 0.]])"""
    _check(tensor, "eye_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    xp = _backend.xp_of(tensor._data)
    return _write(tensor, xp.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill a 3/4/5-D conv weight with the Dirac delta (convolution keeps the input's channels).

    >>> import workbench as wb
    >>> wb.nn.init.dirac_(wb.empty(2, 2, 3)).sum().item()
    2.0
    """
    _check(tensor, "dirac_")
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    min_dim = min(out_per, sizes[1])
    xp = _backend.xp_of(tensor._data)
    arr = xp.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for i in range(min_dim):
            arr[(g * out_per + i, i) + centre] = 1
    return _write(tensor, arr)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).  >>> bool(wb.nn.init.xavier_uniform_(wb.empty(3, 5)).abs().max() <= (6 / 8) ** 0.5)  ->  True"""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, gain**2 * 2 / (fan_in + fan_out)).  >>> wb.nn.init.xavier_normal_(wb.empty(3, 5)).shape  ->  workbench.Size([3, 5])"""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b), b = gain * sqrt(3 / fan).  >>> bool(wb.nn.init.kaiming_uniform_(wb.empty(3, 5), a=5 ** 0.5).abs().max() <= 5 ** -0.5)  ->  True"""
    _check(tensor, "kaiming_uniform_")
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, gain**2 / fan).  >>> wb.nn.init.kaiming_normal_(wb.empty(3, 5), nonlinearity="relu").shape  ->  workbench.Size([3, 5])"""
    _check(tensor, "kaiming_normal_")
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (rows/cols flattened past dim 0), times ``gain``.

    >>> import workbench as wb
    >>> w = wb.nn.init.orthogonal_(wb.empty(3, 3))
    >>> bool(((w @ w.T) - wb.eye(3)).abs().max() < 1e-5)
    True
    """
    _check(tensor, "orthogonal_")
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    xp = _backend.xp_of(tensor._data)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _normal_array(tensor, generator, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = xp.linalg.qr(flat)
    q = q * xp.sign(xp.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tuple(tensor.shape)))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """2-D tensor with a ``sparsity`` fraction of each column zeroed, the rest N(0, std**2).

    >>> import workbench as wb
    >>> int((wb.nn.init.sparse_(wb.empty(10, 2), 0.5) == 0).sum())
    10
    """
    _check(tensor, "sparse_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    arr = _normal_array(tensor, generator) * std
    rs = _stream(tensor, generator)
    for c in range(cols):
        idx = rs.permutation(rows)[:num_zeros]
        arr[idx, c] = 0
    return _write(tensor, arr)


def _deprecated(fn):
    def old(*args, **kwargs):
        warnings.warn(f"nn.init.{fn.__name__[:-1]} is now deprecated in favor of nn.init.{fn.__name__}.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    old.__name__ = fn.__name__[:-1]
    old.__doc__ = f"Deprecated alias of {fn.__name__}."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
