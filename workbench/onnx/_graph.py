"""The ONNX graph being built from a recorded forward pass: value names, initializers and nodes."""
from .. import _backend
from .._backend import dtypes as _dt
from ..tensor import Tensor

np = _backend.numpy


class UnsupportedOperatorError(RuntimeError):
    """An op the model ran has no ONNX translation here (the message names it, its module and source line)."""


class Graph:
    """Collects ONNX nodes; ``onnx`` is the ``onnx`` module (imported by ``export``, an optional dependency).

    Values are named by the object they stand for: a Tensor (by identity) or its raw array, so an op that
    takes another op's result finds the name of the node that made it; a tensor nobody made (a buffer
    computed outside the tape, a constant matrix) becomes an initializer holding its value.
    """

    def __init__(self, onnx, opset):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers = [], []
        self._names = {}  # id(object) -> value name
        self._keep = []  # the objects named, alive while their ids are keys
        self._counter = 0

    def fresh(self, hint):
        self._counter += 1
        return f"{hint}_{self._counter}"

    def bind(self, obj, name):
        """``obj`` (a tensor) is the value ``name`` from now on (also through its raw array)."""
        self._names[id(obj)] = name
        self._keep.append(obj)
        if isinstance(obj, Tensor):
            self._names[id(obj._data)] = name

    def has(self, obj):
        return id(obj) in self._names

    def initializer(self, array, name=None):
        name = name or self.fresh("const")
        arr = np.ascontiguousarray(array)
        if arr.dtype.name == "bfloat16":
            arr = arr.astype(np.float32)
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def value(self, obj, like=None):
        """The value name for an op's argument: a named tensor, or a constant made now (numbers take the
        dtype of ``like``, the op's tensor operand, as PyTorch's type promotion does for Python scalars)."""
        if id(obj) in self._names:
            return self._names[id(obj)]
        if isinstance(obj, Tensor):
            name = self.initializer(_backend.to_device(obj.detach()._data, _backend.CPU))
        elif isinstance(obj, np.ndarray):
            name = self.initializer(obj)
        elif isinstance(obj, (bool, int, float)):
            dtype = np.float32
            if like is not None:
                dtype = like._data.dtype if isinstance(like, Tensor) else like.dtype
                if isinstance(obj, float) and dtype.kind in "biu":
                    dtype = _dt.get_default_dtype().np
            return self.initializer(np.asarray(obj, dtype=dtype))
        else:
            raise UnsupportedOperatorError(f"an op argument of type {type(obj).__name__} can't be a graph value")
        self.bind(obj, name)
        return name

    def ints(self, values):
        """An int64 1-D initializer (shapes, axes, slice bounds)."""
        return self.initializer(np.asarray(list(values), dtype=np.int64))

    def op(self, op_type, inputs, n_out=1, **attrs):
        """Add a node; returns its output name (or the list of them when ``n_out > 1``)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outs, name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def reduce(self, op_type, x, axes, keepdims):
        """A Reduce* node: axes as an input from opset 18 (ReduceSum from 13), an attribute before."""
        if axes is None:
            return self.op(op_type, [x], keepdims=int(keepdims))
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, [x, self.ints(axes)], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))
