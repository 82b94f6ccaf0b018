"""workbench.optim: PyTorch's optimizers and learning-rate schedulers on workbench parameters.

>>> import workbench as wb
>>> model = wb.nn.Linear(3, 1)
>>> opt = wb.optim.Adam(model.parameters(), lr=1e-2)
>>> loss = model(wb.randn(8, 3)).pow(2).mean(); loss.backward(); opt.step(); opt.zero_grad()
"""
import importlib

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon",
           "lr_scheduler", "swa_utils"]


def __getattr__(name):
    # swa_utils builds on nn, which imports the functional ops: loaded on first use
    if name == "swa_utils":
        return importlib.import_module(".swa_utils", __name__)
    raise AttributeError(f"module 'workbench.optim' has no attribute '{name}'")
