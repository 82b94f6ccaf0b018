"""Activation modules: thin wrappers over nn.functional with PyTorch's arguments and reprs."""
from ... import creation
from .. import functional as F
from .. import init as _init
from ..module import Module
from ..parameter import Parameter


def _inplace_str(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class ReLU(Module):
    """max(0, x).  >>> wb.nn.ReLU()(wb.tensor([-1.0, 2.0]))  ->  tensor([0., 2.])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Threshold(Module):
    """x if x > threshold else value.  >>> wb.nn.Threshold(0.1, 20)(wb.tensor([0.0, 1.0]))  ->  tensor([20., 1.])"""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: slope ~ U(lower, upper) in training, their mean in eval.

    >>> wb.nn.RReLU().eval()(wb.tensor([-1.0, 1.0]))
    tensor([-0.2292,  1.0000])
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val).  >>> wb.nn.Hardtanh(-2, 2)(wb.tensor([-3.0, 3.0]))  ->  tensor([-2., 2.])"""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6).  >>> wb.nn.ReLU6()(wb.tensor([-1.0, 7.0]))  ->  tensor([0., 6.])"""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Sigmoid(Module):
    """1 / (1 + exp(-x)).  >>> wb.nn.Sigmoid()(wb.zeros(1))  ->  tensor([0.5000])"""

    def forward(self, input):
        return F.sigmoid(input)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6.  >>> wb.nn.Hardsigmoid()(wb.zeros(1))  ->  tensor([0.5000])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Tanh(Module):
    """Hyperbolic tangent.  >>> wb.nn.Tanh()(wb.zeros(1))  ->  tensor([0.])"""

    def forward(self, input):
        return F.tanh(input)


class SiLU(Module):
    """x * sigmoid(x).  >>> wb.nn.SiLU()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Mish(Module):
    """x * tanh(softplus(x)).  >>> wb.nn.Mish()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class Hardswish(Module):
    """x * relu6(x + 3) / 6.  >>> wb.nn.Hardswish()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1).  >>> wb.nn.ELU()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).  >>> wb.nn.CELU()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(Module):
    """scale * elu(x, alpha) with the self-normalising constants.  >>> wb.nn.SELU()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, True)


class GLU(Module):
    """a * sigmoid(b), where a, b are the halves of ``dim``.  >>> wb.nn.GLU()(wb.zeros(4, 2)).shape  ->  workbench.Size([4, 1])"""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GELU(Module):
    """x * Phi(x) (``approximate='tanh'`` for the tanh form).  >>> wb.nn.GELU()(wb.zeros(1))  ->  tensor([0.])"""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """x if |x| > lambd else 0.  >>> wb.nn.Hardshrink()(wb.tensor([0.1, 1.0]))  ->  tensor([0., 1.])"""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x.  >>> wb.nn.LeakyReLU(0.1)(wb.tensor([-1.0]))  ->  tensor([-0.1000])"""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    """log(sigmoid(x)).  >>> wb.nn.LogSigmoid()(wb.zeros(1))  ->  tensor([-0.6931])"""

    def forward(self, input):
        return F.logsigmoid(input)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta (linear above ``threshold``).  >>> wb.nn.Softplus()(wb.zeros(1))  ->  tensor([0.6931])"""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """x - lambd, x + lambd or 0.  >>> wb.nn.Softshrink()(wb.tensor([1.0]))  ->  tensor([0.5000])"""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class PReLU(Module):
    """Leaky ReLU with a learned slope (one, or one per channel), initialised to ``init``.

    >>> import workbench as wb
    >>> wb.nn.PReLU()(wb.tensor([-1.0, 1.0])).tolist()
    [-0.25, 1.0]
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(creation.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Fill the slope with ``init``."""
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softsign(Module):
    """x / (1 + |x|).  >>> wb.nn.Softsign()(wb.tensor([1.0]))  ->  tensor([0.5000])"""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x).  >>> wb.nn.Tanhshrink()(wb.zeros(1))  ->  tensor([0.])"""

    def forward(self, input):
        return F.tanhshrink(input)


class Softmin(Module):
    """softmax(-x) along ``dim``.  >>> wb.nn.Softmin(dim=0)(wb.zeros(2))  ->  tensor([0.5000, 0.5000])"""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``.  >>> wb.nn.Softmax(dim=-1)(wb.zeros(2))  ->  tensor([0.5000, 0.5000])"""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over channels at every location of a (N, C, H, W) or (C, H, W) input.

    >>> wb.nn.Softmax2d()(wb.zeros(1, 2, 3, 3)).sum(1).tolist()
    [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``.  >>> wb.nn.LogSoftmax(dim=-1)(wb.zeros(2))  ->  tensor([-0.6931, -0.6931])"""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
