"""``workbench.utils``: ``data`` (datasets and the DataLoader) and ``checkpoint``, loaded on first use.

>>> import workbench as wb
>>> wb.utils.data.TensorDataset(wb.zeros(2))[0]
(tensor(0.),)
"""
import importlib

_SUBMODULES = ("data", "checkpoint", "cpp_extension", "serialization", "tensorboard")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'workbench.utils' has no attribute '{name}'")
