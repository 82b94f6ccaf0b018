"""`make wheel` builds a wheel that installs into a fresh virtualenv with no Node on PATH, and JupyterLab
there has the extension: `jupyter labextension list` shows it enabled and OK, and a real Chromium page
of /lab loads its plugins and draws a saved tape output with the interactive viewer.

Slow (a virtualenv with JupyterLab from the package index, a minute or two); CI runs it (make test runs
every marker).
"""
import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from labserver import running_lab

import workbench as wb

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(virtualenv, its environment): the wheel and JupyterLab installed, PATH holding the venv alone."""
    tmp = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(["make", "wheel", f"WHEEL_DIR={tmp / 'dist'}"], cwd=REPO, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("workbench-*.whl")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "JUPYTER"))}
    env["PATH"] = str(env_dir / "bin")
    assert shutil.which("node", path=env["PATH"]) is None and shutil.which("npm", path=env["PATH"]) is None
    r = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel), "jupyterlab"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return env_dir, env


def test_labextension_listed_enabled_and_ok(installed):
    env_dir, env = installed
    r = subprocess.run([str(env_dir / "bin" / "jupyter"), "labextension", "list"], env=env, capture_output=True,
                       text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    line = next((ln for ln in out.splitlines() if ln.strip().startswith("workbench ")), None)
    assert line is not None, f"workbench is not among the installed extensions:\n{out}"
    assert "enabled" in line and "OK" in line and "(python, workbench)" in line, line
    static = env_dir / "share" / "jupyter" / "labextensions" / "workbench" / "static"
    assert any(static.glob("remoteEntry.*.js"))


def _saved_tape_notebook(path):
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    bundle = wb.viz.snapshot((x * x).tanh().sum())._repr_mimebundle_()
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "wb.viz.show(loss)",
            "outputs": [{"output_type": "display_data", "data": bundle, "metadata": {}}]}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def test_lab_loads_the_extension_in_chromium(installed, browser, tmp_path):
    env_dir, env = installed
    with running_lab(env_dir / "bin" / "python", tmp_path, env) as lab:
        _saved_tape_notebook(lab.root / "saved.ipynb")
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{lab.url}/lab/tree/saved.ipynb?reset")
        page.wait_for_function("window.jupyterapp?.hasPlugin('workbench:shell')", timeout=90_000)
        assert page.evaluate("window.jupyterapp.isPluginActivated('workbench:shell')")
        assert page.evaluate("window.jupyterapp.hasPlugin('workbench:tape')")
        page.locator(".jp-OutputArea-output .wb-root .wb-node").first.wait_for(timeout=60_000)  # no kernel
        page.close()
    assert not [e for e in errors if "workbench" in e.lower()], errors
