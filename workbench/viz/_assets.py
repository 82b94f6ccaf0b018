"""Where the built browser bundles live.

The TypeScript in ``extensions/`` is built into ``workbench/static/`` by ``pip install -e .`` (or any
wheel build); the bundles are not committed. These helpers find them and say how to build them
when they are missing.

>>> from workbench.viz import _assets
>>> _assets.widget_esm_path().name
'widget.js'
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "static"


def _require(name: str) -> Path:
    path = STATIC / name
    if not path.is_file():
        raise FileNotFoundError(
            f"workbench's browser bundle {path} is missing: the viewer has not been built. "
            "Run `pip install -e .` in the repository (it runs the npm build in extensions/), "
            "or `npm --prefix extensions install && npm --prefix extensions run build`."
        )
    return path


def widget_esm_path() -> Path:
    """Path of the anywidget ESM entry (``workbench/static/widget.js``), e.g. for ``_esm = path``."""
    return _require("widget.js")


def widget_esm() -> str:
    """Text of the anywidget ESM entry; anywidget also accepts this string as ``_esm``."""
    return widget_esm_path().read_text(encoding="utf-8")


def standalone_js() -> str:
    """Text of the IIFE bundle that ``snapshot.save("x.html")`` inlines into a single offline file."""
    return _require("standalone.js").read_text(encoding="utf-8")
