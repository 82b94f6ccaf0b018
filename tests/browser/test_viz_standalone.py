"""snapshot.save("x.html") is one offline file: the viewer renders it and replays the trace, no server."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import workbench as wb  # noqa: E402
from models import MLP, mse  # noqa: E402

pytestmark = pytest.mark.browser


def test_standalone_html_renders_and_replays(browser, tmp_path):
    m = MLP(name="<b>enc</b>")
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    with wb.viz.record():
        loss = mse(m(x), y)
    try:
        path = wb.viz.snapshot(loss, m, trace=True, title="a </script><b>title</b>").save(tmp_path / "tape.html")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(Path(path).as_uri())
    page.locator(".wb-root .wb-node").first.wait_for(timeout=20_000)
    assert "a </script><b>title</b>" in page.locator(".wb-root").get_attribute("aria-label")
    assert page.locator(".wb-root b").count() == 0  # user strings stay text
    counter = page.locator(".wb-counter")
    total = int(counter.inner_text().split("/")[1])
    page.locator(".wb-btn[aria-keyshortcuts='n']").click()
    assert counter.inner_text().strip().startswith(f"1 / {total}")
    page.locator(".wb-btn[aria-keyshortcuts='c']").click()
    assert counter.inner_text().strip().startswith(f"{total} / {total}")
    assert all(u.startswith(("file:", "blob:", "data:")) for u in requests), requests  # offline
    assert errors == []
    page.close()
