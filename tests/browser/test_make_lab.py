"""`make lab`, the README's main command, run as the README says: it starts JupyterLab on the notebooks
(as root too), honours PORT / JUPYTER_PORT / NO_BROWSER, lands on the tour, and the tour's first tape
output renders in Chromium. The server is stopped by its process group."""
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOUR = "01_tour.ipynb"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MakeLab:
    """`make lab ARGS` in the checkout, in a process group of its own, with a known token."""

    def __init__(self, tmp_path, args=(), env=None):
        self.token = secrets.token_hex(16)
        self.log_path = tmp_path / "make-lab.log"
        self.log = open(self.log_path, "wb")
        # a config dir of the test's own, only to expose window.jupyterapp to the test's page
        config = tmp_path / "jupyter-config"
        config.mkdir(exist_ok=True)
        (config / "jupyter_lab_config.json").write_text('{"LabApp": {"expose_app_in_browser": true}}')
        env = {**os.environ, "JUPYTER_TOKEN": self.token, "JUPYTER_CONFIG_DIR": str(config), **(env or {})}
        self.proc = subprocess.Popen(["make", "lab", *args], cwd=REPO, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, port, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={self.token}", timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"make lab did not serve on port {port}:\n{self.text()[-3000:]}")
                time.sleep(0.3)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def make_lab(tmp_path):
    # JupyterLab autosaves open notebooks: put the tour back as committed, without outputs
    tour = REPO / "notebooks" / TOUR
    committed = tour.read_bytes()
    started = []

    def start(args=(), env=None):
        started.append(MakeLab(tmp_path, args, env))
        return started[-1]

    yield start
    for lab in started:
        lab.stop()
    if tour.read_bytes() != committed:
        tour.write_bytes(committed)


def test_make_lab_opens_the_tour_and_draws_its_tape(make_lab, page):
    port = _free_port()
    lab = make_lab([f"PORT={port}", "NO_BROWSER=1"])
    lab.wait_ready(port)
    if os.geteuid() == 0:
        assert "--allow-root" in lab.text()  # make echoes the command it runs
    # the printed URL is the tour's
    assert re.search(rf"http://(localhost|127\.0\.0\.1):{port}/lab/tree/{re.escape(TOUR)}", lab.text()), lab.text()
    # the server's landing page is the tour: / redirects there
    page.goto(f"http://127.0.0.1:{port}/?token={lab.token}&reset")
    page.wait_for_function(f"window.jupyterapp?.shell.currentWidget?.context?.path === {TOUR!r}"
                           " && window.jupyterapp.shell.currentWidget.sessionContext?.session?.kernel?.status === 'idle'",
                           timeout=120_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator(".jp-OutputArea-output .wb-root .wb-node").first.wait_for(timeout=120_000)
    assert page.errors == []


def test_make_lab_honours_jupyter_port(make_lab):
    port = _free_port()
    lab = make_lab(["NO_BROWSER=1"], env={"JUPYTER_PORT": str(port)})
    lab.wait_ready(port)
    assert f":{port}/lab/tree/{TOUR}" in lab.text()


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs util-linux's setpriv to act as another user")
def test_make_lab_passes_allow_root_only_as_root():
    dry = ["make", "-n", "lab", "PORT=8899", "NO_BROWSER=1"]
    as_root = subprocess.run(dry, cwd=REPO, capture_output=True, text=True, check=True).stdout
    # an ordinary user (nobody): the same command line without --allow-root
    as_user = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *dry], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in as_user.splitlines() if "jupyter lab" in ln)
    assert "--allow-root" not in line and "--ServerApp.port=8899" in line and "--no-browser" in line
    if os.geteuid() == 0:
        assert "--allow-root" in next(ln for ln in as_root.splitlines() if "jupyter lab" in ln)
