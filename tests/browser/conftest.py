"""Fixtures for browser tests: a real ``jupyter lab`` server and a headless Debian chromium page.

Tests using them are marked ``@pytest.mark.browser``; they skip when chromium or playwright is
missing. Never run ``playwright install``: the system chromium (``apt-get install chromium``) is used
through ``executable_path``.

>>> def test_viewer(lab, page):                     # doctest: +SKIP
...     page.goto(f"{lab.url}/lab/tree/demo.ipynb")
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from labserver import Lab, running_lab  # noqa: F401 - Lab: the type the fixture yields

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


def _newest(paths) -> tuple[float, Path | None]:
    return max(((p.stat().st_mtime, p) for p in paths if p.is_file()), default=(0.0, None))


def _labextension_args(tmp: Path) -> list[str]:
    """Serve the extension built in this checkout (``workbench/labextension``), never an older copy.

    ``make`` copies that build into the venv (share/jupyter/labextensions/workbench); a build run with
    ``npm run build`` alone leaves the copy stale. JupyterLab looks in ``extra_labextensions_path``
    first, so pointing it at the build wins over any installed copy. A build older than its sources, or
    no extension at all, fails the tests with what to run, rather than testing stale or missing JS.
    """
    built = REPO / "workbench" / "labextension"
    installed = Path(sys.prefix, "share", "jupyter", "labextensions", "workbench", "package.json")
    if not (built / "package.json").exists():
        if installed.exists():  # installed from a wheel: the copy is the build
            return []
        pytest.fail("no JupyterLab extension built: run `make setup` (or `cd extensions && npm run build`)", pytrace=False)
    src = REPO / "extensions"
    when, newest = _newest([*src.glob("src/**/*"), src / "build.mjs", src / "package.json"])
    built_at, _ = _newest(built.rglob("*"))
    if when > built_at:
        pytest.fail(f"the JupyterLab extension in {built} is older than {newest}: rebuild it "
                    "(`make setup`, or `cd extensions && npm run build`)", pytrace=False)
    extra = tmp / "labextensions"
    extra.mkdir()
    (extra / "workbench").symlink_to(built, target_is_directory=True)
    return [f"--LabServerApp.extra_labextensions_path={extra}"]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    tmp = tmp_path_factory.mktemp("lab")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with running_lab(sys.executable, tmp, env, _labextension_args(tmp)) as lab:
        yield lab


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page; JS errors on it fail the test (their messages are collected in ``page.errors``, with their
    stacks in ``page.error_stacks``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors, pg.error_stacks = [], []

    def on_error(e):
        pg.errors.append(str(e))
        pg.error_stacks.append(e.stack or "")

    pg.on("pageerror", on_error)
    yield pg
    context.close()


def open_notebook(page, lab: Lab, name: str, *, run: bool = True, theme: str = "light") -> None:
    """Opens a notebook in JupyterLab, waits for an idle kernel and optionally runs every cell."""
    # ?reset: start from an empty workspace, or JupyterLab restores the previous test's tabs.
    page.goto(f"{lab.url}/lab/tree/{name}?reset")
    page.wait_for_function(f"window.jupyterapp?.shell.currentWidget?.context?.path === {name!r}"
                           " && window.jupyterapp.shell.currentWidget.sessionContext", timeout=60_000)
    lab_theme = "JupyterLab Dark" if theme == "dark" else "JupyterLab Light"
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{lab_theme}'}})")
    if run:
        page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                               timeout=60_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
