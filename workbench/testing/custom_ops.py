"""Testing a custom op's CUDA kernel against its CPU reference."""
from .. import _backend, autograd
from ..library.custom_op import resolve
from ..tensor import Tensor

np = _backend.numpy


def _to(v, device):
    if isinstance(v, Tensor):
        return v.detach().to(device).clone().requires_grad_(v.requires_grad)
    if isinstance(v, (list, tuple)):
        return type(v)(_to(x, device) for x in v)
    return v


def _tensors(v):
    if isinstance(v, Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    return []


def _host(t):
    return _backend.to_device(t._data, _backend.CPU)


def assert_matches_reference(op, args, kwargs=None, *, device="cuda", rtol=1e-5, atol=1e-6, grads=True):
    """Run ``op`` on ``device`` copies of ``args`` (its CUDA kernel) and on CPU copies (its reference), and assert the
    outputs, and the input gradients through the registered backward for the same output gradients, agree.

    On a GPU this tests the kernel. On the fake cupy of CPU-only CI a kernel whose threads are independent runs
    on the CPU emulator (``workbench.testing.cuda_emulator``), so its numbers are tested too; for one the
    emulator refuses (shared memory, atomics) the reference stands in and only the dispatch is tested: outputs
    and gradients placed on the device, and the tape node recorded there.

    >>> import workbench as wb
    >>> from workbench.testing.custom_ops import assert_matches_reference
    >>> @wb.library.custom_op("doc::half", mutates_args=())
    ... def half(x: wb.Tensor) -> wb.Tensor:
    ...     return x * 0.5
    >>> assert_matches_reference(half, (wb.ones(3),), device="cpu")
    """
    opdef = resolve(op)
    opdef._reference()  # raises when the op has no CPU reference
    kwargs = dict(kwargs or {})
    ref_args, dev_args = _to(tuple(args), "cpu"), _to(tuple(args), device)
    ref_kw, dev_kw = _to(kwargs, "cpu"), _to(kwargs, device)
    ref = opdef(*ref_args, **ref_kw)
    out = opdef(*dev_args, **dev_kw)
    r_outs, d_outs = _tensors(ref), _tensors(out)
    assert len(r_outs) == len(d_outs), f"{opdef._qualname}: {len(d_outs)} outputs on {device}, {len(r_outs)} on cpu"
    for i, (r, d) in enumerate(zip(r_outs, d_outs)):
        assert d.device.type == _backend.resolve_device(device).type, \
            f"{opdef._qualname}: output {i} is on {d.device}, expected {device}"
        assert r.shape == d.shape and r.dtype == d.dtype, \
            f"{opdef._qualname}: output {i} is {d.dtype} {list(d.shape)} on {device}, {r.dtype} {list(r.shape)} on cpu"
        np.testing.assert_allclose(_host(d), _host(r), rtol=rtol, atol=atol,
                                   err_msg=f"{opdef._qualname}: output {i}, {device} kernel vs CPU reference")
    inputs_r = [t for t in _tensors(list(ref_args) + list(ref_kw.values())) if t.requires_grad]
    inputs_d = [t for t in _tensors(list(dev_args) + list(dev_kw.values())) if t.requires_grad]
    diff = [(r, d) for r, d in zip(r_outs, d_outs) if r.grad_fn is not None]
    if not grads or not inputs_r or not diff:
        return
    rng = np.random.default_rng(0)
    g_host = [rng.standard_normal(r.shape).astype(r._data.dtype) for r, _ in diff]
    g_r = autograd.grad([r for r, _ in diff], inputs_r, [Tensor._make(g) for g in g_host], allow_unused=True)
    g_d = autograd.grad([d for _, d in diff], inputs_d,
                        [Tensor._make(_backend.to_device(g, d.device)) for g, (_, d) in zip(g_host, diff)],
                        allow_unused=True)
    for i, (a, b) in enumerate(zip(g_r, g_d)):
        assert (a is None) == (b is None), f"{opdef._qualname}: input {i} got a gradient on one device only"
        if a is not None:
            assert b.device == inputs_d[i].device, f"{opdef._qualname}: gradient {i} is on {b.device}"
            np.testing.assert_allclose(_host(b), _host(a), rtol=rtol, atol=atol,
                                       err_msg=f"{opdef._qualname}: gradient of input {i}, {device} vs CPU reference")
