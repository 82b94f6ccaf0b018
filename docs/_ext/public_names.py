"""The public names of a workbench module, as the API reference lists them."""
import importlib
import inspect

import torch_names


def _foreign(obj):
    """A class or function a module imported from another package (the stdlib's, NumPy's)."""
    mod = getattr(obj, "__module__", None)
    return (inspect.isclass(obj) or inspect.isroutine(obj)) and isinstance(mod, str) and \
        not mod.startswith("workbench")


def _imported(obj, modname):
    """A class or function defined outside ``modname`` and its submodules (``nn.init`` imports Tensor)."""
    mod = getattr(obj, "__module__", None)
    return (inspect.isclass(obj) or inspect.isroutine(obj)) and isinstance(mod, str) and \
        not (mod == modname or mod.startswith(modname + "."))


def public_names(modname):
    """Sorted: ``__all__``, else the names without a leading underscore less what the module imported;
    never a submodule or a foreign object; plus the names of PyTorch's the module has (``workbench.save``,
    served lazily)."""
    mod = importlib.import_module(modname)
    declared = getattr(mod, "__all__", None)
    if declared is not None:
        names = set(declared)
    else:
        names = {n for n in dir(mod) if not n.startswith("_") and
                 (modname == "workbench" or not _imported(getattr(mod, n), modname))}
    names |= torch_names.present_in(modname)
    return [n for n in sorted(names) if not inspect.ismodule(getattr(mod, n)) and not _foreign(getattr(mod, n))]
