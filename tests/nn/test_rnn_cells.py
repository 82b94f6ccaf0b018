"""The fused recurrent cells (``ops/recurrent.py``: LstmCell, GruCell) and their float32 loops (``fused.lstm_cell``,
``gru_cell`` and gradients, ``_tanh``), and a layer's time steps split off as one node: against the NumPy forms they replace, against
float64 references and PyTorch, with saturated, tiny, denormal and non-finite pre-activations; gradients by
finite differences and through the composed Tensor-op form, second derivatives included."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused, kernels
from workbench.ops import recurrent

HAVE_NUMBA = fused._numba() is not None
SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e-30, 0.3, -0.3, 0.62, -0.62, 0.63, -0.63, 3.0, -3.0, 9.0,
           -9.0, 20.0, -20.0, 44.0, -44.0, 45.0, -45.0, 88.0, -88.0, 100.0, -100.0, 3e38, -3e38, np.inf, -np.inf,
           np.nan]


def _rows(rows, cols, scale=3.0, seed=0, special=True):
    x = (np.random.default_rng(seed).standard_normal((rows, cols)) * scale).astype(np.float32)
    if special:
        flat = x.reshape(-1)
        flat[:len(SPECIAL)] = SPECIAL
    return x


def _sig(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _ulps(a, b):
    """|a - b| in units of float32's spacing at b (b the float64 truth), NaN where both are NaN."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    spacing = np.spacing(np.abs(b).astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b) / spacing)
    return np.where(both_nan, 0.0, d)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_tanh_helper_within_2_ulp_and_keeps_signs_tiny_values_and_specials():
    fused._compile_helpers()
    x = np.concatenate([np.array(SPECIAL, np.float32),
                        np.geomspace(1e-44, 40, 20000).astype(np.float32),
                        -np.geomspace(1e-44, 40, 20000).astype(np.float32),
                        np.linspace(0.6, 0.65, 5001).astype(np.float32)])
    out = np.empty_like(x)

    def run(x, out):
        for i in range(x.size):
            out[i] = fused._tanh(x[i])
    fused._numba().njit(error_model="numpy", fastmath={"contract"})(run)(x, out)
    truth = np.tanh(x.astype(np.float64))
    assert _ulps(out, truth).max() <= 2
    assert np.array_equal(np.signbit(out), np.signbit(truth))  # -0. and the negative denormals keep their sign
    tiny = np.abs(x) < 1e-30
    assert np.array_equal(out[tiny], x[tiny])  # tanh(x) = x there, denormals included
    assert np.isnan(out[np.isnan(x)]).all() and np.array_equal(out[np.isinf(x)], np.sign(x[np.isinf(x)]))


def _lstm_ref(gi, gh, c):
    g = gh.astype(np.float64) + gi.astype(np.float64)
    H = c.shape[-1]
    i, f, gg, o = _sig(g[:, :H]), _sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), _sig(g[:, 3 * H:])
    c2 = f * c + i * gg
    return o * np.tanh(c2), c2


def test_lstm_cell_forward_against_float64(loops):
    B, H = 6, 40
    gi, gh, c = _rows(B, 4 * H), _rows(B, 4 * H, seed=1, special=False), _rows(B, H, scale=1.0, seed=2, special=False)
    h2, c2, act, tc = kernels.lstm_cell(np, gi, gh, c)
    assert h2.dtype == c2.dtype == np.float32 and h2.flags.c_contiguous and c2.flags.c_contiguous
    rh, rc = _lstm_ref(gi, gh, c)
    np.testing.assert_allclose(h2, rh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2, rc, rtol=1e-5, atol=1e-6)
    assert _ulps(tc, np.tanh(c2.astype(np.float64))).max() <= 2
    assert np.isnan(h2).sum() == np.isnan(rh).sum()  # the NaN pre-activation's row and column only


def test_lstm_and_gru_cells_match_torch_in_float32(loops):
    # the whole functional cell (products included) against PyTorch's on saturating inputs
    rng = np.random.default_rng(3)
    B, I, H = 5, 7, 33
    x, h, c = (rng.standard_normal(s).astype(np.float32) * 4 for s in ((B, I), (B, H), (B, H)))
    for gates, fn in ((4, "lstm_cell"), (3, "gru_cell")):
        ws = [rng.standard_normal(s).astype(np.float32) for s in ((gates * H, I), (gates * H, H), (gates * H,), (gates * H,))]
        hx_w = (wb.tensor(h, requires_grad=True), wb.tensor(c, requires_grad=True)) if gates == 4 else wb.tensor(h, requires_grad=True)
        hx_t = (torch.tensor(h, requires_grad=True), torch.tensor(c, requires_grad=True)) if gates == 4 else torch.tensor(h, requires_grad=True)
        xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ww = [wb.tensor(w, requires_grad=True) for w in ws]
        wt = [torch.tensor(w, requires_grad=True) for w in ws]
        ow = getattr(wb, fn)(xw, hx_w, *ww)
        ot = getattr(torch, fn)(xt, hx_t, *wt)
        ow, ot = (ow, ot) if gates == 4 else ((ow,), (ot,))
        for a, b in zip(ow, ot):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5, atol=2e-6)
        gs = [rng.standard_normal(a.shape).astype(np.float32) for a in ow]
        sum((a * wb.tensor(g)).sum() for a, g in zip(ow, gs)).backward()
        sum((b * torch.tensor(g)).sum() for b, g in zip(ot, gs)).backward()
        pairs = [(xw, xt)] + list(zip(ww, wt)) + (list(zip(hx_w, hx_t)) if gates == 4 else [(hx_w, hx_t)])
        for a, b in pairs:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4 * np.abs(b.grad.numpy()).max())


def test_loops_agree_with_the_numpy_forms_forward_and_backward():
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    B, H = 7, 29  # odd sizes: the loops' remainders
    gi, gh = _rows(B, 4 * H), _rows(B, 4 * H, seed=1)
    c = _rows(B, H, scale=1.0, seed=2, special=False)
    dh, dc = _rows(B, H, scale=1.0, seed=3, special=False), _rows(B, H, scale=1.0, seed=4, special=False)
    res = {}
    for on in (True, False):
        fused.ENABLED[0] = on
        try:
            h2, c2, act, tc = kernels.lstm_cell(np, gi, gh, c)
            dg, dcc = kernels.lstm_cell_backward(np, dh, dc, c, act, tc)
            g3i, g3h = gi[:, :3 * H].copy(), gh[:, :3 * H].copy()
            hh = c.copy()
            r2, a3 = kernels.gru_cell(np, g3i, g3h, hh)
            dgi, dgh, dhh = kernels.gru_cell_backward(np, dh, hh, g3h, a3)
        finally:
            fused.ENABLED[0] = True
        res[on] = (h2, c2, act, tc, dg, dcc, r2, a3, dgi, dgh, dhh)
    names = "h2 c2 act tc dgates dc gru_h2 gru_act dgi dgh dh".split()
    for name, a, b in zip(names, res[True], res[False]):
        assert a.dtype == b.dtype == np.float32, name
        ok = np.isnan(a) == np.isnan(b)
        assert ok.all(), name
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=2e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_fused_cell_gradients_by_finite_differences_and_second_order(cell):
    rng = np.random.default_rng(0)
    B, H = 3, 4
    k = 4 if cell == "lstm" else 3
    gi, gh = (wb.tensor(rng.standard_normal((B, k * H)) * 2, requires_grad=True) for _ in range(2))
    s = wb.tensor(rng.standard_normal((B, H)), requires_grad=True)
    f = (lambda a, b, c: recurrent.LstmCell.apply(a, b, c)) if cell == "lstm" else \
        (lambda a, b, c: recurrent.GruCell.apply(a, b, c))
    assert wb.autograd.gradcheck(f, (gi, gh, s))
    assert wb.autograd.gradgradcheck(f, (gi, gh, s))


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_a_recurrent_layer_records_two_nodes_a_step_and_one_split(cls):
    T, B = 6, 2
    m = getattr(wb.nn, cls)(3, 4)
    out, _ = m(wb.randn(T, B, 3))
    ops = []
    seen, stack = set(), [out.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        ops.append(n.name())
        stack.extend(nx for nx, _ in n.next_functions)
    cell = "LstmCellBackward0" if cls == "LSTM" else "GruCellBackward0"
    assert ops.count(cell) == T and ops.count("SplitWithSizesBackward0") == 1
    assert sum(o.startswith("Linear") for o in ops) == T + 1  # the input's projection, then one product a step


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_steps_whose_outputs_go_unused_get_zero_gradients(cls):
    # only the last state is used: every step's gradient still reaches the input (through the recurrence),
    # and a packed batch whose shorter rows stop early still splits right
    m = getattr(wb.nn, cls)(3, 4).double()
    t = getattr(torch.nn, cls)(3, 4).double()
    with torch.no_grad():
        for (n, p), q in zip(m.named_parameters(), t.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    x = np.random.default_rng(1).standard_normal((5, 2, 3))
    xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    hw = m(xw)[1]
    ht = t(xt)[1]
    (hw[0] if cls == "LSTM" else hw).sum().backward()
    (ht[0] if cls == "LSTM" else ht).sum().backward()
    np.testing.assert_allclose(xw.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_layer_double_backward_matches_torch():
    # create_graph through the fused cells and the split: a gradient penalty on an LSTM's input
    x = np.random.default_rng(2).standard_normal((4, 2, 3))
    m, t = wb.nn.LSTM(3, 4).double(), torch.nn.LSTM(3, 4).double()
    with torch.no_grad():
        for p, q in zip(m.parameters(), t.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    grads = []
    for lib, mod in ((wb, m), (torch, t)):
        xx = lib.tensor(x, requires_grad=True)
        y = mod(xx)[0].pow(2).sum()
        (gx,) = lib.autograd.grad(y, xx, create_graph=True)
        gx.pow(2).sum().backward()
        grads.append([p.grad.detach().numpy().copy() for p in mod.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_cells_compute_in_float32_and_round_once(dtype):
    rng = np.random.default_rng(4)
    m = wb.nn.LSTMCell(3, 8)
    x = wb.tensor(rng.standard_normal((2, 3)), dtype=wb.float32)
    ref_h, ref_c = m(x)
    mh = wb.nn.LSTMCell(3, 8).to(getattr(wb, dtype))
    mh.load_state_dict({k: v.to(getattr(wb, dtype)) for k, v in m.state_dict().items()})
    h, c = mh(x.to(getattr(wb, dtype)))
    assert h.dtype == c.dtype == getattr(wb, dtype)
    np.testing.assert_allclose(h.detach().float().numpy(), ref_h.detach().numpy(), atol=5e-2)
    h.float().sum().backward()
    assert mh.weight_hh.grad.dtype == getattr(wb, dtype)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_autocast_dtypes_match_torch(cls):
    # PyTorch's CPU LSTM layer (oneDNN's) is on autocast's lower-precision list: input and states run in
    # bfloat16. Its GRU is not: the products come back bfloat16, the state stays float32, and the cell promotes
    # (PyTorch 2.13 on an Intel Sapphire Rapids gives LSTM (bfloat16, bfloat16, float32), GRU float32 throughout;
    # on a CPU without bfloat16 instructions, an AMD EPYC with AVX2, oneDNN refuses the LSTM: those figures
    # stand in for it there)
    recorded = {"LSTM": ("bfloat16", "bfloat16", "float32"), "GRU": ("float32", "float32", "float32")}
    outs = []
    for lib in (wb, torch):
        m = getattr(lib.nn, cls)(3, 4)
        try:
            with lib.autocast("cpu", dtype=lib.bfloat16):
                out, h = m(lib.randn(5, 2, 3))
        except RuntimeError as e:
            if lib is not torch or "could not create a primitive descriptor" not in str(e):
                raise
            outs.append(recorded[cls])
            continue
        out.float().sum().backward()
        outs.append((str(out.dtype).split(".")[-1], str((h[0] if cls == "LSTM" else h).dtype).split(".")[-1],
                     str(m.weight_hh_l0.grad.dtype).split(".")[-1]))
    assert outs[0] == outs[1] == recorded[cls]


def test_recurrent_layers_refuse_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        wb.nn.LSTM(4, 5)(wb.randn(0, 2, 4))
    with pytest.raises(ValueError, match="RNN input dtype .*float64.* does not match weight dtype"):
        wb.nn.GRU(4, 5)(wb.randn(3, 2, 4).double())
    for cls in (wb.nn.GRU, wb.nn.RNN):
        with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
            cls(4, 5, proj_size=2)


def test_functional_cells_refuse_what_pytorch_refuses():
    x, h, c = wb.randn(3, 4), wb.randn(3, 5), wb.randn(3, 5)
    w_ih, w_hh = wb.randn(20, 4), wb.randn(20, 5)
    with pytest.raises(IndexError, match="unsqueeze"):
        wb.lstm_cell(wb.randn(4), (wb.randn(5), wb.randn(5)), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="weight_ih first dim must be 4 \\* hidden_size = 20, but got 21"):
        wb.lstm_cell(x, (h, c), wb.randn(21, 4), w_hh)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4 expected 6"):
        wb.lstm_cell(x, (h, c), wb.randn(20, 6), w_hh)
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        wb.lstm_cell(x, (wb.randn(2, 5), c), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 6, expected 5"):
        wb.lstm_cell(x, (h, wb.randn(3, 6)), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="hx must be a tuple"):
        wb.lstm_cell(x, h, w_ih, w_hh)
    with pytest.raises(TypeError, match="must be Tensor"):
        wb.gru_cell(x, h.numpy(), wb.randn(15, 4), wb.randn(15, 5))


# --- a layer's steps share one weight gradient (RecurrentWeights): per backward run, whatever stops short -------
def _layer_and_grads(cls, seed=3, **kw):
    wb.manual_seed(seed)
    m = getattr(wb.nn, cls)(3, 4, **kw).double()
    x = wb.tensor(np.random.default_rng(seed).standard_normal((5, 2, 3)), requires_grad=True)
    return m, x


def _grads(m):
    return {n: None if p.grad is None else p.grad.detach().numpy().copy() for n, p in m.named_parameters()}


def _step_by_step(m, x, loss):
    """The parameters' gradients with the steps' weight terms each computed and summed by the engine (the form
    the shared node replaces), in float64."""
    orig = recurrent.shared_weights
    recurrent.shared_weights = lambda w, b: None
    try:
        m.zero_grad()
        loss(m(x)).backward()
    finally:
        recurrent.shared_weights = orig
    g = _grads(m)
    m.zero_grad()
    x.grad = None
    return g


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}, {"bias": False}], ids=str)
def test_the_shared_weight_gradient_equals_the_per_step_sum(cls, kw):
    m, x = _layer_and_grads(cls, **kw)
    loss = lambda out: out[0].pow(2).sum()  # noqa: E731
    want = _step_by_step(m, x, loss)
    loss(m(x)).backward()
    got = _grads(m)
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-12, atol=1e-14, err_msg=n)
    # each layer call (and direction) is one RecurrentWeights node feeding its steps
    names, seen, stack = [], set(), [m(x)[0].grad_fn]
    while stack:
        n = stack.pop()
        if n is not None and id(n) not in seen:
            seen.add(id(n))
            names.append(n.name())
            stack.extend(nx for nx, _ in n.next_functions)
    assert names.count("RecurrentWeightsBackward0") == m.num_layers * (2 if m.bidirectional else 1)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_a_run_that_stops_short_of_the_weights_leaves_nothing_behind(cls):
    # autograd.grad of the input runs every step but not the weights' node; the terms it left must not count in
    # the full backward that follows on the same (retained) graph
    m, x = _layer_and_grads(cls)
    loss = lambda out: out[0].pow(2).sum()  # noqa: E731
    want = _step_by_step(m, x, loss)
    y = loss(m(x))
    (gx,) = wb.autograd.grad(y, x, retain_graph=True)
    y.backward()
    for n, g in _grads(m).items():
        np.testing.assert_allclose(g, want[n], rtol=1e-12, atol=1e-14, err_msg=n)
    np.testing.assert_allclose(gx.numpy(), x.grad.numpy(), rtol=1e-12)


def test_retained_graph_backward_twice_and_interleaved_runs_each_count_once():
    m, x = _layer_and_grads("LSTM")
    loss = lambda out: out[0].sum()  # noqa: E731
    want = _step_by_step(m, x, loss)
    y = loss(m(x))
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    for n, g in _grads(m).items():
        np.testing.assert_allclose(g, 2 * want[n], rtol=1e-12, atol=1e-14, err_msg=n)
    # a debugger's run paused midway while a whole backward runs on the same graph: both count, once each
    m.zero_grad()
    run = wb.autograd.iter_backward([y], [wb.tensor(1.0, dtype=wb.float64)], retain_graph=True)
    for _ in range(7):
        next(run)
    y.backward(retain_graph=True)
    for _ in run:
        pass
    for n, g in _grads(m).items():
        np.testing.assert_allclose(g, 2 * want[n], rtol=1e-12, atol=1e-14, err_msg=n)


def test_frozen_recurrent_weights_and_no_grad_take_the_plain_product():
    m, x = _layer_and_grads("GRU")
    m.weight_hh_l0.requires_grad_(False)
    m.bias_hh_l0.requires_grad_(False)
    m(x)[0].sum().backward()
    assert m.weight_hh_l0.grad is None and m.bias_hh_l0.grad is None and m.weight_ih_l0.grad is not None
    m.weight_hh_l0.requires_grad_(True)
    m.bias_hh_l0.requires_grad_(False)  # the weight alone
    m.zero_grad()
    loss = lambda out: out[0].pow(2).sum()  # noqa: E731
    want = _step_by_step(m, x, loss)
    loss(m(x)).backward()
    np.testing.assert_allclose(m.weight_hh_l0.grad.numpy(), want["weight_hh_l0"], rtol=1e-12, atol=1e-14)
    assert m.bias_hh_l0.grad is None
    with wb.no_grad():
        assert m(x)[0].grad_fn is None


def test_the_shared_weights_raise_when_changed_in_place_before_backward():
    m, x = _layer_and_grads("LSTM")
    y = m(x)[0].sum()
    with wb.no_grad():
        m.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_the_shared_weight_gradient_by_finite_differences():
    wb.manual_seed(0)
    m = wb.nn.LSTM(2, 3).double()
    x = wb.randn(4, 2, 2, dtype=wb.float64)

    def f(w_hh, b_hh):
        return wb.func.functional_call(m, {"weight_hh_l0": w_hh, "bias_hh_l0": b_hh}, (x,))[0]

    assert wb.autograd.gradcheck(f, (m.weight_hh_l0.detach().clone().requires_grad_(),
                                     m.bias_hh_l0.detach().clone().requires_grad_()))
    assert wb.autograd.gradgradcheck(f, (m.weight_hh_l0.detach().clone().requires_grad_(),
                                         m.bias_hh_l0.detach().clone().requires_grad_()))


@pytest.mark.parametrize("reentrant", [True, False])
def test_the_shared_weights_under_checkpointing_and_func_grad(reentrant):
    # checkpoint recomputes the layer inside the backward (a nested run with its own RecurrentWeights); func.grad
    # differentiates through functional_call: both give the plain backward's gradients
    from workbench.func import functional_call, grad
    from workbench.utils.checkpoint import checkpoint
    m, x = _layer_and_grads("LSTM", num_layers=2)
    m(x)[0].pow(2).sum().backward()
    want, want_x = _grads(m), x.grad.numpy().copy()
    m.zero_grad()
    x.grad = None
    checkpoint(lambda t: m(t)[0], x, use_reentrant=reentrant).pow(2).sum().backward()
    for n, g in _grads(m).items():
        np.testing.assert_array_equal(g, want[n], err_msg=n)
    np.testing.assert_array_equal(x.grad.numpy(), want_x)
    params = {k: v.detach() for k, v in m.named_parameters()}
    g = grad(lambda p: functional_call(m, p, (x.detach(),))[0].pow(2).sum())(params)
    for n in params:
        np.testing.assert_array_equal(g[n].numpy(), want[n], err_msg=n)


def test_backward_runs_in_two_threads_keep_their_own_weight_terms():
    import threading
    models = [_layer_and_grads("GRU", seed=s) for s in (5, 6)]
    loss = lambda out: out[0].pow(2).sum()  # noqa: E731
    want = [_step_by_step(m, x, loss) for m, x in models]
    bad = []

    def work(k):
        m, x = models[k]
        for _ in range(15):
            m.zero_grad()
            loss(m(x)).backward()
            for n, g in _grads(m).items():
                if not np.allclose(g, want[k][n], rtol=1e-12, atol=1e-14):
                    bad.append((k, n))

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
