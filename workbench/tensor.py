"""The Tensor: an array (numpy or cupy) plus what autograd needs to know about it.

Operators and methods are bound by ``workbench.ops`` (each op lives with its backward there); this
file holds the tensor's own state: storage and views, devices and dtypes, autograd metadata, hooks,
in-place bookkeeping and interop.
"""
import warnings

from . import _backend
from ._backend import dtypes as _dt
from . import autograd as _autograd
from .autograd import engine as _engine
from .autograd import function as _function
from .autograd import graph as _graph
from .autograd.grad_mode import STATE

_FROM_NP = _dt._FROM_NP
_new = object.__new__
_ndarray = _backend.ndarray
_np_generic = _backend.numpy.generic


class Size(tuple):
    """A tensor's shape: a tuple with ``numel()``.

    >>> import workbench as wb
    >>> wb.zeros(2, 3).shape
    workbench.Size([2, 3])
    """

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"workbench.Size({list(self)})"

    def __getitem__(self, k):
        r = tuple.__getitem__(self, k)
        return Size(r) if isinstance(k, slice) else r


class Tensor:
    """A multi-dimensional array on a device, recorded on the autograd tape when it requires grad.

    >>> import workbench as wb
    >>> x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([[2., 4.],
            [6., 8.]])
    """

    # slots for what every tensor sets; rarely used state falls back to the class-level defaults below
    # and lives in the instance __dict__ only once set (keeps Tensor._make, run once per op, short)
    # _cut is set (never initialised, read with getattr) only where the graph was cut: detach(), or an
    # op run under no_grad on inputs that require grad; the 'does not require grad' error reads it
    __slots__ = ("_data", "_rg", "grad_fn", "_output_nr", "_vbox", "_base", "_cut", "__dict__", "__weakref__")
    __array_priority__ = 1000  # numpy defers to our reflected operators
    _grad = None
    _acc = None  # the AccumulateGrad node of a leaf that requires grad
    _post_acc_hooks = None
    _retains_grad = False
    _view_fn = None  # how this view is replayed from its base: (Function, other args, parent view_fn)

    def __init__(self, *args, device=None):
        # the legacy constructor: Tensor(data) or Tensor(*sizes) makes a default-dtype tensor
        from .creation import _legacy_construct

        t = _legacy_construct(args, device)
        Tensor._init_from(self, t._data)

    @staticmethod
    def _init_from(self, data, requires_grad=False, grad_fn=None, output_nr=0, vbox=None, base=None):
        self._data = data
        self._rg = requires_grad
        self.grad_fn = grad_fn
        self._output_nr = output_nr
        self._vbox = [0, None] if vbox is None else vbox
        self._base = base

    @staticmethod
    def _make(data, requires_grad=False, grad_fn=None, output_nr=0, vbox=None, base=None):
        """Wrap an array (no copy): the one constructor every op result goes through."""
        if data.__class__ is not _ndarray and isinstance(data, _np_generic):
            data = _backend.numpy.asarray(data)  # NumPy ufuncs on 0-d arrays return scalars
        t = _new(Tensor)
        t._data = data
        t._rg = requires_grad
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._vbox = [0, None] if vbox is None else vbox
        t._base = base
        return t

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

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or its length along ``dim``.  >>> wb.zeros(2, 3).size(-1)  ->  3"""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._wrap_dim(dim)]

    @property
    def dtype(self):
        return _FROM_NP[self._data.dtype]

    @property
    def device(self):
        return _backend.device_of(self._data)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return int(self._data.nbytes)

    def _wrap_dim(self, dim, ndim=None):
        n = self._data.ndim if ndim is None else ndim
        lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
        if dim < lo or dim > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
        return dim % n if n else 0

    def stride(self, dim=None):
        """Strides in elements, as in PyTorch (NumPy's are in bytes)."""
        it = self._data.itemsize
        st = tuple(s // it for s in self._data.strides)
        return st if dim is None else st[self._wrap_dim(dim)]

    def data_ptr(self):
        return _backend.data_ptr(self._data)

    def storage_offset(self):
        root = self._base._data if self._base is not None else self._data
        return (_backend.data_ptr(self._data) - _backend.data_ptr(root)) // self._data.itemsize

    def untyped_storage(self):
        root = self._base if self._base is not None else self
        return _Storage(root)

    def is_contiguous(self, memory_format=None):
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self):
        return self.dtype.category == _dt._FLOAT

    def is_complex(self):
        return self.dtype.category == _dt._COMPLEX

    def is_inference(self):
        return self._vbox is _INFERENCE_BOX or getattr(self, "_inference", False)

    def is_shared(self):
        root = self._base if self._base is not None else self
        return getattr(root, "_shm", None) is not None or self.device.type == "cuda"

    def share_memory_(self):
        """Move the storage into shared memory in place (see workbench.multiprocessing); returns self.

        >>> import workbench as wb
        >>> wb.zeros(2).share_memory_().is_shared()
        True
        """
        from .multiprocessing.reductions import share_memory_

        return share_memory_(self)

    def is_pinned(self):
        """Whether the tensor lives in page-locked host memory (``pin_memory()``)."""
        return bool(getattr(self, "_pinned", False))

    def pin_memory(self):
        """A copy in page-locked host memory, which ``.to("cuda", non_blocking=True)`` copies asynchronously;
        self if already pinned. Needs CUDA (RuntimeError otherwise, as PyTorch)."""
        if self._data.__class__ is not _ndarray:
            raise RuntimeError(f"cannot pin a {self.device} tensor: only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        out = self.clone() if self._rg else Tensor._make(self._data)  # clone: the copy stays on the tape
        out._data = _backend.pinned(self._data)
        out._pinned = True
        return out

    @property
    def _version(self):
        return self._vbox[0]

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} elements is ambiguous; "
                               "use .any() or .all()")
        return bool(self._data.reshape(()).item())

    def __index__(self):
        if self._data.size != 1 or self.dtype.category not in (_dt._INT, _dt._BOOL):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()).item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __complex__(self):
        return complex(self.item())

    def __repr__(self):
        from ._format import format_tensor

        return format_tensor(self)

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self) if not spec else object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        from .multiprocessing.reductions import reduce_tensor

        return reduce_tensor(self)

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

    def __array__(self, dtype=None, copy=None):
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        d = self._data
        return d if dtype is None else d.astype(dtype, copy=False)

    def __dlpack__(self, stream=None, **kwargs):
        if self._rg:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}), **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # --- autograd state ------------------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set whether autograd records ops on this leaf tensor; returns self.

        >>> import workbench as wb
        >>> wb.zeros(2).requires_grad_().requires_grad
        True
        """
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad and self.dtype.category < _dt._FLOAT:
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients (got {self.dtype})"
            )
        self._rg = requires_grad
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                "attribute won't be populated during autograd.backward(). If you indeed want the .grad field to "
                "be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access "
                "the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. (This tensor is the "
                f"output of {self.grad_fn.name()}" + (f" in module '{self.grad_fn.scope}'" if self.grad_fn.scope
                                                      else "") + ".)",
                UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                                   f"vs the tensor's {list(self.shape)}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: {value.dtype} vs {self.dtype}")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: {value.device} "
                                   f"vs {self.device}")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    @property
    def output_nr(self):
        return self._output_nr

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
        import weakref

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
        _autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # --- in-place machinery --------------------------------------------------------------------
    def _check_inplace(self, opname):
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

    def _bump(self, opname):
        box = self._vbox
        box[0] += 1
        box[1] = (opname, _graph.SCOPE.get(), _graph.user_site(3))

    def _inplace(self, opname, fn, *args):
        """Make ``self`` hold ``fn(self, *args)``: the generic in-place op, autograd included."""
        self._check_inplace(opname)
        if not STATE.enabled or not (self._rg or any(isinstance(a, Tensor) and a._rg for a in args)):
            from .autograd.grad_mode import no_grad

            with no_grad():
                r = fn(self, *args)
            self._write(r, opname)
            self._bump(opname)
            return self
        if self._base is not None and (self._base._rg or self._rg) and self._view_fn is not None:
            return _view_inplace(self, opname, fn, args)
        old = Tensor._make(self._data, self._rg, self.grad_fn, self._output_nr, self._vbox, self._base)
        r = fn(old, *args)
        node = r.grad_fn
        if node is not None and node._saved:
            node._saved = _detach_saved(node._saved, old)
        self._write(r, opname)
        self.grad_fn = node
        self._output_nr = r._output_nr
        self._rg = r._rg
        self._bump(opname)
        return self

    def _write(self, r, opname):
        rd = r._data
        if rd.dtype != self._data.dtype:
            if _dt.promote_types(r.dtype, self.dtype) != self.dtype and not (
                    r.dtype.category <= self.dtype.category):
                raise RuntimeError(f"result type {r.dtype.name} can't be cast to the desired output type "
                                   f"{self.dtype.name} (in {opname})")
        if rd.shape != self._data.shape:
            try:
                self._data[...] = rd
            except ValueError:
                raise RuntimeError(
                    f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(rd.shape)} "
                    f"(in {opname})") from None
            return
        if rd is not self._data:
            self._data[...] = rd


def _detach_saved(saved, old):
    # the node saved the value being overwritten: give it its own copy, with its own version box
    out = []
    for entry in saved:
        t = entry[0]
        if t is old:
            old._data = old.xp_copy()
            old._vbox = [0, None]
            entry = (old, old._vbox, 0)
        out.append(entry)
    return tuple(out)


def _xp_copy(self):
    return _backend.xp_of(self._data).array(self._data, copy=True)


Tensor.xp_copy = _xp_copy


def replay_view(vf, base):
    """Apply a recorded chain of view ops ``(cls, rest_args, parent)`` to ``base``."""
    cls, rest, parent = vf
    return cls.apply(base if parent is None else replay_view(parent, base), *rest)


def _view_inplace(view, opname, fn, args):
    """In-place op on a view of a tensor that requires grad: rewrite the base (PyTorch's CopySlices)."""
    from .ops.views import _scatter_view

    base = view._base
    base_old = Tensor._make(base._data, base._rg, base.grad_fn, base._output_nr, base._vbox, None)
    old_view = replay_view(view._view_fn, base_old)
    value = fn(old_view, *args)
    op_node = value.grad_fn
    if op_node is not None and op_node._saved:  # the op saved the view's old value: keep a copy of it
        op_node._saved = _detach_saved(op_node._saved, old_view)
    new_base = _scatter_view(base_old, value, view._view_fn)
    node = new_base.grad_fn
    base._data[...] = new_base._data
    base.grad_fn = node
    base._output_nr = new_base._output_nr
    base._rg = True
    view._bump(opname)
    # the view now reads from the rewritten base
    new_view = replay_view(view._view_fn, base)
    view.grad_fn = new_view.grad_fn
    view._output_nr = new_view._output_nr
    view._rg = True
    return view


class _Storage:
    """What ``untyped_storage()`` returns: enough to compare storages and read their size."""

    def __init__(self, root):
        self._root = root

    def data_ptr(self):
        return self._root.data_ptr()

    def nbytes(self):
        return self._root.nbytes

    def size(self):
        return self._root.nbytes


_INFERENCE_BOX = [0, None]

_function._Tensor = _engine._Tensor = Tensor
_function._make = _engine._make = Tensor._make
_function._INFERENCE_BOX[0] = _INFERENCE_BOX
