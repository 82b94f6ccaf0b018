"""Unpickling checkpoints: the weights-only allowlist (PyTorch's rules and wording) and full unpickling.

``weights_only=True`` (the default, as in PyTorch >= 2.6) reads pickles with :class:`WeightsOnlyUnpickler`:
Python's own pickle machine with a reduced instruction set. A global (a function or class) is looked up
only in an allowlist: PyTorch's defaults (tensors, Parameters, storages, ``torch.Size``, dtypes, devices,
``OrderedDict``, ``set``, ``bytearray``, ``complex``...), workbench's names for the same things, and what
the user added with :func:`add_safe_globals` / :class:`safe_globals`. Only allowlisted functions and
classes may be called (REDUCE, NEWOBJ) and only their instances get state (BUILD); the instructions that
call other things (INST, OBJ, the copyreg extension codes, out-of-band buffers) are refused; modules
``os``, ``sys``, ``posix`` and ``nt`` are refused even when allowlisted.

``weights_only=False`` unpickles fully (any class, any function: only for trusted files), still reading
PyTorch's names as workbench objects: whole ``nn`` modules PyTorch pickled become workbench's.
"""
import _compat_pickle
import codecs
import pickle
import pickletools
from collections import Counter, OrderedDict

from .. import _backend
from .._backend import dtypes as _dt
from ..tensor import Size
from . import _torch_names

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_safe = set()


def add_safe_globals(safe_globals):
    """Mark functions and classes as safe for ``load(..., weights_only=True)``: they may be called, and
    their instances get state, while unpickling.

    Each item is a function/class, or a ``(function/class, "full.dotted.name")`` pair when the name the
    checkpoint uses differs from ``f"{obj.__module__}.{obj.__qualname__}"``.

    >>> import io, workbench as wb
    >>> from fractions import Fraction
    >>> buf = io.BytesIO(); wb.save({"lr": Fraction(1, 3)}, buf); _ = buf.seek(0)
    >>> wb.serialization.add_safe_globals([Fraction])
    >>> wb.load(buf)
    {'lr': Fraction(1, 3)}
    >>> wb.serialization.clear_safe_globals()
    """
    global _safe
    _safe = _safe.union(set(safe_globals))


def get_safe_globals():
    """The globals the user marked safe for ``weights_only`` loading (:func:`add_safe_globals`).

    >>> import workbench as wb
    >>> wb.serialization.get_safe_globals()
    []
    """
    return list(_safe)


def clear_safe_globals():
    """Forget every global marked safe with :func:`add_safe_globals`.

    >>> import workbench as wb
    >>> wb.serialization.add_safe_globals([complex]); wb.serialization.clear_safe_globals()
    >>> wb.serialization.get_safe_globals()
    []
    """
    global _safe
    _safe = set()


class safe_globals:
    """Context manager: the given globals are safe for ``weights_only`` loading inside the ``with`` block.

    >>> import io, workbench as wb
    >>> from fractions import Fraction
    >>> buf = io.BytesIO(); wb.save([Fraction(2, 3)], buf); _ = buf.seek(0)
    >>> with wb.serialization.safe_globals([Fraction]):
    ...     wb.load(buf)
    [Fraction(2, 3)]
    >>> wb.serialization.get_safe_globals()
    []
    """

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        global _safe
        _safe = _safe - set(self.safe_globals)


def _user_allowed():
    rc = {}
    for f in _safe:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


_DEFAULTS = None


def default_allowed():
    """Globals allowed by default: PyTorch's allowlist (as workbench objects) and workbench's own names."""
    global _DEFAULTS
    if _DEFAULTS is None:
        table = _torch_names.names()
        table.update({
            "collections.Counter": Counter,
            "_codecs.encode": codecs.encode,  # protocol 2 pickles bytes as encode(str, 'latin1')
            "builtins.bytearray": bytearray,
            "builtins.set": set,
            "builtins.complex": complex,
            "workbench._backend.dtypes._by_name": _dt._by_name,
            "workbench._backend.device.device": _backend.device,
            "workbench.tensor.Size": Size,
        })
        _DEFAULTS = table
    return _DEFAULTS


def _torch_name(module, name, proto, fix_imports):
    """Python 2 names mapped as pickle does for protocols < 3 (PyTorch does the same)."""
    if proto < 3 and fix_imports:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
    return module, name


def _refused(full_path):
    if full_path.startswith("builtins."):
        full_path = full_path[len("builtins."):]
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. Please use "
        f"`workbench.serialization.add_safe_globals([{full_path}])` or the "
        f"`workbench.serialization.safe_globals([{full_path}])` context manager to allowlist this global if you "
        "trust this class/function.")


def _checked(obj):
    msg = _torch_names.missing_dtype_message(obj)
    if msg is not None:
        raise pickle.UnpicklingError(msg)
    return obj


_UNSAFE_OPS = {"INST", "OBJ", "EXT1", "EXT2", "EXT4", "NEXT_BUFFER", "READONLY_BUFFER"}


class WeightsOnlyUnpickler(pickle._Unpickler):
    """An unpickler that builds only allowlisted globals (see the module docstring).

    Python's pure-Python unpickler, because its instruction table can be narrowed; the pickles it reads
    hold object structure only (tensor bytes live beside them), so its speed does not matter.
    """

    dispatch = {code: fn for code, fn in pickle._Unpickler.dispatch.items()
                if pickletools.code2op[chr(code)].name not in _UNSAFE_OPS}

    def __init__(self, file, persistent_load=None, **kwargs):
        super().__init__(file, **kwargs)
        self._persistent = persistent_load
        self._allowed = dict(default_allowed())
        self._allowed.update(_user_allowed())
        self._values = {id(v) for v in self._allowed.values()}

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError("A load persistent id instruction was encountered, but no persistent_load "
                                         "function was specified.")
        return self._persistent(pid)

    def find_class(self, module, name):
        module, name = _torch_name(module, name, self.proto, self.fix_imports)
        full_path = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is "
                                         "blocked.")
        if full_path not in self._allowed:
            cls = _torch_names.counterpart(full_path)  # allowlisted as workbench's class: PyTorch's name is it
            if cls is not None and id(cls) in self._values:
                return cls
            raise _refused(full_path)
        return _checked(self._allowed[full_path])

    def _load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in self._values:
            msg = f"Trying to call reduce for unrecognized function {func}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__}"
            raise pickle.UnpicklingError(msg)
        self.stack[-1] = func(*args)

    def _new(self, cls, args, kwargs):
        if not isinstance(cls, type) or id(cls) not in self._values:
            raise pickle.UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted via "
                                         f"`add_safe_globals` but got {cls}")
        self.append(cls.__new__(cls, *args, **kwargs))

    def _load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        self._new(cls, args, {})

    def _load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self._new(cls, args, kwargs)

    def _load_build(self):
        inst = self.stack[-2]
        if type(inst) is not OrderedDict and id(type(inst)) not in self._values:
            raise pickle.UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                         f"`add_safe_globals`, but got {type(inst)}")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.NEWOBJ[0]] = _load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = _load_newobj_ex
    dispatch[pickle.BUILD[0]] = _load_build

    def load(self):
        try:
            return super().load()
        except KeyError as e:
            if e.args and isinstance(e.args[0], int):  # an instruction outside the narrowed table
                raise pickle.UnpicklingError(f"Unsupported operand {e.args[0]} in a weights-only load") from None
            raise pickle.UnpicklingError(f"unpickling failed: KeyError {e}") from None


def full_unpickler(pickle_module=pickle):
    """An Unpickler class of ``pickle_module`` that reads PyTorch's names as workbench objects and
    everything else as plain pickle does (any class, any function: for trusted files only)."""
    torch_names = _torch_names.names()

    class Unpickler(pickle_module.Unpickler):
        def __init__(self, file, persistent_load=None, **kwargs):
            super().__init__(file, **kwargs)
            self._persistent = persistent_load

        def persistent_load(self, pid):
            return self._persistent(pid)

        def find_class(self, module, name):
            full_path = f"{module}.{name}"
            if full_path in torch_names:
                return _checked(torch_names[full_path])
            if module == "torch" or module.startswith("torch."):
                cls = _torch_names.counterpart(full_path)
                if cls is None:
                    raise pickle.UnpicklingError(
                        f"this checkpoint pickles {full_path}, a PyTorch object workbench has no counterpart for; "
                        "save its state_dict() in PyTorch instead and load that")
                return cls
            return super().find_class(module, name)

    return Unpickler


def globals_in(data):
    """The dotted names of the globals a pickle refers to, read without running it."""
    found, memo, last, strings = set(), {}, None, []
    for op, arg, _ in pickletools.genops(data):
        pushed = None
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            found.add(".".join(_torch_name(module, name, 2, True)))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
            pushed = arg
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
            memo[len(memo) if op.name == "MEMOIZE" else arg] = last
            pushed = last
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed = memo.get(arg)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add(f"{strings[-2]}.{strings[-1]}")
        if op.name not in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
            strings = strings[-1:] + [pushed] if pushed is not None else []
        last = pushed
    return found


def unsafe_globals(data):
    """The globals in a pickle that a weights-only load would refuse."""
    allowed = set(default_allowed()) | set(_user_allowed())
    return sorted(g for g in globals_in(data) if g not in allowed)


class _Inert:
    """What the structure-only pass puts where a global, a call's result or a new object would be (it
    takes the items, appends and state the pickle gives it, and keeps none)."""

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass

    def add(self, value):
        pass


class _Skim(pickle._Unpickler):
    """Walks a pickle's structure and collects its persistent ids, calling nothing: every global is an
    inert placeholder (PyTorch's storage classes excepted, themselves inert), REDUCE/NEWOBJ/BUILD make
    or keep placeholders. The legacy format needs the storages' dtypes before its data can be read."""

    dispatch = dict(WeightsOnlyUnpickler.dispatch)

    def __init__(self, file, **kwargs):
        super().__init__(file, **kwargs)
        self.pids = []
        self._storage_types = {k: v for k, v in _torch_names.names().items()
                               if isinstance(v, _torch_names.StorageType)}

    def persistent_load(self, pid):
        self.pids.append(pid)
        return _Inert()

    def find_class(self, module, name):
        module, name = _torch_name(module, name, self.proto, self.fix_imports)
        return self._storage_types.get(f"{module}.{name}") or _Inert()

    def _reduce(self):
        self.stack.pop()
        self.stack[-1] = _Inert()

    def _newobj(self):
        del self.stack[-2:]
        self.append(_Inert())

    def _newobj_ex(self):
        del self.stack[-3:]
        self.append(_Inert())

    def _build(self):
        self.stack.pop()

    dispatch[pickle.REDUCE[0]] = _reduce
    dispatch[pickle.NEWOBJ[0]] = _newobj
    dispatch[pickle.NEWOBJ_EX[0]] = _newobj_ex
    dispatch[pickle.BUILD[0]] = _build


def persistent_ids(file, **kwargs):
    """The persistent ids of the pickle at ``file``'s position (left just after it), running nothing."""
    skim = _Skim(file, **kwargs)
    try:
        skim.load()
    except KeyError as e:
        raise pickle.UnpicklingError(f"Unsupported operand {e.args[0]} in a PyTorch checkpoint") from None
    return skim.pids
