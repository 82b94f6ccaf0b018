"""Run a module's docstring examples the house way (the test suites of several packages share it).

Two forms run. The doctest form (``>>>`` first on a line, the output on the lines below) goes through
``doctest``. The house short form is one line, usually at the end of a one-line docstring: the prompt
``>>>`` after the prose, then ``expr  ->  result`` (two spaces either side of the arrow). ``expr`` is
evaluated in the module's namespace with ``wb`` (workbench) and ``F`` (workbench.nn.functional) bound; it
may be statements joined by ``;``, the last one, an expression, giving the value. ``repr`` of the value
must match ``result`` under the doctest form's rules: doctest's ``OutputChecker`` with
``NORMALIZE_WHITESPACE`` (a run of whitespace matches any other, so a multi-line tensor repr is written on
one line) and ``ELLIPSIS`` (``...`` matches any text); floats are compared as printed, with no tolerance.
A short example with no ``  ->  `` must run without raising. Each docstring starts from
``manual_seed(0)``; its short examples share one namespace, in order, after its doctest-form ones. The
short examples that cannot run here are listed in ``NOT_RUN`` with the reason.
"""
import ast
import doctest
import importlib

import workbench as wb
import workbench.nn.functional as F

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
ARROW = "  ->  "
# docstring (doctest's name for it) -> why its short examples are not run (the test suite checks that each
# still names a docstring with short examples)
NOT_RUN = {
    "workbench.distributed.collectives.send": "a send needs a second rank to receive it",
    "workbench.nn.module.Module.cuda": "needs a CUDA device (CuPy)",
}


def short_examples(docstring):
    """The short-form examples of a docstring: (line number, source, the result shown or None).

    >>> short_examples("Sum.  >>> wb.ones(2).sum()" + ARROW + "tensor(2.)\\nNo result.  >>> wb.ones(1)")
    [(0, 'wb.ones(2).sum()', 'tensor(2.)'), (1, 'wb.ones(1)', None)]
    """
    found = []
    for lineno, line in enumerate(docstring.splitlines()):
        at = line.find(">>> ")
        if at < 0:
            continue
        source, arrow, want = line[at + 4:].partition(ARROW)
        if not line[:at].strip() and not arrow:
            continue  # the doctest form: ``>>>`` first on its line, the output on the lines below
        found.append((lineno, source.strip(), want.strip() if arrow else None))
    return found


def run_short(source, want, globs):
    """None when the example runs (and shows ``want``, if given), else what went wrong.

    ``source`` may be statements joined by ``;``: they are executed, and the last one, if an expression,
    gives the value shown (as at the prompt).
    """
    try:
        body = ast.parse(source).body
        value = body.pop() if body and isinstance(body[-1], ast.Expr) else None
        exec(compile(ast.Module(body, []), "<short example>", "exec"), globs)
        if value is None:
            return None if want is None else f"no expression to show (expected {want})"
        got = repr(eval(compile(ast.Expression(value.value), "<short example>", "eval"), globs))
    except Exception as e:  # the report names the example and the exception
        return f"raised {type(e).__name__}: {e}"
    if want is None or doctest.OutputChecker().check_output(want + "\n", got + "\n", FLAGS):
        return None
    return f"expected {want}\n    got      {got}"


def docstring_failures(name):
    """The failure reports (a list of strings, empty when all pass) of module ``name``'s examples.

    >>> docstring_failures("workbench.fft")
    []
    """
    mod = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=False)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures = []
    for test in finder.find(mod, name, globs={"wb": wb, "F": F, **vars(mod)}):
        short = [] if test.name in NOT_RUN else short_examples(test.docstring or "")
        test.examples = [e for e in test.examples if ARROW not in e.source]  # a short one first on its line
        if not test.examples and not short:
            continue
        wb.manual_seed(0)
        if test.examples:
            out = []
            if runner.run(test, out=out.append, clear_globs=False).failed:
                failures.append("".join(out))
        for lineno, source, want in short:
            problem = run_short(source, want, test.globs)
            if problem is not None:
                line = "?" if test.lineno is None else test.lineno + lineno + 1
                failures.append(f"{test.filename}:{line} in {test.name}\n  >>> {source}\n    {problem}\n")
    return failures
