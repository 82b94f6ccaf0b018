"""Operator schemas: ``(Tensor x, float beta=1.0) -> Tensor``, parsed, inferred from type hints, and used to
bind a call's arguments (checking each against its declared type) into the flat list a tape node records.

The text format is PyTorch's (native_functions.yaml): ``Tensor(a!) x`` marks an argument the op writes to,
``*`` starts the keyword-only arguments, ``Tensor?`` is optional, ``Tensor[]`` a list.
"""
import inspect
import numbers
import re
import typing

from .. import _backend
from ..tensor import Tensor

_NO_DEFAULT = inspect.Parameter.empty
_ARG = re.compile(r"^(?P<type>[A-Za-z_][A-Za-z0-9_]*)(?P<alias>\([a-z0-9]+!?\))?(?P<suffix>(\[\d*\]|\?)*)\s+"
                  r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(\s*=\s*(?P<default>.+))?$")
_BASE_TYPES = {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Layout",
               "MemoryFormat", "Generator"}


class Argument:
    """One declared argument: name, type text (``Tensor?``, ``SymInt[]``...), default, keyword-only, written to."""

    __slots__ = ("name", "type", "default", "kwarg_only", "mutable")

    def __init__(self, name, type_, default=_NO_DEFAULT, kwarg_only=False, mutable=False):
        self.name, self.type, self.default, self.kwarg_only, self.mutable = name, type_, default, kwarg_only, mutable

    @property
    def is_tensor(self):
        return self.type in ("Tensor", "Tensor?")

    @property
    def is_tensor_list(self):
        return self.type in ("Tensor[]", "Tensor?[]")

    def text(self, alias_index):
        t = self.type
        if self.mutable:  # the alias annotation sits between the base type and its [] / ? suffix
            base = t.rstrip("[]?")
            t = base + f"(a{alias_index}!)" + t[len(base):]
        s = f"{t} {self.name}"
        if self.default is not _NO_DEFAULT:
            s += "=" + _default_text(self.default)
        return s


class Schema:
    """A parsed schema; ``Schema.parse("(Tensor x) -> Tensor")`` or with a leading op name.

    >>> s = Schema.parse("(Tensor(a!) x, *, float alpha=1.0) -> ()")
    >>> [a.name for a in s.arguments], s.mutated_names(), s.returns
    (['x', 'alpha'], ['x'], [])
    """

    def __init__(self, name, arguments, returns):
        self.name, self.arguments, self.returns = name, list(arguments), list(returns)
        self.positional = [a for a in self.arguments if not a.kwarg_only]
        self.is_mutable = any(a.mutable for a in self.arguments)

    @classmethod
    def parse(cls, text):
        text = text.strip()
        m = re.match(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.:]*)?\s*\((?P<args>.*)\)\s*->\s*(?P<ret>.+)$", text)
        if m is None:
            raise ValueError(f"could not parse the operator schema {text!r}: expected the form "
                             "'(Tensor x, float alpha=1.0) -> Tensor'")
        args = []
        kwarg_only = False
        for part in _split_top(m.group("args")):
            if part == "*":
                kwarg_only = True
                continue
            am = _ARG.match(part)
            if am is None or am.group("type") not in _BASE_TYPES:
                raise ValueError(f"could not parse the argument {part!r} of the schema {text!r}: expected "
                                 f"'<type> <name>' with a type among {sorted(_BASE_TYPES)}")
            alias = am.group("alias") or ""
            if alias and am.group("type") != "Tensor":
                raise ValueError(f"schema {text!r}: only Tensor arguments can carry an alias annotation ({part!r})")
            default = _parse_default(am.group("default"), text) if am.group("default") is not None else _NO_DEFAULT
            type_ = am.group("type") + re.sub(r"\[\d+\]", "[]", am.group("suffix"))
            args.append(Argument(am.group("name"), type_, default, kwarg_only, alias.endswith("!)")))
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise ValueError(f"schema {text!r} declares an argument name twice")
        return cls(m.group("name"), args, _parse_returns(m.group("ret").strip(), text))

    def mutated_names(self):
        return [a.name for a in self.arguments if a.mutable]

    def __str__(self):
        parts = []
        star = False
        for i, a in enumerate(self.arguments):  # PyTorch numbers alias sets by argument position
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(a.text(i))
        ret = self.returns[0] if len(self.returns) == 1 else "(" + ", ".join(self.returns) + ")"
        return f"({', '.join(parts)}) -> {ret}"

    # --- binding a call ------------------------------------------------------------------------------
    def bind(self, opname, args, kwargs):
        """(positional values, keyword-only values) of a call, defaults filled in, each checked against its type."""
        if len(args) > len(self.positional):
            raise TypeError(f"{opname}() takes {len(self.positional)} positional arguments but {len(args)} were "
                            f"given. Declaration: {opname}{self}")
        values = {}
        for a, v in zip(self.positional, args):
            values[a.name] = v
        for k, v in kwargs.items():
            if k in values:
                raise TypeError(f"{opname}() got multiple values for argument '{k}'")
            if not any(a.name == k for a in self.arguments):
                raise TypeError(f"{opname}() got an unexpected keyword argument '{k}'. Declaration: {opname}{self}")
            values[k] = v
        pos, kw = [], {}
        for i, a in enumerate(self.arguments):
            if a.name in values:
                v = _check_value(opname, self, a, i, values[a.name])
            elif a.default is not _NO_DEFAULT:
                v = a.default
            else:
                raise TypeError(f"{opname}() is missing value for argument '{a.name}'. Declaration: {opname}{self}")
            if a.kwarg_only:
                kw[a.name] = v
            else:
                pos.append(v)
        return pos, kw

    def flatten(self, pos, kw):
        """The values as one flat tuple (tensor lists spread out, so each tensor is an edge of the node) and the
        list lengths needed to rebuild them."""
        flat = []
        lengths = []
        for a, v in zip(self.arguments, list(pos) + [kw[a.name] for a in self.arguments if a.kwarg_only]):
            if a.is_tensor_list:
                flat.extend(v)
                lengths.append(len(v))
            else:
                flat.append(v)
        return flat, tuple(lengths)

    def unflatten(self, flat, lengths):
        pos, kw = [], {}
        i = 0
        k = 0
        for a in self.arguments:
            if a.is_tensor_list:
                v = list(flat[i:i + lengths[k]])
                i += lengths[k]
                k += 1
            else:
                v = flat[i]
                i += 1
            if a.kwarg_only:
                kw[a.name] = v
            else:
                pos.append(v)
        return pos, kw


def _split_top(s):
    # split on commas outside brackets and quotes
    out, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _parse_returns(ret, text):
    if ret.startswith("(") and ret.endswith(")"):
        parts = _split_top(ret[1:-1])
    else:
        parts = [ret]
    out = []
    for p in parts:
        t = p.split()[0] if p.split() else ""
        t = re.sub(r"\([a-z0-9]+!?\)", "", t)
        if t.rstrip("[]?") not in _BASE_TYPES:
            raise ValueError(f"could not parse the return type {p!r} of the schema {text!r}")
        out.append(t)
    return out


def _parse_default(s, text):
    s = s.strip()
    if s in ("True", "False"):
        return s == "True"
    if s == "None":
        return None
    if s[:1] in "\"'" and s[-1:] == s[:1]:
        return s[1:-1]
    if s.startswith("[") and s.endswith("]"):
        return [_parse_default(p, text) for p in _split_top(s[1:-1])]
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"could not parse the default value {s!r} in the schema {text!r}") from None


def _default_text(v):
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_default_text(x) for x in v) + "]"
    return repr(v) if not isinstance(v, (_backend.dtypes.dtype,)) else str(v).rsplit(".", 1)[-1]


# --- checking values against declared types ------------------------------------------------------------
def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, Tensor)


def _is_float(v):
    return isinstance(v, numbers.Real) and not isinstance(v, Tensor)


def _is_scalar(v):
    return isinstance(v, numbers.Number) and not isinstance(v, Tensor)


_CHECKS = {
    "Tensor": lambda v: isinstance(v, Tensor),
    "int": _is_int, "SymInt": _is_int,
    "float": _is_float,
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "Scalar": _is_scalar,
    "ScalarType": lambda v: isinstance(v, _backend.dtypes.dtype),
    "Device": lambda v: isinstance(v, (_backend.device, str, int)),
    "Layout": lambda v: True, "MemoryFormat": lambda v: True, "Generator": lambda v: True,
}


def _check_value(opname, schema, a, index, v):
    t = a.type
    optional = t.endswith("?")
    base = t[:-1] if optional else t
    if v is None and optional:
        return v
    ok = True
    if base.endswith("[]"):
        inner = base[:-2]
        inner_opt = inner.endswith("?")
        inner = inner.rstrip("?")
        if isinstance(v, (list, tuple)) and not isinstance(v, Tensor):
            ok = all((x is None and inner_opt) or _CHECKS[inner](x) for x in v)
            v = list(v)
        elif inner in ("int", "SymInt") and _is_int(v):
            v = [v]  # int[] accepts a single int, as PyTorch's dispatcher does
        else:
            ok = False
    else:
        ok = _CHECKS[base](v)
    if not ok:
        raise RuntimeError(f"{opname}() Expected a value of type '{t}' for argument '{a.name}' but instead found "
                           f"type '{type(v).__name__}'.\nPosition: {index}\nValue: {v!r}\n"
                           f"Declaration: {opname}{schema}")
    if base == "Device":
        v = _backend.resolve_device(v if not isinstance(v, int) else f"cuda:{v}")
    return v


# --- inferring a schema from type hints ------------------------------------------------------------------
def _type_text(opname, pname, ann):
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return _type_text(opname, pname, rest[0]) + "?"
        if set(rest) <= {int, float, bool, complex}:
            return "Scalar" + ("?" if len(rest) != len(args) else "")
    if origin in (list, tuple, typing.Sequence) or (origin is not None and getattr(origin, "__name__", "") in
                                                  ("Sequence", "list")):
        if len(args) == 1 or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
            return _type_text(opname, pname, args[0]) + "[]"
    simple = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
              numbers.Number: "Scalar", _backend.dtypes.dtype: "ScalarType", _backend.device: "Device"}
    if ann in simple:
        return simple[ann]
    raise ValueError(f"infer_schema(func): Parameter {pname} has unsupported type {ann!r}. The valid types are: "
                     "Tensor, int, float, bool, str, Number, dtype, device, Optional of those, and list of "
                     f"those (in {opname}).")


def _return_text(opname, ann):
    if ann is None or ann is type(None):
        return []
    if typing.get_origin(ann) is tuple:
        return [_type_text(opname, "return", a) for a in typing.get_args(ann)]
    return [_type_text(opname, "return", ann)]


def infer_schema(prototype_function, /, *, mutates_args, op_name=None, tags=()):
    """The schema string of a function from its type hints, as ``torch.library.infer_schema`` (``tags`` are
    accepted for PyTorch code; no workbench tag changes a schema).

    >>> import workbench as wb
    >>> def f(x: wb.Tensor, n: int, *, scale: float = 2.0) -> wb.Tensor: ...
    >>> infer_schema(f, mutates_args=())
    '(Tensor x, SymInt n, *, float scale=2.0) -> Tensor'
    """
    fn = prototype_function
    opname = op_name or getattr(fn, "__name__", "op")
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # hints naming undefined objects: fall back to the raw annotations
        hints = {k: p.annotation for k, p in sig.parameters.items()}
        hints["return"] = sig.return_annotation
    if mutates_args != "unknown":
        if isinstance(mutates_args, str):
            raise ValueError(f"mutates_args must be a sequence of argument names or 'unknown', got {mutates_args!r}")
        mutates = set(mutates_args)
        unknown = mutates - set(sig.parameters)
        if unknown:
            raise ValueError(f"infer_schema(func): {opname}: mutates_args contains {sorted(unknown)}, which are not "
                             f"arguments of {opname}{sig}")
    args = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameter {name} is *args or **kwargs, which custom ops do not "
                             f"support (in {opname}).")
        if p.annotation is p.empty:
            raise ValueError(f"infer_schema(func): Parameter {name} must have a type annotation. Got func with "
                             f"signature {sig})")
        t = _type_text(opname, name, hints.get(name, p.annotation))
        mutable = (mutates_args == "unknown" and t.startswith("Tensor")) or (
            mutates_args != "unknown" and name in mutates_args)
        if mutable and not t.startswith("Tensor"):
            raise ValueError(f"infer_schema(func): {opname}: argument {name} of type {t} is in mutates_args, but "
                             "only Tensor arguments can be mutated")
        default = p.default
        if isinstance(default, _backend.device):
            default = str(default)
        args.append(Argument(name, t, default, p.kind is p.KEYWORD_ONLY, mutable))
    if sig.return_annotation is sig.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. Please add one "
                         f"(in {opname}).")
    rets = _return_text(opname, hints.get("return", sig.return_annotation))
    return str(Schema(None, args, rets))
