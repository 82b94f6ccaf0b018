"""Real models' structure in a real JupyterLab: a GRU's tape groups by layer, then time step; a module
called in a loop is one series box ("cell ×200") that opens into one box per call ("cell · call 3/200");
a composite op is one box."""
import pytest

from nbhelp import open_and_run, page_errors, wait_idle

pytestmark = pytest.mark.browser

GRU = """class Net(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = wb.nn.GRU(4, 8, num_layers=2)
        self.head = wb.nn.Linear(8, 1)
    def forward(self, x):
        out, h = self.rnn(x)
        return self.head(out[-1])
net = Net()
wb.viz.show(net(wb.randn(12, 2, 4)).pow(2).mean(), net, title="two-layer GRU")"""

LOOP = """class Cell(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = wb.nn.Linear(8, 8)
    def forward(self, h):
        return self.lin(h).tanh()
class Unrolled(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = Cell()
    def forward(self, h):
        for _ in range(200):
            h = self.cell(h)
        return h
loop = Unrolled()
wb.viz.show(loop(wb.randn(2, 8)).sum(), loop, title="unrolled loop")"""


def _viewer(page, title):
    v = page.locator(f'.jp-OutputArea-output .wb-root[aria-label*="{title}"]').first
    v.wait_for(timeout=60_000)
    v.locator(".wb-box").first.wait_for(timeout=30_000)
    return v


def _open(v, text):
    # wait for the box's own status line ("… opened"), not for the element count to change: a culled
    # view draws in more than one pass (layout, then reveal and repaint), and a count taken between
    # them was what made this test fail under load
    v.locator(".wb-status").evaluate("el => { el.textContent = ''; }")
    v.locator(".wb-box", has_text=text).first.click()
    v.locator(".wb-status").filter(has_text="opened").wait_for(timeout=30_000)


def _count(v, text, at_least):
    """Boxes containing ``text`` once at least ``at_least`` of them are drawn (the repaint may trail)."""
    sel = ".wb-box"
    v.page.wait_for_function(
        "([el, sel, text, n]) => [...el.querySelectorAll(sel)].filter(b => b.textContent.includes(text)).length >= n",
        arg=[v.element_handle(), sel, text, at_least], timeout=30_000)
    return v.locator(sel, has_text=text).count()


def test_gru_and_unrolled_loop_group_by_call(lab, page):
    open_and_run(page, lab, "structure.ipynb", [GRU, LOOP])
    wait_idle(page)
    gru = _viewer(page, "two-layer GRU")
    assert gru.locator(".wb-box").count() == 2  # rnn and head, each one box
    _open(gru, "rnn")
    layers = gru.locator(".wb-box .wb-t-title").all_text_contents()
    assert any("rnn.layer0" in t for t in layers) and any("rnn.layer1" in t for t in layers)
    _open(gru, "rnn.layer0")
    assert _count(gru, "step ×12", 1) == 1
    assert "series of 12 calls" in gru.locator(".wb-box", has_text="step ×12").text_content()
    _open(gru, "step ×12")
    assert _count(gru, "rnn.layer0.step · call ", 12) == 12
    assert gru.locator(".wb-box", has_text="rnn.layer0.step · call 12/12").count() == 1

    loop = _viewer(page, "unrolled loop")
    loop.scroll_into_view_if_needed()
    assert loop.locator(".wb-box").count() == 1
    assert "cell ×200" in loop.locator(".wb-box").first.text_content()
    _open(loop, "cell ×200")
    assert _count(loop, "cell · call ", 20) >= 20  # one box per call (the view may cull)
    assert page_errors(page) == []
