"""Dropout modules: zero elements (or whole channels) with probability p while training."""
from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p and scale the rest by 1/(1-p), in training only.

    >>> import workbench as wb
    >>> wb.nn.Dropout(0.5).eval()(wb.ones(3))
    tensor([1., 1., 1.])
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) input.  >>> wb.nn.Dropout1d(0.2)(wb.ones(2, 3, 4)).shape  ->  workbench.Size([2, 3, 4])"""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input.  >>> wb.nn.Dropout2d(0.2)(wb.ones(2, 3, 4, 4)).shape  ->  workbench.Size([2, 3, 4, 4])"""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) input.  >>> wb.nn.Dropout3d(0.2)  ->  Dropout3d(p=0.2, inplace=False)"""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalising mean and variance.  >>> wb.nn.AlphaDropout(0.2)  ->  AlphaDropout(p=0.2, inplace=False)"""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels.  >>> wb.nn.FeatureAlphaDropout(0.2)(wb.ones(2, 3, 4)).shape  ->  workbench.Size([2, 3, 4])"""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
