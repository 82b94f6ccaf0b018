"""The committed list of PyTorch's names with workbench's answer for each, and the check that none is lost.

``api_names.tsv`` (next to this file) holds one line per name of the API sweep (``api_surface``, over its
NAMESPACES and REPORTED namespaces): the qualified PyTorch name and ``ok``, ``differs`` or ``missing``.
``tests/test_api_snapshot.py`` fails when a name the list says workbench has is missing now; the
documentation's compatibility page is built from the live sweep where PyTorch is installed and from this
list where it is not. After an intended removal, or to record names that landed, rewrite the list:

    python -m workbench.testing.api_snapshot --update

>>> from workbench.testing import api_snapshot
>>> api_snapshot.load()["torch.zeros"]
'ok'
"""
import sys
from pathlib import Path

from . import api_surface

SNAPSHOT = Path(__file__).with_name("api_names.tsv")
PRESENT = ("ok", "differs")


def live():
    """{name: Result} from the sweep against the installed PyTorch (ImportError without it)."""
    return api_surface.sweep(api_surface.NAMESPACES + api_surface.REPORTED)


def load(path=SNAPSHOT):
    """{name: status} as committed."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, status = line.split("\t")
            out[name] = status
    return out


def write(results, path=SNAPSHOT):
    lines = [f"{name}\t{results[name].status}" for name in sorted(results)]
    path.write_text("# PyTorch name\tworkbench (ok, differs, missing); rewrite: python -m workbench.testing."
                    "api_snapshot --update\n" + "\n".join(lines) + "\n")


def lost(results, committed):
    """Names the committed list has as present that the sweep finds missing now."""
    return sorted(n for n, s in committed.items() if s in PRESENT and n in results and results[n].status == "missing")


def main(argv):
    results = live()
    if "--update" in argv:
        write(results)
        print(f"wrote {len(results)} names to {SNAPSHOT.name}", file=sys.stderr)
    gone = lost(results, load())
    print("\n".join(gone) if gone else "no name was lost", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
