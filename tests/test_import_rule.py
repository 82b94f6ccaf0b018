"""Imports stay at module level (docs/architecture.md, "Who may import whom").

An import inside a function body is there only to keep an optional dependency or CuPy lazy, or to
break a real import cycle, and then a comment on its line (or the line above) says which cycle ("a real
cycle: ..."). Every module is parsed, workbench.testing included.
"""
import ast
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).parent
# the optional dependencies (and CuPy): importing them at the top would make them required or slow
OPTIONAL = {"cupy", "cupyx", "scipy", "ml_dtypes", "mpi4py", "onnx", "onnxruntime", "numba", "llvmlite",
            "pandas", "matplotlib", "IPython", "tensorboard", "torch", "nbclient", "nbformat", "Cython", "setuptools"}


def _function_imports(tree):
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield fn, node


def _top_names(node):
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    return {"." if node.level else node.module.split(".")[0]}


def test_no_import_in_a_function_body_but_optional_dependencies_or_a_named_cycle():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        lines = path.read_text().splitlines()
        seen = set()
        for fn, node in _function_imports(ast.parse(path.read_text())):
            if node.lineno in seen or _top_names(node) <= OPTIONAL:
                continue
            seen.add(node.lineno)
            here, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
            if "cycle" in here.partition("#")[2] or above.startswith("#") and "cycle" in above:
                continue  # a first-party import kept in the function to break a cycle, and the comment says which
            bad.append(f"workbench/{rel}:{node.lineno} in {fn.name}(): {here.strip()}")
    assert not bad, "imports inside function bodies (move them to the top, or say which cycle they break):\n" + \
        "\n".join(bad)


def test_the_rule_sees_a_function_body_import():
    tree = ast.parse("def f():\n    from . import x\n")
    (fn, node), = _function_imports(tree)
    assert fn.name == "f" and _top_names(node) == {"."}
