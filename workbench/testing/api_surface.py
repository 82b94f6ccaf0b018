"""The API sweep: every public name of PyTorch's user-facing namespaces, checked against workbench.

PyTorch (the dev-only oracle) says which names exist and what their signatures are: ``inspect.signature``
where PyTorch defines the function in Python, otherwise the signature lines of its docstring
(``sum(input, dim, keepdim=False, *, dtype=None) -> Tensor``; every overload the docstring lists).
Each name is then

* ``ok``       - workbench has it and accepts every call PyTorch's signature allows (same positional
  order and names, the same keywords, the same defaults, NumPy's ``axis``/``keepdims`` where PyTorch's
  argument parser takes them);
* ``missing``  - workbench has no such name;
* ``differs``  - workbench has it with a different signature (the differences, one string each).

``api_exemptions.toml`` (next to this file) lists, grouped by reason, the names allowed to be missing
and the signature differences allowed to remain. ``tests/test_api_surface.py`` fails on anything else,
and on an exemption that no longer applies (the name landed: delete its entry).

Run ``python -m workbench.testing.api_surface`` for the report (``--missing`` / ``--differs`` / ``--stale``
list what the test would fail on; ``--prune`` deletes the stale exemptions, ``--reasons`` counts by reason).

>>> from workbench.testing import api_surface          # doctest: +SKIP
>>> api_surface.sweep()["torch.zeros_like"].status     # doctest: +SKIP
'ok'
"""
import ast
import dataclasses
import importlib
import inspect
import re
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli is the same parser ([dev] installs it there)
    import tomli as tomllib
import warnings
from pathlib import Path

import workbench as wb

# (PyTorch namespace, kind): "module" sweeps dir(module), "class" sweeps the class's public members
NAMESPACES = [
    ("torch", "module"), ("torch.nn", "module"), ("torch.nn.functional", "module"), ("torch.Tensor", "class"),
    ("torch.nn.Module", "class"), ("torch.autograd", "module"), ("torch.optim", "module"),
    ("torch.optim.Optimizer", "class"), ("torch.utils.data", "module"), ("torch.linalg", "module"),
    ("torch.fft", "module"), ("torch.special", "module"), ("torch.distributions", "module"),
    ("torch.backends", "module"), ("torch.amp", "module"), ("torch.utils", "module"), ("torch.profiler", "module"),
]
# listed on the documentation's compatibility page (docs/_ext/compat_page.py) but not yet held to the
# exemptions file: their missing names await triage (torch.distributed: #17)
REPORTED = [("torch.func", "module"), ("torch.distributed", "module")]
EXEMPTIONS = Path(__file__).with_name("api_exemptions.toml")

# PyTorch's argument parser (python_arg_parser.cpp, numpy_compatibility_arg_names) accepts these NumPy
# spellings for every function it parses, i.e. every function without a Python signature.
NUMPY_ALIASES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}
# what the sweep requires of workbench: the aliases real code uses (x.sum(1, keepdims=True), axis=0)
REQUIRED_ALIASES = ("dim", "keepdim")

_MISSING = object()


@dataclasses.dataclass
class Param:
    name: str
    kind: str  # "pos" (positional or keyword), "posonly", "kw" (keyword-only), "varpos", "varkw"
    default: object = _MISSING  # a Python value, or the default's source text when it is not a literal


@dataclasses.dataclass
class Result:
    name: str  # "torch.nn.functional.relu"
    status: str  # "ok", "missing", "differs"
    differences: list = dataclasses.field(default_factory=list)
    checked_signature: bool = False  # PyTorch gave a signature to compare against


# --- PyTorch's side ----------------------------------------------------------------------------------

def _resolve(root, dotted):
    obj = root
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _foreign(obj):
    """Objects a namespace merely imported (os, typing.Optional...), not part of its API."""
    if inspect.ismodule(obj):
        return not obj.__name__.startswith("torch")
    mod = getattr(obj, "__module__", None)
    if (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)) and isinstance(mod, str):
        return not (mod.startswith("torch") or mod == "builtins" and obj.__name__.startswith("torch"))
    return False


# submodules users import by name, which PyTorch loads lazily (so dir() shows them only once imported);
# each is swept as a name, importable or not (torch.utils.tensorboard needs the tensorboard package)
USER_SUBMODULES = ["torch.utils.tensorboard", "torch.utils.checkpoint", "torch.utils.hooks", "torch.utils.cpp_extension",
                   "torch.onnx", "torch.jit", "torch.nn.parallel", "torch.nn.utils", "torch.multiprocessing",
                   "torch.distributed", "torch.func", "torch.autograd.functional", "torch.utils.data.distributed",
                   "torch.profiler", "torch.utils.flop_counter", "torch.utils.module_tracker"]


def torch_names(torch, namespaces=NAMESPACES):
    """{qualified name: object} for every public name in ``namespaces`` (and USER_SUBMODULES)."""
    out = {}
    for mod in USER_SUBMODULES:
        try:
            out[mod] = importlib.import_module(mod)
        except ImportError:
            out[mod] = None
    swept = {id(torch), id(torch.Tensor)}  # re-exported as torch.fft.torch, torch.special.Tensor...
    for ns, kind in namespaces:
        container = _resolve(torch, ns)
        for name in dir(container):
            if name.startswith("_"):
                continue
            if kind == "class":
                obj = inspect.getattr_static(container, name)
            else:
                obj = getattr(container, name)
                if _foreign(obj) or id(obj) in swept:
                    continue
            out.setdefault(f"{ns}.{name}", obj)
    return out


def _sig_params(sig, drop_self):
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "posonly", inspect.Parameter.POSITIONAL_OR_KEYWORD: "pos",
             inspect.Parameter.KEYWORD_ONLY: "kw", inspect.Parameter.VAR_POSITIONAL: "varpos",
             inspect.Parameter.VAR_KEYWORD: "varkw"}
    params = [Param(p.name, kinds[p.kind], _MISSING if p.default is inspect.Parameter.empty else p.default)
              for p in sig.parameters.values()]
    if drop_self and params and params[0].kind in ("pos", "posonly"):  # bound: self, whatever its name
        params = params[1:]
    return params


def _split_top(text):
    """Split an argument list on top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _parse_default(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # e.g. torch.strided, torch.preserve_format: compared as text


def _parse_arglist(text):
    params, kw_only = [], False
    for part in _split_top(text):
        if part == "*":
            kw_only = True
            continue
        if part == "/":
            for p in params:
                p.kind = "posonly"
            continue
        if part.startswith("**"):
            params.append(Param(part[2:].split(":")[0].strip(), "varkw"))
            continue
        if part.startswith("*"):
            params.append(Param(part[1:].split(":")[0].strip(), "varpos"))
            kw_only = True
            continue
        name, eq, default = part.partition("=")
        name = name.split(":")[0].strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None  # not a signature after all (prose that looks like a call)
        params.append(Param(name, "kw" if kw_only else "pos", _parse_default(default.strip()) if eq else _MISSING))
    return params


def _balanced_args(line, start):
    """The text between the parenthesis at ``start`` and its match, or None."""
    depth = 0
    for i in range(start, len(line)):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        if depth == 0:
            return line[start + 1:i]
    return None


def doc_signatures(name, doc):
    """Every signature line a PyTorch docstring gives for ``name`` (one per overload)."""
    short = name.rsplit(".", 1)[-1]
    found = []
    head = re.compile(r"^\s*(?:\.\. (?:function|method):: )?(?:[\w.]+\.)?" + re.escape(short) + r"\(")
    for line in (doc or "").splitlines()[:80]:
        m = head.match(line)
        if not m:
            continue
        text = _balanced_args(line, m.end() - 1)
        rest = line[m.end() + len(text or "") + 1:].strip() if text is not None else ""
        if text is None or not (rest.startswith("->") or line.lstrip().startswith("..")):
            continue  # prose mentioning a call, not a signature line
        params = _parse_arglist(text)
        if params is not None and params not in found:
            found.append(params)
    return found


class _Probe:
    """An argument no PyTorch function accepts: its argument parser answers with every overload."""


def _parser_param(text):
    # "tuple of ints dim", "bool keepdim = False", "Tensor bias = None", "str padding = \"valid\""
    decl, eq, default = text.partition(" = ")
    words = decl.split()
    return words[-1], " ".join(words[:-1]), (_parse_default(default.strip()) if eq else _MISSING)


def _parser_message(fn, *args):
    try:
        fn(*args, wb_probe_=_Probe())  # the unknown keyword is refused before anything runs
    except TypeError as e:
        return str(e)
    except Exception:
        return ""
    return ""


def parser_signatures(fn, tensor):
    """Overloads as PyTorch's C++ argument parser states them (None if ``fn`` is not parsed by it).

    Named-tensor overloads (Dimname arguments) are left out: workbench has no named tensors.
    """
    msg = _parser_message(fn)
    if "required positional argument" in msg:  # torch.sum(): the parser lists overloads once input is given
        msg = _parser_message(fn, tensor)
    if "expected one of:" not in msg:
        return None
    overloads = []
    for line in msg.splitlines():
        line = line.strip()
        if not line.startswith("* ("):
            continue
        params, kw_only, named = [], False, False
        for part in _split_top(line[3:-1]):
            if part == "*":
                kw_only = True
                continue
            name, typ, default = _parser_param(part)
            named |= "Dimname" in typ
            # "Number self" overloads (2 ** t) are positional in practice: nobody writes self=
            kind = "kw" if kw_only else "posonly" if name == "self" else "pos"
            params.append(Param(name, kind, default))
        if not named and params not in overloads:
            overloads.append(params)
    return overloads


def torch_signatures(name, obj, in_class, torch):
    """(overloads, parsed_by_arg_parser): PyTorch's signatures for ``name``, [] when it gives none."""
    if inspect.isclass(obj):
        if "__init__" in vars(obj) and inspect.isfunction(vars(obj)["__init__"]) or \
                any("__init__" in vars(b) and inspect.isfunction(vars(b)["__init__"]) for b in obj.__mro__[1:-1]):
            try:
                return [_sig_params(inspect.signature(obj), False)], False
            except (ValueError, TypeError):
                pass
        return [], False  # a C type (dtype, device, Size...): its constructor is not the API swept
    fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    if not callable(fn) or isinstance(obj, property):
        return [], False
    if inspect.isfunction(fn):
        return [_sig_params(inspect.signature(fn), in_class and not isinstance(obj, staticmethod))], False
    bound = getattr(torch.zeros(1), name.rsplit(".", 1)[-1], None) if in_class else fn
    parsed = parser_signatures(bound, torch.zeros(1)) if callable(bound) else None
    if parsed:
        return parsed, True
    return doc_signatures(name, getattr(fn, "__doc__", None)), True


# --- workbench's side ----------------------------------------------------------------------------------

def workbench_object(wb, name):
    """The workbench object answering PyTorch's ``name`` (torch.X -> workbench.X), or _MISSING."""
    parts = name.split(".")[1:]
    obj = wb
    for i, part in enumerate(parts):
        try:
            if inspect.isclass(obj):
                obj = inspect.getattr_static(obj, part)
            else:
                obj = getattr(obj, part)
        except AttributeError:
            if not inspect.isclass(obj) and inspect.ismodule(obj):  # a subpackage not imported yet
                try:
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                    continue
                except ImportError:
                    pass
            return _MISSING
        except ImportError:
            return _MISSING
    return obj


def workbench_signature(obj, in_class):
    """(params, aliases): workbench's parameters and the NumPy aliases its wrapper accepts."""
    aliases = set()
    fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    if isinstance(fn, property) or not callable(fn):
        return None, aliases
    probe = fn
    while probe is not None:  # wrappers (the alias layer, functools.wraps) say what they accept
        aliases |= set(getattr(probe, "__wb_aliases__", ()))
        probe = getattr(probe, "__wrapped__", None)
    try:
        sig = inspect.signature(fn)
    except (ValueError, TypeError):
        return None, aliases
    drop_self = in_class and not isinstance(obj, staticmethod) and not inspect.isclass(fn)
    return _sig_params(sig, drop_self), aliases


# --- the comparison ---------------------------------------------------------------------------------------

# PyTorch's defaults that workbench spells None (it has one layout and keeps the memory format)
_NONE_MEANS = {"torch.strided", "torch.preserve_format", "torch.contiguous_format", "contiguous_format"}


def _same_default(a, b):
    if b is None and a in _NONE_MEANS or inspect.ismodule(a):  # pickle_module=pickle: any pickler
        return True
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, str) or isinstance(b, str):  # PyTorch's text default vs a workbench object
        text = a if isinstance(a, str) else b
        other = b if isinstance(a, str) else a
        tail = text.rsplit(".", 1)[-1]
        return tail == str(other).rsplit(".", 1)[-1] or tail == getattr(other, "__name__", None) or \
            text == repr(other)
    try:
        return bool(a == b) and type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                                        and not isinstance(a, bool) and not isinstance(b, bool)
                                                        and a == b)
    except Exception:
        return a is b


def _fmt(v):
    if isinstance(v, str):
        return v
    if v is None or isinstance(v, (bool, int, float, complex, tuple, list)):
        return repr(v)
    return f"<{type(v).__name__}>"  # an object (a Generator...): its repr holds an address


def compare(torch_params, wb_params, aliases_required, wb_aliases, other_defaults=None):
    """Differences that make a call valid for PyTorch invalid (or different) for workbench.

    ``other_defaults``: {name: defaults in PyTorch's other overloads}; a workbench default matching one
    of them is PyTorch's type dispatch (conv's padding=0 and padding="valid"), not a difference.
    """
    diffs = []
    other_defaults = other_defaults or {}
    wb_by_name = {p.name: (i, p) for i, p in enumerate(wb_params)}
    wb_pos = [p for p in wb_params if p.kind in ("pos", "posonly")]
    wb_varpos = any(p.kind == "varpos" for p in wb_params)
    wb_varkw = any(p.kind == "varkw" for p in wb_params)
    t_pos = [p for p in torch_params if p.kind in ("pos", "posonly")]
    t_varpos = any(p.kind == "varpos" for p in torch_params)
    for i, tp in enumerate(t_pos):  # positional order: the i-th positional argument means the same thing
        if i < len(wb_pos):
            if wb_pos[i].name != tp.name and tp.kind == "pos":
                diffs.append(f"positional argument {i} is {wb_pos[i].name!r}, PyTorch's is {tp.name!r}")
        elif not wb_varpos:
            diffs.append(f"takes no positional argument {i} ({tp.name!r})")
    for tp in torch_params:
        if tp.kind == "varpos":
            if tp.name == "args":
                continue  # a generic (*args, **kwargs) forwarder says nothing about the API
            if not wb_varpos and not (wb_pos and len(wb_pos) > len(t_pos)):
                diffs.append(f"takes no *{tp.name}")
            continue
        if tp.kind == "varkw":
            if not wb_varkw and tp.name != "kwargs":
                diffs.append(f"takes no **{tp.name}")
            continue
        hit = wb_by_name.get(tp.name)
        if tp.kind != "posonly":
            if hit is None or hit[1].kind in ("posonly", "varpos", "varkw"):
                if not wb_varkw and not (t_varpos and tp.kind == "pos"):
                    diffs.append(f"no parameter {tp.name!r}")
                continue
        elif hit is None:
            continue
        wp = hit[1]
        if tp.default is not _MISSING:
            if wp.default is _MISSING:
                diffs.append(f"{tp.name!r} is required, PyTorch's defaults to {_fmt(tp.default)}")
            elif not _same_default(tp.default, wp.default) and \
                    not any(_same_default(d, wp.default) for d in other_defaults.get(tp.name, ())):
                diffs.append(f"{tp.name!r} defaults to {_fmt(wp.default)}, PyTorch's to {_fmt(tp.default)}")
        if aliases_required and tp.name in REQUIRED_ALIASES:
            for alias in NUMPY_ALIASES[tp.name]:
                if alias not in wb_aliases and alias not in wb_by_name:
                    diffs.append(f"no NumPy alias {alias!r} for {tp.name!r}")
    known = {p.name for p in torch_params}
    for i, wp in enumerate(wb_params):  # an extra workbench parameter must not be required
        covered = wp.kind != "kw" and (t_varpos or i < len(t_pos))  # filled positionally
        if wp.name not in known and wp.default is _MISSING and wp.kind in ("pos", "posonly", "kw") and not covered:
            diffs.append(f"extra required parameter {wp.name!r}")
    return diffs


def check(name, tobj, wb, in_class, torch):
    wobj = workbench_object(wb, name)
    if wobj is _MISSING:
        return Result(name, "missing")
    overloads, parsed = torch_signatures(name, tobj, in_class, torch)
    if not overloads:
        return Result(name, "ok")
    wb_params, wb_aliases = workbench_signature(wobj, in_class)
    if wb_params is None:
        return Result(name, "ok")
    # the workbench signature must accept every PyTorch overload
    defaults = {}
    for o in overloads:
        for p in o:
            if p.default is not _MISSING:
                defaults.setdefault(p.name, []).append(p.default)
    diffs = []
    for o in overloads:
        diffs += [d for d in compare(o, wb_params, parsed, wb_aliases, defaults) if d not in diffs]
    return Result(name, "differs" if diffs else "ok", [f"{name}: {d}" for d in diffs], True)


def sweep(namespaces=NAMESPACES):
    """{qualified name: Result} for every name PyTorch's ``namespaces`` hold."""
    import torch

    classes = {ns for ns, kind in namespaces if kind == "class"}
    with warnings.catch_warnings():  # dir(torch.distributed) touches its deprecated reduce_op
        warnings.simplefilter("ignore", FutureWarning)
        return {name: check(name, obj, wb, name.rsplit(".", 1)[0] in classes, torch)
                for name, obj in torch_names(torch, namespaces).items()}


# --- exemptions -------------------------------------------------------------------------------------------

def load_exemptions(path=EXEMPTIONS):
    """({name: reason} for missing names, {difference: reason} for signature differences)."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    missing, differs = {}, {}
    for group in data.get("missing", []):
        for name in group["names"]:
            if name in missing:
                raise ValueError(f"{path.name}: {name} is exempted twice")
            missing[name] = group["reason"]
    for group in data.get("signature", []):
        for diff in group["differences"]:
            if diff in differs:
                raise ValueError(f"{path.name}: {diff!r} is exempted twice")
            differs[diff] = group["reason"]
    return missing, differs


def problems(results, missing_ok, differs_ok):
    """(unexempted misses, unexempted differences, stale exemptions)."""
    new_missing = sorted(n for n, r in results.items() if r.status == "missing" and n not in missing_ok)
    found = {d for r in results.values() for d in r.differences}
    new_diffs = sorted(found - set(differs_ok))
    stale = sorted(n for n in missing_ok if n not in results or results[n].status != "missing")
    stale += sorted(d for d in differs_ok if d not in found)
    return new_missing, new_diffs, stale


def prune(stale, path=EXEMPTIONS):
    """Delete the stale entries' lines from the exemptions file (one quoted entry per line)."""
    drop = {_toml_string(s) + "," for s in stale}
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if line.strip() not in drop))


def _toml_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv):
    results = sweep()
    missing_ok, differs_ok = load_exemptions()
    new_missing, new_diffs, stale = problems(results, missing_ok, differs_ok)
    if "--prune" in argv:
        prune(stale)
        print(f"removed {len(stale)} stale exemptions from {EXEMPTIONS.name}", file=sys.stderr)
    if "--missing" in argv:
        print("\n".join(new_missing))
    if "--differs" in argv:
        print("\n".join(new_diffs))
    if "--stale" in argv:
        print("\n".join(stale))
    counts = {}
    for r in results.values():
        counts[r.status] = counts.get(r.status, 0) + 1
    reasons = {}
    for name, reason in missing_ok.items():
        reasons[reason] = reasons.get(reason, 0) + 1
    print(f"{len(results)} names: {counts.get('ok', 0)} implemented "
          f"({sum(r.checked_signature and r.status == 'ok' for r in results.values())} with a signature checked), "
          f"{counts.get('differs', 0)} differ, {counts.get('missing', 0)} missing", file=sys.stderr)
    print(f"exempted: {len(missing_ok)} missing names, {len(differs_ok)} differences; "
          f"not exempted: {len(new_missing)} missing, {len(new_diffs)} differences; {len(stale)} stale",
          file=sys.stderr)
    if "--reasons" in argv:
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            print(f"{n:5d}  {reason}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
