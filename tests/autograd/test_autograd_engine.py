"""iter_backward's contract (the debugger and recorder consume it), tape metadata, listeners, inference."""
import weakref

import numpy as np
import pytest

import workbench as wb
from workbench.autograd import graph
from workbench.autograd.engine import BackwardStep, iter_backward


def test_steps_in_order_with_leaves_and_grads():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    w = wb.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    steps = list(iter_backward([y], [wb.tensor(1.0)], False, False, None, True, None, True))
    assert [s.node.name() for s in steps] == ["SumBackward0", "MulBackward0", "AccumulateGrad", "AccumulateGrad"]
    assert [s.index for s in steps] == [0, 1, 2, 3]
    assert all(isinstance(s, BackwardStep) for s in steps)
    mul = steps[1]
    assert len(mul.grad_outputs) == 1 and len(mul.grad_inputs) == 2
    leaves = {id(t): (before, after) for s in steps[2:] for t, before, after in s.leaves}
    assert set(leaves) == {id(x), id(w)}
    before, after = leaves[id(x)]
    assert before is None and np.array_equal(after._data, [3.0, 4.0])


def test_paused_consumer_runs_with_its_own_grad_mode():
    x = wb.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    it = iter_backward([y], [wb.tensor(1.0)])
    next(it)
    assert wb.is_grad_enabled()  # user code between steps records as usual
    z = x * 3
    assert z.requires_grad
    for _ in it:
        pass
    assert float(x.grad) == 2.0


def test_keep_before_copies_the_old_grad():
    x = wb.tensor([1.0], requires_grad=True)
    (x * 2).sum().backward()
    steps = list(iter_backward([(x * 5).sum()], [wb.tensor(1.0)], keep_before=True))
    (t, before, after) = steps[-1].leaves[0]
    assert float(before) == 2.0 and float(after) == 7.0


def test_scope_group_listener_and_trace_level():
    seen = []
    x = wb.tensor([1.0], requires_grad=True)
    with graph.add_listener(lambda node, ins, outs: seen.append((node.op, node.scope, node.group))):
        with graph.scope("encoder"):
            with graph.scope("0"):
                with graph.group("softmax"):
                    with graph.group("inner"):
                        y = x.exp()
            z = y * 2
    w = z * 3
    assert seen == [("exp", "encoder.0", "softmax"), ("mul", "encoder", None)]
    assert w.grad_fn.scope == "" and w.grad_fn.site is None
    graph.set_trace_level(2)
    v = x * 2
    assert v.grad_fn.site[0].endswith("test_autograd_engine.py")


def test_non_differentiable_outputs_do_not_require_grad():
    x = wb.tensor([1.0, -2.0], requires_grad=True)
    assert not (x > 0).requires_grad
    assert (x * 2).requires_grad


def test_inference_tensors():
    with wb.inference_mode():
        t = wb.ones(2) * 2
    assert t.is_inference() and not t.requires_grad
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * t


def test_freed_error_names_the_backward_call():
    x = wb.tensor([1.0], requires_grad=True)
    y = x.exp()
    y.sum().backward()
    with pytest.raises(RuntimeError, match=r"freed by the backward\(\) call at .*test_autograd_engine.py"):
        y.grad_fn.saved_tensors
    # a node that saved nothing can be run twice, as in PyTorch
    z = x + 1
    z.sum().backward()
    z.sum().backward()


def test_cut_reasons_in_no_grad_error():
    x = wb.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="made by .detach()"):
        x.detach().backward()
    with wb.no_grad():
        y = x.exp()
    with pytest.raises(RuntimeError, match="computed by 'exp'.*grad mode was off"):
        y.backward()
    with pytest.raises(RuntimeError, match="built from data"):
        wb.tensor([1.0]).backward()


def test_leaves_steal_fresh_gradients_and_copy_ones_others_hold(monkeypatch):
    # PyTorch's AccumulateGrad takes a gradient's memory when nothing else holds it; workbench does the same
    # and copies whatever the caller, a hook or a custom Function kept
    from workbench.autograd import engine

    copies = []
    real = engine._copy
    monkeypatch.setattr(engine, "_copy", lambda xp, d: copies.append(1) or real(xp, d))

    lin = wb.nn.Linear(4, 3)
    x = wb.randn(2, 4)
    (lin(x) ** 2).sum().backward()
    assert copies == []  # weight and bias gradients come fresh from the backward formulas

    a, b, c = (wb.ones(3, requires_grad=True) for _ in range(3))
    ((a + b) * c).sum().backward()  # Add hands one gradient to both leaves: one takes it, one copies
    assert len(copies) == 1
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]

    copies.clear()
    g = wb.full((3,), 2.0)
    a.grad = None
    a.backward(g)  # the caller keeps its gradient
    a.backward(g)
    assert g.tolist() == [2.0, 2.0, 2.0] and a.grad.tolist() == [4.0, 4.0, 4.0] and len(copies) == 1

    class Passes(wb.autograd.Function):
        @staticmethod
        def forward(ctx, t, kept):
            ctx.save_for_backward(kept)
            return t * 1

        @staticmethod
        def backward(ctx, go):
            return ctx.saved_tensors[0], None  # a tensor the user holds, handed back as the gradient

    kept = wb.tensor([1.0, 2.0, 3.0])
    a.grad = None
    for _ in range(2):
        Passes.apply(a, kept).sum().backward()
    assert kept.tolist() == [1.0, 2.0, 3.0] and a.grad.tolist() == [2.0, 4.0, 6.0]

    mine = wb.tensor([5.0, 5.0, 5.0])
    a.grad = None
    for _ in range(2):
        y = a.clone()
        y.register_hook(lambda g: mine)  # a hook's result that its author keeps
        y.sum().backward()
    assert mine.tolist() == [5.0, 5.0, 5.0] and a.grad.tolist() == [10.0, 10.0, 10.0]


def test_leaves_steal_a_reshape_of_a_fresh_array_and_copy_a_view_of_a_kept_one(monkeypatch):
    # a kernel's 2-D result reshaped to the input's shape is a view nobody else can reach: taken, not copied;
    # a reshape of an array the Function keeps is copied
    import numpy as np

    from workbench.autograd import engine

    copies = []
    real = engine._copy
    monkeypatch.setattr(engine, "_copy", lambda xp, d: copies.append(1) or real(xp, d))
    x = wb.randn(2, 3, 4, requires_grad=True)
    wb.nn.functional.layer_norm(x, (4,)).backward(wb.ones(2, 3, 4))
    assert copies == []
    kept = []

    class Reshapes(wb.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, go):
            base = np.ones(6, np.float32)
            kept.append(base)
            return wb.Tensor._make(base.reshape(2, 3))

    a = wb.zeros(2, 3, requires_grad=True)
    Reshapes.apply(a).sum().backward()
    assert copies == [1]
    a.grad.add_(1)
    assert kept[0].tolist() == [1.0] * 6


def test_run_peeks_the_node_each_step_runs():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    w = wb.tensor([3.0, 4.0], requires_grad=True)
    y = ((x * w).exp() + x).sum()
    run = iter_backward([y], [wb.tensor(1.0)])
    seen = []
    while run.peek() is not None:
        nxt = run.peek()
        step = next(run)
        assert step.node is nxt
        seen.append(step.node)
    assert run.peek() is None and list(run) == []
    assert seen[0] is y.grad_fn and len(seen) == len(graph.walk(graph.roots_of([y])))


def test_bad_roots_raise_when_the_run_is_made():
    with pytest.raises(RuntimeError, match="does not require grad"):
        iter_backward([wb.ones(2).sum()], [wb.tensor(1.0)])


def test_free_after_step_keeps_saved_tensors_until_the_step_is_consumed():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    run = iter_backward([y], [wb.tensor(1.0)], retain_graph=False, free_after_step=True)
    assert not run.retain_graph
    assert next(run).node is y.grad_fn
    step = next(run)
    assert step.node is mul and mul._saved is not None  # the consumer may still read them
    next(run)
    assert mul._saved is None
    with pytest.raises(RuntimeError, match="second time.*freed by the backward"):
        y.backward()


def test_run_free_names_the_call_site():
    x = wb.tensor([1.0], requires_grad=True)
    y = (x * x).sum()
    run = iter_backward([y], [wb.tensor(1.0)], retain_graph=True)
    mul = y.grad_fn.next_functions[0][0]
    run.free(mul)
    with pytest.raises(RuntimeError, match="test_autograd_engine.py"):
        y.backward()


def test_gradient_edge_and_roots_of():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    a, b = x.unbind()
    assert graph.gradient_edge(b) == (b.grad_fn, b._output_nr)
    assert graph.gradient_edge(x) == (graph.accumulator(x), 0)
    assert graph.gradient_edge(wb.ones(1)) == (None, 0)
    assert graph.roots_of([a, a, x, wb.ones(1)]) == [a.grad_fn, graph.accumulator(x)]


def test_the_node_does_not_keep_its_non_differentiable_outputs_alive():
    # mark_non_differentiable's outputs (indices, masks) are read once when the outputs are made: kept on
    # the node, an index tensor the caller dropped would stay in memory until the graph is freed
    class Split(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return x * 2, mask

        @staticmethod
        def backward(ctx, g, _gm):
            return g * 2

    x = wb.tensor(np.arange(-3.0, 3.0), requires_grad=True)
    for fn in (lambda t: t.max(0), lambda t: Split.apply(t)):  # a built-in (raw) op, a custom Function
        y, aux = fn(x)
        ref = weakref.ref(aux._data)
        del aux
        assert ref() is None and y.grad_fn is not None
        y.sum().backward()
