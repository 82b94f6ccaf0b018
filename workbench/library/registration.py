"""The older registration form (``Library(ns, kind)``, ``.define(schema)``, ``.impl(name, fn, dispatch_key)``) and
the free functions (``define``, ``impl``, ``register_kernel``, ``register_autograd``, ``register_fake``) that
work on any operator by name. All of them feed the one ``CustomOpDef`` per operator."""
from .custom_op import OPDEFS, CustomOpDef, _device_types, resolve, split_qualname
from .schema import Schema

_DIRECT_KEYS = ("Autograd", "AutogradCPU", "AutogradCUDA")  # kernels that implement autograd themselves
_DEF_NAMESPACES = set()
_FRAGMENTS = {}  # namespace -> the FRAGMENT Library that free-function ``define`` uses
_KEY_TO_DEVICE = {"CPU": "cpu", "CUDA": "cuda", "CompositeExplicitAutograd": None, "AutogradCPU": "cpu",
                  "AutogradCUDA": "cuda", "Autograd": None, "CompositeImplicitAutograd": None}


class Library:
    """A set of operator definitions or implementations in namespace ``ns``; ``kind`` is 'DEF', 'IMPL' or
    'FRAGMENT', as ``torch.library.Library``.

    >>> import workbench as wb
    >>> lib = wb.library.Library("doclib", "DEF")
    >>> lib.define("scale(Tensor x, float a) -> Tensor")
    'scale'
    >>> lib.impl("scale", lambda x, a: x * a, "CompositeExplicitAutograd")
    >>> wb.ops.doclib.scale(wb.ones(2), 3.0)
    tensor([3., 3.])
    """

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind} (use 'DEF', 'IMPL' or 'FRAGMENT')")
        if not ns.isidentifier():
            raise ValueError(f"namespace {ns!r} must be a Python identifier")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your "
                    "definitions in a single TORCH_LIBRARY block. To add definitions elsewhere, use "
                    f"Library('{ns}', 'FRAGMENT').")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs = set()

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Define operator ``name(args) -> returns`` in this namespace; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f"define() is not allowed on a Library of kind IMPL ({self}); use 'DEF' or 'FRAGMENT'")
        parsed = Schema.parse(schema)
        if not parsed.name:
            raise ValueError(f"Library.define expects a schema with the operator's name, e.g. 'foo(Tensor x) -> "
                             f"Tensor', got {schema!r}")
        name = parsed.name
        if "::" in name:
            ns, name = split_qualname(name)
            if ns != self.ns:
                raise ValueError(f"schema {schema!r} names namespace {ns!r}, but this Library is for {self.ns!r}")
        if "." in name:
            raise ValueError(f"overload names ({name!r}) are not supported: every workbench operator has one "
                             "overload, 'default'; give each variant its own name")
        qualname = f"{self.ns}::{name}"
        existing = OPDEFS.get(qualname)
        if existing is not None and getattr(existing, "_library_defined", False):
            raise RuntimeError(f"Tried to register an operator ({qualname}{parsed}) with the same name and overload "
                               "name multiple times.")
        op = CustomOpDef(self.ns, name, str(parsed), None, tags)
        op._library_defined = True
        self._op_defs.add(qualname)
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=False):
        """Register ``fn`` as operator ``op_name``'s kernel for ``dispatch_key``: 'CPU', 'CUDA',
        'CompositeExplicitAutograd' (every device), 'Meta' (the fake function), or 'CompositeImplicitAutograd' /
        'Autograd' (a kernel whose own ops record autograd: no node of its own)."""
        if with_keyset:
            raise ValueError("with_keyset=True passes PyTorch's dispatch key set, which workbench does not have; "
                             "register the kernel without it")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        qualname = op_name if isinstance(op_name, str) and "::" in op_name else None
        if isinstance(op_name, str) and qualname is None:
            qualname = f"{self.ns}::{op_name}"
        op = resolve(qualname if qualname is not None else op_name)
        if op._namespace != self.ns:
            raise ValueError(f"Library({self.ns!r}).impl: {op._qualname} belongs to namespace {op._namespace!r}")
        _impl_key(op, key, fn, allow_override)

    def _destroy(self):
        for qualname in self._op_defs:
            OPDEFS.pop(qualname, None)
        if self.kind == "DEF":
            _DEF_NAMESPACES.discard(self.ns)


def _impl_key(op, key, fn, allow_override):
    if key == "Meta":
        slot, table = "fake", None
    elif key in _KEY_TO_DEVICE:
        slot = _KEY_TO_DEVICE[key]
        table = (op._composite_fns if key == "CompositeImplicitAutograd" else
                 op._direct_fns if key in _DIRECT_KEYS else op._backend_fns)
    else:
        raise ValueError(f"dispatch key {key!r} is not one workbench dispatches on; use one of "
                         f"{sorted(_KEY_TO_DEVICE) + ['Meta']}")
    taken = op._abstract_fn is not None if table is None else slot in table
    if taken and not allow_override:
        raise RuntimeError(f"This is not allowed since there's already a kernel registered from python overriding "
                           f"{op._name}'s behavior for {key} dispatch key and {op._namespace} namespace. Pass "
                           "allow_override=True to replace it.")
    if table is None:
        op._abstract_fn = fn
    else:
        table[slot] = fn


def define(qualname, schema, *, lib=None, tags=()):
    """Define operator ``qualname`` ('mylib::foo') with ``schema`` ('(Tensor x) -> Tensor').

    >>> import workbench as wb
    >>> wb.library.define("doc2::double", "(Tensor x) -> Tensor")
    >>> wb.library.impl("doc2::double", "cpu", lambda x: x * 2)
    >>> wb.ops.doc2.double(wb.ones(1))
    tensor([2.])
    """
    if isinstance(qualname, Library):  # the older form: define(lib, schema) decorates the implementation
        return _define_and_impl(qualname, schema)
    ns, name = split_qualname(qualname)
    if lib is None:
        lib = _FRAGMENTS.get(ns)
        if lib is None:
            lib = _FRAGMENTS[ns] = Library(ns, "FRAGMENT")
    lib.define(name + schema, tags=tags)


def _define_and_impl(lib, schema):
    def wrap(f):
        lib.impl(lib.define(schema), f)
        return f

    return wrap


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` as the kernel of ``qualname`` for device type(s) ``types`` ('cpu', 'cuda') or a dispatch
    key ('CompositeImplicitAutograd', ...); usable as a decorator. The older ``impl(lib, name, dispatch_key)``
    returns a decorator registering on ``lib``."""
    if isinstance(qualname, Library):
        def register_on(fn):
            qualname.impl(types, fn, func or "")
            return fn

        return register_on
    op = resolve(qualname)

    def register(fn):  # returns None, as PyTorch's
        for t in ((types,) if isinstance(types, str) else tuple(types)):
            if t in ("cpu", "cuda"):
                op.register_kernel(t, fn)
            else:
                _impl_key(op, t, fn, allow_override=True)

    if func is None:
        return register
    register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``register_kernel("mylib::foo", "cuda", fn)``: the device kernel of any operator (see CustomOpDef)."""
    _device_types(device_types)
    return resolve(op).register_kernel(device_types, func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``register_autograd("mylib::foo", backward, setup_context=...)`` (see CustomOpDef.register_autograd)."""
    resolve(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=True):
    """``register_fake("mylib::foo", fn)``: the shape-and-dtype function; usable as a decorator."""
    d = resolve(op)

    def register(fn):
        if d._abstract_fn is not None and not allow_override:
            raise RuntimeError(f"register_fake: {d._qualname} already has a fake function (allow_override=False)")
        return d.register_fake(fn)

    return register if func is None else register(func)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The former name of ``register_fake``."""
    return register_fake(qualname, func, lib=lib)
