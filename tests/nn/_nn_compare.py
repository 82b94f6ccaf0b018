"""Run a layer in workbench and in PyTorch with the same weights (copied via state_dict) and compare.

``device`` is the conftest fixture's value: "cpu", or "cuda" (the fake cupy, or real CuPy on a GPU).
Workbench runs on it; PyTorch runs on CUDA only where workbench has a real GPU and torch can use it.
"""
import numpy as np
import torch

import workbench as wb
from workbench import _backend


def torch_device(device):
    """Where the PyTorch oracle runs for a workbench ``device``."""
    real = device == "cuda" and not getattr(_backend._cupy, "__fake__", False)
    return "cuda" if real and torch.cuda.is_available() else "cpu"


def to_wb(x, device="cpu"):
    if isinstance(x, np.ndarray):
        return wb.tensor(x, device=device)
    return x


def to_torch(x, device="cpu"):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy()).to(torch_device(device))
    return x


def host(t):
    """A workbench or torch tensor's values as a NumPy array."""
    return t.detach().cpu().numpy()


def copy_state(tm, wm):
    """PyTorch module's state -> workbench module, through NumPy."""
    sd = {k: wb.tensor(host(v).copy()) for k, v in tm.state_dict().items()}
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


def _on(t, device):
    """Check a workbench tensor lives on ``device`` (a hidden host round trip would land it on "cpu")."""
    assert t.device.type == device, f"expected a {device} tensor, got {t.device}"
    return host(t)


def compare(make, inputs, kwargs=None, grad_inputs=True, rtol=1e-7, atol=1e-9, train=True, dtype=np.float64,
            seed=0, eval_only=False, device="cpu"):
    """Build ``make(torch.nn)`` and ``make(wb.nn)``, copy weights, compare outputs and every gradient.

    ``grad_inputs``: True (every floating input), False, or the indices of the inputs to differentiate.
    ``device``: where the workbench module and inputs live; every output, gradient and buffer must stay there.
    """
    kwargs = kwargs or {}
    if dtype == np.float32 and torch_device(device) == "cuda":  # TF32 and other reduction orders
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-5)
    tdev = torch_device(device)
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
    tm.to(tdev)
    wm.to(device)
    ti = [to_torch(x, device) for x in inputs]
    wi = [to_wb(x, device) for x in inputs]
    if grad_inputs:
        which = range(len(ti)) if grad_inputs is True else grad_inputs
        for i in which:
            t, w = ti[i], wi[i]
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                t.requires_grad_(True)
                w.requires_grad_(True)
    tk = {k: to_torch(v, device) for k, v in kwargs.items()}
    wk = {k: to_wb(v, device) for k, v in kwargs.items()}
    tout = _flat(tm(*ti, **tk))
    wout = _flat(wm(*wi, **wk))
    assert len(tout) == len(wout)
    for t, w in zip(tout, wout):
        assert tuple(t.shape) == tuple(w.shape), (t.shape, w.shape)
        np.testing.assert_allclose(_on(w, device), host(t), rtol=rtol, atol=atol)
    if eval_only:
        return tm, wm
    rng = np.random.default_rng(seed + 1)
    cots = [rng.standard_normal(tuple(t.shape)).astype(host(t).dtype) for t in tout]
    tl = sum((t * to_torch(c, device)).sum() for t, c in zip(tout, cots) if t.requires_grad)
    wl = None
    for w, c in zip(wout, cots):
        if w.requires_grad:
            term = (w * to_wb(c, device)).sum()
            wl = term if wl is None else wl + term
    tl.backward()
    wl.backward()
    for t, w in zip(ti, wi):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            np.testing.assert_allclose(_on(w.grad, device), host(t.grad), rtol=rtol, atol=atol)
    tp = dict(tm.named_parameters())
    for name, p in wm.named_parameters():
        assert p.device.type == device, name
        tg = tp[name].grad
        if tg is None:
            assert p.grad is None or not np.any(host(p.grad)), name
            continue
        assert p.grad is not None, f"no gradient for {name}"
        np.testing.assert_allclose(_on(p.grad, device), host(tg), rtol=rtol, atol=atol, err_msg=name)
    for (name, b), (_, tb) in zip(wm.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(_on(b, device), host(tb), rtol=rtol, atol=atol, err_msg=name)
    return tm, wm
