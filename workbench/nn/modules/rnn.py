"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, inter-layer dropout,
PackedSequence input) and their cells.

One time-step function per cell type serves both the cells and the layers. A layer projects the whole
input sequence through W_ih in one matmul, hands its time steps out as one node (``split``), then loops
over time for the W_hh part: an LSTM or GRU step is that product and one fused cell primitive
(``ops.recurrent``), two nodes the viewer shows per step. Packed input is handled by running only the first
``batch_sizes[t]`` rows at step t (sequences are sorted by length).
"""
import math
import numbers
import warnings

from ... import creation, ops
from ...ops._autocast import AUTOCAST as _AUTOCAST
from ...ops._autocast import cast as _autocast_cast
from .. import init
from .. import functional as F
from ..module import Module, call_scope
from ..parameter import Parameter
from ..utils.rnn import PackedSequence

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _ops():
    return ops


def _activation(mode):
    return {"RNN_TANH": lambda x: x.tanh(), "RNN_RELU": lambda x: x.relu()}[mode]


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU (parameters, checks, the time loop).

    >>> import workbench as wb
    >>> wb.nn.RNNBase("GRU", 3, 4).weight_ih_l0.shape
    workbench.Size([12, 3])
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        D = 2 if bidirectional else 1
        G = _GATES[mode] * hidden_size
        real_h = proj_size if proj_size > 0 else hidden_size
        fk = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(D):
                in_size = input_size if layer == 0 else real_h * D
                sfx = "_reverse" if d == 1 else ""
                params = [("weight_ih", (G, in_size)), ("weight_hh", (G, real_h))]
                if bias:
                    params += [("bias_ih", (G,)), ("bias_hh", (G,))]
                if proj_size > 0:
                    params += [("weight_hr", (proj_size, hidden_size))]
                for base, shape in params:
                    name = f"{base}_l{layer}{sfx}"
                    setattr(self, name, Parameter(creation.empty(shape, **fk)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        D = 2 if self.bidirectional else 1
        per = len(self._flat_weights_names) // (self.num_layers * D)
        w = self._flat_weights
        return [w[i * per:(i + 1) * per] for i in range(self.num_layers * D)]

    def flatten_parameters(self):
        """A no-op kept for PyTorch code (cuDNN weight packing does not apply here)."""

    def reset_parameters(self):
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _layer_params(self, layer, d):
        sfx = "_reverse" if d == 1 else ""
        g = lambda base: getattr(self, f"{base}_l{layer}{sfx}", None)  # noqa: E731
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh"), g("weight_hr")

    def _run_direction(self, data, bs, h0, c0, params, reverse):
        """One layer, one direction over time-major ``data`` (rows grouped by step, bs[t] rows at step t)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = params
        ops = _ops()
        proj = F.linear(data, w_ih, b_ih)
        T = len(bs)
        uniform = all(n == bs[0] for n in bs)
        h, c = h0, c0
        outs = [None] * T
        act = _activation(self.mode) if self.mode.startswith("RNN") else None
        step = "step_reverse" if reverse else "step"  # each time step is one call: the viewer's series
        steps = proj.split(bs) if T > 1 else (proj,)  # one node: its backward fills one array
        shared = ops.recurrent.shared_weights(w_hh, b_hh)  # the steps' weight gradient as one product
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            with call_scope(step):
                n = bs[t]
                gi = steps[t]
                hs = h if uniform else h[:n]
                if self.mode == "LSTM":
                    cs = c if uniform else c[:n]
                    hn, cn = ops.recurrent.lstm_step(gi, hs, cs, w_hh, b_hh, shared)
                    if w_hr is not None:
                        hn = F.linear(hn, w_hr)
                    c = cn if uniform or n == c.shape[0] else ops.cat([cn, c[n:]])
                elif self.mode == "GRU":
                    hn = ops.recurrent.gru_step(gi, hs, w_hh, b_hh, shared)
                else:
                    hn = act(gi + ops.recurrent.hidden_product(hs, w_hh, b_hh, shared))
                h = hn if uniform or n == h.shape[0] else ops.cat([hn, h[n:]])
                outs[t] = hn
        return ops.cat(outs) if T > 1 else outs[0], h, c

    def forward(self, input, hx=None):
        ops = _ops()
        packed = isinstance(input, PackedSequence)
        D = 2 if self.bidirectional else 1
        real_h = self.proj_size if self.proj_size > 0 else self.hidden_size
        if packed:
            data, bs_t, sorted_idx, unsorted_idx = input
            bs = [int(x) for x in bs_t._data]
            B = bs[0]
            unbatched = False
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            unbatched = input.dim() == 2
            x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
            T, B = x.shape[0], x.shape[1]
            bs = [B] * T
            data = x.reshape((T * B, x.shape[2]))
            sorted_idx = unsorted_idx = None
        if not bs or not bs[0]:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        w = self._flat_weights[0]
        if data.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({data.dtype}) does not match weight dtype ({w.dtype}). Convert input: "
                             f"input.to({w.dtype}), or convert model: model.to({data.dtype})")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {data.shape[-1]}")
        is_lstm = self.mode == "LSTM"
        if hx is None:
            fk = {"dtype": data.dtype, "device": data.device}
            h0 = creation.zeros((self.num_layers * D, B, real_h), **fk)
            c0 = creation.zeros((self.num_layers * D, B, self.hidden_size), **fk) if is_lstm else None
        else:
            if is_lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM expects hx as a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if sorted_idx is not None:
                h0 = h0[:, sorted_idx]
                c0 = c0[:, sorted_idx] if c0 is not None else None
            want = (self.num_layers * D, B, real_h)
            if tuple(h0.shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {tuple(h0.shape)}")
            if is_lstm and tuple(c0.shape) != (self.num_layers * D, B, self.hidden_size):
                raise RuntimeError(f"Expected hidden size {(self.num_layers * D, B, self.hidden_size)}, "
                                   f"got {tuple(c0.shape)}")
        if _AUTOCAST[0] and is_lstm and not self.proj_size:  # PyTorch's CPU LSTM layer is on its autocast list
            data, h0, c0 = _autocast_cast("mkldnn_rnn_layer", data, h0, c0)
        h_n, c_n = [], []
        layer_in = data
        for layer in range(self.num_layers):
            outs = []
            with call_scope(f"layer{layer}"):  # the viewer groups by layer, then by time step
                for d in range(D):
                    k = layer * D + d
                    out, h, c = self._run_direction(layer_in, bs, h0[k], c0[k] if is_lstm else None,
                                                    self._layer_params(layer, d), reverse=d == 1)
                    outs.append(out)
                    h_n.append(h)
                    c_n.append(c)
                layer_in = outs[0] if D == 1 else ops.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        h_n = ops.stack(h_n)
        c_n = ops.stack(c_n) if is_lstm else None
        if unsorted_idx is not None:
            h_n = h_n[:, unsorted_idx]
            c_n = c_n[:, unsorted_idx] if is_lstm else None
        if packed:
            output = PackedSequence(layer_in, bs_t, sorted_idx, unsorted_idx)
        else:
            output = layer_in.reshape((T, B, layer_in.shape[-1]))
            if unbatched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if is_lstm else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    >>> import workbench as wb
    >>> rnn = wb.nn.RNN(10, 20, 2)
    >>> out, hn = rnn(wb.randn(5, 3, 10))
    >>> out.shape, hn.shape
    (workbench.Size([5, 3, 20]), workbench.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.__dict__["nonlinearity"] = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)  # (proj_size: PyTorch's ValueError for RNN)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; returns ``output, (h_n, c_n)``.

    >>> import workbench as wb
    >>> lstm = wb.nn.LSTM(10, 20, num_layers=2, batch_first=True)
    >>> out, (hn, cn) = lstm(wb.randn(3, 5, 10))
    >>> out.shape, cn.shape
    (workbench.Size([3, 5, 20]), workbench.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit.

    >>> import workbench as wb
    >>> gru = wb.nn.GRU(10, 20, bidirectional=True)
    >>> out, hn = gru(wb.randn(5, 3, 10))
    >>> out.shape, hn.shape
    (workbench.Size([5, 3, 40]), workbench.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)  # (proj_size: PyTorch's ValueError for GRU)


class RNNCellBase(Module):
    """Parameters and checks shared by RNNCell, LSTMCell and GRUCell.

    >>> import workbench as wb
    >>> wb.nn.LSTMCell(3, 4).weight_hh.shape
    workbench.Size([16, 4])
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        fk = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(creation.empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(creation.empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, input, hx, n_states):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")
        unbatched = input.dim() == 1
        if unbatched:
            input = input.unsqueeze(0)
        B = input.shape[0]
        if hx is None:
            z = creation.zeros((B, self.hidden_size), dtype=input.dtype, device=input.device)
            states = [z] * n_states
        else:
            states = list(hx) if n_states == 2 else [hx]
            if unbatched:
                states = [s.unsqueeze(0) for s in states]
            for s in states:
                if tuple(s.shape) != (B, self.hidden_size):
                    raise RuntimeError(f"Expected hidden size {(B, self.hidden_size)}, got {tuple(s.shape)}")
        return input, states, unbatched


class RNNCell(RNNCellBase):
    """One Elman RNN step.  >>> wb.nn.RNNCell(10, 20)(wb.randn(3, 10)).shape  ->  workbench.Size([3, 20])"""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.__dict__["nonlinearity"] = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._prepare(input, hx, 1)
        act = _activation("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU")
        out = act(F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh))
        return out.squeeze(0) if unbatched else out


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h, c).

    >>> import workbench as wb
    >>> h, c = wb.nn.LSTMCell(10, 20)(wb.randn(3, 10))
    >>> h.shape
    workbench.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), unbatched = self._prepare(input, hx, 2)
        h2, c2 = ops.recurrent.lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                                         self.bias_hh)
        return (h2.squeeze(0), c2.squeeze(0)) if unbatched else (h2, c2)


class GRUCell(RNNCellBase):
    """One GRU step.  >>> wb.nn.GRUCell(10, 20)(wb.randn(3, 10)).shape  ->  workbench.Size([3, 20])"""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._prepare(input, hx, 1)
        out = ops.recurrent.gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return out.squeeze(0) if unbatched else out
