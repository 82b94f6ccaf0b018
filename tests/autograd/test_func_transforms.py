"""workbench.func against torch.func."""
import numpy as np
import pytest
import torch
import torch.func as TF

import workbench as wb
import workbench.func as WF

X = np.array([0.3, -1.2, 2.0])
M = np.array([[0.5, 1.5, -1.0], [-1.0, 2.0, 0.25]])


def close(a, b):
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
        return
    if isinstance(b, dict):
        assert a.keys() == b.keys()
        for k in b:
            close(a[k], b[k])
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(np.asarray(a.detach()._data), b.detach().numpy(), rtol=1e-9, atol=1e-12)


def f(m):
    return lambda x: (x.sin() * x.exp()).sum()


def g2(x, y):
    return ((x @ y) ** 2).sum()


def test_grad_argnums_aux_and_nesting():
    w, t = wb.tensor(X), torch.tensor(X)
    close(WF.grad(f(wb))(w), TF.grad(f(torch))(t))
    wm, tm = wb.tensor(M), torch.tensor(M)
    close(WF.grad(g2, argnums=(0, 1))(wm, w), TF.grad(g2, argnums=(0, 1))(tm, t))
    gr, aux = WF.grad(lambda x: ((x * x).sum(), x * 2), has_aux=True)(w)
    tgr, taux = TF.grad(lambda x: ((x * x).sum(), x * 2), has_aux=True)(t)
    close(gr, tgr)
    close(aux, taux)
    assert not gr.requires_grad
    gv = WF.grad_and_value(f(wb))(w)
    close(gv, TF.grad_and_value(f(torch))(t))
    # nesting: third derivative of x**4 at 2 (scalar)
    d3 = WF.grad(WF.grad(WF.grad(lambda x: x ** 4)))(wb.tensor(2.0))
    assert float(d3) == pytest.approx(48.0)
    with pytest.raises(RuntimeError, match="scalar"):
        WF.grad(lambda x: x * 2)(w)


def test_grad_no_perturbation_confusion():
    # d/dx [ x * d/dy (x * y) ] = d/dx [x * x] = 2x
    r = WF.grad(lambda x: x * WF.grad(lambda y: x * y)(wb.tensor(3.0)))(wb.tensor(5.0))
    assert float(r) == pytest.approx(10.0)


def test_grad_dict_inputs_and_regular_autograd_through():
    params = {"a": wb.tensor(X), "b": wb.tensor(2.0)}
    tparams = {"a": torch.tensor(X), "b": torch.tensor(2.0)}
    close(WF.grad(lambda p: (p["a"] * p["b"]).sum())(params), TF.grad(lambda p: (p["a"] * p["b"]).sum())(tparams))
    x = wb.tensor(X, requires_grad=True)
    g = WF.grad(lambda t: (t ** 3).sum())(x)  # inputs requiring grad: result is differentiable
    (gg,) = wb.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg._data, 6 * X)


def test_vjp_jvp():
    w, t = wb.tensor(X), torch.tensor(X)
    fn = lambda x: x.sin() * x  # noqa: E731
    (o, vf), (to, tvf) = WF.vjp(fn, w), TF.vjp(fn, t)
    close(o, to)
    close(vf(wb.tensor(M[0])), tvf(torch.tensor(M[0])))
    close(WF.jvp(fn, (w,), (wb.tensor(M[1]),)), TF.jvp(fn, (t,), (torch.tensor(M[1]),)))


def test_jacrev_jacfwd_hessian():
    w, t = wb.tensor(X), torch.tensor(X)
    fn = lambda x: x.sin() * x.exp()  # noqa: E731
    close(WF.jacrev(fn)(w), TF.jacrev(fn)(t))
    close(WF.jacfwd(fn)(w), TF.jacfwd(fn)(t))
    close(WF.hessian(f(wb))(w), TF.hessian(f(torch))(t))
    wm, tm = wb.tensor(M), torch.tensor(M)
    close(WF.jacrev(lambda a, b: a @ b, argnums=(0, 1))(wm, w), TF.jacrev(lambda a, b: a @ b, argnums=(0, 1))(tm, t))


def test_vmap_in_out_dims_nested_and_with_grad():
    wm, tm = wb.tensor(M), torch.tensor(M)
    w, t = wb.tensor(X), torch.tensor(X)
    close(WF.vmap(lambda r: (r * r).sum())(wm), TF.vmap(lambda r: (r * r).sum())(tm))
    close(WF.vmap(lambda c, v: c * v, in_dims=(1, 0))(wm, w), TF.vmap(lambda c, v: c * v, in_dims=(1, 0))(tm, t))
    close(WF.vmap(lambda r, s: r * s, in_dims=(0, None), out_dims=1)(wm, w),
          TF.vmap(lambda r, s: r * s, in_dims=(0, None), out_dims=1)(tm, t))
    # nested: outer product
    close(WF.vmap(WF.vmap(lambda a, b: a * b, (None, 0)), (0, None))(w, w),
          TF.vmap(TF.vmap(lambda a, b: a * b, (None, 0)), (0, None))(t, t))
    # per-example gradients
    per_ex = WF.vmap(WF.grad(lambda wt, x: (wt @ x) ** 2), in_dims=(None, 0))
    tper_ex = TF.vmap(TF.grad(lambda wt, x: (wt @ x) ** 2), in_dims=(None, 0))
    close(per_ex(w, wm), tper_ex(t, tm))
    # tuple outputs
    close(WF.vmap(lambda r: (r.sum(), r * 2))(wm), TF.vmap(lambda r: (r.sum(), r * 2))(tm))
    with pytest.raises(ValueError, match="same size"):
        WF.vmap(lambda a, b: a + b)(wm, w)


def test_functional_call():
    nn = pytest.importorskip("workbench.nn")
    lin = nn.Linear(3, 2)
    w0 = lin.weight.detach().clone()
    new = {"weight": wb.tensor(M), "bias": wb.tensor([1.0, -1.0], dtype=wb.float64)}
    out = WF.functional_call(lin, new, (wb.tensor(X),))
    np.testing.assert_allclose(out._data, M @ X + [1.0, -1.0])
    assert lin.weight is not None and np.array_equal(lin.weight.detach()._data, w0._data)
    # gradients w.r.t. the given parameters, the torch.func way
    gw = WF.grad(lambda p, x: WF.functional_call(lin, p, (x,)).sum())(new, wb.tensor(X))
    np.testing.assert_allclose(gw["weight"]._data, np.stack([X, X]))


def test_vjp_inside_grad_and_jvp_of_grad():
    def g(x):
        _, fn = WF.vjp(lambda t: t ** 3, x)
        return fn(wb.ones_like(x))[0].sum()

    close(WF.grad(g)(wb.tensor(X)), torch.tensor(6 * X))
    # forward-over-reverse: Hessian-vector product
    hvp = WF.jvp(WF.grad(lambda t: (t ** 3).sum()), (wb.tensor(X),), (wb.tensor(M[0]),))[1]
    thvp = TF.jvp(TF.grad(lambda t: (t ** 3).sum()), (torch.tensor(X),), (torch.tensor(M[0]),))[1]
    close(hvp, thvp)


def test_torch_vmap_is_torch_func_vmap():
    assert torch.vmap is torch.func.vmap
    assert wb.vmap is wb.func.vmap
    assert wb.vmap(wb.dot)(wb.ones(3, 2), wb.ones(3, 2)).tolist() == [2.0, 2.0, 2.0]
