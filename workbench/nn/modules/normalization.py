"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm."""
import numbers

from ... import creation
from ..._array_step import array_step
from ..._backend import dtypes as _dt
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


class _NormBase(Module):
    _version = 2  # PyTorch's: the state dict holds num_batches_tracked
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.num_features = num_features
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(creation.empty(num_features, **fk))
            if bias:
                self.bias = Parameter(creation.empty(num_features, **fk))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, **fk))
            self.register_buffer("running_var", creation.ones(num_features, **fk))
            self.register_buffer("num_batches_tracked", creation.tensor(0, dtype=_dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean 0, running variance 1, batch count 0."""
        if self.track_running_stats:
            for t, v in ((self.running_mean, 0), (self.running_var, 1), (self.num_batches_tracked, 0)):
                t._data[...] = v
                t._vbox[0] += 1

    def reset_parameters(self):
        """Reset running statistics; weight 1, bias 0 (as PyTorch)."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = (2, 3)

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            with no_grad():
                nbt.add_(1)  # an op (not a raw +=), so a compiled replay counts too
            # momentum None: the cumulative mean, 1 / count, as a tensor (not read on the host, so a compiled step
            # replays it); the running stats get the same bits as with the Python number
            factor = array_step(lambda n: 1.0 / n.astype("float64"), nbt) if self.momentum is None else self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L); running stats for eval (momentum None = cumulative mean).

    >>> import workbench as wb
    >>> bn = wb.nn.BatchNorm1d(4)
    >>> bn(wb.randn(8, 4)).shape, int(bn.num_batches_tracked)
    (workbench.Size([8, 4]), 1)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W).  >>> wb.nn.BatchNorm2d(3)(wb.randn(2, 3, 4, 4)).shape  ->  workbench.Size([2, 3, 4, 4])"""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W).  >>> wb.nn.BatchNorm3d(3)(wb.randn(2, 3, 2, 2, 2)).shape  ->  workbench.Size([2, 3, 2, 2, 2])"""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    _dims = (3,)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        nd = self._dims[0]
        if input.dim() not in (nd - 1, nd):
            raise ValueError(f"expected {nd - 1}D or {nd}D input (got {input.dim()}D input)")
        unbatched = input.dim() == nd - 1
        if unbatched:
            input = input.unsqueeze(0)
        if input.size(1) != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{input.size(1)}.")
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Per-sample, per-channel normalization of (N, C, L).  >>> wb.nn.InstanceNorm1d(3)(wb.randn(2, 3, 5)).shape  ->  workbench.Size([2, 3, 5])"""

    _dims = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Per-sample, per-channel normalization of (N, C, H, W).

    >>> import workbench as wb
    >>> wb.nn.InstanceNorm2d(3)(wb.randn(2, 3, 4, 4)).shape
    workbench.Size([2, 3, 4, 4])
    """

    _dims = (4,)


class InstanceNorm3d(_InstanceNorm):
    """Per-sample, per-channel normalization of (N, C, D, H, W).  >>> wb.nn.InstanceNorm3d(2)  ->  InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"""

    _dims = (5,)


class LayerNorm(Module):
    """Normalize over the last dims given by ``normalized_shape``, with learned scale and shift.

    >>> import workbench as wb
    >>> wb.nn.LayerNorm(10)(wb.randn(20, 5, 10)).shape
    workbench.Size([20, 5, 10])
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        fk = {"device": device, "dtype": dtype}
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, **fk))
            if bias:
                self.bias = Parameter(creation.empty(self.normalized_shape, **fk))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize channel groups of each sample.  >>> wb.nn.GroupNorm(3, 6)(wb.randn(20, 6, 10, 10)).shape  ->  workbench.Size([20, 6, 10, 10])"""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        fk = {"device": device, "dtype": dtype}
        if affine:
            self.weight = Parameter(creation.empty(num_channels, **fk))
            if bias:
                self.bias = Parameter(creation.empty(num_channels, **fk))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) over the last dims, times a learned scale (eps None: the dtype's eps).

    >>> import workbench as wb
    >>> wb.nn.RMSNorm([2, 3])(wb.randn(2, 2, 3)).shape
    workbench.Size([2, 2, 3])
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalize each channel by the activity of ``size`` neighbouring channels (AlexNet's LRN).

    >>> import workbench as wb
    >>> wb.nn.LocalResponseNorm(2)(wb.randn(2, 4, 3, 3)).shape
    workbench.Size([2, 4, 3, 3])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
