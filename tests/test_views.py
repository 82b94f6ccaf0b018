"""Views share memory and the version counter exactly where PyTorch's do; in-place ops through views
(CopySlices) give PyTorch's gradients."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

VIEWS = {
    "view": lambda x: x.view(4, 6),
    "reshape": lambda x: x.reshape(2, 12),
    "flatten": lambda x: x.flatten(1),
    "unflatten": lambda x: x.unflatten(2, (2, 2)),
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(1, 2, 0),
    "movedim": lambda x: x.movedim(0, -1),
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(2, 3),
    "slice": lambda x: x[1:, ::2, 1:3],
    "ellipsis_none": lambda x: x[..., None, 2],
    "diagonal": lambda x: x.diagonal(1, 1, 2),
    "unfold": lambda x: x.unfold(2, 2, 2),
    "as_strided": lambda x: x.as_strided((3, 3), (2, 5), 4),
    "unbind": lambda x: x.unbind(1)[2],
    "split": lambda x: x.split(2, 1)[1],
    "chunk": lambda x: x.chunk(2, 2)[1],
    "tensor_split": lambda x: x.tensor_split(3, 1)[2],
    "view_as": lambda x: x.view_as(x.new_zeros(6, 4) if hasattr(x, "new_zeros") else None),
    "mT": lambda x: x.mT,
    "detach": lambda x: x.detach(),
}
COPIES = {
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(1, 0),
    "repeat": lambda x: x.repeat(1, 1, 1),
    "advanced": lambda x: x[[0, 1]],
    "mask": lambda x: x[x > 5],
    "tril": lambda x: x.tril(),
    "reshape_noncontig": lambda x: x.transpose(0, 1).reshape(-1),
    "cat": lambda x: (wb if isinstance(x, wb.Tensor) else torch).cat([x, x]),
    "diag": lambda x: x[0].diag(),
}


def _pair():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return wb.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory_and_layout_with_base(name):
    fn = VIEWS[name]
    if name == "view_as":
        fn = lambda x: x.view_as(x.reshape(6, 4))  # noqa: E731
    x, tx = _pair()
    v, tv = fn(x), fn(tx)
    assert tuple(v.shape) == tuple(tv.shape)
    # strides of size-1 dims are arbitrary (NumPy and PyTorch pick different ones)
    assert [s for s, n in zip(v.stride(), v.shape) if n != 1] == [s for s, n in zip(tv.stride(), tv.shape) if n != 1]
    assert v.storage_offset() == tv.storage_offset()
    assert (v.data_ptr() - x.data_ptr()) // 4 == (tv.data_ptr() - tx.data_ptr()) // 4
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    if name in ("expand", "detach"):
        return
    # a write through the view shows in the base, and both see the bump of the shared version counter
    v.add_(100)
    tv.add_(100)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert x._version == tx._version and v._version == tv._version


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_do_not_alias(name):
    x, tx = _pair()
    c, tc = COPIES[name](x), COPIES[name](tx)
    np.testing.assert_array_equal(c.numpy(), tc.numpy())
    assert (c._base is None) == (tc._base is None) or name == "cat"
    c.add_(1)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert x._version == 0


INPLACE_ON_VIEWS = {
    "row_mul": lambda x, w: x[0].mul_(2),
    "diag_add": lambda x, w: x.diagonal().add_(w[0, :3]),
    "transposed_col": lambda x, w: x.t()[1].mul_(w[1, :3]),
    "setitem_slice": lambda x, w: x.__setitem__((slice(None), 1), w[1, :3]),
    "setitem_advanced": lambda x, w: x.__setitem__(([0, 2], [1, 3]), w[0, :2] * 3),
    "setitem_mask": lambda x, w: x.__setitem__(x > 0, 0.0),
    "narrow_chain": lambda x, w: x.narrow(1, 1, 3)[:, ::2].sub_(w[2, :2]),
    "unfold": lambda x, w: x.unfold(1, 2, 2).mul_(3),
    "copy_into_select": lambda x, w: x.select(1, 2).copy_(w[2, :3]),
    "zero_column": lambda x, w: x[:, 0].zero_(),
}


@pytest.mark.parametrize("name", sorted(INPLACE_ON_VIEWS))
def test_inplace_through_views_gives_pytorch_gradients(name):
    rng = np.random.default_rng(0)
    a_np, w_np = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    grads = []
    for lib in (wb, torch):
        a = lib.tensor(a_np, requires_grad=True)
        w = lib.tensor(w_np, requires_grad=True)
        x = a * 1.5  # a non-leaf that requires grad
        INPLACE_ON_VIEWS[name](x, w)
        (x * x.detach().sin()).sum().backward() if lib is wb else (x * x.detach().sin()).sum().backward()
        grads.append((x.detach().numpy(), a.grad.numpy(), None if w.grad is None else w.grad.numpy()))
    (xv, ga, gw), (txv, tga, tgw) = grads
    np.testing.assert_allclose(xv, txv, rtol=1e-12)
    np.testing.assert_allclose(ga, tga, rtol=1e-12)
    assert (gw is None) == (tgw is None)
    if gw is not None:
        np.testing.assert_allclose(gw, tgw, rtol=1e-12)


def test_inplace_on_view_of_leaf_that_requires_grad_raises():
    a = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        a[0].mul_(2)
    with pytest.raises(RuntimeError, match="leaf"):
        a.unsqueeze(0).add_(1)


def test_modifying_a_saved_tensor_through_a_view_is_caught():
    a = wb.ones(3, requires_grad=True)
    y = a.exp()  # exp saves its output
    y[1:].zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_setitem_on_fake_cuda(fake_cuda):
    x = wb.zeros(3, 4, device="cuda")
    x[1] = 2.0
    x[:, wb.tensor([0, 3])] = wb.tensor([5.0, 6.0], device="cuda")
    x[x > 5.5] = -1.0
    want = np.zeros((3, 4))
    want[1] = 2
    want[:, [0, 3]] = [5, 6]
    want[want > 5.5] = -1
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert x.device.type == "cuda"


def test_setitem_broadcast_and_dtype_cast():
    x = wb.zeros(2, 3, dtype=wb.int64)
    x[:, 1:] = wb.tensor([1.7, -2.2])  # float values into an int tensor truncate, as in PyTorch
    tx = torch.zeros(2, 3, dtype=torch.int64)
    tx[:, 1:] = torch.tensor([1.7, -2.2])
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_indexing_a_1d_tensor_gives_a_0d_view():
    x = wb.arange(3.0)
    for v in (x[1], x.select(0, 1), x.unbind()[1]):
        assert v._base is x and v.ndim == 0
    x[1].mul_(5)
    x.select(0, 2).add_(1)
    assert x.tolist() == [0.0, 5.0, 3.0]


def test_assigning_a_tensor_that_requires_grad_into_a_plain_tensor(fake_cuda):
    for dev in ("cpu", "cuda"):
        w = wb.tensor([2.0, 3.0], device=dev, requires_grad=True)
        x = wb.zeros(2, 3, device=dev)
        x[:, 1] = w
        x[0].mul_(w[1])
        assert x.requires_grad and not x.is_leaf
        (x * wb.arange(6.0, device=dev).view(2, 3)).sum().backward()
        tw = torch.tensor([2.0, 3.0], requires_grad=True)
        tx = torch.zeros(2, 3)
        tx[:, 1] = tw
        tx[0].mul_(tw[1])
        (tx * torch.arange(6.0).view(2, 3)).sum().backward()
        np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy())
        assert w.grad.device.type == dev


def test_metadata_inplace_ops_match_pytorch():
    for name, args in (("unsqueeze_", (1,)), ("squeeze_", ()), ("t_", ()), ("transpose_", (0, 1)),
                       ("swapaxes_", (1, 0)), ("as_strided_", ((2,), (2,)))):
        res = []
        for L in (wb, torch):
            x = L.arange(6.0).view(2, 3) if name != "squeeze_" else L.arange(3.0).view(1, 3)
            v = x[0]
            out = getattr(x, name)(*args)
            got = [out is x, tuple(x.shape), x.stride(), x._version, v._version, x.numpy().copy()]
            if name != "as_strided_":
                a = L.ones(2, 3, dtype=L.float64, requires_grad=True)
                b = a * L.arange(6.0, dtype=L.float64).view(2, 3)
                getattr(b, name)(*args) if name != "squeeze_" else b.unsqueeze_(0).squeeze_()
                (b * b).sum().backward()
                got.append(a.grad.numpy())
            res.append(got)
        for o, t in zip(*res):
            np.testing.assert_array_equal(np.asarray(o), np.asarray(t), err_msg=name)


def test_a_view_made_under_no_grad_refuses_in_place_ops_in_grad_mode():
    # PyTorch's CreationMeta.NO_GRAD_MODE: the op would change a tensor that requires grad without recording it
    # (its gradients silently wrong); inside no_grad, or on a view of a tensor that does not require grad, it runs
    y = wb.randn(4, 3, requires_grad=True) * 1
    with wb.no_grad():
        v, pieces = y[0], y.split(2)
        v.view(3)  # a view of the view inherits the mark
    for t in (v, pieces[0], v.view(3)):
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
            t.mul_(2)
    with wb.no_grad():
        v.mul_(2)
    z = wb.randn(4, 3)
    with wb.no_grad():
        w = z[0]
    w.mul_(2)


def test_dims_added_by_none_have_pytorch_strides():
    # x[None], x[:, None], x[..., None]: the stride of an added dim is PyTorch's unsqueeze's (NumPy gives 0)
    for key in [(None,), (slice(None), None), (0, None), (Ellipsis, None), (None, Ellipsis)]:
        x, t = wb.arange(24.0).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
        assert x[key].stride() == t[key].stride(), key
        x[key].view(-1)  # a view of a contiguous tensor, as PyTorch's
