"""Writes the option-flag tables of ``docs/optim.md`` from their one source: ``workbench.optim.flags.FLAGS``
(the optimizers) and ``workbench.autograd._gradcheck.FLAGS`` (gradcheck, gradgradcheck).

    python -m workbench.testing.flag_tables

Each table sits between ``<!-- flags:NAME -->`` and ``<!-- /flags:NAME -->``; tests/optim/test_option_flags.py
regenerates them in memory and fails when the page is out of date.
"""
import os
import re

from .. import optim
from .._option_flags import markdown
from ..autograd import _gradcheck
from ..optim import flags as _optim_flags

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "optim.md")


def optimizers():
    """Every optimizer class workbench.optim exports, in ``__all__``'s order.

    >>> [c.__name__ for c in optimizers()][:3]
    ['SGD', 'Adam', 'AdamW']
    """
    return [getattr(optim, n) for n in optim.__all__
            if isinstance(getattr(optim, n), type) and issubclass(getattr(optim, n), optim.Optimizer)
            and getattr(optim, n) is not optim.Optimizer]


def tables():
    """{block name: markdown} for the page.

    >>> sorted(tables())
    ['gradcheck', 'optimizers']
    """
    return {"optimizers": markdown(optimizers(), _optim_flags.FLAGS),
            "gradcheck": markdown([_gradcheck.gradcheck, _gradcheck.gradgradcheck], _gradcheck.FLAGS)}


def render(text):
    """``text`` (the page) with every flag block replaced by its generated table.

    >>> render("a\\n<!-- flags:gradcheck -->\\nold\\n<!-- /flags:gradcheck -->\\n").count("fast_mode") > 1
    True
    """
    for name, table in tables().items():
        text = re.sub(rf"(<!-- flags:{name} -->\n).*?(<!-- /flags:{name} -->)",
                      lambda m: m.group(1) + table + m.group(2), text, flags=re.S)
    return text


if __name__ == "__main__":
    with open(PATH) as f:
        page = f.read()
    with open(PATH, "w") as f:
        f.write(render(page))
