"""workbench.autograd.functional against torch.autograd.functional."""
import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import workbench as wb
import workbench.autograd.functional as WF

X = np.array([0.3, -1.2, 2.0])
Y = np.array([[0.5, 1.5], [-1.0, 2.0]])
V = np.array([1.0, -0.5, 0.25])


def w(a):
    return wb.tensor(a)


def t(a):
    return torch.tensor(a)


def close(a, b):
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
        return
    np.testing.assert_allclose(np.asarray(a.detach()._data), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert tuple(a.shape) == tuple(b.shape)


def f1(m):
    return lambda x: (x.exp() * x).sin() if m is wb else (x.exp() * x).sin()


def fs(x):
    return (x * x * x).sum() + (x * x).sum()


def f2(x, y):
    return x.sum() * y, (x * x).sum()


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_vjp_jvp(name):
    (wo, wr), (to, tr) = getattr(WF, name)(f1(wb), w(X), w(V)), getattr(TF, name)(f1(torch), t(X), t(V))
    close(wo, to)
    close(wr, tr)


def test_vjp_tuple_inputs_outputs():
    v = (w(Y), w(2.0))
    tv = (t(Y), t(2.0))
    close(WF.vjp(f2, (w(X), w(Y)), v), TF.vjp(f2, (t(X), t(Y)), tv))


def test_jacobian_shapes_and_values():
    close(WF.jacobian(f1(wb), w(X)), TF.jacobian(f1(torch), t(X)))
    close(WF.jacobian(f2, (w(X), w(Y))), TF.jacobian(f2, (t(X), t(Y))))
    close(WF.jacobian(lambda y: y * 2, w(Y), vectorize=True), TF.jacobian(lambda y: y * 2, t(Y), vectorize=True))


def test_hessian_vhp_hvp():
    close(WF.hessian(fs, w(X)), TF.hessian(fs, t(X)))
    close(WF.vhp(fs, w(X), w(V)), TF.vhp(fs, t(X), t(V)))
    close(WF.hvp(fs, w(X), w(V)), TF.hvp(fs, t(X), t(V)))


def test_create_graph_and_strict():
    x = wb.tensor(X, requires_grad=True)
    _, g = WF.vjp(fs, x, create_graph=True)
    assert g.requires_grad
    (gg,) = wb.autograd.grad(g.sum(), x)
    tx = torch.tensor(X, requires_grad=True)
    _, tg = TF.vjp(fs, tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    close(gg, tgg)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        WF.vjp(lambda a, b: a * 2, (w(X), w(X)), w(V), strict=True)
    _, (g0, g1) = WF.vjp(lambda a, b: a * 2, (w(X), w(X)), w(V))
    assert float(g1.abs().sum()) == 0.0
    with pytest.raises(TypeError, match="must be a Tensor"):
        WF.vjp(fs, [1.0])
