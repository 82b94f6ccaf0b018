"""Run a module's docstring examples the house way (the test suites of several packages share it).

One-line ``>>> expr  ->  result`` examples (the house short form) are documentation only and skipped; each
docstring starts from ``manual_seed(0)``.
"""
import doctest
import importlib

import workbench as wb


def docstring_failures(name):
    """The failure reports (a list of strings, empty when all pass) of module ``name``'s runnable examples.

    >>> docstring_failures("workbench.fft")
    []
    """
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    for test in finder.find(mod, name, globs={"wb": wb, **vars(mod)}):
        test.examples = [e for e in test.examples if "  ->  " not in e.source]  # the short form; a def's "-> T" runs
        if not test.examples:
            continue
        out = []
        wb.manual_seed(0)
        if runner.run(test, out=out.append, clear_globs=False).failed:
            failures.append("".join(out))
    return failures
