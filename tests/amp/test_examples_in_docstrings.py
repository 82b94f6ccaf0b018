"""The runnable examples in the docstrings of amp, distributions, fft, special and stft produce what they show.

One-line ``>>> expr  ->  result`` examples (the house short form) are documentation only and skipped.
"""
import pkgutil

import pytest

import workbench.distributions
from workbench.testing.doctests import docstring_failures

MODULES = (["workbench.amp", "workbench.amp.autocast_mode", "workbench.amp.grad_scaler", "workbench.cpu",
            "workbench.fft", "workbench.special", "workbench.ops.fft", "workbench.ops.special", "workbench.ops.stft",
            "workbench.ops.sampling", "workbench.signal.windows", "workbench.distributions"]
           + ["workbench.distributions." + m.name for m in pkgutil.iter_modules(workbench.distributions.__path__)])


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures = docstring_failures(name)
    assert not failures, "\n".join(failures)
