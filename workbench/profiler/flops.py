"""FLOPs of one recorded op, computed from shapes alone (never from values): the cost overlay's count.

``node_flops(node, inputs)`` looks the node's op up in the rules below. A rule sees the output shapes
(``node._out_meta``), the input shapes by tensor position (``inputs``: what the caller knows, None where
unknown), the saved tensors' shapes by saved index (``describe_saved``, which survives backward) and the
attributes the op's forward stored on its ctx. Nothing is counted while recording: the snapshot and the
profiler call this when they are asked. Unknown ops, and known ops whose shapes are not known, give
None, never 0. The formulas (a multiply-add counts 2, as in PyTorch's FlopCounterMode):

=================================  =======================================================================
matmul, linear                     2 * numel(out) * k   (k: the contracted size; a (m x k)(k x n) product
                                   is 2mkn; linear's bias add is not counted, as in FlopCounterMode)
einsum (two operands)              2 * prod(size of every subscript letter); one operand: the product
convolution                        2 * numel(out) * prod(weight.shape[1:])   (Cin/groups * kernel)
convolution_backward_input         2 * numel(grad_out) * prod(weight.shape[1:])  (also conv_transpose)
convolution_backward_weight        2 * numel(grad_out) * prod(out.shape[1:])
scaled_dot_product_attention       2 * B*H*L*S*E + 2 * B*H*L*S*Ev  (q @ k^T and attn @ v; softmax not counted)
elementwise, activations, special  numel(out) * factor: 1, except addcmul/addcdiv/lerp 3, softplus/
                                   gelu/silu/mish/elu/log_sigmoid 4 (exp, add, log/mul, ...)
softmax, log_softmax               5 * numel(out)  (max, subtract, exp, sum, divide or log)
softmax_backward                   4 * numel(out)
native_layer_norm, native_norm     5 * numel(out), + 2 * numel(out) with an affine weight
reductions (sum, mean, amax, ...)  numel(input) * factor: 1; var/std 3, logsumexp 3, norm 2
cross_entropy                      6 * numel(input)  (log_softmax 5, the pick and mean 1)
mse_loss                           3 * numel(input)  (subtract, square, sum)
linalg_vecdot                      2 * numel(input)  (a multiply-add per element)
views, copies, cat/stack, index,   0: they move data and compute nothing (scatter_add/index_add count
padding, flips, embedding          numel(source): one add per element)
linear algebra (square n x n,      inv 2n^3, det/slogdet/lu 2n^3/3, solve 2n^3/3 + 2n^2 * nrhs,
per matrix of the batch)           cholesky n^3/3, qr 4n^3/3; svd, eig, eigh, pinv: None (iterative)
everything else                    None (sort, median, pooling, fft, resampling, custom Functions)
=================================  =======================================================================
"""
import math

from ..autograd.function import describe_saved

_ELEMENTWISE_FAMILIES = ("elementwise", "activation", "special", "misc")
_MOVE_FAMILIES = ("views", "join", "convert", "pad", "arrange", "index", "slicing")
_FACTOR = {"addcmul": 3, "addcdiv": 3, "lerp": 3, "softplus": 4, "gelu": 4, "silu": 4, "mish": 4, "elu": 4,
           "log_sigmoid": 4, "softmax": 5, "log_softmax": 5, "softmax_backward": 4}
_REDUCE_FACTOR = {"var": 3, "std": 3, "logsumexp": 3, "norm": 2}
_NOT_COUNTED = {"sort", "median", "nanmedian", "mode", "cummax", "cummin", "max_pool", "max_unpool"}


def _numel(shape):
    return math.prod(shape) if shape is not None else None


def _arg(ins, saved, k):
    # input k's shape: from the edge/recorder, else from the saved tensor the op saved at index k
    s = ins[k] if k < len(ins) else None
    return s if s is not None else saved.get(k)


def _matmul(attrs, outs, ins, saved):
    a, b = _arg(ins, saved, 0), _arg(ins, saved, 1)
    if a is not None:
        k = a[-1]
    elif b is not None:
        k = b[-2] if len(b) > 1 else b[0]
    else:
        return None
    return 2 * _numel(outs[0]) * k


def _linear(attrs, outs, ins, saved):
    x = attrs.get("x_shape") or _arg(ins, saved, 0)
    w = _arg(ins, saved, 1)
    k = x[-1] if x else (w[-1] if w else None)
    return None if k is None else 2 * _numel(outs[0]) * k


def _conv(attrs, outs, ins, saved):
    w = attrs.get("wshape") or _arg(ins, saved, 1)
    return None if w is None else 2 * _numel(outs[0]) * math.prod(w[1:])


def _conv_grad_input(attrs, outs, ins, saved):
    g, w = _arg(ins, saved, 0), _arg(ins, saved, 1)
    return None if g is None or w is None else 2 * _numel(g) * math.prod(w[1:])


def _conv_grad_weight(attrs, outs, ins, saved):
    g = _arg(ins, saved, 1)
    return None if g is None else 2 * _numel(g) * math.prod(outs[0][1:])


def _attention(attrs, outs, ins, saved):
    q, k = _arg(ins, saved, 0), _arg(ins, saved, 1)
    if q is None or k is None:
        return None
    s = k[-2]
    return 2 * _numel(q) * s + 2 * _numel(outs[0]) * s


def _einsum(attrs, outs, ins, saved):
    sizes = attrs.get("sizes")
    eq = attrs.get("eq")
    if sizes is None or eq is None or len(eq[0]) > 2:
        return None
    p = math.prod(sizes.values())
    return 2 * p if len(eq[0]) == 2 else p


def _norm(attrs, outs, ins, saved):
    return (7 if 1 in saved or (len(ins) > 1 and ins[1] is not None) else 5) * _numel(outs[0])


def _scale_input(factor):
    def rule(attrs, outs, ins, saved):
        x = _arg(ins, saved, 0)
        return None if x is None else factor * _numel(x)
    return rule


def _source_adds(attrs, outs, ins, saved):
    src = ins[-1] if ins else None
    return None if src is None else _numel(src)


def _square(cost):
    def rule(attrs, outs, ins, saved):
        a = _arg(ins, saved, 0)
        if a is None or len(a) < 2:
            return None
        m = a[-1]
        return round(_numel(a[:-2]) * cost(m, ins, saved))
    return rule


def _solve(m, ins, saved):
    b = _arg(ins, saved, 1)
    nrhs = (b[-1] if len(b) > 1 else 1) if b is not None else 1
    return 2 * m ** 3 / 3 + 2 * m * m * nrhs


RULES = {
    "matmul": _matmul, "mm": _matmul, "linear": _linear, "einsum": _einsum,
    "convolution": _conv, "convolution_backward_input": _conv_grad_input,
    "convolution_backward_weight": _conv_grad_weight,
    "scaled_dot_product_attention": _attention,
    "native_layer_norm": _norm, "native_norm": _norm,
    "cross_entropy": _scale_input(6), "mse_loss": _scale_input(3), "linalg_vector_norm": _scale_input(2),
    "linalg_vecdot": _scale_input(2),
    "scatter_add": _source_adds, "index_add": _source_adds,
    "linalg_inv": _square(lambda m, i, s: 2 * m ** 3), "linalg_det": _square(lambda m, i, s: 2 * m ** 3 / 3),
    "linalg_slogdet": _square(lambda m, i, s: 2 * m ** 3 / 3), "linalg_lu": _square(lambda m, i, s: 2 * m ** 3 / 3),
    "linalg_cholesky": _square(lambda m, i, s: m ** 3 / 3), "linalg_qr": _square(lambda m, i, s: 4 * m ** 3 / 3),
    "linalg_solve": _square(_solve),
    "embedding": lambda attrs, outs, ins, saved: 0,
    "mul": lambda attrs, outs, ins, saved: _numel(outs[0]),  # also addmm's beta=0 zeros, outside elementwise.py
}


def node_flops(node, inputs, saved=None):
    """The forward FLOPs of the op recorded by ``node`` (see the module docstring), or None.

    inputs: the input shapes by tensor position (None where unknown); saved: the node's
    ``describe_saved`` entries when the caller has them already.

    >>> import workbench as wb
    >>> a, b = wb.ones(2, 3, requires_grad=True), wb.ones(3, 4, requires_grad=True)
    >>> node_flops((a @ b).grad_fn, [(2, 3), (3, 4)])
    48
    """
    fn = node._fn
    if fn is None or not fn._raw:  # a user's Function: its cost is not known
        return None
    outs = [m[0] if m is not None else None for m in (node._out_meta or ())]
    saved = {e[0]: e[2] for e in (describe_saved(node) if saved is None else saved)}
    return op_flops(fn, node._op, outs, inputs, saved, node.__dict__)


def op_flops(fn, op, outs, inputs, saved, attrs):
    """FLOPs of primitive ``fn`` (op name ``op``) from its output and input shapes, the saved tensors'
    shapes ({saved index: shape}) and its ctx attributes; None when unknown.

    >>> from workbench.ops.linalg_core import Matmul
    >>> op_flops(Matmul, "matmul", [(2, 4)], [(2, 3), (3, 4)], {}, {})
    48
    """
    if not outs or outs[0] is None:
        return None
    rule = RULES.get(op)
    if rule is not None:
        f = rule(attrs, outs, inputs, saved)
        return None if f is None else int(f)
    if op in _NOT_COUNTED:
        return None
    family = fn.__module__.rsplit(".", 1)[-1]
    if family in _ELEMENTWISE_FAMILIES or op in _FACTOR:
        return _FACTOR.get(op, 1) * _numel(outs[0])
    if family == "reduce":
        x = _arg(inputs, saved, 0)
        return None if x is None else _REDUCE_FACTOR.get(op, 1) * _numel(x)
    if family in _MOVE_FAMILIES:
        return 0
    return None
