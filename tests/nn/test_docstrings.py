"""The runnable examples in nn's and optim's docstrings produce what they show.

One-line ``>>> expr  ->  result`` examples (the house short form) are documentation only and skipped.
"""
import pkgutil

import pytest

import workbench.nn.modules
import workbench.optim
from workbench.testing.doctests import docstring_failures


def _modules():
    names = ["workbench.nn", "workbench.nn.module", "workbench.nn.parameter", "workbench.nn.init",
             "workbench.nn.utils.clip_grad", "workbench.nn.utils.convert_parameters", "workbench.nn.utils.rnn",
             "workbench.nn.utils.weight_norm", "workbench.nn.utils.spectral_norm", "workbench.nn.utils.parametrize",
             "workbench.nn.utils.parametrizations", "workbench.nn.utils.prune",
             "workbench.optim"]
    names += ["workbench.nn.modules." + m.name for m in pkgutil.iter_modules(workbench.nn.modules.__path__)]
    names += ["workbench.optim." + m.name for m in pkgutil.iter_modules(workbench.optim.__path__)]
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    failures = docstring_failures(name)
    assert not failures, "\n".join(failures)
