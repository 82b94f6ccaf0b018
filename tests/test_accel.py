"""The compiled core (workbench/_accel.py): listed modules import compiled where a build of their current source
exists, as Python otherwise; compiled and Python runs give the same bits; NumPy's floating-point warnings stay
silent and the user's line is still found with no frames of workbench's own."""
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import warnings

import pytest

import workbench as wb
import workbench._accel as accel
from workbench.autograd import graph

# what `make setup` builds: with Cython and a C compiler here, the listed modules must run compiled
CAN_BUILD = importlib.util.find_spec("Cython") is not None and shutil.which(
    (sysconfig.get_config_var("CC") or "cc").split()[0]) is not None

PROGRAM = r"""
import hashlib, json, sys
import numpy as np
import workbench as wb
import workbench._accel as accel
wb.manual_seed(0)
net = wb.nn.Sequential(wb.nn.Linear(8, 16), wb.nn.ReLU(), wb.nn.Linear(16, 3))
opt = wb.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
x = wb.randn(5, 8)
y = wb.tensor([0, 1, 2, 1, 0])
for _ in range(3):
    opt.zero_grad()
    loss = wb.nn.functional.cross_entropy(net(x).reshape(-1, 3), y)
    loss.backward()
    opt.step()
a = wb.randn(4, 4, requires_grad=True)
b = wb.randn(4, 4, requires_grad=True)
(((a * b + a).tanh() * b - a).sin().exp().sum()).backward()
h = hashlib.sha256()
for t in [*net.parameters(), *(p.grad for p in net.parameters()), a.grad, b.grad, loss]:
    h.update(t.detach().numpy().tobytes())
print(json.dumps({"hash": h.hexdigest(), "compiled": sorted(accel.compiled())}))
"""


def _run(**env):
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return json.loads(out.stdout)


def test_compiled_and_python_give_the_same_bits():
    fast, plain = _run(), _run(WORKBENCH_ACCEL="0")
    assert plain["compiled"] == []
    if CAN_BUILD and os.environ.get("WORKBENCH_ACCEL", "1") != "0":
        assert "workbench.autograd.function" in fast["compiled"], "make setup builds the compiled core"
    assert fast["hash"] == plain["hash"]


@pytest.mark.skipif(not CAN_BUILD or os.environ.get("WORKBENCH_ACCEL") == "0", reason="no compiled core here")
def test_the_listed_modules_imported_here_run_compiled():
    loaded = [n for n in accel.MODULES if n in sys.modules]
    assert loaded and sorted(accel.compiled()) == sorted(loaded)
    assert type(wb.autograd.function._record_raw).__name__ == "cython_function_or_method"


def test_a_changed_source_is_never_served_an_old_build(tmp_path, monkeypatch):
    name = "workbench.autograd.engine"
    src = open(accel.source_path(name), "rb").read()
    assert accel.artifact(name, src) != accel.artifact(name, src + b"\n# edited\n")
    monkeypatch.setenv("WORKBENCH_ACCEL_DIR", str(tmp_path))  # an empty cache: nothing to serve
    assert accel._Finder().find_spec(name) is None
    # a file under the current source's name is served; any other module is left to the usual finders
    open(accel.artifact(name, src), "wb").close()
    assert accel._Finder().find_spec(name).origin == accel.artifact(name, src)
    assert accel._Finder().find_spec("workbench.viz") is None


def test_numpy_floating_point_warnings_stay_silent():
    # PyTorch warns of none of these; compiled code has no frame of its own, so NumPy must be called from one
    x = wb.tensor([0.0, 1.0, 3e38])
    leaf = wb.tensor([3e38, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"workbench(\.|$)")  # import's
        x / 0, x.log(), wb.log(x), x * 10, -x / x  # the operator and unary fast paths (no graph)
        (leaf * 3e38).sum().backward()
        (leaf * 3e38).sum().backward()  # .grad accumulates past float32's range: inf
        (leaf.log() * leaf - leaf / 0).sum().backward()
    assert not leaf.grad.isfinite().any()


def test_the_users_line_is_found_without_workbench_frames():
    graph.set_trace_level(2)
    try:
        y = wb.ones(2, requires_grad=True) * 3  # the line the node must name
    finally:
        graph.set_trace_level(1)
    file, line, fn = y.grad_fn.site
    assert file == __file__ and fn == "test_the_users_line_is_found_without_workbench_frames"
    assert "the line the node must name" in open(file).read().splitlines()[line - 1]


def test_tracebacks_name_the_source_files():
    with pytest.raises(RuntimeError) as e:
        wb.ones(2, requires_grad=True).sum().backward(wb.ones(3))
    files = {os.path.basename(str(t.path)) for t in e.traceback}
    assert files & {"engine.py", "backprop.py", "tensor.py", "_core.py"}, files



def test_the_source_stays_readable():
    # inspect.getsource on a compiled module or class shows its Python source (a compiled function is not a
    # Python function to inspect: WORKBENCH_ACCEL=0 shows its source too)
    from workbench.autograd import engine

    assert engine.__file__ == accel.source_path("workbench.autograd.engine")
    assert "def iter_backward(" in inspect.getsource(engine)
    assert inspect.getsource(wb.Tensor).startswith("class Tensor")
    assert inspect.getsource(wb.nn.Module).startswith("class Module")


def test_prune_keeps_the_newest_builds_of_a_module_only(tmp_path, monkeypatch):
    from workbench import _accel_build

    monkeypatch.setenv("WORKBENCH_ACCEL_DIR", str(tmp_path))
    name = "workbench.autograd.engine"
    paths = [accel.artifact(name, b"version %d" % i) for i in range(6)]
    other = accel.artifact("workbench.autograd.function", b"x")
    for i, p in enumerate([*paths, other]):
        open(p, "wb").close()
        os.utime(p, (1000 + i, 1000 + i))
    open(tmp_path / "unrelated.txt", "w").close()
    _accel_build.prune(name, keep=4)
    assert sorted(accel.builds(name)) == sorted(paths[2:])
    assert os.path.exists(other) and (tmp_path / "unrelated.txt").exists()
