"""Specs of the spatial neural-network functions: pooling, unpooling, transposed and time-major convolution,
padding, resampling (upsample, affine_grid, grid_sample), shuffles, and the bag/attention composites.

Every reference below is NumPy written out window by window (loops over output positions: the samples
are small); PyTorch is compared on top (``torch_op``).
"""
import itertools
import math
from functools import partial

import numpy as np

import workbench.nn.functional as F
from workbench.testing.op_specs import Sample, arr, rng, spec
from workbench.testing.specs.nn import _torch, np_conv1d, np_sdpa, np_sigmoid, np_softmax


def _tup(v, nd):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd


def _pool_len(n, k, s, p, d, ceil_mode):
    # PyTorch's output length; with ceil_mode the last window must start inside the input or the left padding
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil_mode else num // s) + 1
    return o - 1 if ceil_mode and (o - 1) * s >= n + p else o


def _argmax_windows(x, nd, windows):
    """(values, flat indices) of the max over each window; windows: {output position: per-dim tap lists}.
    The first maximum in window order wins; indices are flat over the (unpadded) spatial dims."""
    sp = x.shape[-nd:]
    osize = tuple(max(o[i] for o in windows) + 1 for i in range(nd))
    vals = np.empty(x.shape[:-nd] + osize, x.dtype)
    idx = np.empty(x.shape[:-nd] + osize, np.int64)
    for o, taps in windows.items():
        w = x[(Ellipsis,) + np.ix_(*taps)].reshape(x.shape[:-nd] + (-1,))
        a = w.argmax(-1)
        vals[(Ellipsis,) + o] = np.take_along_axis(w, a[..., None], -1)[..., 0]
        local = np.unravel_index(a, [len(t) for t in taps])
        flat = 0
        for i in range(nd):
            flat = flat * sp[i] + np.asarray(taps[i])[local[i]]
        idx[(Ellipsis,) + o] = flat
    return vals, idx


def np_max_pool(nd, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    k, p, d = _tup(kernel_size, nd), _tup(padding, nd), _tup(dilation, nd)
    s = _tup(stride or kernel_size, nd)
    sp = x.shape[-nd:]
    osize = [_pool_len(*a, ceil_mode) for a in zip(sp, k, s, p, d)]
    windows = {o: [[t for t in (oi * si - pi + j * di for j in range(ki)) if 0 <= t < n]
                   for oi, si, pi, di, ki, n in zip(o, s, p, d, k, sp)] for o in np.ndindex(*osize)}
    vals, idx = _argmax_windows(x, nd, windows)
    return (vals, idx) if return_indices else vals


def _adaptive_windows(sp, out):
    return {o: [list(range(i * n // m, -(-(i + 1) * n // m))) for i, n, m in zip(o, sp, out)]
            for o in np.ndindex(*out)}


def np_adaptive_max_pool(nd, x, output_size, return_indices=False):
    vals, idx = _argmax_windows(x, nd, _adaptive_windows(x.shape[-nd:], _tup(output_size, nd)))
    return (vals, idx) if return_indices else vals


def np_adaptive_avg_pool(nd, x, output_size):
    out = _tup(output_size, nd)
    y = np.empty(x.shape[:-nd] + out, x.dtype)
    for o, taps in _adaptive_windows(x.shape[-nd:], out).items():
        y[(Ellipsis,) + o] = x[(Ellipsis,) + np.ix_(*taps)].reshape(x.shape[:-nd] + (-1,)).mean(-1)
    return y


def _avg_windows(nd, sp, k, s, p, ceil_mode):
    """{output position: (per-dim taps inside the input, per-dim window lengths counting padding)}."""
    out = {}
    for o in np.ndindex(*[_pool_len(n, kk, ss, pp, 1, ceil_mode) for n, kk, ss, pp in zip(sp, k, s, p)]):
        starts = [oi * ss - pp for oi, ss, pp in zip(o, s, p)]
        ends = [min(a + kk, n + pp) for a, kk, n, pp in zip(starts, k, sp, p)]
        out[o] = ([list(range(max(a, 0), min(b, n))) for a, b, n in zip(starts, ends, sp)],
                  [b - a for a, b in zip(starts, ends)])
    return out


def np_avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    k, p = _tup(kernel_size, 3), _tup(padding, 3)
    s = _tup(stride or kernel_size, 3)
    windows = _avg_windows(3, x.shape[-3:], k, s, p, ceil_mode)
    osize = tuple(max(o[i] for o in windows) + 1 for i in range(3))
    y = np.empty(x.shape[:-3] + osize, x.dtype)
    for o, (taps, lens) in windows.items():
        total = x[(Ellipsis,) + np.ix_(*taps)].sum((-3, -2, -1))
        div = divisor_override or (math.prod(lens) if count_include_pad else math.prod(len(t) for t in taps))
        y[(Ellipsis,) + o] = total / div
    return y


def np_lp_pool(nd, x, norm_type, kernel_size, stride=None, ceil_mode=False):
    # PyTorch's definition: avg_pool of x**p (no padding) times the kernel's size, to the power 1/p; a clipped
    # ceil_mode window is averaged over its clipped length before that scaling
    k = _tup(kernel_size, nd)
    s = _tup(stride or kernel_size, nd)
    windows = _avg_windows(nd, x.shape[-nd:], k, s, (0,) * nd, ceil_mode)
    osize = tuple(max(o[i] for o in windows) + 1 for i in range(nd))
    y = np.empty(x.shape[:-nd] + osize, x.dtype)
    axes = tuple(range(-nd, 0))
    for o, (taps, lens) in windows.items():
        total = (x[(Ellipsis,) + np.ix_(*taps)] ** norm_type).sum(axes)
        y[(Ellipsis,) + o] = (total * math.prod(k) / math.prod(lens)) ** (1.0 / norm_type)
    return y


def np_max_unpool(nd, x, indices, kernel_size, stride=None, padding=0, output_size=None):
    k, p = _tup(kernel_size, nd), _tup(padding, nd)
    s = _tup(stride or kernel_size, nd)
    if output_size is None:
        out = tuple((i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(x.shape[-nd:], s, p, k))
    else:
        out = tuple(output_size)[-nd:]
    lead = x.shape[:-nd]
    y = np.zeros(lead + (math.prod(out),), x.dtype)
    xf, jf = x.reshape(lead + (-1,)), indices.reshape(lead + (-1,))
    for plane in np.ndindex(*lead):
        y[plane][jf[plane]] = xf[plane]
    return y.reshape(lead + out)


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = x.ndim - 2
    s, p, op, d = (_tup(v, nd) for v in (stride, padding, output_padding, dilation))
    n, ci = x.shape[:2]
    sp, ks, og = x.shape[2:], w.shape[2:], w.shape[1]
    full = [(i - 1) * ss + dd * (kk - 1) + 1 + oo for i, ss, dd, kk, oo in zip(sp, s, d, ks, op)]
    y = np.zeros((n, og * groups) + tuple(full), np.result_type(x, w))
    cg = ci // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for kpos in np.ndindex(*ks):
            contrib = np.einsum("nc...,co->no...", xs, w[(slice(g * cg, (g + 1) * cg), slice(None)) + kpos])
            taps = tuple(slice(kk * dd, kk * dd + ss * (i - 1) + 1, ss) for kk, dd, ss, i in zip(kpos, d, s, sp))
            y[(slice(None), slice(g * og, (g + 1) * og)) + taps] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(pp, f - pp) for pp, f in zip(p, full))]
    return y + b.reshape((1, -1) + (1,) * nd) if b is not None else y


def np_pad(x, pad, mode="constant", value=None):
    # negative pads crop; np.pad's modes 'edge' and 'wrap' are PyTorch's 'replicate' and 'circular'
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    x = x[tuple(slice(max(-lo, 0), x.shape[j] - max(-hi, 0)) for j, (lo, hi) in enumerate(widths))]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    extra = {"constant_values": value or 0} if mode == "constant" else {}
    return np.pad(x, widths, mode=np_mode, **extra)


def np_resize_matrix(n_in, n_out, mode, align_corners=False, scale=None):
    """(n_out, n_in) weights of PyTorch's 1-D resize: nearest or linear; scale is in/out (1/scale_factor)."""
    scale = n_in / n_out if scale is None else scale
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        if mode == "nearest":
            m[i, min(int(math.floor(i * scale)), n_in - 1)] = 1.0
            continue
        src = i * (n_in - 1) / (n_out - 1) if align_corners else max((i + 0.5) * scale - 0.5, 0.0)
        lo = min(int(src), n_in - 1)
        m[i, lo] += 1 - (src - lo)
        m[i, min(lo + 1, n_in - 1)] += src - lo
    return m


def np_resize(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    nd = x.ndim - 2
    if size is not None:
        out, scales = _tup(size, nd), [None] * nd
    else:
        sf = _tup(scale_factor, nd)
        out, scales = [int(math.floor(n * f)) for n, f in zip(x.shape[2:], sf)], [1 / f for f in sf]
    kind = "nearest" if mode == "nearest" else "linear"
    for i, (n, o, sc) in enumerate(zip(x.shape[2:], out, scales)):
        x = np.moveaxis(np.tensordot(x, np_resize_matrix(n, o, kind, bool(align_corners), sc), ([2 + i], [1])),
                        -1, 2 + i)
    return x


def np_affine_grid(theta, size, align_corners=False):
    sp = size[2:]
    axes = [np.linspace(-1, 1, n) if align_corners else (np.arange(n) * 2 + 1) / n - 1 for n in sp]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m for m in reversed(mesh)] + [np.ones(tuple(sp))], -1)  # x (width) first
    return np.einsum("...k,njk->n...j", base, theta)


def _reflect(c, lo, hi):
    span = hi - lo
    if span <= 0:
        return 0.0
    d = abs(c - lo)
    flips, extra = divmod(d, span)
    return lo + extra if flips % 2 == 0 else hi - extra


def _source(c, n, padding_mode, align_corners):
    if padding_mode == "border":
        return min(max(c, 0.0), n - 1.0)
    if padding_mode == "reflection":
        c = _reflect(c, 0.0, n - 1.0) if align_corners else _reflect(c, -0.5, n - 0.5)
        return min(max(c, 0.0), n - 1.0)
    return c


def _cubic(t):
    a = -0.75
    u, v = t + 1, 2 - t
    return [((a * u - 5 * a) * u + 8 * a) * u - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1, ((a * v - 5 * a) * v + 8 * a) * v - 4 * a]


def np_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    nd = x.ndim - 2
    sp = x.shape[2:]
    y = np.zeros(x.shape[:2] + grid.shape[1:-1], np.result_type(x, grid))

    def at(b, pos):  # the value at integer position pos, zero outside the input
        if all(0 <= q < n for q, n in zip(pos, sp)):
            return x[(b, slice(None)) + tuple(pos)]
        return 0.0

    for b, *o in np.ndindex(*grid.shape[:-1]):
        g = grid[(b, *o)]
        raw = [((g[nd - 1 - i] + 1) / 2 * (n - 1)) if align_corners else (((g[nd - 1 - i] + 1) * n - 1) / 2)
               for i, n in enumerate(sp)]
        if mode == "bicubic":  # taps around the raw position, each tap's position then mapped by the padding mode
            lo = [math.floor(c) for c in raw]
            wy, wx = _cubic(raw[0] - lo[0]), _cubic(raw[1] - lo[1])
            for i, j in itertools.product(range(4), range(4)):
                pos = [round(_source(lo[0] - 1 + i, sp[0], padding_mode, align_corners)),
                       round(_source(lo[1] - 1 + j, sp[1], padding_mode, align_corners))]
                y[(b, slice(None), *o)] += wy[i] * wx[j] * at(b, pos)
            continue
        c = [_source(v, n, padding_mode, align_corners) for v, n in zip(raw, sp)]
        if mode == "nearest":
            y[(b, slice(None), *o)] = at(b, [int(np.rint(v)) for v in c])
            continue
        lo = [math.floor(v) for v in c]
        for bits in itertools.product((0, 1), repeat=nd):
            wgt = math.prod((v - q) if bit else (1 - (v - q)) for v, q, bit in zip(c, lo, bits))
            y[(b, slice(None), *o)] += wgt * at(b, [q + bit for q, bit in zip(lo, bits)])
    return y


def np_embedding_bag(idx, weight, offsets=None, mode="mean", per_sample_weights=None, include_last_offset=False,
                     padding_idx=None):
    if idx.ndim == 2:
        bags = list(idx)
        psw = list(per_sample_weights) if per_sample_weights is not None else None
    else:
        starts = list(offsets[:-1] if include_last_offset else offsets)
        ends = starts[1:] + [len(idx)]
        bags = [idx[a:b] for a, b in zip(starts, ends)]
        psw = [per_sample_weights[a:b] for a, b in zip(starts, ends)] if per_sample_weights is not None else None
    out = np.zeros((len(bags), weight.shape[1]), weight.dtype)
    for i, bag in enumerate(bags):
        keep = [j for j, t in enumerate(bag) if t != padding_idx]
        if not keep:
            continue
        rows = weight[bag[keep]]
        if psw is not None:
            rows = rows * psw[i][keep][:, None]
        out[i] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


def np_local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    div = np.empty_like(x)
    for i in range(c):  # the channel window [i - size//2, i + (size-1)//2], zeros outside, divided by size
        lo, hi = max(i - size // 2, 0), min(i + (size - 1) // 2, c - 1)
        div[:, i] = (x[:, lo:hi + 1] ** 2).sum(1) / size
    return x / (k + alpha * div) ** beta


def np_mha(q, k, v, e, h, w_in, b_in, bias_k, bias_v, add_zero_attn, dropout_p, w_out, b_out, training=True,
           key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,
           q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, average_attn_weights=True):
    unbatched = q.ndim == 2
    if unbatched:
        q, k, v = q[:, None], k[:, None], v[:, None]
        key_padding_mask = key_padding_mask[None] if key_padding_mask is not None else None
    ws = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else np.split(w_in, 3)
    bs = np.split(b_in, 3) if b_in is not None else (0, 0, 0)
    q, k, v = (t @ w.T + b for t, w, b in zip((q, k, v), ws, bs))  # (L, N, E)
    n = q.shape[1]
    mask = np.zeros((n, 1, q.shape[0], k.shape[0]))
    if attn_mask is not None:
        mask = mask + (np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == bool else attn_mask)
    if key_padding_mask is not None:
        mask = mask + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]
    if bias_k is not None:
        k = np.concatenate([k, np.broadcast_to(bias_k.reshape(1, 1, e), (1, n, e))])
        v = np.concatenate([v, np.broadcast_to(bias_v.reshape(1, 1, e), (1, n, e))])
        mask = np.pad(mask, [(0, 0)] * 3 + [(0, 1)])
    heads = lambda t: t.reshape(t.shape[0], n, h, e // h).transpose(1, 2, 0, 3)  # (N, H, L, Dh)
    q, k, v = heads(q), heads(k), heads(v)
    if add_zero_attn:
        k = np.concatenate([k, np.zeros_like(k[:, :, :1])], 2)
        v = np.concatenate([v, np.zeros_like(v[:, :, :1])], 2)
        mask = np.pad(mask, [(0, 0)] * 3 + [(0, 1)])
    wts = np_softmax(q @ k.swapaxes(-1, -2) / math.sqrt(e // h) + mask, -1)  # (N, H, L, S)
    out = (wts @ v).transpose(2, 0, 1, 3).reshape(q.shape[2], n, e) @ w_out.T + b_out
    wts = wts.mean(1) if average_attn_weights else wts
    if unbatched:
        out, wts = out[:, 0], wts[0]
    return out, wts


# --- specs ------------------------------------------------------------------------------------------
def _fn(name):
    return lambda *a, **k: getattr(F, name)(*a, **k)


spec("F.sigmoid", F.sigmoid, np_sigmoid, [Sample([arr(3, 5, low=-4, high=4)])], torch_op=_torch("sigmoid"))
spec("F.tanh", F.tanh, np.tanh, [Sample([arr(3, 5)])], torch_op=_torch("tanh"))

# pooling
spec("F.max_pool1d_with_indices", _fn("max_pool1d_with_indices"), partial(np_max_pool, 1, return_indices=True),
     [Sample([arr(2, 3, 9)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
      Sample([arr(2, 8, seed=1)], {"kernel_size": 2, "dilation": 3})],
     torch_op=_torch("max_pool1d_with_indices"))
spec("F.max_pool2d_with_indices", _fn("max_pool2d_with_indices"), partial(np_max_pool, 2, return_indices=True),
     [Sample([arr(2, 2, 5, 6)], {"kernel_size": (2, 3), "stride": (2, 1), "padding": (1, 1)}),
      Sample([arr(1, 2, 7, 5, seed=1)], {"kernel_size": 2, "dilation": 2, "ceil_mode": True})],
     torch_op=_torch("max_pool2d_with_indices"))
spec("F.max_pool3d", _fn("max_pool3d"), partial(np_max_pool, 3),
     [Sample([arr(1, 1, 4, 5, 4)], {"kernel_size": (2, 3, 2), "stride": (1, 2, 2), "padding": (1, 1, 0)}),
      Sample([arr(2, 3, 4, 3, seed=1)], {"kernel_size": 2, "stride": 1, "dilation": (2, 1, 1)})],
     torch_op=_torch("max_pool3d"))
spec("F.max_pool3d_with_indices", _fn("max_pool3d_with_indices"),
     partial(np_max_pool, 3, return_indices=True),
     [Sample([arr(1, 1, 5, 4, 4)], {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True})],
     torch_op=_torch("max_pool3d_with_indices"))
spec("F.adaptive_max_pool1d", _fn("adaptive_max_pool1d"), partial(np_adaptive_max_pool, 1),
     [Sample([arr(2, 3, 7)], {"output_size": 3}), Sample([arr(3, 5, seed=1)], {"output_size": 5})],
     torch_op=_torch("adaptive_max_pool1d"))
spec("F.adaptive_max_pool1d_with_indices", _fn("adaptive_max_pool1d_with_indices"),
     partial(np_adaptive_max_pool, 1, return_indices=True),
     [Sample([arr(2, 3, 8)], {"output_size": 3})], torch_op=_torch("adaptive_max_pool1d_with_indices"))
spec("F.adaptive_max_pool2d_with_indices", _fn("adaptive_max_pool2d_with_indices"),
     partial(np_adaptive_max_pool, 2, return_indices=True),
     [Sample([arr(1, 2, 5, 7)], {"output_size": (3, 4)})], torch_op=_torch("adaptive_max_pool2d_with_indices"))
spec("F.adaptive_max_pool3d", _fn("adaptive_max_pool3d"), partial(np_adaptive_max_pool, 3),
     [Sample([arr(1, 1, 3, 5, 4)], {"output_size": (2, 3, 2)})], torch_op=_torch("adaptive_max_pool3d"))
spec("F.adaptive_max_pool3d_with_indices", _fn("adaptive_max_pool3d_with_indices"),
     partial(np_adaptive_max_pool, 3, return_indices=True),
     [Sample([arr(2, 4, 3, 5)], {"output_size": (3, 2, 2)})], torch_op=_torch("adaptive_max_pool3d_with_indices"))
spec("F.adaptive_avg_pool1d", _fn("adaptive_avg_pool1d"), partial(np_adaptive_avg_pool, 1),
     [Sample([arr(2, 3, 7)], {"output_size": 3}), Sample([arr(3, 4, seed=1)], {"output_size": 6})],
     torch_op=_torch("adaptive_avg_pool1d"))
spec("F.adaptive_avg_pool3d", _fn("adaptive_avg_pool3d"), partial(np_adaptive_avg_pool, 3),
     [Sample([arr(1, 1, 3, 5, 4)], {"output_size": (2, 3, 3)})], torch_op=_torch("adaptive_avg_pool3d"))
spec("F.avg_pool3d", _fn("avg_pool3d"), np_avg_pool3d,
     [Sample([arr(1, 1, 4, 5, 4)], {"kernel_size": (2, 3, 2), "stride": (2, 2, 1), "padding": (1, 1, 0)}),
      Sample([arr(1, 4, 5, 3, seed=1)], {"kernel_size": 2, "padding": 1, "ceil_mode": True,
                                          "count_include_pad": False}),
      Sample([arr(1, 1, 3, 4, 4, seed=2)], {"kernel_size": 3, "stride": 2, "padding": 1, "divisor_override": 5})],
     torch_op=_torch("avg_pool3d"))
spec("F.lp_pool1d", _fn("lp_pool1d"), partial(np_lp_pool, 1),
     [Sample([arr(1, 2, 8), 2.0, 3], {"stride": 2}),
      Sample([arr(2, 3, 8, positive=True, seed=1), 3, 3], {"ceil_mode": True}),
      Sample([arr(2, 7, seed=2), 1, 2])],
     torch_op=_torch("lp_pool1d"))
spec("F.lp_pool2d", _fn("lp_pool2d"), partial(np_lp_pool, 2),
     [Sample([arr(1, 1, 5, 6), 2, (2, 3)], {"stride": (1, 2)}),
      Sample([arr(2, 5, 5, positive=True, seed=1), 1.5, 2], {"ceil_mode": True})],
     torch_op=_torch("lp_pool2d"))
spec("F.lp_pool3d", _fn("lp_pool3d"), partial(np_lp_pool, 3),
     [Sample([arr(1, 1, 4, 5, 4), 2, (2, 2, 3)], {"stride": (2, 1, 1)}),
      Sample([arr(1, 3, 3, 5, positive=True, seed=1), 3, 2], {"ceil_mode": True})],
     torch_op=_torch("lp_pool3d"))


def _unpool_sample(nd, shape, k, seed=0, **kw):
    # unpool's inputs: the values and indices of a max_pool of a random input, windows not overlapping (an index
    # taken twice would keep one of its two values, and finite differences would see only that one)
    x = arr(*shape, seed=seed)
    y, i = np_max_pool(nd, x, k, kw.get("stride"), kw.get("padding", 0), return_indices=True)
    return Sample([y, i], dict(kernel_size=k, **kw))


spec("F.max_unpool1d", _fn("max_unpool1d"), partial(np_max_unpool, 1),
     [_unpool_sample(1, (2, 3, 8), 2), _unpool_sample(1, (2, 9), 3, seed=1, stride=3, padding=1, output_size=(9,))],
     torch_op=_torch("max_unpool1d"))
spec("F.max_unpool2d", _fn("max_unpool2d"), partial(np_max_unpool, 2),
     [_unpool_sample(2, (2, 2, 4, 6), 2),
      _unpool_sample(2, (1, 2, 5, 5), (3, 2), seed=1, stride=(3, 2), padding=1, output_size=(1, 2, 5, 5))],
     torch_op=_torch("max_unpool2d"))
spec("F.max_unpool3d", _fn("max_unpool3d"), partial(np_max_unpool, 3),
     [_unpool_sample(3, (1, 2, 4, 4, 2), 2), _unpool_sample(3, (2, 5, 3, 3), 2, seed=1, output_size=(5, 3, 3))],
     torch_op=_torch("max_unpool3d"))

# padding: every mode, negative pads (crop) among them
spec("F.pad", _fn("pad"), np_pad,
     [Sample([arr(2, 3, 4), (1, 2)], {"value": 1.5}),
      Sample([arr(2, 5, 4, seed=1), (-1, 2, 3, -2)]),
      Sample([arr(1, 2, 3, 5, seed=2), (2, 1, 1, 2), "reflect"]),
      Sample([arr(2, 3, 6, seed=3), (-1, 2), "reflect"]),
      Sample([arr(1, 1, 3, 3, 4, seed=4), (1, 2, 0, 1, 2, 1), "replicate"]),
      Sample([arr(2, 3, 6, seed=5), (-2, 3), "replicate"]),
      Sample([arr(1, 2, 4, 5, seed=6), (2, 3, 1, 4), "circular"]),
      Sample([arr(2, 3, 6, seed=7), (-1, 2), "circular"]),
      Sample([arr(1, 2, 3, 3, 4, seed=8), (1, -1, 2, 1, 1, 1), "circular"])],
     torch_op=_torch("pad"))


# shuffles
def np_channel_shuffle(x, groups):
    # output channel j = k * groups + g reads input channel g * (C / groups) + k
    c = x.shape[1]
    return x[:, [(j % groups) * (c // groups) + j // groups for j in range(c)]]


def np_pixel_unshuffle(x, downscale_factor):
    r = downscale_factor
    c, h, w = x.shape[-3:]
    y = np.empty(x.shape[:-3] + (c * r * r, h // r, w // r), x.dtype)
    for ch, i, j in itertools.product(range(c), range(r), range(r)):
        y[..., ch * r * r + i * r + j, :, :] = x[..., ch, i::r, j::r]
    return y


spec("F.channel_shuffle", _fn("channel_shuffle"), np_channel_shuffle,
     [Sample([arr(2, 6, 3), 3]), Sample([arr(1, 8, 2, 3, seed=1), 2]), Sample([arr(1, 4, 2, 1, 3, seed=2), 4])],
     torch_op=_torch("channel_shuffle"))
spec("F.pixel_unshuffle", _fn("pixel_unshuffle"), np_pixel_unshuffle,
     [Sample([arr(2, 3, 4, 6), 2]), Sample([arr(2, 6, 3, seed=1), 3]), Sample([arr(2, 1, 2, 4, 2, seed=2), 2])],
     torch_op=_torch("pixel_unshuffle"))


# transposed and time-major convolution
def np_conv_tbc(x, w, b, pad=0):
    # (time, batch, in) input, (kernel, in, out) weight: a 1-D cross-correlation over time
    return np_conv1d(x.transpose(1, 2, 0), w.transpose(2, 1, 0), b, padding=pad).transpose(2, 0, 1)


def _torch_conv_tbc(x, w, b, pad=0):
    import torch  # lazy: PyTorch is only the test oracle

    return torch.conv_tbc(x, w, b, pad)


spec("F.conv_transpose3d", _fn("conv_transpose3d"), np_conv_transpose,
     [Sample([arr(1, 2, 2, 3, 2), arr(2, 2, 2, 2, 3, seed=1), arr(4, seed=2)],
             {"stride": (2, 1, 2), "padding": (1, 0, 1), "output_padding": (1, 0, 1), "groups": 2}),
      Sample([arr(1, 1, 2, 2, 3, seed=3), arr(1, 2, 2, 1, 2, seed=4)], {"dilation": (1, 2, 2)})],
     torch_op=_torch("conv_transpose3d"))
spec("F.conv_tbc", _fn("conv_tbc"), np_conv_tbc,
     [Sample([arr(5, 2, 3), arr(3, 3, 4, seed=1), arr(4, seed=2)]),
      Sample([arr(4, 1, 2, seed=3), arr(2, 2, 3, seed=4), arr(3, seed=5), 1])],
     torch_op=_torch_conv_tbc)

# the deprecated resampling aliases (they warn, then call interpolate)
spec("F.upsample", _fn("upsample"), np_resize,
     [Sample([arr(1, 2, 3, 4)], {"scale_factor": 2}),
      Sample([arr(1, 2, 3, 4, seed=1)], {"size": (5, 6), "mode": "bilinear", "align_corners": False})],
     torch_op=_torch("upsample"))
spec("F.upsample_nearest", _fn("upsample_nearest"), np_resize,
     [Sample([arr(1, 2, 3, 2, 2)], {"size": (4, 3, 5)})], torch_op=_torch("upsample_nearest"))
spec("F.upsample_bilinear", _fn("upsample_bilinear"), partial(np_resize, mode="bilinear", align_corners=True),
     [Sample([arr(2, 1, 3, 4)], {"scale_factor": 2})], torch_op=_torch("upsample_bilinear"))
