"""Snapshots: tape.v1 schema for every op family, names, scopes, cuts, summaries, trace, exports."""
import json

import numpy as np
import pytest

import workbench as wb
from models import MLP, mse

MIME = "application/vnd.workbench.tape.v1+json"


def _t(*shape, rg=True, lo=0.5):
    g = np.random.default_rng(sum(shape) + len(shape))
    return wb.tensor(g.uniform(lo, 2.0, size=shape).astype("float32"), requires_grad=rg)


def _has(*names):
    return all(hasattr(wb, n) for n in names)


# op family -> a small graph using many of its ops; each returns a loss
FAMILIES = {
    "elementwise": lambda: (((_t(3) + _t(3)) * _t(3) - _t(3) / _t(3)) ** 2 + wb.exp(_t(3)) + wb.log(_t(3))
                            + wb.sqrt(_t(3)) + wb.tanh(_t(3)) + wb.sigmoid(_t(3)) + wb.sin(_t(3)) + wb.cos(_t(3))
                            + wb.abs(_t(3)) + wb.relu(_t(3) - 1) + -_t(3)).sum(),
    "compare_select": lambda: (wb.where(_t(4, rg=False) > 1, _t(4), _t(4)) + wb.maximum(_t(4), _t(4))
                               + wb.minimum(_t(4), _t(4)) + wb.clamp(_t(4), 0.7, 1.5)).sum(),
    "reduce": lambda: _t(2, 3).sum(0).mean() + _t(2, 3).mean(1).sum() + _t(2, 3).sum(1, keepdim=True).sum(),
    "shape": lambda: (_t(2, 3).reshape(3, 2).t().transpose(0, 1).permute(1, 0).unsqueeze(0).squeeze(0)[1:, :]
                      .expand(2, 1, 3).sum() + _t(4).view(2, 2)[0].sum()),
    "linalg": lambda: (_t(2, 3) @ _t(3, 4)).sum() + wb.matmul(_t(3), _t(3, 2)).sum(),
    "convert": lambda: (_t(3).to(wb.float64).clone().contiguous() * 2).sum(),
}
if _has("softmax"):
    FAMILIES["softmax"] = lambda: (wb.softmax(_t(2, 3), -1) * _t(2, 3)).sum()
if _has("cat", "stack", "split"):
    FAMILIES["join_split"] = lambda: (wb.cat([_t(2), _t(3)]).sum() + wb.stack([_t(2), _t(2)]).sum()
                                      + wb.split(_t(4), 2)[1].sum())
if _has("cumsum", "prod", "var", "logsumexp"):
    FAMILIES["reduce_more"] = lambda: (wb.cumsum(_t(3), 0).sum() + wb.prod(_t(3)) + wb.var(_t(4))
                                       + wb.logsumexp(_t(2, 3), 1).sum())
if _has("gather", "index_select"):
    FAMILIES["index"] = lambda: (wb.gather(_t(2, 3), 1, wb.tensor([[0, 2], [1, 1]])).sum()
                                 + wb.index_select(_t(3, 2), 0, wb.tensor([2, 0])).sum())
if _has("einsum"):
    FAMILIES["einsum"] = lambda: wb.einsum("ij,jk->ik", _t(2, 3), _t(3, 2)).sum()


def _nn_family(name):
    F = getattr(getattr(wb, "nn", None), "functional", None)

    def make():
        if name == "conv":
            return F.max_pool2d(F.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), _t(3)), 2).sum()
        if name == "norm":
            return (F.layer_norm(_t(2, 4), (4,), _t(4), _t(4)) * _t(2, 4)).sum()
        if name == "losses":
            return F.cross_entropy(_t(4, 3), wb.tensor([0, 2, 1, 0])) + F.mse_loss(_t(3), _t(3, rg=False))
        if name == "activations":
            return (F.gelu(_t(3)) + F.log_softmax(_t(3), 0) + F.linear(_t(2, 3), _t(3, 3), _t(3))[0]).sum()
        if name == "attention":
            q = _t(1, 2, 4)
            return F.scaled_dot_product_attention(q, _t(1, 2, 4), _t(1, 2, 4)).sum()
    return make


_NN = {"conv": ("conv2d", "max_pool2d"), "norm": ("layer_norm",), "losses": ("cross_entropy", "mse_loss"),
       "activations": ("gelu", "log_softmax", "linear"), "attention": ("scaled_dot_product_attention",)}
_F = getattr(getattr(wb, "nn", None), "functional", None)
for _name, _needs in _NN.items():
    if _F is not None and all(hasattr(_F, n) for n in _needs):
        FAMILIES["nn_" + _name] = _nn_family(_name)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_op_family_validates(family, validate):
    with wb.viz.record():
        loss = FAMILIES[family]()
    d = validate(wb.viz.snapshot(loss, trace=True))
    assert d["roots"] and d["trace"]["steps"]
    ops = {n["op"] for n in d["nodes"] if n["kind"] in ("op", "output")}
    assert len(ops) >= 2
    for n in d["nodes"]:
        assert n["site"] is not None or n["kind"] in ("leaf", "param", "input", "cut")
        if n["kind"] in ("op", "output"):  # values only while someone holds the tensor (weak refs)
            assert n["grad"] is not None, n


def test_mlp_names_scopes_modules_and_values(validate):
    m = MLP()
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    with wb.viz.record():
        loss = mse(m(x), y)
    d = validate(wb.viz.snapshot(loss, m))
    params = {n["param"]: n for n in d["nodes"] if n["kind"] == "param"}
    assert set(params) == {"encoder.0.weight", "encoder.0.bias", "head.weight", "head.bias"}
    assert params["encoder.0.weight"]["scope"] == "encoder.0"
    assert params["head.bias"]["name"] == "bias"
    inputs = {n["name"] for n in d["nodes"] if n["kind"] == "input"}
    assert inputs == {"x", "y"}
    scopes = {n["scope"] for n in d["nodes"] if n["kind"] == "op"}
    assert {"encoder.0", "encoder.1", "head"} <= scopes
    assert [{k: m[k] for k in ("path", "type", "parent")} for m in d["modules"]] == [{"path": "encoder", "type": "Sequential", "parent": None},
                            {"path": "encoder.0", "type": "Linear", "parent": "encoder"},
                            {"path": "encoder.1", "type": "ReLU", "parent": "encoder"},
                            {"path": "head", "type": "Linear", "parent": None}]
    relu = next(n for n in d["nodes"] if n["op"] == "relu")
    assert relu["saved"] == [{"name": "result", "shape": [8, 4], "dtype": "float32"}]
    root = next(n for n in d["nodes"] if n["id"] == d["roots"][0])
    assert root["kind"] == "output" and root["value"]["values"] == [pytest.approx(loss.item(), rel=1e-6)]
    assert root["grad"] is None  # no backward yet
    loss.backward()
    d2 = validate(wb.viz.snapshot(loss, m))
    w = next(n for n in d2["nodes"] if n["param"] == "head.weight")
    assert w["grad"]["norm"] == pytest.approx(float(np.linalg.norm(m.head.weight.grad.numpy())), rel=1e-5)


def test_summary_numbers():
    from workbench.viz.summary import summarize

    a = np.array([1.0, -2.0, np.nan, np.inf, 3.0, -np.inf], dtype="float32")
    s = summarize(wb.tensor(a))
    fin = np.array([1.0, -2.0, 3.0])
    assert (s["nan"], s["inf"], s["numel"]) == (1, 2, 6)
    assert s["min"] == -2.0 and s["max"] == 3.0
    assert s["mean"] == pytest.approx(fin.mean()) and s["std"] == pytest.approx(fin.std())
    assert s["norm"] == pytest.approx(np.linalg.norm(fin))
    assert s["values"] == [1.0, -2.0, "NaN", "Infinity", 3.0, "-Infinity"]
    assert sum(s["hist"]["counts"]) == 3 and len(s["hist"]["counts"]) == 16
    big = summarize(wb.arange(100.0))
    assert big["values"] is None and big["hist"]["counts"] == list(np.histogram(np.arange(100.0), 16)[0])
    allnan = summarize(wb.tensor([float("nan")] * 2))
    assert allnan["min"] is None and allnan["hist"] is None
    assert summarize(wb.tensor([True, False]))["hist"] is None


def test_summaries_on_the_fake_gpu(fake_cuda, validate):
    w = wb.tensor([1.0, -2.0], device="cuda", requires_grad=True)
    loss = (w * w).sum()
    d = validate(wb.viz.snapshot(loss, trace=True))
    leaf = next(n for n in d["nodes"] if n["kind"] == "leaf")
    assert leaf["device"] == "cuda:0" and leaf["grad"]["values"] == [2.0, -4.0]


def test_cuts_detach_and_numpy_round_trip(validate):
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    v = wb.tensor([3.0, 4.0], requires_grad=True)
    with wb.viz.record():
        h = w * 2
        hd = h.detach()
        back = wb.tensor(h.detach().numpy())
        loss = (hd * v).sum() + (back * v).sum()
    d = validate(wb.viz.snapshot(loss))
    cuts = {n["cut"]["reason"]: n for n in d["nodes"] if n["kind"] == "cut"}
    assert set(cuts) == {"detach", "numpy"}
    assert cuts["detach"]["cut"]["detail"].startswith("h.detach() at ")
    assert "test_snapshot.py" in cuts["detach"]["cut"]["detail"]
    # the cut hangs off the node it was cut from, which is drawn too
    mul = next(n for n in d["nodes"] if n["op"] == "mul" and n["shape"] == [2] and
               any(e["source"] == n["id"] and e["target"] == cuts["detach"]["id"] for e in d["edges"]))
    assert mul
    assert any(e["target"] == cuts["numpy"]["id"] for e in d["edges"])


def test_without_record_only_the_backward_graph(validate):
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * wb.tensor([3.0, 4.0])).sum()
    d = validate(wb.viz.snapshot(loss))
    assert [n["kind"] for n in d["nodes"]] == ["leaf", "op", "output"]
    assert d["nodes"][0]["name"] == "w"


def test_trace_equals_backward_and_flags_first_nan(validate):
    x = wb.tensor([1.0, 0.0, 2.0], requires_grad=True)
    with wb.viz.trace():
        loss = wb.log(x * x).sum()
    d = validate(wb.viz.snapshot(loss, trace=True))
    flagged = [s for s in d["trace"]["steps"] if s["breakpoint"]]
    assert len(flagged) == 1
    assert flagged[0]["node"] == next(n["id"] for n in d["nodes"] if n["op"] == "log")
    assert "Inf" in flagged[0]["breakpoint"]["reason"] and "test_snapshot.py" in flagged[0]["breakpoint"]["reason"]
    x2 = wb.tensor([1.0, 0.0, 2.0], requires_grad=True)
    wb.log(x2 * x2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())


def test_trace_frees_the_graph_unless_retained():
    w = wb.tensor(2.0, requires_grad=True)
    loss = w * w
    wb.viz.snapshot(loss, trace=True)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    loss2 = w * w
    wb.viz.snapshot(loss2, trace=True, retain_graph=True)
    loss2.backward()


def test_mimebundle_save_and_errors(tmp_path, validate):
    from xml.etree import ElementTree

    w = wb.tensor([1.0, 2.0], requires_grad=True)
    snap = wb.viz.snapshot((w * w).sum(), trace=True, title="a </script> title")
    b = snap._repr_mimebundle_()
    assert set(b) == {MIME, "text/html", "text/plain"}
    validate(b[MIME])
    ElementTree.fromstring(b["text/html"])
    assert "3 nodes" in b["text/plain"]
    j = snap.save(tmp_path / "t.json")
    assert json.loads(open(j).read())["title"] == "a </script> title"
    ElementTree.parse(snap.save(tmp_path / "t.svg"))
    try:
        html = open(snap.save(tmp_path / "t.html")).read()
    except FileNotFoundError:
        pytest.skip("browser bundles not built")
    payload = html.split('data-height="640">', 1)[1].split("</script>", 1)[0]
    assert json.loads(payload)["title"] == "a </script> title"
    assert html.count("</script>") == 2 and "<\\/script" in html
    with pytest.raises(ValueError, match="unknown file type"):
        snap.save(tmp_path / "t.png")
    with pytest.raises(RuntimeError, match="none of the given tensors has a graph"):
        wb.viz.snapshot(wb.ones(2))
    with pytest.raises(TypeError, match="expects a Tensor"):
        wb.viz.snapshot([1, 2])


def test_recording_does_not_read_values_and_holds_nothing():
    import gc
    import weakref

    with wb.viz.record() as rec:
        w = wb.ones(3, requires_grad=True)
        h = w * 2
        ref = weakref.ref(h)
        loss = h.sum()
    assert len(rec) == 2
    del h, loss
    gc.collect()
    assert ref() is None and len(rec) == 0
    assert not wb.autograd.graph.LISTENERS and wb.autograd.graph.CUTS[0] is None
