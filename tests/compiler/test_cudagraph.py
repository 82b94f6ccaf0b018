"""mode="reduce-overhead": replays captured in a CUDA graph (on the fake cupy's stream capture, and on a real GPU
under make test-gpu), and the fake's capture itself: recorded not run, replayed on fixed arrays, refusals."""
import numpy as np
import pytest

import workbench as wb
from workbench.testing import fake_cupy

nn = wb.nn


@pytest.fixture(params=["fake_cuda", pytest.param("cuda", marks=pytest.mark.gpu)])
def cuda(request):
    if request.param == "fake_cuda":
        with fake_cupy.installed():
            yield "fake"
    else:
        yield "real"


def _same(a, b, kind):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if kind == "fake":  # the same NumPy functions in the same order
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _graph(compiled, k=0):
    return wb.compiler.explain(compiled).programs[k].cuda_graph


def test_fake_capture_records_kernels_and_launch_replays_them_on_fixed_arrays():
    cp = fake_cupy.module()
    a, b = cp.asarray(np.arange(4.0)), cp.ones(4)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        assert s.is_capturing()
        c = a * 2 + b
        total = c.sum()
        middle = c[1:3]  # a view: no kernel
        a32 = a.astype(cp.float32)
        b[0] = 5.0  # a write: recorded, not done
        noise = cp.random.random_sample(3)
        g = s.end_capture()
    assert np.isnan(c.get()).all() and b.get()[0] == 1.0  # nothing ran while capturing
    g.launch(stream=cp.cuda.get_current_stream())
    assert c.get().tolist() == [1.0, 3.0, 5.0, 7.0] and total.get() == 16.0 and middle.get().tolist() == [3.0, 5.0]
    assert a32.dtype == np.float32 and b.get()[0] == 5.0
    first = noise.get()
    a[...] = 10.0  # the next launch reads the arrays as they are then
    g.launch()
    assert c.get().tolist() == [25.0, 21.0, 21.0, 21.0] and total.get() == 88.0
    assert noise.get().tolist() == first.tolist()  # a captured draw repeats its numbers
    assert g.allocs == 5 and g.launches == 2  # allocated from the default pool: no private allocator was set


@pytest.mark.parametrize("what", ["get", "item", "bool", "sync", "host copy", "mask"])
def test_fake_capture_refuses_synchronisation_and_invalidates_the_capture(what):
    cp = fake_cupy.module()
    a = cp.ones(4)
    s = cp.cuda.Stream()
    act = {"get": lambda: a.get(), "item": lambda: (a * 2).sum().item(), "bool": lambda: bool(a[0]),
           "sync": s.synchronize, "host copy": lambda: cp.asarray(np.ones(3)), "mask": lambda: a[a > 0]}[what]
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError, match="cudaErrorStreamCaptureUnsupported"):
            act()
        with pytest.raises(RuntimeError, match="cudaErrorStreamCaptureInvalidated"):
            s.end_capture()
    assert not s.is_capturing()


def test_fake_capture_refuses_what_cuda_refuses():
    cp = fake_cupy.module()
    with pytest.raises(RuntimeError, match="default \\(legacy\\) stream"):
        cp.cuda.Stream.null.begin_capture()
    s, other = cp.cuda.Stream(), cp.cuda.Stream()
    with pytest.raises(RuntimeError, match="not capturing"):
        s.end_capture()
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError, match="already capturing"):
            s.begin_capture()
        g = None
        with other:
            with pytest.raises(RuntimeError, match="cudaErrorStreamCaptureImplicit"):
                cp.ones(2) + 1
        with pytest.raises(RuntimeError, match="Invalidated"):
            s.end_capture()
    with s:
        s.begin_capture()
        g = s.end_capture()
        s.begin_capture()
        with pytest.raises(RuntimeError, match="launched into a capture"):
            g.launch()
        s.end_capture()


def test_reduce_overhead_captures_a_forward_and_launches_it(cuda):
    wb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).to("cuda")
    ref = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).to("cuda")
    ref.load_state_dict(model.state_dict())
    cm = wb.compile(model, mode="reduce-overhead")
    outs = []
    with wb.no_grad():
        for i in range(6):
            x = wb.randn(5, 4).to("cuda")  # new values each call: copied into the graph's input buffer
            y = cm(x)
            _same(y, ref(x), cuda)
            outs.append((y, y.cpu().numpy().copy()))
    for y, seen in outs:  # outputs are copies: the next launch does not overwrite them
        np.testing.assert_array_equal(y.cpu().numpy(), seen)
    _same(model[1].running_mean, ref[1].running_mean, cuda)  # the in-place buffer updates are in the graph
    g = _graph(cm)
    assert g.reason is None and g.captures == 1 and g.launches == 4
    if cuda == "fake":
        assert g.graph.allocs == 0  # everything it allocated came from its private pool
    assert "CUDA graph: 1 capture(s), 4 launch(es)" in repr(wb.compiler.explain(cm))


def test_guard_miss_traces_and_a_replaced_parameter_recaptures(cuda):
    wb.manual_seed(0)
    model = nn.Linear(3, 2).to("cuda")
    cm = wb.compile(model, mode="reduce-overhead")
    with wb.no_grad():
        for n in (4, 4, 4, 6, 6, 6):
            x = wb.randn(n, 3).to("cuda")
            _same(cm(x), model(x), cuda)
        assert [_graph(cm, k).captures for k in (0, 1)] == [1, 1]  # a new shape: a new trace, its own graph
        model.weight.data = wb.ones(2, 3).to("cuda")  # a new array: the graph read the old one
        x = wb.randn(6, 3).to("cuda")
        _same(cm(x), model(x), cuda)
        assert _graph(cm, 0).captures == 2


def test_what_a_graph_cannot_repeat_replays_plainly_with_the_reason(cuda):
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).to("cuda")
    cm = wb.compile(model, mode="reduce-overhead")
    x = wb.randn(2, 3).to("cuda")
    with wb.no_grad():
        for _ in range(3):
            cm(x)
    assert "random numbers" in _graph(cm).reason
    model.eval()
    for _ in range(3):
        cm(x).sum().backward()
    assert "backward runs later" in _graph(cm).reason
    opt = wb.optim.SGD(model.parameters(), lr=0.1)

    @wb.compile(mode="reduce-overhead")
    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    for _ in range(3):
        step(x)
    assert "calls Optimizer.zero_grad" in _graph(step).reason

    masked = wb.compile(lambda t: (t * 2)[t > 0].sum() + 1, mode="reduce-overhead")
    t = wb.tensor([1.0, -2.0, 3.0]).to("cuda")
    got = [masked(t).item() for _ in range(3)]
    assert got == [9.0] * 3  # the capture failed (a mask's size is read on the host): a plain replay instead
    e = wb.compiler.explain(masked)
    assert e.reasons == [] and "capturing failed" in _graph(masked).reason


def test_a_batch_read_by_name_replays_plainly_with_the_reason(cuda):
    # a batch the call reads from outside its arguments is read afresh on each replay: a graph would keep
    # reading the first one's buffer, so the program is not captured, and the results follow the new batches
    model = nn.Linear(3, 2).to("cuda")
    held = [wb.randn(4, 3).to("cuda")]
    cm = wb.compile(lambda: model(held[0]).sum(), mode="reduce-overhead")
    with wb.no_grad():
        for _ in range(3):
            held[0] = wb.randn(4, 3).to("cuda")
            _same(cm(), model(held[0]).sum(), cuda)
    assert "by name" in _graph(cm).reason and wb.compiler.explain(cm).traces == 1


def test_cpu_replays_are_not_captured():
    cm = wb.compile(nn.Linear(2, 2), mode="reduce-overhead")
    with wb.no_grad():
        for _ in range(3):
            cm(wb.ones(1, 2))
    assert "runs on the CPU" in _graph(cm).reason
