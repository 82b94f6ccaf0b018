"""Run a Markdown page's Python blocks as a reader would: in order, in one namespace, checking what they print.

Every ```` ```python ```` block of a page (README.md, CHANGELOG.md, docs/*.md) runs; ``tests/test_doc_pages.py``
runs every page. A ```` ```text ```` block right after a Python block is that block's output: what the
block prints must equal it, where a ``...`` in it stands for any text (doctest's ELLIPSIS). Two HTML
comments, on the line before a block (GitHub and the docs site show neither), make the few exceptions
explicit, each with its reason:

    <!-- not run: a script for the launcher (two processes); tests/distributed/test_doc_job.py runs it -->
    <!-- output not checked: times differ from run to run -->
    <!-- excerpt: workbench/ops/activation.py -->

An excerpt is code quoted from the repository's sources: it is not run, and each of its lines (but those
with a ``...``) must be a line of that file, so the page cannot drift from the code it quotes.

>>> import pathlib, tempfile
>>> page = pathlib.Path(tempfile.mkdtemp()) / "page.md"
>>> _ = page.write_text("```python\\nx = 2\\nprint(x * 21)\\n```\\n\\n```text\\n42\\n```\\n")
>>> [(b.line, b.expected) for b in blocks(page)]
[(2, '42\\n')]
>>> run_page(page)["x"]
42
2

``python -m workbench.testing.doc_pages [--fake-cuda] PAGE`` runs one page the way a reader does, in a fresh
process (so what a page leaves behind, such as a gradient monitor still attached, reaches no other page);
``--fake-cuda`` puts the NumPy-backed fake cupy behind the "cuda" device for pages that show GPU code.
"""
import argparse
import contextlib
import doctest
import io
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from . import fake_cupy

# a fenced block, possibly indented inside a list item; its closing fence has the same indent
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
DIRECTIVE = re.compile(r"<!--\s*(not run|output not checked|excerpt)\s*:\s*(.*?)\s*-->\s*$", re.S)
REPO = Path(__file__).resolve().parents[2]
_CHECKER = doctest.OutputChecker()


@dataclass
class Block:
    """One ```python block: its code, the page line its code starts on, and what it should print."""

    path: Path
    line: int
    code: str
    not_run: str = ""        # the reason, when the page says the block is not run
    excerpt: str = ""        # the source file (from the repository's root) the block quotes
    expected: str = None     # the ```text block after it, when there is one
    unchecked: str = ""      # the reason, when the page says that output is not checked


def _directive(text, start):
    """The directive on the last non-blank line before offset ``start``, as (kind, reason), or None."""
    before = text[:start].rstrip("\n ").rsplit("\n", 1)[-1]
    m = DIRECTIVE.search(before)
    if m and not m.group(2):
        raise ValueError(f"a '<!-- {m.group(1)}: ... -->' comment must say why: {before.strip()!r}")
    return (m.group(1), m.group(2)) if m else None


def blocks(path):
    """The page's ```python blocks in order, each with its directive and the ```text output block after it."""
    path = Path(path)
    text = path.read_text()
    found, last_end = [], None
    for m in FENCE.finditer(text):
        lang = m.group("info").strip().split(" ")[0]
        body = textwrap.dedent(m.group("body"))
        directive = _directive(text, m.start())
        if lang == "python":
            block = Block(path, text.count("\n", 0, m.start("body")) + 1, body)
            if directive and directive[0] == "not run":
                block.not_run = directive[1]
            elif directive and directive[0] == "excerpt":
                block.excerpt = directive[1]
            elif directive:
                raise ValueError(f"{path}:{block.line}: 'output not checked' belongs before a ```text block")
            found.append(block)
        elif lang == "text" and found and last_end is not None:
            between = text[last_end:m.start()]
            if not re.sub(r"<!--.*?-->", "", between, flags=re.S).strip():  # directly after the python block
                found[-1].expected = body
                if directive and directive[0] == "output not checked":
                    found[-1].unchecked = directive[1]
        last_end = m.end() if lang == "python" else None
    return found


def run_page(path, namespace=None):
    """Run the page's blocks in order in one namespace, and return it.

    The first block that fails raises, its traceback pointing at the page's own lines; a block whose output
    differs from the ```text block the page shows raises AssertionError.
    """
    ns = {"__name__": "__main__"} if namespace is None else namespace
    for block in blocks(path):
        if block.excerpt:
            _check_excerpt(block)
        if block.not_run or block.excerpt:
            continue
        # padded so that a traceback names the line of the page
        code = compile("\n" * (block.line - 1) + block.code, str(block.path), "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, ns)
        printed = out.getvalue()
        sys.stdout.write(printed)  # passed on, as the reader would see it
        if block.expected is not None and not block.unchecked and \
                not _CHECKER.check_output(block.expected, printed, doctest.ELLIPSIS):
            raise AssertionError(f"{block.path}:{block.line}: the block printed\n{printed}\nbut the page shows"
                                 f"\n{block.expected}(change the page, or say why with '<!-- output not checked:"
                                 f" ... -->')")
    return ns


def _check_excerpt(block):
    source = REPO / block.excerpt
    if not source.is_file():
        raise AssertionError(f"{block.path}:{block.line}: quotes {block.excerpt}, which does not exist")
    lines = {line.strip() for line in source.read_text().splitlines()}
    for i, line in enumerate(block.code.splitlines()):
        if line.strip() and "..." not in line and line.strip() not in lines:
            raise AssertionError(f"{block.path}:{block.line + i}: {line.strip()!r} is not a line of {block.excerpt}"
                                 " (the code changed: quote it again)")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m workbench.testing.doc_pages", description=__doc__.split("\n")[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--fake-cuda", action="store_true", help="the fake cupy behind the 'cuda' device")
    args = parser.parse_args(argv)
    with fake_cupy.installed() if args.fake_cuda else contextlib.nullcontext():
        run_page(args.page.resolve())


if __name__ == "__main__":
    main()
