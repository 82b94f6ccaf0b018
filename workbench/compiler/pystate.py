"""The Python state a compiled call reads and writes, which a replay does not run.

A replay runs the traced call's array program only: the Python around the ops is gone. So what that Python
read must not have changed (the guard checks it), and the call must not have changed Python state, since a
replay would skip the change. ``scopes`` finds where the call's code can look things up: its globals and
closure cells, its default arguments, the object of a bound method (or the compiled module itself), and the
same for the helper functions and ``functools.partial`` objects found there, three levels deep.
``python_state`` walks two levels into the dicts, lists and plain objects held there and returns the Python
values to guard (``cfg["lr"]``, ``args.clip``, ``self.epoch``) and the containers whose contents must be the
same after the call (``losses.append(loss.item())``, ``stats["n"] += 1`` and ``self.best = loss`` would be
skipped by a replay: such a call runs eagerly, and ``explain`` says which).
"""
import dis
import functools
import types

from .. import _backend
from ..nn.module import Module
from ..tensor import Tensor

_ndarray = _backend.numpy.ndarray
_FUNCTION = types.FunctionType
_PARTIAL = functools.partial
_NAMESPACE = types.SimpleNamespace
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial, Tensor)
_PLAIN = (bool, int, float, complex, str, bytes, type(None))
_LIBRARY_MODULES = ("builtins", "typing", "abc", "enum", "collections", "functools")
MAX_ITEMS = 10_000  # a container larger than this is not searched (nor guarded, nor compared)
DEPTH = 2  # levels searched below a name: cfg["opt"]["lr"], self.cfg.lr


@functools.lru_cache(maxsize=4096)
def code_names(code):
    """(the global names, the attribute names) ``code`` uses, its nested functions' code included."""
    names, attrs = set(), set()
    stack = [code]
    while stack:
        c = stack.pop()
        for i in dis.get_instructions(c):
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names.add(i.argval)
            elif i.opname in ("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR"):
                attrs.add(i.argval)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return frozenset(names), frozenset(attrs)


def _methods_names(cls):
    """The attribute names the methods of a user's class use (``self.helper()`` reading ``self.temp``)."""
    attrs = set()
    for klass in cls.__mro__:
        if _library_class(klass):
            continue
        for v in vars(klass).values():
            f = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
            if isinstance(f, property):
                f = f.fget
            code = getattr(f, "__code__", None)
            if code is not None:
                attrs |= code_names(code)[1]
    return attrs


def _library_class(cls):
    m = getattr(cls, "__module__", "") or ""
    return m == "workbench" or m.startswith("workbench.") or m in _LIBRARY_MODULES


def library_object(v):
    """An object of workbench's own (an optimizer, a scheduler, a scaler): its state is the library's, which the
    trace records through its own hooks."""
    return any(_library_class(c) for c in type(v).__mro__[:-1])


def owner_of(fn):
    """(the function whose code runs, the object it belongs to or None): a bound method's, or a compiled module's
    ``forward``."""
    if isinstance(fn, Module):
        return getattr(type(fn).forward, "__func__", type(fn).forward), fn
    return getattr(fn, "__func__", fn), getattr(fn, "__self__", None)


def scopes(fn, every_global=True):
    """Where ``fn``'s code can look things up: ([(container, key, value, what, chain)], attribute names its code
    uses). ``container[key]`` holds ``value`` (a closure cell's key is None); ``chain`` lists the places that led
    to the helper function the scope belongs to. Globals: all of a function's module (``every_global``), or only
    the names its code loads."""
    func, owner = owner_of(fn)
    found, attrs = [], set()
    if owner is not None and isinstance(getattr(owner, "__dict__", None), dict):
        found += [(owner.__dict__, k, v, f"self.{k}", ()) for k, v in list(owner.__dict__.items())
                  if not k.startswith("_")]
        attrs |= _methods_names(type(owner))
    todo, seen_fns, seen_globals = [(func, "", ())], set(), set()
    for _depth in range(3):
        nxt = []
        for f, prefix, chain in todo:
            if f.__class__ is _PARTIAL:
                found += [(f.args, i, v, f"{prefix}partial arg {i}", chain) for i, v in enumerate(f.args)]
                found += [(f.keywords, k, v, f"{prefix}partial {k}", chain) for k, v in f.keywords.items()]
                nxt.append((f.func, prefix, chain))
                continue
            code = getattr(f, "__code__", None)
            if code is None or id(f) in seen_fns:
                continue
            seen_fns.add(id(f))
            loaded, used = code_names(code)
            attrs |= used
            here = []
            g = getattr(f, "__globals__", None)
            if g is not None and (id(g), every_global or loaded) not in seen_globals:
                seen_globals.add((id(g), every_global or loaded))
                mod = "" if not prefix else f"{g.get('__name__', '?')}."
                here += [(g, k, v, mod + k) for k, v in list(g.items()) if every_global or k in loaded]
            for name, cell in zip(code.co_freevars, f.__closure__ or ()):
                try:
                    here.append((cell, None, cell.cell_contents, f"{prefix}{name}"))
                except ValueError:  # an empty cell
                    continue
            here += [(f.__defaults__, i, v, f"{prefix}default {i}") for i, v in enumerate(f.__defaults__ or ())]
            here += [(f.__kwdefaults__, k, v, f"{prefix}default {k}") for k, v in (f.__kwdefaults__ or {}).items()]
            found += [(c, k, v, w, chain) for c, k, v, w in here]
            nxt += [(v, f"{getattr(v, '__name__', '?')}: ", chain + ((c, k, v, w),)) for c, k, v, w in here
                    if v.__class__ is _PARTIAL or v.__class__ is _FUNCTION and (
                        v.__closure__ is not None or v.__defaults__ or v.__kwdefaults__ or not every_global)]
        todo = nxt
    return found, attrs


def plain_object(v):
    """An object of a user's class (``SimpleNamespace``, a trainer) whose plain attributes may hold a batch."""
    d = getattr(v, "__dict__", None)
    return (d.__class__ is dict and not isinstance(v, _NOT_OBJECTS) and v.__class__.__module__ != "builtins"
            or v.__class__ is _NAMESPACE)


def user_class(v):
    return isinstance(v, type) and not _library_class(v) and not issubclass(v, Tensor)


def plain_value(v):
    c = v.__class__
    return c in _PLAIN or c is tuple and len(v) <= 16 and all(x.__class__ in _PLAIN for x in v)


LENGTH = object()  # the key of a read that is a container's length
MAX_ARRAY = 4096  # NumPy arrays up to this size found by name have their values guarded


def advances(fn):
    """Why ``fn`` moves Python state forward in a way no container shows, or None: its code calls the builtin
    ``next`` (an iterator a replay would not advance: ``lr = next(schedule)``)."""
    func, _owner = owner_of(fn)
    code = getattr(func, "__code__", None)
    if code is not None and "next" in code_names(code)[0] and "next" not in func.__globals__:
        return "it calls next() on an iterator (a replay would not advance it): pass what it yields as an argument"
    return None


def python_state(fn, args=(), kwargs=None):
    """What a replay of ``fn`` called with ``args`` and ``kwargs`` relies on in Python: (reads, holders).

    reads: [(container, key, value, what)], the Python values (numbers, strings, None, tuples of them) found
    through ``scopes`` (the names the code loads) two levels down, and the containers and modules on the way
    to them: the guard checks that each place still holds that value (a container, a module: that very
    object). An object's attributes count where the code uses their name (``cfg.lr``: 'lr'); a dict's and a
    list's items all count. A module's own plain settings are guarded where the call uses the module
    (``Tracer.module_attrs``); here what its other attributes hold (``self.cfg["k"]``).
    holders: [(container, what, kind)], the dicts, lists, sets and attribute tables found ("items", "seq",
    "set", "attrs", "module"), whose contents the call must leave as they were (``changed``).
    """
    found, attrs = scopes(fn, every_global=False)
    _func, owner = owner_of(fn)
    modules = _modules_of(fn, found)
    for m in modules:
        if m is not owner:
            attrs |= _methods_names(type(m))
    reads, holders, seen = [], [], set()
    if owner is not None and not isinstance(owner, Module) and isinstance(getattr(owner, "__dict__", None), dict):
        holders.append((owner.__dict__, "self", "attrs"))  # a bound method's object (self.calls += 1)

    def visit(container, key, v, what, depth, attr):
        # attr: container is an attribute table (an object's __dict__, a class's vars), whose plain values count
        # only where the code uses their name
        if v.__class__ is _ndarray:  # a small NumPy array: its values are guarded (float(a[0]), a mask)
            if v.size <= MAX_ARRAY and id(v) not in seen:
                seen.add(id(v))
                reads.append((container, key, v, what))
                holders.append((v, what, "array"))
            return
        if plain_value(v):
            if not attr or key in attrs:
                reads.append((container, key, v, what))
            return
        if depth < 0 or id(v) in seen:
            return
        c = v.__class__
        module = isinstance(v, Module)
        if c is dict:
            holder, kind, items = v, "items", list(v.items())
        elif c is list or c is tuple:
            holder, kind, items = v, "seq", list(enumerate(v))
        elif c is set or c is frozenset:
            holder, kind, items = v, "set", ()
        elif module:  # (its plain settings: Tracer.module_attrs; parameters, buffers, submodules: their tables)
            holder, kind = v.__dict__, "module"
            items = [(k, x) for k, x in list(holder.items()) if k[0] != "_" and k != "training" and not plain_value(x)]
        elif user_class(v) or plain_object(v) and not library_object(v):
            holder, kind = (vars(v) if isinstance(v, type) else v.__dict__), "attrs"
            items = [(k, x) for k, x in list(holder.items()) if not (k.startswith("__") and k.endswith("__"))]
        else:
            return
        if len(holder) > MAX_ITEMS:
            return
        seen.add(id(v))
        if c is not tuple and c is not frozenset:
            holders.append((holder, what, kind))
        n = len(reads)
        if c is dict or c is list:  # its length (len(history), a key added): the guard checks it
            reads.append((holder, LENGTH, len(holder), f"len({what})"))
        for k, x in items:
            visit(holder, k, x, f"{what}.{k}" if kind in ("attrs", "module") else f"{what}[{k!r}]", depth - 1,
                  kind != "items" and kind != "seq")
        if (len(reads) > n or module) and container is not None and container.__class__ is not tuple:
            reads.insert(n, (container, key, v, what))  # the place must still hold this very object

    for container, key, v, what, chain in found:
        n = len(reads)
        visit(container, key, v, what, DEPTH, owner is not None and container is getattr(owner, "__dict__", None))
        if len(reads) > n:
            for c, k, h, w in chain:  # the helper must stay the one traced, where it was found
                if c.__class__ is not tuple:
                    reads.append((c, k, h, w))
    for m in modules:  # the models the call can reach, however deep: what their attributes hold
        visit(None, None, m, type(m).__name__, DEPTH, False)
    # the arguments (the guard checks each by identity, or a list's, tuple's or dict's items by value): what the
    # objects among them hold, and what the call must leave as it found it (a history list handed in)
    for path, v in [(f"args[{i}]", a) for i, a in enumerate(args)] + [(f"kwargs[{k!r}]", a) for k, a in
                                                                          (kwargs or {}).items()]:
        if not isinstance(v, Tensor):
            visit(None, None, v, path, DEPTH, False)
    return reads, holders


def _modules_of(fn, found):
    """The modules ``fn`` can reach by name (and their submodules): the compiled module itself, a bound method's
    module, a global or closure variable, or one held one level into a dict, list or tuple there."""
    _func, owner = owner_of(fn)
    tops = [owner] if isinstance(owner, Module) else []
    for _c, _k, v, _w, _chain in found:
        if isinstance(v, Module):
            tops.append(v)
        elif v.__class__ in (dict, list, tuple) and len(v) <= MAX_ITEMS:
            tops.extend(x for x in (v.values() if v.__class__ is dict else v) if isinstance(x, Module))
    out, seen = [], set()
    for top in tops:
        for m in top.modules():
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)
    return out


def contents(holders):
    """What each holder holds now, for ``changed``. Holds references, so that an object replaced during the call
    cannot hand its id on to a new one."""
    snap = []
    for h, _what, kind in holders:
        if kind == "seq":
            snap.append(tuple(h))
        elif kind == "array":
            snap.append(h.tobytes())
        elif kind == "set":
            snap.append(frozenset(map(id, h)))
        elif kind == "module":  # its public attributes (the private ones are workbench's caches)
            snap.append(tuple((k, v) for k, v in h.items() if k[0] != "_" and k != "training"))
        else:
            snap.append(tuple(h.items()))
    return snap


def changed_at(holders, before):
    """The indices of the holders whose contents differ from ``before``."""
    return {i for i, (old, new) in enumerate(zip(before, contents(holders))) if _differs(old, new)}


def _differs(old, new):
    if old.__class__ is not tuple:  # a set's ids, an array's bytes
        return old != new
    return len(old) != len(new) or any(a is not b and not (a.__class__ is tuple and b.__class__ is tuple and
                                                           len(a) == 2 and a[0] == b[0] and a[1] is b[1])
                                       for a, b in zip(old, new))


def changed(holders, before, skip=()):
    """Where the call changed a holder's contents (``before``: ``contents`` then), named for a message, or None.
    skip: the indices of holders whose changes a replay makes again."""
    for i, ((h, what, kind), old, new) in enumerate(zip(holders, before, contents(holders))):
        if i in skip:
            continue
        if kind == "set" or kind == "array":
            if old != new:
                return f"the {kind} {what}" if kind == "set" else f"the values of the NumPy array {what}"
        elif kind == "seq":
            if len(old) != len(new):
                return f"the list {what} (its length)"
            for i, (a, b) in enumerate(zip(old, new)):
                if a is not b:
                    return f"{what}[{i}]"
        else:
            dot = kind != "items"
            old_d = dict(old)
            for k, v in new:
                if k not in old_d or old_d[k] is not v:
                    return f"{what}.{k}" if dot else f"{what}[{k!r}]"
            if len(old) != len(new):
                gone = next(k for k, _v in old if k not in dict(new))
                return f"{what}.{gone}" if dot else f"{what}[{gone!r}]"
    return None
