"""Custom autograd.Function: ctx API, setup_context style, once_differentiable; against PyTorch."""
import ast
from pathlib import Path

import numpy as np
import pytest
import torch

import workbench as wb


def close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()._data), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def make(m):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.flags = ctx.needs_input_grad
            return x ** 3 * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.k, None

    class Split(m.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2, (x > 0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g, gmask):
            assert gmask is None
            return None if g is None else g * 2

    class AddOneInplace(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    return Cube, Split, AddOneInplace


X = np.array([0.5, -1.5, 2.0])


def test_save_for_backward_needs_input_grad_and_double_backward():
    (WC, _, _), (TC, _, _) = make(wb), make(torch)
    x, tx = wb.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    y, ty = WC.apply(x, 2.0), TC.apply(tx, 2.0)
    assert y.grad_fn.name() == ty.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.flags == (True, False)
    (g,) = wb.autograd.grad(y.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    close(g, tg)
    (gg,) = wb.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    close(gg, tgg)
    # nothing requires grad: forward runs, nothing recorded
    z = WC.apply(wb.tensor(X), 1.0)
    assert z.grad_fn is None and not z.requires_grad


def test_setup_context_non_differentiable_and_materialize():
    (_, WS, _), (_, TS, _) = make(wb), make(torch)
    x, tx = wb.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (a, mask), (ta, tmask) = WS.apply(x), TS.apply(tx)
    assert not mask.requires_grad and not tmask.requires_grad and a.requires_grad
    a.sum().backward()
    ta.sum().backward()
    close(x.grad, tx.grad)


def test_mark_dirty():
    (_, _, WD), (_, _, TD) = make(wb), make(torch)
    x, tx = wb.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    h, th = x * 1, tx * 1
    r, tr = WD.apply(h), TD.apply(th)
    assert r is h and h._version == th._version and h.grad_fn.name() == "AddOneInplaceBackward"
    (r * r).sum().backward()
    (tr * tr).sum().backward()
    close(x.grad, tx.grad)
    with pytest.raises(RuntimeError, match="leaf"):
        WD.apply(wb.tensor(X, requires_grad=True))


def test_wrong_number_of_gradients_is_named():
    class Bad(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = wb.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="BadBackward returned an incorrect number of gradients"):
        Bad.apply(x, x).sum().backward()


def test_once_differentiable():
    from workbench.autograd.function import once_differentiable

    class Sq(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = wb.tensor(X, requires_grad=True)
    (g,) = wb.autograd.grad(Sq.apply(x).sum(), x)
    np.testing.assert_allclose(g._data, 2 * X)
    v = wb.ones(3, dtype=wb.float64, requires_grad=True)
    (g,) = wb.autograd.grad(Sq.apply(x), x, v, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_gradcheck_custom_and_complex():
    WC, _, _ = make(wb)
    x = wb.tensor(X, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: WC.apply(t, 1.5), (x,))
    assert wb.autograd.gradgradcheck(lambda t: WC.apply(t, 1.5), (x,))

    class Wrong(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    with pytest.raises(wb.autograd.GradcheckError, match="Jacobian mismatch"):
        wb.autograd.gradcheck(Wrong.apply, (x,))
    assert not wb.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)

    class CSquare(wb.autograd.Function):  # PyTorch's convention: grad_in = grad_out * conj(f'(z))
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return wb.tensor(z._data * z._data)

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return wb.tensor(g._data * np.conj(2 * z._data))

    z = wb.tensor(np.array([1 + 2j, -0.5 + 1j]), requires_grad=True)
    assert wb.autograd.gradcheck(CSquare.apply, (z,))
    tz = torch.tensor(np.array([1 + 2j, -0.5 + 1j]), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t * t, (tz,))

    class CNoConj(CSquare):  # forgetting the conjugate is caught
        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return wb.tensor(g._data * 2 * z._data)

    with pytest.raises(wb.autograd.GradcheckError, match="complex"):
        wb.autograd.gradcheck(CNoConj.apply, (z,))


def test_gradcheck_takes_an_empty_output_beside_others():
    # as PyTorch's gradcheck: lu_unpack(unpack_pivots=False) returns an empty P beside L and U (op spec, #13)
    x = wb.tensor(X, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: (t * t, t[:0], t.detach()[:0]), (x,))
    tx = torch.tensor(X, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: (t * t, t[:0], t.detach()[:0]), (tx,))
    with pytest.raises(wb.autograd.GradcheckError, match="Jacobian mismatch for output 0"):
        wb.autograd.gradcheck(lambda t: (t.detach() * t, t[:0]), (x,))


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable():
    class Sq(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x.detach() * g  # first derivative right, second wrong (x cut off)

    x = wb.tensor(X, requires_grad=True)
    assert wb.autograd.gradcheck(Sq.apply, (x,))
    with pytest.raises(wb.autograd.GradcheckError):
        wb.autograd.gradgradcheck(Sq.apply, (x,))


def test_node_is_complete_where_it_is_defined():
    # the ctx API lives in Node's class body (autograd/graph.py): no module assigns onto the class later
    assert {"save_for_backward", "mark_dirty", "mark_non_differentiable", "set_materialize_grads",
            "saved_tensors"} <= set(vars(wb.autograd.graph.Node))
    root = Path(wb.__file__).parent
    bad = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            calls_setattr = isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args
            for t in targets + ([node.args[0]] if calls_setattr else []):
                owner = t.value if isinstance(t, ast.Attribute) and not calls_setattr else t
                if (getattr(owner, "id", None) or getattr(owner, "attr", None)) == "Node":
                    bad.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not bad, bad
