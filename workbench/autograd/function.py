"""Function: forward and backward side by side, and ``apply``, which records a Node on the tape.

Two flavours, one Node record:

* workbench's primitives (``_raw = True``) compute ``forward`` on raw arrays (``ctx.xp`` is numpy or
  cupy), which keeps per-op overhead low; they get ``_apply_raw`` as their ``apply``;
* ``workbench.autograd.Function`` subclasses written by users see Tensors, exactly as in PyTorch,
  including the ``setup_context(ctx, inputs, output)`` style where ``forward`` takes no ctx.

``backward`` is always written in Tensor ops, so ``create_graph=True`` differentiates it again.

``apply`` is the hottest function in workbench: every op of every user program goes through it. The
primitive path therefore avoids per-call allocations beyond the ctx and the result (see
benchmarks/op_overhead.py for what it costs against PyTorch).
"""
import functools
import math
import weakref

from .. import _backend
from .._backend import fused as _fused
from .._pyframe import call1 as _call1, call1_out as _call1_out, call2 as _call2, call2_out as _call2_out
from .._broadcast import broadcast_error, no_partial_overlap
from .._core import _INFERENCE_BOX
from .._core import Tensor as _Tensor  # hot paths bind it to a local (Tensor = _Tensor)
from . import graph
from .grad_mode import BACKWARD_ACTIVE, INFERENCE_ACTIVE, STATE, no_grad
from .graph import CUTS, GROUP, LISTENERS, SCOPE, TRACE, Node, _Out, _seq, accumulator

_make = _Tensor._make
_ndarray = _backend.ndarray
_numpy = _backend.numpy
_new = object.__new__
_np_generic = _numpy.generic
_as_number = _backend.dtypes.as_number
# bound once: every recorded op reads them (a method looked up per call costs as much as the call)
_scope_now, _group_now, _next_seq = SCOPE.get, GROUP.get, _seq.__next__
_ANOMALY = graph.ANOMALY


class _Differentiable(dict):
    # numpy dtype -> whether tensors of it can require grad (float, complex, bfloat16); filled on first sight
    def __missing__(self, npd):
        r = self[npd] = _backend.dtypes.from_numpy_dtype(npd).category >= 2
        return r


_DIFF_DTYPES = _Differentiable()


class _NoGradCtx:
    """The ctx handed to forward when nothing is recorded: saving is a no-op."""

    __slots__ = ("__dict__",)  # forward may stash attributes (ctx.alpha = ...); they are simply dropped
    xp = _numpy
    needs_input_grad = ()
    saved_tensors = ()
    materialize_grads = True

    def save_for_backward(self, *xs):
        pass

    def save_for_forward(self, *xs):
        pass

    def mark_dirty(self, *xs):
        pass

    def mark_non_differentiable(self, *xs):
        pass

    def set_materialize_grads(self, value):
        pass


# one ctx class per arity for NumPy ops: making the ctx is then a bare instantiation (the hot path)
_NUMPY_CTX = tuple(type(f"_NoGradCtx{n}", (_NoGradCtx,), {"__slots__": (), "needs_input_grad": (False,) * n})
                   for n in range(9))


def _no_grad_ctx(xp, n):
    if xp is _numpy and n < 9:
        return _NUMPY_CTX[n]()
    ctx = _NoGradCtx()
    ctx.xp = xp
    ctx.needs_input_grad = (False,) * n
    return ctx


def storage_root(data):
    # the array that owns the memory a view looks into (NumPy and CuPy both chain views through .base)
    root = data
    b = data.base
    while b is not None and hasattr(b, "nbytes") and hasattr(b, "base"):
        root = b
        b = b.base
    return root


def _entry_facts(node, saved):
    # what describe_saved reads of live saved entries, for nodes that did not record it (custom
    # Functions, compiled regions, checkpoints): one fact per saved index, None where nothing was saved.
    # A fact is (input argument index, or -1-k for output k, or None; shape; numpy dtype; storage key;
    # storage nbytes, or None when the array owns its memory). Storage keys are ids of the storage
    # arrays, compared only among one node's entries (objects alive together with them: unique).
    pos = {}
    for p, (nxt, nr) in enumerate(node.next_functions):
        if nxt is not None:
            pos.setdefault((id(nxt), nr), p)
    tpos = node._tensor_pos
    out = []
    for entry in saved:
        e = entry[0]
        if e is None:
            out.append(None)
            continue
        if e.__class__ is _Out:
            data = e.data
            where = -1 - e.i
        else:
            data = e._data
            p = pos.get((id(e.grad_fn or e._acc), e._output_nr))
            where = None if p is None else tpos[p]
        root = storage_root(data)
        out.append((where, data.shape, data.dtype, id(root), None if root is data else root.nbytes))
    return tuple(out)


def _raw_fact(x, where, datas, outs):
    # the fact of a saved array whose shape and storage the node's metadata does not give (a view, an
    # input that takes no gradient, a cast copy): its storage key is the argument index or -1-k of the
    # input or output array that owns the storage, as for the entries derived from metadata, else its id
    root = storage_root(x)
    key = None
    for j, d in enumerate(datas):
        if d is root:
            key = j
            break
    else:
        for k, o in enumerate(outs):
            if o is root:
                key = -1 - k
                break
        else:
            key = id(root)
    return (where, x.shape, x.dtype, key, None if root is x else root.nbytes)


def describe_saved(node):
    """What the node's saved tensors are, without holding them: one tuple per saved tensor,
    ``(saved index, input position, or -1-k for the node's output k, or None, shape, numpy dtype,
    nbytes, storage key, storage nbytes)``. The storage key tells views of one storage apart only among
    one node's entries. The same answer before and after backward freed the saved tensors, so cost
    overlays outlive backward.

    >>> import workbench as wb
    >>> y = wb.ones(2, requires_grad=True) * wb.ones(2)
    >>> [(e[0], e[1], e[2], e[4]) for e in describe_saved(y.grad_fn)]
    [(1, None, (2,), 8)]
    """
    facts = node._saved_meta
    if facts is None:
        if node._saved is None:
            return ()
        facts = _entry_facts(node, node._saved)
    tpos = node._tensor_pos
    out = []
    i = -1
    for f in facts:
        i += 1
        if f is None:
            continue
        if f.__class__ is int:  # recorded by a primitive: an input that takes a gradient, or an output,
            # owning its memory; its shape and dtype are those the graph keeps for the gradient
            if f < 0:
                shape, dtype = node._out_meta[-1 - f]
                where = f
            else:
                where = tpos.index(f)
                nxt, nr = node.next_functions[where]
                shape, dtype = nxt._out_meta[nr]
            key, root_bytes = f, None
        else:
            k, shape, dtype, key, root_bytes = f
            where = k if k is None or k < 0 else tpos.index(k)
        nbytes = math.prod(shape) * dtype.itemsize
        out.append((i, where, shape, dtype, nbytes, key, nbytes if root_bytes is None else root_bytes))
    return tuple(out)


def free_saved(node, freed_by):
    """Drop ``node``'s saved tensors after its backward, keeping the facts ``describe_saved`` reads
    (primitives recorded them with the node; others' are taken here)."""
    if node._saved_meta is None:
        node._saved_meta = _entry_facts(node, node._saved)
    node._saved = None
    node._freed = freed_by


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
    # a NumPy ufunc (or any function of the arrays alone) that is the whole forward of a primitive when its
    # one or two operands are floating or complex arrays of one dtype, or such an array and a Python
    # number, and nothing is recorded: apply then calls it directly, without a ctx or forward (the
    # common no-grad op; see also binary_operator/unary_operator)
    _ufunc = None
    # for a primitive with a _ufunc: what its forward saves when it is that ufunc alone, so a Tensor operator
    # recording it (floating operands of one dtype) runs the ufunc without the forward's frame. One entry per
    # save_for_backward argument: None, or (source, needed_by): source 0 or 1 an input array, -1 the
    # output; needed_by None (always saved) or the input whose gradient reads it (saved only if that input
    # requires grad). None here: the operators call forward.
    _saves = None
    _setup = False  # True when the subclass uses the setup_context style
    # a primitive whose outputs never take a gradient (comparisons, logical and bitwise ops): nothing is
    # recorded for it, as PyTorch records no node (a node made and dropped cost x == y 1.5 us)
    _nondiff = False
    # a backward that leaves state for another node's backward (ops.recurrent's steps leave their weight terms):
    # the compiler replays it as a unit, whatever it returns
    _backward_effects = False
    op_name = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        op = cls.op_name or cls.__name__.lower()
        cls._setup = cls.setup_context is not Function.setup_context
        if cls._raw and "apply" not in cls.__dict__:
            cls.apply = classmethod(_apply_raw)
        if "node_name" in cls.__dict__:  # a primitive named after one of PyTorch's overloads (FillBackward2)
            name = cls.node_name
        elif cls._raw:  # PyTorch's names: an op's node is <OpName>Backward0 (MulScalar's, too, is MulBackward0)
            name = "".join(p.capitalize() for p in cls.op_name.split("_")) if cls.op_name else cls.__name__
            name += "Backward0"
        else:  # a custom Function's node is <ClassName>Backward
            name = cls.__name__ + "Backward"
        cls._node_cls = type(name, (Node,), {"__slots__": (), "_fn": cls, "_op": op, "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("subclasses of Function must implement forward(ctx, *args)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override (with a ctx-less forward) to save state from ``inputs`` and ``output``, as in PyTorch."""
        raise NotImplementedError("setup_context is only called when a Function subclass defines it")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function must implement backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args):
        """Run forward and, when an input requires grad and grad mode is on, record a node."""
        return _apply_custom(cls, args)


def _apply_raw(cls, *args):
    """``apply`` of primitives (bound in __init_subclass__): forward on raw arrays, the hot path of every op."""
    try:
        Tensor = _Tensor
        n = len(args)
        a = args[0] if n else None
        b = args[1] if n == 2 else a
        bt = b.__class__ is Tensor
        if n and n <= 2 and a.__class__ is Tensor and a._data.__class__ is _ndarray and (
                bt and b._data.__class__ is _ndarray or b.__class__ is float or b.__class__ is int):
            # fast path for the usual call: one NumPy tensor, or two, or a tensor and a Python number
            # (no argument scan)
            req = a._rg or bt and b._rg
            db = b._data if bt else b
            if req and STATE.enabled and not cls._nondiff:
                return _record_raw(cls, args, [a._data, db] if n == 2 else [a._data], _numpy)
            xp = _numpy
            uf = cls._ufunc
            da = a._data
            if uf is not None and da.dtype.kind in "fc" and (not bt or db.dtype is da.dtype):
                # floating operands of one dtype (or with a Python number): the ufunc is the whole forward
                out = _call2(uf, da, db) if n == 2 else _call1(uf, da)  # in a frame: see _pyframe
            else:
                out = cls.forward(_NUMPY_CTX[2](), da, db) if n == 2 else cls.forward(_NUMPY_CTX[1](), da)
        else:
            req = False
            dev_check = False
            datas = []
            for a in args:
                if a.__class__ is Tensor or isinstance(a, Tensor):
                    d = a._data
                    if d.__class__ is not _ndarray:
                        dev_check = True
                    if a._rg:
                        req = True
                    datas.append(d)
                elif isinstance(a, _np_generic):  # a NumPy scalar: the Python number PyTorch reads it as
                    datas.append(_as_number(a))
                else:
                    datas.append(a)
            xp = _numpy
            if dev_check:  # a CuPy array is involved: resolve the module, and insist on one device
                xp, args = _resolve_xp(cls, args)
                datas = [a._data if isinstance(a, Tensor) else _as_number(a) for a in args]
            if req and STATE.enabled and not cls._nondiff:
                return _record_raw(cls, args, datas, xp)
            out = cls.forward(_NUMPY_CTX[n]() if xp is _numpy and n < 9 else _no_grad_ctx(xp, n), *datas)
        if out.__class__ is tuple:
            res = _plain_tuple(out, cls, args)
        elif cls._view:
            res = _view_of(cls, args, out, xp)
        else:  # the common case, one fresh array
            return _plain(out, req, cls, args)
        if req and not BACKWARD_ACTIVE[0]:  # grad mode is off but an input requires grad: a cut
            _tag_cut(res, cls, args)
        if INFERENCE_ACTIVE[0] and STATE.inference:
            _mark_inference(res)
        return res
    except ValueError as e:  # NumPy's broadcasting error: PyTorch's RuntimeError (free until raised)
        raise broadcast_error(e, args) or e from None


def _plain(out, rg, cls, args):
    """The Tensor for a primitive's array result when nothing was recorded (the tail of every no-grad op).

    rg: whether an input required grad (grad mode is then off, and the result marks where the graph was
    cut, for the 'does not require grad' error).
    """
    if out.__class__ is not _ndarray and isinstance(out, _np_generic):
        out = _numpy.asarray(out)  # NumPy ufuncs on 0-d arrays return scalars
    res = _new(_Tensor)
    res._data = out
    res._rg = False
    res.grad_fn = None
    res._output_nr = 0
    res._vbox = [0, None]
    res._base = None
    if rg and not BACKWARD_ACTIVE[0]:
        if CUTS[0] is None:
            res._cut = cls
        else:
            _tag_cut(res, cls, args)
    if INFERENCE_ACTIVE[0] and STATE.inference:
        _mark_inference(res)
    return res


def _plain_tuple(out, cls, args):
    """The Tensors for a primitive's tuple of array results when nothing was recorded."""
    return tuple([_make(o) for o in out])


def binary_operator(cls, general, reflected=False):
    """A Tensor operator (``__mul__``, ``__rsub__``...) for primitive ``cls``, which has a ``_ufunc``.

    The operator is where most user arithmetic enters, so it gets its own fast path: when nothing is
    recorded and the operands are floating NumPy arrays of one dtype, or such an array and a Python
    number, it calls the ufunc itself (no public-function wrapper, no ``apply``, no ctx). Anything else
    goes to ``general(self, other)``, the op's public function, which handles every case.
    """
    uf = cls._ufunc
    Tensor = _Tensor

    def operator(self, other):
        try:
            a = self._data
            if other.__class__ is Tensor:
                b = other._data
                rg = self._rg or other._rg
                ok = b.__class__ is _ndarray and b.dtype is a.dtype
            else:
                b = other
                rg = self._rg
                ok = other.__class__ is float or other.__class__ is int
            if ok and a.__class__ is _ndarray and a.dtype.kind in "fc":
                if not (rg and STATE.enabled):
                    # the operands go to _plain in the ufunc's order (the compiler's trace replays that call)
                    if reflected:
                        return _plain(_call2(uf, b, a), rg, cls, (other, self))
                    return _plain(_call2(uf, a, b), rg, cls, (self, other))
                if not reflected and b.__class__ is _ndarray:  # two tensors, recorded: what cls.apply would do
                    return _record_raw(cls, (self, other), [a, b], _numpy, cls._saves)
            return general(self, other)
        except ValueError as e:  # NumPy's broadcasting error: PyTorch's RuntimeError (free until raised)
            raise broadcast_error(e, (self, other)) or e from None  # PyTorch names self first, reflected or not

    operator._wb_general = general  # what workbench.profiler calls instead, so the op goes through apply
    return operator


def unary_operator(cls, general, autocast, kinds="fc", inplace=True):
    """The same fast path for a unary primitive's method and function (``x.exp()``, ``wb.exp(x)``).

    autocast: the ops' autocast flag (a one-element list); while it is on, a recorded call goes through
    ``general``, which applies the cast policy. kinds: the NumPy dtype kinds the fast path takes (relu:
    "f", as complex inputs raise). inplace: whether the in-place method (``x.exp_()``) may run the ufunc into
    x's array (False where ``_ufunc`` is not a NumPy ufunc).
    """
    uf = cls._ufunc
    Tensor = _Tensor

    def operator(input, *, out=None):
        if input.__class__ is Tensor and out is None:
            a = input._data
            rg = input._rg
            if a.__class__ is _ndarray and a.dtype.kind in kinds:
                if not (rg and STATE.enabled):
                    return _plain(_call1(uf, a), rg, cls, (input,))
                if not autocast[0]:  # recorded: what cls.apply would do
                    return _record_raw(cls, (input,), [a], _numpy, cls._saves)
        return general(input) if out is None else general(input, out=out)  # (relu takes no out=)

    operator.__name__ = operator.__qualname__ = general.__name__
    operator.__doc__ = general.__doc__
    operator.__wrapped__ = general  # its signature is general's (inspect, the stub)
    operator._wb_general = general
    if inplace:
        operator._wb_inplace = (uf, "fc")  # what the in-place method (x.exp_()) runs into x's array
    return operator


def product_operator(cls, general, autocast):
    """``x @ w`` for the matrix-product primitive ``cls`` (a ``_ufunc`` of two matrices, declared ``_saves``).

    When both operands are 2-D NumPy arrays of one floating or complex dtype whose inner dims agree, and
    autocast is off, the product is computed and recorded here (no public-function wrapper, no ``apply``,
    no ctx, no forward frame): the raw-tensor MLP a lecture writes (``x @ w + b``) spent half of each
    product's time there. Anything else goes to ``general(self, other)``, the public ``matmul``, which
    checks, casts and raises as PyTorch does.
    """
    uf = cls._ufunc
    saves = cls._saves
    Tensor = _Tensor

    def operator(self, other):
        if other.__class__ is Tensor or isinstance(other, Tensor):
            a = self._data
            b = other._data
            if (a.__class__ is _ndarray and b.__class__ is _ndarray and a.ndim == 2 and b.ndim == 2
                    and a.dtype is b.dtype and a.dtype.kind in "fc" and a.shape[1] == b.shape[0]
                    and not autocast[0]):
                rg = self._rg or other._rg
                if rg and STATE.enabled:
                    return _record_raw(cls, (self, other), [a, b], _numpy, saves)
                return _plain(_call2(uf, a, b), rg, cls, (self, other))
        elif not hasattr(other, "ndim"):  # not an array: Python's TypeError, as PyTorch's operator
            return NotImplemented
        return general(self, other)

    operator._wb_general = general  # what workbench.profiler calls instead, so the op goes through apply
    return operator


def inplace_operator(name, uf, kinds, general, alpha=False):
    """The in-place method ``name`` (``x.add_(y)``, ``x.exp_()``) of an op that is the NumPy ufunc ``uf`` on
    arrays of the dtype kinds ``kinds`` ("fc": floating and complex; "f" where a complex result would not be
    x's dtype, as abs).

    general: the generic in-place op (``Tensor._inplace`` around the out-of-place function), which computes
    the result and copies it into x. When nothing records and the operands are floating NumPy arrays of x's
    dtype, or x's and a Python number, the ufunc writes x's array itself instead: one pass and no temporary
    (``x += y`` on 1M float32 elements took 2.6x PyTorch's time, ``x.mul_(2)`` 3.9x). The bits are the
    general path's (the same ufunc); an operand that does not broadcast into x's shape goes to ``general``
    for its error. alpha: the method takes ``alpha=`` (``add_``, ``sub_``): a Python number scales the operand
    first, as the primitive's forward does (``p.add_(g, alpha=-lr)``, the hand-written SGD step).
    """
    binary = uf.nin == 2
    Tensor = _Tensor

    def method(self, *args, **kwargs):
        a = self._data
        s = 1
        if kwargs:
            s = kwargs.get("alpha") if alpha and len(kwargs) == 1 else None
            if not (s.__class__ is float or s.__class__ is int):
                return general(self, *args, **kwargs)
        if len(args) == binary and a.__class__ is _ndarray and a.dtype.kind in kinds:
            rg = self._rg
            ok = True
            if binary:
                other = args[0]
                if other.__class__ is Tensor:
                    b = other._data
                    rg = rg or other._rg
                    ok = b.__class__ is _ndarray and b.dtype is a.dtype
                else:
                    b = other
                    ok = other.__class__ is float or other.__class__ is int
            if ok and not (rg and STATE.enabled):
                self._check_inplace(name)
                if binary and b.__class__ is _ndarray and (b.base is not None or a.base is not None):
                    no_partial_overlap(a, b)  # (two arrays that own their memory never share it)
                if s != 1:
                    if (b.__class__ is _ndarray and b.shape == a.shape and _fused.usable(a, b) and a.flags.writeable
                            and (b is a or not _numpy.may_share_memory(a, b))):  # (the loop reads as it writes)
                        # one pass (x - u s is x + u (-s), bit for bit)
                        _fused.add_scaled_(a.reshape(-1), b.reshape(-1),
                                           a.dtype.type(s if uf is _numpy.add else -s))
                        self._bump(name, 2)
                        return self
                    b = b * s  # Add's and Sub's forward: the operand scaled, rounded, then the sum
                try:
                    _call2_out(uf, a, b) if binary else _call1_out(uf, a)
                except ValueError:  # NumPy checks the shapes before it writes anything
                    return general(self, *args)
                self._bump(name, 2)
                return self
        return general(self, *args, **kwargs)

    return fast_inplace_method(method, name, general)


def fast_inplace_method(method, name, general):
    """``method`` named as the Tensor method ``name``, documented and tagged with its general form (the generic
    in-place op), which workbench.profiler and the compiler's trace call instead while they run."""
    method.__name__, method.__qualname__, method.__doc__ = name, "Tensor." + name, general.__doc__
    method._wb_general = general
    return method


def _tag_cut(res, cls, args):
    # inputs required grad but grad mode was off: remember the op, for the 'does not require grad' error
    # (and tell an active viz recorder). Ops run by backward formulas are not cuts and skip this.
    for t in (res if res.__class__ is tuple else (res,)):
        t._cut = cls
        if CUTS[0] is not None:
            CUTS[0](t, "no_grad", next(a for a in args if isinstance(a, _Tensor) and a._rg))


def _resolve_xp(cls, args):
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
                raise _device_error(cls.op_name or cls.__name__.lower(), devs[0],
                                    a.device if devs[0] == target else target)
        out.append(a)
    return _backend.xp_for(target), tuple(out)


def _mark_inference(res):
    for t in (res if type(res) is tuple else (res,)):
        if isinstance(t, _Tensor):
            t._vbox = _INFERENCE_BOX


def _view_of(cls, args, out, xp):
    # a primitive flagged _view returns a view when the array library could make one; the view keeps
    # how to replay it from its base, for in-place ops on views (see Tensor._inplace)
    base = args[0]
    if out is base._data or (out.size and xp.may_share_memory(out, base._data)):
        t = _make(out, False, None, 0, base._vbox, base._base if base._base is not None else base)
        if not STATE.enabled and base._rg or base._nograd_view:  # PyTorch's CreationMeta.NO_GRAD_MODE
            t._nograd_view = True
        if base._base is None:
            t._view_fn = (cls, args[1:], None)
        elif base._view_fn is not None:
            t._view_fn = (cls, args[1:], base._view_fn)
            if base._multi_view is not None:  # PyTorch forbids in-place ops on a view of split's output too
                t._multi_view = True
        return t
    return _make(out)


def _new_node(cls, xp):
    node = cls._node_cls()
    node.xp = xp
    node._saved = node._saved_meta = node._freed = None
    node._seq = _next_seq()
    node.scope = _scope_now()
    node.group = _group_now()
    if TRACE[0] >= 2:
        node.site = graph.user_site(4)
    return node


_NO_EDGE = (None, 0)
_TRUE1, _FALSE1 = (True,), (False,)
_RANGES = tuple(tuple(range(n)) for n in range(9))
_RANGES1, _RANGES2, _RANGES3 = _RANGES[1], _RANGES[2], _RANGES[3]
_TRUE_FALSE, _FALSE_FALSE = (True, False), (False, False)


def _edge(a):
    # where a gradient for tensor a goes: its grad_fn's output, its leaf accumulator, or nowhere
    if a._rg:
        gf = a.grad_fn
        return (gf, a._output_nr) if gf is not None else (a._acc or accumulator(a), 0)
    return _NO_EDGE


def _edges(node, args):
    # needs_input_grad: one flag per forward argument; next_functions: one edge per tensor argument
    Tensor = _Tensor
    n = len(args)
    a = args[0] if n else None
    if n == 1 and (a.__class__ is Tensor or isinstance(a, Tensor)):
        node.needs_input_grad = _TRUE1 if a._rg else _FALSE1
        node.next_functions = (_edge(a),)
        node._tensor_pos = _RANGES[1]
        return
    if n == 2:
        b = args[1]
        if (a.__class__ is Tensor or isinstance(a, Tensor)) and (b.__class__ is Tensor or isinstance(b, Tensor)):
            node.needs_input_grad = (True if a._rg else False, True if b._rg else False)
            node.next_functions = (_edge(a), _edge(b))
            node._tensor_pos = _RANGES[2]
            return
    nig = []
    nexts = []
    all_tensors = True
    for a in args:
        if a.__class__ is Tensor or isinstance(a, Tensor):
            if a._rg:
                gf = a.grad_fn
                nexts.append((gf, a._output_nr) if gf is not None else (a._acc or accumulator(a), 0))
                nig.append(True)
            else:
                nexts.append(_NO_EDGE)
                nig.append(False)
        else:
            nig.append(False)
            all_tensors = False
    node.needs_input_grad = tuple(nig)
    node.next_functions = tuple(nexts)
    node._tensor_pos = _RANGES[n] if all_tensors and n < 9 else tuple(
        [i for i, a in enumerate(args) if isinstance(a, Tensor)])


def _record_raw(cls, args, datas, xp, saves=None):
    # saves: the primitive's _saves, from a Tensor operator whose operands are floating arrays of one dtype
    # (the forward is then the ufunc alone; see Function._saves)
    node = cls._node_cls()  # _new_node, inlined: this runs once per recorded op
    node.xp = xp
    node._saved = node._saved_meta = node._freed = None
    node._seq = _next_seq()
    node.scope = _scope_now()
    node.group = _group_now()
    if TRACE[0] >= 2:
        node.site = graph.user_site(3)
    # _edges, inlined for one tensor and two (the operators' calls); an input with a grad_fn is an edge
    # to that node's output, anything else goes through _edge (leaves, tensors that do not require grad)
    n = len(args)
    a = args[0] if n else None
    if n == 1 and a.__class__ is _Tensor:
        gf = a.grad_fn
        node.needs_input_grad = _TRUE1 if a._rg else _FALSE1
        node.next_functions = ((gf, a._output_nr) if gf is not None else _edge(a),)
        node._tensor_pos = _RANGES1
    elif n == 2 and a.__class__ is _Tensor and args[1].__class__ is _Tensor:
        b = args[1]
        gf = a.grad_fn
        gfb = b.grad_fn
        node.needs_input_grad = (True if a._rg else False, True if b._rg else False)
        node.next_functions = ((gf, a._output_nr) if gf is not None else _edge(a),
                               (gfb, b._output_nr) if gfb is not None else _edge(b))
        node._tensor_pos = _RANGES2
    elif n == 2 and a.__class__ is _Tensor and not isinstance(args[1], _Tensor):
        # a tensor and a plain argument (reshape's shape, a reduction's dim): one edge
        gf = a.grad_fn
        node.needs_input_grad = _TRUE_FALSE if a._rg else _FALSE_FALSE
        node.next_functions = ((gf, a._output_nr) if gf is not None else _edge(a),)
        node._tensor_pos = _RANGES1
    elif n == 3 and isinstance(a, _Tensor) and isinstance(b := args[1], _Tensor) and isinstance(c := args[2], _Tensor):
        # three tensors (or parameters): linear with a bias, addmm, where
        node.needs_input_grad = (True if a._rg else False, True if b._rg else False, True if c._rg else False)
        node.next_functions = (_edge(a), _edge(b), _edge(c))
        node._tensor_pos = _RANGES3
    else:
        _edges(node, args)
    if saves is None:
        out = cls.forward(node, *datas)
    else:  # the forward is the ufunc alone; what it saves is declared (resolved below, with the result)
        out = _call2(cls._ufunc, datas[0], datas[1]) if n == 2 else _call1(cls._ufunc, datas[0])
    if out.__class__ is not tuple and node._non_differentiable is None:  # the common case: one output
        if cls._view:
            res = _view_of(cls, args, out, xp)
            res._rg = True
            res.grad_fn = node
            base = res._base
            if base is not None and base.grad_fn is not None:
                _register_view(base, res)
        elif _DIFF_DTYPES[out.dtype]:
            if out.__class__ is not _ndarray and isinstance(out, _np_generic):
                out = _scalar_out(node, out)
            res = _new(_Tensor)  # Tensor._make, inlined
            res._data = out
            res._rg = True
            res.grad_fn = node
            res._output_nr = 0
            res._vbox = [0, None]
            res._base = None
        else:  # integer and bool results (comparisons, indices) never require grad
            res = _make(out)
        node._out_meta = ((out.shape, out.dtype),)
        results = (res,)
        if saves:
            node._saved, node._saved_meta = _declared_saved(saves, node.needs_input_grad, args, datas, out, res)
        elif node._saved is not None:
            node._saved, node._saved_meta = _resolve_saved_raw(node._saved, args, datas, (out,), results)
    else:
        outs = out if out.__class__ is tuple else (out,)
        nd = node._non_differentiable or ()
        if nd:  # read once, here: kept on the node it would hold those outputs (indices, masks) alive
            node._non_differentiable = None
        results = []
        for k, o in enumerate(outs):
            diff = _DIFF_DTYPES[o.dtype] and not (nd and any(o is x for x in nd))
            results.append(_make(o, diff, node if diff else None, k))
        node._out_meta = tuple([(o.shape, o.dtype) for o in outs])
        if node._saved is not None:
            node._saved, node._saved_meta = _resolve_saved_raw(node._saved, args, datas, outs, results)
        res = tuple(results) if out.__class__ is tuple else results[0]
    if _ANOMALY[0]:
        graph.anomaly_record(node)
    if LISTENERS:
        for fn in LISTENERS.fns:
            fn(node, args, results)
    return res


def _register_view(base, view):
    # a recorded view of a non-leaf: kept (weakly) on its base, so that a recorded in-place op on the base, or
    # on another of its views, gives it a node that reads the new values (Tensor._refresh_views), as PyTorch
    # regenerates a view's grad_fn when its base's version moved. Dead entries are dropped as the list grows
    d = base.__dict__
    refs = d.get("_views")
    if refs is None:
        d["_views"] = [weakref.ref(view)]
        return
    n = len(refs)
    if n >= 32 and not n & (n - 1):
        refs[:] = [r for r in refs if r() is not None]
    refs.append(weakref.ref(view))


def _scalar_out(node, out):
    # NumPy ufuncs on 0-d arrays return scalars: the 0-d array takes the scalar's place in what forward saved
    # too, so that a saved output (exp's, sqrt's) is found as the output and differentiates again
    arr = _numpy.asarray(out)
    if node._saved is not None:
        node._saved = tuple(arr if x is out else x for x in node._saved)
    return arr


def _resolve_saved_raw(saved, args, datas, outs, results):
    # forward saved raw arrays; find the tensor each came from, so the version check and the
    # visualizer see tensors. An array that is neither an input nor an output (a cast copy) has no
    # version to check: nothing else can write to it. Returns the entries and describe_saved's facts:
    # the argument index k of an input that takes a gradient, or -1-k for output k, where that array
    # owns its memory (its shape and dtype are then the node's metadata: nothing more to keep, at record
    # time or when backward frees it), else a fact of its own (_raw_fact).
    entries = []
    facts = []
    for x in saved:
        if x is None:
            entries.append((None, None, 0))
            facts.append(None)
            continue
        k = 0
        for d in datas:
            # raw arrays passed as plain arguments have no box
            if d is x and ((t := args[k]).__class__ is _Tensor or isinstance(t, _Tensor)):
                box = t._vbox
                if box is _INFERENCE_BOX:
                    _saved_entry(t)  # raises
                entries.append((t, box, box[0]))
                if x.base is not None:
                    facts.append(_raw_fact(x, k if t._rg else None, datas, outs))
                elif t._rg:
                    facts.append(k)
                else:  # no gradient edge to read the shape from: it is kept here
                    facts.append((None, x.shape, x.dtype, k, None))
                break
            k += 1
        else:
            if isinstance(x, _Tensor):
                entries.append(_saved_entry(x))
                facts.append(_raw_fact(x._data, None, datas, outs))
                continue
            for k, o in enumerate(outs):
                if o is x:
                    r = results[k]
                    entries.append((_Out(k, x, r._rg), r._vbox, r._vbox[0]))
                    facts.append(-1 - k if x.base is None else _raw_fact(x, -1 - k, datas, outs))
                    break
            else:
                entries.append((_make(x), None, 0))
                facts.append(_raw_fact(x, None, datas, outs))
    return tuple(entries), facts


def _declared_saved(saves, nig, args, datas, out, res):
    # _resolve_saved_raw's entries and facts for what a Function._saves declares, without searching for each
    # array among the inputs and the output (the declaration says where it is). Its per-entry lines repeat
    # _resolve_saved_raw's on purpose: one helper for both cost 1.5% of the 10-op chain's step (callgrind);
    # tests/autograd/test_declared_saves.py pins that the two agree
    entries = []
    facts = []
    for e in saves:
        if e is None or e[1] is not None and not nig[e[1]]:
            entries.append((None, None, 0))
            facts.append(None)
            continue
        k = e[0]
        if k < 0:
            box = res._vbox
            entries.append((_Out(0, out, res._rg), box, box[0]))
            facts.append(-1 if out.base is None else _raw_fact(out, -1, datas, (out,)))
            continue
        x = datas[k]
        if k and x is datas[0]:  # one array twice (x * x): the first argument, as the search finds it
            k = 0
        t = args[k]
        box = t._vbox
        if box is _INFERENCE_BOX:
            _saved_entry(t)  # raises
        entries.append((t, box, box[0]))
        if x.base is not None:
            facts.append(_raw_fact(x, k if t._rg else None, datas, (out,)))
        else:
            facts.append(k if t._rg else (None, x.shape, x.dtype, k, None))
    return tuple(entries), facts


def _saved_entry(t):
    box = t._vbox
    if box is _INFERENCE_BOX:
        raise RuntimeError(
            "Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
            "normal tensor (outside inference_mode) and use it in autograd.")
    return (t, box, box[0])


# --- custom (user) Functions -----------------------------------------------------------------------
def _apply_custom(cls, args):
    Tensor = _Tensor
    tensors = [a for a in args if isinstance(a, Tensor)]
    xp = _backend.xp_of(tensors[0]._data) if tensors else _numpy
    record = STATE.enabled and any(t._rg for t in tensors)
    if not record:
        ctx = _no_grad_ctx(xp, len(args))
        with no_grad():
            out = _run_forward(cls, ctx, args)
        return _detached_outputs(out, args)
    node = _new_node(cls, xp)
    _edges(node, args)
    with no_grad():
        out = _run_forward(cls, node, args)
    multi = type(out) is tuple
    outs = out if multi else (out,)
    results = _attach_custom_outputs(node, outs, args)
    node._out_meta = tuple((r._data.shape, r._data.dtype) if isinstance(r, Tensor) else None for r in results)
    if node._saved is not None:
        node._saved = _resolve_saved_custom(node._saved, results)
    if _ANOMALY[0]:
        graph.anomaly_record(node)
    if LISTENERS:
        for fn in LISTENERS.fns:
            fn(node, args, results)
    return tuple(results) if multi else results[0]


def _run_forward(cls, ctx, args):
    if cls._setup:  # PyTorch's split style: forward(*args), then setup_context(ctx, inputs, output)
        out = cls.forward(*args)
        cls.setup_context(ctx, args, out)
        return out
    return cls.forward(ctx, *args)


def _detached_outputs(out, args):
    Tensor = _Tensor
    if isinstance(out, tuple):
        return tuple(_detached_outputs(o, args) for o in out)
    if isinstance(out, Tensor) and any(out is a for a in args):
        return out.detach()
    return out


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
                entries.append(_saved_entry(x))
    return tuple(entries)


def _attach_custom_outputs(node, outs, args):
    Tensor = _Tensor
    dirty = node._dirty or ()
    nd = node._non_differentiable or ()
    if nd:  # as in the raw path: not kept on the node
        node._non_differentiable = None
    results = []
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        if any(o is d for d in dirty):
            if o._rg and o.grad_fn is None:
                raise RuntimeError(
                    f"a leaf Variable that requires grad has been used in an in-place operation "
                    f"({node.name()} marked it dirty). Clone it first, or modify it under no_grad().")
            o._vbox[0] += 1
            o._vbox[1] = (node._op, node.scope, graph.user_site(4))
            t = o
        elif any(o is a for a in args):  # an input passed through unchanged comes out as a new view of it
            t = _make(o._data, False, None, 0, o._vbox, o._base if o._base is not None else o)
        else:
            t = o
        if any(o is x for x in nd) or t.dtype.category < 2:  # non-differentiable, or not float/complex
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

    Its backward runs under no_grad; differentiating its result again (create_graph=True) raises.

    >>> import workbench as wb
    >>> from workbench.autograd.function import once_differentiable
    >>> callable(once_differentiable(lambda ctx, g: g))
    True
    """

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with no_grad():
            out = fn(ctx, *grads)
        if STATE.enabled and any(isinstance(g, _Tensor) and g.requires_grad for g in grads):
            if isinstance(out, tuple):
                return tuple(_DelayedError.wrap(o) if isinstance(o, _Tensor) else o for o in out)
            return _DelayedError.wrap(out) if isinstance(out, _Tensor) else out
        return out

    return wrapper


class _DelayedError(Function):
    """A pass-through node whose backward raises: the result of a once_differentiable backward."""

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
