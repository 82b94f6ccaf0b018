"""Function: forward and backward side by side, and ``apply``, which records a Node on the tape.

Two flavours share one ``apply``:

* workbench's primitives (``_raw = True``) compute ``forward`` on raw arrays (``ctx.xp`` is numpy or
  cupy), which keeps per-op overhead low;
* ``workbench.autograd.Function`` subclasses written by users see Tensors, exactly as in PyTorch.

``backward`` is always written in Tensor ops, so ``create_graph=True`` differentiates it again.
"""
import functools

from .. import _backend
from . import graph
from .grad_mode import STATE, no_grad
from .graph import GROUP, LISTENERS, SCOPE, TRACE, Node, _seq, accumulator

_Tensor = None  # workbench.tensor.Tensor, bound at import time of workbench.tensor


class _NoGradCtx:
    """The ctx handed to forward when nothing is recorded: saving is a no-op."""

    __slots__ = ("xp", "needs_input_grad", "__dict__")

    def save_for_backward(self, *xs):
        pass

    def mark_dirty(self, *xs):
        pass

    def mark_non_differentiable(self, *xs):
        pass

    def set_materialize_grads(self, value):
        pass


def _ctx_save_for_backward(self, *xs):
    self._saved = xs


def _ctx_mark_dirty(self, *xs):
    self._dirty = xs


def _ctx_mark_non_differentiable(self, *xs):
    self._non_differentiable = xs


def _ctx_set_materialize_grads(self, value):
    self._materialize = bool(value)


Node.save_for_backward = _ctx_save_for_backward
Node.mark_dirty = _ctx_mark_dirty
Node.mark_non_differentiable = _ctx_mark_non_differentiable
Node.set_materialize_grads = _ctx_set_materialize_grads


class _Out:
    """Marks a saved tensor that is one of the node's own outputs (kept as its array, no cycle)."""

    __slots__ = ("i", "data", "requires_grad")

    def __init__(self, i, data, requires_grad):
        self.i, self.data, self.requires_grad = i, data, requires_grad


def unpack_saved(node):
    saved = node._saved
    if node._freed:
        node._raise_freed()
    if saved is None:
        return ()
    out = []
    for entry, box, version in saved:
        if box is not None and box[0] != version:
            _raise_modified(node, entry, box, version)
        if type(entry) is _Out:
            t = _Tensor._make(entry.data, entry.requires_grad, node if entry.requires_grad else None, entry.i, box)
            out.append(t)
        else:
            out.append(entry)
    return tuple(out)


def _raise_modified(node, entry, box, version):
    data = entry.data if type(entry) is _Out else entry._data
    desc = f"[{_backend.dtypes.from_numpy_dtype(data.dtype).name} {list(data.shape)}]"
    where = node.name() + (f" in module '{node.scope}'" if node.scope else "")
    if node.site:
        where += f" (created at {graph.format_site(node.site)})"
    mod = box[1]
    if mod:
        op, scope, site = mod
        by = f" It was modified by {op}" + (f" in module '{scope}'" if scope else "") + f" at {graph.format_site(site)}."
    else:
        by = ""
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"{desc}, saved by {where}, is at version {box[0]}; expected version {version} instead.{by} "
        "Hint: replace the in-place op with its out-of-place form (e.g. x = x.add(y) instead of x.add_(y)), "
        "or clone() the tensor before modifying it."
    )


def _device_error(opname, a, b):
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}! "
        f"(when checking arguments for '{opname}'). Move them with .to(device) first."
    )


class Function:
    """Base class for ops with a hand-written backward; subclass it for custom autograd functions.

    >>> import workbench as wb
    >>> class Cube(wb.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * 3 * x ** 2
    >>> x = wb.tensor(2.0, requires_grad=True)
    >>> Cube.apply(x).backward(); x.grad
    tensor(12.)
    """

    _raw = False  # primitives set True: forward sees raw arrays
    _view = False  # output 0 may be a view of input 0 (shares memory and version counter)
    op_name = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        suffix = "Backward0" if cls._raw else "Backward"
        op = cls.op_name or cls.__name__.lower()
        cls._node_cls = type(cls.__name__ + suffix, (Node,), {"__slots__": (), "_fn": cls, "_op": op,
                                                             "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("subclasses of Function must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function must implement backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args):
        Tensor = _Tensor
        raw = cls._raw
        xp = None
        dev = None
        req = False
        tpos = []
        first = None
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                d = a._data
                if first is None:
                    first = d
                    xp = _backend.numpy if type(d) is _backend.ndarray else _backend.xp_of(d)
                elif type(d) is not type(first) or (xp is not _backend.numpy and d.device != first.device):
                    args = _reconcile_devices(cls, args, i)
                    return cls.apply(*args)
                tpos.append(i)
                if a._rg:
                    req = True
        if xp is None:
            xp = _backend.numpy
        if not (req and STATE.enabled):
            ctx = _NoGradCtx()
            ctx.xp = xp
            ctx.needs_input_grad = (False,) * len(args)
            if raw:
                out = cls.forward(ctx, *[a._data if isinstance(a, Tensor) else a for a in args])
                if type(out) is tuple:
                    return tuple(Tensor._make(o) for o in out)
                if cls._view and tpos:
                    return _view_of(cls, args, out, xp)
                return Tensor._make(out)
            with no_grad():
                out = cls.forward(ctx, *args)
            return _detached_outputs(out, args)
        return _record(cls, args, tpos, xp)


def _reconcile_devices(cls, args, i):
    # PyTorch lets 0-dim CPU tensors take part in CUDA ops (they act as scalars); anything else is an error
    Tensor = _Tensor
    ts = [a for a in args if isinstance(a, Tensor)]
    devs = [a.device for a in ts]
    target = next((d for d in devs if d.type == "cuda"), devs[0])
    out = []
    for a in args:
        if isinstance(a, Tensor) and a.device != target:
            if a.device.type == "cpu" and a.ndim == 0:
                a = a.to(target)
            else:
                raise _device_error(cls.op_name or cls.__name__.lower(), devs[0], a.device if devs[0] == target else target)
        out.append(a)
    return tuple(out)


def _view_of(cls, args, out, xp):
    # a primitive flagged _view returns a view when the array library could make one; the view keeps
    # how to replay it from its base, for in-place ops on views (see Tensor._inplace)
    base = args[0]
    if out is base._data or (out.size and xp.may_share_memory(out, base._data)):
        t = _Tensor._make(out, False, None, 0, base._vbox, base._base if base._base is not None else base)
        if base._base is None:
            t._view_fn = (cls, args[1:], None)
        elif base._view_fn is not None:
            t._view_fn = (cls, args[1:], base._view_fn)
        return t
    return _Tensor._make(out)


def _detached_outputs(out, args):
    Tensor = _Tensor
    if isinstance(out, tuple):
        return tuple(_detached_outputs(o, args) for o in out)
    if isinstance(out, Tensor) and any(out is a for a in args):
        return out.detach()
    return out


def _record(cls, args, tpos, xp):
    Tensor = _Tensor
    node = cls._node_cls()
    node.xp = xp
    node._saved = None
    node._non_differentiable = None
    node._dirty = None
    node._materialize = True
    node._freed = False
    node._pre_hooks = node._hooks = node._tensor_pre_hooks = node._retain = None
    node._seq = next(_seq)
    node.scope = SCOPE.get()
    node.group = GROUP.get()
    node.site = graph.user_site(3) if TRACE[0] >= 2 else None
    nig = [False] * len(args)
    nexts = []
    for i in tpos:
        a = args[i]
        if a._rg:
            nig[i] = True
            gf = a.grad_fn
            nexts.append((gf, a._output_nr) if gf is not None else (accumulator(a), 0))
        else:
            nexts.append((None, 0))
    node.needs_input_grad = tuple(nig)
    node.next_functions = tuple(nexts)
    node._tensor_pos = tuple(tpos)
    if cls._raw:
        datas = [a._data if isinstance(a, Tensor) else a for a in args]
        out = cls.forward(node, *datas)
        multi = type(out) is tuple
        outs = out if multi else (out,)
        nd = node._non_differentiable
        results = []
        for k, o in enumerate(outs):
            diff = not (nd and any(o is x for x in nd))
            if k == 0 and cls._view and not multi:
                t = _view_of(cls, args, o, xp)
                t._rg = diff
                t.grad_fn = node if diff else None
            else:
                t = Tensor._make(o, diff, node if diff else None, k)
            results.append(t)
        node._out_meta = tuple((o.shape, o.dtype) for o in outs)
        if node._saved is not None:
            node._saved = _resolve_saved_raw(node._saved, args, tpos, outs, results)
    else:
        with no_grad():
            out = cls.forward(node, *args)
        multi = type(out) is tuple
        outs = out if multi else (out,)
        results = _attach_custom_outputs(node, outs, args)
        node._out_meta = tuple((r.shape, r._data.dtype) if isinstance(r, Tensor) else None for r in results)
        if node._saved is not None:
            node._saved = _resolve_saved_custom(node._saved, results)
    if graph.ANOMALY[0]:
        graph.anomaly_record(node)
    if LISTENERS:
        for fn in LISTENERS:
            fn(node, args, results)
    return tuple(results) if multi else results[0]


def _resolve_saved_raw(saved, args, tpos, outs, results):
    Tensor = _Tensor
    entries = []
    for x in saved:
        if x is None:
            entries.append((None, None, 0))
            continue
        if isinstance(x, Tensor):
            entries.append((x, x._vbox, x._vbox[0]))
            continue
        for i in tpos:
            if args[i]._data is x:
                t = args[i]
                entries.append((t, t._vbox, t._vbox[0]))
                break
        else:
            for k, o in enumerate(outs):
                if o is x:
                    r = results[k]
                    entries.append((_Out(k, x, r._rg), r._vbox, r._vbox[0]))
                    break
            else:
                t = Tensor._make(x)
                entries.append((t, None, 0))
    return tuple(entries)


def _resolve_saved_custom(saved, results):
    Tensor = _Tensor
    entries = []
    for x in saved:
        if x is None:
            entries.append((None, None, 0))
        elif not isinstance(x, Tensor):
            raise TypeError(f"save_for_backward can only save tensors or None, got {type(x).__name__}")
        else:
            for k, r in enumerate(results):
                if r is x and r.grad_fn is not None:
                    entries.append((_Out(k, x._data, True), x._vbox, x._vbox[0]))
                    break
            else:
                entries.append((x, x._vbox, x._vbox[0]))
    return tuple(entries)


def _attach_custom_outputs(node, outs, args):
    Tensor = _Tensor
    dirty = node._dirty or ()
    nd = node._non_differentiable or ()
    results = []
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        is_input = any(o is a for a in args)
        if any(o is d for d in dirty):
            o._vbox[0] += 1
            t = o
        elif is_input:  # PyTorch returns a fresh view for an input passed through unchanged
            t = Tensor._make(o._data, False, None, 0, o._vbox, o._base if o._base is not None else o)
        else:
            t = o
        if any(o is x for x in nd) or not t.dtype.is_floating_point and not t.dtype.is_complex:
            t._rg = False
            t.grad_fn = None
        else:
            t._rg = True
            t.grad_fn = node
            t._output_nr = k
        results.append(t)
    return results


def once_differentiable(fn):
    """Decorate a custom Function's backward that cannot itself be differentiated.

    >>> import workbench as wb
    >>> from workbench.autograd.function import once_differentiable
    >>> callable(once_differentiable(lambda ctx, g: g))
    True
    """

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with no_grad():
            out = fn(ctx, *grads)
        if STATE.enabled and any(g is not None and g.requires_grad for g in grads):
            outs = out if isinstance(out, tuple) else (out,)
            return tuple(_OnceDifferentiableError.wrap(o) if isinstance(o, _Tensor) else o for o in outs) \
                if isinstance(out, tuple) else _OnceDifferentiableError.wrap(out)
        return out

    return wrapper


class _OnceDifferentiableError(Function):
    _raw = True
    op_name = "once_differentiable"

    @classmethod
    def wrap(cls, t):
        t = t.detach()
        t._rg = True
        return cls.apply(t)

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )
