"""The op library: one module per topic, each holding its primitives (Function subclasses) and public functions.

Each family module (``FAMILIES``) declares, next to its primitives:

* ``__all__``  - public functions re-exported as ``workbench.<name>``;
* ``METHODS``  - ``{name: function}`` attached as Tensor methods (dunders included) by the one registry
  in ``workbench/tensor.py``;
* ``INPLACE``  - names whose ``name_`` in-place variant the registry generates from the out-of-place
  function (a module can instead put a hand-written ``name_`` in METHODS).

So a new op touches only its family's file. Helpers shared by families live in ``_util.py`` (and
``_windows.py``, the sliding-window geometry of conv and pool), never in another family.
"""
import importlib

FAMILIES = ["convert", "elementwise", "reduce", "views", "index", "slicing", "join", "pad", "arrange", "linalg_core",
            "linalg", "linear", "conv", "pool", "resample", "activation", "normalization", "loss", "attention", "misc",
            "special", "stft", "queries", "method_forms", "statistics", "numeric", "lookup", "norms",
            "integrate", "recurrent"]
from ._numpy_names import numpy_names

MODULES = [importlib.import_module(f".{_name}", __name__) for _name in FAMILIES]
__all__ = []
for _mod in MODULES:
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = numpy_names(getattr(_mod, _name))  # axis=/keepdims= as PyTorch takes them
        __all__.append(_name)
del _mod, _name
