"""Recurrent cells: one time step of an LSTM, GRU or Elman RNN (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``, PyTorch's functional forms).

nn.LSTM, nn.GRU and their cells run on these. An LSTM step written in Tensor ops is 16 nodes (four gate
slices, three sigmoids, two tanh, products and sums); here it is two, the product ``h W_hh^T + b_hh`` and one
fused primitive for everything after it (``LstmCell``, on ``_backend.kernels``: one pass forward and one
backward on float32, NumPy's arrays otherwise), as PyTorch's fused cells. Its backward uses the saved
activations for first derivatives and recomputes them in Tensor ops under ``create_graph=True``, so higher
derivatives are exact. tests/nn/test_rnn_cells.py checks the loops against the NumPy forms and float64, and each
cell by finite differences (second order too); the op specs compare the functional cells with the composed
form and with PyTorch.
"""
import weakref

from .._backend import dtypes as _dt, kernels as _k
from .._core import Tensor
from ..autograd import engine as _engine
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ._autocast import AUTOCAST as _AUTOCAST
from ._util import gemm, result_dtype_n
from .join import cat
from .linear import Linear, _bias_grad, linear, product


def _promoted(*tensors):
    """The tensors in their common dtype (autocast hands bfloat16 products and a float32 state to a cell)."""
    dts = {t._data.dtype for t in tensors}
    if len(dts) == 1:
        return tensors
    rd = result_dtype_n(*(t._data for t in tensors))
    return tuple(t if t._data.dtype == rd else t.to(_dt.from_numpy_dtype(rd)) for t in tensors)


def _half(x):
    return x.dtype.itemsize == 2


def _f32(*arrays):
    return [a.astype("float32") for a in arrays]


class LstmCell(Function):
    """(h2, c2) of one LSTM step from its two products gi, gh (rows of the i, f, g, o gates) and the state c."""

    _raw = True
    op_name = "lstm_cell"
    saved_names = ("input_gates", "hidden_gates", "cx", "gates", "tanh_cy")  # what the viewer lists

    @staticmethod
    def forward(ctx, gi, gh, c):
        half = _half(gi)
        h2, c2, act, tc = _k.lstm_cell(ctx.xp, *(_f32(gi, gh, c) if half else (gi, gh, c)))
        ctx.save_for_backward(gi, gh, c, act, tc)
        if half:
            return h2.astype(gi.dtype), c2.astype(gi.dtype)
        return h2, c2

    @staticmethod
    def backward(ctx, dh2, dc2):
        gi, gh, c, act, tc = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: the step again in Tensor ops, from the inputs
            H = c.shape[-1]
            gates = gh + gi
            i, f, o = gates[..., :H].sigmoid(), gates[..., H:2 * H].sigmoid(), gates[..., 3 * H:].sigmoid()
            g = gates[..., 2 * H:3 * H].tanh()
            t = (f * c + i * g).tanh()
            d = dh2 * o * (1 - t * t) + dc2
            dgates = cat([d * g * i * (1 - i), d * c * f * (1 - f), d * i * (1 - g * g), dh2 * t * o * (1 - o)], -1)
            dc = d * f
        else:
            dt = dh2._data.dtype
            arrays = (dh2._data, dc2._data, c._data, act._data, tc._data)
            if _half(dh2._data):
                arrays = (*_f32(*arrays[:3]), arrays[3], arrays[4])
            dg, dcd = _k.lstm_cell_backward(ctx.xp, *arrays)
            dgates, dc = Tensor._make(dg.astype(dt, copy=False)), Tensor._make(dcd.astype(dt, copy=False))
        return dgates if nig[0] else None, dgates if nig[1] else None, dc if nig[2] else None


class GruCell(Function):
    """h2 of one GRU step from its two products gi, gh (rows of the r, z, n gates) and the state h."""

    _raw = True
    op_name = "gru_cell"
    saved_names = ("input_gates", "hidden_gates", "hx", "gates")

    @staticmethod
    def forward(ctx, gi, gh, h):
        half = _half(gi)
        h2, act = _k.gru_cell(ctx.xp, *(_f32(gi, gh, h) if half else (gi, gh, h)))
        ctx.save_for_backward(gi, gh, h, act)
        return h2.astype(gi.dtype) if half else h2

    @staticmethod
    def backward(ctx, dh2):
        gi, gh, h, act = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: the step again in Tensor ops, from the inputs
            H = h.shape[-1]
            r = (gh[..., :H] + gi[..., :H]).sigmoid()
            z = (gh[..., H:2 * H] + gi[..., H:2 * H]).sigmoid()
            ghn = gh[..., 2 * H:]
            n = (gi[..., 2 * H:] + ghn * r).tanh()
            dn = dh2 * (1 - z) * (1 - n * n)
            dr = dn * ghn * r * (1 - r)
            dz = dh2 * (h - n) * z * (1 - z)
            dgi, dgh, dh = cat([dr, dz, dn], -1), cat([dr, dz, dn * r], -1), dh2 * z
        else:
            dt = dh2._data.dtype
            arrays = (dh2._data, h._data, gh._data, act._data)
            if _half(dh2._data):
                arrays = (*_f32(*arrays[:3]), arrays[3])
            dgi, dgh, dh = (Tensor._make(a.astype(dt, copy=False)) for a in _k.gru_cell_backward(ctx.xp, *arrays))
        return dgi if nig[0] else None, dgh if nig[1] else None, dh if nig[2] else None


# --- the hidden-to-hidden weights a layer's time steps share ------------------------------------------------
# A layer call's steps each multiply by W_hh. Their weight gradient, summed over the steps, is G^T H: G the
# steps' product gradients stacked, H their inputs h. Computed per step, it is T products of B rows (16 here:
# BLAS at a fraction of its rate) and T sums of a whole weight-sized array; computed once, it is one product
# over all T B rows, as PyTorch's layer kernels (oneDNN, cuDNN) do. So a layer call passes W_hh and b_hh
# through one ``RecurrentWeights`` node, whose outputs the steps' ``HiddenProduct`` nodes read. A step's
# backward computes only dh = g W and leaves (g, h) with the layer call's ``_Terms``; the engine runs
# RecurrentWeights after every step that the backward reaches, and its backward turns the terms into the
# gradients of W_hh and b_hh. The first step of a backward run hands RecurrentWeights a zero gradient (a
# broadcast view: no memory) so that the engine runs it; the others hand it None. Terms are kept per backward
# run (``engine.current_run()``), so a run that stops short of the weights (``autograd.grad`` of an initial state, a
# debugger closed midway) leaves nothing that a later run would count. Under ``create_graph=True`` the steps
# return their own weight terms as Tensor ops (exact higher derivatives) and RecurrentWeights passes the sums on.
_TERMS = weakref.WeakValueDictionary()  # id(the weight view a RecurrentWeights forward made) -> its _Terms


class _Terms:
    """The (backward run, g, h) a layer call's steps left for their shared weight's gradient."""

    __slots__ = ("view", "entries", "runs", "__weakref__")

    def __init__(self, view):
        self.view = view  # kept: its id is the key the steps find these terms by
        self.entries = []
        self.runs = []


class RecurrentWeights(Function):
    """W_hh (and b_hh) as one layer call's time steps read them; its backward is their weight gradient."""

    _raw = True
    op_name = "recurrent_weights"
    saved_names = ("weight_hh", "bias_hh")

    @staticmethod
    def forward(ctx, w, b):
        ctx.save_for_backward(w, b)  # read in backward: an in-place change of the weights raises there
        wv = w.view()  # a fresh array per call: the key of this call's terms
        ctx.terms = _TERMS[id(wv)] = _Terms(wv)
        ctx.set_materialize_grads(False)
        return (wv, b.view()) if b is not None else wv

    @staticmethod
    def backward(ctx, gw, gb=None):
        w, b = ctx.saved_tensors
        nig = ctx.needs_input_grad
        terms = ctx.terms
        run = _engine.current_run()
        mine = [e for e in terms.entries if e[0] is run]
        if mine:
            terms.entries = [e for e in terms.entries if e[0] is not run]
            terms.runs = [r for r in terms.runs if r is not run]
        if STATE.enabled or not mine:  # create_graph: the steps returned their terms, summed by the engine
            return gw if nig[0] else None, gb if b is not None and nig[1] else None
        g = mine[0][1] if len(mine) == 1 else ctx.xp.concatenate([e[1] for e in mine])
        h = mine[0][2] if len(mine) == 1 else ctx.xp.concatenate([e[2] for e in mine])
        dw = gemm(g.T, h) if nig[0] else None
        db = _bias_grad(g) if b is not None and nig[1] else None
        # what else reached the weights in this run (a second backward through a create_graph one's products)
        # adds on; the zero gradient a step handed over to wake this node does not
        if dw is not None and gw is not None and any(gw._data.strides):  # (the wake-up zero is a broadcast)
            dw += gw._data
        if db is not None and gb is not None:
            db = db + gb._data
        return Tensor._make(dw) if dw is not None else None, Tensor._make(db) if db is not None else None


class HiddenProduct(Function):
    """h W^T + b of one time step, W and b a RecurrentWeights node's outputs: its backward computes dh and
    leaves its weight terms (g, h) to RecurrentWeights (see above)."""

    _raw = True
    _backward_effects = True
    op_name = "linear"

    @staticmethod
    def forward(ctx, h, w, b):
        ctx.save_for_backward(h, w)
        ctx.terms = _TERMS.get(id(w))
        ctx.x_shape = h.shape  # for Linear.backward (create_graph)
        return product(h, w, b)

    @staticmethod
    def backward(ctx, g):
        h, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        terms = ctx.terms
        if STATE.enabled or terms is None:  # create_graph (or no RecurrentWeights): linear's own gradients
            return Linear.backward(ctx, g)
        gd = g._data
        dh = Tensor._make(gemm(gd, w._data)) if nig[0] else None
        if not (nig[1] or nig[2]):
            return dh, None, None
        run = _engine.current_run()
        terms.entries.append((run, gd, h._data))
        if any(r is run for r in terms.runs):
            return dh, None, None
        terms.runs.append(run)
        wd = w._data
        return dh, Tensor._make(ctx.xp.broadcast_to(wd.dtype.type(0), wd.shape)), None


def shared_weights(w_hh, b_hh):
    """(W, b) for a layer call's time steps to read through ``hidden_product``, or None where the plain
    product serves (nothing recorded, the weights take no gradient, autocast casts them per step)."""
    if not STATE.enabled or _AUTOCAST[0] or not (w_hh._rg or b_hh is not None and b_hh._rg):
        return None
    if w_hh._data.dtype.kind != "f" or w_hh._data.dtype.itemsize < 4:
        return None
    r = RecurrentWeights.apply(w_hh, b_hh)
    return r if isinstance(r, tuple) else (r, None)


def hidden_product(h, w_hh, b_hh, shared):
    """h W_hh^T + b_hh of one time step: through ``shared`` (``shared_weights``) where it is given."""
    if shared is None or h._data.dtype != w_hh._data.dtype or h.ndim != 2 or h.shape[-1] != w_hh.shape[-1]:
        return linear(h, w_hh, b_hh)
    return HiddenProduct.apply(h, shared[0], shared[1])


def lstm_step(gi, h, c, w_hh, b_hh=None, shared=None):
    """One LSTM step from the input's product gi = x W_ih^T + b_ih: (h2, c2)."""
    gi, gh, c = _promoted(gi, hidden_product(h, w_hh, b_hh, shared), c)
    return LstmCell.apply(gi, gh, c)


def gru_step(gi, h, w_hh, b_hh=None, shared=None):
    """One GRU step from the input's product gi = x W_ih^T + b_ih: h2."""
    gi, gh, h = _promoted(gi, hidden_product(h, w_hh, b_hh, shared), h)
    return GruCell.apply(gi, gh, h)


def _check_cell(op, input, hx, w_ih, w_hh, gates):
    """PyTorch's checks of a functional cell, in its order and words (the hidden size is w_hh's width)."""
    for name, t in (("input", input), ("w_ih", w_ih), ("w_hh", w_hh)) + tuple((f"hx[{k}]", h) for k, h in enumerate(hx)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.ndim < 2:  # PyTorch reads input.size(1): a single sample needs its batch dim (unsqueeze(0))
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1) ({op} takes a "
                         f"batch: a {input.ndim}-D input of shape {list(input.shape)} needs input.unsqueeze(0))")
    hidden = w_hh.shape[-1]
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != gates * hidden:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = {gates * hidden}, but got "
                               f"{w.shape[0]}")
    if input.shape[1] != w_ih.shape[-1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[-1]}")
    for k, h in enumerate(hx):
        if h.ndim < 2 or h.shape[0] != input.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                               f"{h.shape[0] if h.ndim else 1}")
        if h.shape[1] != hidden:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected {hidden}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step, PyTorch's ``torch.lstm_cell``: input (batch, input_size), hx is (h, c), each (batch,
    hidden_size); returns (h2, c2).

    >>> import workbench as wb
    >>> h, c = wb.lstm_cell(wb.ones(2, 3), (wb.zeros(2, 4), wb.zeros(2, 4)), wb.ones(16, 3), wb.ones(16, 4))
    >>> h.shape
    workbench.Size([2, 4])
    """
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm_cell: hx must be a tuple of two tensors (h, c)")
    _check_cell("lstm_cell", input, hx, w_ih, w_hh, 4)
    return lstm_step(linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, PyTorch's ``torch.gru_cell``: input (batch, input_size), hx (batch, hidden_size).

    >>> import workbench as wb
    >>> wb.gru_cell(wb.ones(2, 3), wb.zeros(2, 4), wb.ones(12, 3), wb.ones(12, 4)).shape
    workbench.Size([2, 4])
    """
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh, 3)
    return gru_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def _rnn_cell(op, act, input, hx, w_ih, w_hh, b_ih, b_hh):
    _check_cell(op, input, (hx,), w_ih, w_hh, 1)
    return act(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh))


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with tanh, PyTorch's ``torch.rnn_tanh_cell``.

    >>> import workbench as wb
    >>> wb.rnn_tanh_cell(wb.ones(2, 3), wb.zeros(2, 4), wb.ones(4, 3), wb.ones(4, 4)).shape
    workbench.Size([2, 4])
    """
    return _rnn_cell("rnn_tanh_cell", lambda v: v.tanh(), input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with relu, PyTorch's ``torch.rnn_relu_cell``.

    >>> import workbench as wb
    >>> wb.rnn_relu_cell(wb.ones(2, 3), wb.zeros(2, 4), wb.ones(4, 3), wb.ones(4, 4)).shape
    workbench.Size([2, 4])
    """
    return _rnn_cell("rnn_relu_cell", lambda v: v.relu(), input, hx, w_ih, w_hh, b_ih, b_hh)


__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]
METHODS = {}
