"""Custom ops under workbench.compile: a training step with one gives eager's losses; an op whose kernel is tensor
ops replays, one whose kernel reads arrays on the host (NumPy, C++) runs eagerly with the reason explained."""
import numpy as np
import pytest

import workbench as wb
from workbench import Tensor
from workbench.library import custom_op

pytestmark = pytest.mark.skipif(not hasattr(wb, "compile"), reason="workbench.compile is not on this branch")


@custom_op("wbcomp::swish_ops", mutates_args=())
def swish_ops(x: Tensor) -> Tensor:
    return x * wb.sigmoid(x)


@custom_op("wbcomp::swish_np", mutates_args=())
def swish_np(x: Tensor) -> Tensor:
    xa = x.numpy()
    return wb.from_numpy(xa / (1 + np.exp(-xa)))


def _backward(ctx, g):
    (x,) = ctx.saved_tensors
    s = wb.sigmoid(x)
    return g * (s + x * s * (1 - s))


for _op in (swish_ops, swish_np):
    _op.register_autograd(_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))


class _Act(wb.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(x)


def _losses(op, compiled):
    wb.manual_seed(0)
    net = wb.nn.Sequential(wb.nn.Linear(4, 8), _Act(op), wb.nn.Linear(8, 1))
    opt = wb.optim.SGD(net.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = wb.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = wb.compile(step) if compiled else step
    x, y = wb.randn(16, 4), wb.randn(16, 1)
    return [fn(x, y).item() for _ in range(4)], fn


@pytest.mark.parametrize("op", [swish_ops, swish_np], ids=["tensor-op kernel", "numpy kernel"])
def test_compiled_training_step_with_a_custom_op_matches_eager(op):
    eager, _ = _losses(op, False)
    compiled, fn = _losses(op, True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    report = wb.compiler.explain(fn)
    if op is swish_ops:
        assert report.replays == 3
    else:
        assert "numpy()" in str(report)
