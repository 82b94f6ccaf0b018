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
    # The exemptions file is current wherever tests/test_api_surface.py passes (it holds every missing
    # name and every difference of the gated namespaces); the list may be older: the file decides.
    statuses = api_snapshot.load()
    missing_ok, differs_ok = api_surface.load_exemptions()
    gated = {ns for ns, _ in api_surface.NAMESPACES}
    diffs = {}
    for line in differs_ok:
        name, text = line.split(": ", 1)
        diffs.setdefault(name, []).append(text)
    for name, status in statuses.items():
        if name in missing_ok:
            statuses[name] = "missing"
        elif name in diffs:
            statuses[name] = "differs"
        elif name.rsplit(".", 1)[0] in gated:
            statuses[name] = "ok"  # landed or fixed since the list was written
    statuses.update({name: "missing" for name in missing_ok if name not in statuses})
    statuses.update({name: "differs" for name in diffs if name not in statuses})
    return statuses, diffs, f"the committed list ({api_snapshot.SNAPSHOT.name}; PyTorch is not installed)"


def present_in(modname):
    """Names of workbench module ``modname`` that answer a PyTorch name (torch.nn.X -> workbench.nn.X)."""
    prefix = "torch" + modname[len("workbench"):] + "."
    statuses = sweep()[0]
    return {n[len(prefix):] for n, s in statuses.items()
            if n.startswith(prefix) and "." not in n[len(prefix):] and s in api_snapshot.PRESENT}
