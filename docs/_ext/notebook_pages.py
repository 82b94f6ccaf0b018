"""Writes docs/tutorials/: the notebooks of notebooks/ with their outputs.

Each is the copy ``tests/test_notebooks.py`` stored when it ran the notebook against the same sources,
else a fresh run (``workbench.testing.notebooks``): in ``make test`` every notebook runs once.
"""
from pathlib import Path

import nbformat

from workbench.testing import notebooks

OUT = Path(__file__).resolve().parents[1] / "tutorials"


def generate(app):
    OUT.mkdir(exist_ok=True)
    sources = sorted(notebooks.NOTEBOOKS_DIR.glob("*.ipynb"))
    for path in sources:
        text = nbformat.writes(notebooks.executed(path))
        target = OUT / path.name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for stale in set(OUT.glob("*.ipynb")) - {OUT / p.name for p in sources}:
        stale.unlink()


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True}
