"""Tensor summaries for the viewer: statistics computed on the tensor's device, one small copy to the host.

Every summary follows tape.v1's ``summary`` object: shape, dtype, numel, min/max/mean/std/norm over the
finite elements, NaN and Inf counts, a 16-bin histogram, and the values themselves for at most 16
elements. On CuPy all the arithmetic runs on the GPU and only a vector of ~20 numbers crosses to the
host, in one transfer. Summaries are only computed when a viewer asks, never while the tape records.
"""
import math

from .. import _backend

BINS = 16
MAX_VALUES = 16


def json_number(v):
    """A float as tape.v1 JSON carries it: NaN/Inf become "NaN", "Infinity", "-Infinity"."""
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def sig4(v):
    """A float with 4 significant digits as JSON carries it (the monitor's and the tape series' numbers).

    >>> sig4(0.000123456), sig4(float("nan"))
    (0.0001235, 'NaN')
    """
    v = float(v)
    if v != v or v in (math.inf, -math.inf):
        return json_number(v)
    return float(f"{v:.4g}")


def _stat(v):
    return None if v is None or not math.isfinite(v) else float(v)


def _host(arr):
    return _backend.to_device(arr, _backend.CPU)


def _as_float(arr, xp):
    k = arr.dtype.kind
    if k == "c":
        return xp.abs(arr).astype("float64")
    if k == "f" and arr.dtype.itemsize >= 4:
        return arr.astype("float64", copy=False)
    return arr.astype("float64")  # ints, bools, float16 and bfloat16 (ml_dtypes) widen first


def device_stats(arr, bins=BINS):
    """The summary's numbers as one float64 device array (not yet on the host).

    Layout: [nan, inf, count, min, max, mean, std, norm, lo, hi, counts x bins]. Kept separate from
    ``summarize_array`` so callers that summarise many tensors can stack them and copy once.

    >>> import numpy as np
    >>> device_stats(np.array([1.0, np.nan, 3.0]))[:3].tolist()
    [1.0, 0.0, 2.0]
    """
    xp = _backend.xp_of(arr)
    a = _as_float(arr, xp).reshape(-1)
    if a.size == 0:
        return xp.zeros(10 + bins, dtype="float64")
    fin = xp.isfinite(a)
    nan = xp.isnan(a).sum()
    n = fin.sum()
    inf = a.size - n - nan
    az = xp.where(fin, a, 0.0)
    nn = xp.maximum(n, 1)
    mean = az.sum() / nn
    dev = xp.where(fin, a - mean, 0.0)
    std = xp.sqrt((dev * dev).sum() / nn)
    norm = xp.sqrt((az * az).sum())
    lo = xp.where(fin, a, math.inf).min()
    hi = xp.where(fin, a, -math.inf).max()
    lo0 = xp.where(n > 0, lo, 0.0)  # no finite element: keep the arithmetic below finite
    hi0 = xp.where(n > 0, hi, 0.0)
    width = xp.where(hi0 > lo0, hi0 - lo0, 1.0)
    idx = xp.clip(((az - lo0) / width * bins).astype("int64"), 0, bins - 1)
    idx = xp.where(fin, idx, bins)
    counts = xp.bincount(idx, minlength=bins + 1)[:bins].astype("float64")
    head = xp.stack([xp.asarray(x, dtype="float64") for x in (nan, inf, n, lo, hi, mean, std, norm, lo0, hi0)])
    return xp.concatenate([head, counts])


def summarize_array(arr, *, values=True):
    """The tape.v1 summary dict of a NumPy or CuPy array, computed on its device.

    >>> import numpy as np
    >>> s = summarize_array(np.array([1.0, 2.0, np.inf]))
    >>> (s["min"], s["max"], s["inf"], s["values"])
    (1.0, 2.0, 1, [1.0, 2.0, 'Infinity'])
    """
    dtype = _backend.dtypes.from_numpy_dtype(arr.dtype).name
    numel = int(arr.size)
    small = values and numel <= MAX_VALUES
    vec = device_stats(arr)
    if small:
        xp = _backend.xp_of(arr)
        vec = xp.concatenate([vec, _as_float(arr, xp).reshape(-1) if arr.dtype.kind != "c" else xp.abs(arr).reshape(-1)])
    host = _host(vec).tolist()
    return _from_host(host, list(arr.shape), dtype, numel, arr.dtype.kind == "b", small)


def _from_host(h, shape, dtype, numel, is_bool, small):
    nan, inf, n = int(h[0]), int(h[1]), int(h[2])
    has = numel > 0 and n > 0
    stats = dict(min=_stat(h[3]), max=_stat(h[4]), mean=_stat(h[5]), std=_stat(h[6]), norm=_stat(h[7])) if has else \
        dict(min=None, max=None, mean=None, std=None, norm=None)
    hist = None
    if has and not is_bool:
        hist = {"lo": float(h[8]), "hi": float(h[9]), "counts": [int(c) for c in h[10:10 + BINS]]}
    vals = [json_number(v) for v in h[10 + BINS:10 + BINS + numel]] if small else None
    if small and is_bool:
        vals = [int(v) for v in vals]
    return {"shape": shape, "dtype": dtype, "numel": numel, **stats, "nan": nan, "inf": inf, "hist": hist,
            "values": vals}


def summarize(t, *, values=True):
    """The tape.v1 summary dict of a workbench Tensor (or None for None).

    >>> import workbench as wb
    >>> summarize(wb.tensor([3.0, 4.0]))["norm"]
    5.0
    """
    if t is None:
        return None
    return summarize_array(t._data, values=values)
