"""Run a notebook top to bottom once, and keep the executed copy for whoever needs its outputs next.

``tests/test_notebooks.py`` executes every notebook (that is its test) and stores the result; the
documentation build (``docs/_ext/notebook_pages.py``) renders the stored copy when it matches the current
sources and executes the notebook itself only when it does not, so ``make test`` runs each notebook once.
A stored copy matches when the notebook and every file under ``workbench/`` are byte for byte the ones it
was executed with.

>>> from workbench.testing import notebooks                                   # doctest: +SKIP
>>> nb, seconds = notebooks.execute(notebooks.NOTEBOOKS_DIR / "01_tour.ipynb")  # doctest: +SKIP
>>> nb = notebooks.executed(notebooks.NOTEBOOKS_DIR / "01_tour.ipynb")         # doctest: +SKIP
"""
import hashlib
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO / "notebooks"
PACKAGE = REPO / "workbench"
# build/ is ignored by git; WORKBENCH_NOTEBOOK_CACHE moves the store (a read-only checkout)
CACHE = Path(os.environ.get("WORKBENCH_NOTEBOOK_CACHE", REPO / "build" / "executed-notebooks"))


def source_key(path):
    """A digest of the notebook and of the package that produces its outputs."""
    h = hashlib.sha256(Path(path).read_bytes())
    for f in sorted(PACKAGE.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(PACKAGE)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _stored(path, key):
    return CACHE / f"{Path(path).stem}-{key}.ipynb"


def execute(path, timeout=300):
    """(executed notebook, seconds): run ``path`` in a fresh python3 kernel from its own folder, and store it."""
    import nbclient
    import nbformat

    key = source_key(path)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(Path(path).parent)}})
    t = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(f"{Path(path).stem}-*.ipynb"):
        old.unlink()
    tmp = _stored(path, key).with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(_stored(path, key))  # whole or not at all: a reader never sees half a notebook
    return nb, elapsed


def executed(path, timeout=300):
    """The executed notebook: the stored copy when it matches the current sources, else a fresh run."""
    import nbformat

    stored = _stored(path, source_key(path))
    if stored.exists():
        return nbformat.read(stored, as_version=4)
    return execute(path, timeout)[0]
