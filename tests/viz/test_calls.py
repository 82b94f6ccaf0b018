"""Module calls in the snapshot: every call its own group, repeated calls a series, RNN parts by layer then step."""
from collections import Counter

import repeated
import workbench as wb
from workbench.viz import align
from workbench.viz.stepper import Stepper


class Cell(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = wb.nn.Linear(4, 4)

    def forward(self, h):
        return self.lin(h).tanh()


class Loop(wb.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.cell, self.n = Cell(), n

    def forward(self, h):
        for _ in range(self.n):
            h = self.cell(h)
        return h


def _calls(d, scope):
    return Counter(tuple(n["calls"]) for n in d["nodes"] if n["scope"] == scope and n["kind"] == "op")


def test_each_call_of_a_module_in_a_loop_is_numbered():
    loop = Loop(5)
    d = wb.viz.snapshot(loop(wb.randn(2, 4)).sum(), loop).to_dict()
    per_call = _calls(d, "cell.lin")
    assert len(per_call) == 5 and len({c[0] for c in per_call}) == 5  # five calls of cell, each with its lin call
    assert set(per_call.values()) == {1}  # one linear node per call
    assert all(n.get("calls") is None for n in d["nodes"] if n["kind"] == "param")


def test_gru_groups_by_layer_then_time_step():
    gru = wb.nn.GRU(3, 4, num_layers=2)
    out, _ = gru(wb.randn(6, 2, 3))
    d = wb.viz.snapshot(out.pow(2).mean(), gru).to_dict()
    scopes = {n["scope"] for n in d["nodes"] if n["kind"] == "op"}
    assert {"layer0", "layer0.step", "layer1", "layer1.step"} <= scopes
    for layer in ("layer0", "layer1"):
        steps = _calls(d, f"{layer}.step")
        assert len(steps) == 6 and len({c[0] for c in steps}) == 1  # 6 steps inside one layer call


def test_constants_made_inside_a_composite_stay_inside_it():
    pool = wb.nn.AdaptiveAvgPool2d((2, 2))
    net = wb.nn.Sequential(wb.nn.Conv2d(1, 2, 3), pool)
    x = wb.randn(1, 1, 7, 7)
    with wb.viz.record():
        loss = net(x).sum()
    d = wb.viz.snapshot(loss, net).to_dict()
    inputs = [n for n in d["nodes"] if n["kind"] == "input"]
    assert [n["name"] for n in inputs if n["scope"] == ""] == ["x"]  # the user's only input
    inside = [n for n in inputs if n["scope"]]
    assert inside and all(n["name"] == "constant" and n["group"].startswith("adaptive_avg_pool") for n in inside)


def test_boxes_number_each_call_and_keep_shared_parameters_once():
    loss, m = repeated.gru_loop(8)
    d = wb.viz.snapshot(loss, m).to_dict()
    chains = align.boxes(d)
    calls = {c[-1] for n, c in zip(d["nodes"], chains) if n["kind"] == "op" and n["scope"] == "cell"}
    assert sorted(b[3] for b in calls) == [f"cell · call {k}/8" for k in range(1, 9)]
    assert {c[0] for n, c in zip(d["nodes"], chains) if n["scope"] == "cell"} == {("s:cell", "series", "cell", "cell ×8")}
    # each parameter is one node (one id, its path as its label) that feeds every call
    params = [n for n in d["nodes"] if n["kind"] == "param" and n["scope"] == "cell"]
    assert sorted(n["param"] for n in params) == ["cell.bias_hh", "cell.bias_ih", "cell.weight_hh", "cell.weight_ih"]
    box = {n["id"]: c[-1][0] for n, c in zip(d["nodes"], chains) if c}
    w = next(n["id"] for n in params if n["param"] == "cell.weight_hh")
    assert len({box[e["target"]] for e in d["edges"] if e["source"] == w}) == 8
    assert all(c == [("s:cell", "series", "cell", "cell ×8")] for n, c in zip(d["nodes"], chains) if n in params)


def test_a_tied_weight_is_one_parameter_fed_to_both_layers():
    loss, m = repeated.tied()
    d = wb.viz.snapshot(loss, m).to_dict()
    params = [n for n in d["nodes"] if n["kind"] == "param"]
    assert sorted(n["param"] for n in params) == ["emb.weight", "mix.bias", "mix.weight"]
    emb = next(n["id"] for n in params if n["param"] == "emb.weight")
    users = {n["id"]: n["scope"] for n in d["nodes"]}
    assert sorted(users[e["target"]] for e in d["edges"] if e["source"] == emb) == ["emb", "out"]
    labels = {c[-1][3] for n, c in zip(d["nodes"], align.boxes(d)) if n["scope"] == "mix" and n["kind"] == "op"}
    assert labels == {"mix · call 1/2", "mix · call 2/2"}


def test_step_over_inside_one_call_stops_at_the_end_of_that_call():
    loss, m = repeated.gru_loop(4)
    st = Stepper(loss, m)
    while not st.scopes[st.ids[st.peek()]].startswith("cell#"):  # mean, pow, head: to the last call of cell
        st.step()
    st.step()
    here = st.scopes[st.current.node_id]
    ran = st.step_over()
    assert ran and {st.scopes[r["node"]] for r in ran} == {here}
    nxt = st.scopes[st.ids[st.peek()]]
    assert nxt != here and nxt.startswith("cell#")  # the call before it, next in backward
