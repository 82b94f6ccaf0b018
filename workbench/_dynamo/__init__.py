"""``torch._dynamo`` for PyTorch scripts: the names they reach for around ``torch.compile``.

``reset``, ``disable``, ``is_compiling``, ``list_backends`` and ``explain`` are ``workbench.compiler``'s;
``config`` holds the settings scripts set (``suppress_errors``, ``recompile_limit``/``cache_size_limit``);
``mark_dynamic`` and its kin are accepted and change nothing (a trace here specialises on shapes, and a new
shape traces again, up to ``recompile_limit``).

>>> import workbench as torch
>>> torch._dynamo.config.suppress_errors = True
>>> torch._dynamo.reset()
>>> torch._dynamo.config.suppress_errors = False
"""
import sys

from .. import compiler as _compiler
from ..compiler import (allow_in_graph, assume_constant_result, config, disable, is_compiling,  # noqa: F401
                        list_backends, reset)
from . import eval_frame, exc  # noqa: F401

sys.modules[__name__ + ".config"] = config  # `import torch._dynamo.config` finds the compiler's settings

__all__ = ["reset", "disable", "is_compiling", "list_backends", "explain", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static", "mark_static_address", "allow_in_graph", "assume_constant_result", "config", "exc",
           "eval_frame", "ExplainOutput"]


def _check_dims(t, index):
    dims = [index] if isinstance(index, int) else list(index)
    for d in dims:
        if not -t.dim() <= d < t.dim():
            raise IndexError(f"mark_dynamic: dimension {d} is out of range for a {t.dim()}-d tensor")


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """Accepted for PyTorch code; changes nothing here: traces specialise on shapes, and a new size of
    dimension ``index`` traces again (up to ``config.recompile_limit`` traces, then eager calls)."""
    _check_dims(t, index)


def maybe_mark_dynamic(t, index):
    """As ``mark_dynamic``: accepted, changes nothing."""
    _check_dims(t, index)


def mark_static(t, index=None):
    """Accepted for PyTorch code: every dimension is static here already."""


def mark_static_address(t, guard=True):
    """Accepted for PyTorch code: a replay reads a tensor's array where it lies already."""


class ExplainOutput:
    """What ``explain(fn)(*args)`` found: ``graph_count`` (1 where the call replays as one program, else 0),
    ``graph_break_count`` and ``break_reasons`` (why it runs eagerly), ``op_count`` (steps replayed)."""

    def __init__(self, report):
        replayable = [p for p in report.programs if p.reason is None]
        self.graph_count = len(replayable)
        self.break_reasons = list(report.reasons)
        self.graph_break_count = len(self.break_reasons)
        self.op_count = sum(len(p.steps) for p in replayable)
        self.report = report

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)]
        return "\n".join(lines)

    __repr__ = __str__


def explain(f, *extra_args, **extra_kwargs):
    """``torch._dynamo.explain(f)(*args, **kwargs)``: call ``f`` once through ``workbench.compile`` (the call
    runs, as PyTorch's explain runs it) and report whether it replays and why not.

    >>> import workbench as torch
    >>> out = torch._dynamo.explain(lambda x: x * 2 if x.sum() > 0 else x)(torch.ones(3))
    >>> out.graph_count, out.graph_break_count
    (0, 1)
    """
    def inner(*args, **kwargs):
        cf = _compiler.compile(f)
        cf(*extra_args, *args, **extra_kwargs, **kwargs)
        return ExplainOutput(_compiler.explain(cf))

    if extra_args or extra_kwargs:
        return inner()
    return inner
