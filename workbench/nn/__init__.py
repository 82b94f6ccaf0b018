"""workbench.nn: PyTorch's torch.nn on workbench tensors (Module, layers, losses, init, utils).

>>> import workbench as wb
>>> net = wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.ReLU(), wb.nn.Linear(8, 2))
>>> net(wb.randn(3, 4)).shape
workbench.Size([3, 2])
"""
from . import functional, init
from .module import Module
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from . import utils
from . import parallel
from .parallel import DataParallel

__all__ = ["Module", "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional", "init", "utils", "parallel", "DataParallel"] + list(_modules_all)
