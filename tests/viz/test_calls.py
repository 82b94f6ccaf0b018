"""Module calls in the snapshot: every call its own group, repeated calls a series, RNN parts by layer then step."""
from collections import Counter

import workbench as wb


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
