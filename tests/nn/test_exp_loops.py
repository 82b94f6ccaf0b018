"""The exp-based one-pass loops of ``_backend/fused.py`` (sigmoid, silu, exact and tanh GELU, glu, softplus,
logsigmoid and mish with their gradients (``_log1p``), softmax, log_softmax, softmin on float32 arrays of at least ``fused.MIN_SIZE`` elements) and the NumPy forms they
replace: both against float64 references and against PyTorch, with tiny, denormal, huge and non-finite
inputs. Each test runs with the loops on and off (off: the path of an install without Numba)."""
import numpy as np
import pytest
import torch
from scipy.special import expit, ndtr

import workbench as wb
from workbench._backend import fused

N = 2 * fused.MIN_SIZE + 1000
SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.2e-38, -1.2e-38, 1e-30, -1e-30, 0.5, -0.5, 3.0, -3.0, 5.0,
           -5.0, 9.0, -9.0, 13.0, -13.0, 20.0, -20.0, 87.0, -87.0, 88.7, -88.7, 89.0, -89.0, 100.0, -100.0, 103.9,
           -103.9, 110.0, -110.0, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan]
HAVE_NUMBA = fused._numba() is not None


def _x(scale=4.0, n=N):
    x = np.random.default_rng(0).standard_normal(n) * scale
    x[:len(SPECIAL)] = SPECIAL
    return x.astype(np.float32)


def _g(shape):
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def _run(lib, f, x, g):
    xt = lib.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        y = f(lib.nn.functional, xt)
        y.backward(lib.tensor(g))
    return y.detach().numpy(), xt.grad.numpy()


def _close(got, ref, rtol, atol, where=None):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if where is not None:
        got, ref = got[where], ref[where]
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


def _phi_pdf(x):
    return ndtr(x), np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


# name: (F call, exact y(x64), exact dy/dx(x64))
ACTS = {
    "sigmoid": (lambda F, x: F.sigmoid(x), expit, lambda x: expit(x) * expit(-x)),
    "silu": (lambda F, x: F.silu(x), lambda x: x * expit(x), lambda x: expit(x) * (1 + x * expit(-x))),
    "gelu": (lambda F, x: F.gelu(x), lambda x: x * ndtr(x), lambda x: ndtr(x) + x * _phi_pdf(x)[1]),
    "softplus": (lambda F, x: F.softplus(x), lambda x: np.logaddexp(0, x), lambda x: np.where(x > 20, 1.0, expit(x))),
    "logsigmoid": (lambda F, x: F.logsigmoid(x), lambda x: -np.logaddexp(0, -x), lambda x: expit(-x)),
    "mish": (lambda F, x: F.mish(x), lambda x: x * np.tanh(_softplus(x)),
             lambda x: np.tanh(_softplus(x)) + x * expit(x) * (1 - np.tanh(_softplus(x)) ** 2)),
    "gelu_tanh": (lambda F, x: F.gelu(x, approximate="tanh"), lambda x: x * expit(2 * _gelu_u(x)),
                  lambda x: expit(2 * _gelu_u(x)) + x * 2 * expit(2 * _gelu_u(x)) * expit(-2 * _gelu_u(x))
                  * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x * x)),
}


def _softplus(x):  # PyTorch's: x itself above the threshold 20
    return np.where(x > 20, x, np.logaddexp(0, x))


def _gelu_u(x):  # the tanh GELU's argument: 0.5 (1 + tanh u) = sigmoid(2u)
    return np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_against_float64_and_pytorch(name, loops):
    f, exact, dexact = ACTS[name]
    x, g = _x(), _g(N)
    x64 = x.astype(np.float64)
    y, dx = _run(wb, f, x, g)
    yt, dxt = _run(torch, f, x, g)
    with np.errstate(all="ignore"):
        ref, dref = exact(x64), dexact(x64) * g
    finite = np.isfinite(x) & (np.abs(x) < 1e38)  # x (1 - ...) and the like overflow in float32 near the max
    assert y.dtype == np.float32 and dx.dtype == np.float32
    # the erf of the GELU (A&S 7.1.26, as PyTorch's) is good to 1.5e-7 absolute: ~1e-6 on y at |x| ~ 5
    # the tanh GELU's NumPy form is PyTorch's formula, whose 1 + tanh u and 1 - tanh^2 u cancel below 0 (~4e-6
    # absolute on dx, where PyTorch's tanh has saturated to give 0); the loop's sigmoid(2u) form does not
    cancels = name == "gelu_tanh" and not loops
    _close(y, ref, 2e-6, 1e-5 if cancels else 1e-6, finite)
    _close(dx, dref, 2e-6, 1e-5 if cancels else 2e-6, finite)
    _close(y, yt, 4e-6, 1e-5 if cancels else 3e-6, finite)
    _close(dx, dxt, 4e-6, 1e-5 if cancels else 3e-6, finite)
    assert np.array_equal(np.isnan(y[~finite]), np.isnan(ref[~finite])) or name == "gelu"
    if name != "gelu":  # PyTorch's GELU gives NaN at +inf; the formula's limit is inf
        np.testing.assert_array_equal(y[~finite], yt[~finite])
    tiny = np.abs(x64) < 1e-29  # denormal results: within one step of the denormal grid (2**-149)
    assert (np.abs(y[tiny] - ref[tiny]) <= 2.0 ** -149 + 1e-6 * np.abs(ref[tiny])).all()


def test_gelu_keeps_the_negative_tail(loops):
    """Below 0 Phi(x) is the half-erfc itself (no 1 - (1 - h)): gelu(-9) ~ -1e-18 keeps its
    leading digits (A&S 7.1.26's relative error grows in the tail: 1.5 % at -9, 4 % at -13)."""
    x = np.tile(np.float32([-6.0, -9.0, -12.0, -13.0]), N // 4)
    y = wb.nn.functional.gelu(wb.tensor(x)).numpy()
    np.testing.assert_allclose(y[:4], x[:4] * ndtr(x[:4].astype(np.float64)), rtol=5e-2)


def test_glu_against_pytorch(loops):
    x = _x(3.0, 8 * 1024 * 16).reshape(8, 1024, 16)  # every dim even; halves of 64 K elements
    for dim in (1, -1, 0):
        g = _g(tuple(torch.nn.functional.glu(torch.tensor(x), dim).shape))
        y, dx = _run(wb, lambda F, t: F.glu(t, dim), x, g)
        yt, dxt = _run(torch, lambda F, t: F.glu(t, dim), x, g)
        fin = np.isfinite(yt) & np.isfinite(y)
        np.testing.assert_array_equal(np.isnan(y), np.isnan(yt))
        _close(y, yt, 2e-6, 1e-6, fin)
        fin = np.isfinite(dxt) & np.isfinite(dx)
        _close(dx, dxt, 2e-5, 1e-6, fin)  # g a s (1 - s): a few ulps apart from PyTorch's order of products


def _rows():
    x = (np.random.default_rng(2).standard_normal((64, 2048)) * 3).astype(np.float32)
    x[0, 7] = np.nan
    x[1] = -np.inf
    x[2, :5] = [np.inf, 1, 2, 3, 4]
    x[3] = -1e4
    x[3, 9] = 10.0  # every other entry's exp underflows: exact zeros (and log_softmax -1e4 - 10)
    x[4] = np.linspace(-100, 0, 2048)  # results down to denormals
    x[5, :len(SPECIAL) - 5] = SPECIAL[:-5]  # the finite ones below float32 overflow of x - lse
    return x


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_family_against_float64_and_pytorch(name, loops):
    x = _rows()
    g = _g(x.shape)
    f = lambda F, t: getattr(F, name)(t, dim=-1)  # noqa: E731
    y, dx = _run(wb, f, x, g)
    yt, dxt = _run(torch, f, x, g)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(yt))
    z = x * np.float32(-1 if name == "softmin" else 1)
    with np.errstate(all="ignore"):
        d = (z - z.max(-1, keepdims=True)).astype(np.float64)  # x - max rounds in float32 in every library
        lsd = d - np.log(np.exp(d).sum(-1, keepdims=True))
        ref = lsd if name == "log_softmax" else np.exp(lsd)
        g64 = g.astype(np.float64)
        if name == "log_softmax":
            dref = g64 - np.exp(ref) * g64.sum(-1, keepdims=True)
        else:
            dref = ref * (g64 - (g64 * ref).sum(-1, keepdims=True)) * (-1 if name == "softmin" else 1)
    ok = np.isfinite(ref).all(-1)  # the rows with NaN or inf are NaN in both (checked above)
    atol = 2e-6 if name == "log_softmax" else 1e-7
    _close(y[ok], ref[ok], 2e-6, atol)
    _close(dx[ok], dref[ok], 2e-5, 2e-6)
    _close(y[ok], yt[ok], 2e-6, atol)
    _close(dx[ok], dxt[ok], 2e-5, 2e-6)
    if name != "log_softmax":  # tiny probabilities keep their digits (relative), denormals included
        normal = ok[:, None] & (ref > 1e-37)
        _close(y[normal], ref[normal], 2e-6, 0)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_exp_polynomial_within_two_ulp_and_zero_below_the_normal_range():
    x = np.concatenate([np.linspace(-110, 90, 1 << 17, dtype=np.float32), _x(30.0)])
    out = np.empty_like(x)
    fused._compile_helpers()
    run = fused._numba().njit(fastmath=fused._fma_loop.fastmath)(_exp_loop)
    run(x, out)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    normal = (ref >= np.finfo(np.float32).tiny) & (ref <= np.finfo(np.float32).max)
    ulp = np.spacing(ref[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(out[normal] - ref[normal]) <= 2 * ulp).all()
    # where e**x is below float32's normal range the loops get 0 (a denormal would cost a microcode assist per
    # lane, and PyTorch's sigmoid, softmax and GELU give 0 there)
    sub = (ref < np.finfo(np.float32).tiny) & ~np.isnan(ref)
    assert sub.sum() > 1000 and (out[sub] == 0).all()
    assert (out[ref > np.finfo(np.float32).max] == np.inf).all()
    special = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0])
    o = np.empty_like(special)
    run(special, o)
    np.testing.assert_array_equal(o, [np.nan, np.inf, 0.0, 1.0, 1.0])


def _exp_loop(x, out):
    for i in range(x.size):
        out[i] = fused._exp(x[i])


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_glu_gradient_loop_equals_the_numpy_form_bitwise():
    # on the same saved sigmoid: g s and (1 - s) a (g s), in the NumPy form's order
    x = _x(3.0, 8 * 1024 * 16).reshape(8, 2, -1)
    g, s = _g((8, x.shape[2])), 1 / (1 + np.exp(-x[:, 1].astype(np.float64))).astype(np.float32)
    dx = np.empty_like(x)
    with np.errstate(all="ignore"):
        fused.glu_grad(x, g, s, dx, np.float32(1))
        ga = g * s
        gb = (1 - s) * x[:, 0] * ga
    np.testing.assert_array_equal(dx[:, 0], ga)
    np.testing.assert_array_equal(dx[:, 1], gb)


def test_log1p_polynomial_within_two_ulp():
    """fused._log1p (NumPy's float32 log1p is a scalar call without AVX-512), as softplus's and logsigmoid's
    log(1 + e**-|x|): within 2 ulp of float64 wherever e**-|x| is a normal float32; 0 at +-inf, NaN at NaN."""
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    x = np.concatenate([np.float32([0.0, -0.0, 1e-30, 6e-8, 1.0, -2.0, 17.0, 87.0, np.inf, -np.inf, np.nan]),
                        np.random.default_rng(0).uniform(-87.3, 87.3, 1 << 18).astype(np.float32)])
    out = np.empty_like(x)
    fused.softplus_tail(x, out)
    ref = np.log1p(np.exp(-np.abs(x.astype(np.float64))))
    finite = np.isfinite(x)
    ulp = np.abs(out[finite] - ref[finite]) / np.spacing(ref[finite].astype(np.float32))
    assert ulp.max() <= 2.0
    assert out[0] == out[1] == np.float32(np.log(2.0))
    assert out[8] == out[9] == 0.0 and np.isnan(out[10])
