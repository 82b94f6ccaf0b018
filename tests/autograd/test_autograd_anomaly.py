"""detect_anomaly / set_detect_anomaly: NaN in backward names the forward line; off means no cost."""
import warnings

import pytest

import workbench as wb


def _nan_graph():
    x = wb.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()  # the line anomaly mode must point at
    return (y * 0).sum()


LINE = _nan_graph.__code__.co_firstlineno + 2


def test_nan_in_backward_points_at_forward_line():
    with wb.autograd.detect_anomaly():
        loss = _nan_graph()
        with pytest.raises(RuntimeError) as e:
            loss.backward()
    msg = str(e.value)
    assert "SqrtBackward0" in msg and "nan" in msg
    assert f"test_autograd_anomaly.py:{LINE}" in msg and "y = x.sqrt()" in msg  # site and the forward traceback


def test_decorator_set_detect_anomaly_and_check_nan_off():
    @wb.autograd.detect_anomaly()
    def run():
        assert wb.autograd.is_anomaly_enabled()
        _nan_graph().backward()

    with pytest.raises(RuntimeError, match="nan"):
        run()
    assert not wb.autograd.is_anomaly_enabled()
    with wb.autograd.detect_anomaly(check_nan=False):
        _nan_graph().backward()  # no check: NaN flows into .grad
    wb.autograd.set_detect_anomaly(True)
    assert wb.autograd.is_anomaly_enabled()
    wb.autograd.set_detect_anomaly(False)
    with wb.autograd.set_detect_anomaly(True):
        assert wb.autograd.is_anomaly_enabled()
    assert not wb.autograd.is_anomaly_enabled()
    _nan_graph().backward()  # off: no error


def test_error_in_backward_warns_with_forward_traceback():
    class Boom(wb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    with wb.autograd.detect_anomaly():
        y = Boom.apply(wb.ones(2, requires_grad=True))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="boom"):
                y.sum().backward()
    assert any("Error detected in BoomBackward" in str(m.message) and "Boom.apply" in str(m.message) for m in w)
