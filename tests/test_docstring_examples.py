"""The runnable examples in the docstrings of every module of workbench produce what they show.

tests/nn/test_docstrings.py and tests/amp/test_examples_in_docstrings.py hold nn, optim, amp, fft, special and
distributions; this file every other module (testing's own examples run in tests that use them). One-line ``>>> expr  ->  result`` examples (the house short
form) are documentation only and skipped (workbench/testing/doctests.py).
"""
import pkgutil

import pytest

import workbench
from workbench.testing.doctests import docstring_failures

# modules whose examples fail today, each with what is wrong; delete the line when the example passes
FAILING = {}
# nn, optim, amp and the numeric packages have their own files; the others run here
ELSEWHERE = ("workbench.nn", "workbench.optim", "workbench.amp", "workbench.distributions", "workbench.fft",
             "workbench.special", "workbench.testing")
MODULES = sorted(m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench.")
                 if not m.name.startswith(ELSEWHERE))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures = docstring_failures(name)
    if name in FAILING:
        assert failures, f"{name}'s examples pass now: delete its line in FAILING"
        pytest.xfail(FAILING[name])
    assert not failures, "\n".join(failures)
