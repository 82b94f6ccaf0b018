"""Writes docs/compatibility.md: every public name of PyTorch's swept namespaces, whether workbench has it,
a percentage per namespace, and the known differences with their reasons (api_exemptions.toml)."""
import re
from pathlib import Path

import torch_names
from workbench.testing import api_surface

OUT = Path(__file__).resolve().parents[1] / "compatibility.md"
UNTRIAGED = "not yet triaged: the sweep lists this namespace, the exemptions file does not yet hold it"


def _md(text):
    return re.sub(r"([\\`*_<>\[\]|#])", r"\\\1", text)


def _code(name):
    return f"`{name}`"


def namespace_of(name):
    return name.rsplit(".", 1)[0]


def page():
    statuses, diffs, source = torch_names.sweep()
    missing_ok, differs_ok = api_surface.load_exemptions()
    order = [ns for ns, _ in api_surface.NAMESPACES + api_surface.REPORTED]
    groups = {ns: [] for ns in order}
    for name in sorted(statuses):
        groups.setdefault(namespace_of(name), []).append(name)
    out = ["# PyTorch compatibility", "",
           f"Generated when this site was built, from {source}: every public name of PyTorch's user-facing "
           "namespaces, whether `import workbench as torch` gives it, and how it differs. *Has* means the name "
           "exists and accepts every call PyTorch's signature allows (same positional order and names, "
           "keywords and defaults); *differs* lists what a call cannot count on. The reasons come from "
           "`workbench/testing/api_exemptions.toml`, the sweep is `workbench/testing/api_surface.py`, and "
           "`tests/test_api_snapshot.py` fails when a name that was there disappears.", "",
           "| namespace | names | workbench has | of which differ | share |", "|---|---:|---:|---:|---:|"]
    total = [0, 0, 0]
    for ns in order + sorted(set(groups) - set(order)):
        names = groups[ns]
        if not names:
            continue
        has = sum(statuses[n] != "missing" for n in names)
        dif = sum(statuses[n] == "differs" for n in names)
        total = [total[0] + len(names), total[1] + has, total[2] + dif]
        out.append(f"| [{_code(ns)}](#{_anchor(ns)}) | {len(names)} | {has} | {dif} | {100 * has / len(names):.0f}% |")
    out.append(f"| all | {total[0]} | {total[1]} | {total[2]} | {100 * total[1] / total[0]:.0f}% |")
    for ns in order + sorted(set(groups) - set(order)):
        names = groups[ns]
        if names:
            out += section(ns, names, statuses, diffs, missing_ok, differs_ok)
    return "\n".join(out) + "\n"


def _anchor(ns):
    return re.sub(r"[^a-z0-9 -]", "", ns.lower()).replace(" ", "-")


def section(ns, names, statuses, diffs, missing_ok, differs_ok):
    has = [n for n in names if statuses[n] != "missing"]
    out = ["", f"## {ns}", "", f"{len(has)} of {len(names)} names ({100 * len(has) / len(names):.0f}%)."]
    short = {n: n[len(ns) + 1:] for n in names}
    ok = [n for n in names if statuses[n] == "ok"]
    if ok:
        out += ["", "**Has:** " + ", ".join(_code(short[n]) for n in ok) + "."]
    differing = [n for n in names if statuses[n] == "differs"]
    if differing:
        out += ["", "**Has, with differences:**", "", "| name | difference | why |", "|---|---|---|"]
        for n in differing:
            for d in diffs.get(n, []):
                reason = differs_ok.get(f"{n}: {d}", UNTRIAGED)
                out.append(f"| {_code(short[n])} | {_md(d)} | {_md(reason)} |")
    missing = [n for n in names if statuses[n] == "missing"]
    if missing:
        by_reason = {}
        for n in missing:
            by_reason.setdefault(missing_ok.get(n, UNTRIAGED), []).append(short[n])
        out += ["", "**Missing**, by reason:", ""]
        for reason, group in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            out.append(f"- {_md(reason)}: " + ", ".join(_code(s) for s in group) + ".")
    return out


def generate(app):
    text = page()
    if not OUT.exists() or OUT.read_text() != text:
        OUT.write_text(text)


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True}
