"""ONNX translations of the ops workbench records, keyed by the tape's op name (``node._op``).

Each translation gets the graph, the node, the op's arguments as the tape saw them (tensors, raw
arrays and plain values such as dims or strides) and its results, and returns one value name per
result (None for a result ONNX can't give, such as max-pool indices).
"""
import math

from .. import _backend
from ..tensor import Tensor

np = _backend.numpy
TRANSLATIONS = {}


def translates(*ops):
    def deco(fn):
        for op in ops:
            TRANSLATIONS[op] = fn
        return fn

    return deco


def _ndim(x):
    return x.ndim if isinstance(x, (Tensor, np.ndarray)) else 0


def _tensor_of(args):
    return next((a for a in args if isinstance(a, Tensor)), None)


# --- elementwise -------------------------------------------------------------------------------------
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "gt": "Greater", "lt": "Less", "ge": "GreaterOrEqual", "le": "LessOrEqual",
           "eq": "Equal"}
_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "relu": "Relu",
          "sigmoid": "Sigmoid", "tanh": "Tanh", "sin": "Sin", "cos": "Cos", "erf": "Erf", "floor": "Floor",
          "ceil": "Ceil", "reciprocal": "Reciprocal", "sign": "Sign", "logical_not": "Not"}


@translates(*_BINARY)
def _binary(g, node, args, results):
    like = _tensor_of(args[:2])
    a, b = g.value(args[0], like), g.value(args[1], like)
    if node._op in ("add", "sub") and len(args) > 2 and args[2] not in (None, 1):  # alpha
        b = g.op("Mul", [b, g.value(args[2], like)])
    return [g.op(_BINARY[node._op], [a, b])]


@translates("ne")
def _ne(g, node, args, results):
    like = _tensor_of(args[:2])
    return [g.op("Not", [g.op("Equal", [g.value(args[0], like), g.value(args[1], like)])])]


@translates(*_UNARY)
def _unary(g, node, args, results):
    return [g.op(_UNARY[node._op], [g.value(args[0])])]


@translates("rsqrt")
def _rsqrt(g, node, args, results):
    return [g.op("Reciprocal", [g.op("Sqrt", [g.value(args[0])])])]


@translates("where")
def _where(g, node, args, results):
    like = _tensor_of(args[1:3])
    return [g.op("Where", [g.value(args[0]), g.value(args[1], like), g.value(args[2], like)])]


@translates("clamp", "hardtanh")
def _clamp(g, node, args, results):
    x = args[0]
    bounds = [g.value(v, x) if v is not None else "" for v in args[1:3]]
    return [g.op("Clip", [g.value(x)] + bounds)]


# --- activations ---------------------------------------------------------------------------------------
@translates("leaky_relu")
def _leaky_relu(g, node, args, results):
    return [g.op("LeakyRelu", [g.value(args[0])], alpha=float(args[1]))]


@translates("elu")
def _elu(g, node, args, results):
    x, alpha, scale, input_scale = args[0], float(args[1]), float(args[2]), float(args[3])
    v = g.value(x)
    if input_scale != 1.0:
        v = g.op("Mul", [v, g.value(input_scale, x)])
    y = g.op("Elu", [v], alpha=alpha)
    return [g.op("Mul", [y, g.value(scale, x)]) if scale != 1.0 else y]


@translates("silu")
def _silu(g, node, args, results):
    v = g.value(args[0])
    return [g.op("Mul", [v, g.op("Sigmoid", [v])])]


@translates("gelu")
def _gelu(g, node, args, results):
    x = args[0]
    v = g.value(x)
    if len(args) > 1 and args[1] == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", [g.op("Mul", [v, v]), v])
        inner = g.op("Mul", [g.op("Add", [v, g.op("Mul", [cube, g.value(0.044715, x)])]),
                             g.value(math.sqrt(2.0 / math.pi), x)])
        t = g.op("Tanh", [inner])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = g.op("Erf", [g.op("Div", [v, g.value(math.sqrt(2.0), x)])])
    return [g.op("Mul", [g.op("Mul", [v, g.value(0.5, x)]), g.op("Add", [t, g.value(1.0, x)])])]


@translates("softplus")
def _softplus(g, node, args, results):
    x, beta = args[0], float(args[1])
    if beta == 1.0:
        return [g.op("Softplus", [g.value(x)])]
    y = g.op("Softplus", [g.op("Mul", [g.value(x), g.value(beta, x)])])
    return [g.op("Div", [y, g.value(beta, x)])]


@translates("softmax", "log_softmax")
def _softmax(g, node, args, results):
    return [g.op("Softmax" if node._op == "softmax" else "LogSoftmax", [g.value(args[0])], axis=int(args[1]))]


# --- layers --------------------------------------------------------------------------------------------
@translates("linear")
def _linear(g, node, args, results):
    x, w, b = args[0], args[1], args[2] if len(args) > 2 else None
    if x.ndim == 2:
        ins = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
        return [g.op("Gemm", ins, transB=1)]
    y = g.op("MatMul", [g.value(x), g.op("Transpose", [g.value(w)], perm=[1, 0])])
    return [g.op("Add", [y, g.value(b)]) if b is not None else y]


@translates("matmul", "mm")
def _matmul(g, node, args, results):
    return [g.op("MatMul", [g.value(args[0]), g.value(args[1])])]


@translates("convolution")
def _conv(g, node, args, results):
    x, w, b, (stride, lo, hi, dilation, groups) = args[0], args[1], args[2], args[3]
    ins = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    return [g.op("Conv", ins, strides=list(stride), pads=list(lo) + list(hi), dilations=list(dilation),
                 group=int(groups), kernel_shape=list(w.shape[2:]))]


@translates("convolution_backward_input")
def _conv_transpose(g, node, args, results):
    x, w, (stride, lo, hi, dilation, groups), spatial = args[0], args[1], args[2], args[3]
    return [g.op("ConvTranspose", [g.value(x), g.value(w)], strides=list(stride), pads=list(lo) + list(hi),
                 dilations=list(dilation), group=int(groups), kernel_shape=list(w.shape[2:]),
                 output_shape=list(spatial))]


@translates("max_pool")
def _max_pool(g, node, args, results):
    x, kernel, stride, lo, hi, dilation = args[:6]
    y = g.op("MaxPool", [g.value(x)], kernel_shape=list(kernel), strides=list(stride), pads=list(lo) + list(hi),
             dilations=list(dilation))
    return [y, None]


@translates("native_layer_norm")
def _layer_norm(g, node, args, results):
    x, w, b, n, eps = args[:5]
    if w is None:
        w = np.ones(x.shape[-n:], dtype=x._data.dtype)
    ins = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    return [g.op("LayerNormalization", ins, axis=-int(n), epsilon=float(eps))]


@translates("native_norm")
def _normalize(g, node, args, results):
    x, w, b, axes, w_shape, eps = args[:6]
    v = g.value(x)
    mean = g.reduce("ReduceMean", v, axes, True)
    centred = g.op("Sub", [v, mean])
    var = g.reduce("ReduceMean", g.op("Mul", [centred, centred]), axes, True)
    y = g.op("Div", [centred, g.op("Sqrt", [g.op("Add", [var, g.value(float(eps), x)])])])
    if w is not None:
        y = g.op("Mul", [y, g.op("Reshape", [g.value(w), g.ints(w_shape)])])
    if b is not None:
        y = g.op("Add", [y, g.op("Reshape", [g.value(b), g.ints(w_shape)])])
    return [y, None, None]


@translates("embedding")
def _embedding(g, node, args, results):
    w, idx = args[0], args[1]
    return [g.op("Gather", [g.value(w), g.op("Cast", [g.value(idx)], to=7)], axis=0)]


@translates("scaled_dot_product_attention")
def _sdpa(g, node, args, results):
    q, k, v, bias, scale = args[:5]
    if len(args) > 5 and args[5] is not None:
        raise RuntimeError("scaled_dot_product_attention with dropout can't be exported: export in eval mode")
    kt = g.op("Transpose", [g.value(k)], perm=list(range(k.ndim - 2)) + [k.ndim - 1, k.ndim - 2])
    scores = g.op("Mul", [g.op("MatMul", [g.value(q), kt]), g.value(float(scale), q)])
    if bias is not None:
        scores = g.op("Add", [scores, g.value(bias, q)])
    return [g.op("MatMul", [g.op("Softmax", [scores], axis=-1), g.value(v)])]


# --- shapes ----------------------------------------------------------------------------------------------
def _keep_dims(in_shape, out_shape):
    """A Reshape target in which every dim equal to the input's at the same place is 0 ("copy it"), so
    that dims exported as dynamic (the batch) stay dynamic."""
    target = list(out_shape)
    for i, (a, b) in enumerate(zip(in_shape, target)):
        if a == b and a != 0:
            target[i] = 0
    return target


@translates("reshape", "view", "flatten", "unflatten", "_unsafe_view")
def _reshape(g, node, args, results):
    x, out = args[0], results[0]
    return [g.op("Reshape", [g.value(x), g.ints(_keep_dims(x.shape, out.shape))])]


@translates("transpose")
def _transpose(g, node, args, results):
    x, a, b = args[0], int(args[1]) % max(args[0].ndim, 1), int(args[2]) % max(args[0].ndim, 1)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return [g.op("Transpose", [g.value(x)], perm=perm)]


@translates("permute")
def _permute(g, node, args, results):
    x = args[0]
    return [g.op("Transpose", [g.value(x)], perm=[int(d) % x.ndim for d in args[1]])]


@translates("unsqueeze")
def _unsqueeze(g, node, args, results):
    return [g.op("Unsqueeze", [g.value(args[0]), g.ints([int(args[1]) % results[0].ndim])])]


@translates("squeeze")
def _squeeze(g, node, args, results):
    x = args[0]
    dims = args[1] if len(args) > 1 and args[1] is not None else [i for i, n in enumerate(x.shape) if n == 1]
    dims = [int(d) % x.ndim for d in (dims if isinstance(dims, (list, tuple)) else [dims]) if x.shape[d] == 1]
    return [g.op("Squeeze", [g.value(x), g.ints(dims)]) if dims else g.op("Identity", [g.value(x)])]


@translates("expand")
def _expand(g, node, args, results):
    x, out = args[0], results[0]
    lead = out.ndim - x.ndim
    target = [1 if i >= lead and (n == x.shape[i - lead]) else n for i, n in enumerate(out.shape)]
    return [g.op("Expand", [g.value(x), g.ints(target)])]


@translates("cat")
def _cat(g, node, args, results):
    *tensors, dim = args
    return [g.op("Concat", [g.value(t) for t in tensors], axis=int(dim) % results[0].ndim)]


@translates("stack")
def _stack(g, node, args, results):
    *tensors, dim = args
    axis = int(dim) % results[0].ndim
    return [g.op("Concat", [g.op("Unsqueeze", [g.value(t), g.ints([axis])]) for t in tensors], axis=axis)]


@translates("split", "split_with_sizes", "unbind")
def _split(g, node, args, results):  # split, chunk, unbind (a recurrent layer's time steps): (x, keys, dim)
    x, keys, dim = args
    unbind = node._op == "unbind"
    sizes = [1 if unbind else k[dim].stop - k[dim].start for k in keys]
    outs = g.op("Split", [g.value(x), g.ints(sizes)], n_out=len(sizes), axis=dim)
    outs = outs if len(sizes) > 1 else [outs]
    return [g.op("Squeeze", [o, g.ints([dim])]) for o in outs] if unbind else outs


def _gates(g, value, h, k, axis):
    """The k gates of a recurrent cell's product (the value name; rows of k blocks of h), split apart."""
    return g.op("Split", [value, g.ints([h] * k)], n_out=k, axis=axis)


@translates("lstm_cell")
def _lstm_cell(g, node, args, results):
    gi, gh, c = args
    i, f, gg, o = _gates(g, g.op("Add", [g.value(gh), g.value(gi)]), c.shape[-1], 4, gi.ndim - 1)
    c2 = g.op("Add", [g.op("Mul", [g.op("Sigmoid", [f]), g.value(c)]),
                      g.op("Mul", [g.op("Sigmoid", [i]), g.op("Tanh", [gg])])])
    return [g.op("Mul", [g.op("Sigmoid", [o]), g.op("Tanh", [c2])]), c2]


@translates("gru_cell")
def _gru_cell(g, node, args, results):
    gi, gh, h = args
    ir, iz, in_ = _gates(g, g.value(gi), h.shape[-1], 3, gi.ndim - 1)
    hr, hz, hn = _gates(g, g.value(gh), h.shape[-1], 3, gi.ndim - 1)
    r = g.op("Sigmoid", [g.op("Add", [hr, ir])])
    z = g.op("Sigmoid", [g.op("Add", [hz, iz])])
    n = g.op("Tanh", [g.op("Add", [in_, g.op("Mul", [hn, r])])])
    return [g.op("Add", [g.op("Mul", [g.op("Sub", [g.value(h), n]), z]), n])]


@translates("constant_pad_nd")
def _pad(g, node, args, results):
    x, pad, value = args[0], list(args[1]), args[2] if len(args) > 2 else 0.0
    begins, ends = [0] * x.ndim, [0] * x.ndim
    for i in range(len(pad) // 2):  # PyTorch's pad pairs start at the last dimension
        begins[x.ndim - 1 - i], ends[x.ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return [g.op("Pad", [g.value(x), g.ints(begins + ends), g.value(value, x)], mode="constant")]


def _int_array(k):
    if isinstance(k, np.ndarray):
        return k.dtype.kind in "iu"
    return isinstance(k, Tensor) and k.dtype.name in ("uint8", "int8", "int16", "int32", "int64")


@translates("index", "index_select")
def _index(g, node, args, results):
    x, key = args[0], args[1]
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - used) + key[i + 1:]
    v, axis, drop, new, gather = g.value(x), 0, [], [], None
    starts, ends, axes, steps = [], [], [], []
    out_axis = 0
    for k in key:
        if _int_array(k):
            if gather is not None:
                raise RuntimeError("indexing with several index arrays can't be exported (one can)")
            gather = (axis, k)
            out_axis += k.ndim
            axis += 1
            continue
        if k is None:
            new.append(out_axis)
            out_axis += 1
            continue
        n = x.shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if (start, stop, step) != (0, n, 1):
                starts.append(start), ends.append(stop if step > 0 or stop >= 0 else -(n + 1))
                axes.append(axis), steps.append(step)
            out_axis += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) % n
            starts.append(i), ends.append(i + 1), axes.append(axis), steps.append(1)
            drop.append(axis)
        else:
            raise RuntimeError(f"indexing with {type(k).__name__} can't be exported (slices, integers, None and "
                               "... can)")
        axis += 1
    if axes:
        v = g.op("Slice", [v, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)])
    if gather is not None:
        if drop:
            raise RuntimeError("indexing with an index array and integers together can't be exported")
        at, idx = gather
        v = g.op("Gather", [v, g.op("Cast", [g.value(idx)], to=7)], axis=at)
    if drop:
        v = g.op("Squeeze", [v, g.ints(drop)])
    if new:
        v = g.op("Unsqueeze", [v, g.ints(new)])
    return [v if (axes or drop or new or gather) else g.op("Identity", [v])]


# --- reductions ---------------------------------------------------------------------------------------
def _axes(x, dims):
    if dims is None:
        return None
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return [int(d) % max(x.ndim, 1) for d in dims]


@translates("sum", "mean", "amax", "amin", "prod")
def _reduce(g, node, args, results):
    x = args[0]
    kind = {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax", "amin": "ReduceMin",
            "prod": "ReduceProd"}[node._op]
    dims = args[1] if len(args) > 1 else None
    keep = bool(args[2]) if len(args) > 2 else False
    return [g.reduce(kind, g.value(x), _axes(x, dims), keep)]


@translates("linalg_vecdot")
def _vecdot(g, node, args, results):  # Mul then ReduceSum over dim (args: x, y or None for x with itself, dim)
    x = g.value(args[0])
    prod = g.op("Mul", [x, x if args[1] is None else g.value(args[1])])
    return [g.reduce("ReduceSum", prod, _axes(args[0], args[2]), False)]


@translates("max", "min")
def _max(g, node, args, results):
    x = args[0]
    reduce, arg = ("ReduceMax", "ArgMax") if node._op == "max" else ("ReduceMin", "ArgMin")
    if len(args) == 1 or len(results) == 1 and isinstance(args[1], Tensor):
        if len(args) > 1:  # max(a, b): elementwise
            return [g.op("Max" if node._op == "max" else "Min", [g.value(x), g.value(args[1], x)])]
        return [g.reduce(reduce, g.value(x), None, False)]
    dim, keep = int(args[1]) % x.ndim, bool(args[2]) if len(args) > 2 else False
    v = g.value(x)
    return [g.reduce(reduce, v, [dim], keep), g.op(arg, [v], axis=dim, keepdims=int(keep))]


@translates("alias", "clone", "contiguous", "detach")
def _identity(g, node, args, results):
    return [g.op("Identity", [g.value(args[0])])]


@translates("recurrent_weights")
def _recurrent_weights(g, node, args, results):  # a layer's W_hh (and b_hh) as its steps read them: themselves
    return [g.op("Identity", [g.value(a)]) for a in args if a is not None]
