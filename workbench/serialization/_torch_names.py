"""The globals PyTorch's pickles name (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.Size``, ``torch.float16``...) and the workbench objects that stand for them, so that a file
``torch.save`` wrote loads without PyTorch installed.

``NAMES`` maps each dotted name to its stand-in. Names PyTorch allows but workbench can't represent
(quantized, sparse, nested, meta tensors; dtypes workbench lacks) map to functions or types that raise a
``CheckpointError`` saying so.
"""
from collections import OrderedDict

import workbench

from .. import _backend, nn
from .._backend import dtypes as _dt
from ..creation import tensor
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor
from ._common import CheckpointError, to_device

np = _backend.numpy

# PyTorch's legacy storage classes, named as the legacy tensor types ("FloatStorage"), by the dtype of their
# elements (None: no workbench dtype)
_STORAGE_DTYPES = {d._scalar_name + "Storage": d.name for d in _dt.ALL}
_STORAGE_DTYPES.update({"UntypedStorage": "uint8", "QUInt8Storage": None, "QInt8Storage": None, "QInt32Storage": None,
                        "QUInt4x2Storage": None, "QUInt2x4Storage": None})
STORAGE_NAME = {v: k for k, v in _STORAGE_DTYPES.items() if v is not None and k != "UntypedStorage"}

# PyTorch dtypes workbench has no counterpart for (a checkpoint naming one can't be loaded)
_MISSING_DTYPES = ["complex32", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                   "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2",
                   "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16"]
_MISSING_DTYPES += [f"uint{i}" for i in range(1, 8)] + [f"int{i}" for i in range(1, 8)]


class StorageType:
    """Stands for one of PyTorch's storage classes (``torch.FloatStorage``) in a pickle's persistent ids."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    @property
    def dtype(self):
        name = _STORAGE_DTYPES[self.name]
        if name is None:
            raise CheckpointError(f"this checkpoint holds a quantized PyTorch tensor (torch.{self.name}), which "
                                  "workbench can't represent: dequantize it in PyTorch (tensor.dequantize()) and "
                                  "save again")
        return _dt._by_name(name)

    def __repr__(self):
        return f"torch.{self.name}"


class Storage:
    """A storage read from a PyTorch file: its bytes on the host (a uint8 array), its dtype, and the device
    ``map_location`` sends its tensors to (on the CPU they are views of the bytes, so views share again)."""

    __slots__ = ("buf", "dtype", "target")

    def __init__(self, buf, dtype, target):
        self.buf, self.dtype, self.target = buf, dtype, target

    def view(self, offset_bytes, nbytes):
        """A storage over part of this one's bytes (the legacy format's storage views)."""
        return Storage(self.buf[offset_bytes:offset_bytes + nbytes], self.dtype, self.target)

    def tensor(self, offset, size, stride, dtype=None):
        dt = dtype or self.dtype
        try:
            offset, size, stride = int(offset), tuple(int(n) for n in size), tuple(int(s) for s in stride)
        except (TypeError, ValueError):
            raise CheckpointError(f"checkpoint is corrupted: a tensor has offset {offset!r}, size {size!r}, "
                                  f"stride {stride!r}") from None
        count = len(self.buf) // dt.itemsize
        if len(size) != len(stride) or offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
            raise CheckpointError(f"checkpoint is corrupted: a tensor has offset {offset}, size {list(size)} and "
                                  f"stride {list(stride)}")
        if 0 in size:
            arr = np.empty(size, dt.np)
        else:
            last = offset + sum((n - 1) * s for n, s in zip(size, stride))
            if last >= count:
                raise CheckpointError(f"checkpoint is corrupted: a tensor of size {list(size)}, stride {list(stride)} "
                                      f"at offset {offset} reaches element {last} of a {count}-element {dt.name} "
                                      "storage")
            arr = np.ndarray(size, dt.np, buffer=self.buf, offset=offset * dt.itemsize,
                             strides=tuple(s * dt.itemsize for s in stride))
        return Tensor._make(to_device(arr, self.target))


def _storage(storage, what):
    if not isinstance(storage, Storage):
        raise CheckpointError(f"checkpoint is corrupted: {what} got {type(storage).__name__} where a storage "
                              "belongs")
    return storage


def _grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _storage(storage, "_rebuild_tensor").tensor(storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    return _grad(_storage(storage, "_rebuild_tensor_v2").tensor(storage_offset, size, stride), requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    if not isinstance(dtype, _dt.dtype):
        raise CheckpointError(f"checkpoint is corrupted: _rebuild_tensor_v3 got dtype {dtype!r}")
    return _grad(_storage(storage, "_rebuild_tensor_v3").tensor(storage_offset, size, stride, dtype), requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, Tensor):
        raise CheckpointError(f"checkpoint is corrupted: a Parameter holds {type(data).__name__}, not a tensor")
    return Parameter(data, requires_grad)


def _set_state(obj, state):
    """PyTorch's ``_set_obj_state``: a dict of attributes, or (dict, slots) as pickle's BUILD takes it."""
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    else:
        slots = None
    for k, v in (state or {}).items():
        setattr(obj, k, v)
    for k, v in (slots or {}).items():
        setattr(obj, k, v)
    return obj


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor rebuilt by ``func(*args)``, then given its attributes (PyTorch's path for tensors with state)."""
    ret = func(*args)
    if type(ret) is not new_type and new_type is not Tensor:
        name = getattr(new_type, "__qualname__", repr(new_type))
        raise CheckpointError(f"this checkpoint holds a tensor of class {name}, a subclass workbench does not "
                              "rebuild: save plain tensors")
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
    else:
        _set_state(ret, state)
    return ret


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    return _grad(data.to(device=device, dtype=dtype), requires_grad)


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    return _grad(tensor(data, dtype=dtype, device=device), requires_grad)


def _unsupported(kind, advice):
    def rebuild(*args, **kwargs):
        raise CheckpointError(f"this checkpoint holds {kind}, which workbench can't represent: {advice}")

    rebuild.__name__ = f"unsupported_{kind.replace(' ', '_')}"
    return rebuild


def _device(*args):
    return _backend.device(*args)


def _get_layout(name):
    if name != "torch.strided":
        raise CheckpointError(f"this checkpoint holds a tensor with layout {name}: workbench has only strided "
                              "(dense) tensors; convert it with .to_dense() in PyTorch and save again")
    return name


class _MissingDtype:
    def __init__(self, name):
        self.name = name


def names():
    """The table: PyTorch's dotted global names -> what workbench builds for them."""
    table = {
        "collections.OrderedDict": OrderedDict,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": _device,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for f in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
              _rebuild_parameter_with_state, _rebuild_device_tensor_from_cpu_tensor,
              _rebuild_device_tensor_from_numpy):
        table[f"torch._utils.{f.__name__}"] = f
    for name, kind, advice in [
            ("_rebuild_qtensor", "a quantized tensor", "dequantize it in PyTorch (tensor.dequantize()) and save again"),
            ("_rebuild_sparse_tensor", "a sparse tensor", "convert it with .to_dense() in PyTorch and save again"),
            ("_rebuild_nested_tensor", "a nested tensor", "save its components as a list of tensors"),
            ("_rebuild_meta_tensor_no_storage", "a meta tensor (shape only, no data)",
             "materialize it in PyTorch before saving"),
            ("_rebuild_wrapper_subclass", "a tensor wrapper subclass (FakeTensor, DTensor...)",
             "save plain tensors")]:
        table[f"torch._utils.{name}"] = _unsupported(kind, advice)
    for d in _dt.ALL:
        table[f"torch.{d.name}"] = d
    for name in _MISSING_DTYPES:
        table[f"torch.{name}"] = _MissingDtype(name)
    for name in _STORAGE_DTYPES:
        table[f"torch.{name}"] = table[f"torch.cuda.{name}"] = StorageType(name)
    table["torch.storage.UntypedStorage"] = StorageType("UntypedStorage")
    return table


_NN_ALIASES = {"NonDynamicallyQuantizableLinear": "Linear"}  # MultiheadAttention's out_proj: a plain Linear


def counterpart(full_path):
    """The workbench object standing for a PyTorch ``nn`` module class (``torch.nn.modules.linear.Linear`` ->
    ``workbench.nn.Linear``) or function (``torch.nn.functional.relu``, ``torch.tanh``), or None. A whole
    module pickled by PyTorch then loads as workbench's: its state (attributes, ``_parameters``,
    ``_buffers``, ``_modules``) uses the same names."""
    if full_path == "torch._C._VariableFunctionsClass":  # torch.tanh & co. pickle as getattr(this, "tanh")
        return workbench
    module, _, name = full_path.rpartition(".")
    if module == "torch.nn" or module.startswith("torch.nn.modules"):
        cls = getattr(nn, _NN_ALIASES.get(name, name), None)
        return cls if isinstance(cls, type) and issubclass(cls, nn.Module) else None
    owner = {"torch.nn.functional": nn.functional, "torch._C._nn": nn.functional, "torch": workbench,
             "torch._C._VariableFunctions": workbench}.get(module)  # where PyTorch's functions pickle from
    fn = getattr(owner, name, None) if owner is not None else None
    return fn if callable(fn) and not isinstance(fn, type) else None


def missing_dtype_message(obj):
    """The error for a name that stands for a PyTorch dtype workbench lacks (None for any other object)."""
    if isinstance(obj, _MissingDtype):
        return (f"this checkpoint names the PyTorch dtype torch.{obj.name}, which workbench has no counterpart "
                f"for (workbench has {', '.join(d.name for d in _dt.ALL)}); convert it in PyTorch and save again")
    return None
