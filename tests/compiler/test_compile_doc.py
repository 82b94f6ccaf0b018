"""docs/compile.md runs as written: its Python blocks, in order, in one namespace, print what the page shows."""
import pathlib
import re

from workbench.testing import doc_pages

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "compile.md"


def test_compile_doc_runs():
    """run_page checks the printed lines against the page's ```text blocks (tests/test_doc_pages.py runs it too)."""
    assert [b.expected is not None for b in doc_pages.blocks(DOC)] == [True, True, True, True]
    ns = doc_pages.run_page(DOC)
    assert ns["torch"].compiler.explain(ns["f"]).eager_calls == 1


def test_compile_doc_arguments_table_names_the_real_signature():
    import inspect

    import workbench

    table = DOC.read_text().split("## Arguments", 1)[1].split("\n## ", 1)[0]
    documented = {n for cell in re.findall(r"^\| ([^|]+) \|", table, flags=re.M) for n in re.findall(r"`(\w+)`", cell)}
    assert documented == set(inspect.signature(workbench.compile).parameters) - {"model"}
