"""Reverse-mode automatic differentiation: backward, grad, Function, grad modes, anomaly detection.

>>> import workbench as wb
>>> x = wb.tensor([1., 2.], requires_grad=True)
>>> wb.autograd.grad((x * x).sum(), x)
(tensor([2., 4.]),)
"""
import importlib

from . import engine, graph  # noqa: F401 - engine: wb.autograd.engine
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .threads import is_multithreading_enabled, set_multithreading_enabled
from .variable import Variable
from .engine import BackwardRun, BackwardStep, iter_backward
from .function import Function, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["Function", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "once_differentiable", "iter_backward", "BackwardStep",
           "BackwardRun", "graph", "functional", "gradcheck", "gradgradcheck", "GradcheckError", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "Variable",
           "is_multithreading_enabled", "set_multithreading_enabled"]

# The package is two layers: the engine core above (Function, graph, engine, grad modes), which the ops
# are built on, and the tools below, which are built on the ops (backward/grad make root gradients with
# creation and stack, functional and gradcheck compose ops). Importing the tools here would make an op
# module's ``from ..autograd.function import Function`` import the ops again half-way, so they load on
# first use (as workbench's subpackages do).
_TOOLS = {"backward": "backprop", "grad": "backprop", "_make_grads": "backprop", "functional": None,
          "gradcheck": "_gradcheck", "gradgradcheck": "_gradcheck", "GradcheckError": "_gradcheck"}


def __getattr__(name):
    if name not in _TOOLS:
        raise AttributeError(f"module 'workbench.autograd' has no attribute '{name}'")
    mod = importlib.import_module(f".{_TOOLS[name] or name}", __name__)
    for attr, src in _TOOLS.items():  # bind all the module's names at once
        if src == _TOOLS[name] and src is not None:
            globals()[attr] = getattr(mod, attr)
    if _TOOLS[name] is None:
        globals()[name] = mod
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(_TOOLS))
