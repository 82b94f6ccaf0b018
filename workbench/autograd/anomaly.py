"""Anomaly detection: every node remembers the forward line that made it, and NaNs in backward raise.

Off by default (it walks the Python stack once per op). Turn it on around the code you debug.
"""
import functools

from . import graph


class detect_anomaly:
    """Context manager and decorator: record forward tracebacks; raise on NaN produced in backward.

    >>> import workbench as wb
    >>> x = wb.tensor([0.0], requires_grad=True)
    >>> with wb.autograd.detect_anomaly():
    ...     y = x.sqrt() * 0            # d sqrt/dx at 0 is inf; inf * 0 is nan
    ...     y.sum().backward()
    Traceback (most recent call last):
    RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output. The node was created ...
    """

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = list(graph.ANOMALY)
        graph.ANOMALY[:] = [True, bool(self.check_nan)]
        return self

    def __exit__(self, *exc):
        graph.ANOMALY[:] = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once when called, or for a block as a context manager.

    >>> import workbench as wb
    >>> with wb.autograd.set_detect_anomaly(True):
    ...     wb.autograd.is_anomaly_enabled()
    True
    >>> wb.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode, check_nan=True):
        self._prev = list(graph.ANOMALY)
        graph.ANOMALY[:] = [bool(mode), bool(check_nan)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        graph.ANOMALY[:] = self._prev
        return False


def is_anomaly_enabled():
    """Whether anomaly detection is on.  >>> wb.autograd.is_anomaly_enabled()  ->  False"""
    return graph.ANOMALY[0]


def is_anomaly_check_nan_enabled():
    """Whether anomaly mode checks backward results for NaN.

    >>> import workbench as wb
    >>> with wb.autograd.detect_anomaly(check_nan=False): wb.autograd.is_anomaly_check_nan_enabled()
    False
    """
    return graph.ANOMALY[0] and graph.ANOMALY[1]
