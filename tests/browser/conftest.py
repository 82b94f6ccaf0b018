"""Fixtures for browser tests: a real ``jupyter lab`` server and a headless Debian chromium page.

Tests using them are marked ``@pytest.mark.browser``; they skip when chromium or playwright is
missing. Never run ``playwright install``: the system chromium (``apt-get install chromium``) is used
through ``executable_path``.

>>> def test_viewer(lab, page):                     # doctest: +SKIP
...     page.goto(f"{lab.url}/lab/tree/demo.ipynb")
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@dataclass
class Lab:
    url: str
    root: Path

    def write_notebook(self, name: str, cells: list[dict]) -> Path:
        """Writes an .ipynb under the server root; ``cells`` are nbformat v4 cell dicts."""
        nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
              "nbformat": 4, "nbformat_minor": 5}
        path = self.root / name
        path.write_text(json.dumps(nb))
        return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _labextension_args(tmp: Path) -> list[str]:
    """Serve the built labextension even when workbench is not pip-installed into this environment."""
    installed = Path(sys.prefix, "share", "jupyter", "labextensions", "workbench", "package.json")
    built = REPO / "workbench" / "labextension"
    if installed.exists() or not (built / "package.json").exists():
        return []
    extra = tmp / "labextensions"
    extra.mkdir()
    (extra / "workbench").symlink_to(built, target_is_directory=True)
    return [f"--LabServerApp.extra_labextensions_path={extra}"]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
           "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
           f"--LabApp.workspaces_dir={tmp / 'ws'}", "--LabApp.expose_app_in_browser=True",
           *_labextension_args(tmp)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"jupyter lab did not start; see {tmp / 'server.log'}")
            time.sleep(0.3)
    yield Lab(url=url, root=root)
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(autouse=True)
def _shut_kernels_down(request):
    """Each test's kernels end with it: kernels left running by earlier tests of the session (one per
    notebook opened) load the machine until a later test's waits time out."""
    yield
    if "lab" not in request.fixturenames:
        return
    lab = request.getfixturevalue("lab")
    try:
        with urllib.request.urlopen(f"{lab.url}/api/kernels", timeout=10) as r:
            kernels = json.load(r)
        for k in kernels:
            urllib.request.urlopen(urllib.request.Request(f"{lab.url}/api/kernels/{k['id']}", method="DELETE"), timeout=30)
    except OSError:  # the server is gone or busy: nothing to clean up that it could still run
        pass


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
    """A fresh page; JS errors on it fail the test (they are collected in ``page.errors``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
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
