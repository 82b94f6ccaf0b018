"""PyTorch-style printing of tensors: ``tensor([1.5000, 2.0000], grad_fn=<MulBackward0>)``."""
import math

from ._backend import dtypes as _dt
from ._backend import numpy as np

PRINT_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print, as torch.set_printoptions.

    >>> import workbench as wb
    >>> wb.set_printoptions(precision=2); wb.tensor([1.2345])
    tensor([1.23])
    >>> wb.set_printoptions(profile="default")
    """
    if profile == "default":
        PRINT_OPTS.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        PRINT_OPTS.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        PRINT_OPTS.update(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            PRINT_OPTS[k] = v
    PRINT_OPTS["sci_mode"] = sci_mode


def _host(t):
    d = t._data
    if type(d) is not np.ndarray:
        d = d.get() if hasattr(d, "get") else np.asarray(d)
    if t.dtype is _dt.bfloat16 or t.dtype is _dt.float16:
        d = d.astype(np.float32)
    return d


class _Formatter:
    """How the values of one tensor print: a common width, fixed or scientific, integral floats as ``2.``.

    A complex tensor's real and imaginary parts get a float formatter each, as PyTorch's.
    """

    def __init__(self, values, kind):
        self.kind = kind
        self.int_mode = True
        self.sci = False
        p = PRINT_OPTS["precision"]
        if self.kind == _dt._BOOL:
            self.width = 4 if values.all() else 5
            return
        if self.kind == _dt._INT:
            self.width = max((len(str(int(v))) for v in values), default=1)
            return
        if self.kind == _dt._COMPLEX:
            self.re, self.im = _Formatter(values.real, _dt._FLOAT), _Formatter(values.imag, _dt._FLOAT)
            self.width = self.re.width + self.im.width + 1
            return
        finite = values[np.isfinite(values)]
        self.p = p
        self.width = 1
        if finite.size == 0:
            return
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        nonzero = np.abs(finite[finite != 0])
        amax = float(nonzero.max()) if nonzero.size else 0.0
        amin = float(nonzero.min()) if nonzero.size else 0.0
        if self.int_mode:
            if amax and (amax / amin > 1000.0 or amax > 1e8):
                self.sci = True
        elif amax and (amax / amin > 1000.0 or amax > 1e8 or amin < 1e-4):
            self.sci = True
        if PRINT_OPTS["sci_mode"] is not None:
            self.sci = PRINT_OPTS["sci_mode"]
        # as PyTorch: the column width comes from the nonzero finite values only ("nan", "inf" and "-0." are
        # not padded for)
        self.width = max((len(self.fmt(float(v))) for v in finite[finite != 0]), default=1)

    @staticmethod
    def _fmt_special(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")

    def fmt(self, v):
        if self.kind == _dt._BOOL:
            return str(bool(v))
        if self.kind == _dt._INT:
            return str(int(v))
        if self.kind == _dt._COMPLEX:
            im = self.im.fmt(v.imag)
            return self.re.cell(v.real) + ("" if im[0] in "+-" else "+") + im + "j"
        v = float(v)
        if not math.isfinite(v):
            return self._fmt_special(v)
        if self.sci:
            return f"{v:.{self.p}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{self.p}f}"

    def cell(self, v):
        return self.fmt(v) if self.kind == _dt._COMPLEX else self.fmt(v).rjust(self.width)


def _summarized_values(d, edge):
    """The values that a summarized print shows (edge items of every dim), flattened."""
    if d.ndim == 0:
        return d.reshape(1)
    rows = [d[:edge], d[-edge:]] if d.shape[0] > 2 * edge else [d]
    if d.ndim == 1:
        return np.concatenate(rows)
    return np.concatenate([_summarized_values(r[i], edge) for r in rows for i in range(r.shape[0])])


def _render(d, fm, indent, summarize, edge):
    if d.ndim == 0:
        return fm.cell(d.item())
    if d.ndim == 1:
        n = d.shape[0]
        if summarize and n > 2 * edge:
            cells = [fm.cell(v) for v in d[:edge]] + [" ..."] + [fm.cell(v) for v in d[-edge:]]
        else:
            cells = [fm.cell(v) for v in d]
        per_line = max(1, (PRINT_OPTS["linewidth"] - indent) // (fm.width + 2)) if fm.width else len(cells)
        lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = d.shape[0]
    sep = "," + "\n" * (d.ndim - 1) + " " * (indent + 1)
    if summarize and n > 2 * edge:
        rows = [_render(d[i], fm, indent + 1, summarize, edge) for i in range(edge)] + ["..."] + [
            _render(d[i], fm, indent + 1, summarize, edge) for i in range(n - edge, n)]
    else:
        rows = [_render(d[i], fm, indent + 1, summarize, edge) for i in range(n)]
    return "[" + sep.join(rows) + "]"


def format_tensor(t):
    d = _host(t)
    dtype = t.dtype
    prefix = "tensor("
    summarize = d.size > PRINT_OPTS["threshold"]
    edge = PRINT_OPTS["edgeitems"]
    suffixes = []
    if d.size == 0:
        body = "[]"
        if d.ndim != 1:
            suffixes.append(f"size={tuple(d.shape)}")
    else:
        vals = _summarized_values(d, edge) if summarize else d.reshape(-1)
        fm = _Formatter(vals, dtype.category)
        body = _render(d, fm, len(prefix), summarize, edge)
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    default_float = _dt.get_default_dtype()
    if not (dtype is default_float or dtype is _dt.int64 or dtype is _dt.bool_
            or (dtype.is_complex and dtype is default_float.to_complex())):
        suffixes.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    if suffixes:
        tail = ", ".join(suffixes)
        last = body.rsplit("\n", 1)[-1]
        width = len(last) + (len(prefix) if "\n" not in body else 0) + len(tail) + 3
        body = body + (",\n" + " " * len(prefix) if width > PRINT_OPTS["linewidth"] else ", ") + tail
    return prefix + body + ")"
