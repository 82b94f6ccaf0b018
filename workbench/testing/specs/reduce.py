"""Specs of the reductions and scans: values against NumPy and PyTorch, gradients (ties and zeros included
where PyTorch's rule is the contract)."""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec


def S(*args, **kwargs):
    return Sample(list(args), kwargs)


X = arr(3, 4, 5)
M = arr(4, 5, seed=1)
V = arr(6, seed=2)
# ties: amax/amin split the gradient among equal extremes; prod/cumprod with zeros
TIES = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, -1.0, 0.5], [2.0, -4.0, -4.0, 1.0]])
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 2.0], [1.2, -0.7, 2.0, 0.9]])


def _np_dims(k):
    d = k.get("dim")
    return tuple(d) if isinstance(d, (list, tuple)) else d


def T(*args, **kwargs):
    """A sample at a tie: values only (finite differences are meaningless there; test_reduce.py checks
    PyTorch's tie-splitting gradients)."""
    return Sample(list(args), kwargs, values_only="a tie: the gradient is not differentiable there (test_reduce.py "
                                                  "checks PyTorch's tie-splitting)")


def _red(name, np_fn, samples, torch_name=None, **kw):
    spec(name, lambda x, **k: getattr(wb, name)(x, **k),
         lambda x, **k: np_fn(x, axis=_np_dims(k), keepdims=k.get("keepdim", False)), samples,
         torch_op=lambda x, **k: getattr(x, torch_name or name)(**k), **kw)


_DIMS = [S(X), S(X, dim=1), S(X, dim=(0, 2), keepdim=True), S(X, dim=-1, keepdim=False)]
spec("sum_dims", lambda x, **k: x.sum(**k), lambda x, **k: np.sum(x, axis=_np_dims(k), keepdims=k.get("keepdim", False)),
     _DIMS, torch_op=lambda x, **k: x.sum(**k))
_red("mean", np.mean, _DIMS)
_red("nansum", np.nansum, [S(X), S(X, dim=1)])
_red("nanmean", np.nanmean, [S(X, dim=(0, 1))])
_red("amax", np.amax, [S(X, dim=1), T(TIES, dim=1, keepdim=True), T(TIES)])
_red("amin", np.amin, [S(X, dim=(0, 2)), T(TIES, dim=0)])
_red("logsumexp", lambda x, axis, keepdims: __import__("scipy.special").special.logsumexp(x, axis, keepdims=keepdims),
     [S(X, dim=1), S(X * 5 + 900, dim=(0, 2), keepdim=True)])
spec("prod", lambda x, **k: x.prod(**k), lambda x, **k: np.prod(x, axis=k.get("dim"), keepdims=k.get("keepdim", False)),
     [S(M), S(M, dim=1), S(ZEROS, dim=1), S(ZEROS, dim=0, keepdim=True), S(ZEROS)], torch_op=lambda x, **k: x.prod(**k))
spec("cumsum", lambda x, d: x.cumsum(d), lambda x, d: np.cumsum(x, axis=d), [S(X, 1), S(V, 0)],
     torch_op=lambda x, d: x.cumsum(d))
spec("cumprod", lambda x, d: x.cumprod(d), lambda x, d: np.cumprod(x, axis=d), [S(M, 1), S(ZEROS, 1), S(ZEROS, 0)],
     torch_op=lambda x, d: x.cumprod(d))
spec("cummax", lambda x, d: wb.cummax(x, d), lambda x, d: np.maximum.accumulate(x, axis=d), [S(M, 1), T(TIES, 1)],
     torch_op=lambda x, d: x.cummax(d), output_index=0)
spec("cummin", lambda x, d: wb.cummin(x, d), lambda x, d: np.minimum.accumulate(x, axis=d), [S(M, 0), T(TIES, 1)],
     torch_op=lambda x, d: x.cummin(d), output_index=0)
spec("max_full", lambda x: x.max(), np.max, [S(X), T(TIES)], torch_op=lambda x: x.max())
spec("min_full", lambda x: x.min(), np.min, [S(M), T(TIES)], torch_op=lambda x: x.min())
spec("max_dim", lambda x, d, **k: wb.max(x, d, **k),
     lambda x, d, keepdim=False: (np.max(x, d, keepdims=keepdim), np.argmax(x, d, keepdims=keepdim)),
     [S(X, 1), S(M, 0, keepdim=True)], torch_op=lambda x, d, **k: x.max(d, **k), output_index=0)
spec("min_dim", lambda x, d, **k: wb.min(x, d, **k),
     lambda x, d, keepdim=False: (np.min(x, d, keepdims=keepdim), np.argmin(x, d, keepdims=keepdim)),
     [S(X, -1)], torch_op=lambda x, d, **k: x.min(d, **k), output_index=0)
spec("max_binary", lambda a, b: wb.max(a, b), np.maximum, [S(M, arr(4, 5, seed=7))], torch_op=lambda a, b: a.max(b))
spec("median_full", lambda x: x.median(), lambda x: np.sort(x.ravel())[(x.size - 1) // 2], [S(M), S(V)],
     torch_op=lambda x: x.median())
spec("median_dim", lambda x, d: wb.median(x, d), lambda x, d: np.take(np.sort(x, d), (x.shape[d] - 1) // 2, d),
     [S(X, 1), S(M, 0)], torch_op=lambda x, d: x.median(d), output_index=0)
spec("nanmedian", lambda x, d: wb.nanmedian(x, d), lambda x, d: np.take(np.sort(x, d), (x.shape[d] - 1) // 2, d),
     [S(M, 1)], torch_op=lambda x, d: x.nanmedian(d), output_index=0)
_MODE = np.array([[1.0, 2.0, 2.0, 3.0, 3.0, 1.0], [4.0, 4.0, 0.5, 0.5, 0.5, 4.0]])
spec("mode", lambda x: wb.mode(x), lambda x: np.array([1.0, 0.5]), [T(_MODE)], torch_op=lambda x: x.mode(),
     output_index=0)
spec("var", lambda x, **k: wb.var(x, **k), lambda x, **k: np.var(x, axis=_np_dims(k), ddof=k.get("correction", 1),
                                                                  keepdims=k.get("keepdim", False)),
     [S(X), S(X, dim=1), S(X, dim=(0, 2), correction=0, keepdim=True), S(V, correction=2)],
     torch_op=lambda x, **k: x.var(**k))
spec("std", lambda x, **k: wb.std(x, **k), lambda x, **k: np.std(x, axis=_np_dims(k), ddof=k.get("correction", 1),
                                                                  keepdims=k.get("keepdim", False)),
     [S(X), S(X, dim=-1, correction=0)], torch_op=lambda x, **k: x.std(**k))
spec("var_mean", lambda x, d: wb.var_mean(x, d), lambda x, d: (np.var(x, d, ddof=1), np.mean(x, d)), [S(M, 1)],
     torch_op=lambda x, d: __import__("torch").var_mean(x, d), output_index=0)
spec("std_mean", lambda x, d: wb.std_mean(x, d), lambda x, d: (np.std(x, d, ddof=1), np.mean(x, d)), [S(M, 0)],
     torch_op=lambda x, d: __import__("torch").std_mean(x, d), output_index=0)


def _np_norm(x, p="fro", dim=None, keepdim=False):
    ax = dim if not isinstance(dim, list) else tuple(dim)
    a = np.abs(x)
    if p in ("fro", 2):
        r = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    elif p == np.inf:
        r = np.max(a, axis=ax, keepdims=keepdim)
    elif p == -np.inf:
        r = np.min(a, axis=ax, keepdims=keepdim)
    else:
        r = np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1 / p)
    return r


spec("norm", lambda x, **k: wb.norm(x, **k), _np_norm,
     [S(X), S(X, p=2, dim=1), S(X, p=1, dim=(0, 2), keepdim=True), S(M, p=3, dim=0), S(M, p=float("inf")),
      S(M, p=float("-inf"), dim=1), S(X, p="fro", dim=(1, 2)), S(V, p=0.5)],
     torch_op=lambda x, **k: x.norm(**k))
# the method is its own function (PyTorch's takes dtype where torch.norm takes out)
spec("norm_method", lambda x, **k: x.norm(**k), _np_norm, [S(M, p=2, dim=1), S(X, p=1, dim=(0, 2), keepdim=True)],
     torch_op=lambda x, **k: x.norm(**k))
spec("diff", lambda x, **k: wb.diff(x, **k), lambda x, **k: np.diff(x, **{("axis" if a == "dim" else a): v
                                                                          for a, v in k.items()}),
     [S(M), S(M, n=2, dim=0), S(V, n=3)], torch_op=lambda x, **k: x.diff(**k))
