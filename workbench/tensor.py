"""Tensor, complete: the core (``_core.py``) plus every method, attached here from one registry.

The registry (``REGISTRY``: name -> the module that provides it) is fed, in this order, by the methods
below (autograd state, interop, in-place machinery), each op family's tables (``METHODS``, ``INPLACE``;
see ``workbench/ops/__init__.py``), creation (``new_*``, the legacy constructor), random (``normal_``...)
and multiprocessing (pickling, ``share_memory_``). A name registered twice is an error, so the whole
surface is listed in one place; ``workbench/tensor.pyi`` is generated from it
(``make pyi``, which runs ``python -m workbench.testing.tensor_stub``) for editors and type checkers.
"""
import inspect
import sys
import weakref

from . import _backend
from ._backend import dtypes as _dt
from ._broadcast import no_partial_overlap, write_through
from . import creation as _creation
from . import ops as _ops
from . import random as _random
from ._core import _INFERENCE_BOX, SUBCLASS_HOOKS, Size, Tensor
from ._format import format_tensor
from .autograd import graph as _graph
from .autograd.graph import _Out
from .autograd.backprop import backward as _backward
from .autograd.function import inplace_operator as _inplace_operator
from .autograd.grad_mode import STATE, enable_grad, no_grad
from .multiprocessing import reductions as _reductions
from .ops.views import StaleView, _scatter_view, replay_view

__all__ = ["Tensor", "Size"]


class _Methods:
    """Tensor's methods that reach into autograd, the ops or the formatter (attached by the registry)."""

    # --- metadata ------------------------------------------------------------------------------
    @property
    def data(self):
        """A tensor sharing this one's storage, detached from the graph (as ``detach()``)."""
        return self.detach()

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data
        if self._acc is not None:  # the engine checks gradients against the leaf's shape and dtype
            self._acc._out_meta = ((value._data.shape, value._data.dtype),)

    def pin_memory(self):
        """A copy in page-locked host memory, which ``.to("cuda", non_blocking=True)`` copies asynchronously;
        self if already pinned. Needs CUDA (RuntimeError otherwise, as PyTorch)."""
        if self._data.__class__ is not _backend.ndarray:
            raise RuntimeError(f"cannot pin a {self.device} tensor: only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        out = self.clone() if self._rg else Tensor._make(self._data)  # clone: the copy stays on the tape
        out._data = _backend.pinned(self._data)
        out._pinned = True
        return out

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self):
        return format_tensor(self)

    # --- interop -------------------------------------------------------------------------------
    def numpy(self, *, force=False):
        """The NumPy array sharing this CPU tensor's memory.

        >>> import workbench as wb
        >>> wb.tensor([1, 2]).numpy()
        array([1, 2])
        """
        if force:
            return _backend.to_device(self._data, _backend.CPU).copy() if self.device.type != "cpu" else \
                self._data
        if self._rg and STATE.enabled:  # as PyTorch: allowed under no_grad (custom op kernels run there)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        if _graph.CUTS[0] is not None:
            _graph.CUTS[0](self, "numpy", None)
        return self._data

    def item(self):
        """The value of a one-element tensor as a Python number (a device sync on CUDA).

        >>> import workbench as wb
        >>> wb.tensor([2.5]).item()
        2.5
        """
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if _graph.CUTS[0] is not None:
            _graph.CUTS[0](self, "numpy", None)
        return self._data.reshape(()).item()

    def tolist(self):
        """Nested Python lists of the values.  >>> wb.tensor([[1, 2]]).tolist()  ->  [[1, 2]]"""
        d = self._data
        if _graph.CUTS[0] is not None:
            _graph.CUTS[0](self, "numpy", None)
        if self.device.type != "cpu":
            d = d.get()
        if self.dtype is _dt.bfloat16:
            d = d.astype("float32")
        return d.tolist()

    # --- autograd ------------------------------------------------------------------------------
    def retain_grad(self):
        """Populate ``.grad`` of this non-leaf tensor during backward (a no-op on leaves).

        >>> import workbench as wb
        >>> x = wb.ones(2, requires_grad=True); h = x * 3; h.retain_grad()
        >>> (h * h).sum().backward(); h.grad
        tensor([6., 6.])
        """
        if self.grad_fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        node = self.grad_fn
        if node._retain is None:
            node._retain = {}
            node._hooked = True
        node._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def detach(self):
        """A tensor sharing storage with this one, cut from the graph.

        >>> import workbench as wb
        >>> wb.ones(2, requires_grad=True).detach().requires_grad
        False
        """
        t = Tensor._make(self._data, False, None, 0, self._vbox, self._base if self._base is not None else self)
        if self._rg:
            t._cut = "detach"  # for the 'does not require grad' error: this is where the graph was cut
            if _graph.CUTS[0] is not None:
                _graph.CUTS[0](t, "detach", self)
        return t

    def detach_(self):
        """Cut this tensor from the graph in place (it becomes a leaf that does not require grad).

        >>> import workbench as wb
        >>> y = wb.ones(2, requires_grad=True) * 2
        >>> y.detach_().requires_grad
        False
        """
        if self._base is not None and self._base._rg:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self._rg:
            self._cut = "detach"
        self.grad_fn = None
        self._rg = False
        return self

    def register_hook(self, hook):
        """hook(grad) -> new grad or None, called when this tensor's gradient is computed.

        >>> import workbench as wb
        >>> x = wb.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> x.sum().backward(); x.grad
        tensor([2., 2.])
        """
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            node, nr = self.grad_fn, self._output_nr
            return _graph.add_hook(node, "_tensor_pre_hooks", (nr, hook))
        node = _graph.accumulator(self)
        return _graph.add_hook(node, "_tensor_pre_hooks", (0, hook))

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) called after this leaf's ``.grad`` has been accumulated; returns a removable handle.

        >>> import workbench as wb
        >>> x = wb.ones(2, requires_grad=True)
        >>> h = x.register_post_accumulate_grad_hook(lambda t: print("grad", t.grad))
        >>> (x * 2).sum().backward()
        grad tensor([2., 2.])
        """
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return _graph.add_hook(self, "_post_acc_hooks", hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        >>> import workbench as wb
        >>> x = wb.tensor(3.0, requires_grad=True)
        >>> (x * x).backward(); x.grad
        tensor(6.)
        """
        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # --- in-place machinery --------------------------------------------------------------------
    def _check_inplace(self, opname):
        if self._nograd_view and STATE.enabled:
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                f"moving both the view and the inplace ({opname}) either both inside the no_grad block (if you don't "
                "want the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
        if STATE.enabled and self._rg and self.grad_fn is None:
            raise RuntimeError(
                f"a leaf Variable that requires grad is being used in an in-place operation ({opname}). "
                "Wrap it in `with workbench.no_grad():` if you mean to change its value (as optimizers do), "
                "or use the out-of-place form."
            )
        base = self._base
        if STATE.enabled and self._rg and base is not None and base._rg and base.grad_fn is None:
            raise RuntimeError(
                f"a view of a leaf Variable that requires grad is being used in an in-place operation ({opname}). "
                "Wrap it in `with workbench.no_grad():` if you mean to change the leaf's value, or clone() the "
                "leaf first."
            )
        if self._vbox is _INFERENCE_BOX and STATE.enabled:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.")
        if self._multi_view is not None and STATE.enabled:
            raise RuntimeError(_multi_view_error(self, "is being modified inplace"))

    def _bump(self, opname, depth=3):
        box = self._vbox
        box[0] += 1
        box[1] = (opname, _graph.SCOPE.get(), _graph.user_mark(depth))  # the line read only for an error
        root = self._base if self._base is not None else self
        if root._multi_base:
            _stale_multi_views(root)

    def _inplace(self, opname, fn, *args, region=None):
        """Make ``self`` hold ``fn(self, *args)``: the generic in-place op, autograd included.

        region: an index of the array where ``fn`` changes it (``__setitem__``'s key): only those elements are
        stored, as PyTorch's in-place kernels store them (another process writing other elements of a shared
        tensor meanwhile keeps its writes)."""
        self._check_inplace(opname)
        dst = self._data
        if region is not None and all(k is None or k is Ellipsis or k.__class__ is int or k.__class__ is slice
                                      for k in (region if region.__class__ is tuple else (region,))):
            dst = dst[region]  # a store writes only the region: a[0] = a[1] reads no element it writes (PyTorch's)
        for a in args:
            if isinstance(a, Tensor):
                no_partial_overlap(dst, a._data)
        if not STATE.enabled or not (self._rg or any(isinstance(a, Tensor) and a._rg for a in args)):
            with no_grad():
                r = fn(self, *args)
            self._write(r, opname, region)
            self._bump(opname)
            return self
        if self._base is not None and (self._base._rg or self._rg) and self._view_fn is not None:
            return _view_inplace(self, opname, fn, args)
        # the value before the op, as its own array object (a view): an argument that is self, or a view of it,
        # stays distinct from it where the op dedupes one array passed twice, so a save of it fails backward
        # once the op bumps self's version, as PyTorch's (y.mul_(y)); saves of old get a copy (_detach_saved)
        old = Tensor._make(self._data.view(), self._rg, self.grad_fn, self._output_nr, self._vbox, self._base)
        r = fn(old, *args)
        node = r.grad_fn
        if node is not None and node._saved:
            node._saved = _detach_saved(node, old)
        self._write(r, opname, region)
        self.grad_fn = node
        self._output_nr = r._output_nr
        self._rg = r._rg
        self._bump(opname)
        if node is not None and node._saved:
            _save_output_as(node, r, self)
        if self._base is None:
            _refresh_views(self)
        return self

    def _write(self, r, opname, region=None):
        rd = r._data
        if rd.dtype != self._data.dtype:
            if _dt.promote_types(r.dtype, self.dtype) != self.dtype and not (
                    r.dtype.category <= self.dtype.category):
                raise RuntimeError(f"result type {r.dtype.name} can't be cast to the desired output type "
                                   f"{self.dtype.name} (in {opname})")
        a = self._data
        if region is not None and rd.shape == a.shape:
            key, value = region, rd[region]
        elif rd is a:
            return
        else:
            if region is None and rd.shape != a.shape and rd.size == a.size:
                # NumPy would drop the result's leading 1-dims ((1, 3) into (3,)); PyTorch's in-place output
                # must have the broadcast shape
                raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                                   f"{list(rd.shape)} (in {opname})")
            key, value = None, rd
        try:
            a[... if key is None else key] = value
        except ValueError:
            if not a.flags.writeable:  # an expanded view: PyTorch writes through where it may
                write_through(a, value, key)
                return
            if rd.shape != a.shape:
                raise RuntimeError(
                    f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(rd.shape)} "
                    f"(in {opname})") from None
            raise


def _save_output_as(node, r, dst):
    """An in-place op's node saved its result ``r``, whose values are now ``dst``'s (the tensor written, or its
    view): it keeps ``dst`` at its version after the op instead, as PyTorch saves self. A later in-place op on
    ``dst`` (or its base) then fails the backward's version check, as in PyTorch, and r's array is not kept."""
    box = r._vbox
    out = []
    for entry, b, version in node._saved:
        if b is box and entry is not None:
            i, rg = (entry.i, entry.requires_grad) if entry.__class__ is _Out else (entry._output_nr, entry._rg)
            entry, b, version = _Out(i, dst._data, rg), dst._vbox, dst._vbox[0]
        out.append((entry, b, version))
    node._saved = tuple(out)


def _detach_saved(node, old):
    # the node saved the value being overwritten: give it its own copy, with its own version box
    out = []
    for entry in node._saved:
        t = entry[0]
        if t is old:
            old._data = old.xp_copy()
            old._vbox = [0, None]
            entry = (old, old._vbox, 0)
        out.append(entry)
    return tuple(out)



def _view_inplace(view, opname, fn, args):
    """In-place op on a view of a tensor that requires grad: rewrite the base (PyTorch's CopySlices)."""
    base = view._base
    base_old = Tensor._make(base._data, base._rg, base.grad_fn, base._output_nr, base._vbox, None)
    old_view = replay_view(view._view_fn, base_old)
    value = fn(old_view, *args)
    op_node = value.grad_fn
    if op_node is not None and op_node._saved:  # the op saved the view's old value: keep a copy of it
        op_node._saved = _detach_saved(op_node, old_view)
    new_base = _scatter_view(base_old, value, view._view_fn,
                             op_node is not None and getattr(op_node._fn, "_fills", False))
    node = new_base.grad_fn
    base._write(new_base, opname)  # (not a raw store: workbench.compile records the write)
    base.grad_fn = node
    base._output_nr = new_base._output_nr
    base._rg = True
    view._bump(opname)
    if op_node is not None and op_node._saved:
        _save_output_as(op_node, value, view)
    # the base's other views, and the view itself, now read from the rewritten base
    _refresh_views(base, view)
    new_view = replay_view(view._view_fn, base)
    view.grad_fn = new_view.grad_fn
    view._output_nr = new_view._output_nr
    view._rg = True
    return view


def _multi_view_error(view, what):
    """PyTorch's error for a view that split, chunk or unbind returned (or a view of one): ``what`` happened."""
    op, i = view._multi_view if view._multi_view is not True else (
        view.grad_fn.name().replace("Backward0", "") if view.grad_fn is not None else "a view", view._output_nr)
    return (f"Output {i} of {op} is a view and {what}. This view is the output of a function that returns multiple "
            "views. Such functions do not allow the output views to be modified inplace. You should replace the "
            "inplace operation by an out-of-place one.")


def _stale_multi_views(root):
    """After an in-place op on ``root`` or a view of it, recorded or not: the views that split, chunk or unbind
    made of it cannot be regenerated. PyTorch raises at their next use; here a gradient through them raises."""
    with enable_grad():
        for r in list(root.__dict__.get("_views") or ()):
            v = r()
            if v is not None and v._multi_view is not None and v._view_fn is not None and not (
                    v.grad_fn is not None and v.grad_fn._fn is StaleView):
                nv = StaleView.apply(replay_view(v._view_fn, root), _multi_view_error(
                    v, "its base or another view of its base has been modified inplace"))
                v.grad_fn, v._output_nr, v._rg = nv.grad_fn, nv._output_nr, nv._rg


def _refresh_views(base, skip=None):
    """After a recorded in-place op rewrote ``base``, give its other live views (function._register_view) nodes
    that read the new values: PyTorch regenerates a view's grad_fn when its base's version moved. Without this
    a view made before the op differentiated through the old values (a wrong gradient, silently)."""
    refs = base.__dict__.get("_views")
    if not refs:
        return
    live = []
    for r in refs[:]:  # (the replays below register their own views: temporaries, left out of the list)
        v = r()
        if v is None:
            continue
        live.append(r)
        if v is not skip and v._view_fn is not None:
            nv = replay_view(v._view_fn, base)
            if v._multi_view is not None:  # PyTorch will not regenerate it: a gradient through it raises
                nv = StaleView.apply(nv, _multi_view_error(v, "its base or another view of its base has been "
                                                              "modified inplace"))
            v.grad_fn, v._output_nr, v._rg = nv.grad_fn, nv._output_nr, nv._rg
    base.__dict__["_views"] = live


# --- the registry ------------------------------------------------------------------------------------
REGISTRY = {}  # method name -> the module whose table provides it


def _inplace_method(name, fn):
    # x.name_(*args): the generic in-place op (autograd included) around the out-of-place function
    def method(self, *args, **kwargs):
        return self._inplace(name, lambda x, *a: fn(x, *a, **kwargs), *args)

    method.__name__ = name
    method.__qualname__ = "Tensor." + name
    method.__doc__ = f"In-place version of {name[:-1]}."
    fast = getattr(fn, "_wb_inplace", None)  # (ufunc, dtype kinds): an op the ufunc can run into x's array
    if fast is not None:
        return _inplace_operator(name, *fast, method, "alpha" in inspect.signature(fn).parameters)
    make = getattr(fn, "_wb_inplace_method", None)  # an op family's own fast in-place method (clamp_, relu_)
    return method if make is None else make(name, method)


def _register(provider, methods, inplace=()):
    table = dict(methods)
    for name in inplace:
        table[name + "_"] = _inplace_method(name + "_", methods.get(name) or getattr(provider, name))
    for name, fn in table.items():
        if name in REGISTRY:
            raise RuntimeError(f"Tensor.{name} is registered by both {REGISTRY[name]} and {provider.__name__}: "
                               "one op family must own it")
        REGISTRY[name] = provider.__name__
        setattr(Tensor, name, _ops.numpy_names(fn))  # x.sum(1, keepdims=True), as PyTorch's parser takes it


def _own_methods(cls):
    out = {}
    for name, v in vars(cls).items():
        if name in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            continue
        if callable(v) and hasattr(v, "__qualname__"):
            v.__qualname__ = "Tensor." + name
        out[name] = v
    return out


_register(sys.modules[__name__], _own_methods(_Methods))
for _family in _ops.MODULES:
    _register(_family, getattr(_family, "METHODS", {}), getattr(_family, "INPLACE", ()))
_register(_creation, _creation.METHODS)
_register(_random, _random.METHODS)
_register(_reductions, _reductions.METHODS)
SUBCLASS_HOOKS.append(_reductions.register_pickler)
_reductions.register_pickler(Tensor)
del _family
