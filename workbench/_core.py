"""The Tensor core: an array (numpy or cupy) with its slots, construction, version box and metadata.

The bottom layer above ``_backend``: it imports nothing else, so autograd and the ops build on it
directly. Everything that needs autograd or an op (operators, math, views, backward, detach, hooks,
in-place writes...) is attached from one registry in ``workbench/tensor.py``, fed by the op families'
tables; ``workbench.tensor.Tensor`` (this class) is complete once ``workbench.tensor`` is imported.
"""
import warnings

from . import _backend
from ._backend import dtypes as _dt

_FROM_NP = _dt._FROM_NP
_new = object.__new__
_ndarray = _backend.ndarray
_np_generic = _backend.numpy.generic
_INFERENCE_BOX = [0, None]  # the version box every inference tensor shares (its writes are refused)
SUBCLASS_HOOKS = []  # hook(cls) for each Tensor subclass defined (nn.Parameter, users' subclasses)


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
    # a view returned with others by one call (split, chunk, unbind) while it recorded, or a view of one:
    # (PyTorch's op name, output index), or True for a view of such a view (Tensor._check_inplace)
    _multi_view = None
    _multi_base = False  # a base whose views include such views (Tensor._bump makes them stale)
    _nograd_view = False  # a view made under no_grad of a tensor that requires grad: no in-place op in grad mode
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

    def is_pinned(self):
        """Whether the tensor lives in page-locked host memory (``pin_memory()``)."""
        return bool(getattr(self, "_pinned", False))

    @property
    def _version(self):
        return self._vbox[0]

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

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

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self) if not spec else object.__format__(self, spec)

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

    def xp_copy(self):
        """A copy of the array (same device), for code that must not alias the tensor's memory."""
        return _backend.xp_of(self._data).array(self._data, copy=True)

    def __init_subclass__(cls, **kwargs):
        # registered per class (e.g. the multiprocessing pickler's table is keyed by exact type)
        super().__init_subclass__(**kwargs)
        for hook in SUBCLASS_HOOKS:
            hook(cls)


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
