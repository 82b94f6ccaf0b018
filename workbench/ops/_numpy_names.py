"""NumPy's keyword spellings for PyTorch's arguments: ``x.sum(1, keepdims=True)``, ``torch.max(t, axis=0)``.

PyTorch's C++ argument parser accepts ``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1``
for ``input`` and ``x2`` for ``other`` in every function it parses (the Tensor methods, ``torch.*``,
``torch.linalg.*``...), so real code uses them. The registry (Tensor methods) and the public namespaces
wrap each op that takes ``dim`` or ``keepdim`` with ``numpy_names``; ops with neither are left unwrapped
(no cost on the hottest calls), and the API sweep checks the aliases wherever PyTorch takes them.

>>> import workbench as wb
>>> wb.ones(2, 3).sum(axis=1, keepdims=True)
tensor([[3.],
        [3.]])
"""
import functools
import inspect

_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}
_WRAPPED = {}  # function -> its wrapper, so a function exported twice (workbench.sum, Tensor.sum) wraps once


def numpy_names(fn):
    """``fn``, also accepting NumPy's keyword names where PyTorch does (or ``fn`` itself if none apply)."""
    if fn in _WRAPPED:
        return _WRAPPED[fn]
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    renames = {alias: name for alias, name in _ALIASES.items() if name in params and alias not in params}
    if "dim" not in params and "keepdim" not in params or not renames:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs and not renames.keys().isdisjoint(kwargs):
            for alias in renames.keys() & kwargs.keys():
                name = renames[alias]
                if name in kwargs:
                    raise TypeError(f"{fn.__name__}() got both {name}= and its NumPy spelling {alias}=")
                kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    wrapper.__wb_aliases__ = tuple(renames)
    _WRAPPED[fn] = wrapper
    return wrapper
