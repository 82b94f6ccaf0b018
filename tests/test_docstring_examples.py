"""The runnable examples in the docstrings of every module of workbench produce what they show.

Every module workbench's packages hold (nn, optim, amp, testing and the rest alike) is walked here, so a new
module is covered without listing it. Both the doctest form and the house short form (one line: the prompt,
then ``expr  ->  result``) run; workbench/testing/doctests.py says how, and lists the few that cannot run here.
"""
import doctest
import importlib
import pkgutil

import pytest

import workbench
from workbench.testing.doctests import NOT_RUN, docstring_failures, run_short, short_examples

MODULES = sorted(m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench."))


def test_every_module_is_walked():
    assert {"workbench.nn.functional", "workbench.nn.modules.linear", "workbench.optim.adam", "workbench.amp",
            "workbench.testing.doctests", "workbench.viz.snapshot", "workbench.ops.elementwise"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures = docstring_failures(name)
    assert not failures, "\n".join(failures)


def test_every_exemption_names_a_docstring_with_short_examples():
    for name, reason in NOT_RUN.items():
        module = max((m for m in MODULES if name.startswith(m + ".")), key=len)
        tests = [t for t in doctest.DocTestFinder(exclude_empty=False).find(importlib.import_module(module), module)
                 if t.name == name]
        assert tests and short_examples(tests[0].docstring), f"NOT_RUN names {name} ({reason}): no short example there"


def test_a_wrong_short_example_fails():
    assert "got      tensor(2.)" in run_short("wb.ones(2).sum()", "tensor(3.)", {"wb": workbench})
    assert run_short("wb.ones(2, 3).sum(0)", "tensor([2.,\n  2., 2.])", {"wb": workbench}) is None
    assert "NameError" in run_short("x + 1", None, {})
    assert "no expression" in run_short("y = 1", "1", {})
