"""Answer ``import torch`` with workbench in every Python process started with this folder on PYTHONPATH.

Python imports ``sitecustomize`` at start-up, so processes a program spawns (multiprocessing's spawn,
DataLoader workers) get the mapping too. A meta-path finder maps every ``torch`` / ``torch.X`` import to
the ``workbench`` / ``workbench.X`` module object itself (no second copy of any module, so
``torch.nn.Module is workbench.nn.Module``). A name workbench lacks fails as ImportError, exactly where the
program imports it.
"""
import importlib
import importlib.abc
import importlib.util
import sys


class _TorchIsWorkbench(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != "torch" and not name.startswith("torch."):
            return None
        if importlib.util.find_spec("workbench" + name[len("torch"):]) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module("workbench" + spec.name[len("torch"):])

    def exec_module(self, module):
        pass  # already executed under its workbench name


sys.meta_path.insert(0, _TorchIsWorkbench())
