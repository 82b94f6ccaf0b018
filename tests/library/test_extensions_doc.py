"""docs/extensions.md runs as written: its Python blocks, in order, in one namespace (CUDA on the fake cupy)."""
import pathlib
import shutil

import pytest

from workbench.testing import doc_pages, fake_cupy

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "extensions.md"


def test_extensions_doc_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("numba")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("needs a C++ compiler")
    monkeypatch.setenv("WORKBENCH_EXTENSIONS_DIR", str(tmp_path))
    assert len(doc_pages.blocks(DOC)) == 4  # tests/test_doc_pages.py runs the page too, in a process of its own
    with fake_cupy.installed():
        ns = doc_pages.run_page(DOC)
        assert ns["loss"].device.type == "cuda"
    out = capsys.readouterr().out
    assert "'test_gradcheck': 'SUCCESS'" in out
    assert out.count("<workbench tape") == 3
    assert ns["b"].tolist() == [2.0, 2.0, 2.0]
    ops = {n._op for n in ns["wb"].autograd.graph.walk([ns["loss"].grad_fn])}
    assert "mylib::swish_cpp" in ops
