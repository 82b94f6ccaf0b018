"""The runnable examples in nn's and optim's docstrings produce what they show.

One-line ``>>> expr  ->  result`` examples (the house short form) are documentation only and skipped.
"""
import doctest
import importlib
import pkgutil

import pytest

import workbench as wb
import workbench.nn.modules
import workbench.optim


def _modules():
    names = ["workbench.nn", "workbench.nn.module", "workbench.nn.parameter", "workbench.nn.init",
             "workbench.nn.utils.clip_grad", "workbench.nn.utils.convert_parameters", "workbench.nn.utils.rnn",
             "workbench.nn.utils.weight_norm", "workbench.nn.utils.spectral_norm", "workbench.nn.utils.parametrize",
             "workbench.nn.utils.parametrizations",
             "workbench.optim"]
    names += ["workbench.nn.modules." + m.name for m in pkgutil.iter_modules(workbench.nn.modules.__path__)]
    names += ["workbench.optim." + m.name for m in pkgutil.iter_modules(workbench.optim.__path__)]
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    for test in finder.find(mod, name, globs={"wb": wb, **vars(mod)}):
        test.examples = [e for e in test.examples if "->" not in e.source]
        if not test.examples:
            continue
        out = []
        wb.manual_seed(0)
        if runner.run(test, out=out.append, clear_globs=False).failed:
            failures.append("".join(out))
    assert not failures, "\n".join(failures)
