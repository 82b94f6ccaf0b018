"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d, initialised as PyTorch's reset_parameters."""
import math

from ... import creation
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .utils import _ntuple, _reverse_repeat_tuple

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        n = self._n
        tup = _ntuple(n)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got padding_mode='{padding_mode}'")
        kernel_size, stride, dilation = tup(kernel_size), tup(stride), tup(dilation)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = tup(padding)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed = self._transposed
        self.output_padding = tup(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(padding, 2)
        fk = {"device": device, "dtype": dtype}
        if self._transposed:
            shape = (in_channels, out_channels // groups) + kernel_size
        else:
            shape = (out_channels, in_channels // groups) + kernel_size
        self.weight = Parameter(creation.empty(shape, **fk))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Kaiming-uniform weight (a=sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._n - 1]
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                        self.stride, _ntuple(self._n)(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) input.

    >>> import workbench as wb
    >>> wb.nn.Conv1d(16, 33, 3, stride=2)(wb.randn(20, 16, 50)).shape
    workbench.Size([20, 33, 24])
    """

    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) input.

    >>> import workbench as wb
    >>> wb.nn.Conv2d(1, 16, 3, padding=1)(wb.randn(2, 1, 8, 8)).shape
    workbench.Size([2, 16, 8, 8])
    """

    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) input.

    >>> import workbench as wb
    >>> wb.nn.Conv3d(2, 4, 3)(wb.randn(1, 2, 5, 5, 5)).shape
    workbench.Size([1, 4, 3, 3, 3])
    """

    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not accept a padding string; give the padding as ints")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        output_size = list(output_size)
        non_spatial = 2 if input.dim() == n + 2 else 1
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{non_spatial + n} elements (got {len(output_size)})")
        res = []
        for d in range(n):
            lo = ((input.size(d + non_spatial) - 1) * self.stride[d] - 2 * self.padding[d]
                  + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            hi = lo + self.stride[d] - 1
            if not lo <= output_size[d] <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{lo} to {hi} (for an input of {list(input.shape)[non_spatial:]})")
            res.append(output_size[d] - lo)
        return tuple(res)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution ("deconvolution").

    >>> import workbench as wb
    >>> wb.nn.ConvTranspose1d(4, 2, 3, stride=2)(wb.randn(1, 4, 5)).shape
    workbench.Size([1, 2, 11])
    """

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution").

    >>> import workbench as wb
    >>> wb.nn.ConvTranspose2d(4, 2, 3, stride=2)(wb.randn(1, 4, 5, 5)).shape
    workbench.Size([1, 2, 11, 11])
    """

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution.  >>> wb.nn.ConvTranspose3d(2, 2, 3)(wb.randn(1, 2, 3, 3, 3)).shape  ->  workbench.Size([1, 2, 5, 5, 5])"""

    _n = 3
