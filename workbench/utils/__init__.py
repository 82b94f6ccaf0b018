"""``workbench.utils``: ``data`` (datasets and the DataLoader), ``checkpoint`` and ``hooks``, loaded on first use.

>>> import workbench as wb
>>> wb.utils.data.TensorDataset(wb.zeros(2))[0]
(tensor(0.),)
"""
import importlib

_SUBMODULES = ("data", "checkpoint", "cpp_extension", "hooks", "serialization", "tensorboard")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'workbench.utils' has no attribute '{name}'")
