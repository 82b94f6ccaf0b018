"""The runnable examples in workbench.library's and cpp_extension's docstrings produce what they show."""
import doctest
import importlib

import pytest

import workbench as wb

MODULES = ["workbench.library", "workbench.library.schema", "workbench.library.custom_op",
           "workbench.library.registration", "workbench.library.opcheck", "workbench.utils.cpp_extension",
           "workbench.testing.custom_ops", "workbench.cuda"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(mod, name, globs={"wb": wb, **vars(mod)}):
        runner.run(test, out=out.append, clear_globs=False)
    assert runner.failures == 0, "".join(out)
    assert runner.tries > 0
