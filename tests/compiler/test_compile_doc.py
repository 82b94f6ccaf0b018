"""docs/compile.md runs as written: its Python blocks, in order, in one namespace, print what the page shows."""
import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "compile.md"


def test_compile_doc_runs(capsys):
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    shown = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 3 and len(shown) == 2
    ns = {}
    for k in (0, 1):
        exec(compile(blocks[k], f"{DOC}:block{k}", "exec"), ns)
        assert capsys.readouterr().out == shown[k]
    exec(compile(blocks[2], f"{DOC}:block2", "exec"), ns)
    assert capsys.readouterr().out.startswith("a tensor's value was read on the host (.bool()")
    assert ns["torch"].compiler.explain(ns["f"]).eager_calls == 1


def test_compile_doc_arguments_table_names_the_real_signature():
    import inspect

    import workbench

    table = DOC.read_text().split("## Arguments", 1)[1].split("\n## ", 1)[0]
    documented = {n for cell in re.findall(r"^\| ([^|]+) \|", table, flags=re.M) for n in re.findall(r"`(\w+)`", cell)}
    assert documented == set(inspect.signature(workbench.compile).parameters) - {"model"}
