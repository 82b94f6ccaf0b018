"""dtype and device conversions, copies, and the in-place basics (copy_, fill_, zero_)."""
import warnings

from .. import _backend
from .._backend import dtypes as _dt
from .._broadcast import broadcast_error, write_through
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import STATE


class ToCopy(Function):
    """Cast and/or move to another device; the gradient goes back the other way."""

    _raw = True
    op_name = "to"

    @staticmethod
    def forward(ctx, x, dtype, device, copy):
        ctx.src = (x.dtype, _backend.device_of(x))
        y = x
        if device is not None and device != ctx.src[1]:
            y = _backend.to_device(y, device)
        if dtype is not None and y.dtype != dtype.np:
            if x.dtype.kind == "c" and dtype.category < _dt._COMPLEX:
                warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                              stacklevel=4)
                y = y.real
            y = y.astype(dtype.np)
        elif copy and y is x:
            y = ctx.xp.array(x, copy=True)
        return y

    @staticmethod
    def backward(ctx, g):
        npd, dev = ctx.src
        gd = _dt.from_numpy_dtype(npd)
        if gd.category < _dt._FLOAT:
            return None, None, None, None
        if g._data.dtype.kind == "c" and gd.category < _dt._COMPLEX:  # real to complex: the real part, silently
            g = g.real
        return ToCopy.apply(g, gd, dev, False), None, None, None


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (_dt.dtype,)) or a in (float, int, bool, complex) or (
                type(a).__name__ == "dtype" and not isinstance(a, str)):
            dtype = a
        elif isinstance(a, (str, _backend.device, int)) and not isinstance(a, bool):
            device = a
        elif isinstance(a, bool):
            pass
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (_dt.to_dtype(dtype) if dtype is not None else None,
            _backend.resolve_device(device) if device is not None else None, copy)


def to(self, *args, **kwargs):
    """Convert dtype and/or move device; returns self when nothing changes.

    >>> import workbench as wb
    >>> wb.tensor([1, 2]).to(wb.float64)
    tensor([1., 2.], dtype=workbench.float64)
    """
    dtype, device, copy = _parse_to(args, dict(kwargs))
    if (dtype is None or dtype.np == self._data.dtype) and (device is None or device == self.device) and not copy:
        return self
    return ToCopy.apply(self, dtype, device, copy)


def _type_target(dtype):
    """The (dtype, device) that ``x.type(dtype)`` converts to: a legacy type class or name says both (device
    None: keep the tensor's), ValueError for a name that is no legacy type.

    >>> import workbench as wb
    >>> _type_target("torch.LongTensor"), _type_target(wb.float16)
    ((workbench.int64, device(type='cpu')), (workbench.float16, None))
    """
    if isinstance(dtype, type) and dtype.__name__ in _dt._BY_LEGACY_NAME:
        dtype = f"{dtype.__module__}.{dtype.__name__}"  # torch.cuda.FloatTensor, wb.FloatTensor
    if not isinstance(dtype, str):
        return _dt.to_dtype(dtype), None
    parts = dtype.split(".")
    dt = _dt._BY_LEGACY_NAME.get(parts[-1])
    if dt is None or parts[0] not in ("torch", "workbench") or parts[1:-1] not in ([], ["cuda"]) or len(parts) < 2:
        raise ValueError(f"invalid type: {dtype!r} (a legacy type name such as 'torch.FloatTensor' or "
                         "'torch.cuda.LongTensor', or a dtype)")
    return dt, _backend.resolve_device("cuda") if len(parts) == 3 else _backend.CPU


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """The legacy type name (``'workbench.FloatTensor'``, ``'workbench.cuda.LongTensor'``), or, given a dtype, a
    legacy type class or such a name, the tensor converted to it (a legacy name also says cpu or cuda).

    >>> import workbench as wb
    >>> x = wb.ones(2)
    >>> x.type(), x.type("torch.DoubleTensor").dtype, x.type(wb.LongTensor).dtype
    ('workbench.FloatTensor', workbench.float64, workbench.int64)
    """
    if dtype is None:
        return self.dtype._legacy_names[self.device.type]
    dt, device = _type_target(dtype)
    return to(self, dt) if device is None else to(self, dt, device=device)


def _caster(dt):
    def cast(self, memory_format=None):
        return to(self, dt)

    cast.__name__ = dt.name
    return cast


def cpu(self, memory_format=None):
    """A copy on the CPU (self if already there)."""
    return to(self, _backend.CPU)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """A copy on a CUDA device (self if already there)."""
    dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
    return to(self, _backend.resolve_device(dev))


class Clone(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.array(x, copy=True)

    @staticmethod
    def backward(ctx, g):
        return g


def clone(input, *, memory_format=None):
    """A copy with its own memory, still on the graph.  >>> wb.tensor([1.]).clone()  ->  tensor([1.])"""
    return Clone.apply(input)


def contiguous(self, memory_format=None):
    """self if C-contiguous, else a contiguous copy."""
    if self._data.flags.c_contiguous:
        return self
    return Contiguous.apply(self)


class Contiguous(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.ascontiguousarray(x)

    @staticmethod
    def backward(ctx, g):
        return g


class CopyFrom(Function):
    """The value of ``src`` broadcast, cast and moved to ``dst``'s shape, dtype and device."""

    _raw = True
    op_name = "copy_"

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_meta = (src.dtype, _backend.device_of(src))
        dev = _backend.device_of(dst)
        s = _backend.to_device(src, dev) if _backend.device_of(src) != dev else src
        out = ctx.xp.empty_like(dst)
        try:
            out[...] = s.astype(dst.dtype, copy=False) if s.dtype != dst.dtype and s.dtype.kind != "c" else s
        except ValueError as e:
            raise broadcast_error(e, (dst, src)) or e from None
        return out

    @staticmethod
    def backward(ctx, g):
        npd, dev = ctx.src_meta
        # dst's old values were overwritten: a zero gradient, not None (PyTorch's zeros_like(grad))
        return g.new_zeros(g.shape), ToCopy.apply(g, _dt.from_numpy_dtype(npd), dev, False)


def copy_(self, src, non_blocking=False):
    """Copy src's values into self, in place (broadcast, cast, moved across devices).

    >>> import workbench as wb
    >>> x = wb.zeros(2); x.copy_(wb.tensor([1., 2.]))
    tensor([1., 2.])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if not STATE.enabled or not (self._rg or src._rg):
        self._check_inplace("copy_")
        s = src._data
        if src.device != self.device:
            s = _backend.to_device(s, self.device)
        try:
            self._data[...] = s
        except ValueError as e:
            if self._data.flags.writeable:
                raise broadcast_error(e, (self, src)) or e from None
            write_through(self._data, s)  # an expanded view
        self._bump("copy_")
        return self
    return self._inplace("copy_", lambda x, s: CopyFrom.apply(x, s), src)


def _copy_recorded(self, src, non_blocking=False):
    # copy_ as an op and a write even where nothing records (what workbench.compile traces)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    return self._inplace("copy_", lambda x, s: CopyFrom.apply(x, s), src)


copy_._wb_general = _copy_recorded


class Fill(Function):
    """Every element set to one Python number, recorded (``fill_`` on a tensor that records): the old values
    get a zero gradient (PyTorch's ``FillBackward2``). The number replaces each element outright; an arithmetic
    form (x * 0 + value) turned inf and NaN elements into NaN."""

    _raw = True
    op_name = "fill"
    node_name = "FillBackward2"  # PyTorch's name: fill_'s Scalar overload
    _fills = True  # one value everywhere: a view's in-place fill may write memory that several elements share

    @staticmethod
    def forward(ctx, x, value):
        out = ctx.xp.empty_like(x)
        out.fill(value)
        return out

    @staticmethod
    def backward(ctx, g):
        return g.new_zeros(g.shape), None  # zeros, not g * 0: a NaN or inf gradient does not pass


class Zero(Fill):
    """``zero_`` on a tensor that records (PyTorch's ``ZeroBackward0``)."""

    op_name = "zero"
    node_name = "ZeroBackward0"


def fill_(self, value):
    """Fill with a value, in place.  >>> wb.zeros(2).fill_(3)  ->  tensor([3., 3.])"""
    return _fill(self, value, Fill)


def _fill(self, value, node, recorded=False):
    """recorded: as an op and a write even where nothing records (what workbench.compile traces)."""
    opname = node.op_name + "_"
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        if recorded or STATE.enabled and (self._rg or value._rg):
            return self._inplace(opname, lambda x, v: CopyFrom.apply(x, v), value)
        value = value.item()
    self._check_inplace(opname)
    if recorded or STATE.enabled and self._rg:
        return self._inplace(opname, lambda x: node.apply(x, value))
    if self._data.flags.writeable:
        self._data.fill(value)
    else:  # an expanded view: one value into every element, as PyTorch
        write_through(self._data, value, fill=True)
    self._bump(opname)
    return self


def zero_(self):
    """Fill with zeros, in place.  >>> wb.ones(2).zero_()  ->  tensor([0., 0.])"""
    return _fill(self, 0, Zero)


fill_._wb_general = lambda self, value: _fill(self, value, Fill, True)
zero_._wb_general = lambda self: _fill(self, 0, Zero, True)


def view_dtype(self, dtype):
    """Reinterpret the bytes as another dtype (no copy)."""
    dt = _dt.to_dtype(dtype)
    return Tensor._make(self._data.view(dt.np), False, None, 0, self._vbox,
                        self._base if self._base is not None else self)




__all__ = ["clone"]
METHODS = {
    "to": to, "cpu": cpu, "cuda": cuda, "clone": clone, "contiguous": contiguous, "copy_": copy_,
    "fill_": fill_, "zero_": zero_, "type": type_,
    "float": _caster(_dt.float32), "double": _caster(_dt.float64), "half": _caster(_dt.float16),
    "bfloat16": _caster(_dt.bfloat16), "int": _caster(_dt.int32), "long": _caster(_dt.int64),
    "short": _caster(_dt.int16), "char": _caster(_dt.int8), "byte": _caster(_dt.uint8),
    "bool": _caster(_dt.bool_), "cfloat": _caster(_dt.complex64), "cdouble": _caster(_dt.complex128),
}
