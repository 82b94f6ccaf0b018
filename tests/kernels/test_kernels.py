"""The fused kernels: CUDA sources compile with nvcc; NumPy references agree with PyTorch; on a GPU the
kernels agree with the references; on the fake cupy the dispatch runs the references, and the CPU emulator runs
the elementwise kernels (gelu, adam) against them."""
import shutil
import subprocess

import numpy as np
import pytest
import torch

from workbench._backend import kernels as K
from workbench.testing import fake_cupy

SOURCES = K.sources()


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.rsplit("/", 1)[-1])
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
def test_cuda_source_compiles_for_sm90(src, kind, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed on this machine")
    out = tmp_path / f"k.{kind}"
    r = subprocess.run([nvcc, "-arch=sm_90", f"-{kind}", "-std=c++17", f"-I{K.kernel_dir()}", "-o", str(out), src],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


XPS = [np, fake_cupy.module()]


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) or isinstance(a, fake_cupy.ndarray) else a


def _dev(xp, a):
    return xp.asarray(a) if xp is not np else a


@pytest.mark.parametrize("xp", XPS, ids=["numpy", "fake_cupy"])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_reference_matches_torch(xp, log):
    x = _rand(5, 7)
    g = _rand(5, 7, seed=1)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.log_softmax(tx, -1) if log else torch.softmax(tx, -1)
    ty.backward(torch.tensor(g))
    y = K.softmax(xp, _dev(xp, x), log=log)
    np.testing.assert_allclose(_host(y), ty.detach().numpy(), rtol=1e-12)
    dx = K.softmax_backward(xp, y, _dev(xp, g), log=log)
    np.testing.assert_allclose(_host(dx), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("xp", XPS, ids=["numpy", "fake_cupy"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_reference_matches_torch(xp, weighted, smoothing):
    x = _rand(6, 5)
    t = np.array([0, 4, 2, -100, 1, 4])
    w = np.abs(_rand(5, seed=3)) + 0.1 if weighted else None
    tx = torch.tensor(x, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), weight=None if w is None else torch.tensor(w),
                                           reduction="none", label_smoothing=smoothing)
    gr = _rand(6, seed=2)
    tl.backward(torch.tensor(gr))
    loss, lse = K.cross_entropy(xp, _dev(xp, x), _dev(xp, t), None if w is None else _dev(xp, w), -100, smoothing)
    np.testing.assert_allclose(_host(loss), tl.detach().numpy(), rtol=1e-10, atol=1e-12)
    dx = K.cross_entropy_backward(xp, _dev(xp, x), _dev(xp, t), lse, _dev(xp, gr),
                                  None if w is None else _dev(xp, w), -100, smoothing)
    np.testing.assert_allclose(_host(dx), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("xp", XPS, ids=["numpy", "fake_cupy"])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_reference_matches_torch(xp, affine):
    x = _rand(4, 3, 8)
    w, b = (_rand(8, seed=4), _rand(8, seed=5)) if affine else (None, None)
    g = _rand(4, 3, 8, seed=6)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True) if affine else None
    tb = torch.tensor(b, requires_grad=True) if affine else None
    ty = torch.nn.functional.layer_norm(tx, (8,), tw, tb, 1e-5)
    ty.backward(torch.tensor(g))
    y, mean, rstd = K.layer_norm(xp, _dev(xp, x), None if w is None else _dev(xp, w),
                                 None if b is None else _dev(xp, b), 1e-5)
    np.testing.assert_allclose(_host(y), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    dx, dw, db = K.layer_norm_backward(xp, _dev(xp, g), _dev(xp, x), mean, rstd, None if w is None else _dev(xp, w),
                                       need_b=affine)
    np.testing.assert_allclose(_host(dx), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    if affine:
        np.testing.assert_allclose(_host(dw), tw.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(_host(db), tb.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("xp", XPS, ids=["numpy", "fake_cupy"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_reference_matches_torch(xp, approximate):
    x = _rand(50) * 3
    g = _rand(50, seed=1)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(_host(K.gelu(xp, _dev(xp, x), approximate)), ty.detach().numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(_host(K.gelu_backward(xp, _dev(xp, g), _dev(xp, x), approximate)), tx.grad.numpy(),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("xp", XPS, ids=["numpy", "fake_cupy"])
@pytest.mark.parametrize("decoupled,amsgrad,maximize,wd", [(False, False, False, 0.0), (False, True, False, 0.1),
                                                           (True, False, True, 0.01), (True, True, False, 0.05)])
def test_adam_step_reference_matches_torch(xp, decoupled, amsgrad, maximize, wd):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    ps = [_rand(*s, seed=i) for i, s in enumerate(shapes)]
    tps = [torch.tensor(p, requires_grad=True) for p in ps]
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = cls(tps, lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd, amsgrad=amsgrad, maximize=maximize)
    params = [_dev(xp, p.copy()) for p in ps]
    m = [xp.zeros(p.shape) for p in params]
    v = [xp.zeros(p.shape) for p in params]
    vmax = [xp.zeros(p.shape) for p in params]
    for step in range(1, 4):
        gs = [_rand(*s, seed=10 * step + i) for i, s in enumerate(shapes)]
        for tp, g in zip(tps, gs):
            tp.grad = torch.tensor(g)
        opt.step()
        K.adam_step(xp, params, [_dev(xp, g) for g in gs], m, v, vmax, lr=0.01, beta1=0.8, beta2=0.95, eps=1e-6,
                    weight_decay=wd, step=step, decoupled=decoupled, amsgrad=amsgrad, maximize=maximize)
        for p, tp in zip(params, tps):
            np.testing.assert_allclose(_host(p), tp.detach().numpy(), rtol=1e-12, atol=1e-14)


# --- on a real GPU: the CUDA kernels against the references --------------------------------------------
@pytest.mark.gpu
def test_kernels_match_references_on_gpu():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(_rand(64, 1000).astype(np.float32))
    g = cp.asarray(_rand(64, 1000, seed=1).astype(np.float32))
    xh, gh = cp.asnumpy(x), cp.asnumpy(g)
    for log in (False, True):
        y = K.softmax(cp, x, log)
        np.testing.assert_allclose(cp.asnumpy(y), K.softmax(np, xh, log), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cp.asnumpy(K.softmax_backward(cp, y, g, log)),
                                   K.softmax_backward(np, cp.asnumpy(y), gh, log), rtol=1e-4, atol=1e-5)
    t = cp.asarray(np.random.default_rng(0).integers(0, 1000, 64))
    t[3] = -100
    loss, lse = K.cross_entropy(cp, x, t, None, -100, 0.1)
    rl, rlse = K.cross_entropy(np, xh, cp.asnumpy(t), None, -100, 0.1)
    np.testing.assert_allclose(cp.asnumpy(loss), rl, rtol=1e-5, atol=1e-5)
    gr = cp.ones(64, dtype=cp.float32)
    np.testing.assert_allclose(cp.asnumpy(K.cross_entropy_backward(cp, x, t, lse, gr, None, -100, 0.1)),
                               K.cross_entropy_backward(np, xh, cp.asnumpy(t), rlse, np.ones(64, np.float32), None,
                                                        -100, 0.1), rtol=1e-4, atol=1e-6)
    w = cp.asarray(_rand(1000, seed=3).astype(np.float32))
    b = cp.asarray(_rand(1000, seed=4).astype(np.float32))
    y, mean, rstd = K.layer_norm(cp, x, w, b, 1e-5)
    ry, rmean, rrstd = K.layer_norm(np, xh, cp.asnumpy(w), cp.asnumpy(b), 1e-5)
    np.testing.assert_allclose(cp.asnumpy(y), ry, rtol=1e-4, atol=1e-4)
    dx, dw, db = K.layer_norm_backward(cp, g, x, mean, rstd, w)
    rdx, rdw, rdb = K.layer_norm_backward(np, gh, xh, rmean, rrstd, cp.asnumpy(w))
    for a, r in ((dx, rdx), (dw, rdw), (db, rdb)):
        np.testing.assert_allclose(cp.asnumpy(a), r, rtol=1e-3, atol=1e-3)
    for approx in ("none", "tanh"):
        np.testing.assert_allclose(cp.asnumpy(K.gelu(cp, x, approx)), K.gelu(np, xh, approx), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cp.asnumpy(K.gelu_backward(cp, g, x, approx)), K.gelu_backward(np, gh, xh, approx),
                                   rtol=1e-4, atol=1e-5)
    ps = [cp.asarray(_rand(300, seed=i).astype(np.float32)) for i in range(3)]
    hs = [cp.asnumpy(p) for p in ps]
    gs = [cp.asarray(_rand(300, seed=9 + i).astype(np.float32)) for i in range(3)]
    state = [[cp.zeros(300, cp.float32) for _ in ps] for _ in range(3)]
    hstate = [[np.zeros(300, np.float32) for _ in ps] for _ in range(3)]
    kw = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, step=1, decoupled=True, amsgrad=True)
    K.adam_step(cp, ps, gs, *state, **kw)
    K.adam_step(np, hs, [cp.asnumpy(g) for g in gs], *hstate, **kw)
    for p, h in zip(ps, hs):
        np.testing.assert_allclose(cp.asnumpy(p), h, rtol=1e-5, atol=1e-6)


# --- on the fake cupy's CPU emulator: the kernels whose threads are independent, against the references ---
def test_elementwise_kernels_match_references_on_the_cpu_emulator(monkeypatch):
    cp = fake_cupy.module()
    monkeypatch.setattr(K, "_is_cuda", lambda xp: xp is cp)  # take the kernel path on the fake device
    xh, gh = _rand(64, 100).astype(np.float32), _rand(64, 100, seed=1).astype(np.float32)
    x, g = cp.asarray(xh), cp.asarray(gh)
    for approx in ("none", "tanh"):
        np.testing.assert_allclose(K.gelu(cp, x, approx).get(), K.gelu(np, xh, approx), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(K.gelu_backward(cp, g, x, approx).get(), K.gelu_backward(np, gh, xh, approx),
                                   rtol=1e-5, atol=1e-6)
    hs = [_rand(300, seed=i).astype(np.float32) for i in range(3)]
    ps = [cp.asarray(h) for h in hs]
    gs = [_rand(300, seed=9 + i).astype(np.float32) for i in range(3)]
    state = [[cp.zeros(300, np.float32) for _ in ps] for _ in range(3)]
    hstate = [[np.zeros(300, np.float32) for _ in ps] for _ in range(3)]
    for step in (1, 2):
        kw = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, step=step, decoupled=True,
                  amsgrad=True)
        K.adam_step(cp, ps, [cp.asarray(g) for g in gs], *state, **kw)
        K.adam_step(np, hs, gs, *hstate, **kw)
    for p, h in zip(ps, hs):
        np.testing.assert_allclose(p.get(), h, rtol=1e-5, atol=1e-6)
    with pytest.raises(fake_cupy.NotEmulated, match="__shared__"):  # row reductions need a GPU
        K.softmax(cp, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_loops_equal_numpy_add_at_bitwise(dtype):
    # ops._util.ufunc_at's fast path (fused.add_rows_at / add_flat_at) against np.add.at itself: rows picked by
    # one index (negative ones wrap), a broadcast gradient, a full index with a broadcast part; what it does not
    # serve (ints, an index out of range) goes to add.at, which raises IndexError for the range
    from workbench.ops._util import ufunc_at
    rng = np.random.default_rng(0)
    out = rng.standard_normal((100, 8, 4)).astype(dtype)
    cases = [(rng.integers(-100, 100, 3000), rng.standard_normal((3000, 8, 4)).astype(dtype)),
             ((rng.integers(0, 100, 3000),), np.broadcast_to(dtype(0.5), (3000, 8, 4))),
             ((rng.integers(0, 100, (50, 8, 1)), np.arange(8)[None, :, None], rng.integers(0, 4, (1, 1, 4))),
              rng.standard_normal((50, 8, 4)).astype(dtype))]
    for key, vals in cases:
        want, got = out.copy(), out.copy()
        np.add.at(want, key, vals)
        ufunc_at(np, "add", got, key, vals)
        assert want.tobytes() == got.tobytes()
    ints = np.zeros(10, np.int64)
    ufunc_at(np, "add", ints, np.arange(300) % 10, np.ones(300, np.int64))
    assert (ints == 30).all()
    with pytest.raises(IndexError):
        ufunc_at(np, "add", out, np.full(300, 100), np.ones((300, 8, 4), dtype))
