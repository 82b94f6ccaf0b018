"""The notebooks run top to bottom, fast, and their tape outputs carry the snapshot and the SVG fallback.

Each run is stored (workbench.testing.notebooks) for the documentation build, tests/test_site.py, which
renders the stored copies instead of running the notebooks a second time.
"""
import json
import pathlib

import pytest

NB_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
TAPE = "application/vnd.workbench.tape.v1+json"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, \
                f"{path.name} has stale outputs: clear them before committing"



@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_has_a_unique_id(path):
    # nbformat 4.5 requires cell ids; without them every load warns (MissingIDFieldWarning) and
    # JupyterLab makes new ones on each save, so a reopened notebook's diff touches every cell
    ids = [cell.get("id") for cell in json.loads(path.read_text())["cells"]]
    assert None not in ids, f"{path.name}: cell {ids.index(None)} has no id"
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate cell ids"

@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    from workbench.testing import notebooks

    nb, elapsed = notebooks.execute(path)
    bundles = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    tapes = [b for b in bundles if TAPE in b]
    for b in tapes:
        assert "text/html" in b and "<svg" in b["text/html"], "a tape output without its SVG fallback"
        assert "text/plain" in b
    if "tour" in path.name or "classroom" in path.name:
        assert tapes, f"{path.name} shows no tape"
    assert elapsed < 120, f"{path.name} took {elapsed:.0f} s (target: under 60 s on a laptop CPU)"
