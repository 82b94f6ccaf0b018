"""Activations, softmax/log_softmax/softmin, normalize and dropout.

Pointwise activations are primitives whose backward multiplies by a derivative written in Tensor
ops (so they differentiate again). softmax, log_softmax and gelu are fused primitives that call
the kernels of ``_backend.kernels`` (CUDA on a GPU, their NumPy reference elsewhere); their
backward is itself a primitive with a Tensor-op backward, so double backward works too.
"""
import math
import struct
import warnings

from .. import _backend
from .. import random as _random
from .._backend import dtypes as _dt, fused as _fused, kernels as _k, pointwise as _pw
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..autograd.graph import composite
from ._util import _out, _uniform, _uniform_array, array_step, dtype_error
from .elementwise import relu as _relu, where
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from .join import cat


def _like(mask, x):
    """A bool mask as x's dtype (so constants in derivatives keep x's precision)."""
    return mask.to(x.dtype)


def _check_floating(name, x):
    if x.dtype.kind not in "fcV" and str(x.dtype) != "bfloat16":
        raise RuntimeError(f"{name}: expected a floating-point input, got {x.dtype}; convert it with .float()")


def _pointwise(name, fwd, deriv, fast=None, fast_grad=None, grad=None):
    """A primitive y = fwd(xp, x, *params) whose gradient is g * deriv(x, *params) (Tensor ops), or
    grad(g, x, *params) where that is given (a select on g: where the slope is 0, an inf or NaN g gives 0).

    fast(xp, x, *params) and fast_grad(xp, g, x, *params): the same on float32/float64 arrays in a few
    in-place passes (``_backend.pointwise``), or None where they do not serve those params; fast_grad
    runs when backward builds no graph, deriv (or grad) stays the differentiable form (gradgradcheck's).
    """

    def forward(ctx, x, *params):
        _check_floating(name, x)
        ctx.params = params
        ctx.save_for_backward(x)
        y = fast(ctx.xp, x, *params) if fast is not None and _pw.eligible(x) else None
        if y is None:
            y = fwd(ctx.xp, x, *params)
        return y.astype(x.dtype, copy=False)

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if fast_grad is not None and not STATE.enabled and _pw.eligible(x._data, g._data):
            d = fast_grad(ctx.xp, g._data, x._data, *ctx.params)
            if d is not None:
                return (Tensor._make(d),) + (None,) * len(ctx.params)
        d = grad(g, x, *ctx.params) if grad is not None else g * deriv(x, *ctx.params)
        return (d,) + (None,) * len(ctx.params)

    cls = type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                  "forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})
    return cls


def _piecewise(name, kernel, slope=1.0):
    """A primitive whose slope is ``slope`` where a bool mask holds and 0 elsewhere (clamps, shrinks,
    thresholds): kernel(xp, x, *params, want_mask) -> (y, mask) from ``_backend.pointwise``. It saves the
    mask (a quarter of x's bytes) instead of x, and its backward is one select, differentiable in g."""

    def forward(ctx, x, *params):
        _check_floating(name, x)
        ctx.n_params = len(params)
        flat = x.reshape(1) if x.ndim == 0 else x  # ufuncs return scalars for 0-d operands, and out= needs arrays
        y, m = kernel(ctx.xp, flat, *params, bool(ctx.needs_input_grad and ctx.needs_input_grad[0]))
        ctx.save_for_backward(None if m is None else m.reshape(x.shape))
        return y.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(ctx, g):
        (m,) = ctx.saved_tensors
        if not STATE.enabled:
            d = Tensor._make(_pw.mask_mul(ctx.xp, g._data, m._data, slope))
        else:
            d = where(m, g if slope == 1 else g * slope, 0.0)  # a select: an inf g where m is off gives 0
        return (d,) + (None,) * ctx.n_params

    return type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                 "forward": staticmethod(forward),
                                                 "backward": staticmethod(backward)})


def _on_x(kernel):
    """_pointwise's fast from a ``_backend.pointwise`` kernel of (x, *params)."""
    return lambda xp, x, *params: _pw.run(xp, kernel, (x,), *params)


def _on_gx(kernel):
    """_pointwise's fast_grad from a ``_backend.pointwise`` kernel of (g, x, *params)."""
    return lambda xp, g, x, *params: _pw.run(xp, kernel, (g, x), *params)


def _inplace(fn, name, shown, example_args=""):
    def inplace(input, *args, **kwargs):
        return input._inplace(name, lambda x: fn(x, *args, **kwargs))

    inplace.__name__ = name
    inplace.__doc__ = (f"In-place {fn.__name__}: overwrites input and returns it.  "
                       f">>> F.{name}(wb.tensor([-1.0, 2.0]){example_args})  ->  tensor({shown})")
    return inplace


# --- rectifiers ------------------------------------------------------------------------------------
def relu(input, inplace=False):
    """max(input, 0).

    >>> import workbench as wb
    >>> wb.relu(wb.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    if inplace:
        return input.relu_()
    return _relu(input)


_Hardtanh = _piecewise("hardtanh", _pw.hardtanh)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val] (zero gradient outside).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.hardtanh(wb.tensor([-2.0, 0.5, 3.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    if inplace:
        return input._inplace("hardtanh_", lambda x: _Hardtanh.apply(x, min_val, max_val))
    return _Hardtanh.apply(input, min_val, max_val)


def relu6(input, inplace=False):
    """min(max(input, 0), 6).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.relu6(wb.tensor([-1.0, 7.0]))
    tensor([0., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


_LeakyRelu = _pointwise("leaky_relu", lambda xp, x, s: xp.where(x > 0, x, x * s),
                        lambda x, s: _like(x > 0, x) + _like(~(x > 0), x) * s,  # NaN takes s, as PyTorch's
                        lambda xp, x, s: _pw.run(xp, _pw.leaky_relu, (x,), s) if 0 <= s <= 1 else None,
                        lambda xp, g, x, s: _pw.run(xp, _pw.leaky_relu_grad, (g, x), s) if 0 <= s <= 1 else None)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.leaky_relu(wb.tensor([-1.0, 2.0]), 0.1)
    tensor([-0.1000,  2.0000])
    """
    if inplace:
        return input._inplace("leaky_relu_", lambda x: _LeakyRelu.apply(x, negative_slope))
    return _LeakyRelu.apply(input, negative_slope)


def _elu_fwd(xp, x, alpha, scale, input_scale, grad_input_scale=None):
    pos = x > 0  # where(pos, 0, x), not minimum(x, 0): that is 0. at x = -0., where PyTorch gives -0.
    return xp.where(pos, x * scale, xp.expm1(xp.where(pos, x.dtype.type(0), x) * input_scale) * (alpha * scale))


def _elu_deriv(x, alpha, scale, input_scale, grad_input_scale=None):
    # PyTorch differentiates celu with input_scale = 1 / float32(alpha); grad_input_scale carries that
    input_scale = input_scale if grad_input_scale is None else grad_input_scale
    pos = _like(x > 0, x)
    neg = (x.clamp(max=0) * input_scale).exp() * (alpha * scale * input_scale)
    return pos * scale + (1 - pos) * neg


_Elu = _pointwise("elu", _elu_fwd, _elu_deriv, lambda xp, x, a, s, i, gi=None: _pw.run(xp, _pw.elu, (x,), a, s, i),
                  lambda xp, g, x, a, s, i, gi=None: _pw.run(xp, _pw.elu_grad, (g, x), a, s, i if gi is None else gi))
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.elu(wb.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    if inplace:
        return input._inplace("elu_", lambda x: _Elu.apply(x, alpha, 1.0, 1.0))
    return _Elu.apply(input, alpha, 1.0, 1.0)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants.

    >>> import workbench as wb
    >>> wb.selu(wb.tensor([0.0, 1.0]))
    tensor([0.0000, 1.0507])
    """
    if inplace:
        return input._inplace("selu_", lambda x: _Elu.apply(x, _SELU_ALPHA, _SELU_SCALE, 1.0))
    return _Elu.apply(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    >>> import workbench as wb
    >>> wb.celu(wb.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha must not be 0")
    if inplace:
        return input._inplace("celu_", lambda x: _Elu.apply(x, alpha, 1.0, 1.0 / alpha, 1.0 / _f32(alpha)))
    return _Elu.apply(input, alpha, 1.0, 1.0 / alpha, 1.0 / _f32(alpha))


def _f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


class _RreluTrain(Function):
    _raw = True
    op_name = "rrelu"

    @staticmethod
    def forward(ctx, x, slopes):
        ctx.save_for_backward(slopes)
        return (x * slopes).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (slopes,) = ctx.saved_tensors
        return g * slopes, None


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: negative slopes drawn from U(lower, upper) in training, their mean otherwise.

    >>> import workbench as wb
    >>> wb.rrelu(wb.tensor([-3.0, 1.0]), 0.5, 0.5)
    tensor([-1.5000,  1.0000])
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    rs = _random.default_generator._stream(input.device)
    with _backend.on_device(input.device):
        u = rs.random(tuple(input.shape)) if input.device.type == "cpu" else rs.random_sample(tuple(input.shape))
    xp = _backend.xp_of(input._data)
    u = xp.asarray(u).astype(input._data.dtype)
    slopes = (lower + (upper - lower) * u)
    slopes = xp.where(input._data >= 0, 1.0, slopes).astype(input._data.dtype)
    fn = lambda x: _RreluTrain.apply(x, Tensor._make(slopes))  # noqa: E731
    return input._inplace("rrelu_", fn) if inplace else fn(input)


_Threshold = _piecewise("threshold", _pw.threshold)


def threshold(input, threshold, value, inplace=False):
    """x if x > threshold else value.

    >>> import workbench as wb
    >>> wb.threshold(wb.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    if inplace:
        return input._inplace("threshold_", lambda x: _Threshold.apply(x, threshold, value))
    return _Threshold.apply(input, threshold, value)


# --- smooth activations ----------------------------------------------------------------------------
def _sigm(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _silu_deriv(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


_Silu = _pointwise("silu", lambda xp, x: x * _sigm(xp, x), _silu_deriv, _on_x(_pw.silu), _on_gx(_pw.silu_grad))


def silu(input, inplace=False):
    """x * sigmoid(x) (a.k.a. swish).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.silu(wb.tensor([0.0]))
    tensor([0.])
    """
    if inplace:
        return input._inplace("silu_", _Silu.apply)
    return _Silu.apply(input)


def _softplus_raw(xp, x, beta, threshold):
    bx = x * beta
    # log1p(exp(bx)) computed without overflow: max(bx, 0) + log1p(exp(-|bx|))
    sp = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
    return xp.where(bx > threshold, x, sp)


def _softplus_deriv(x, beta, threshold):
    bx = x * beta
    big = _like(bx > threshold, x)
    return big + (1 - big) * bx.sigmoid()


_Softplus = _pointwise("softplus", _softplus_raw, _softplus_deriv, _on_x(_pw.softplus), _on_gx(_pw.softplus_grad))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear above threshold.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.softplus(wb.tensor([0.0]))
    tensor([0.6931])
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("softplus", input)
    return _Softplus.apply(input, beta, threshold)


def _mish_raw(xp, x):
    return x * xp.tanh(_softplus_raw(xp, x, 1.0, 20.0))


def _mish_deriv(x):
    t = _Softplus.apply(x, 1.0, 20.0).tanh()
    return t + x * x.sigmoid() * (1 - t * t)


_Mish = _pointwise("mish", _mish_raw, _mish_deriv, _on_x(_pw.mish), _on_gx(_pw.mish_grad))


def mish(input, inplace=False):
    """x * tanh(softplus(x)).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.mish(wb.tensor([0.0]))
    tensor([0.])
    """
    if inplace:
        return input._inplace("mish_", _Mish.apply)
    return _Mish.apply(input)


_Softsign = _pointwise("softsign", lambda xp, x: x / (1 + xp.abs(x)), lambda x: 1 / (1 + x.abs()) ** 2)


def softsign(input):
    """x / (1 + |x|).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.softsign(wb.tensor([1.0]))
    tensor([0.5000])
    """
    return _Softsign.apply(input)


# PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32, in every dtype; match it
_ONE_SIXTH_F32 = 0.1666666716337204
_Hardswish = _pointwise("hardswish", lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6, None,
                        _on_x(_pw.hardswish), _on_gx(_pw.hardswish_grad),
                        grad=lambda g, x: where(x <= -3, 0.0, where(x >= 3, g, g * (x / 3 + 0.5))))  # PyTorch's selects
_Hardsigmoid = _piecewise("hardsigmoid", _pw.hardsigmoid, _ONE_SIXTH_F32)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.hardswish(wb.tensor([-4.0, 4.0]))
    tensor([-0., 4.])
    """
    if inplace:
        return input._inplace("hardswish_", _Hardswish.apply)
    return _Hardswish.apply(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.hardsigmoid(wb.tensor([0.0]))
    tensor([0.5000])
    """
    if inplace:
        return input._inplace("hardsigmoid_", _Hardsigmoid.apply)
    return _Hardsigmoid.apply(input)


_Logsigmoid = _pointwise("log_sigmoid", lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
                         lambda x: (-x).sigmoid(), _on_x(_pw.logsigmoid), _on_gx(_pw.logsigmoid_grad))


def logsigmoid(input):
    """log(sigmoid(x)), computed stably.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.logsigmoid(wb.tensor([0.0]))
    tensor([-0.6931])
    """
    return _Logsigmoid.apply(input)


@composite("tanhshrink")
def tanhshrink(input):
    """x - tanh(x).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.tanhshrink(wb.tensor([0.0]))
    tensor([0.])
    """
    return input - input.tanh()


_Softshrink = _piecewise("softshrink", _pw.softshrink)
_Hardshrink = _piecewise("hardshrink", _pw.hardshrink)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.softshrink(wb.tensor([1.0, 0.2]))
    tensor([0.5000, 0.0000])
    """
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}.")
    return _Softshrink.apply(input, lambd)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0.

    >>> import workbench as wb
    >>> wb.hardshrink(wb.tensor([1.0, 0.2]))
    tensor([1., 0.])
    """
    return _Hardshrink.apply(input, lambd)


def sigmoid(input):
    """1 / (1 + exp(-x)).  >>> wb.nn.functional.sigmoid(wb.tensor([0.0]))  ->  tensor([0.5000])"""
    return input.sigmoid()


def tanh(input):
    """Hyperbolic tangent.  >>> wb.nn.functional.tanh(wb.tensor([0.0]))  ->  tensor([0.])"""
    return input.tanh()


@composite("glu")
def glu(input, dim=-1):
    """a * sigmoid(b) where a, b are the two halves of input along dim.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.glu(wb.tensor([1.0, 0.0]))
    tensor([0.5000])
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size {n}")
    if input.is_floating_point() and not input.is_complex():
        return Glu.apply(input, d)
    pre = (slice(None),) * d
    return input[pre + (slice(0, n // 2),)] * input[pre + (slice(n // 2, n),)].sigmoid()


class Glu(Function):
    """a * sigmoid(b) of x's two halves along dim as one primitive: a few in-place passes over the halves
    (the composite's slices, sigmoid and product cost twice that, and its gradient scattered each half
    into a zero array). Backward: g sigmoid(b) into the first half, g a s (1 - s) into the second."""

    _raw = True
    op_name = "glu"

    @staticmethod
    def forward(ctx, x, dim):
        xp = ctx.xp
        h = x.shape[dim] // 2
        pre = (slice(None),) * dim
        a, b = x[pre + (slice(0, h),)], x[pre + (slice(h, None),)]
        ctx.dim, ctx.h = dim, h
        if x.flags.c_contiguous and _fused.usable32(x):  # the halves as (outer, inner) views, one loop
            halves = x.reshape(math.prod(x.shape[:dim]), 2, -1)
            y, s = xp.empty(a.shape, x.dtype), xp.empty(a.shape, x.dtype)
            with _pw.quiet():
                _fused.glu(halves, y.reshape(halves.shape[0], -1), s.reshape(halves.shape[0], -1))
            ctx.save_for_backward(x, s)
            return y
        s = xp.negative(b)
        with _pw.quiet():  # e**-b overflowing to inf gives sigmoid 0, as it should
            xp.exp(s, out=s)
        s += 1
        xp.reciprocal(s, out=s)
        ctx.save_for_backward(x, s)
        return xp.multiply(a, s).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        pre = (slice(None),) * ctx.dim
        first, second = pre + (slice(0, ctx.h),), pre + (slice(ctx.h, None),)
        if STATE.enabled:  # create_graph: the differentiable form
            a, sb = x[first], x[second].sigmoid()
            ga = g * sb
            return cat([ga, ga * a * (1 - sb)], ctx.dim), None
        xp, gx = ctx.xp, ctx.xp.empty_like(x._data)
        gd, sd = g._data, s._data
        if x._data.flags.c_contiguous and _fused.usable32(x._data, gd, sd):  # one loop over the halves
            outer = math.prod(x.shape[:ctx.dim])
            halves = (outer, 2, -1)
            _fused.glu_grad(x._data.reshape(halves), gd.reshape(outer, -1), sd.reshape(outer, -1),
                            gx.reshape(halves), gx.dtype.type(1))
            return Tensor._make(gx), None
        ga, gb = gx[first], gx[second]
        xp.multiply(g._data, s._data, out=ga)
        xp.subtract(1, s._data, out=gb)
        gb *= x._data[first]
        gb *= ga
        return Tensor._make(gx), None


@composite("prelu")
def prelu(input, weight):
    """x if x > 0 else weight * x, weight per channel (dim 1) or shared.

    >>> import workbench as wb
    >>> wb.prelu(wb.tensor([-2.0, 1.0]), wb.tensor([0.25]))
    tensor([-0.5000,  1.0000])
    """
    if _AUTOCAST[0]:
        input, weight = _autocast_cast("prelu", input, weight)
    if weight.numel() != 1:
        c = input.shape[1] if input.ndim >= 2 else input.shape[0]
        if weight.numel() != c:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {weight.numel()} and channel size = {c}.")
        if input.ndim >= 2:
            weight = weight.reshape((c,) + (1,) * (input.ndim - 2))
    elif weight.ndim > 0:
        weight = weight.reshape(())
    pos = _like(input > 0, input)
    return input * pos + input * weight * (1 - pos)


# --- GELU (fused) ---------------------------------------------------------------------------------
_INV_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)
_C = math.sqrt(2.0 / math.pi)
_A = 0.044715


class Gelu(Function):
    _raw = True
    op_name = "gelu"

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(x)
        return _k.gelu(ctx.xp, x, approximate)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return GeluBackward.apply(g, x, ctx.approximate), None


class GeluBackward(Function):
    """g * gelu'(x); its own backward uses gelu''(x) in Tensor ops."""

    _raw = True
    op_name = "gelu_backward"

    @staticmethod
    def forward(ctx, g, x, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(g, x)
        return _k.gelu_backward(ctx.xp, g, x, approximate)

    @staticmethod
    def backward(ctx, gg):
        g, x = ctx.saved_tensors
        nig = ctx.needs_input_grad
        dg = GeluBackward.apply(gg, x, ctx.approximate) if nig[0] else None
        dx = gg * g * _gelu2(x, ctx.approximate) if nig[1] else None
        return dg, dx, None


def _gelu2(x, approximate):
    """gelu''(x) in Tensor ops."""
    if approximate == "tanh":
        u1 = _C * (1 + 3 * _A * x * x)
        t = (_C * (x + _A * x * x * x)).tanh()
        return (1 - t * t) * (u1 - x * t * u1 * u1 + 3 * _C * _A * x * x)
    return (x * x * -0.5).exp() * _INV_SQRT_2PI * (2 - x * x)


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF; approximate='tanh' uses the tanh formula.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.gelu(wb.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
    if not input.is_floating_point():
        raise RuntimeError(f"gelu: expected a floating-point input, got {input.dtype}")
    return Gelu.apply(input, approximate)


# --- softmax family (fused) ------------------------------------------------------------------------
def _to_last(xp, x, dim):
    return x if dim == x.ndim - 1 else xp.ascontiguousarray(xp.moveaxis(x, dim, -1))


def _from_last(xp, y, dim):
    return y if dim == y.ndim - 1 else xp.moveaxis(y, -1, dim)


class Softmax(Function):
    _raw = True
    op_name = "softmax"

    @staticmethod
    def forward(ctx, x, dim, log):
        xp = ctx.xp
        if x.ndim == 0:
            y = _k.softmax(xp, x.reshape(1), log).reshape(())
        else:
            y = _from_last(xp, _k.softmax(xp, _to_last(xp, x, dim), log), dim)
        ctx.dim, ctx.log = dim, log
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return SoftmaxBackward.apply(y, g, ctx.dim, ctx.log), None, None


class LogSoftmax(Softmax):
    """log_softmax: Softmax's primitive with log=True, under its own node name."""

    op_name = "log_softmax"


class SoftmaxBackward(Function):
    """dx of softmax (log=False: y*(g - sum(g*y))) or log_softmax (g - exp(y)*sum(g)) from output y."""

    _raw = True
    op_name = "softmax_backward"

    @staticmethod
    def forward(ctx, y, g, dim, log):
        xp = ctx.xp
        ctx.dim, ctx.log = dim, log
        ctx.save_for_backward(y, g)
        if y.ndim == 0:
            return _k.softmax_backward(xp, y.reshape(1), g.reshape(1), log).reshape(())
        return _from_last(xp, _k.softmax_backward(xp, _to_last(xp, y, dim), _to_last(xp, g, dim), log), dim)

    @staticmethod
    def backward(ctx, gg):
        y, g = ctx.saved_tensors
        d = ctx.dim if y.ndim else None
        nig = ctx.needs_input_grad
        dy = dg = None
        if ctx.log:
            p = y.exp()
            if nig[1]:
                dg = gg - (gg * p).sum(d, keepdim=True) if d is not None else gg - gg * p
            if nig[0]:
                dy = -gg * p * (g.sum(d, keepdim=True) if d is not None else g)
        else:
            if nig[1]:
                dg = SoftmaxBackward.apply(y, gg, ctx.dim, False)
            if nig[0]:
                s = (g * y).sum(d, keepdim=True) if d is not None else g * y
                t = (gg * y).sum(d, keepdim=True) if d is not None else gg * y
                dy = gg * (g - s) - g * t
        return dy, dg, None, None


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax(name, input, dim, dtype, log, neg=False):
    if isinstance(dim, _dt.dtype) and dtype is None:  # torch.softmax(x, dim, dtype) positional form
        dim, dtype = None, dim
    if dim is None:
        dim = _softmax_dim(name, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    elif not input.is_floating_point():
        raise dtype_error(f"{'softmax' if neg else name}_lastdim_kernel_impl", input._data.dtype)  # softmin is softmax(-x)
    n = max(input.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    if neg:
        input = -input
    return (LogSoftmax if log else Softmax).apply(input, dim % n if input.ndim else 0, log)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim.

    >>> import workbench as wb
    >>> wb.softmax(wb.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("softmax", input)
    if isinstance(_stacklevel, _dt.dtype):
        dtype = _stacklevel
    return _softmax("softmax", input, dim, dtype, False)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed stably.

    >>> import workbench as wb
    >>> wb.log_softmax(wb.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("log_softmax", input)
    if isinstance(_stacklevel, _dt.dtype):
        dtype = _stacklevel
    return _softmax("log_softmax", input, dim, dtype, True)


@composite("softmin")
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.softmin(wb.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("softmin", input)
    if isinstance(_stacklevel, _dt.dtype):
        dtype = _stacklevel
    return _softmax("softmin", input, dim, dtype, False, neg=True)


@composite("gumbel_softmax")
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution; hard=True returns one-hot samples with soft gradients.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.gumbel_softmax(wb.zeros(2, 3), hard=True).sum(-1)
    tensor([1., 1.])
    """
    xp = _backend.xp_of(logits._data)
    u = _uniform(logits, tuple(logits.shape))
    # -log(Exp(1)) samples; 1 - u lies in (0, 1]
    gumbels = Tensor._make((-xp.log(-xp.log1p(-u))).astype(logits._data.dtype))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = dim % logits.ndim
    idx = xp.expand_dims(y_soft._data.argmax(axis=d), d)
    onehot = (xp.arange(logits.shape[d]).reshape((-1,) + (1,) * (logits.ndim - 1 - d)) == idx)
    y_hard = Tensor._make(onehot.astype(logits._data.dtype))
    return y_hard - y_soft.detach() + y_soft


@composite("normalize")
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps) along dim.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.normalize(wb.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("normalize", input)
    if p == 2:
        norm = (input * input).sum(dim, keepdim=True).sqrt()
    elif p == 1:
        norm = input.abs().sum(dim, keepdim=True)
    elif p == math.inf:
        norm = input.abs().amax(dim, keepdim=True)
    else:
        norm = (input.abs() ** p).sum(dim, keepdim=True) ** (1.0 / p)
    y = input / norm.clamp(min=eps).expand_as(input)
    return _out(y, out)  # PyTorch's torch.div(input, denom, out=out)


# --- dropout ---------------------------------------------------------------------------------------
def _check_p(name, p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{name} probability has to be between 0 and 1, but got {p}")


def _mask_mul(name, input, mask_shape, p, inplace):
    """input * bernoulli(1 - p) mask / (1 - p), the mask broadcast from mask_shape."""
    if p == 1.0:
        m = array_step(lambda x: x.dtype.type(0) * _backend.xp_of(x).zeros(mask_shape, x.dtype), input)
    else:  # drawn inside one primitive, so a compiled replay draws again
        m = array_step(lambda x: ((_uniform_array(x, mask_shape) >= p) / (1.0 - p)).astype(x.dtype), input)
    if inplace:
        return input._inplace(name + "_", lambda x: x * m)
    return input * m


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p (training only), scaling the rest by 1/(1-p).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.dropout(wb.ones(4), p=0.0)
    tensor([1., 1., 1., 1.])
    """
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    return _mask_mul("dropout", input, tuple(input.shape), p, inplace)


def _feature_dropout(name, input, p, training, inplace, nd):
    _check_p(name, p)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but received a {input.ndim}D input. "
                           f"{name} zeroes whole channels of (N, C, *spatial) inputs.")
    if not training or p == 0.0:
        return input
    batched = input.ndim == nd + 2
    lead = tuple(input.shape[:2]) if batched else tuple(input.shape[:1])
    return _mask_mul(name, input, lead + (1,) * nd, p, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) inputs with probability p.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.dropout1d(wb.ones(1, 2, 3), training=False).shape
    workbench.Size([1, 2, 3])
    """
    return _feature_dropout("dropout1d", input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) inputs with probability p.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.dropout2d(wb.ones(1, 2, 3, 3), training=False).shape
    workbench.Size([1, 2, 3, 3])
    """
    _check_p("dropout2d", p)
    if input.ndim not in (3, 4):  # PyTorch warns and proceeds, masking per (dim 0, dim 1) entry
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", UserWarning, stacklevel=2)
    if input.ndim == 3:  # PyTorch's historical reading of 3-D input: (N, C, L), not an unbatched (C, H, W)
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", UserWarning, stacklevel=2)
    if input.ndim < 2:
        raise RuntimeError(f"dropout2d: Feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{list(input.shape)}")
    if not training or p == 0.0:
        return input
    return _mask_mul("dropout2d", input, tuple(input.shape[:2]) + (1,) * (input.ndim - 2), p, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) inputs with probability p.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.dropout3d(wb.ones(1, 2, 2, 2, 2), training=False).shape
    workbench.Size([1, 2, 2, 2, 2])
    """
    _check_p("dropout3d", p)
    if input.ndim not in (4, 5):  # PyTorch warns and proceeds, reading any non-5-D input as unbatched
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", UserWarning, stacklevel=2)
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == 5 else 1
    return _mask_mul("dropout3d", input, tuple(input.shape[:lead]) + (1,) * (input.ndim - lead), p, inplace)


def _alpha_dropout(name, input, p, training, inplace, feature):
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)

    def masks(x):
        keep = (_uniform_array(x, shape) >= p).astype(x.dtype)
        # kept values scaled by a, dropped ones set to the SELU saturation value, so mean/variance are kept
        return keep * x.dtype.type(a), ((keep - 1) * (alpha * a) + alpha * a * p).astype(x.dtype)

    mult, shift = array_step(masks, input)
    fn = lambda x: x * mult + shift  # noqa: E731
    return input._inplace(name + "_", fn) if inplace else fn(input)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance.

    >>> import workbench as wb
    >>> wb.alpha_dropout(wb.ones(3), 0.5, False)
    tensor([1., 1., 1.])
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels.

    >>> import workbench as wb
    >>> wb.feature_alpha_dropout(wb.ones(1, 2, 3), 0.5, False).shape
    workbench.Size([1, 2, 3])
    """
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


relu_ = _inplace(relu, "relu_", "[0., 2.]")
hardtanh_ = _inplace(hardtanh, "hardtanh_", "[-1., 1.]")
leaky_relu_ = _inplace(leaky_relu, "leaky_relu_", "[-0.0100, 2.0000]")
elu_ = _inplace(elu, "elu_", "[-0.6321, 2.0000]")
selu_ = _inplace(selu, "selu_", "[-1.1113, 2.1014]")
celu_ = _inplace(celu, "celu_", "[-0.6321, 2.0000]")
rrelu_ = _inplace(rrelu, "rrelu_", "[-0.2292, 2.0000]")
threshold_ = _inplace(threshold, "threshold_", "[0., 2.]", ", 1.0, 0.0")

# top-level workbench.* names (PyTorch's torch.* has these with compatible signatures)
__all__ = ["selu", "celu", "rrelu", "threshold", "hardshrink", "prelu", "softmax", "log_softmax", "dropout",
           "alpha_dropout", "feature_alpha_dropout", "selu_", "celu_", "rrelu_", "threshold_"]
METHODS = {"softmax": lambda self, dim=None, dtype=None: softmax(self, dim, dtype=dtype),
           "log_softmax": lambda self, dim=None, dtype=None: log_softmax(self, dim, dtype=dtype),
           "hardshrink": hardshrink, "prelu": prelu}
