"""Pooling and upsampling modules."""
from .. import functional as F
from ..module import Module
from .utils import _pair, _single, _triple


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) input.  >>> wb.nn.MaxPool1d(2)(wb.randn(1, 3, 8)).shape  ->  workbench.Size([1, 3, 4])"""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) input.

    >>> import workbench as wb
    >>> wb.nn.MaxPool2d(2)(wb.randn(1, 3, 8, 8)).shape
    workbench.Size([1, 3, 4, 4])
    """

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) input.  >>> wb.nn.AvgPool1d(2)(wb.randn(1, 3, 8)).shape  ->  workbench.Size([1, 3, 4])"""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over sliding windows of (N, C, H, W) input.

    >>> import workbench as wb
    >>> wb.nn.AvgPool2d(2)(wb.ones(1, 1, 4, 4))
    tensor([[[[1., 1.],
              [1., 1.]]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePoolNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Average-pool to a fixed length.  >>> wb.nn.AdaptiveAvgPool1d(5)(wb.randn(1, 64, 8)).shape  ->  workbench.Size([1, 64, 5])"""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average-pool to a fixed (H, W); None keeps that dim.

    >>> import workbench as wb
    >>> wb.nn.AdaptiveAvgPool2d((1, 1))(wb.randn(2, 8, 5, 7)).shape
    workbench.Size([2, 8, 1, 1])
    """

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePoolNd):
    """Max-pool to a fixed length.  >>> wb.nn.AdaptiveMaxPool1d(2)(wb.randn(1, 3, 8)).shape  ->  workbench.Size([1, 3, 2])"""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePoolNd):
    """Max-pool to a fixed (H, W).  >>> wb.nn.AdaptiveMaxPool2d(1)(wb.randn(1, 3, 8, 8)).shape  ->  workbench.Size([1, 3, 1, 1])"""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class Upsample(Module):
    """Resize by ``scale_factor`` or to ``size`` (nearest, linear, bilinear, bicubic, trilinear).

    >>> import workbench as wb
    >>> wb.nn.Upsample(scale_factor=2, mode="nearest")(wb.ones(1, 1, 2, 2)).shape
    workbench.Size([1, 1, 4, 4])
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling.  >>> wb.nn.UpsamplingNearest2d(scale_factor=2)(wb.ones(1, 1, 2, 2)).shape  ->  workbench.Size([1, 1, 4, 4])"""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with align_corners=True.  >>> wb.nn.UpsamplingBilinear2d(scale_factor=2)  ->  UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) input.  >>> wb.nn.MaxPool3d(2)(wb.randn(1, 1, 4, 4, 4)).shape  ->  workbench.Size([1, 1, 2, 2, 2])"""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(Module):
    """Mean over sliding windows of (N, C, D, H, W) input.  >>> wb.nn.AvgPool3d(2)(wb.ones(1, 1, 2, 2, 2)).shape  ->  workbench.Size([1, 1, 1, 1, 1])"""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Average-pool to a fixed (D, H, W).  >>> wb.nn.AdaptiveAvgPool3d(1)(wb.randn(1, 2, 3, 4, 5)).shape  ->  workbench.Size([1, 2, 1, 1, 1])"""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePoolNd):
    """Max-pool to a fixed (D, H, W).  >>> wb.nn.AdaptiveMaxPool3d(1)(wb.randn(1, 2, 3, 4, 5)).shape  ->  workbench.Size([1, 2, 1, 1, 1])"""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling: (sum x**p)**(1/p) over windows.  >>> wb.nn.LPPool1d(2, 3)(wb.randn(1, 2, 9)).shape  ->  workbench.Size([1, 2, 3])"""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling.  >>> wb.nn.LPPool2d(2, 2)(wb.randn(1, 2, 4, 4)).shape  ->  workbench.Size([1, 2, 2, 2])"""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling.  >>> wb.nn.LPPool3d(2, 2)(wb.randn(1, 2, 4, 4, 4)).shape  ->  workbench.Size([1, 2, 2, 2, 2])"""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpoolNd(Module):
    _tup = staticmethod(_single)

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = self._tup(kernel_size)
        self.stride = self._tup(stride if stride is not None else kernel_size)
        self.padding = self._tup(padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: put values back at the pooled indices, zeros elsewhere.

    >>> import workbench as wb
    >>> out, idx = wb.nn.MaxPool1d(2, return_indices=True)(wb.tensor([[[1., 2, 3, 4]]]))
    >>> wb.nn.MaxUnpool1d(2)(out, idx)
    tensor([[[0., 2., 0., 4.]]])
    """

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d.  >>> wb.nn.MaxUnpool2d(2)(*wb.nn.MaxPool2d(2, return_indices=True)(wb.arange(16.).reshape(1, 1, 4, 4)))[0, 0, 1]  ->  tensor([0., 5., 0., 7.])"""

    _tup = staticmethod(_pair)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d.  >>> wb.nn.MaxUnpool3d(2)(*wb.nn.MaxPool3d(2, return_indices=True)(wb.arange(8.).reshape(1, 1, 2, 2, 2))).flatten()  ->  tensor([0., 0., 0., 0., 0., 0., 0., 7.])"""

    _tup = staticmethod(_triple)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _FractionalMaxPoolNd(Module):
    _tup = staticmethod(_pair)

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = self._tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = self._tup(output_size) if output_size is not None else None
        self.output_ratio = self._tup(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random windows down to ``output_size`` (or ``output_ratio`` of the input).

    >>> import workbench as wb
    >>> wb.nn.FractionalMaxPool2d(3, output_ratio=0.5)(wb.randn(1, 2, 10, 10)).shape
    workbench.Size([1, 2, 5, 5])
    """

    def forward(self, input):
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling.  >>> wb.nn.FractionalMaxPool3d(2, output_size=3)(wb.randn(1, 1, 6, 6, 6)).shape  ->  workbench.Size([1, 1, 3, 3, 3])"""

    _tup = staticmethod(_triple)

    def forward(self, input):
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
