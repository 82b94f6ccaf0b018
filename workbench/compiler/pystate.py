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
import builtins
import collections
import dis
import functools
import io
import operator
import os
import random
import sys
import types

from .. import _backend
from ..nn.module import Module
from ..tensor import Tensor

np = _backend.numpy
_ndarray = np.ndarray
_FUNCTION = types.FunctionType
_PARTIAL = functools.partial
_NAMESPACE = types.SimpleNamespace
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial, Tensor)
_PLAIN = (bool, int, float, complex, str, bytes, type(None))
_LIBRARY_MODULES = ("builtins", "typing", "abc", "enum", "collections", "functools")
_RNGS = (np.random.Generator, np.random.RandomState, random.Random)
MAX_ITEMS = 10_000  # a container larger than this is not searched (nor guarded, nor compared)
MAX_READS = 16384  # Python values one trace's guard may check
MAX_ARRAY = 4096  # NumPy arrays up to this size have their values guarded; a larger one read makes the call eager
DEPTH = 3  # levels searched below a name: cfg["opt"]["sgd"]["lr"], self.cfg.lr
LENGTH = object()  # the key of a read that is a container's length
VALUES = object()  # the key of a read that is the tuple of a module's submodules
_MODULE_OWN = frozenset(Module().__dict__)  # what nn.Module itself keeps (its tables, hooks, caches)
# methods of workbench's objects that read state kept under another name (a scheduler's last learning rates)
_READS_UNDER = {"get_last_lr": "_last_lr", "get_lr": "_last_lr"}


@functools.lru_cache(maxsize=4096)
def code_names(code):
    """(the global names, the attribute names) ``code`` uses, its nested functions' code included; its string
    constants that are identifiers count as attribute names (``getattr(args, "clip", 5.0)``)."""
    names, attrs = set(), set()
    stack = [code]
    while stack:
        c = stack.pop()
        for i in dis.get_instructions(c):
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names.add(i.argval)
            elif i.opname in ("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR"):
                attrs.add(i.argval)
        attrs.update(code_strings(c))
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return frozenset(names), frozenset(attrs)


@functools.lru_cache(maxsize=4096)
def code_strings(code):
    """The string constants of ``code`` and its nested functions' code."""
    out, stack = set(), [code]
    while stack:
        c = stack.pop()
        out.update(k for k in c.co_consts if k.__class__ is str)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return frozenset(out)


@functools.lru_cache(maxsize=4096)
def code_keys(code):
    """The string keys ``code`` (and its nested functions' code) subscripts with (``cfg["clip"]``,
    ``cfg.get("clip")``): a dict's items the code names."""
    out, stack = set(), [code]
    while stack:
        c = stack.pop()
        prev = None
        for i in dis.get_instructions(c):
            if i.opname in ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR") and prev is not None and \
                    prev.opname == "LOAD_CONST" and prev.argval.__class__ is str:
                out.add(prev.argval)
            elif i.opname == "LOAD_CONST" and i.argval.__class__ is str and prev is not None and \
                    prev.opname in ("LOAD_METHOD", "LOAD_ATTR") and prev.argval in ("get", "pop", "setdefault"):
                out.add(i.argval)
            prev = i
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    return frozenset(out)


# attribute names by which code reads a dict's items without naming their keys
_ITERATES = frozenset(("values", "items", "keys", "copy", "update", "__iter__", "popitem"))


def forward_names(cls):
    """The attribute names the code of a module's ``forward`` uses, with the methods of its class it names (and
    theirs): what a call of the module can read of it (a counter ``on_epoch_end()`` keeps is not)."""
    try:  # (cached per class and forward: a forward patched later is searched anew)
        return _forward_names_cached(cls, getattr(cls, "forward", None))
    except TypeError:  # a class (or metaclass) that cannot be hashed
        return _forward_names(cls)


@functools.lru_cache(maxsize=1024)
def _forward_names_cached(cls, _forward):
    return _forward_names(cls)


def _forward_names(cls):
    methods = dict(_class_functions(cls, library=True))
    names, todo, done = set(), ["forward", *_IMPLICIT], set()
    while todo:
        name = todo.pop()
        f = methods.get(name)
        if f is None or name in done:
            continue
        done.add(name)
        used = code_names(f.__code__)[1]
        names |= used
        todo.extend(n for n in used if n in methods)
    return frozenset(names)


def _library_class(cls):
    m = getattr(cls, "__module__", "") or ""
    return m == "workbench" or m.startswith("workbench.") or m in _LIBRARY_MODULES


def library_object(v):
    """An object of workbench's own (an optimizer, a scheduler, a scaler): its state is the library's, which the
    trace records through its own hooks."""
    return any(_library_class(c) for c in type(v).__mro__[:-1])


def _user_module(v):
    """A Python module of the user's own (``import conf``): not the standard library's, nor an installed one."""
    name = getattr(v, "__name__", "") or ""
    f = getattr(v, "__file__", None) or ""
    return (f and name.partition(".")[0] not in sys.stdlib_module_names and "site-packages" not in f
            and "dist-packages" not in f and not name.startswith("workbench"))


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
    if owner is not None and isinstance(_obj_dict(owner), dict):
        # its public attributes (every_global: where a batch may be), or all but a module's own tables
        found += [(owner.__dict__, k, v, f"self.{k}", ()) for k, v in list(owner.__dict__.items())
                  if not k.startswith("_") or not every_global and k not in _MODULE_OWN and not k.startswith("__")]
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


@functools.lru_cache(maxsize=1024)
def _installed_module(name):
    """Whether the module ``name`` is an installed package's (pandas, tqdm): its objects are searched no further
    than their identity (their internals are the package's)."""
    f = getattr(sys.modules.get(name), "__file__", None) or ""
    return ("site-packages" in f or "dist-packages" in f) and not name.startswith("workbench")


def _obj_dict(v):
    """v's instance dict, or None: read as Python's own lookup does, never through a class's ``__getattr__``
    (an attr-dict config raises KeyError there; a proxy would see calls eager never makes)."""
    try:
        return object.__getattribute__(v, "__dict__")
    except (AttributeError, TypeError):
        return None


def plain_object(v):
    """An object of a user's class (``SimpleNamespace``, a trainer) whose plain attributes may hold a batch."""
    d = _obj_dict(v)
    return (d.__class__ is dict and not isinstance(v, _NOT_OBJECTS) and v.__class__.__module__ != "builtins"
            or v.__class__ is _NAMESPACE)


def user_class(v):
    return isinstance(v, type) and not _library_class(v) and not issubclass(v, Tensor)


def plain_value(v):
    """A Python value the guard compares by value: a number (NumPy's scalars too), a string, None, an enum
    member, or a tuple of such (a namedtuple's too)."""
    c = v.__class__
    return (c in _PLAIN or isinstance(v, np.generic) and v.dtype.kind in "biufcSU" or isinstance(v, _ENUM)
            or isinstance(v, tuple) and len(v) <= 16 and all(plain_value(x) for x in v))


_ENUM = __import__("enum").Enum


class _Slots:
    """An object's ``__slots__`` as a mapping (``get``, ``items``), for the guard and the comparison."""

    __slots__ = ("obj", "names")

    def __init__(self, obj, names):
        self.obj, self.names = obj, names

    def get(self, name, default=None):
        return getattr(self.obj, name, default)

    def items(self):
        return [(n, getattr(self.obj, n)) for n in self.names if hasattr(self.obj, n)]

    def __len__(self):
        return len(self.names)


def _slot_names(cls):
    names = []
    for klass in cls.__mro__:
        sl = vars(klass).get("__slots__", ())
        names += [sl] if isinstance(sl, str) else [n for n in sl if n not in ("__dict__", "__weakref__")]
    return names


def _iter_state(it):
    """Where an iterator stands: a generator's frame (its position and locals), else its pickled state and length
    hint, as a tuple ``_differs`` compares (holding references, so a value's id is not reused)."""
    if isinstance(it, types.GeneratorType):
        fr = it.gi_frame
        if fr is None:
            return _Snap("done", ())
        values = tuple(fr.f_locals.values())
        return _Snap((fr.f_lasti, tuple(fr.f_locals), tuple(map(id, values))), values)
    try:
        state = it.__reduce__()[2:]
    except Exception:
        state = ()
    try:
        return _Snap((operator.length_hint(it, -1), repr(state)), state)
    except Exception:
        return _Snap(operator.length_hint(it, -1), ())


class _Snap:
    """A comparable snapshot (``key``) that holds what it describes (``refs``, so that an id in it is not reused)."""

    __slots__ = ("key", "refs")

    def __init__(self, key, refs):
        self.key, self.refs = key, refs

    def __eq__(self, other):
        return self.key == other.key

    def __ne__(self, other):
        return self.key != other.key


def _rng_state(r):
    if isinstance(r, np.random.Generator):
        return repr(r.bit_generator.state)
    if isinstance(r, np.random.RandomState):
        st = r.get_state()
        return (st[0], st[1].tobytes(), *st[2:])
    return r.getstate()


class State:
    """What ``python_state`` found: ``reads`` [(container, key, value, what)] for the guard, ``holders``
    [(container, what, kind)] for ``contents``/``changed``, ``unguardable`` why a value found cannot be guarded
    (None if none); ``classes`` and ``functions``, the user's classes and functions found, whose code may read
    more; ``seen`` the ids of the objects searched (each once)."""

    def __init__(self):
        self.reads, self.holders, self.seen, self.keep, self.unguardable = [], [], set(), [], None
        self.classes, self.functions = {}, {}


# methods Python calls without naming them: their code counts wherever an object of the class is found
_IMPLICIT = frozenset(("__call__", "__getattr__", "__getattribute__", "__getitem__", "__contains__", "__iter__",
                       "__len__", "__bool__", "__float__", "__int__", "__index__", "__get__"))


def python_state(fn, args=(), kwargs=None):
    """What a replay of ``fn`` called with ``args`` and ``kwargs`` relies on in Python (a ``State``).

    The reads: the Python values found through ``scopes`` (the names the code loads) ``DEPTH`` levels down, and
    the objects on the way to them. The guard checks that each place still holds that value (numbers, strings,
    None, enum members, tuples of them, sets of them, small NumPy arrays: by value and class; anything else:
    that very object: a function rebound in a notebook cell, a model rebound, a container replaced). An
    object's attributes (a user's object, class, module, an nn.Module, an optimizer's or scheduler's) count
    where the code uses their name (``cfg.lr``: 'lr'); a dict's items count where the code names their key, or
    all of them (and its length) where it names none; a list's and a deque's items and length all count.
    The code searched: the function's, its helpers' (``scopes``), and that of the methods of the user's classes
    found which the code names (``self.helper()``; ``forward`` of a model; ``__call__``, ``__getattr__``...),
    of the functions found in containers (a callback in a dict) and of bound methods, until nothing new turns
    up: their globals and closure variables are searched too (a flag a model's ``forward`` reads).
    The holders: the dicts, lists, deques, sets, attribute tables, small NumPy arrays and random generators found,
    whose contents the call must leave as they were (``changed``).
    """
    found, attrs = scopes(fn, every_global=False)
    attrs = set(attrs)
    keys = set(code_keys(owner_of(fn)[0].__code__)) if hasattr(owner_of(fn)[0], "__code__") else set()
    done = set()
    for _round in range(8):
        st = _walk(fn, found, attrs, keys, args, kwargs)
        grew = False
        todo = list(st.functions.values())
        for cls in st.classes.values():
            for name, f in _class_functions(cls):
                if name in attrs or name in _IMPLICIT or name == "forward" and issubclass(cls, Module):
                    todo.append((f, f"{cls.__name__}.{name}"))
        for f, where in todo:
            if id(f) in done:
                continue
            done.add(id(f))
            more, used = _function_scopes(f, where)
            strings = code_keys(f.__code__) if hasattr(f, "__code__") else frozenset()
            found = found + more
            grew = grew or bool(more) or not used <= attrs or not strings <= keys
            keys |= strings
            attrs |= used
        if not grew:
            break
    func = owner_of(fn)[0]
    code, g = getattr(func, "__code__", None), getattr(func, "__globals__", None)
    if code is not None and g is not None:  # the builtins it uses (len, max): still not shadowed by a global
        for name in sorted(code_names(code)[0]):
            if name not in g and hasattr(builtins, name):
                st.reads.append((g, name, ABSENT, f"the builtin {name}"))
    return st


def _class_functions(cls, library=False):
    """(name, function) of the methods, static and class methods and property getters of a user's class (and of
    workbench's classes in its MRO, with ``library``), the class's own first."""
    out = []
    for klass in reversed(cls.__mro__[:-1]):
        if _library_class(klass) and not library:
            continue
        for name, v in list(vars(klass).items()):
            f = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v.fget if isinstance(v, property) else v
            if isinstance(f, types.FunctionType):
                out.append((name, f))
    return out


def _function_scopes(f, where):
    """The places a function's code looks things up (its loaded globals, closure cells, defaults), as ``scopes``
    entries, and the attribute names its code uses."""
    code = getattr(f, "__code__", None)
    if code is None or _library_class(f):
        return [], frozenset()
    loaded, used = code_names(code)
    g = f.__globals__
    here = [(g, k, g[k], f"{where}: {k}", ()) for k in sorted(loaded) if k in g]
    for name, cell in zip(code.co_freevars, f.__closure__ or ()):
        try:
            here.append((cell, None, cell.cell_contents, f"{where}: {name}", ()))
        except ValueError:  # an empty cell
            continue
    here += [(f.__defaults__, i, v, f"{where}: default {i}", ()) for i, v in enumerate(f.__defaults__ or ())]
    return here, used


def _walk(fn, found, attrs, keys, args, kwargs):
    """One search of the places in ``found`` and the arguments, with ``attrs`` the attribute names that count and
    ``keys`` the strings the code names (a dict's keys among them are the ones that count)."""
    _func, owner = owner_of(fn)
    modules = _modules_of(fn, found)
    st = State()
    reads, holders, seen = st.reads, st.holders, st.seen

    def read(container, key, v, what):
        if len(reads) >= MAX_READS:
            st.unguardable = st.unguardable or (f"it can read more than {MAX_READS} Python values (through {what}): "
                                                "pass what changes as an argument")
            return
        reads.append((container, key, v, what))

    def too_large(what, n):
        st.unguardable = st.unguardable or (f"it reads {what}, of {n} items: too many for the guard to check; pass "
                                            "what the function needs as an argument")

    def visit(container, key, v, what, depth, table):
        # table: container is an attribute table, whose entries count only where the code uses their name
        if table and key not in attrs:
            return
        if isinstance(v, Tensor):  # (captured_sources: read anew, or guarded by identity)
            return
        st.keep.append(v)
        if isinstance(v, _ndarray):
            if id(v) in seen:
                return
            seen.add(id(v))
            if v.size > MAX_ARRAY:
                st.unguardable = st.unguardable or (f"it reads the NumPy array {what} ({v.size} elements: too "
                                                    "large for the guard to check its values): pass it as a tensor")
            elif container is not None:
                read(container, key, v, what)
                holders.append((v, what, "array"))
            return
        if plain_value(v):
            if container is not None:
                read(container, key, v, what)
            return
        if container is not None and container.__class__ is not tuple:
            read(container, key, v, what)  # that very object (a function, a model, a container)
        if depth < 0 or id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, (types.FunctionType, types.MethodType, types.BuiltinMethodType, _PARTIAL)) or \
                hasattr(type(v), "cache_clear") and hasattr(v, "__wrapped__"):
            _callable(v, what, depth)
            return
        if hasattr(type(v), "__next__") and not isinstance(v, io.IOBase):  # an iterator (next(it), for x in it)
            holders.append((v, what, "iter"))
            return
        if isinstance(v, io.IOBase):  # a log file, a StringIO: a write moves its position
            if not v.closed and v.seekable():
                holders.append((v, what, "stream"))
            return
        if isinstance(v, (collections.UserDict, collections.UserList)):
            visit(None, None, v.data, f"{what}.data", depth, False)
            return
        if isinstance(v, (dict, types.MappingProxyType, list, collections.deque, set, frozenset, tuple)) and \
                len(v) > MAX_ITEMS:
            too_large(what, len(v))
            return
        if isinstance(v, (dict, types.MappingProxyType)):
            holder, kind = v, "items"  # (dict's own items, not an override's)
            items = list(dict.items(v) if isinstance(v, dict) else v.items())
            named = [(k, x) for k, x in items if k in keys]  # the keys the code names, if it names any
            if named and not _ITERATES & attrs and all(k.__class__ is str for k, _x in items):
                items, kind = named, "items-named"
        elif isinstance(v, (list, collections.deque)):
            holder, kind, items = v, "seq", list(enumerate(v))
        elif isinstance(v, tuple):
            holder, kind, items = None, "tuple", list(enumerate(v))
        elif isinstance(v, (set, frozenset)):
            holder, kind, items = (v if isinstance(v, set) else None), "set", ()
            if container is not None and len(v) <= MAX_ITEMS and all(plain_value(x) for x in v):
                read(v, SET, frozenset(v), f"the items of {what}")  # ("double" in flags)
        elif isinstance(v, _RNGS):
            holders.append((v, what, "rng"))
            return
        elif isinstance(v, Module):
            holder, kind = v.__dict__, "module"
            user = not _library_class(type(v))
            items = [(k, x) for k, x in list(holder.items()) if k not in _MODULE_OWN and (k[0] != "_" or user)]
            if v._modules:  # its submodules (model[0] = nn.Linear(...), a layer appended to a ModuleList)
                read(v._modules, VALUES, tuple(v._modules.values()), f"{what}'s submodules")
            if user:
                _object_class(v, what, depth)
        elif isinstance(v, types.ModuleType):
            if not _user_module(v):
                return
            holder, kind = vars(v), "attrs"
            items = [(k, x) for k, x in list(holder.items()) if not k.startswith("__")]
        elif isinstance(v, type):
            if not user_class(v):
                return
            st.classes[id(v)] = v
            holder, kind = vars(v), "attrs"
            items = [(k, x) for k, x in list(holder.items()) if not k.startswith("__")]  # (methods: by identity)
        elif _installed_module(getattr(type(v), "__module__", "") or ""):
            # a DataFrame, a progress bar: by identity only, and its attributes compared (pbar.update(1))
            d = _obj_dict(v)
            if d.__class__ is dict and len(d) <= MAX_ITEMS:
                holders.append((d, what, "attrs"))
            return
        elif library_object(v):
            holder, kind = _obj_dict(v), "attrs"
            if holder.__class__ is not dict:
                return
            wanted = {_READS_UNDER.get(a, a) for a in attrs}
            for k, x in [(k, x) for k, x in list(holder.items()) if k in wanted]:
                visit(holder, k, x, f"{what}.{k}", depth - 1, False)
            holders.append((holder, what, "attrs"))
            return
        elif isinstance(_obj_dict(v), dict) and not isinstance(v, _NOT_OBJECTS):
            holder, kind = v.__dict__, "attrs"
            items = [(k, x) for k, x in list(holder.items()) if not k.startswith("__")]
            _object_class(v, what, depth)
        elif _slot_names(type(v)) and not library_object(v):
            holder, kind = _Slots(v, _slot_names(type(v))), "attrs"
            items = holder.items()
            _object_class(v, what, depth)
        else:
            return
        if holder is not None and len(holder) > MAX_ITEMS:
            too_large(what, len(holder))
            return
        if holder is not None:
            holders.append((holder, what, "items" if kind == "items-named" else kind))
            if kind in ("items", "seq"):  # its length (len(history), a key added): the guard checks it
                read(holder, LENGTH, len(holder), f"len({what})")
        sub_table = kind in ("attrs", "module")
        for k, x in items:
            visit(holder if holder is not None else v, k, x,
                  f"{what}.{k}" if sub_table else f"{what}[{k!r}]", depth - 1, sub_table)

    def _object_class(v, what, depth):
        own = _obj_dict(v)
        for klass in type(v).__mro__[:-1]:  # class attributes read through the object (self.scale)
            if user_class(klass):
                visit(None, None, klass, klass.__name__, depth - 1, False)
                if own.__class__ is dict:  # and that the object does not shadow them (m.temperature = 0.5)
                    for k, x in list(vars(klass).items()):
                        if k in attrs and k not in own and not k.startswith("__") and not isinstance(
                                x, (types.FunctionType, staticmethod, classmethod, property)):
                            read(own, k, ABSENT, f"{what}.{k} (set on the object)")

    def _callable(v, what, depth):
        # a function's code (searched by python_state's next round), and what a bound method is bound to
        # (rec = history.append; lg.log)
        f = v
        if isinstance(v, _PARTIAL):
            visit(None, None, v.func, f"{what}.func", depth - 1, False)
            visit(None, None, v.args, f"{what}.args", depth - 1, False)
            visit(None, None, v.keywords, f"{what}.keywords", depth - 1, False)
            return
        if hasattr(type(v), "cache_clear") and not isinstance(v, types.FunctionType):  # functools.lru_cache
            f = v.__wrapped__
        if isinstance(f, (types.MethodType, types.BuiltinMethodType)):
            owner_ = getattr(f, "__self__", None)
            if owner_ is not None and not isinstance(owner_, types.ModuleType):
                visit(None, None, owner_, f"{what}.__self__", depth - 1, False)
            f = getattr(f, "__func__", None)
        if isinstance(f, types.FunctionType) and not _library_class(f):
            st.functions[id(f)] = (f, what)

    if "environ" in attrs or "getenv" in attrs or "environ" in keys:  # os.environ["SCALE"], os.getenv
        read(os.environ, ENVIRON, dict(os.environ), "os.environ")
    if owner is not None and not isinstance(owner, Module):  # a bound method's object (self.calls += 1)
        if isinstance(_obj_dict(owner), dict):
            holders.append((owner.__dict__, "self", "attrs"))
        _object_class(owner, "self", DEPTH + 1)
    for container, key, v, what, chain in found:
        table = owner is not None and container is _obj_dict(owner)
        visit(container, key, v, what, DEPTH, table)
        for c, k, h, w in chain:  # the helper must stay the one traced, where it was found
            if c.__class__ is not tuple and id(h) not in seen:
                seen.add(id(h))
                read(c, k, h, w)
    for m in modules:  # the models the call can reach, however deep: what their attributes hold
        visit(None, None, m, "self" if m is owner else f"{type(m).__name__} object", DEPTH, False)
    # the arguments (the guard checks each by identity, or a list's, tuple's or dict's items by value): what the
    # objects among them hold, and what the call must leave as it found it (a history list handed in)
    for path, v in [(f"args[{i}]", a) for i, a in enumerate(args)] + [(f"kwargs[{k!r}]", a) for k, a in
                                                                          (kwargs or {}).items()]:
        if isinstance(v, _ndarray) and v.size <= MAX_ARRAY:  # an array handed in and written between calls
            reads.append((ARGUMENT, path, v, path))
            holders.append((v, path, "array"))
        elif not isinstance(v, Tensor):
            visit(None, None, v, path, DEPTH, False)
    return st


SET = object()  # the key of a read that is a set's items
ABSENT = object()  # the value of a read where the place must hold nothing (a class default not shadowed)
ENVIRON = object()  # the key of a read that is os.environ's items
ARGUMENT = object()  # the container of a read that is an argument (its key: the argument's path)


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
    return [_SNAPSHOT[kind](h) for h, _what, kind in holders]


_SNAPSHOT = {  # kind -> what a holder of that kind holds now
    "seq": tuple,
    "array": lambda h: h.tobytes(),
    "rng": lambda h: _rng_state(h),
    "iter": lambda h: _iter_state(h),
    "stream": lambda h: h.tell() if not h.closed else None,
    "set": lambda h: frozenset(map(id, h)),
    # its attributes, less nn.Module's own tables and caches
    "module": lambda h: tuple((k, v) for k, v in list(h.items()) if k not in _MODULE_OWN),
    "items": lambda h: tuple(dict.items(h) if isinstance(h, dict) else h.items()),
    "attrs": lambda h: tuple(dict.items(h) if isinstance(h, dict) else h.items()),
}
_CHANGED = {  # kind -> what changed, for the holders whose change is the whole (no item to name)
    "set": "the set {}",
    "array": "the values of the NumPy array {}",
    "rng": "the state of the random generator {} (it drew numbers)",
    "stream": "the file {} (it wrote to it)",
    "iter": "the iterator {} (it advanced it: a replay would not; pass what it yields as an argument)",
}


def changed_at(holders, before):
    """The indices of the holders whose contents differ from ``before``."""
    return {i for i, (old, new) in enumerate(zip(before, contents(holders))) if _differs(old, new)}


def _differs(old, new):
    if old.__class__ is not tuple:  # a set's ids, an array's bytes, a generator's state
        return old != new
    return len(old) != len(new) or any(a is not b and not (a.__class__ is tuple and b.__class__ is tuple and
                                                           len(a) == 2 and a[1] is b[1] and _same_key(a[0], b[0]))
                                       for a, b in zip(old, new))


def _same_key(a, b):
    if a is b:
        return True
    try:  # (a key whose == raises or is ambiguous, a tensor's: a different key)
        return bool(a == b)
    except Exception:
        return False


def changed(holders, before, skip=()):
    """Where the call changed a holder's contents (``before``: ``contents`` then), named for a message, or None.
    skip: the indices of holders whose changes a replay makes again."""
    for i, ((h, what, kind), old, new) in enumerate(zip(holders, before, contents(holders))):
        if i in skip or not _differs(old, new):
            continue
        if kind in _CHANGED:
            return _CHANGED[kind].format(what)
        if kind == "seq":
            if len(old) != len(new):
                return f"the list {what} (its length)"
            return next(f"{what}[{j}]" for j, (a, b) in enumerate(zip(old, new)) if a is not b)
        dot = kind != "items"
        old_d = dict(old)
        for k, v in new:
            if k not in old_d or old_d[k] is not v:
                return f"{what}.{k}" if dot else f"{what}[{k!r}]"
        gone = next(k for k, _v in old if k not in dict(new))
        return f"{what}.{gone}" if dot else f"{what}[{gone!r}]"
    return None
