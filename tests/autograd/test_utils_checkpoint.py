"""workbench.utils.checkpoint: recompute in backward, same gradients, RNG replay, autograd.grad."""
import numpy as np
import pytest

import workbench as wb
from workbench.utils.checkpoint import checkpoint, checkpoint_sequential

A = np.array([[0.5, -1.0], [2.0, 0.25]])


def close(a, b):
    np.testing.assert_allclose(np.asarray(a._data), np.asarray(b._data), rtol=1e-12)


def test_same_gradients_as_without_and_recomputes():
    calls = []
    w = wb.tensor(A, requires_grad=True)  # a parameter the function closes over

    def seg(x):
        calls.append(1)
        return (x @ w).tanh() * x

    x1, x2 = wb.tensor(A, requires_grad=True), wb.tensor(A, requires_grad=True)
    seg(x1).sum().backward()
    g_w = w.grad.clone()
    w.grad = None
    y = checkpoint(seg, x2, use_reentrant=False)
    assert y.grad_fn.name() == "CheckpointBackward" and len(calls) == 2
    y.sum().backward()
    assert len(calls) == 3  # recomputed once in backward
    close(x2.grad, x1.grad)
    close(w.grad, g_w)


def test_params_get_grads_when_inputs_do_not_require_grad():
    w = wb.tensor(A, requires_grad=True)
    y = checkpoint(lambda x: (x * w).sum(), wb.tensor(A), use_reentrant=False)
    assert y.requires_grad
    y.backward()
    close(w.grad, wb.tensor(A))


def test_autograd_grad_and_double_backward_through_checkpoint():
    x = wb.tensor(A, requires_grad=True)
    y = checkpoint(lambda t: (t ** 3).sum(), x, use_reentrant=False)
    (g,) = wb.autograd.grad(y, x, create_graph=True)
    close(g, wb.tensor(3 * A ** 2))
    (gg,) = wb.autograd.grad(g.sum(), x)
    close(gg, wb.tensor(6 * A))


def test_rng_state_replayed():
    def noisy(x):
        return x * wb.rand(2, 2, dtype=wb.float64)

    x = wb.tensor(A, requires_grad=True)
    wb.manual_seed(0)
    y = checkpoint(noisy, x, use_reentrant=False, preserve_rng_state=True)
    mask = (y / x).detach()
    wb.rand(3)  # the global stream moves on
    y.sum().backward()
    close(x.grad, mask)


def test_recompute_mismatch_is_explained():
    n = [2]

    def changing(x):
        n[0] += 1
        return x[: n[0] % 2 + 1] * 1

    x = wb.tensor(A, requires_grad=True)
    y = checkpoint(changing, x, use_reentrant=False, preserve_rng_state=False)
    with pytest.raises(RuntimeError, match="different metadata"):
        y.sum().backward()


def test_checkpoint_sequential():
    fns = [lambda t: t * 2, lambda t: t.exp(), lambda t: t * t, lambda t: t.sum()]
    x1, x2 = wb.tensor(A, requires_grad=True), wb.tensor(A, requires_grad=True)
    y = x1
    for f in fns:
        y = f(y)
    y.backward()
    checkpoint_sequential(fns, 2, x2, use_reentrant=False).backward()
    close(x2.grad, x1.grad)
    assert wb.utils.checkpoint.checkpoint is checkpoint


def test_checkpoint_module_with_dropout_matches_plain_run():
    nn = wb.nn
    wb.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 2))
    x = wb.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=wb.float32)
    wb.manual_seed(1)
    net(x).sum().backward()
    ref = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    wb.manual_seed(1)
    checkpoint(net, x, use_reentrant=False).sum().backward()
    for p, r in zip(net.parameters(), ref):
        np.testing.assert_allclose(p.grad._data, r._data, rtol=1e-6)
