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
from workbench.testing.doctests import NOT_RUN, SKIP, docstring_failures, not_run, run_short, short_examples

MODULES = sorted(m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench."))


def test_every_module_is_walked():
    assert {"workbench.nn.functional", "workbench.nn.modules.linear", "workbench.optim.adam", "workbench.amp",
            "workbench.testing.doctests", "workbench.viz.snapshot", "workbench.ops.elementwise"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures = docstring_failures(name)
    assert not failures, "\n".join(failures)


def test_every_exemption_still_exempts_an_example():
    for key, reason in NOT_RUN.items():
        # the modules under key (a package's) or the module that holds key (a docstring's)
        modules = [m for m in MODULES if m == key or m.startswith(key + ".")] or [
            max((m for m in MODULES if key.startswith(m + ".")), key=len)]
        tests = [t for m in modules for t in doctest.DocTestFinder(exclude_empty=False).find(importlib.import_module(m), m)
                 if t.name == key or t.name.startswith(key + ".")]
        assert any(any(SKIP in source for _, source, _ in short_examples(t.docstring or "")) or
                   any(e.options.get(doctest.SKIP) for e in t.examples)
                   for t in tests), f"NOT_RUN names {key} ({reason}): no skipped example there"


def test_a_wrong_short_example_fails():
    assert "got      tensor(2.)" in run_short("wb.ones(2).sum()", "tensor(3.)", {"wb": workbench})
    assert run_short("wb.ones(2, 3).sum(0)", "tensor([2.,\n  2., 2.])", {"wb": workbench}) is None
    assert "NameError" in run_short("x + 1", None, {})
    assert "no expression" in run_short("y = 1", "1", {})
    assert not_run("workbench.nn.module.Module.cuda") and not not_run("workbench.nn.module.Module.cpu")


def test_a_skip_needs_a_listed_reason(tmp_path, monkeypatch):
    (tmp_path / "docex_probe.py").write_text('def f():\n    """F.  >>> 1 + 1  ->  3  # doctest: +SKIP"""\n\n\n'
                                             'def g():\n    """\n    >>> 1 + 1  # doctest: +SKIP\n    3\n    """\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    failures = docstring_failures("docex_probe")
    assert len(failures) == 2 and all("no reason listed in NOT_RUN" in f for f in failures)
    monkeypatch.setitem(NOT_RUN, "docex_probe", "a probe")
    assert docstring_failures("docex_probe") == []
