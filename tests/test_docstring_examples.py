"""The runnable examples in the docstrings of every module of workbench produce what they show.

Every module workbench's packages hold (nn, optim, amp, testing and the rest alike) is walked here, so a new
module is covered without listing it. One-line ``>>> expr  ->  result`` examples (the house short form) are
documentation only and skipped (workbench/testing/doctests.py).
"""
import pkgutil

import pytest

import workbench
from workbench.testing.doctests import docstring_failures

MODULES = sorted(m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench."))


def test_every_module_is_walked():
    assert {"workbench.nn.functional", "workbench.nn.modules.linear", "workbench.optim.adam", "workbench.amp",
            "workbench.testing.doctests", "workbench.viz.snapshot", "workbench.ops.elementwise"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures = docstring_failures(name)
    assert not failures, "\n".join(failures)
