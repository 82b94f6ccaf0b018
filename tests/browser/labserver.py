"""A real ``jupyter lab`` server for the browser tests (the ``lab`` fixture, and the wheel test's own).

>>> with running_lab(sys.executable, tmp, dict(os.environ)) as lab:     # doctest: +SKIP
...     lab.write_notebook("x.ipynb", [])
"""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


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


@contextlib.contextmanager
def running_lab(python, tmp: Path, env: dict, extra_args=()):
    """A ``jupyter lab`` of ``python``'s environment on a free port, serving ``tmp/root``; yields a Lab.

    tests/browser/test_wheel_install.py starts one in a fresh virtualenv with the built wheel.
    """
    root = tmp / "root"
    root.mkdir(exist_ok=True)
    # no "get notified about Jupyter news?" toast over the outputs, and every cell kept in the page (a
    # windowed notebook drops off-screen outputs): the same page for assertions and screenshots
    for plugin, value in (("apputils-extension/notification", {"fetchNews": "false"}),
                          ("notebook-extension/tracker", {"windowingMode": "none"})):
        path = tmp / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port = _free_port()
    cmd = [str(python), "-m", "jupyter", "lab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
           "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
           f"--LabApp.workspaces_dir={tmp / 'ws'}",
           # the theme a test switches to is a user setting: kept in this lab's own directory, never the
           # user's ~/.jupyter/lab/user-settings (a dark theme would leak into their lab and later runs)
           f"--LabServerApp.user_settings_dir={tmp / 'settings'}", "--LabApp.expose_app_in_browser=True", *extra_args]
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
    try:
        yield Lab(url=url, root=root)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
