"""The contract PyTorch scripts rely on around ``torch.compile``: the compiled module as the original (attributes
set through it, hooks on it, copies and pickles), ``torch.compiler``'s helpers (``disable``, ``set_stance``,
``is_compiling``...), ``torch._dynamo``'s names, global module hooks, and ``explain``'s reasons."""
import copy
import io
import pickle

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.nn.modules import module as wb_module

nn = wb.nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.scale = 1.0

    def forward(self, x):
        return self.fc(x) * self.scale


def test_attributes_set_or_deleted_on_the_wrapper_are_the_originals():
    # what PyTorch 2.13's OptimizedModule does (not run here: importing torch._dynamo turns off
    # torch.distributions' argument validation for the whole process, which other tests compare against)
    m = nn.Linear(2, 2)
    cm = wb.compile(m)
    cm.flag = 3
    assert m.flag == 3 and cm.flag == 3
    m.flag = 5
    assert cm.flag == 5
    del cm.flag
    assert not hasattr(m, "flag")
    m = Scaled()
    cm = wb.compile(m)
    x = wb.ones(1, 2)
    cm(x)
    cm.scale = 3.0  # a replay reads the module it traced: the new value reaches it
    assert m.scale == 3.0 and np.array_equal(cm(x).detach().numpy(), (m.fc(x) * 3.0).detach().numpy())
    new = nn.Linear(2, 2)
    cm.fc = new  # a submodule replaced through the wrapper replaces the original's
    assert m.fc is new
    assert sorted(cm.state_dict()) == ["_orig_mod.fc.bias", "_orig_mod.fc.weight"]
    assert np.array_equal(cm(x).detach().numpy(), (new(x) * 3.0).detach().numpy())
    assert "fc" in dir(cm) and "scale" in dir(cm) and "_orig_mod" in dir(cm)


def test_hooks_on_the_wrapper_fire_on_every_call():
    m = nn.Linear(3, 2)
    cm = wb.compile(m)
    log = []
    h = cm.register_forward_hook(lambda mod, args, out: log.append(mod) or out * 0)
    p = cm.register_forward_pre_hook(lambda mod, args: log.append("pre"))
    x = wb.ones(1, 3)
    outs = [cm(x) for _ in range(3)]
    assert log == ["pre", cm] * 3 and all(float(o.abs().sum()) == 0 for o in outs)
    h.remove()
    p.remove()
    assert np.array_equal(cm(x).detach().numpy(), m(x).detach().numpy()) and len(log) == 6


def test_copies_and_pickles_after_calls_compile_the_copy_afresh():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    cm = wb.compile(m)
    x = wb.randn(4, 2)
    for _ in range(3):
        cm(x)
    for c in (copy.deepcopy(cm), pickle.loads(pickle.dumps(cm))):
        assert isinstance(c, wb.compiler.OptimizedModule) and c._orig_mod is not m
        assert wb.compiler.explain(c).traced_calls == 0
        assert np.array_equal(c(x).detach().numpy(), cm(x).detach().numpy())
        assert list(c.state_dict()) == list(cm.state_dict())
    buf = io.BytesIO()
    wb.save(cm, buf)
    buf.seek(0)
    assert np.array_equal(wb.load(buf, weights_only=False)(x).detach().numpy(), cm(x).detach().numpy())
    # a function, and a module compiled in place (Module.compile())
    f = wb.compile(lambda t: t * 2)
    f(x)
    assert np.array_equal(copy.deepcopy(f)(x).numpy(), (x * 2).numpy())
    m2 = copy.deepcopy(m)
    m2.compile()
    m2(x)
    m3 = copy.deepcopy(m2)
    assert np.array_equal(m3(x).detach().numpy(), m2(x).detach().numpy())
    m3[0].weight.data.mul_(2)  # the copy has its own parameters, and its forward reads them
    assert not np.array_equal(m3(x).detach().numpy(), m2(x).detach().numpy())
    assert np.array_equal(pickle.loads(pickle.dumps(m2))(x).detach().numpy(), m2(x).detach().numpy())


def test_compile_on_a_method():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        @wb.compile
        def forward(self, x):
            return self.fc(x).relu()

    a, b = Net(), Net()
    x = wb.randn(3, 2)
    for _ in range(3):
        for n in (a, b):
            assert np.array_equal(n(x).detach().numpy(), n.fc(x).relu().detach().numpy())


def test_is_compiling_is_true_on_every_call_of_a_compiled_function():
    def f(a):
        y = a * 2 if wb.compiler.is_compiling() else a * 3
        if y.sum() > 0:  # a host read: the calls after the trace run eagerly
            y = y + 1
        return y

    cf = wb.compile(f)
    assert [float(cf(wb.ones(1))) for _ in range(3)] == [3.0, 3.0, 3.0]
    assert not wb.compiler.is_compiling() and wb.compiler.is_dynamo_compiling is wb.compiler.is_compiling


def test_disable_keeps_a_helper_out_and_the_call_eager_with_the_reason():
    calls = []

    @wb.compiler.disable(reason="logs to a list")
    def record(x):
        calls.append(float(x.sum()))
        return x

    @wb.compile
    def step(x):
        return record(x * 2) + 1

    for k in range(3):
        assert np.array_equal(step(wb.ones(2) * k).numpy(), (wb.ones(2) * k * 2 + 1).numpy())
    assert calls == [0.0, 4.0, 8.0]
    e = wb.compiler.explain(step)
    assert e.replays == 0 and "record" in e.reasons[0] and "logs to a list" in e.reasons[0]
    m = wb.compiler.disable(nn.Linear(2, 2))
    assert isinstance(m, nn.Linear)
    with pytest.raises(TypeError):
        wb.compiler.disable(lambda: 0, False, "positional reason")


def test_set_stance():
    f = wb.compile(lambda x: x + 1)
    with wb.compiler.set_stance("force_eager"):
        f(wb.ones(2))
    assert wb.compiler.explain(f).traced_calls == 0
    f(wb.ones(2))
    with wb.compiler.set_stance("fail_on_recompile"):
        f(wb.ones(2))  # the trace it has replays
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            f(wb.ones(3))
    with wb.compiler.set_stance("eager_on_recompile"):
        assert np.array_equal(f(wb.ones(4)).numpy(), np.full(4, 2.0, np.float32))
    assert wb.compiler.explain(f).traces == 1
    f(wb.ones(4))
    assert wb.compiler.explain(f).traces == 2
    with pytest.raises(RuntimeError, match="stance"):
        wb.compiler.set_stance("bogus")

    @wb.compiler.set_stance("force_eager")
    def run():
        return f(wb.ones(5))

    run()
    assert wb.compiler.explain(f).traces == 2


def test_compiler_helpers_pytorch_names():
    assert "inductor" in wb.compiler.list_backends() and "eager" not in wb.compiler.list_backends()
    assert "eager" in wb.compiler.list_backends(exclude_tags=())
    g = lambda x: x  # noqa: E731
    assert wb.compiler.allow_in_graph(g) is g and wb.compiler.assume_constant_result(g) is g
    assert wb.compiler.is_exporting() is False


def test_dynamo_names_scripts_use():
    import workbench._dynamo as dyn  # as `import torch._dynamo`
    assert wb._dynamo is dyn and dyn.exc.Unsupported is wb.compiler.Unsupported
    assert dyn.eval_frame.OptimizedModule is wb.compiler.OptimizedModule
    assert isinstance(wb.compile(nn.Linear(1, 1)), wb._dynamo.eval_frame.OptimizedModule)
    with dyn.config.patch(cache_size_limit=2):
        assert dyn.config.recompile_limit == 2
        f = wb.compile(lambda x: x * 2)
        for n in range(1, 5):
            f(wb.ones(n))
        assert wb.compiler.explain(f).traces == 2  # the limit read at call time
    assert dyn.config.recompile_limit == 8
    with pytest.raises(AttributeError):
        dyn.config.patch(no_such_setting=1)
    x = wb.ones(3, 4)
    dyn.mark_dynamic(x, 0)
    dyn.maybe_mark_dynamic(x, 1)
    dyn.mark_static(x)
    with pytest.raises(IndexError):
        dyn.mark_dynamic(x, 2)
    out = dyn.explain(lambda t: (t * 2).sum().item() + 1)(wb.ones(2))
    assert out.graph_count == 0 and out.graph_break_count == 1 and "Python number" in out.break_reasons[0]
    out = dyn.explain(lambda t: (t * 2).sum())(wb.ones(2))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 2) and "Graph Count: 1" in str(out)
    dyn.reset()


def test_suppress_errors_makes_fullgraph_fall_back_instead_of_raising():
    f = wb.compile(lambda t: t * 2 if t.sum() > 0 else t, fullgraph=True)
    with pytest.raises(wb.compiler.Unsupported):
        f(wb.ones(2))
    with wb._dynamo.config.patch(suppress_errors=True):
        assert np.array_equal(f(wb.ones(2)).numpy(), np.full(2, 2.0, np.float32))


def test_global_module_hooks_match_pytorch_and_make_compiled_calls_eager():
    logs = {}
    for lib in (torch, wb):
        lib.manual_seed(0)
        mm = lib.nn.modules.module
        log = logs[lib.__name__] = []
        hs = [mm.register_module_forward_pre_hook(lambda m, a, log=log: log.append(("pre", type(m).__name__))),
              mm.register_module_forward_hook(lambda m, a, o, log=log: log.append(("fwd", type(m).__name__))),
              mm.register_module_full_backward_hook(lambda m, gi, go, log=log: log.append(("bwd", type(m).__name__))),
              mm.register_module_full_backward_pre_hook(lambda m, go, log=log: log.append(("bpre", type(m).__name__)))]
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        net(lib.ones(1, 2, requires_grad=True)).sum().backward()
        for h in hs:
            h.remove()
        net(lib.ones(1, 2))
    assert logs["workbench"] == logs["torch"]
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    cm = wb.compile(net)
    seen = []
    h = wb_module.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
    for _ in range(2):
        cm(wb.ones(1, 2))
    assert seen == ["Linear", "ReLU", "Sequential"] * 2
    h.remove()


def test_explain_names_a_keyword_argument_that_went_missing_and_reset_clears_counts():
    f = wb.compile(lambda x, scale=1.0: x * scale)
    f(wb.ones(2), scale=2.0)
    f(wb.ones(2), scale=2.0)
    f(wb.ones(2))
    assert "kwargs['scale'] was float 2.0, now absent" in repr(wb.compiler.explain(f))
    wb.compiler.reset()
    e = wb.compiler.explain(f)
    assert (e.traces, e.traced_calls, e.replays, e.eager_calls) == (0, 0, 0, 0)


def test_is_compiling_holds_in_the_thread_running_the_compiled_call_only():
    import threading
    seen = []
    started, release = threading.Event(), threading.Event()

    def other():
        started.wait()
        seen.append(wb.compiler.is_compiling())
        release.set()

    def f(x):
        started.set()
        release.wait(5)
        seen.append(wb.compiler.is_compiling())
        return x + 1

    t = threading.Thread(target=other)
    t.start()
    wb.compile(f)(wb.ones(1))
    t.join()
    assert seen == [False, True]
