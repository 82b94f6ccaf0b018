"""Run a layer in workbench and in PyTorch with the same weights (copied via state_dict) and compare."""
import numpy as np
import torch

import workbench as wb


def to_wb(x):
    if isinstance(x, np.ndarray):
        return wb.tensor(x)
    return x


def to_torch(x):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy())
    return x


def copy_state(tm, wm):
    """PyTorch module's state -> workbench module, through NumPy."""
    sd = {k: wb.tensor(v.detach().cpu().numpy().copy()) for k, v in tm.state_dict().items()}
    res = wm.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys
    assert list(wm.state_dict()) == list(tm.state_dict())


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(_flat(o))
        return r
    if hasattr(out, "data") and hasattr(out, "batch_sizes"):  # PackedSequence
        return [out.data]
    return [out] if out is not None else []


def compare(make, inputs, kwargs=None, grad_inputs=True, rtol=1e-7, atol=1e-9, train=True, dtype=np.float64,
            seed=0, eval_only=False):
    """Build ``make(torch.nn)`` and ``make(wb.nn)``, copy weights, compare outputs and every gradient.

    ``grad_inputs``: True (every floating input), False, or the indices of the inputs to differentiate.
    """
    kwargs = kwargs or {}
    torch.manual_seed(seed)
    tm = make(torch.nn)
    wm = make(wb.nn)
    if dtype == np.float64:
        tm.double()
        wm.double()
    if not train:
        tm.eval()
        wm.eval()
    copy_state(tm, wm)
    ti = [to_torch(x) for x in inputs]
    wi = [to_wb(x) for x in inputs]
    if grad_inputs:
        which = range(len(ti)) if grad_inputs is True else grad_inputs
        for i in which:
            t, w = ti[i], wi[i]
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                t.requires_grad_(True)
                w.requires_grad_(True)
    tk = {k: to_torch(v) for k, v in kwargs.items()}
    wk = {k: to_wb(v) for k, v in kwargs.items()}
    tout = _flat(tm(*ti, **tk))
    wout = _flat(wm(*wi, **wk))
    assert len(tout) == len(wout)
    for t, w in zip(tout, wout):
        assert tuple(t.shape) == tuple(w.shape), (t.shape, w.shape)
        np.testing.assert_allclose(w.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    if eval_only:
        return tm, wm
    rng = np.random.default_rng(seed + 1)
    cots = [rng.standard_normal(tuple(t.shape)).astype(t.detach().numpy().dtype) for t in tout]
    tl = sum((t * torch.from_numpy(c)).sum() for t, c in zip(tout, cots) if t.requires_grad)
    wl = None
    for w, c in zip(wout, cots):
        if w.requires_grad:
            term = (w * wb.tensor(c)).sum()
            wl = term if wl is None else wl + term
    tl.backward()
    wl.backward()
    for t, w in zip(ti, wi):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    tp = dict(tm.named_parameters())
    for name, p in wm.named_parameters():
        tg = tp[name].grad
        if tg is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
            continue
        assert p.grad is not None, f"no gradient for {name}"
        np.testing.assert_allclose(p.grad.numpy(), tg.numpy(), rtol=rtol, atol=atol, err_msg=name)
    for (name, b), (_, tb) in zip(wm.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=rtol, atol=atol, err_msg=name)
    return tm, wm
