"""The viz features on the real workbench.nn / optim / utils.data stack (skipped until they exist)."""
import numpy as np
import pytest

import workbench as wb

nn = pytest.importorskip("workbench.nn")
if not hasattr(nn, "Linear"):
    pytest.skip("workbench.nn.Linear not available yet", allow_module_level=True)


def _model():
    wb.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_snapshot_of_an_nn_model(validate):
    model = _model()
    x, y = wb.randn(5, 4), wb.randint(0, 3, (5,))
    with wb.viz.record():
        loss = nn.functional.cross_entropy(model(x), y)
    d = validate(wb.viz.snapshot(loss, model, trace=True))
    params = {n["param"] for n in d["nodes"] if n["kind"] == "param"}
    assert params == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert {"0", "1", "2"} <= {n["scope"] for n in d["nodes"]}
    assert [m["path"] for m in d["modules"]] == ["0", "1", "2"]
    assert {n["name"] for n in d["nodes"] if n["kind"] == "input"} >= {"x"}
    ref = _model()
    nn.functional.cross_entropy(ref(x), y).backward()
    for (_, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_debugger_on_an_nn_model_equals_backward():
    model = _model()
    x, y = wb.randn(5, 4), wb.randint(0, 3, (5,))
    loss = nn.functional.cross_entropy(model(x), y)
    dbg = wb.viz.debug(loss, model, display=False)
    while dbg.stepper.step() is not None:
        pass
    ref = _model()
    nn.functional.cross_entropy(ref(x), y).backward()
    for (_, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_monitor_with_dataloader_tqdm_and_an_optimizer():
    from workbench.utils.data import DataLoader, TensorDataset

    model = _model()
    data = TensorDataset(wb.randn(64, 4), wb.randint(0, 3, (64,)))
    opt = wb.optim.SGD(model.parameters(), lr=0.1)
    mon = wb.viz.watch(model, display=False, detail_every=1)
    try:
        from tqdm import tqdm
    except ImportError:
        def tqdm(it, **kw):
            return it
    for xb, yb in tqdm(DataLoader(data, batch_size=16, shuffle=True), disable=True):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        mon.log(loss=loss)
    mon.detach()
    h = mon.history
    assert len(h["step"]) == 4 and mon.layers == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert np.isfinite(h["loss"]).all() and (h["grad_norm/0.weight"] > 0).all()
    assert np.isfinite(h["update_ratio/2.weight"][1:]).all()
    assert "dead_relu/1" in h
