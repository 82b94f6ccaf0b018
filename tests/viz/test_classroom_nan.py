"""Classroom derivations (parentheses, numbers, unambiguous names, broadcasting), NaN notes on the
snapshot, and the debugger's message when later code changed its graph."""
import math
import re

import pytest

import workbench as wb
from models import MLP, mse


def _derivations(snap):
    return [st["derivation"] for st in snap.to_dict()["trace"]["steps"]]


def test_tanh_neuron_reads_with_parentheses_and_numbers():
    x1, x2 = wb.tensor(2.0, requires_grad=True), wb.tensor(0.0, requires_grad=True)
    w1, w2 = wb.tensor(-3.0, requires_grad=True), wb.tensor(1.0, requires_grad=True)
    b = wb.tensor(6.8813735870195432, requires_grad=True)
    n = x1 * w1 + x2 * w2 + b
    o = n.tanh()
    d = _derivations(wb.viz.snapshot(o, trace=True))  # names come from this frame's variables
    assert d[0] == "o = tanh(n)\ndL/dn = dL/do · (1 − o²) = 1 · (1 − 0.7071²) = 0.5"
    # two products added: each has its own name, and the products' own steps use the same names
    add = next(t for t in d if "= mul" in t and " + mul" in t)
    first, second = add.splitlines()[0].split("=")[1].split("+")
    assert first.strip() != second.strip()
    for name in (first.strip(), second.strip()):
        assert any(t.startswith(f"{name} = ") for t in d)
    assert any("dL/dx1 = dL/dmul" in t and "· w1 = 0.5 · (−3) = −1.5" in t for t in d)
    assert all(" * " not in t and "**" not in t for t in d)


def test_broadcasting_and_reductions_are_explained_at_the_node():
    x = wb.randn(8, 3, requires_grad=True)
    bias = wb.randn(3, requires_grad=True)
    d = _derivations(wb.viz.snapshot((x + bias).sum(), trace=True))
    add = next(t for t in d if "= x + bias" in t)
    assert "summed over dim 0: bias was broadcast from [3] to [8, 3]" in add
    assert "x was broadcast" not in add
    total = d[0]
    assert "spread back from [] to" in total and "[8, 3]" in total


def test_classroom_flag_is_the_viewers_initial_state_and_derivations_always_recorded():
    a = wb.tensor(2.0, requires_grad=True)
    off = wb.viz.debug((a * a).sum(), display=False)
    on = wb.viz.debug((a * a).sum(), classroom=True, display=False)
    assert off.classroom is False and on.classroom is True
    off.step()
    assert off.current.record["derivation"]  # the control toggles it live, so it is always there
    snap = on.stepper.replay_snapshot()
    assert snap["trace"]["classroom"] is True


def test_nan_loss_note_names_the_first_op_and_its_line_under_record(validate):
    w = wb.tensor([1.0, 0.0, 2.0], requires_grad=True)
    with wb.viz.record():
        loss = (wb.log(w * w) * 2).sum()  # the intermediates are gone by snapshot time
    line = test_nan_loss_note_names_the_first_op_and_its_line_under_record.__code__.co_firstlineno + 3
    d = validate(wb.viz.snapshot(loss))
    (note,) = d["notes"]
    assert note["level"] == "error"
    node = next(n for n in d["nodes"] if n["id"] == note["node"])
    assert node["op"] == "log"
    assert "The first op that produced NaN or Inf: log" in note["text"] and f":{line}." in note["text"]
    assert "loss" in note["text"]
    # a debugger of that loss says it before the first step (the same snapshot, the same note)
    dbg = wb.viz.debug(loss, display=False)
    assert dbg.snapshot["notes"] == d["notes"] and dbg.position == 0
    assert "error: The loss (loss) is" in dbg.static_bundle()["text/plain"]  # what a script prints


def test_nan_loss_without_record_says_how_to_find_the_origin_and_finite_has_no_note(validate):
    w = wb.tensor([1.0, 0.0], requires_grad=True)
    d = validate(wb.viz.snapshot(wb.log(w * w).sum()))
    assert "with wb.viz.record():" in d["notes"][0]["text"]
    assert "notes" not in validate(wb.viz.snapshot((w * w).sum()))


def test_nan_note_is_on_the_svg_fallback():
    w = wb.tensor([1.0, 0.0], requires_grad=True)
    with wb.viz.record():
        loss = wb.log(w * w).sum()
    svg = wb.viz.snapshot(loss).svg()
    lines = re.findall(r'<text class="wb-note" [^>]*fill="currentColor">(.*?)</text>', svg)
    notes = " ".join(re.sub(r"<[^>]+>", "", t) for t in lines)
    assert "The first op that produced NaN or Inf: log" in notes
    assert lines[0].startswith('<tspan fill="#d32f2f" font-weight="bold">⚠</tspan>')  # the icon red, the words the page's
    assert "⚑ origin" in svg  # the op the note names is marked, as in the viewer
    assert "error: The loss (loss) is Inf" in repr(wb.viz.snapshot(loss))  # the one line a script prints


def test_debugger_whose_graph_changed_says_so_not_the_inplace_hint():
    m = MLP()
    opt = wb.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    loss = mse(m(wb.randn(8, 3)), wb.randn(8, 2))
    dbg = wb.viz.debug(loss, m, display=False)
    loss.backward(retain_graph=True)
    opt.step()  # a later cell: the weights the graph saved change in place
    for act in (dbg.continue_, dbg.restart):
        with pytest.raises(RuntimeError) as e:
            act()
        msg = str(e.value)
        assert "changed by code run after its forward pass" in msg and "parameter " in msg
        assert "optimizer.step()" in msg and "wb.viz.debug(loss)" in msg
        assert "out-of-place" not in msg and "clone()" not in msg
    assert not math.isnan(dbg.position)


def test_matrix_rules_name_parameters_once_and_powers_by_their_exponent():
    net = wb.nn.Sequential(wb.nn.Linear(3, 4), wb.nn.Tanh(), wb.nn.Linear(4, 1))
    loss = ((net(wb.randn(4, 3)) - wb.randn(4, 1)) ** 2).mean()
    d = "\n".join(_derivations(wb.viz.snapshot(loss, net, trace=True)))
    assert "dL/d2.bias = dL/dlinear" in d and "2.2.bias" not in d
    assert "@ 2.weightᵀ + 2.bias" in d
    assert "^2\n" in d and "· (2 · sub" in d


def test_debugger_names_the_inplace_op_and_the_line_that_changed_the_graph():
    # an in-place op under no_grad keeps its site as a graph.Mark: the message reads its line
    m = MLP()
    loss = mse(m(wb.randn(8, 3)), wb.randn(8, 2))
    dbg = wb.viz.debug(loss, m, display=False)
    w = list(m.parameters())[-2]  # the last layer's weight: saved for its input's gradient
    with wb.no_grad():
        w.mul_(0.5)
    line = test_debugger_names_the_inplace_op_and_the_line_that_changed_the_graph.__code__.co_firstlineno + 7
    with pytest.raises(RuntimeError) as e:
        dbg.continue_()
    msg = str(e.value)
    assert "changed by code run after its forward pass" in msg
    assert re.search(rf"was modified in place by mul_ at \S*test_classroom_nan\.py:{line} in test_debugger", msg), msg
