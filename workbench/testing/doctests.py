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
docstrings whose examples cannot all run here are listed in ``NOT_RUN`` with the reason; ``# doctest:
+SKIP`` (on an example of either form) is honoured there and reported as a failure anywhere else.
"""
import ast
import doctest
import importlib

import workbench as wb
import workbench.nn.functional as F

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
ARROW = "  ->  "
# docstring (doctest's name for it, or a module's name for all its docstrings) -> why some of its examples
# cannot run here: there an example (of either form) may carry ``# doctest: +SKIP``, which anywhere else is
# reported as a failure. The test suite checks that each key still has a skipped example.
SKIP = "# doctest: +SKIP"
NOT_RUN = {
    "workbench.distributed": "collectives, point-to-point and process groups need two or more ranks "
                             "(tests/distributed runs them on real process groups)",
    "workbench.nn.parallel.distributed": "DistributedDataParallel needs an initialised process group of two "
                                         "or more ranks (tests/distributed/test_ddp.py)",
    "workbench.nn.module.Module.cuda": "needs a CUDA device (CuPy)",
    "workbench.onnx": "onnx is an optional dependency; tests/test_onnx.py runs export and checks the file "
                      "with onnxruntime",
    "workbench.testing.api_surface": "sweeps PyTorch's whole API (~10 s, imports torch); "
                                     "tests/test_api_surface.py runs the sweep",
    "workbench.testing.notebooks": "executes a notebook in a Jupyter kernel (tens of seconds); "
                                   "tests/test_notebooks.py runs them",
}


def not_run(name):
    """The reason docstring ``name``'s examples are exempt (a key of NOT_RUN or a key's submodule), or None.

    >>> not_run("workbench.distributed.collectives.send") is not None, not_run("workbench.fft")
    (True, None)
    """
    while name:
        if name in NOT_RUN:
            return NOT_RUN[name]
        name = name.rpartition(".")[0]
    return None


def short_examples(docstring):
    """The short-form examples of a docstring: (line number, source, the result shown or None).

    >>> short_examples("Sum.  >>> wb.ones(2).sum()" + ARROW + "tensor(2.)\\nNo result.  >>> wb.ones(1)")
    [(0, 'wb.ones(2).sum()', 'tensor(2.)'), (1, 'wb.ones(1)', None)]
    >>> short_examples("GPU.  >>> x.cuda().device" + ARROW + "device(type='cuda', index=0)  " + SKIP)
    [(0, 'x.cuda().device  # doctest: +SKIP', "device(type='cuda', index=0)")]
    """
    found = []
    for lineno, line in enumerate(docstring.splitlines()):
        at = line.find(">>> ")
        if at < 0:
            continue
        text = line[at + 4:]
        skip = SKIP in text  # written last on the line, after the result: it belongs to the source
        source, arrow, want = text.replace(SKIP, "").partition(ARROW)
        if not line[:at].strip() and not arrow:
            continue  # the doctest form: ``>>>`` first on its line, the output on the lines below
        found.append((lineno, source.strip() + ("  " + SKIP if skip else ""), want.strip() if arrow else None))
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
        exempt = not_run(test.name)
        short = short_examples(test.docstring or "")
        test.examples = [e for e in test.examples if ARROW not in e.source]  # a short one first on its line
        if not test.examples and not short:
            continue
        skipped = [e.source.strip() for e in test.examples if e.options.get(doctest.SKIP)] + [
            source for _, source, _ in short if SKIP in source]
        if skipped and not exempt:
            failures.append(f"{test.filename}:{test.lineno} in {test.name}\n  >>> {skipped[0]}\n"
                            f"    {len(skipped)} example(s) skipped with no reason listed in NOT_RUN\n")
        wb.manual_seed(0)
        if test.examples:
            out = []
            if runner.run(test, out=out.append, clear_globs=False).failed:
                failures.append("".join(out))
        for lineno, source, want in short:
            if SKIP in source:
                continue  # as doctest does; reported above unless NOT_RUN lists a reason
            problem = run_short(source, want, test.globs)
            if problem is not None:
                line = "?" if test.lineno is None else test.lineno + lineno + 1
                failures.append(f"{test.filename}:{line} in {test.name}\n  >>> {source}\n    {problem}\n")
    return failures
