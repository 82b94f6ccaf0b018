"""The op library. Importing it binds Tensor's operators and methods and gathers the public functions.

Each family module (``FAMILIES``) declares, next to its primitives:

* ``__all__``  - public functions re-exported as ``workbench.<name>``;
* ``METHODS``  - ``{name: function}`` bound as Tensor methods (dunders included);
* ``INPLACE``  - names whose ``name_`` in-place variant is generated from the out-of-place function
  (a module can instead put a hand-written ``name_`` in METHODS).

So a new op touches only its family's file.
"""
import importlib

from ..tensor import Tensor

FAMILIES = ["convert", "elementwise", "reduce", "views", "index", "slicing", "join", "pad", "arrange", "linalg_core",
            "linalg", "linear", "conv", "pool", "resample", "activation", "normalization", "loss", "attention", "misc",
            "special"]
__all__ = []


def _inplace_method(name, fn):
    def method(self, *args, **kwargs):
        return self._inplace(name, lambda x, *a: fn(x, *a, **kwargs), *args)

    method.__name__ = name
    method.__qualname__ = "Tensor." + name
    method.__doc__ = f"In-place version of {name[:-1]}."
    return method


def _bind_family(mod):
    for name, fn in getattr(mod, "METHODS", {}).items():
        setattr(Tensor, name, fn)
    methods = getattr(mod, "METHODS", {})
    for name in getattr(mod, "INPLACE", ()):
        fn = methods.get(name) or getattr(mod, name)
        setattr(Tensor, name + "_", _inplace_method(name + "_", fn))
    for name in getattr(mod, "__all__", ()):
        globals()[name] = getattr(mod, name)
        __all__.append(name)


for _name in FAMILIES:
    _bind_family(importlib.import_module(f".{_name}", __name__))

# augmented assignment is in-place, as in PyTorch
Tensor.__iadd__ = lambda self, o: self.add_(o)
Tensor.__isub__ = lambda self, o: self.sub_(o)
Tensor.__imul__ = lambda self, o: self.mul_(o)
Tensor.__itruediv__ = lambda self, o: self.div_(o)
Tensor.__ipow__ = lambda self, o: self.pow_(o)
Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))), doc="All dims reversed (a view).")
Tensor.mT = property(lambda self: self.transpose(-2, -1), doc="The last two dims swapped (a view).")
