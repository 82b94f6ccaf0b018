"""Specs of the shape ops: views, joins and splits, reorderings, grids and padding."""
import numpy as np

import workbench as wb
from workbench.ops.pad import pad as wb_pad
from workbench.testing.op_specs import Sample, arr, spec


def same(name, fn, ref, samples, **kw):
    """An op whose workbench and PyTorch spellings are the same code."""
    spec(name, fn, ref, samples, torch_op=fn, **kw)


def _tpad(x, p, mode="constant", value=None):
    import torch

    return torch.nn.functional.pad(x, p, mode=mode, value=value)


def _np_pad(x, p, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for i in range(len(p) // 2):
        widths[x.ndim - 1 - i] = (p[2 * i], p[2 * i + 1])
    if mode == "constant":
        # negative pads crop
        crop = tuple(slice(max(-lo, 0), x.shape[d] - max(-hi, 0)) for d, (lo, hi) in enumerate(widths))
        x = x[crop]
        return np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in widths], constant_values=value)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


same("reshape", lambda x: x.reshape(4, -1), lambda x: x.reshape(4, -1), [Sample([arr(3, 4)])])
same("view", lambda x: x.view(3, 2, 2), lambda x: x.reshape(3, 2, 2), [Sample([arr(3, 4)])])
same("flatten", lambda x: x.flatten(1), lambda x: x.reshape(2, -1), [Sample([arr(2, 3, 4)])])
same("ravel", lambda x: x.ravel(), lambda x: x.ravel(), [Sample([arr(2, 3)])])
same("unflatten", lambda x: x.unflatten(1, (2, -1)), lambda x: x.reshape(3, 2, 2), [Sample([arr(3, 4)])])
same("squeeze", lambda x: x.squeeze(), np.squeeze, [Sample([arr(1, 3, 1, 2)])])
same("squeeze_dims", lambda x: x.squeeze((0, 1)), lambda x: x.squeeze(0), [Sample([arr(1, 3, 1, 2)])])
same("unsqueeze", lambda x: x.unsqueeze(-2), lambda x: np.expand_dims(x, -2), [Sample([arr(3, 4)])])
same("transpose", lambda x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2), [Sample([arr(2, 3, 4)])])
same("permute", lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1), [Sample([arr(2, 3, 4)])])
same("movedim", lambda x: x.movedim((0, 1), (2, 0)), lambda x: np.moveaxis(x, (0, 1), (2, 0)),
     [Sample([arr(2, 3, 4)])])
same("expand", lambda x: x.expand(2, 3, -1), lambda x: np.broadcast_to(x, (2, 3, 4)), [Sample([arr(3, 4)[:1]])])
same("broadcast_to", lambda x: x.broadcast_to((2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)),
     [Sample([arr(3, 1)])])
spec("broadcast_tensors", lambda a, b: wb.broadcast_tensors(a, b), np.broadcast_arrays,
     [Sample([arr(2, 1), arr(3, seed=1)], nondiff=(1,))], torch_op=lambda a, b: __import__("torch").broadcast_tensors(a, b))
same("repeat", lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)), [Sample([arr(2, 3)])])
same("tile", lambda x: x.tile((2,)), lambda x: np.tile(x, (1, 2)), [Sample([arr(2, 3)])])
same("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1), lambda x: np.repeat(x, 2, axis=1),
     [Sample([arr(2, 3)])])
same("repeat_interleave_flat", lambda x: x.repeat_interleave(3), lambda x: np.repeat(x, 3), [Sample([arr(2, 2)])])
same("repeat_interleave_tensor", lambda x, r: x.repeat_interleave(r, dim=0), lambda x, r: np.repeat(x, r, axis=0),
     [Sample([arr(3, 2), np.array([2, 0, 1])])])
spec("cat", lambda a, b: wb.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1),
     [Sample([arr(2, 3), arr(2, 2, seed=1)])], torch_op=lambda a, b: __import__("torch").cat([a, b], 1))
spec("cat_promote", lambda a, b: wb.cat([a, b]), lambda a, b: np.concatenate([a, b]).astype(a.dtype),
     [Sample([arr(2, 3), np.arange(3).reshape(1, 3)])], torch_op=lambda a, b: __import__("torch").cat([a, b]))
spec("stack", lambda a, b: wb.stack([a, b], -1), lambda a, b: np.stack([a, b], -1),
     [Sample([arr(2, 3), arr(2, 3, seed=1)])], torch_op=lambda a, b: __import__("torch").stack([a, b], -1))
spec("hstack", lambda a, b: wb.hstack([a, b]), lambda a, b: np.hstack([a, b]), [Sample([arr(3), arr(2, seed=1)])],
     torch_op=lambda a, b: __import__("torch").hstack([a, b]))
spec("vstack", lambda a, b: wb.vstack([a, b]), lambda a, b: np.vstack([a, b]), [Sample([arr(3), arr(2, 3, seed=1)])],
     torch_op=lambda a, b: __import__("torch").vstack([a, b]))
spec("dstack", lambda a, b: wb.dstack([a, b]), lambda a, b: np.dstack([a, b]), [Sample([arr(3), arr(3, seed=1)])],
     torch_op=lambda a, b: __import__("torch").dstack([a, b]))
same("split", lambda x: x.split(2, 1), lambda x: tuple(np.split(x, [2, 4], 1)), [Sample([arr(2, 5)])])
same("split_sizes", lambda x: x.split([1, 3], 0), lambda x: tuple(np.split(x, [1], 0)), [Sample([arr(4, 2)])])
same("chunk", lambda x: x.chunk(3, -1), lambda x: tuple(np.split(x, [3, 6], -1)), [Sample([arr(2, 7)])])
same("tensor_split", lambda x: x.tensor_split(3, 1), lambda x: tuple(np.array_split(x, 3, 1)), [Sample([arr(2, 7)])])
same("tensor_split_indices", lambda x: x.tensor_split([1, 4]), lambda x: tuple(np.split(x, [1, 4])),
     [Sample([arr(5, 2)])])
same("unbind", lambda x: x.unbind(1), lambda x: tuple(np.moveaxis(x, 1, 0)), [Sample([arr(2, 3)])])
same("narrow", lambda x: x.narrow(1, 1, 2), lambda x: x[:, 1:3], [Sample([arr(3, 4)])])
same("select", lambda x: x.select(1, -1), lambda x: x[:, -1], [Sample([arr(3, 4)])])
same("flip", lambda x: x.flip(0, 2), lambda x: np.flip(x, (0, 2)), [Sample([arr(2, 3, 4)])])
same("fliplr", lambda x: x.fliplr(), np.fliplr, [Sample([arr(2, 3)])])
same("flipud", lambda x: x.flipud(), np.flipud, [Sample([arr(2, 3)])])
same("roll", lambda x: x.roll((1, -2), (0, 1)), lambda x: np.roll(x, (1, -2), (0, 1)), [Sample([arr(3, 4)])])
same("roll_flat", lambda x: x.roll(5), lambda x: np.roll(x, 5), [Sample([arr(3, 4)])])
for _k in (1, 2, 3):
    same(f"rot90_{_k}", lambda x, k=_k: x.rot90(k, (1, 0)), lambda x, k=_k: np.rot90(x, k, (1, 0)),
         [Sample([arr(2, 3)])])
same("tril", lambda x: x.tril(-1), lambda x: np.tril(x, -1), [Sample([arr(2, 3, 4)])])
same("triu", lambda x: x.triu(1), lambda x: np.triu(x, 1), [Sample([arr(3, 4)])])
same("diag_1d", lambda x: x.diag(1), lambda x: np.diag(x, 1), [Sample([arr(3)])])
same("diag_2d", lambda x: x.diag(-1), lambda x: np.diag(x, -1), [Sample([arr(3, 4)])])
same("diagonal", lambda x: x.diagonal(1, 2, 0), lambda x: np.diagonal(x, 1, 2, 0), [Sample([arr(3, 2, 4)])])


def _np_diag_embed(x, offset, d1, d2):
    m = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (m, m), x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    # out has the diagonal dims last; move them to d1, d2
    return np.moveaxis(out, (-2, -1), (d1, d2))


same("diag_embed", lambda x: x.diag_embed(-1, 0, 2), lambda x: _np_diag_embed(x, -1, 0, 2), [Sample([arr(2, 3)])])
same("unfold", lambda x: x.unfold(1, 3, 2), lambda x: np.lib.stride_tricks.sliding_window_view(x, 3, 1)[:, ::2],
     [Sample([arr(2, 7)])])
same("unfold_overlap", lambda x: x.unfold(0, 2, 1), lambda x: np.lib.stride_tricks.sliding_window_view(x, 2, 0),
     [Sample([arr(4, 2)])])
same("as_strided", lambda x: x.contiguous().as_strided((3, 3), (1, 2), 1),
     lambda x: np.lib.stride_tricks.as_strided(np.ascontiguousarray(x).ravel()[1:], (3, 3), (x.itemsize, 2 * x.itemsize)),
     [Sample([arr(3, 4)])])
# view_as splits the last dim only, so that every non-contiguous layout the suite tries can be viewed (merging the
# dims of a transposed tensor is refused, as PyTorch does: tests/test_tensor.py)
same("view_as", lambda x, o: x.view_as(o), lambda x, o: x.reshape(o.shape),
     [Sample([arr(2, 6), arr(2, 3, 2)], nondiff=(1,))])
same("reshape_as", lambda x, o: x.reshape_as(o), lambda x, o: x.reshape(o.shape),
     [Sample([arr(2, 6), arr(4, 3)], nondiff=(1,))])
spec("atleast_3d", lambda x: wb.atleast_3d(x), np.atleast_3d, [Sample([arr(3)]), Sample([arr(2, 3)])],
     torch_op=lambda x: __import__("torch").atleast_3d(x))
def _grid_product(mesh):
    # one output that depends on every input, so the PyTorch comparison checks every gradient
    def op(*xs, indexing):
        gs = mesh(*xs, indexing=indexing)
        out = gs[0]
        for k, g in enumerate(gs[1:], 2):
            out = out + g * k
        return out, *gs
    return op


spec("meshgrid_xy", lambda a, b: _grid_product(wb.meshgrid)(a, b, indexing="xy"),
     lambda a, b: _grid_product(np.meshgrid)(a, b, indexing="xy"), [Sample([arr(3), arr(2, seed=1)])],
     torch_op=lambda a, b: _grid_product(__import__("torch").meshgrid)(a, b, indexing="xy"))
spec("meshgrid_ij", lambda a, b, c: _grid_product(wb.meshgrid)(a, b, c, indexing="ij"),
     lambda a, b, c: _grid_product(np.meshgrid)(a, b, c, indexing="ij"),
     [Sample([arr(2), arr(3, seed=1), arr(2, seed=2)])],
     torch_op=lambda a, b, c: _grid_product(__import__("torch").meshgrid)(a, b, c, indexing="ij"))
spec("cartesian_prod", lambda a, b: wb.cartesian_prod(a, b),
     lambda a, b: np.stack([g.ravel() for g in np.meshgrid(a, b, indexing="ij")], 1), [Sample([arr(3), arr(2, seed=1)])],
     torch_op=lambda a, b: __import__("torch").cartesian_prod(a, b))
spec("pad_constant", lambda x: wb_pad(x, (1, 2, 0, -1), value=0.5), lambda x: _np_pad(x, (1, 2, 0, -1), value=0.5),
     [Sample([arr(2, 3, 4)])], torch_op=lambda x: _tpad(x, (1, 2, 0, -1), value=0.5))
for _mode in ("reflect", "replicate", "circular"):
    spec(f"pad_{_mode}", lambda x, m=_mode: wb_pad(x, (2, 1, 1, 2), mode=m),
         lambda x, m=_mode: _np_pad(x, (2, 1, 1, 2), mode=m), [Sample([arr(1, 3, 4)])],
         torch_op=lambda x, m=_mode: _tpad(x, (2, 1, 1, 2), mode=m))


def _t(name):
    return lambda *a, **k: getattr(__import__("torch"), name)(*a, **k)


spec("hsplit", lambda x: wb.hsplit(x, 2), lambda x: tuple(np.hsplit(x, 2)), [Sample([arr(2, 4)])], torch_op=lambda x: _t("hsplit")(x, 2))
spec("vsplit", lambda x: wb.vsplit(x, [1, 2]), lambda x: tuple(np.vsplit(x, [1, 2])), [Sample([arr(4, 2)])],
     torch_op=lambda x: _t("vsplit")(x, [1, 2]))
spec("select_scatter", lambda x, s: wb.select_scatter(x, s, 1, -1),
     lambda x, s: (lambda y: (y.__setitem__((slice(None), -1), s), y)[1])(x.copy()), [Sample([arr(3, 4), arr(3, seed=1)])],
     torch_op=lambda x, s: _t("select_scatter")(x, s, 1, -1))
spec("slice_scatter", lambda x, s: wb.slice_scatter(x, s, 1, 0, 4, 2),
     lambda x, s: (lambda y: (y.__setitem__((slice(None), slice(0, 4, 2)), s), y)[1])(x.copy()),
     [Sample([arr(3, 4), arr(3, 2, seed=1)])], torch_op=lambda x, s: _t("slice_scatter")(x, s, 1, 0, 4, 2))
spec("diagonal_scatter", lambda x, s: wb.diagonal_scatter(x, s, -1),
     lambda x, s: (lambda y: (y.__setitem__((np.arange(1, 3), np.arange(2)), s), y)[1])(x.copy()),
     [Sample([arr(3, 4), arr(2, seed=1)])], torch_op=lambda x, s: _t("diagonal_scatter")(x, s, -1))
spec("block_diag", lambda a, b: wb.block_diag(a, b), lambda a, b: np.block([[a, np.zeros((2, 3))], [np.zeros((1, 2)), b]]),
     [Sample([arr(2, 2), arr(3, seed=1)])], torch_op=lambda a, b: _t("block_diag")(a, b))
spec("diagflat", lambda x: wb.diagflat(x, 1), lambda x: np.diagflat(x, 1), [Sample([arr(2, 2)])],
     torch_op=lambda x: _t("diagflat")(x, 1))
spec("combinations", lambda x: wb.combinations(x, 2, with_replacement=True),
     lambda x: np.array([[x[i], x[j]] for i in range(3) for j in range(i, 3)]), [Sample([arr(3)])],
     torch_op=lambda x: _t("combinations")(x, 2, with_replacement=True))
spec("as_strided_scatter", lambda x, s: wb.as_strided_scatter(x, s, (2, 2), (1, 3), 1),
     lambda x, s: (lambda y: (np.lib.stride_tricks.as_strided(y.ravel()[1:], (2, 2), (y.itemsize, 3 * y.itemsize)).__setitem__(
         Ellipsis, s), y)[1])(np.ascontiguousarray(x).copy()), [Sample([arr(2, 4), arr(2, 2, seed=1)])],
     no_torch="PyTorch 2.13's gradient of as_strided_scatter w.r.t. input is masked the wrong way round, passing "
              "the gradient through the overwritten elements; gradcheck confirms workbench's")
