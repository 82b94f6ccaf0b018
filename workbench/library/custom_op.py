"""A user's operator (``mylib::swish``): its schema, a kernel per device type, a fake (shape-only) function, an
autograd formula, and the one tape node class every call records.

Each operator owns one ``Function`` subclass (``GeneratedBackwardFor_mylib_swish_default``, PyTorch's name) whose
node is named by the user (``node.op == 'mylib::swish'``), so the viewer, the debugger, saved snapshots and a
compiler replaying the tape (``node._fn.apply(*args)``) treat it as any other op. Kernels run below autograd
(under ``no_grad``): whatever they compute inside is one node.
"""
import inspect

from .. import _backend, ops
from ..autograd import graph
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node
from ..tensor import Tensor
from .schema import Schema, infer_schema

OPDEFS = {}  # "ns::name" -> CustomOpDef, every operator defined in this process


class _Layout(tuple):
    """The last argument of every node of a custom op: the lengths of its tensor-list arguments."""

    __slots__ = ()


def split_qualname(qualname):
    if not isinstance(qualname, str) or qualname.count("::") != 1 or not all(qualname.split("::")):
        raise ValueError(f"expected an operator name of the form 'namespace::name' (e.g. 'mylib::swish'), "
                         f"got {qualname!r}")
    ns, name = qualname.split("::")
    if not (ns.isidentifier() and name.isidentifier()):
        raise ValueError(f"operator name {qualname!r}: namespace and name must be Python identifiers")
    return ns, name


def _device_types(device_types):
    if device_types is None or isinstance(device_types, str):
        types = [device_types]
    else:
        types = list(device_types)
    for t in types:
        if t is not None and t not in ("cpu", "cuda"):
            raise ValueError(f"device type {t!r} is not one workbench runs on; use 'cpu' or 'cuda'")
    return types


class CustomOpDef:
    """An operator made by ``custom_op`` (or ``Library.define``): call it like a function.

    >>> import workbench as wb
    >>> @wb.library.custom_op("doc::twice", mutates_args=())
    ... def twice(x: wb.Tensor) -> wb.Tensor:
    ...     return x * 2
    >>> twice(wb.ones(2)), wb.ops.doc.twice(wb.ones(1))
    (tensor([2., 2.]), tensor([2.]))
    """

    def __init__(self, namespace, name, schema, fn=None, tags=None):
        self._namespace, self._name = namespace, name
        self._schema_obj = Schema.parse(schema)
        self._schema = str(self._schema_obj)
        self._tags = tuple(tags or ())
        self._init_fn = fn
        self._backend_fns = {}  # None (every device), "cpu", "cuda" -> kernel
        # Library.impl kernels whose own ops record autograd: an Autograd key's always run; a
        # CompositeImplicitAutograd one only where no backend (or CompositeExplicitAutograd) kernel exists
        self._direct_fns = {}  # None, "cpu", "cuda" -> kernel
        self._composite_fns = {}
        self._abstract_fn = None
        self._backward_fn = None
        self._setup_context_fn = None
        self._disabled_kernel = set()
        self._fn_cls = _make_function(self)
        self._opoverload = OpOverload(self)
        OPDEFS[self._qualname] = self
        _publish(self)

    @property
    def _qualname(self):
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __reduce__(self):  # pickled by name: unpickling finds the operator the importing code defined
        return resolve, (self._qualname,)

    # --- registration --------------------------------------------------------------------------------
    def register_kernel(self, device_types, fn=None, /):
        """Register the implementation for ``device_types`` ('cpu', 'cuda'); usable as a decorator.

        A 'cuda' kernel needs a CPU reference (the op's default or 'cpu' kernel): the two are tested against
        each other (``workbench.testing.custom_ops.assert_matches_reference``). On the fake cupy of CPU-only CI
        the CUDA kernel runs on a CPU emulator (``workbench.testing.cuda_emulator``) when its threads are
        independent; for one using shared memory, atomics or warp intrinsics the reference stands in.

        >>> import workbench as wb
        >>> @wb.library.custom_op("doc::neg", mutates_args=(), device_types="cpu")
        ... def neg(x: wb.Tensor) -> wb.Tensor:
        ...     return -x
        >>> @neg.register_kernel("cuda")
        ... def _(x):
        ...     return x.neg()
        >>> neg(wb.ones(1))
        tensor([-1.])
        """
        types = _device_types(device_types)

        def inner(fn):
            if not callable(fn):
                raise TypeError(f"register_kernel for {self._qualname} expects a function, got {type(fn).__name__}")
            for t in types:
                self._backend_fns[t] = fn
            return fn

        return inner if fn is None else inner(fn)

    def register_fake(self, fn, /):
        """Register the shape-and-dtype function: given inputs that carry no meaningful data, return outputs of
        the right shape, dtype and device (``wb.empty_like(x)``, ``x.new_empty(...)``) without computing them.

        >>> import workbench as wb
        >>> @wb.library.custom_op("doc::rowsum", mutates_args=())
        ... def rowsum(x: wb.Tensor) -> wb.Tensor:
        ...     return x.sum(1)
        >>> @rowsum.register_fake
        ... def _(x):
        ...     return x.new_empty(x.shape[0])
        >>> rowsum._abstract_fn(wb.ones(3, 4)).shape
        workbench.Size([3])
        """
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """Register the backward formula ``backward(ctx, *grads)`` (one gradient, or None, per positional input)
        and ``setup_context(ctx, inputs, output)`` that saves what it needs (``ctx.save_for_backward``).

        ``backward`` is written in Tensor ops, so it can be differentiated again (create_graph=True).

        >>> import workbench as wb
        >>> @wb.library.custom_op("doc::cube", mutates_args=())
        ... def cube(x: wb.Tensor) -> wb.Tensor:
        ...     return x ** 3
        >>> def setup(ctx, inputs, output):
        ...     ctx.save_for_backward(inputs[0])
        >>> cube.register_autograd(lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2, setup_context=setup)
        >>> x = wb.tensor(2.0, requires_grad=True); cube(x).backward(); x.grad
        tensor(12.)
        """
        if self._schema_obj.is_mutable:
            raise RuntimeError(
                f"Cannot register autograd formula for non-functional operator {self} with schema {self._schema}. "
                "Please create a functional operator and register an autograd formula for that.")
        if not callable(backward) or (setup_context is not None and not callable(setup_context)):
            raise TypeError(f"register_autograd for {self._qualname} expects functions for backward and "
                            "setup_context")
        if setup_context is not None:
            kw_only = any(a.kwarg_only for a in self._schema_obj.arguments)
            params = inspect.signature(setup_context).parameters
            if kw_only and "keyword_only_inputs" not in params:
                raise TypeError(f"{self._qualname} has keyword-only arguments, so its setup_context must have the "
                                "signature setup_context(ctx, inputs, keyword_only_inputs, output)")
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    def set_kernel_enabled(self, device_type, enabled=True):
        """A context manager that disables (enabled=False) the kernel registered for ``device_type`` inside it."""
        return _KernelEnabled(self, device_type, enabled)

    # --- calling -------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        schema = self._schema_obj
        pos, kw = schema.bind(self._qualname, args, kwargs)
        if self._direct_fns or self._composite_fns:
            device = self._device(_tensors_of(pos, kw), pos, kw)
            t = device.type if device is not None else "cpu"
            direct = self._direct_fns.get(t) or self._direct_fns.get(None)
            if direct is None and self._backend_fns.get(t) is None and self._backend_fns.get(None) is None:
                direct = self._composite_fns.get(None)
            if direct is not None:
                return direct(*pos, **kw)
        if schema.is_mutable:
            self._check_mutation(pos, kw)
        flat, lengths = schema.flatten(pos, kw)
        out = self._fn_cls.apply(*flat, _Layout(lengths))
        if schema.returns == ["Tensor[]"]:
            return list(out) if isinstance(out, tuple) else [out]
        return out

    def _device(self, tensors, pos, kw):
        if tensors:
            dev = tensors[0].device
            for t in tensors[1:]:
                if t.device != dev:
                    raise RuntimeError(
                        f"Expected all tensors to be on the same device, but found at least two devices, {dev} and "
                        f"{t.device}! (when checking arguments for '{self._qualname}'). Move them with .to(device) "
                        "first.")
            return dev
        for a, v in zip(self._schema_obj.arguments, list(pos) + list(kw.values())):
            if a.type in ("Device", "Device?") and v is not None:
                return v
        return None  # no tensor and no device: the CPU (or default) kernel runs

    def _check_mutation(self, pos, kw):
        if not STATE.enabled:
            return
        for name, t in _mutated(self._schema_obj, pos, kw):
            if t.requires_grad:
                raise RuntimeError(
                    f"{self._qualname} mutates its argument '{name}', which requires grad: autograd cannot follow a "
                    "custom op's in-place writes. Call it under workbench.no_grad(), or on x.detach().")

    def _kernel(self, device_type):
        fns = self._backend_fns
        fn = fns.get(device_type) if device_type not in self._disabled_kernel else self._init_fn
        if fn is None:
            fn = fns.get(None)
        if fn is None:
            have = sorted(k for k in fns if k is not None) or ["none"]
            raise NotImplementedError(
                f"Could not run '{self._qualname}' with arguments from the '{(device_type or 'cpu').upper()}' "
                f"backend: it has kernels for {have}. Register one with "
                f"@{self._name}.register_kernel('{device_type or 'cpu'}'), or move the inputs to a device it has.")
        return fn

    def _reference(self):
        ref = self._backend_fns.get("cpu") or self._backend_fns.get(None)
        if ref is None:
            raise RuntimeError(
                f"{self._qualname} has a CUDA kernel but no CPU reference: register one with "
                f"@{self._name}.register_kernel('cpu') (NumPy or C++). workbench tests every CUDA kernel against its "
                "reference, and runs the reference where no GPU is present.")
        return ref

    def _run(self, pos, kw):
        """Dispatch to the kernel of the inputs' device, below autograd; check and version-bump what it returned
        and wrote."""
        tensors = _tensors_of(pos, kw)
        device = self._device(tensors, pos, kw)
        dtype_ = device.type if device is not None else "cpu"
        # below autograd: Function.apply runs forward under no_grad
        if dtype_ == "cuda" and "cuda" in self._backend_fns and "cuda" not in self._disabled_kernel:
            ref = self._reference()
            cp = _backend.cupy()
            if getattr(cp, "__fake__", False):
                out = _run_emulated(self._backend_fns["cuda"], ref, pos, kw, device,
                                    _mutated(self._schema_obj, pos, kw), cp.NotEmulated)
            else:
                out = self._backend_fns["cuda"](*pos, **kw)
        else:
            out = self._kernel(dtype_)(*pos, **kw)
        self._check_outputs(out, tensors, device)
        if self._schema_obj.is_mutable:
            for _, t in _mutated(self._schema_obj, pos, kw):
                t._vbox[0] += 1
                t._vbox[1] = (self._qualname, graph.SCOPE.get(), graph.user_site(3))
        return out

    def _check_outputs(self, out, tensors, device):
        rets = self._schema_obj.returns
        outs = _outputs_list(out, rets)
        if outs is None:
            want = "None" if not rets else (rets[0] if len(rets) == 1 else f"a tuple of {len(rets)} ({', '.join(rets)})")
            raise RuntimeError(f"{self._qualname}: the kernel returned {type(out).__name__}, but the schema "
                               f"{self._schema} says it returns {want}")
        seen = []
        for i, o in enumerate(outs):
            ret = rets[0] if rets == ["Tensor[]"] else rets[i]
            if not isinstance(o, Tensor):
                if ret.startswith("Tensor") and not (o is None and ret.endswith("?")):
                    raise RuntimeError(f"{self._qualname}: the kernel returned a {type(o).__name__} where the schema "
                                       f"{self._schema} has a Tensor; return tensors (wb.from_numpy(a) for an array)")
                continue
            if device is not None and o.device != device:
                raise RuntimeError(
                    f"{self._qualname}: the kernel returned a tensor on {o.device}, but the op's inputs are on "
                    f"{device}. Return every output on the inputs' device (e.g. wb.from_numpy(y).to(x.device)).")
            for t in list(tensors) + seen:
                if o is t or (o._data.size and t._data.size and _backend.xp_of(o._data).may_share_memory(
                        o._data, t._data)):
                    raise RuntimeError(
                        f"{self._qualname} (with implementation in {_where(self)}): The output of this custom "
                        "operator (1) must not also be an input to this custom operator and (2) may not alias any "
                        "inputs to this custom operator or other returns. The most common way to trigger this error "
                        "is if we have y = custom_op(x) and y and x are the same Tensor. Instead, return a clone of "
                        "the offending output tensor(s) (e.g. return x.clone()) or refactor the custom operator to "
                        "not return y.")
            seen.append(o)


class _KernelEnabled:
    def __init__(self, op, device_type, enabled):
        self.op, self.device_type, self.enabled = op, device_type, enabled

    def __enter__(self):
        self.was = self.device_type in self.op._disabled_kernel
        if self.enabled:
            self.op._disabled_kernel.discard(self.device_type)
        else:
            self.op._disabled_kernel.add(self.device_type)
        return self

    def __exit__(self, *exc):
        if self.was:
            self.op._disabled_kernel.add(self.device_type)
        else:
            self.op._disabled_kernel.discard(self.device_type)


def _where(op):
    fns = list(op._backend_fns.values())
    mod = inspect.getmodule(fns[0]) if fns else None
    return mod.__name__ if mod is not None else "<unknown>"


def _tensors_of(pos, kw):
    out = []
    for v in list(pos) + list(kw.values()):
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Tensor))
    return out


def _mutated(schema, pos, kw):
    values = list(pos) + [kw[a.name] for a in schema.arguments if a.kwarg_only]
    for a, v in zip(schema.arguments, values):
        if a.mutable:
            for t in (v if isinstance(v, list) else [v]):
                if isinstance(t, Tensor):
                    yield a.name, t


def _outputs_list(out, rets):
    if not rets:
        return [] if out is None else None
    if rets == ["Tensor[]"]:
        return list(out) if isinstance(out, (list, tuple)) else None
    if len(rets) == 1:
        return [out] if not isinstance(out, (tuple, list)) else None
    return list(out) if isinstance(out, tuple) and len(out) == len(rets) else None


def _run_emulated(kernel, ref, pos, kw, device, mutated, not_emulated):
    # the fake cupy runs a CUDA kernel whose threads are independent on the CPU; for any other (shared memory,
    # atomics...) the CPU reference runs instead, from the mutated arguments as they were before the kernel started
    saved = [(t, t._data.copy()) for _, t in mutated]
    try:
        return kernel(*pos, **kw)
    except not_emulated:
        for t, d in saved:
            t._data[...] = d
        return _run_on_host(ref, pos, kw, device, mutated)


def _run_on_host(ref, pos, kw, device, mutated):
    # the CPU reference runs on host copies, its results go back to the device
    def host(v):
        if isinstance(v, Tensor):
            return Tensor._make(_backend.to_device(v._data, _backend.CPU).copy())
        if isinstance(v, list):
            return [host(x) for x in v]
        return _backend.CPU if isinstance(v, _backend.device) else v  # a factory's device argument, too

    hpos = [host(v) for v in pos]
    hkw = {k: host(v) for k, v in kw.items()}
    out = ref(*hpos, **hkw)
    copies = {id(t): t for _, t in mutated}
    for v, h in zip(list(pos) + list(kw.values()), hpos + list(hkw.values())):
        for t, ht in zip(v if isinstance(v, list) else [v], h if isinstance(h, list) else [h]):
            if isinstance(t, Tensor) and id(t) in copies:
                t._data[...] = _backend.to_device(ht._data, device)

    def back(o):
        if isinstance(o, Tensor):
            return Tensor._make(_backend.to_device(o._data, device))
        if isinstance(o, (list, tuple)):
            return type(o)(back(x) for x in o)
        return o

    return back(out)


# --- the tape node ---------------------------------------------------------------------------------------
def _make_function(opdef):
    schema = opdef._schema_obj

    def forward(ctx, *flat):
        layout = flat[-1]
        pos, kw = schema.unflatten(flat[:-1], layout)
        out = opdef._run(pos, kw)
        if isinstance(ctx, Node):
            ctx._layout = layout
            setup = opdef._setup_context_fn
            if setup is not None:
                if any(a.kwarg_only for a in schema.arguments):
                    setup(ctx=ctx, inputs=tuple(pos), keyword_only_inputs=kw, output=out)
                else:
                    setup(ctx=ctx, inputs=tuple(pos), output=out)
        return tuple(out) if isinstance(out, list) else out

    def backward(ctx, *grads):
        fn = opdef._backward_fn
        if fn is None:
            raise RuntimeError(f"Trying to backward through {opdef._namespace}.{opdef._name}.default but no "
                               "autograd formula was registered. Please use register_autograd to add one.")
        if schema.returns == ["Tensor[]"]:
            grads = (list(grads),)
        layout = ctx._layout
        flat_nig = ctx.needs_input_grad
        nig_pos, _ = schema.unflatten(flat_nig[:-1], layout)
        try:
            ctx.needs_input_grad = tuple(nig_pos)
            res = fn(ctx, *grads)
        finally:
            ctx.needs_input_grad = flat_nig
        if not isinstance(res, tuple):
            res = (res,)
        npos = len(schema.positional)
        if len(res) != npos:
            raise RuntimeError(
                f"{opdef._qualname}: the registered backward returned {len(res)} gradients, but the op has {npos} "
                f"positional inputs {[a.name for a in schema.positional]}; return one gradient (or None) per input.")
        flat = []
        k = 0
        for a, g in zip(schema.positional, res):
            if a.is_tensor_list:
                n = layout[k]
                k += 1
                g = [None] * n if g is None else list(g)
                if len(g) != n:
                    raise RuntimeError(f"{opdef._qualname}: backward returned {len(g)} gradients for the list "
                                       f"argument '{a.name}' of {n} tensors")
                flat.extend(g)
            else:
                if g is not None and not a.is_tensor:
                    raise RuntimeError(f"{opdef._qualname}: backward returned a gradient for '{a.name}', which is "
                                       f"not a Tensor ({a.type}); return None for it")
                flat.append(g)
        flat.extend([None] * (len(flat_nig) - len(flat)))  # keyword-only arguments and the layout
        return tuple(flat)

    name = f"GeneratedBackwardFor_{opdef._namespace}_{opdef._name}_default"
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                    "op_name": opdef._qualname, "_opdef": opdef, "__module__": __name__})


# --- torch.ops.<namespace>.<name> ---------------------------------------------------------------------------
class _OpHandle:
    # what wb.ops.<ns>.<name> and its .default share: calling the operator, PyTorch's printed forms
    _kind = ""

    def __init__(self, opdef):
        self._opdef = opdef
        self._schema = opdef._schema_obj
        self._namespace, self._opname = opdef._namespace, opdef._name

    def __call__(self, *args, **kwargs):
        return self._opdef(*args, **kwargs)

    def __reduce__(self):
        return _handle, (self._opdef._qualname, bool(self._kind))

    def __repr__(self):
        return f"<{type(self).__name__}(op='{self._namespace}.{self._opname}'{self._kind})>"

    def __str__(self):
        return f"{self._namespace}.{self._opname}" + (".default" if self._kind else "")


class OpOverload(_OpHandle):
    """``wb.ops.mylib.swish.default``: the operator's one overload (what opcheck and a compiler see)."""

    _kind = ", overload='default'"
    _overloadname = "default"


class OpOverloadPacket(_OpHandle):
    """``wb.ops.mylib.swish``: calls the operator; ``.default`` is its overload."""

    def __init__(self, opdef):
        super().__init__(opdef)
        self.default = opdef._opoverload
        self._qualified_op_name = opdef._qualname

    def overloads(self):
        return ["default"]


def _handle(qualname, overload):
    op = resolve(qualname)
    return op._opoverload if overload else getattr(getattr(ops, op._namespace), op._name)


class _Namespace:
    """``wb.ops.mylib``: the operators of one namespace."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{name}': no operator "
                             f"{self._name}::{name} is defined (define it with workbench.library.custom_op)")

    def __repr__(self):
        return f"<workbench.ops.{self._name} namespace>"


def _publish(opdef):
    ns = ops.__dict__.get(opdef._namespace)
    if ns is None:
        ns = _Namespace(opdef._namespace)
        setattr(ops, opdef._namespace, ns)
    elif not isinstance(ns, _Namespace):
        raise ValueError(f"namespace {opdef._namespace!r} is taken by workbench.ops.{opdef._namespace}; choose "
                         "another (your project's name, e.g. 'mylib')")
    setattr(ns, opdef._name, OpOverloadPacket(opdef))


def resolve(op):
    """The CustomOpDef behind ``op``: the def itself, its packet or overload, or its 'ns::name'."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, (OpOverload, OpOverloadPacket)):
        return op._opdef
    if isinstance(op, str):
        split_qualname(op)
        d = OPDEFS.get(op)
        if d is None:
            raise RuntimeError(f"operator {op} does not exist: define it first with workbench.library.custom_op or "
                               "Library.define")
        return d
    raise TypeError(f"expected a custom op, its 'namespace::name' or wb.ops.<ns>.<name>, got {type(op).__name__}")


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Wrap a function into an operator named ``name`` ('mylib::swish'), as ``torch.library.custom_op``.

    The function needs type hints (they give the schema) and is the kernel for ``device_types`` (every device
    when None). ``mutates_args`` names the arguments it writes to ('unknown': all tensor arguments). Each call
    records one tape node named ``name``.

    >>> import workbench as wb
    >>> @wb.library.custom_op("doc::swish", mutates_args=())
    ... def swish(x: wb.Tensor) -> wb.Tensor:
    ...     return x * wb.sigmoid(x)
    >>> y = swish(wb.zeros(2, requires_grad=True)); y.grad_fn.op
    'doc::swish'
    """

    def inner(fn):
        ns, opname = split_qualname(name)
        if schema is None:
            schema_str = infer_schema(fn, mutates_args=mutates_args, op_name=name)
        else:
            schema_str = schema
            declared = set(Schema.parse(schema).mutated_names())
            if mutates_args != "unknown" and declared != set(mutates_args):
                raise ValueError(
                    f"Attempted to create a custom op with `mutates_args={mutates_args}` and `schema={schema}. The "
                    f"schema suggests that the op mutates {declared} which is different from what was provided to us "
                    "in `mutates_args`. Please make these consistent.")
        op = CustomOpDef(ns, opname, schema_str, fn, tags or ())
        op.register_kernel(device_types)(fn)
        return op

    return inner if fn is None else inner(fn)
