"""``workbench.backends.opt_einsum``: whether the opt_einsum package is there, and PyTorch's switches for it.

>>> import workbench as wb
>>> wb.backends.opt_einsum.strategy in (None, "auto")
True
"""
import importlib
import importlib.util

from ._flags import boolean, install


def is_available():
    """True when the opt_einsum package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The opt_einsum module, or None when it is not installed."""
    return importlib.import_module("opt_einsum") if is_available() else None


def _strategy(v):
    if v not in ("auto", "greedy", "optimal"):
        raise ValueError(f"opt_einsum.strategy must be one of 'auto', 'greedy', 'optimal', got {v!r}")
    return v


install(__name__, {"enabled": boolean(is_available(), "set_enabled_opt_einsum"),
                   "strategy": ("auto" if is_available() else None, _strategy)})
