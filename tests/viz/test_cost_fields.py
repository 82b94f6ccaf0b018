"""The snapshot's cost fields: saved_bytes/saved_tensors against ctx.saved_tensors, kept after backward
freed them; FLOPs per node; the per-module sums."""
import workbench as wb
import workbench.nn.functional as F
from workbench.autograd.graph import walk


def storage_bytes(tensors):
    """The oracle: nbytes of the saved tensors' storages, a storage shared by several views counted once."""
    seen = {}
    for t in tensors:
        if t is not None:
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def ops_by_node(d):
    return [n for n in d["nodes"] if n["kind"] in ("op", "output")]


def _graph():
    x = wb.randn(4, 3)
    w1, b1 = wb.randn(5, 3, requires_grad=True), wb.randn(5, requires_grad=True)
    h = F.linear(x, w1, b1).tanh()
    q = h.reshape(1, 1, 4, 5)
    a = F.scaled_dot_product_attention(q, q, q)
    y = F.softmax(a.reshape(4, 5) @ w1, dim=1)
    return F.layer_norm(y, (3,)).pow(2).sum()


def test_saved_bytes_is_the_storage_of_ctx_saved_tensors(validate):
    loss = _graph()
    nodes = sorted((n for n in walk([loss.grad_fn]) if n.__class__.__name__ != "AccumulateGrad"),
                   key=lambda n: n._seq)
    oracle = [storage_bytes(n.saved_tensors) for n in nodes]
    d = validate(wb.viz.snapshot(loss))
    got = [n["saved_bytes"] for n in ops_by_node(d)]
    assert got == oracle and sum(got) > 0
    for n, rec in zip(nodes, ops_by_node(d)):
        saved = [t for t in n.saved_tensors if t is not None]
        assert [s["bytes"] for s in rec["saved_tensors"]] == [t.nbytes for t in saved]
        assert [s["shape"] for s in rec["saved_tensors"]] == [list(t.shape) for t in saved]


def test_views_of_one_storage_count_once():
    class Keep(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, x[1:], x.t())
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    x = wb.randn(6, 4, requires_grad=True)
    y = Keep.apply(x)
    (rec,) = [n for n in wb.viz.snapshot(y).to_dict()["nodes"] if n["kind"] != "leaf"]
    assert rec["saved_bytes"] == x.nbytes == storage_bytes(y.grad_fn.saved_tensors) == 96
    assert [s["bytes"] for s in rec["saved_tensors"]] == [96, 80, 96]
    assert rec["flops"] is None  # a user's Function: unknown, not 0


def test_cost_fields_survive_backward(validate):
    loss = _graph()
    before = validate(wb.viz.snapshot(loss))
    loss.backward()
    after = validate(wb.viz.snapshot(loss))
    keys = ("saved_bytes", "saved_tensors", "saved", "flops")
    assert [[n[k] for k in keys] for n in after["nodes"]] == [[n[k] for k in keys] for n in before["nodes"]]
    assert all(n["forward_us"] is None and n["backward_us"] is None for n in after["nodes"])


def test_module_sums(validate):
    m = wb.nn.Sequential(wb.nn.Linear(3, 8), wb.nn.ReLU(), wb.nn.Sequential(wb.nn.Linear(8, 2), wb.nn.Tanh()))
    loss = m(wb.randn(5, 3)).sum()
    loss.backward()
    d = validate(wb.viz.snapshot(loss, m))
    mods = {x["path"]: x for x in d["modules"]}
    assert mods["0"]["flops"] == 2 * 5 * 3 * 8 and mods["1"]["flops"] == 40
    assert mods["2"]["flops"] == mods["2.0"]["flops"] + mods["2.1"]["flops"] == 2 * 5 * 8 * 2 + 10
    inner = [n for n in d["nodes"] if n["scope"].startswith("2")]
    assert mods["2"]["saved_bytes"] == sum(n["saved_bytes"] for n in inner) > 0
    assert mods["2"]["forward_us"] is None
