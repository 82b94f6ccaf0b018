"""PyTorch's names and workbench's answer for each, for the API reference and the compatibility page.

From the live sweep (``workbench.testing.api_surface``) where PyTorch is installed (the [dev] extra);
without it, from the committed list ``workbench/testing/api_names.tsv`` and the exemptions file, which
holds every difference the sweep may report.
"""
import functools
import importlib.util

from workbench.testing import api_snapshot, api_surface


@functools.cache
def sweep():
    """(statuses {name: "ok"|"differs"|"missing"}, differences {name: [text]}, source)."""
    if importlib.util.find_spec("torch") is not None:
        results = api_snapshot.live()
        return ({n: r.status for n, r in results.items()},
                {n: [d.split(": ", 1)[1] for d in r.differences] for n, r in results.items()},
                "the installed PyTorch " + __import__("torch").__version__)
    statuses = api_snapshot.load()
    _, differs_ok = api_surface.load_exemptions()
    diffs = {}
    for line in differs_ok:
        name, text = line.split(": ", 1)
        diffs.setdefault(name, []).append(text)
    return statuses, diffs, f"the committed list ({api_snapshot.SNAPSHOT.name}; PyTorch is not installed)"


def present_in(modname):
    """Names of workbench module ``modname`` that answer a PyTorch name (torch.nn.X -> workbench.nn.X)."""
    prefix = "torch" + modname[len("workbench"):] + "."
    statuses = sweep()[0]
    return {n[len(prefix):] for n, s in statuses.items()
            if n.startswith(prefix) and "." not in n[len(prefix):] and s in api_snapshot.PRESENT}
