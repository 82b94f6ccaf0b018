"""Activation checkpointing: keep a segment's inputs, drop its activations, recompute them in backward.

``checkpoint(fn, *args)`` runs ``fn`` once, notes where its graph touches the outside (the inputs,
the parameters it reads, any outside tensor it closes over), then frees the segment's graph and
records a single ``CheckpointBackward`` node in its place. In backward that node re-runs ``fn``
(with the RNG state of the first run, by default) and backpropagates through the fresh graph to
those outside edges. Gradients therefore reach parameters as usual, and ``autograd.grad`` works
through a checkpoint, as with PyTorch's ``use_reentrant=False``.
"""
from .. import random
from ..autograd import engine, graph
from ..autograd.function import Function, _new_node
from ..autograd.grad_mode import STATE, enable_grad
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


class Checkpoint(Function):
    """The node standing for a checkpointed segment (its backward recomputes the segment)."""

    op_name = "checkpoint"

    @staticmethod
    def forward(ctx, *args):
        raise RuntimeError("Checkpoint nodes are made by workbench.utils.checkpoint.checkpoint, not applied")

    @staticmethod
    def backward(ctx, *grads):
        return ctx.recompute(grads)


def _flat_tensors(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, Tensor)]
    return []


def _boundary(outs, start):
    # edges from nodes recorded after `start` (the segment) to nodes recorded before it (the outside)
    edges = {}
    stack = [o.grad_fn for o in outs if o.grad_fn is not None and o.grad_fn._seq > start]
    seen = set(stack)
    while stack:
        for nxt, nr in stack.pop().next_functions:
            if nxt is None:
                continue
            if nxt._seq > start:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
            else:
                edges.setdefault((nxt, nr), None)
    return list(edges)


def _rng_state():
    return random.get_rng_state()


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in backward.

    Both ``use_reentrant`` settings get the non-reentrant behaviour (gradients reach every parameter
    and input, ``autograd.grad`` works). ``preserve_rng_state`` replays the random draws of the
    first run (dropout masks match).

    >>> import workbench as wb
    >>> from workbench.utils.checkpoint import checkpoint
    >>> x = wb.tensor([1., 2.], requires_grad=True)
    >>> y = checkpoint(lambda t: (t.exp() * t).sum(), x, use_reentrant=False)
    >>> y.backward(); y.grad_fn.name()
    'CheckpointBackward'
    """
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be 'default' or 'none', got {determinism_check!r}")
    if context_fn is not None:
        raise ValueError("checkpoint: context_fn is not supported by workbench (it selects ops to keep, which "
                         "needs torch.compile); drop the argument")
    if not STATE.enabled:
        return function(*args, **kwargs)
    rng = _rng_state() if preserve_rng_state else None
    start = next(graph._seq)
    out = function(*args, **kwargs)
    outs = [o for o in _flat_tensors(out) if o.grad_fn is not None and o.grad_fn._seq > start]
    if not outs:
        return out
    edges = _boundary(outs, start)
    node = _new_node(Checkpoint, outs[0].grad_fn.xp)
    node.next_functions = tuple(edges)
    node.needs_input_grad = (True,) * len(edges)
    node._tensor_pos = tuple(range(len(edges)))
    node._out_meta = tuple((o._data.shape, o._data.dtype) for o in outs)
    # the new outputs share the arrays of the first run, but not its graph, which is freed with `out`
    fresh = {id(o): Tensor._make(o._data, True, node, k) for k, o in enumerate(outs)}
    node.recompute = _Recompute(function, args, kwargs, rng, edges, node._out_meta, determinism_check)
    if isinstance(out, Tensor):
        return fresh[id(out)]
    return type(out)(fresh.get(id(o), o) if isinstance(o, Tensor) else o for o in out)


class _Recompute:
    """Checkpoint's backward: re-run the segment on detached inputs and backprop to the outside edges."""

    def __init__(self, function, args, kwargs, rng, edges, metas, determinism_check):
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.edges, self.metas, self.check = edges, metas, determinism_check

    def __call__(self, grads):
        create_graph = STATE.enabled  # the engine runs backward with grad mode = create_graph
        if create_graph:  # the gradient must stay connected to the real inputs, to be differentiated again
            detached = list(self.args)
        else:  # detached stand-ins keep the backward walk inside the segment
            detached = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                        for a in self.args]
        with enable_grad():
            if self.rng is not None:
                saved = random.get_rng_state()
                random.set_rng_state(self.rng)
            try:
                start = next(graph._seq)
                out = self.function(*detached, **self.kwargs)
            finally:
                if self.rng is not None:
                    random.set_rng_state(saved)
        outs = [o for o in _flat_tensors(out) if o.grad_fn is not None and o.grad_fn._seq > start]
        metas = tuple((o._data.shape, o._data.dtype) for o in outs)
        if self.check == "default" and metas != self.metas:
            raise RuntimeError(
                "workbench.utils.checkpoint: Recomputed values have different metadata than during the forward "
                f"pass: {[(list(s), str(d)) for s, d in self.metas]} then, {[(list(s), str(d)) for s, d in metas]} "
                "now. The checkpointed function must compute the same thing when run again (pass "
                "preserve_rng_state=True if it draws random numbers, or determinism_check='none').")
        # capture at each outside edge, and at the detached inputs standing in for the real ones
        targets, owners = [], []
        for j, e in enumerate(self.edges):
            targets.append(e)
            owners.append(j)
        for a, d in zip(self.args, detached):
            if isinstance(a, Tensor) and a.requires_grad and d is not a:
                e = graph.gradient_edge(a)
                if e in self.edges:
                    targets.append(d)
                    owners.append(self.edges.index(e))
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
        captured = [None] * len(targets)
        if pairs:
            engine.run_backward([o for o, _ in pairs], [g for _, g in pairs], False, create_graph, targets, False,
                                captured)
        result = [None] * len(self.edges)
        for j, g in zip(owners, captured):
            if g is not None:
                result[j] = g if result[j] is None else result[j] + g
        return tuple(result)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules/functions) in ``segments`` chunks, checkpointing all but the last.

    >>> import workbench as wb
    >>> from workbench.utils.checkpoint import checkpoint_sequential
    >>> x = wb.tensor([1., 2.], requires_grad=True)
    >>> y = checkpoint_sequential([lambda t: t * 2, lambda t: t.exp(), lambda t: t.sum()], 2, x)
    >>> y.backward(); x.grad.shape
    workbench.Size([2])
    """
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    size = max(1, len(fns) // segments)
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = fns[start:end + 1]

        def run(x, chunk=chunk):
            for f in chunk:
                x = f(x)
            return x

        input = checkpoint(run, input, use_reentrant=use_reentrant, **kwargs)
    for f in fns[end + 1:]:
        input = f(input)
    return input

