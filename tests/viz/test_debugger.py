"""The stepper on the engine's generator: order, accumulation, breakpoints, step over, restart,
equality with backward(), the widget's message protocol, and the 100 ms step budget."""

import numpy as np
import pytest

import workbench as wb
from models import MLP, mse
from workbench.autograd import engine
from workbench.viz.stepper import Stepper


def _mlp_loss(seed=0, nan=False):
    m = MLP()
    wb.manual_seed(seed)
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    with wb.viz.trace():
        out = m(x)
        if nan:
            out = out * wb.log(wb.zeros(1) + 0.0 * out[:1, :1].detach())  # log(0) = -inf -> NaN/Inf grads
        loss = mse(out, y)
    return m, loss


def _grads(m):
    return {k: p.grad.numpy().copy() if p.grad is not None else None for k, p in m.named_parameters()}


def test_order_equals_iter_backward_and_grads_equal_backward():
    m1, l1 = _mlp_loss()
    order = [s.node.name() for s in engine.iter_backward([l1], [wb.ones(())], retain_graph=True)]
    for p in m1.parameters():
        p.grad = None
    l1.backward()
    ref = _grads(m1)

    m2, l2 = _mlp_loss()
    st = Stepper(l2, m2)
    seen = []
    while st.step() is not None:
        seen.append(st.current.node.name())
    assert seen == order and st.position == st.total == len(order) and st.paused_reason == "end"
    got = _grads(m2)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])


def test_current_exposes_tensors_and_leaf_before_after():
    a = wb.tensor(2.0, requires_grad=True)
    b = wb.tensor(-3.0, requires_grad=True)
    a.grad = wb.tensor(10.0)
    st = Stepper(a * b + a, classroom=True)
    cur = st.step()
    assert cur.node.name() == "AddBackward0" and cur.grad_output.item() == 1.0
    assert [g.item() for g in cur.grad_inputs] == [1.0, 1.0]
    names = []
    while st.step() is not None:
        names.append(st.current.node.name())
        if st.current.leaves and st.current.leaves[0][0] is a:
            t, before, after = st.current.leaves[0]
            names.append((before.item(), after.item()))
    assert (10.0, 8.0) in names  # the engine sums both paths into a before one accumulation
    assert a.grad.item() == 10.0 + 1.0 - 3.0 and b.grad.item() == 2.0
    mul = next(r for r in st.records if r["derivation"] and "= a · b" in r["derivation"])
    assert "dL/da = dL/dmul₂ · b = 1 · (−3) = −3" in mul["derivation"]


def test_breakpoints_on_node_condition_and_nan():
    m, loss = _mlp_loss()
    st = Stepper(loss, m)
    relu_id = next(i for i, n in st.nodes.items() if n["op"] == "relu")
    st.set_breakpoint(relu_id)
    ran = st.continue_()
    assert st.paused_reason == "breakpoint" and st.current.node_id == relu_id and ran[-1]["node"] == relu_id
    st.set_breakpoint(relu_id, False)
    st.add_breakpoint(lambda step: step.node.name() == "TransposeBackward0")
    st.continue_()
    assert st.current.node.name() == "TransposeBackward0" and "condition" in st.paused_reason
    with pytest.raises(KeyError):
        st.add_breakpoint("nope")
    with pytest.raises(TypeError):
        st.add_breakpoint(3.5)

    m, loss = _mlp_loss(nan=True)
    st = Stepper(loss, m)
    st.continue_()
    assert "NaN" in st.paused_reason or "Inf" in st.paused_reason
    assert "models.py" in st.paused_reason  # the forward line of the op that made it (mse)
    assert st.current.nonfinite() is not None

    m, loss = _mlp_loss()
    st = Stepper(loss, m, breakpoints=[wb.viz.grad_norm_above(0.0)])
    st.continue_()
    assert st.position == 1 and "grad_norm_above" in st.paused_reason
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    st = Stepper((w * w).sum(), breakpoints=[wb.viz.on_nan])
    st.continue_()
    assert st.paused_reason == "end"


def test_step_over_runs_a_whole_module():
    m, loss = _mlp_loss()
    order = [(s.node, s.node.name()) for s in engine.iter_backward([loss], [wb.ones(())], retain_graph=True)]
    st = Stepper(loss, m)
    scopes = [st.scopes[st.ids[n]] for n, _ in order]
    assert st.peek() is order[0][0]
    st.step_over()  # top level mean: one step (the next node, pow, is top level too)
    assert st.position == 1
    st.step(), st.step()  # pow, sub
    assert st.scopes[st.ids[st.peek()]] == "head"
    ran = st.step_over()  # from outside: the whole of head's backward as one step
    assert [st.scopes[r["node"]] for r in ran] == ["head"] * len(ran) and len(ran) == scopes.count("head") - 2
    assert st.scopes[st.ids[st.peek()]] == "encoder.1"
    ran = st.step_over()  # still in head's scope: the next step only (relu, outside head)
    assert len(ran) == 1 and st.scopes[ran[0]["node"]] == "encoder.1"
    ran = st.step_over()  # current scope encoder.1: the next step (encoder.0's add)
    assert len(ran) == 1
    ran = st.step_over()  # current scope encoder.0: the rest of encoder.0, up to the leaves
    assert {st.scopes[r["node"]] for r in ran} == {"encoder.0"} and st.position >= 10


def test_restart_restores_grads_and_replays_the_same_steps():
    m, loss = _mlp_loss()
    p = m.head.weight
    p.grad = wb.ones(*p.shape)
    st = Stepper(loss, m)
    first = [r["node"] for r in st.run_to_end()]
    after = p.grad.numpy().copy()
    st.restart()
    assert st.position == 0 and np.all(p.grad.numpy() == 1.0)
    assert [r["node"] for r in st.run_to_end()] == first
    np.testing.assert_array_equal(p.grad.numpy(), after)
    st.close()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_errors_are_clear():
    with pytest.raises(RuntimeError, match="does not require grad"):
        Stepper(wb.ones(2).sum())
    w = wb.ones(2, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        Stepper(loss)


class _Spy:
    def __init__(self, widget):
        self.sent = []
        widget.send = lambda content, buffers=None: self.sent.append(content)


def test_widget_protocol_state_messages():
    m, loss = _mlp_loss()
    dbg = wb.viz.debug(loss, m, display=False, classroom=True)
    spy = _Spy(dbg)
    assert dbg.view == "debugger" and dbg.snapshot["trace"] is None
    dbg._on_msg(dbg, {"type": "sync"}, [])
    assert spy.sent[-1]["position"] == 0 and spy.sent[-1]["steps"] == [] and spy.sent[-1]["step"] is None
    for _ in range(3):
        dbg._on_msg(dbg, {"type": "step"}, [])
    s = spy.sent[-1]
    assert s["type"] == "state" and s["position"] == 3 and s["total"] == dbg.total and len(s["steps"]) == 1
    assert s["step"]["index"] == 2 and s["step"]["node"] == dbg.current.node_id
    relu = next(i for i, n in dbg.stepper.nodes.items() if n["op"] == "relu")
    dbg._on_msg(dbg, {"type": "set_breakpoint", "node": relu, "enabled": True}, [])
    dbg._on_msg(dbg, {"type": "continue"}, [])
    s = spy.sent[-1]
    assert s["paused_reason"] == "breakpoint" and s["breakpoints"] == [relu] and s["step"]["node"] == relu
    assert [st["index"] for st in s["steps"]] == list(range(3, s["position"]))
    dbg._on_msg(dbg, {"type": "sync"}, [])
    assert len(spy.sent[-1]["steps"]) == spy.sent[-1]["position"]
    dbg._on_msg(dbg, {"type": "restart"}, [])
    assert spy.sent[-1]["position"] == 0
    dbg.stepper.close()
    dbg._on_msg(dbg, {"type": "step"}, [])
    assert spy.sent[-1]["type"] == "error"


def test_steps_on_a_2000_node_graph_each_answer_with_the_next_position():
    # (how fast: benchmarks/debugger_step.py)
    ws = [wb.randn(16, requires_grad=True) for _ in range(40)]
    h = wb.randn(16)
    for k in range(1000):  # ~2000 nodes: a mul and an add per link, 40 leaves reused
        h = h * 0.999 + ws[k % 40]
    loss = h.sum()
    dbg = wb.viz.debug(loss, display=False)
    assert dbg.total >= 2000
    spy = _Spy(dbg)
    for k in range(1, 21):
        dbg._on_msg(dbg, {"type": "step"}, [])
        assert spy.sent[-1]["position"] == k
    dbg.stepper.close()


def test_paused_kernel_records_again_and_an_interrupt_leaves_it_usable():
    m, loss = _mlp_loss()
    dbg = wb.viz.debug(loss, m, display=False)
    spy = _Spy(dbg)
    dbg.step()
    assert wb.is_grad_enabled()  # paused mid-backward, user cells still build graphs
    y = (m.head.weight * 2).sum()
    assert y.requires_grad

    def interrupt(step):
        if step.index == 4:
            raise KeyboardInterrupt
        return False

    dbg.add_breakpoint(interrupt)
    with pytest.raises(KeyboardInterrupt):
        dbg._on_msg(dbg, {"type": "continue"}, [])
    assert spy.sent[-1]["type"] == "error" and "KeyboardInterrupt" in spy.sent[-1]["message"]
    dbg.stepper.conditions.clear()
    dbg._on_msg(dbg, {"type": "restart"}, [])
    dbg._on_msg(dbg, {"type": "continue"}, [])
    assert spy.sent[-1]["paused_reason"] == "end" and spy.sent[-1]["position"] == dbg.total
