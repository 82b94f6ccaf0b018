"""The documentation site builds as `make docs` builds it: warnings as errors, nothing fetched, nothing
loaded from another host; and its generated pages hold what they promise.

(Named to run after tests/test_notebooks.py, whose stored runs the build renders: see docs/building.md.)
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "_ext"))
REMOTE = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = tmp_path_factory.mktemp("site")
    build = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
             "-d", str(out / "doctrees"), "docs", str(out / "html")]
    r = subprocess.run(_offline(build), cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"the docs build failed (make docs shows the same):\n{r.stderr[-6000:]}"
    return out / "html"


def _offline(cmd):
    """``cmd`` in a network namespace of its own (only loopback, which the notebook kernels talk over), so a
    build that fetched anything would fail; as it is where that cannot be set up (not root, no unshare)."""
    probe = ["unshare", "-n", "sh", "-c", "ip link set lo up"]
    if not (shutil.which("unshare") and shutil.which("ip")) or subprocess.run(probe, capture_output=True).returncode:
        return cmd
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]


def test_offline_wrapper_cuts_the_network():
    cmd = _offline([sys.executable, "-c", "import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)"])
    if cmd[0] != "unshare":
        pytest.skip("no network namespace here (needs root and unshare): the docs build ran with the network")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "Network is unreachable" in r.stderr, r.stderr


@pytest.mark.slow
def test_every_page_is_offline(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) > 40
    for page in pages:
        hit = REMOTE.search(page.read_text())
        assert not hit, f"{page.relative_to(site)} loads {hit.group(0)!r} from another host"


@pytest.mark.slow
def test_api_reference_has_every_public_name(site):
    import importlib
    import inspect

    import api_pages
    import public_names

    for modname in api_pages.MODULES:
        html = (site / "api" / f"{modname}.html").read_text()
        mod = importlib.import_module(modname)
        for name in public_names.public_names(modname):
            if modname == "workbench" and name == "Tensor":
                continue
            # a class documented on an earlier page is listed again without an index entry (no id)
            entry = f'id="{modname}.{name}"' in html or inspect.isclass(getattr(mod, name)) and \
                f'<span class="pre">{name}</span></span>' in html
            assert entry, f"{modname}.{name} has no entry in the API reference"
    tensor = (site / "api" / "tensor.html").read_text()
    for method in ("sum", "backward", "view", "add_"):
        assert f'id="workbench.Tensor.{method}"' in tensor


@pytest.mark.slow
def test_tutorials_show_their_outputs(site):
    tour = (site / "tutorials" / "01_tour.html").read_text()
    assert tour.count("<svg") >= 3, "the tour's tapes should show as their inline SVG"
    assert "tensor(" in tour  # printed results
    digits = (site / "tutorials" / "04_digits_cnn.html").read_text()
    assert "data:image/png" in digits or "_images/" in digits  # the matplotlib figure


@pytest.mark.slow
def test_compatibility_page(site):
    html = (site / "compatibility.html").read_text()
    for ns in ("torch.nn.functional", "torch.Tensor", "torch.func", "torch.distributed", "torch.linalg"):
        assert f">{ns}<" in html
    assert re.search(r"\d+%", html)


def test_compatibility_page_without_pytorch(monkeypatch):
    """Without PyTorch the page comes from the committed list and the exemptions, and says so."""
    import compat_page
    import torch_names
    from workbench.testing import api_snapshot, api_surface

    monkeypatch.setattr(torch_names.importlib.util, "find_spec", lambda name: None)
    torch_names.sweep.cache_clear()
    try:
        statuses, diffs, source = torch_names.sweep()
        assert set(api_snapshot.load()) <= set(statuses) and "not installed" in source
        missing_ok, differs_ok = api_surface.load_exemptions()
        assert all(statuses[name] == "differs" for name in diffs)
        assert all(statuses[name] == "missing" for name in missing_ok)
        assert sum(line.startswith(tuple(n + ": " for n in diffs)) for line in differs_ok) == len(differs_ok)
        text = compat_page.page()
    finally:
        torch_names.sweep.cache_clear()
    assert "PyTorch is not installed" in text and "## torch.nn.functional" in text
    assert re.search(r"\| `torch.nn` \| \d+ \| \d+ \| \d+ \| \d+% \|", text.replace("](#torchnn)", "").replace("[", ""))


@pytest.mark.browser
def test_screenshots_script_retakes_the_viz_pictures(tmp_path):
    """docs/screenshots.py, which took docs/images/*.png, still runs against the current viewer."""
    pytest.importorskip("playwright")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no /usr/bin/chromium")
    r = subprocess.run([sys.executable, "docs/screenshots.py", str(tmp_path)], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("tape-viewer", "backward-debugger", "tape-overlay", "gradient-monitor", "tape-over-time", "compare"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5000
        assert f"images/{name}.png" in (REPO / "docs" / "viz.md").read_text()


@pytest.mark.slow
def test_changelog_and_topic_pages(site):
    """CHANGELOG.md is a page of the site with its links to the topic pages rewritten to the site's."""
    log = (site / "changelog.html").read_text()
    assert "0.1.0" in log and "Added" in log and "Fixed" in log
    assert 'href="docs/' not in log and 'href="gpu.html"' in log
    for topic in ("compile", "distributed", "gpu", "serialization-format", "architecture", "viz"):
        assert (site / f"{topic}.html").exists(), f"docs/{topic}.md is not a page of the site"
