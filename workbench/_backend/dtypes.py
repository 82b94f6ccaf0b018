"""dtypes named as PyTorch names them, and PyTorch's type-promotion rules.

NumPy's own promotion differs from PyTorch's (int64 + float32 is float64 in NumPy, float32 in PyTorch;
int / int is float64 in NumPy, the default dtype in PyTorch), so promotion is decided here and the
array library only ever sees operands of the result dtype.
"""
import numpy as np


_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, e.g. ``workbench.float32``.

    >>> import workbench as wb
    >>> wb.float32.is_floating_point, wb.float32.itemsize
    (True, 4)
    """

    __slots__ = ("name", "_np", "itemsize", "category", "is_signed", "_aliases", "_scalar_name", "_legacy_names")

    def __init__(self, name, scalar_name, np_dtype, category, aliases=(), itemsize=None):
        self.name = name
        # PyTorch's ScalarType name ("Float"): its error messages spell dtypes so, and its legacy tensor
        # types are named after it: x.type() is "torch.FloatTensor" on the CPU, "torch.cuda.FloatTensor"
        self._scalar_name = scalar_name
        self._legacy_names = {"cpu": f"workbench.{scalar_name}Tensor", "cuda": f"workbench.cuda.{scalar_name}Tensor"}
        self._np = None if np_dtype is None else np.dtype(np_dtype)
        self.itemsize = itemsize or self._np.itemsize
        self.category = category
        self.is_signed = category != _BOOL and name not in ("uint8", "uint16", "uint32", "uint64")
        self._aliases = aliases

    @property
    def np(self):
        """The NumPy dtype that holds this type (bfloat16's comes from ml_dtypes, loaded on first use)."""
        if self._np is None:
            _load_bfloat16()
        return self._np

    @property
    def is_floating_point(self):
        return self.category == _FLOAT

    @property
    def is_complex(self):
        return self.category == _COMPLEX

    def to_real(self):
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self):
        return complex128 if self is float64 else complex64 if self.category == _FLOAT else self

    def __repr__(self):
        return "workbench." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _BY_NAME[name]


bool_ = dtype("bool", "Bool", np.bool_, _BOOL)
uint8 = dtype("uint8", "Byte", np.uint8, _INT)
int8 = dtype("int8", "Char", np.int8, _INT)
int16 = dtype("int16", "Short", np.int16, _INT, ("short",))
int32 = dtype("int32", "Int", np.int32, _INT, ("int",))
int64 = dtype("int64", "Long", np.int64, _INT, ("long",))
float16 = dtype("float16", "Half", np.float16, _FLOAT, ("half",))
float32 = dtype("float32", "Float", np.float32, _FLOAT, ("float",))
float64 = dtype("float64", "Double", np.float64, _FLOAT, ("double",))
complex64 = dtype("complex64", "ComplexFloat", np.complex64, _COMPLEX, ("cfloat",))
complex128 = dtype("complex128", "ComplexDouble", np.complex128, _COMPLEX, ("cdouble",))
ALL = [bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128]
# ml_dtypes takes ~0.6 s to import: only on first use
bfloat16 = dtype("bfloat16", "BFloat16", None, _FLOAT, itemsize=2)
ALL.append(bfloat16)

_BY_NAME = {}
for _d in ALL:
    _BY_NAME[_d.name] = _d
    for _a in _d._aliases:
        _BY_NAME[_a] = _d
# "FloatTensor" -> float32: x.type("torch.FloatTensor"), Module.type(...)
_BY_LEGACY_NAME = {d._scalar_name + "Tensor": d for d in ALL}
_FROM_NP = {d._np: d for d in ALL if d._np is not None}
_FROM_NP[np.dtype(np.uint16)] = int32  # no uint16/32/64 in the public set: widen on the way in
_FROM_NP[np.dtype(np.uint32)] = int64
_FROM_NP[np.dtype(np.uint64)] = int64


def _load_bfloat16():
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        raise TypeError("bfloat16 on the CPU needs the ml_dtypes package (pip install ml_dtypes)") from None
    bfloat16._np = np.dtype(ml_dtypes.bfloat16)
    _FROM_NP[bfloat16._np] = bfloat16


def is_half(npd):
    """Whether NumPy dtype npd is a 16-bit float (float16, bfloat16): PyTorch computes reductions, softmax and
    normalizations of those in float32 and rounds the result once."""
    return npd.itemsize == 2 and npd.kind in "fV"


def no_kernel(kernel, dt, hint):
    """PyTorch's NotImplementedError for an op with no kernel for workbench dtype ``dt`` (``"arange_cpu" not
    implemented for 'Bool'``), followed by ``hint``: what to do instead."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{dt._scalar_name}\': {hint}')


def from_numpy_dtype(npd):
    """The workbench dtype of a NumPy/CuPy array dtype (TypeError for unsupported ones)."""
    try:
        return _FROM_NP[npd]
    except KeyError:
        if getattr(npd, "name", "") == "bfloat16" and bfloat16._np is None:
            _load_bfloat16()
            return _FROM_NP[npd]
        try:
            return _FROM_NP[np.dtype(npd)]
        except (KeyError, TypeError):
            raise TypeError(
                f"can't convert array of dtype {npd}: the only supported types are "
                + ", ".join(d.name for d in ALL)
            ) from None


def to_dtype(d):
    """Accept a workbench dtype, a NumPy dtype or type, a name string, or a Python type."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return get_default_dtype()
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return get_default_dtype().to_complex()
    if isinstance(d, str) and d.replace("torch.", "").replace("workbench.", "") in _BY_NAME:
        return _BY_NAME[d.replace("torch.", "").replace("workbench.", "")]
    if type(d).__name__ == "dtype" and getattr(type(d), "__module__", "").startswith("torch"):
        return _BY_NAME[str(d).replace("torch.", "")]
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"{d!r} is not a dtype workbench knows; use e.g. workbench.float32") from None


_default = [float32]


def get_default_dtype():
    """The dtype of floating-point tensors made from Python floats (float32 unless set).

    >>> import workbench as wb
    >>> wb.get_default_dtype()
    workbench.float32
    """
    return _default[0]


def set_default_dtype(d):
    """Set the default floating-point dtype (float32 or float64, as in PyTorch).

    >>> import workbench as wb
    >>> wb.set_default_dtype(wb.float64); wb.tensor([1.0]).dtype
    workbench.float64
    >>> wb.set_default_dtype(wb.float32)
    """
    d = to_dtype(d)
    if d not in (float16, float32, float64) and d is not bfloat16:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def _promote_same_category(a, b):
    if a is b:
        return a
    if a.category == _FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


_PROMOTE = {}


def promote_types(a, b):
    """PyTorch's promote_types: the smallest dtype both a and b convert to safely.

    >>> import workbench as wb
    >>> wb.promote_types(wb.int64, wb.float32)
    workbench.float32
    """
    key = (a, b)
    r = _PROMOTE.get(key)
    if r is None:
        if a.category == b.category:
            r = _promote_same_category(a, b)
        else:
            hi, lo = (a, b) if a.category > b.category else (b, a)
            if hi.category == _COMPLEX and lo is float64:
                r = complex128
            elif hi.category == _COMPLEX:
                r = hi
            else:
                r = hi
        _PROMOTE[key] = r
    return r


def _combine(higher, lower):
    # PyTorch's combine_categories: a lower-priority operand (0-dim tensor, Python scalar) only
    # changes the result when it is of a higher category (bool < int < float < complex).
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
        return higher
    if higher is bool_ or lower.category == _FLOAT:
        return promote_types(higher, lower)
    return higher


def as_number(x):
    """The Python number PyTorch reads a NumPy scalar operand as: a NumPy integer as an int, a NumPy bool
    as a float (PyTorch's argument parser takes np.bool_, which is no Python bool, through ``float``), a
    NumPy float as a float, a NumPy complex as a complex (PyTorch keeps only the real part of a complex64,
    a silent loss of data not copied here). Anything else comes back as it is.

    >>> as_number(np.True_), as_number(np.int8(3)), as_number(np.float32(0.5))
    (1.0, 3, 0.5)
    """
    if isinstance(x, np.generic):
        k = x.dtype.kind
        if k in "iu":
            return int(x)
        if k == "c":
            return complex(x)
        if k in "bfV":  # V: ml_dtypes' bfloat16
            return float(x)
    return x


def scalar_dtype(x):
    """The dtype PyTorch gives a scalar operand ('wrapped number'): bool, int64, the default float or its
    complex; a NumPy scalar as the number ``as_number`` reads it as."""
    x = as_number(x)
    t = type(x)
    if t is bool:
        return bool_
    if t is int or isinstance(x, int):
        return int64
    if t is float or isinstance(x, float):
        return get_default_dtype()
    if t is complex or isinstance(x, complex):
        return get_default_dtype().to_complex()
    raise TypeError(f"unsupported scalar type {t.__name__}")


def result_type_of(dims, zero_dims, scalars):
    """PyTorch's result_type from the dtypes of dimensioned tensors, 0-dim tensors and scalars."""
    d = z = s = None
    for x in dims:
        d = x if d is None else promote_types(d, x)
    for x in zero_dims:
        z = x if z is None else promote_types(z, x)
    for x in scalars:
        s = x if s is None else promote_types(s, x)
    return _combine(d, _combine(z, s))
