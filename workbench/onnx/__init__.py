"""``workbench.onnx``: ``export`` a model to an ONNX file that onnxruntime (or any ONNX runtime) runs.

The recorded tape is the graph: ``export`` runs the model once on ``args`` (in eval mode, as
``torch.onnx.export`` does by default), records every op, and translates each into ONNX nodes;
parameters and buffers become initializers named by their path (``fc1.weight``). Covered: Linear, Conv
1-3d and ConvTranspose, MaxPool, AvgPool and adaptive pooling, Upsample, BatchNorm, LayerNorm, GroupNorm
and InstanceNorm, Embedding, the activations (ReLU, LeakyReLU, ELU/SELU/CELU, GELU, SiLU, Sigmoid, Tanh,
Softplus, Hardtanh/ReLU6, Softmax, LogSoftmax), MultiheadAttention and the Transformer layers, RNN, LSTM
and GRU (unrolled over the example's sequence length), and the tensor ops models use between layers
(arithmetic, matmul, reshape/view/flatten, transpose/permute, (un)squeeze, expand, cat/stack, slicing,
sum/mean/max/min, where, clamp). An op without a translation raises ``UnsupportedOperatorError`` naming
it and its module.

``dynamic_axes`` marks input and output dimensions as symbolic; reshapes keep such dimensions by copying
them (ONNX's 0), so a batch dimension stays free. Values the tape did not record (an RNN's zero initial
state, a causal mask) are constants of the example's size. ``onnx`` is an optional dependency (``pip
install onnx``), needed by ``export`` only: ``import workbench.onnx`` always works.

>>> import io, workbench as wb
>>> buf = io.BytesIO()
>>> wb.onnx.export(wb.nn.Linear(3, 2), (wb.randn(1, 3),), buf, input_names=["x"])   # doctest: +SKIP
"""
import contextlib
import enum
import inspect
import os

from .. import _backend
from ..autograd import graph as _autograd_graph
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import _ops
from ._graph import Graph, UnsupportedOperatorError

np = _backend.numpy
__all__ = ["export", "TrainingMode", "is_in_onnx_export", "UnsupportedOperatorError"]

_DEFAULT_OPSET = 18
_EXPORTING = [False]


class TrainingMode(enum.IntEnum):
    """Which mode the model runs in while exporting (PyTorch's enum): EVAL (default), PRESERVE, TRAINING."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export():
    """True while :func:`export` runs the model (code can branch on it, as in PyTorch)."""
    return _EXPORTING[0]


def _flat(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    return []


def _import_onnx():
    try:
        import onnx
        import onnx.helper
        import onnx.numpy_helper
    except ImportError:
        raise ImportError("workbench.onnx.export writes ONNX files with the onnx package, which is not installed: "
                          "pip install onnx (and onnxruntime to run the file), or pip install 'workbench[onnx]'") \
            from None
    return onnx


@contextlib.contextmanager
def _mode(model, training):
    modules = list(model.modules()) if hasattr(model, "modules") else []
    before = [m.training for m in modules]
    if training != TrainingMode.PRESERVE:
        for m in modules:
            m.training = training == TrainingMode.TRAINING
    try:
        yield
    finally:
        for m, t in zip(modules, before):
            m.training = t


def _names(given, n, default):
    names = list(given or [])
    return names + [default(i) for i in range(len(names), n)]


def _dims(spec, name, ndim):
    """dynamic_axes[name] ({axis: "name"} or [axis, ...]) -> {axis: symbolic name}."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(a) % ndim: str(v) for a, v in spec.items()}
    return {int(a) % ndim: f"{name}_dynamic_axes_{int(a) % ndim + 1}" for a in spec}


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamic_axes=None, keep_initializers_as_inputs=False,
           training=TrainingMode.EVAL, do_constant_folding=True, dynamo=False, **unused):
    """Run ``model(*args, **kwargs)`` once, record it, and write it as an ONNX model to ``f`` (a path or a
    binary file object; None returns nothing but still checks the model).

    ``input_names``/``output_names`` name the graph's inputs and outputs (default: the forward's parameter
    names, ``output_<i>``); ``dynamic_axes={"x": {0: "batch"}, ...}`` makes dimensions symbolic;
    ``opset_version`` (default 18, at least 17); ``export_params=False`` leaves parameters out (they become
    graph inputs); ``training`` chooses the mode the model runs in (EVAL by default). The other
    arguments of ``torch.onnx.export`` (its dynamo exporter's options) are accepted and have no effect.

    >>> import io, workbench as wb
    >>> buf = io.BytesIO()
    >>> wb.onnx.export(wb.nn.Linear(3, 2), (wb.randn(4, 3),), buf, dynamic_axes={"input": {0: "batch"}})  # doctest: +SKIP
    """
    onnx = _import_onnx()
    opset = _DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not 17 <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(f"workbench.onnx.export: opset_version {opset} is not supported: use 17 to "
                         f"{onnx.defs.onnx_opset_version()} (LayerNormalization needs 17)")
    if isinstance(args, Tensor) or not isinstance(args, tuple):
        args = (args,)
    if args and isinstance(args[-1], dict) and kwargs is None:  # PyTorch's (x, {"kw": v}) form
        *args, kwargs = args
        args = tuple(args)
    kwargs = kwargs or {}
    inputs = [t for t in _flat(list(args)) + _flat(kwargs)]
    # every float input requires grad while recording, so that ops on the inputs alone are on the tape too
    traced = {id(t): (t.detach().requires_grad_(True) if t.is_floating_point() else t) for t in inputs}

    def swap(x):
        if isinstance(x, Tensor):
            return traced[id(x)]
        if isinstance(x, (list, tuple)):
            return type(x)(swap(v) for v in x)
        if isinstance(x, dict):
            return {k: swap(v) for k, v in x.items()}
        return x

    records = []
    _EXPORTING[0] = True
    try:
        with _mode(model, training), _autograd_graph.add_listener(lambda n, a, r: records.append((n, a, r))):
            out = model(*swap(args), **swap(kwargs))
    finally:
        _EXPORTING[0] = False
    outputs = _flat(out)
    g = Graph(onnx, opset)
    try:
        sig = list(inspect.signature(model.forward if hasattr(model, "forward") else model).parameters)
    except (TypeError, ValueError):
        sig = []
    in_names = _names(input_names, len(inputs), lambda i: sig[i] if i < len(sig) and len(sig) == len(inputs)
                      else f"input_{i}")
    out_names = _names(output_names, len(outputs), lambda i: f"output_{i}")
    dynamic_axes = dynamic_axes or {}
    unknown = set(dynamic_axes) - set(in_names) - set(out_names)
    if unknown:
        raise ValueError(f"workbench.onnx.export: dynamic_axes names {sorted(unknown)}, which are neither inputs "
                         f"{in_names} nor outputs {out_names}")
    graph_inputs = []
    for name, t in zip(in_names, inputs):
        g.bind(traced[id(t)], name)
        graph_inputs.append(_value_info(onnx, name, t, _dims(dynamic_axes.get(name), name, t.ndim)))
    params = list(model.named_parameters()) + list(model.named_buffers()) if hasattr(model, "named_parameters") \
        else []
    for name, p in params:
        if g.has(p):
            continue
        arr = _backend.to_device(p.detach()._data, _backend.CPU)
        if export_params:
            g.initializer(arr, name)
        else:
            graph_inputs.append(_value_info(onnx, name, p, {}))
        g.bind(p, name)
    with no_grad():
        for node, a, r in records:
            fn = _ops.TRANSLATIONS.get(node._op)
            if fn is None:
                where = f" in module {node.scope!r}" if node.scope else ""
                raise UnsupportedOperatorError(f"workbench.onnx.export: the op {node._op!r} ({node.name()}){where} "
                                               "has no ONNX translation yet; see workbench.onnx's docstring for "
                                               "what is covered")
            for res, name in zip(r, fn(g, node, a, r)):
                if name is not None and isinstance(res, Tensor):
                    g.bind(res, name)
    graph_outputs = []
    for name, t in zip(out_names, outputs):
        g.nodes.append(onnx.helper.make_node("Identity", [g.value(t)], [name], name=g.fresh("output")))
        graph_outputs.append(_value_info(onnx, name, t, _dims(dynamic_axes.get(name), name, t.ndim)))
    used = {i for n in g.nodes for i in n.input}
    g.initializers = [i for i in g.initializers if i.name in used]  # e.g. BatchNorm statistics folded into constants
    if keep_initializers_as_inputs:
        graph_inputs += [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                         for i in g.initializers]
    graph = onnx.helper.make_graph(g.nodes, type(model).__name__, graph_inputs, graph_outputs, g.initializers)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="workbench")
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is None:
        return None
    data = proto.SerializeToString()
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)
    return None


def _value_info(onnx, name, t, dynamic):
    arr_dtype = t._data.dtype if t.dtype.name != "bfloat16" else np.dtype(np.float32)
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(arr_dtype))
    shape = [dynamic.get(i, int(n)) for i, n in enumerate(t.shape)]
    return onnx.helper.make_tensor_value_info(name, elem, shape)
