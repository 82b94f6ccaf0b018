"""float16 and bfloat16 through softmax, the normalizations and broadcast gradients: PyTorch computes these in
float32 and rounds once; computing them in the 16-bit type itself stalls the sums (a bfloat16 row sum of
500 terms, a bias gradient over 4000 rows). Values and gradients against PyTorch and against a float64
reference from the same rounded inputs."""
import warnings

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((64, 500)) * 0.5 + 0.2).astype(np.float32)
G = RNG.standard_normal((64, 500)).astype(np.float32)
W = (RNG.standard_normal(500) * 0.3 + 1).astype(np.float32)
B = RNG.standard_normal(500).astype(np.float32)

CASES = {
    "softmax": lambda F, a, w, b: F.softmax(a, 1),
    "log_softmax": lambda F, a, w, b: F.log_softmax(a, 1),
    "layer_norm": lambda F, a, w, b: F.layer_norm(a, (500,), w, b),
    "group_norm": lambda F, a, w, b: F.group_norm(a.reshape(64, 20, 25), 4, w[:20], b[:20]).reshape(64, 500),
    "batch_norm": lambda F, a, w, b: F.batch_norm(a, None, None, w, b, training=True),
    "instance_norm": lambda F, a, w, b: F.instance_norm(a.reshape(64, 20, 25)).reshape(64, 500),
}


def _run(lib, dtype, f, compute=None):
    compute = compute or dtype
    ts = [lib.tensor(v).to(getattr(lib, dtype)).to(getattr(lib, compute)).requires_grad_(True) for v in (X, W, B)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = f(lib.nn.functional, *ts)
        y.backward(lib.tensor(G).to(getattr(lib, dtype)).to(getattr(lib, compute)))
    assert str(y.dtype).endswith(compute)
    return [y.detach().double().numpy()] + [t.grad.double().numpy() for t in ts if t.grad is not None]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_half_precision_as_accurate_as_pytorch(name, dtype):
    ref = _run(torch, dtype, CASES[name], "float64")
    got, theirs = _run(wb, dtype, CASES[name]), _run(torch, dtype, CASES[name])
    assert len(got) == len(theirs)
    eps = 2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -11
    for g, t, r in zip(got, theirs, ref):
        scale = np.abs(r).max()
        err, torch_err = np.abs(g - r).max() / scale, np.abs(t - r).max() / scale
        assert err <= 2 * torch_err + eps, (err, torch_err)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_broadcast_gradient_sums_in_float32(dtype):
    # the gradient of a bias broadcast over 4000 rows: sum_to_size over the rows
    out = []
    for lib in (torch, wb):
        bias = lib.zeros(3, dtype=getattr(lib, dtype), requires_grad=True)
        x = lib.full((4000, 3), 0.6, dtype=getattr(lib, dtype))
        ((x + bias) * 1).backward(lib.ones(4000, 3, dtype=getattr(lib, dtype)))
        out.append(bias.grad.float().numpy())
    np.testing.assert_array_equal(out[1], out[0])
    assert abs(out[1][0] - 4000) < 20


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linear_bias_gradient_sums_in_float32(dtype):
    out = []
    for lib in (torch, wb):
        layer = lib.nn.Linear(3, 2).to(getattr(lib, dtype))
        layer(lib.full((4000, 3), 0.6, dtype=getattr(lib, dtype))).sum().backward()
        out.append(layer.bias.grad.float().numpy())
    np.testing.assert_array_equal(out[1], out[0])  # 4000 each (a 16-bit running sum stalls at 256 / 2048)


def _ulps(got, ref, dtype):
    """|got - ref| in units in the last place of the 16-bit ref (its float32 spacing, scaled)."""
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64) * (2.0 ** (23 - (7 if dtype == "bfloat16"
                                                                                           else 10)))
    return np.abs(got - ref) / np.maximum(spacing, np.float64(2.0 ** -24))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("params", ["same", "float32"])
def test_group_norm_16bit_affine_rounds_once(dtype, params):
    # PyTorch computes x * (rstd * w) + (b - mean * rstd * w) in float32 and rounds once: rounding the normalized
    # value, then its product with w, then the sum with b, is off by hundreds of units where y * w cancels b
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((4, 6, 5, 7)) * 3 + 1, rng.standard_normal(6), rng.standard_normal(6)
    res = {}
    for lib in (torch, wb):
        d = getattr(lib, dtype)
        pd = d if params == "same" else lib.float32
        t = [lib.tensor(x, dtype=lib.float32).to(d)] + [lib.tensor(v, dtype=lib.float32).to(pd) for v in (w, b)]
        y = lib.nn.functional.group_norm(t[0], 3, t[1], t[2])
        assert str(y.dtype).endswith(dtype)
        res[lib] = y.double().numpy()
    xr = torch.tensor(x, dtype=torch.float32).to(getattr(torch, dtype)).double()
    wr = torch.tensor(w, dtype=torch.float32).to(getattr(torch, dtype) if params == "same" else torch.float32).double()
    br = torch.tensor(b, dtype=torch.float32).to(getattr(torch, dtype) if params == "same" else torch.float32).double()
    ref = torch.nn.functional.group_norm(xr, 3, wr, br).to(getattr(torch, dtype)).double().numpy()  # rounded once
    assert _ulps(res[torch], ref, dtype).max() <= 1  # PyTorch's float32 arithmetic, then one rounding
    assert _ulps(res[wb], ref, dtype).max() <= 1


@pytest.mark.parametrize("dts", [("float32", "float64", "float64"), ("float64", "float32", "float32"),
                                 ("float16", "float32", "float16"), ("float32", "float32", "float64"),
                                 ("float16", "bfloat16", "bfloat16"), ("float16", None, "float32")])
def test_group_norm_parameter_dtypes_as_pytorch(dts):
    xd, wd, bd = dts
    out = []
    for lib in (torch, wb):
        x = lib.ones(2, 4, 3, dtype=getattr(lib, xd))
        w = None if wd is None else lib.ones(4, dtype=getattr(lib, wd))
        b = None if bd is None else lib.zeros(4, dtype=getattr(lib, bd))
        try:
            out.append(str(lib.nn.functional.group_norm(x, 2, w, b).dtype).split(".")[-1])
        except RuntimeError as e:
            out.append(str(e).split(":")[-1].strip()[:20] if "mixed" in str(e) else "RuntimeError")
    assert out[1] == out[0]
