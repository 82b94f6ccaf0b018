"""``DistributedDataParallel``: one model replica per rank, gradients averaged across ranks during backward.

At construction rank 0's parameters and buffers are broadcast to every rank. Parameters are grouped in
buckets of about ``bucket_cap_mb`` (in reverse registration order, which is roughly the order backward
produces their gradients; the first bucket is 1 MB so communication starts early). Each parameter's
post-accumulate-grad hook copies its gradient into its bucket; a full bucket's all-reduce is started at
once (buckets in index order on every rank, so all ranks issue the same collectives in the same order),
while backward computes the rest. When backward ends (the engine's end-of-backward hook) DDP waits for
the buckets and writes the averaged gradients back.
"""
import contextlib
import weakref

from ... import distributed as dist
from ...autograd import graph as _graph
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
_ARMED = weakref.WeakSet()  # DDP instances expecting the end of a backward pass


def _on_backward(phase, roots):
    if phase == "end":
        for ddp in list(_ARMED):
            ddp._finalize()


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "pending", "work", "launched_early")

    def __init__(self, params):
        self.params = params  # indices into DDP's parameter list
        self.offsets = []
        self.buffer = None
        self.pending = 0
        self.work = None
        self.launched_early = False


class DistributedDataParallel(Module):
    """Wrap ``module`` so that every rank trains one replica and gradients are averaged across ranks.

    PyTorch's arguments: ``process_group`` (default group if None), ``bucket_cap_mb`` (25),
    ``broadcast_buffers`` (rank 0's buffers to all before each forward), ``find_unused_parameters``,
    ``gradient_as_bucket_view`` (``.grad`` tensors are views into the buckets: no copy back), ``init_sync``.
    ``device_ids``/``output_device`` are accepted for compatibility: the replica lives where its parameters are.

    >>> import workbench as wb, workbench.distributed as dist  # doctest: +SKIP
    >>> from workbench.nn.parallel import DistributedDataParallel as DDP  # doctest: +SKIP
    >>> ddp = DDP(wb.nn.Linear(4, 2)); ddp(wb.randn(8, 4)).sum().backward()  # grads averaged  # doctest: +SKIP
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a workbench.nn.Module, got "
                            f"{type(module).__name__}")
        params = []
        seen = set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        devices = {p.device for p in params}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's input module must be on a single device; its parameters are "
                             f"on {sorted(map(str, devices))}")
        self.module = module
        self.process_group = dist.process_group.resolve(process_group)
        self.device = next(iter(devices))
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = params
        self._names = {id(p): n for n, p in module.named_parameters()}
        self._verify_shapes()
        if init_sync:
            self._broadcast([p for p in params] + [b for b in module.buffers()])
        self._build_buckets()
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(params)]
        if _on_backward not in _graph.BACKWARD_HOOKS:
            _graph.BACKWARD_HOOKS.append(_on_backward)
        self._ready = [False] * len(params)
        self._next_bucket = 0
        self._in_backward = False
        self._error = None
        self.launched_in_backward = 0  # buckets whose all-reduce started before backward ended (last pass)

    # --- set-up ------------------------------------------------------------------------------
    def _verify_shapes(self):
        pg = self.process_group
        mine = [(self._names.get(id(p), "?"), tuple(p.shape), p.dtype.name) for p in self._params]
        everyone = [None] * pg.size()
        dist.all_gather_object(everyone, mine, group=pg)
        odd = [pg.ranks[r] for r, theirs in enumerate(everyone) if theirs != everyone[0]]
        if odd:
            theirs = everyone[pg.ranks.index(odd[0])]
            k = next((k for k, (a, b) in enumerate(zip(everyone[0], theirs)) if a != b), min(len(theirs),
                                                                                          len(everyone[0])))
            first = everyone[0][k] if k < len(everyone[0]) else "nothing"
            other = theirs[k] if k < len(theirs) else "nothing"
            raise RuntimeError(f"DistributedDataParallel: the model's parameters differ across ranks: ranks {odd} have "
                               f"parameters unlike rank {pg.ranks[0]}'s (parameter {k}: {first} on rank {pg.ranks[0]}, "
                               f"{other} on rank {odd[0]}); every rank must wrap the same model")

    def _broadcast(self, tensors):
        # one broadcast per dtype of everything flattened (coalesced, as PyTorch's _sync_module_states)
        pg = self.process_group
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault((t.dtype, t.device), []).append(t)
        for ts in by_dtype.values():
            flat = Tensor._make(_flatten([t._data for t in ts], ts[0]._data))
            dist.broadcast(flat, src=pg.ranks[0], group=pg)
            at = 0
            with no_grad():
                for t in ts:
                    n = t.numel()
                    t._data[...] = flat._data[at:at + n].reshape(t._data.shape)
                    t._bump("DistributedDataParallel broadcast")
                    at += n

    def _build_buckets(self):
        buckets, current, size, key = [], [], 0, None
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            k = (p.dtype, p.device)
            nbytes = p.numel() * p.element_size()
            if current and (k != key or size + nbytes > cap):
                buckets.append(current)
                current, size = [], 0
                cap = self.bucket_bytes_cap
            current.append(i)
            size += nbytes
            key = k
        if current:
            buckets.append(current)
        self._buckets = []
        self._bucket_of = [None] * len(self._params)
        for bi, idx in enumerate(buckets):
            first = self._params[idx[0]]
            b = _Bucket(idx)
            at = 0
            for i in idx:
                b.offsets.append(at)
                at += self._params[i].numel()
                self._bucket_of[i] = (bi, len(b.offsets) - 1)
            b.buffer = Tensor._make(_zeros_like(first._data, at))
            self._buckets.append(b)

    @property
    def bucket_indices(self):
        """The parameter indices (into ``module.parameters()`` order) of each bucket, in launch order."""
        return [list(b.params) for b in self._buckets]

    # --- the step ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(err)
        from ...autograd.grad_mode import is_grad_enabled

        if self.broadcast_buffers and self.require_forward_param_sync:
            bufs = [b for b in self.module.buffers()]
            if bufs:
                self._broadcast(bufs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare()
            _ARMED.add(self)
        else:
            _ARMED.discard(self)
        return self.module(*inputs, **kwargs)

    def _prepare(self):
        if any(self._ready) and self._in_backward:
            names = [self._names.get(id(p), "?") for p, r in zip(self._params, self._ready) if not r]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`workbench.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                f"participate in calculating loss. Parameters that did not receive a gradient: {names}")
        self._ready = [False] * len(self._params)
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
            b.launched_early = False
        self._next_bucket = 0
        self._in_backward = True

    def _make_hook(self, i):
        ref = weakref.ref(self)

        def hook(p):
            ddp = ref()
            if ddp is not None and ddp._in_backward and ddp.require_backward_grad_sync and ddp in _ARMED:
                ddp._mark_ready(i, early=True)

        return hook

    def _mark_ready(self, i, early):
        if self._ready[i]:
            return
        self._ready[i] = True
        bi, slot = self._bucket_of[i]
        b = self._buckets[bi]
        p = self._params[i]
        view = self._view(b, slot)
        g = p._grad
        if g is None:
            view[...] = 0
        elif g._data is not view and not _shares(g._data, view):
            view[...] = g._data.reshape(view.shape)
        b.pending -= 1
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            nb = self._buckets[self._next_bucket]
            nb.work = dist.all_reduce(nb.buffer, op=dist.ReduceOp.AVG, group=self.process_group, async_op=True)
            nb.launched_early = early
            self._next_bucket += 1
        for other in self._buckets[:self._next_bucket]:  # let MPI move the launched buckets along
            if other.work is not None and not other.work._done:
                other.work.is_completed()
                break

    def _view(self, b, slot):
        p = self._params[b.params[slot]]
        at = b.offsets[slot]
        return b.buffer._data[at:at + p.numel()].reshape(p._data.shape)

    def _finalize(self):
        _ARMED.discard(self)
        if not self._in_backward:
            return
        missing = [i for i, r in enumerate(self._ready) if not r]
        used = None
        if missing and self.find_unused_parameters:
            used = [0 if i in set(missing) else 1 for i in range(len(self._params))]
            for i in missing:
                self._mark_ready(i, early=False)
        elif missing:
            if not any(self._ready):  # this backward did not reach the model at all
                return
            names = [self._names.get(id(self._params[i]), "?") for i in missing]
            self._error = (
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`workbench.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                f"participate in calculating loss. Parameters that did not receive a gradient on rank "
                f"{dist.get_rank()}: {names}")
            return
        if used is not None:  # used on some rank: its averaged gradient counts; unused everywhere: left alone
            used_t = Tensor._make(_array_module(self._buckets[0].buffer._data).asarray(used))
            dist.all_reduce(used_t, op=dist.ReduceOp.MAX, group=self.process_group)
            used = used_t._data.tolist()
        self.launched_in_backward = sum(1 for b in self._buckets if b.launched_early)
        for b in self._buckets:
            b.work.wait()
        with no_grad():
            for bi, b in enumerate(self._buckets):
                for slot, i in enumerate(b.params):
                    p = self._params[i]
                    if used is not None and not used[i]:
                        continue  # unused on every rank: its .grad stays as it was (None), as in PyTorch
                    view = self._view(b, slot)
                    if self.gradient_as_bucket_view:
                        if p._grad is None or p._grad._data is not view:
                            p._grad = Tensor._make(view)
                        else:
                            p._grad._bump("DistributedDataParallel all_reduce")
                    elif p._grad is None:
                        p._grad = Tensor._make(view.copy())
                    else:
                        p._grad._data[...] = view
                        p._grad._bump("DistributedDataParallel all_reduce")
        self._in_backward = False

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block backward accumulates gradients locally; the next backward outside averages them.

        >>> with ddp.no_sync():  # doctest: +SKIP
        ...     ddp(x1).sum().backward()
        >>> ddp(x2).sum().backward()  # all-reduces the sum of both passes' gradients  # doctest: +SKIP
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _flatten(arrays, like):
    xp = _array_module(like)
    return xp.concatenate([a.reshape(-1) for a in arrays]) if arrays else xp.zeros(0, like.dtype)


def _zeros_like(like, n):
    return _array_module(like).zeros(n, like.dtype)


def _array_module(a):
    from ... import _backend

    return _backend.xp_of(a)


def _address(a):
    face = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return face["data"][0]


def _shares(a, view):
    # a .grad that is already the bucket's view (gradient_as_bucket_view after the first step)
    return a.shape == view.shape and _address(a) == _address(view)
