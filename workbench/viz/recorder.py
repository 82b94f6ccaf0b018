"""Recording what the grad_fn graph alone cannot tell: data inputs, where the graph was cut, source lines.

The backward graph (``tensor.grad_fn`` and ``next_functions``) only reaches tensors that require grad.
While ``record()`` is active a listener on the tape also notes, per recorded node, the inputs that do
not require grad (data, targets, and tensors cut from the graph), and the tensor methods that cut the
graph (``detach()``, ``.numpy()``, ``.item()``, ``.tolist()``) mark their results. Everything is held
weakly: recording keeps no tensor alive and never reads a tensor's values (no GPU sync).
"""
import collections
import itertools
import sys
import weakref

from .. import _backend
from ..autograd import graph
from ..tensor import Tensor

_ACTIVE = []  # recorders inside their ``with`` block, innermost last
_KNOWN = weakref.WeakSet()  # every recorder not yet garbage: snapshot() consults them all
_RECENT = collections.deque(maxlen=8)  # `with record():` without `as` still counts for a while

_ids = itertools.count()


class ConstInput:
    """A tensor that entered a recorded op without requiring grad (data, a target, or a cut)."""

    __slots__ = ("key", "ref", "shape", "dtype", "cut")

    def __init__(self, t, cut):
        self.key = next(_ids)
        self.ref = weakref.ref(t)
        self.shape = tuple(t._data.shape)
        self.dtype = t._data.dtype
        self.cut = cut  # None, or (reason, site, source, op) from the tensor's cut mark


class Export:
    """A tensor's values leaving workbench through .numpy()/.item()/.tolist() (a possible NumPy round trip)."""

    __slots__ = ("host", "site", "source")

    def __init__(self, t, site):
        # a host copy (small tensors only) lets snapshot() recognise the values when they come back
        self.host = _backend.to_device(t._data, _backend.CPU).copy() if t._data.size <= 65536 else None
        self.site = site
        mark = t.__dict__.get("_wb_cut")  # x.detach().numpy(): the values came from x's node
        self.source = mark[2] if mark is not None and mark[2] is not None else _source_ref(t)


def _source_ref(t):
    # what the cut hangs off in the graph: the producing node, or the leaf's accumulator
    node, nr = graph.gradient_edge(t)
    return None if node is None else (weakref.ref(node), nr)


class Recorder:
    """What ``record()`` returns: the nodes recorded in its block, with their inputs and outputs (weakly).

    >>> import workbench as wb
    >>> with wb.viz.record() as rec:
    ...     y = (wb.ones(2, requires_grad=True) * wb.tensor([1.0, 2.0])).sum()
    >>> len(rec)
    2
    """

    def __init__(self, sites=True):
        self.sites = sites
        # node -> (output weakrefs, {arg position: ConstInput}, per output: all finite? (0-d array or None))
        self.nodes = weakref.WeakKeyDictionary()
        self._consts = {}  # id(tensor) -> ConstInput while that tensor is alive
        self.exports = collections.deque(maxlen=64)  # a loop calling loss.item() must not grow it forever
        self._prev = None
        _KNOWN.add(self)
        _RECENT.append(self)

    def __len__(self):
        return len(self.nodes)

    def __enter__(self):
        self._prev = (graph.TRACE[0], graph.CUTS[0])
        if self.sites and graph.TRACE[0] < 2:
            graph.TRACE[0] = 2
        self._listener = graph.add_listener(self._listen)
        graph.CUTS[0] = _mark_cut
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        self._listener.remove()
        _ACTIVE.remove(self)
        graph.TRACE[0], graph.CUTS[0] = self._prev
        if _ACTIVE:  # an outer recorder is still listening
            graph.CUTS[0] = _mark_cut
        return False

    def _listen(self, node, args, results):
        consts = None
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and not a._rg:
                if consts is None:
                    consts = {}
                consts[i] = self._const(a)
        outs = tuple(weakref.ref(r) if isinstance(r, Tensor) else None for r in results)
        self.nodes[node] = (outs, consts, tuple(_finite(r) for r in results))

    def _const(self, t):
        c = self._consts.get(id(t))
        if c is not None and c.ref() is t:
            return c
        mark = t.__dict__.get("_wb_cut")
        if mark is None and t.__dict__.get("_cut"):  # the tape's own tag: "detach", or the op run under no_grad
            cut = t.__dict__["_cut"]
            mark = ("detach" if cut == "detach" else "no_grad", None, None, None if cut == "detach" else cut)
        c = ConstInput(t, mark)
        self._consts[id(t)] = c
        return c


def _finite(r):
    # whether an output holds only finite numbers, kept as the backend's 0-d array: on a GPU no sync
    # happens until a snapshot reads it, and it lets the snapshot name the op where a NaN started
    # after the output itself is gone
    if not isinstance(r, Tensor) or r._data.dtype.kind not in "fc":
        return None
    return _backend.xp_of(r._data).isfinite(r._data).all()


def _mark_cut(t, reason, source):
    site = graph.user_site(3)
    if reason == "numpy":
        for rec in _ACTIVE:
            rec.exports.append(Export(t, site))
        return
    op = t.__dict__.get("_cut") if reason == "no_grad" else None
    t.__dict__["_wb_cut"] = (reason, site, _source_ref(source) if source is not None else None, op)


def record(sites=True):
    """Record extra detail for the viewer while the block runs: data inputs, graph cuts, source lines.

    The snapshot of anything computed inside (``wb.viz.show(loss)``) then shows the data inputs,
    marks where the graph was cut (``detach()``, a NumPy round trip) and gives every node its source
    line (``sites=True`` raises the trace level for the block).

    >>> import workbench as wb
    >>> w = wb.ones(3, requires_grad=True)
    >>> with wb.viz.record():
    ...     loss = (w * wb.tensor([1.0, 2.0, 3.0])).sum()
    >>> [n["kind"] for n in wb.viz.snapshot(loss).to_dict()["nodes"]]
    ['leaf', 'input', 'op', 'output']
    """
    return Recorder(sites)


class trace:
    """Record the source line of every op recorded in the block (trace level 2), nothing else.

    The debugger and the monitor name the forward line of a NaN from it.

    >>> import workbench as wb
    >>> with wb.viz.trace():
    ...     y = wb.ones(1, requires_grad=True) * 2
    >>> y.grad_fn.site[2]
    '<module>'
    """

    def __enter__(self):
        self._prev = graph.TRACE[0]
        graph.TRACE[0] = max(2, self._prev)
        return self

    def __exit__(self, *exc):
        graph.TRACE[0] = self._prev
        return False


def lookup(node):
    """(outputs, consts, finite flags) recorded for ``node`` by any live recorder, or None."""
    for rec in list(_KNOWN):
        info = rec.nodes.get(node)
        if info is not None:
            return info
    return None


def exports():
    """Every NumPy export seen by a live recorder, newest last."""
    out = []
    for rec in list(_KNOWN):
        out.extend(rec.exports)
    return out


def _cell_of(filename):
    # IPython compiles each cell to a temporary file and remembers which execution count it was
    ipy = sys.modules.get("IPython")
    ip = ipy.get_ipython() if ipy is not None else None
    fmap = getattr(getattr(ip, "compile", None), "_filename_map", None)
    return fmap.get(filename) if isinstance(fmap, dict) else None


def site_file(site):
    """The file of a site as the user knows it: ``Cell In[3]`` for a notebook cell, else the path.

    >>> site_file(("train.py", 10, "step"))
    'train.py'
    """
    n = _cell_of(site[0])
    return f"Cell In[{n}]" if n is not None else str(site[0])


def site_text(site):
    """A source site written as IPython writes it: ``Cell In[3], line 10`` or ``train.py:10 in step``.

    >>> site_text(("train.py", 10, "step"))
    'train.py:10 in step'
    """
    site = graph.as_site(site)
    if not site:
        return "<unknown location>"
    f = site_file(site)
    if f.startswith("Cell In["):
        return f"{f}, line {site[1]}"
    return f"{f}:{site[1]} in {site[2]}"


def site_dict(site):
    """The tape.v1 ``site`` object of a site tuple (None for None)."""
    if not site:
        return None
    return {"file": site_file(site), "line": int(site[1] or 0), "function": str(site[2])}
