"""Every page runs as written: README.md, CHANGELOG.md and docs/*.md, each page's Python blocks in order in one
namespace, what they print checked against the ```text block the page shows (workbench/testing/doc_pages.py).

A block a page does not run says why in a ``<!-- not run: ... -->`` comment; NOT_RUN below is the whole list,
so a new exception is a visible change here too.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.testing import doc_pages
from workbench.testing.doctests import docstring_failures

REPO = Path(__file__).resolve().parents[1]
# the pages in the repository (not docs/compatibility.md, which the docs build writes)
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md",
         *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "compatibility.md")]

# page -> the number of its python blocks it does not run (each says why on the page)
NOT_RUN = {"docs/distributed.md": 3}



def _extensions_page(tmp_path):
    """docs/extensions.md builds a Numba op, a C++ op (a compiler) and a CUDA op (on the fake cupy here)."""
    pytest.importorskip("numba")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("needs a C++ compiler")
    return ["--fake-cuda"], {"WORKBENCH_EXTENSIONS_DIR": str(tmp_path / "extensions")}


# what a page needs around it that its reader has (a GPU, a compiler): -> (arguments, environment)
SETUP = {"docs/extensions.md": _extensions_page}


def _name(path):
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_page_runs_as_written(page, tmp_path):
    blocks = doc_pages.blocks(page)
    assert sum(bool(b.not_run) for b in blocks) == NOT_RUN.get(_name(page), 0), \
        f"{_name(page)}: its '<!-- not run -->' blocks are not the ones NOT_RUN lists"
    if not blocks:
        return
    args, env = SETUP[_name(page)](tmp_path) if _name(page) in SETUP else ([], {})
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", **env}
    # in a process of its own, from a folder of its own (pages write tape.html, trace.json where they run)
    r = subprocess.run([sys.executable, "-m", "workbench.testing.doc_pages", *args, str(page)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{_name(page)} does not run as written:\n{r.stderr[-4000:]}"


def test_every_page_with_code_is_here():
    assert {"README.md", "docs/viz.md", "docs/cost.md", "docs/compile.md"} <= {_name(p) for p in PAGES}
    assert all(_name(p) in {_name(q) for q in PAGES} for p in map(Path, (REPO / n for n in NOT_RUN)))


def test_output_blocks_are_checked(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n```python\nprint('one')\n```\n\n```text\ntwo\n```\n")
    with pytest.raises(AssertionError, match="printed\none\n"):
        doc_pages.run_page(page)
    page.write_text("```python\nprint('one', 1.25)\n```\n<!-- output not checked: a time -->\n```text\ntwo\n```\n"
                    "```python\nprint('two', 3.5)\n```\n```text\ntwo ...\n```\n")
    assert [b.unchecked for b in doc_pages.blocks(page)] == ["a time", ""]
    doc_pages.run_page(page)


def test_a_failing_block_names_its_page_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```python\nx = 1\nmodel(x)\n```\n")
    with pytest.raises(NameError) as err:
        doc_pages.run_page(page)
    frame = err.traceback[-1]
    assert Path(frame.path) == page and frame.lineno + 1 == 5


def test_not_run_needs_a_reason(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: needs two processes -->\n```python\nraise SystemExit\n```\n")
    assert doc_pages.blocks(page)[0].not_run == "needs two processes"
    doc_pages.run_page(page)
    page.write_text("<!-- not run: -->\n```python\nraise SystemExit\n```\n")
    with pytest.raises(ValueError, match="must say why"):
        doc_pages.blocks(page)


def test_docstring_examples():
    assert not docstring_failures("workbench.testing.doc_pages")


# ---- links: every relative link of every page leads to a file the repository has, or a page the docs build
# writes, and every #anchor to a heading there (as GitHub and the site, myst_heading_anchors = 3, spell it)

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def _generated():
    """Pages the docs build writes (docs/_ext): the API reference, the tutorials, the compatibility page."""
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import api_pages
    finally:
        sys.path.pop(0)
    api = {f"docs/api/{name}.rst" for name in ("index", "tensor", *api_pages.MODULES)}
    tutorials = {f"docs/tutorials/{nb.name}" for nb in (REPO / "notebooks").glob("*.ipynb")}
    return api | tutorials | {"docs/compatibility.md"}


def slug(heading):
    """A heading's anchor: GitHub's rule, which MyST's default follows (lower case, punctuation dropped,
    spaces to hyphens)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path, max_level=6):
    text = FENCE_ANY.sub("", path.read_text())
    return {slug(h) for hashes, h in HEADING.findall(text) if len(hashes) <= max_level}


FENCE_ANY = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)


def links(page):
    text = FENCE_ANY.sub("", page.read_text())
    return [t for t in LINK.findall(re.sub(r"`[^`\n]*`", "", text)) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def broken_links(page, repo=REPO):
    """What is wrong with ``page``'s relative links, one line per broken link."""
    generated, wrong = _generated(), []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.is_relative_to(repo):
            wrong.append(f"{target}: outside the repository (a clone lacks it)")
            continue
        rel = dest.relative_to(repo).as_posix()
        if not dest.exists() and rel not in generated:
            wrong.append(f"{target}: there is no {rel}")
        # the site gives anchors to headings of levels 1-3 (conf.py's myst_heading_anchors)
        elif anchor and dest.exists() and anchor not in anchors(dest, 3 if rel.startswith("docs/") else 6):
            wrong.append(f"{target}: {rel} has no heading #{anchor} (of level 1-3 on a docs page)")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_links_lead_somewhere(page):
    assert not broken_links(page), f"{_name(page)} links: {broken_links(page)}"


def test_link_checker_finds_broken_links(tmp_path):
    assert "cost.md" in links(REPO / "docs" / "viz.md")
    assert slug("The profiler: `workbench.profiler`") == "the-profiler-workbenchprofiler"
    assert "what-the-tape-costs-flops-saved-memory-time" in anchors(REPO / "docs" / "cost.md")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "gpu.md").write_text("# GPU\n\n## Set-up: `cupy`\n\n#### Deep\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text("[a](gpu.md#set-up-cupy) [b](gpu.md) [c](#probe) `[d](x.md)` ![e](x.png) [f](https://x.org)\n"
                    "# Probe\n")
    assert broken_links(page, tmp_path) == []
    page.write_text("[a](gpu.md#no-such) [b](no-such.md) [c](../../outside.md) [d](gpu.md#deep) [e](api/nn.rst)\n")
    assert [w.split(":")[0] for w in broken_links(page, tmp_path)] == [
        "gpu.md#no-such", "no-such.md", "../../outside.md", "gpu.md#deep", "api/nn.rst"]
