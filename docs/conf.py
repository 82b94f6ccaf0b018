"""Sphinx configuration for the workbench documentation site (`make docs`; see building.md)."""
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

import workbench  # noqa: E402

project = "workbench"
release = version = workbench.__version__
copyright = "the workbench authors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "myst_nb",                  # MyST Markdown pages and the executed notebooks (it brings myst_parser)
    "api_pages",                # api/*.rst: every public name of the listed modules, from its docstring
    "notebook_pages",           # tutorials/*.ipynb: the notebooks with their outputs, executed at most once
    "compat_page",              # compatibility.md: PyTorch's names, which workbench has, the differences
    "docstring_guard",          # a docstring that is not valid reStructuredText is shown as written
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "README.md"]
root_doc = "index"

# Offline: nothing is fetched while building and no page loads anything from another host.
html_theme = "furo"
html_title = f"workbench {release}"
html_static_path = []
html_last_updated_fmt = None
myst_heading_anchors = 3
suppress_warnings = [
    "myst.header",               # the design pages start at ##: their first heading is the title
    "misc.highlighting_failure",  # a schematic JSON block (`"object": <node>`) is shown unhighlighted
    # an output's own MIME type (the tape, the monitor) needs the JupyterLab extension: the page shows the
    # text/html fallback of the same output, and says so on the tutorials page
    "mystnb.unknown_mime_type",
]
# Notebooks: the copies notebook_pages writes already hold their outputs.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # no widget manager from a CDN: a widget output shows its offline fallback
# live widgets (anywidget) fall back to their text/html (the inline-SVG tape, the monitor's picture)
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
]
nb_output_stderr = "show"

autodoc_typehints = "none"     # PyTorch's reference shows none; hints would make ambiguous cross-references
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": False}
autosummary_generate = False   # api_pages writes the pages itself: one per module, not one per name


# The "Topics" toctree of index.md lists every other page of docs/ (architecture.md, gpu.md, ...), so a
# page someone adds is in the site's navigation without an edit here.
LISTED = {"index", "getting-started", "viz", "tutorials", "compatibility", "building", "changelog", "README"}


def _topics(app, docname, source):
    if docname == "index":
        topics = sorted(p.stem for p in DOCS.glob("*.md") if p.stem not in LISTED)
        source[0] = source[0].replace("\nTOPICS\n", "\n" + "\n".join(topics) + "\n")


def setup(app):
    app.connect("source-read", _topics)
    # an incremental build rereads index.md, so a page added since the last build joins the toctree
    app.connect("env-get-outdated", lambda app, env, added, changed, removed: ["index"])
