"""Specs of embedding_bag, one_hot and local_response_norm (workbench.nn.functional), ``F.<op>``.

The NumPy references loop over bags and channels as the definitions read: a bag is a row of a 2-D input
or the entries from one offset to the next (with include_last_offset the last offset is the input's length, as PyTorch documents),
padding_idx entries leave their bag (and its count), an empty bag is zeros; local_response_norm divides
by size the sum of squares over channels [c - size//2, c + (size-1)//2] (zero beyond the edges).
"""
import numpy as np

import workbench.nn.functional as F
from workbench.testing.op_specs import Sample, arr, spec


def _tf():
    import torch.nn.functional as TF

    return TF


def _torch(name):
    return lambda *a, **k: getattr(_tf(), name)(*a, **k)


def _bags(idx, offsets, include_last_offset):
    if idx.ndim == 2:
        m = idx.shape[1]
        return [range(i * m, (i + 1) * m) for i in range(idx.shape[0])]
    off = [int(o) for o in offsets]
    ends = off[1:] if include_last_offset else off[1:] + [len(idx)]
    return [range(s, e) for s, e in zip(off, ends)]


def np_embedding_bag(idx, w, offsets=None, mode="mean", per_sample_weights=None, include_last_offset=False,
                     padding_idx=None):
    flat = idx.reshape(-1)
    psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    pad = None if padding_idx is None else padding_idx % len(w)
    bags = _bags(idx, offsets, include_last_offset)
    out = np.zeros((len(bags), w.shape[1]), w.dtype)
    for b, members in enumerate(bags):
        live = [j for j in members if flat[j] != pad]
        if not live:
            continue
        rows = w[flat[live]] * (psw[live][:, None] if psw is not None else 1)
        out[b] = {"sum": rows.sum, "mean": rows.mean, "max": rows.max}[mode](0)
    return out


def _bag(lib):
    def op(idx, w, *rest, bind=(), **k):
        return (F if lib == 0 else _tf()).embedding_bag(idx, w, **dict(zip(bind, rest)), **k)

    return op


def _np_bag(idx, w, *rest, bind=(), **k):
    return np_embedding_bag(idx, w, **dict(zip(bind, rest)), **k)


def np_one_hot(x, num_classes=-1):
    n = int(x.max()) + 1 if num_classes == -1 else num_classes
    return (x[..., None] == np.arange(n)).astype(np.int64)


def np_local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    div = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - size // 2), min(c - 1, i + (size - 1) // 2)
        div[:, i] = (x[:, lo:hi + 1] ** 2).sum(1) / size
    return x / (k + alpha * div) ** beta


# --- specs ------------------------------------------------------------------------------------------
W = arr(6, 3, seed=20)
I1 = np.array([0, 2, 2, 5, 1, 4, 3, 5])
OFF = np.array([0, 3, 3, 5])  # bags [0, 3), [3, 3) (empty), [3, 5), [5, 8)
I2 = np.array([[0, 2, 4], [5, 1, 1], [3, 3, 0]])
PSW = arr(8, low=0.2, high=1.5, seed=21)
_bag_samples = []
for mode in ("sum", "mean", "max"):
    _bag_samples += [Sample([I2, W], {"mode": mode}),
                     Sample([I1, W, OFF], {"bind": ("offsets",), "mode": mode}),
                     Sample([I1, W, OFF], {"bind": ("offsets",), "mode": mode, "padding_idx": 5}),
                     Sample([I1, W, np.append(OFF, 8)], {"bind": ("offsets",), "mode": mode,
                                                         "include_last_offset": True}),
                     Sample([I2, W], {"mode": mode, "padding_idx": -6})]
_bag_samples += [Sample([I1, W, OFF, PSW], {"bind": ("offsets", "per_sample_weights"), "mode": "sum"}),
                 Sample([I2, W, arr(3, 3, low=0.2, high=1.5, seed=22)],
                        {"bind": ("per_sample_weights",), "mode": "sum", "padding_idx": 1}),
                 Sample([I1, W, OFF, PSW], {"bind": ("offsets", "per_sample_weights"), "mode": "sum",
                                            "padding_idx": 2})]
spec("F.embedding_bag", _bag(0), _np_bag, _bag_samples, torch_op=_bag(1))

spec("F.one_hot", lambda x, **k: F.one_hot(x, **k), np_one_hot,
     [Sample([np.array([0, 3, 1, 1])]), Sample([np.array([[2, 0], [1, 4]])], {"num_classes": 6}),
      Sample([np.array(2)], {"num_classes": 3}), Sample([np.zeros((0, 2), np.int64)], {"num_classes": 4})],
     torch_op=_torch("one_hot"), dtypes=("int64",),
     no_grad="an integer op: int64 class indices in, an int64 encoding out, nothing to differentiate (PyTorch's "
             "one_hot has no gradient either)")

spec("F.local_response_norm", lambda x, *a, **k: F.local_response_norm(x, *a, **k), np_local_response_norm,
     [Sample([arr(2, 5, 3), 3], {"alpha": 0.5}),
      Sample([arr(2, 4, 3, 2, seed=1), 2], {"alpha": 0.8, "beta": 0.9, "k": 2.0}),
      Sample([arr(1, 3, 2, 2, 2, seed=2), 5], {"alpha": 1.5, "beta": 0.5, "k": 1.5}),
      Sample([arr(2, 4, 3, seed=3), 1]),
      Sample([arr(2, 6, 2, 3, seed=4), 4], {"alpha": 2.0})],
     torch_op=_torch("local_response_norm"))
