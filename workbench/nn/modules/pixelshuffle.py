"""PixelShuffle, PixelUnshuffle, ChannelShuffle, Fold, Unfold: rearranging modules over nn.functional."""
from .. import functional as F
from ..module import Module


class PixelShuffle(Module):
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r).  >>> wb.nn.PixelShuffle(2)(wb.zeros(1, 8, 3, 3)).shape  ->  workbench.Size([1, 2, 6, 6])"""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W).  >>> wb.nn.PixelUnshuffle(2)(wb.zeros(1, 2, 6, 6)).shape  ->  workbench.Size([1, 8, 3, 3])"""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave ``groups`` channel groups (ShuffleNet).  >>> wb.nn.ChannelShuffle(2)(wb.zeros(1, 4, 2, 2)).shape  ->  workbench.Size([1, 4, 2, 2])"""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class Fold(Module):
    """Sum sliding-window columns back into an image (inverse layout of Unfold).

    >>> import workbench as wb
    >>> wb.nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(wb.randn(1, 12, 12)).shape
    workbench.Size([1, 3, 4, 5])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding-window columns (im2col): (N, C, H, W) -> (N, C*kh*kw, L).

    >>> import workbench as wb
    >>> wb.nn.Unfold(kernel_size=(2, 3))(wb.randn(2, 5, 3, 4)).shape
    workbench.Size([2, 30, 4])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding},"
                f" stride={self.stride}")
