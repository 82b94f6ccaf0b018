"""``DistributedDataParallel``: one model replica per rank, gradients averaged across ranks during backward.

At construction rank 0's parameters and buffers are broadcast to every rank. Parameters are grouped in
buckets of about ``bucket_cap_mb`` (in reverse registration order, which is roughly the order backward
produces their gradients; the first bucket is 1 MB so communication starts early). Each parameter's
post-accumulate-grad hook copies its gradient into its bucket; a full bucket's all-reduce is started at
once (buckets in index order on every rank, so all ranks issue the same collectives in the same order),
while backward computes the rest. When backward ends (the engine's end-of-backward hook) DDP waits for
the buckets and writes the averaged gradients back.

A communication hook (``register_comm_hook``) replaces the all-reduce of each bucket: it gets a ``GradBucket``
and returns a future of the reduced buffer. ``join()`` trains on uneven inputs: a rank that ran out of batches
keeps answering the others' collectives (zero gradients) until every rank has run out, then every rank takes
the model of the last ones to finish.
"""
import contextlib
import weakref

from ... import _backend
from ... import distributed as dist
from ...autograd import graph as _graph
from ...distributed.algorithms.join import Join, JoinHook, Joinable
from ...futures import Future
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor
from ..module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
_ARMED = weakref.WeakSet()  # reducers expecting the end of a backward pass


def _on_backward(phase, roots):
    if phase == "end":
        for reducer in list(_ARMED):
            reducer.finalize()


_UNUSED = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
           "indicates that your module has parameters that were not used in producing loss. You can enable unused "
           "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
           "`workbench.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
           "participate in calculating loss. Parameters that did not receive a gradient")


class _Bucket:
    __slots__ = ("params", "views", "buffer", "pending", "work", "launched_early")

    def __init__(self, params, buffer, views):
        self.params = params  # indices into the reducer's parameter list
        self.buffer = buffer  # a flat Tensor holding every parameter's gradient
        self.views = views  # each parameter's slice of it, shaped like the parameter
        self.pending = 0
        self.work = None
        self.launched_early = False


class _Reducer:
    """The buckets of one DDP model and the state of the backward pass that fills them."""

    def __init__(self, params, names, pg, cap_bytes, find_unused, as_view):
        self.params, self.names, self.pg = params, names, pg
        self.find_unused, self.as_view = find_unused, as_view
        self.comm_hook = None  # (state, hook) from register_comm_hook
        self.divisor = None  # join(divide_by_initial_world_size=False): the number of ranks still training
        self.buckets = self._build(cap_bytes)
        self.bucket_of = [None] * len(params)
        for bi, b in enumerate(self.buckets):
            for slot, i in enumerate(b.params):
                self.bucket_of[i] = (bi, slot)
        self.ready = [False] * len(params)
        self.next_bucket = 0
        self.in_backward = False
        self.error = None
        self.launched_in_backward = 0
        ref = weakref.ref(self)
        self.hooks = [p.register_post_accumulate_grad_hook(_hook(ref, i)) for i, p in enumerate(params)]

    def _build(self, cap_bytes):
        groups, current, size, key = [], [], 0, None
        cap = min(_FIRST_BUCKET_BYTES, cap_bytes)
        for i in reversed(range(len(self.params))):
            p = self.params[i]
            k = (p.dtype, p.device)
            nbytes = p.numel() * p.element_size()
            if current and (k != key or size + nbytes > cap):
                groups.append(current)
                current, size = [], 0
                cap = cap_bytes
            current.append(i)
            size += nbytes
            key = k
        if current:
            groups.append(current)
        buckets = []
        for idx in groups:
            first = self.params[idx[0]]._data
            flat = _array_module(first).zeros(sum(self.params[i].numel() for i in idx), first.dtype)
            views, at = [], 0
            for i in idx:
                p = self.params[i]
                views.append(flat[at:at + p.numel()].reshape(p._data.shape))
                at += p.numel()
            buckets.append(_Bucket(idx, Tensor._make(flat), views))
        return buckets

    def prepare(self):
        if self.in_backward and any(self.ready):
            names = [self.names.get(id(p), "?") for p, r in zip(self.params, self.ready) if not r]
            raise RuntimeError(f"{_UNUSED}: {names}")
        self.ready = [False] * len(self.params)
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = None
            b.launched_early = False
        self.next_bucket = 0
        self.in_backward = True
        _ARMED.add(self)

    def mark_ready(self, i, early):
        if self.ready[i]:
            return
        self.ready[i] = True
        bi, slot = self.bucket_of[i]
        b = self.buckets[bi]
        view = b.views[slot]
        g = self.params[i]._grad
        if g is None:
            view[...] = 0
        elif not (self.as_view and _shares(g._data, view)):
            view[...] = g._data
        b.pending -= 1
        buckets = self.buckets
        while self.next_bucket < len(buckets) and buckets[self.next_bucket].pending == 0:
            nb = buckets[self.next_bucket]
            nb.work = self.launch(self.next_bucket, nb.buffer)
            nb.launched_early = early
            self.next_bucket += 1
        if self.next_bucket:  # let MPI move the oldest launched bucket along
            for other in buckets[:self.next_bucket]:
                if not _poll(other.work):
                    break

    def launch(self, bi, buffer):
        """Start reducing bucket ``bi`` whose gradients ``buffer`` holds: a Work, or the comm hook's Future."""
        if self.comm_hook is not None:
            state, hook = self.comm_hook
            params = [self.params[i] for i in self.buckets[bi].params]
            fut = hook(state, dist.GradBucket(bi, bi == len(self.buckets) - 1, buffer, params))
            if not isinstance(fut, Future):
                raise TypeError(f"DistributedDataParallel: the communication hook {_name(hook)} returned "
                                f"{type(fut).__name__}, not a workbench.futures.Future of the bucket's reduced buffer "
                                "(return e.g. dist.all_reduce(bucket.buffer(), async_op=True).get_future()"
                                ".then(lambda f: f.value()[0]))")
            return fut
        if self.divisor is not None:  # join(divide_by_initial_world_size=False): average over the ranks training
            buffer.div_(self.divisor)
            return dist.all_reduce(buffer, op=dist.ReduceOp.SUM, group=self.pg, async_op=True)
        return dist.all_reduce(buffer, op=dist.ReduceOp.AVG, group=self.pg, async_op=True)

    def complete(self, bi, buffer, work):
        """Wait for bucket ``bi``'s reduction and leave its result in ``buffer``."""
        if not isinstance(work, Future):
            work.wait()
            return
        out = work.wait()
        if isinstance(out, (list, tuple)) and len(out) == 1:
            out = out[0]
        if not isinstance(out, Tensor) or out.numel() != buffer.numel():
            got = f"a tensor of {out.numel()} elements" if isinstance(out, Tensor) else type(out).__name__
            raise RuntimeError(f"DistributedDataParallel: the communication hook {_name(self.comm_hook[1])}'s future "
                               f"for bucket {bi} holds {got}; it must hold the bucket's reduced flat buffer of "
                               f"{buffer.numel()} elements")
        if out._data is not buffer._data:
            buffer._data[...] = out._data.reshape(buffer._data.shape).astype(buffer._data.dtype, copy=False)

    def shadow(self):
        """On a rank that joined: the collectives of one backward pass, with zero gradients (join())."""
        works = []
        for bi, b in enumerate(self.buckets):
            zeros = Tensor._make(_array_module(b.buffer._data).zeros_like(b.buffer._data))
            works.append((bi, zeros, self.launch(bi, zeros)))
        if self.find_unused:
            self._reduce_used([0] * len(self.params))
        for bi, zeros, w in works:
            self.complete(bi, zeros, w)

    def _reduce_used(self, used):
        # every rank takes part (a rank that used everything too), so all ranks issue the same collectives
        used_t = Tensor._make(_array_module(self.buckets[0].buffer._data).asarray(used))
        dist.all_reduce(used_t, op=dist.ReduceOp.MAX, group=self.pg)
        return used_t._data.tolist()

    def finalize(self):
        _ARMED.discard(self)
        if not self.in_backward:
            return
        missing = [i for i, r in enumerate(self.ready) if not r]
        used = None
        if self.find_unused:
            gone = set(missing)
            used = [0 if i in gone else 1 for i in range(len(self.params))]
            for i in missing:
                self.mark_ready(i, early=False)
        elif missing:
            if any(self.ready):  # else this backward did not reach the model at all
                names = [self.names.get(id(self.params[i]), "?") for i in missing]
                self.error = f"{_UNUSED} on rank {dist.get_rank()}: {names}"
            return
        if used is not None:  # used on some rank: its averaged gradient counts; unused everywhere: left alone
            used = self._reduce_used(used)
        self.launched_in_backward = sum(1 for b in self.buckets if b.launched_early)
        for bi, b in enumerate(self.buckets):
            self.complete(bi, b.buffer, b.work)
        for b in self.buckets:
            for slot, i in enumerate(b.params):
                if used is not None and not used[i]:
                    continue  # unused on every rank: its .grad stays as it was (None), as in PyTorch
                p, view = self.params[i], b.views[slot]
                g = p._grad
                if self.as_view:
                    if g is None or not _shares(g._data, view):
                        p._grad = g = Tensor._make(view)
                elif g is None:
                    p._grad = g = Tensor._make(view.copy())
                else:
                    g._data[...] = view
                g._vbox[0] += 1  # the gradient changed in place: saved references to it are stale
        self.in_backward = False


def _poll(work):
    return work.done() if isinstance(work, Future) else work.is_completed()


def _name(fn):
    return getattr(fn, "__qualname__", None) or repr(fn)


def _hook(ref, i):
    def hook(p):
        reducer = ref()
        if reducer is not None and reducer.in_backward:
            reducer.mark_ready(i, early=True)

    return hook


class DistributedDataParallel(Module, Joinable):
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
        names = {id(p): n for n, p in module.named_parameters()}
        self._verify_shapes(params, names)
        self._module_buffers = list(module.buffers())  # as PyTorch, the buffers of construction time
        if init_sync:
            self._broadcast(params + self._module_buffers)
        self.reducer = _Reducer(params, names, self.process_group, self.bucket_bytes_cap, find_unused_parameters,
                                gradient_as_bucket_view)
        self._join = None  # (census, is the first joinable) inside a Join block
        self._divide_by_initial_world_size = True
        self._stepped = False  # a forward with gradient sync ran: too late to register a comm hook
        if _on_backward not in _graph.BACKWARD_HOOKS:
            _graph.BACKWARD_HOOKS.append(_on_backward)

    # --- set-up ------------------------------------------------------------------------------
    def _verify_shapes(self, params, names):
        pg = self.process_group
        mine = [(names.get(id(p), "?"), tuple(p.shape), p.dtype.name) for p in params]
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

    def _broadcast(self, tensors, src=0):
        # one broadcast per dtype of everything flattened (coalesced, as PyTorch's _sync_module_states), from the
        # group rank src
        pg = self.process_group
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault((t.dtype, t.device), []).append(t)
        for ts in by_dtype.values():
            flat = Tensor._make(_flatten([t._data for t in ts], ts[0]._data))
            dist.broadcast(flat, src=pg.ranks[src], group=pg)
            at = 0
            with no_grad():
                for t in ts:
                    n = t.numel()
                    t._data[...] = flat._data[at:at + n].reshape(t._data.shape)
                    t._bump("DistributedDataParallel broadcast")
                    at += n

    @property
    def bucket_indices(self):
        """The parameter indices (into ``module.parameters()`` order) of each bucket, in launch order."""
        return [list(b.params) for b in self.reducer.buckets]

    @property
    def launched_in_backward(self):
        """How many buckets started their all-reduce before the last backward pass ended."""
        return self.reducer.launched_in_backward

    # --- the step ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        if reducer.error is not None:
            err, reducer.error = reducer.error, None
            raise RuntimeError(err)
        sync = is_grad_enabled() and self.require_backward_grad_sync
        src = 0
        census = Join.notify_join_context(self, _SYNCING if sync else _TRAINING)
        reducer.divisor = None
        if census is not None:  # inside Join: the joined ranks shadow this step
            src = census.last
            if not self._divide_by_initial_world_size:
                reducer.divisor = census.active
        if self.broadcast_buffers and self.require_forward_param_sync and self._module_buffers:
            self._broadcast(self._module_buffers, src)
        if sync:
            self._stepped = True
            reducer.prepare()
        else:  # no_sync() or no grad: this pass's hooks must not reduce anything
            _ARMED.discard(reducer)
            reducer.in_backward = False
        return self.module(*inputs, **kwargs)

    def register_comm_hook(self, state, hook):
        """Reduce each gradient bucket with ``hook(state, bucket)`` instead of the built-in average.

        ``bucket`` is a ``workbench.distributed.GradBucket``; the hook returns a ``workbench.futures.Future`` of
        the reduced flat buffer (``bucket.buffer()``'s shape and dtype). PyTorch's default hooks are in
        ``workbench.distributed.algorithms.ddp_comm_hooks.default_hooks`` (``allreduce_hook``,
        ``fp16_compress_hook``, ``bf16_compress_hook``; their ``state`` is a process group or None). Register once,
        before the first training step.

        >>> from workbench.distributed.algorithms.ddp_comm_hooks import default_hooks  # doctest: +SKIP
        >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)  # doctest: +SKIP
        """
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if self._stepped:
            raise RuntimeError("register_comm_hook must be called before the first forward pass that syncs "
                               "gradients (the buckets of a running step are already being reduced)")
        self.reducer.comm_hook = (state, hook)

    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Train on uneven inputs: wrap the training loop; a rank whose loop ends first waits at the end of the
        block, taking part in the others' gradient all-reduces (with zero gradients) and buffer broadcasts until
        every rank's loop has ended; then all ranks take the model of the last ones to finish. The same as
        ``workbench.distributed.algorithms.Join([ddp], ...)``.

        ``divide_by_initial_world_size``: average the gradients over all ranks (True: joined ranks count, with
        zeros) or over the ranks still training. ``throw_on_early_termination``: raise RuntimeError on every rank
        as soon as one runs out of inputs, instead. Each step costs one more small all-gather (who still trains).

        >>> with ddp.join():  # doctest: +SKIP
        ...     for x in my_batches:  # a different number of batches on each rank
        ...         opt.zero_grad(); ddp(x).sum().backward(); opt.step()
        """
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, divide_by_initial_world_size=True):
        """The JoinHook that shadows this model's steps on a rank that joined (used by ``Join``)."""
        self._divide_by_initial_world_size = divide_by_initial_world_size
        return _DDPJoinHook(self)

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

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


_TRAINING, _SYNCING = 1, 2  # a training rank's census state in a Join block (0: joined)


class _DDPJoinHook(JoinHook):
    def __init__(self, ddp):
        self.ddp = ddp

    def main_hook(self):
        # the collectives of one training step, with this rank's buffers and zero gradients
        ddp = self.ddp
        census = ddp._join[0]
        if ddp.broadcast_buffers and ddp.require_forward_param_sync and ddp._module_buffers:
            ddp._broadcast(ddp._module_buffers, census.last)
        if _SYNCING in census.states:
            ddp.reducer.divisor = None if ddp._divide_by_initial_world_size else census.active
            ddp.reducer.shadow()

    def post_hook(self, is_last_joiner):
        # the ranks that trained longest hold the final model: everyone takes it
        ddp = self.ddp
        ddp._broadcast(ddp.reducer.params + ddp._module_buffers, ddp._join[0].last)
        ddp.reducer.divisor = None
        ddp._divide_by_initial_world_size = True


def _flatten(arrays, like):
    xp = _array_module(like)
    return xp.concatenate([a.reshape(-1) for a in arrays]) if arrays else xp.zeros(0, like.dtype)


def _array_module(a):
    return _backend.xp_of(a)


def _address(a):
    face = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return face["data"][0]


def _shares(a, view):
    # a .grad that is already the bucket's view (gradient_as_bucket_view after the first step)
    return a.shape == view.shape and _address(a) == _address(view)
