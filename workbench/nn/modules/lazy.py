"""Lazy modules: layers whose input size is inferred from the first input they see.

A lazy layer holds UninitializedParameters until its first forward; a forward pre-hook then
materialises them with the inferred shape, runs the layer's reset_parameters, and turns the module
into its ordinary class (LazyLinear becomes Linear), as PyTorch's LazyModuleMixin does.
"""
from ... import creation
from ..._backend import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d)


class LazyModuleMixin:
    """Infers parameter shapes on the first call, then becomes ``cls_to_become``.

    >>> import workbench as wb
    >>> fc = wb.nn.LazyLinear(4)
    >>> fc(wb.randn(2, 7)).shape, type(fc).__name__, fc.in_features
    (workbench.Size([2, 4]), 'Linear', 7)
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        """Whether any own parameter or buffer still has no shape."""
        return any(is_lazy(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    @staticmethod
    def _infer_parameters(module, args, kwargs):
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is inferred from the first input.

    >>> import workbench as wb
    >>> wb.nn.LazyLinear(3)(wb.randn(5, 8)).shape
    workbench.Size([5, 3])
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, device=device, dtype=dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialise the weight (and bias) from the input's last dimension."""
        if self.in_features == 0:  # also after a state dict materialised the weight
            self.in_features = input.shape[-1]
        if self.has_uninitialized_params():
            with no_grad():
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialise the weight (and bias) from the input's channel dimension."""
        n = self._n
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {self._get_name()}, "
                               f"but got input of size: {input.shape}")
        self.in_channels = input.shape[1] if input.dim() == n + 2 else input.shape[0]
        if not self.has_uninitialized_params():
            return
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self._transposed:
                shape = (self.in_channels, self.out_channels // self.groups) + tuple(self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups) + tuple(self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name, base):
    transposed = base._transposed

    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                                     dilation, padding_mode, device, dtype)
            _lazy_conv_params(self, out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                                     padding_mode, device, dtype)
            _lazy_conv_params(self, out_channels, bias, device, dtype)

    size = ", ".join(["5"] * int(name[-2]))
    doc = (f"A {base.__name__} whose in_channels is inferred from the first input.\n\n"
           f"    >>> m = wb.nn.{name}(4, 3)\n"
           f"    >>> _ = m(wb.ones(1, 2, {size}))\n"
           f"    >>> type(m).__name__, m.in_channels\n"
           f"    ('{base.__name__}', 2)\n    ")
    cls = type(name, (_LazyConvXdMixin, base), {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                                                "__module__": __name__})
    return cls


def _lazy_conv_params(self, out_channels, bias, device, dtype):
    # the base built a 0-channel layer: swap in parameters of unknown shape
    self.weight = UninitializedParameter(device=device, dtype=dtype)
    self.out_channels = out_channels
    if bias:
        self.bias = UninitializedParameter(device=device, dtype=dtype)


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=_dt.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialise weight, bias and running statistics from the input's channel dimension."""
        self.num_features = input.shape[1] if input.dim() > 1 else input.shape[0]
        if not self.has_uninitialized_params():
            return
        with no_grad():
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None and is_lazy(t):
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name, base, affine_default):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine_default, track_running_stats=affine_default,
                 device=None, dtype=None, *, bias=True):
        _LazyNormBase.__init__(self, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    size = ", ".join(["4"] * int(name[-2]))
    doc = (f"A {base.__name__} whose num_features is inferred from the first input.\n\n"
           f"    >>> m = wb.nn.{name}()\n"
           f"    >>> _ = m(wb.ones(2, 3, {size}))\n"
           f"    >>> type(m).__name__, m.num_features\n"
           f"    ('{base.__name__}', 3)\n    ")
    return type(name, (_LazyNormBase, base), {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                                              "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True)
