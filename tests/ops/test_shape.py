"""Shape ops beyond the generic spec suite: errors vs PyTorch, dtypes, devices, edge cases."""
import numpy as np
import pytest

import workbench as wb
from workbench.ops.pad import pad

from _op_errors import assert_same_error

torch = pytest.importorskip("torch")


def _x(lib, *shape):
    return lib.arange(int(np.prod(shape)), dtype=lib.float32).reshape(*shape)


ERRORS = {
    "channel_shuffle_2d": lambda L: L.channel_shuffle(_x(L, 2, 4), 2),  # regression (op spec): wb accepted it
    "reshape_size": lambda L: _x(L, 2, 3).reshape(5),
    "reshape_two_minus_one": lambda L: _x(L, 2, 3).reshape(-1, -1),
    "view_noncontiguous": lambda L: _x(L, 2, 3).t().view(-1),
    "permute_dims": lambda L: _x(L, 2, 3).permute(0, 0),
    "transpose_dim": lambda L: _x(L, 2, 3).transpose(0, 2),
    "expand_size": lambda L: _x(L, 2, 3).expand(2, 4),
    "cat_sizes": lambda L: L.cat([_x(L, 2, 3), _x(L, 2, 2)]),
    "cat_ndims": lambda L: L.cat([_x(L, 2, 3), _x(L, 3)]),
    "cat_zero_dim": lambda L: L.cat([L.tensor(1.0), L.tensor(2.0)]),
    "cat_empty_list": lambda L: L.cat([]),
    "cat_not_list": lambda L: L.cat(_x(L, 2)),
    "stack_sizes": lambda L: L.stack([_x(L, 2), _x(L, 3)]),
    "narrow_length": lambda L: _x(L, 4).narrow(0, 2, 3),
    "select_index": lambda L: _x(L, 2, 3).select(1, 3),
    "index_out_of_range": lambda L: _x(L, 2, 3)[2],
    "negative_step": lambda L: _x(L, 4)[::-1],
    "chunk_zero": lambda L: _x(L, 4).chunk(0),
    "split_sizes_sum": lambda L: _x(L, 4).split([1, 2]),
    "flip_duplicate_dims": lambda L: _x(L, 2, 3).flip(0, 0),
    "roll_mismatch": lambda L: _x(L, 2, 3).roll((1, 2), 0),
    "rot90_same_dims": lambda L: _x(L, 2, 3).rot90(1, (0, 0)),
    "tril_1d": lambda L: _x(L, 3).tril(),
    "diag_3d": lambda L: _x(L, 2, 2, 2).diag(),
    "diagonal_same_dims": lambda L: _x(L, 2, 2).diagonal(0, 1, 1),
    "unfold_size": lambda L: _x(L, 3).unfold(0, 4, 1),
    "repeat_too_few": lambda L: _x(L, 2, 3).repeat(2),
    "movedim_mismatch": lambda L: _x(L, 2, 3).movedim((0, 1), 0),
    "broadcast_shapes": lambda L: L.broadcast_shapes((2, 3), (4,)),
    "broadcast_tensors": lambda L: L.broadcast_tensors(_x(L, 2, 3), _x(L, 4)),
    "meshgrid_2d": lambda L: L.meshgrid(_x(L, 2, 2), _x(L, 2), indexing="ij"),
    "unflatten_size": lambda L: _x(L, 2, 6).unflatten(1, (4, 2)),
    "flatten_order": lambda L: _x(L, 2, 3, 4).flatten(2, 1),
    "squeeze_dim": lambda L: _x(L, 2, 3).squeeze(3),
    "repeat_interleave_size": lambda L: _x(L, 3).repeat_interleave(L.tensor([1, 2])),
    "tensor_split_zero": lambda L: _x(L, 4).tensor_split(0),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


PAD_ERRORS = {
    "channel_shuffle_2d": lambda L: L.channel_shuffle(_x(L, 2, 4), 2),  # regression (op spec): wb accepted it
    "odd_length": lambda L, F: F(_x(L, 1, 3), (1,)),
    "reflect_too_big": lambda L, F: F(_x(L, 1, 3), (3, 0), mode="reflect"),
    "negative_size": lambda L, F: F(_x(L, 1, 3), (-2, -2)),
    "unknown_mode": lambda L, F: F(_x(L, 1, 3), (1, 1), mode="mirror"),
    "reflect_1d_input": lambda L, F: F(_x(L, 6), (1, 1), mode="reflect"),
    "replicate_pad_too_short": lambda L, F: F(_x(L, 2, 3, 4, 5), (1, 1), mode="replicate"),
}


@pytest.mark.parametrize("name", sorted(PAD_ERRORS))
def test_pad_errors_match_pytorch(name):
    assert_same_error(lambda L: PAD_ERRORS[name](L, torch.nn.functional.pad if L is torch else pad))


@pytest.mark.parametrize("mode", ["circular", "reflect", "replicate"])
def test_negative_pad_crops_before_wrapping_like_pytorch(mode):
    # regression (op spec F.pad): circular padding wrapped the uncropped dim, so (-1, 2) read the cropped element
    x = np.arange(2 * 3 * 6, dtype=np.float64).reshape(2, 3, 6)
    want = torch.nn.functional.pad(torch.tensor(x), (-1, 2), mode=mode).numpy()
    np.testing.assert_array_equal(pad(wb.tensor(x), (-1, 2), mode=mode).numpy(), want)


def test_cat_promotes_and_skips_legacy_empty_tensors():
    a, b = wb.ones(2, 2, dtype=wb.int32), wb.ones(1, 2, dtype=wb.float64)
    r = wb.cat([a, wb.tensor([]), b])
    tr = torch.cat([torch.ones(2, 2, dtype=torch.int32), torch.tensor([]), torch.ones(1, 2, dtype=torch.float64)])
    assert r.dtype == wb.float64 and tr.dtype == torch.float64 and tuple(r.shape) == tuple(tr.shape)
    assert wb.cat([wb.ones(2, dtype=wb.int64), wb.tensor([True])]).dtype == wb.int64


def test_cat_gradient_flows_to_every_input():
    a = wb.ones(2, 2, requires_grad=True)
    b = wb.ones(1, 2, dtype=wb.float64, requires_grad=True)
    (wb.cat([a, b]) * wb.arange(6.0).view(3, 2)).sum().backward()
    assert a.grad.dtype == wb.float32 and b.grad.dtype == wb.float64
    np.testing.assert_array_equal(a.grad.numpy(), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(b.grad.numpy(), [[4, 5]])


def test_split_family_returns_views_of_pytorch_sizes():
    x, tx = _x(wb, 7, 2), _x(torch, 7, 2)
    for fn in (lambda t: t.split(3), lambda t: t.chunk(3), lambda t: t.tensor_split(3), lambda t: t.chunk(5),
               lambda t: t.tensor_split([2, 10]), lambda t: t.unbind(1), lambda t: t.tensor_split(torch.tensor([1, 3])
                                                                                                   if t is tx else
                                                                                                   wb.tensor([1, 3]))):
        ours, theirs = fn(x), fn(tx)
        assert [tuple(o.shape) for o in ours] == [tuple(t.shape) for t in theirs]
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_repeat_interleave_forms():
    assert wb.repeat_interleave(wb.tensor([2, 1])).tolist() == [0, 0, 1]
    x = wb.tensor([[1, 2], [3, 4]])
    assert x.repeat_interleave(wb.tensor([1, 2]), dim=0).tolist() == [[1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(wb.tensor(2)).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]


def test_atleast_and_stacks_match_pytorch():
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for shape in ((), (3,), (2, 3), (1, 2, 3, 1)):
            ours = getattr(wb, fn)(wb.zeros(shape))
            theirs = getattr(torch, fn)(torch.zeros(shape))
            assert tuple(ours.shape) == tuple(theirs.shape), (fn, shape)
    assert len(wb.atleast_2d(wb.zeros(1), wb.zeros(2))) == 2
    for fn in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        ours = getattr(wb, fn)([wb.zeros(3), wb.ones(3)])
        theirs = getattr(torch, fn)([torch.zeros(3), torch.ones(3)])
        assert tuple(ours.shape) == tuple(theirs.shape), fn


def test_meshgrid_default_indexing_warns_like_pytorch():
    with pytest.warns(UserWarning, match="indexing"):
        g = wb.meshgrid(wb.arange(2), wb.arange(3))
    assert tuple(g[0].shape) == (2, 3)
    assert wb.cartesian_prod(wb.tensor([1, 2])).tolist() == [1, 2]


def test_view_dtype_and_flatten_of_scalar():
    x = wb.tensor([1.0], dtype=wb.float32)
    assert x.view(wb.int32).item() == torch.tensor([1.0]).view(torch.int32).item()
    assert tuple(wb.tensor(2.0).flatten().shape) == (1,)
    assert tuple(wb.zeros(2, 0, 3).flatten(1).shape) == (2, 0)


def test_shape_ops_on_fake_cuda(fake_cuda):
    x = wb.arange(12.0, device="cuda").view(3, 4)
    outs = [x.diagonal(), x.unfold(1, 2, 2), x.flip(0), x.roll(1, 1), x.tril(), wb.cat([x, x]), x.repeat(2, 1),
            x.as_strided((2, 2), (1, 4)), pad(x, (1, 1), mode="reflect"), wb.diag_embed(x[0])]
    for o in outs:
        assert o.device.type == "cuda"
    y = wb.arange(12.0).view(3, 4)
    refs = [y.diagonal(), y.unfold(1, 2, 2), y.flip(0), y.roll(1, 1), y.tril(), wb.cat([y, y]), y.repeat(2, 1),
            y.as_strided((2, 2), (1, 4)), pad(y, (1, 1), mode="reflect"), wb.diag_embed(y[0])]
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o.cpu().numpy(), r.numpy())
    a = wb.ones(3, 4, device="cuda", requires_grad=True)
    (a.diagonal().sum() + a.unfold(1, 2, 1).sum()).backward()
    assert a.grad.device.type == "cuda"
    np.testing.assert_array_equal(a.grad.cpu().numpy(), [[2, 2, 2, 1], [1, 3, 2, 1], [1, 2, 3, 1]])


def test_unfold_backward_accumulates_overlaps_like_pytorch():
    a = wb.arange(6.0, requires_grad=True)
    ta = torch.arange(6.0, requires_grad=True)
    (a.unfold(0, 3, 1) ** 2).sum().backward()
    (ta.unfold(0, 3, 1) ** 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


def test_as_strided_relative_to_storage():
    x, tx = _x(wb, 3, 4), _x(torch, 3, 4)
    v, tv = x[1].as_strided((2, 2), (1, 4)), tx[1].as_strided((2, 2), (1, 4))
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    assert v.storage_offset() == tv.storage_offset() == 4
    np.testing.assert_array_equal(x.as_strided((3,), (5,), 0).numpy(), tx.as_strided((3,), (5,), 0).numpy())


def test_index_helpers_and_scatter_variants_match_pytorch():
    for args in ((3, 3), (3, 4, 1), (4, 3, -1), (2, 5, 3), (0, 3)):
        for name in ("tril_indices", "triu_indices"):
            np.testing.assert_array_equal(getattr(wb, name)(*args).numpy(), getattr(torch, name)(*args).numpy())
    x, tx = _x(wb, 3, 4), _x(torch, 3, 4)
    for fn in (lambda L, t: L.diagonal_scatter(t, t.diagonal(-1) * 0, -1),
               lambda L, t: L.slice_scatter(t, t[:, ::2] + 1, 1, step=2),
               lambda L, t: L.select_scatter(t, t[1] * 2, 0, 1), lambda L, t: L.diagflat(t[0]),
               lambda L, t: L.block_diag(t[:2, :2], t[0, :3], t[0, 0]), lambda L, t: L.combinations(t[0], 3)):
        np.testing.assert_array_equal(fn(wb, x).numpy(), fn(torch, tx).numpy())
    assert_same_error(lambda L: L.hsplit(_x(L, 2, 3), 2))
    assert_same_error(lambda L: L.vsplit(_x(L, 3), 1))
    assert_same_error(lambda L: L.select_scatter(_x(L, 2, 3), _x(L, 2), 0, 0))


EMPTY = {
    "diagonal": lambda L: L.zeros(0, 3).diagonal(),
    "diag_embed": lambda L: L.diag_embed(L.zeros(2, 0)),
    "cat": lambda L: L.cat([L.zeros(0, 3), L.ones(2, 3)]),
    "split": lambda L: L.zeros(0, 2).split(1)[0],
    "sort": lambda L: L.sort(L.zeros(0)).values,
    "topk0": lambda L: L.topk(L.ones(3), 0).values,
    "unique": lambda L: L.unique(L.zeros(0)),
    "einsum": lambda L: L.einsum("ij,jk->ik", L.ones(2, 0), L.ones(0, 3)),
    "einsum_broadcast_to_zero": lambda L: L.einsum("ij,jk->ik", L.ones(2, 1), L.ones(0, 3)),
    "matmul": lambda L: L.ones(2, 0) @ L.ones(0, 3),
    "inv": lambda L: L.linalg.inv(L.zeros(0, 0)),
    "det": lambda L: L.linalg.det(L.zeros(0, 0)),
    "det_batch": lambda L: L.linalg.det(L.zeros(0, 2, 2)),
    "nonzero": lambda L: L.nonzero(L.zeros(0, 3)),
    "gather": lambda L: L.gather(L.ones(2, 3), 1, L.zeros(2, 0, dtype=L.int64)),
    "index_select": lambda L: L.ones(2, 3).index_select(1, L.zeros(0, dtype=L.int64)),
    "stack": lambda L: L.stack([L.zeros(0), L.zeros(0)]),
    "repeat": lambda L: L.ones(2).repeat(0, 2),
    "flip": lambda L: L.zeros(0, 2).flip(0),
    "roll": lambda L: L.zeros(0).roll(1),
    "tril": lambda L: L.zeros(0, 3).tril(),
    "meshgrid": lambda L: L.meshgrid(L.zeros(0), L.zeros(2), indexing="ij")[0],
    "svdvals": lambda L: L.linalg.svdvals(L.zeros(0, 3)),
    "vector_norm": lambda L: L.linalg.vector_norm(L.zeros(0)),
    "bincount": lambda L: L.bincount(L.zeros(0, dtype=L.int64)),
    "searchsorted": lambda L: L.searchsorted(L.zeros(0), L.ones(2)),
    "masked_select": lambda L: L.ones(3).masked_select(L.zeros(3, dtype=L.bool)),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_tensors_match_pytorch(name):
    ours, theirs = EMPTY[name](wb), EMPTY[name](torch)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
