"""Which public ops the op specs exercise, and which are exempt (``spec_exemptions.toml``, each with its reason).

A public op is a name in one of the namespaces in ``NAMESPACES``: the Tensor method registry, workbench's
top-level functions, ``nn.functional``, ``linalg``, ``fft`` and ``special``. Names bound to one object
(``wb.absolute is wb.abs``, ``Tensor.exp`` and ``wb.exp``) are one op. A spec covers the ops its ``op``
calls directly: ``covered()`` runs every spec sample once with every public name replaced by a
recorder, so a spec cannot claim an op it does not call, and an op used only inside another op's
implementation does not count. An in-place form (``x.exp_()``, ``x += y``) is covered through its
out-of-place op's spec: the test replays the recorded call in place and compares.

    python -m workbench.testing.spec_coverage      # the public ops with neither a spec nor an exemption
"""
import contextlib
import functools
import inspect
import pathlib
import sys
import threading
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser ([dev] installs it there)
    import tomli as tomllib

import numpy as np

import workbench as wb
import workbench.nn.functional as F

from . import op_specs

EXEMPTIONS_FILE = pathlib.Path(__file__).with_name("spec_exemptions.toml")
NAMESPACES = {"Tensor": wb.Tensor, "workbench": wb, "nn.functional": F, "linalg": wb.linalg, "fft": wb.fft,
              "special": wb.special}


def _registry():
    return sys.modules["workbench.tensor"].REGISTRY


def _public_names(label, ns):
    if label == "Tensor":
        return sorted(n for n in _registry() if not n.startswith("_") or (n.startswith("__") and n.endswith("__")))
    if label == "workbench":
        names = set(wb.ops.__all__) | {n for n in vars(wb) if not n.startswith("_")} | set(wb._LAZY)
        return sorted(n for n in names if n not in wb._SUBMODULES)
    return sorted(n for n in getattr(ns, "__all__", dir(ns)) if not n.startswith("_"))


def _raw(ns, name):
    # what the namespace holds: the Tensor class's own descriptor (property, function), else the attribute
    return vars(ns)[name] if isinstance(ns, type) and name in vars(ns) else getattr(ns, name)


def _target(obj):
    # the object that identifies an op: a property's getter, a wrapped function's innermost function
    if isinstance(obj, property):
        obj = obj.fget
    return inspect.unwrap(obj) if callable(obj) else None


@functools.cache
def public_ops():
    """{qualified name: identity key} for every public op: a callable (or property) that is not a class."""
    out = {}
    for label, ns in NAMESPACES.items():
        for name in _public_names(label, ns):
            obj = _raw(ns, name)
            if isinstance(obj, type) or inspect.ismodule(obj):
                continue
            target = _target(obj)
            if target is not None:
                out[f"{label}.{name}"] = id(target)
    return out


_depth = threading.local()


def _recording(fn, key, log):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        depth = getattr(_depth, "n", 0)
        if depth == 0:
            log.setdefault(key, (args, kwargs))
        _depth.n = depth + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _depth.n = depth

    return call


@contextlib.contextmanager
def _recorders(log):
    # every public name of every namespace replaced by a recorder of the outermost public call; restored on exit
    saved = []
    try:
        for label, ns in NAMESPACES.items():
            for name in _public_names(label, ns):
                obj = _raw(ns, name)
                if isinstance(obj, type) or inspect.ismodule(obj):
                    continue
                key = _target(obj)
                if key is None:
                    continue
                if isinstance(obj, property):
                    new = property(_recording(obj.fget, id(key), log), obj.fset, obj.fdel, obj.__doc__)
                else:
                    new = _recording(obj, id(key), log)
                saved.append((ns, name, obj))
                setattr(ns, name, new)
        yield
    finally:
        for ns, name, obj in reversed(saved):
            setattr(ns, name, obj)


def _args(sample, requires_grad):
    out = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = wb.tensor(a)
            grad = requires_grad and t.is_floating_point() and i not in sample.nondiff
            out.append(t.requires_grad_() if grad else t)
        else:
            out.append(a)
    return out


@functools.cache
def covered():
    """{spec name: {identity key of a public op it calls directly: (args, kwargs) of its first such call}}."""
    specs = op_specs.load_all()
    out = {}
    for s in specs.values():
        log = {}
        for sample in s.samples:
            args = _args(sample, s.gradcheck and sample.grad)
            with _recorders(log):
                s.op(*args, **sample.kwargs)
            # a spec may hold the public function itself (spec("exp", wb.exp, ...)), bound before any recorder
            log.setdefault(id(_target(s.op)), (tuple(args), sample.kwargs))
        out[s.name] = log
    return out


def inplace_forms():
    """{in-place op: its out-of-place op}, qualified names: ``Tensor.x_`` and ``workbench.x_`` of ``x``,
    ``Tensor.__iadd__`` of ``Tensor.__add__``."""
    ops = public_ops()
    out = {}
    for name in ops:
        label, short = name.split(".", 1) if not name.startswith("nn.") else ("nn.functional", name[14:])
        if short.startswith("__i") and short.endswith("__"):
            base = f"{label}.__{short[3:]}"
        elif short.endswith("_") and not short.startswith("_"):
            base = f"{label}.{short[:-1]}"
        else:
            continue
        if base in ops:
            out[name] = base
    return out


def inplace_calls():
    """{in-place op: (its out-of-place op, args, kwargs)} for every in-place form whose out-of-place op a spec
    calls with a tensor first: the call the in-place form is checked on (tests/ops/test_spec_coverage.py)."""
    ops = public_ops()
    calls = {}
    for log in covered().values():
        for key, call in log.items():
            calls.setdefault(key, call)
    out = {}
    for name, base in inplace_forms().items():
        call = calls.get(ops[base])
        if call is not None and call[0] and isinstance(call[0][0], wb.Tensor):
            out[name] = (base, *call)
    return out


def exemptions():
    """{qualified name: reason} from spec_exemptions.toml."""
    data = tomllib.loads(EXEMPTIONS_FILE.read_text())
    out = {}
    for group in data.get("exempt", []):
        for name in group["names"]:
            if name in out:
                raise ValueError(f"{EXEMPTIONS_FILE.name}: {name} is listed twice")
            out[name] = group["reason"]
    return out


def report():
    """(missing, stale, unknown): public ops with neither a spec nor an exemption; exempt names that a spec
    now covers; exempt names that are not public ops."""
    ops = public_ops()
    keys = set().union(*covered().values()) | {ops[n] for n in inplace_calls()}
    exempt = exemptions()
    missing = sorted(n for n, k in ops.items() if k not in keys and n not in exempt)
    stale = sorted(n for n in exempt if n in ops and ops[n] in keys)
    unknown = sorted(n for n in exempt if n not in ops)
    return missing, stale, unknown


if __name__ == "__main__":
    for title, names in zip(("no spec, no exemption", "exempt but covered", "exempt but not a public op"), report()):
        print(f"{title} ({len(names)}):")
        for n in names:
            print("  " + n)
