"""Reuses the jupyter-lab and chromium fixtures of tests/browser/conftest.py for the front-end's own
real-browser check (not collected by the default `pytest`; run `pytest extensions/test/browser`)."""

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "workbench_browser_fixtures", Path(__file__).resolve().parents[3] / "tests" / "browser" / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _fixtures  # dataclasses look their module up there
_spec.loader.exec_module(_fixtures)

lab, browser, page, open_notebook = _fixtures.lab, _fixtures.browser, _fixtures.page, _fixtures.open_notebook
