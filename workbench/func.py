"""workbench.func: torch.func's composable transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap).

They run on the tape: each transform makes its inputs fresh graph roots, runs the function with
grad mode on, and differentiates with ``autograd.grad``. Nested transforms keep the graph of the
inner derivative (create_graph) so the outer one can differentiate it again; an input that already
requires grad is joined to the inner graph through a view, so the inner transform only sees the
part of the gradient that flows through its own input (no perturbation confusion).
``vmap`` runs the function once per batch entry and stacks the results: slower than a batching
rule, always right. Arguments and results may be tuples, lists and dicts of tensors.
"""
import inspect
import threading

from . import random
from .autograd import functional as _F
from .autograd.grad_mode import enable_grad
from .creation import zeros_like
from .ops.join import stack
from .tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call"]


class _Depth(threading.local):
    n = 0


_DEPTH = _Depth()  # how many func transforms are running in this thread


# --- pytrees: tuples, lists and dicts of tensors -----------------------------------------------------
def _flatten(tree):
    if isinstance(tree, Tensor):
        return [tree], None
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            ls, sp = _flatten(x)
            leaves += ls
            specs.append((len(ls), sp))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, x in tree.items():
            ls, sp = _flatten(x)
            leaves += ls
            specs.append((k, len(ls), sp))
        return leaves, (dict, specs)
    return [], ("leaf", tree)


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    if kind == "leaf":
        return specs
    out, i = [], 0
    if kind is dict:
        d = {}
        for k, n, sp in specs:
            d[k] = _unflatten(leaves[i:i + n], sp)
            i += n
        return d
    for n, sp in specs:
        out.append(_unflatten(leaves[i:i + n], sp))
        i += n
    return kind(out) if kind is not tuple else tuple(out)


class _Transform:
    """Enter: one level deeper; create_graph when nested, or when an input already requires grad."""

    def __init__(self, inputs):
        self.create_graph = _DEPTH.n > 0 or any(t.requires_grad for t in inputs)

    def __enter__(self):
        _DEPTH.n += 1
        self.mode = enable_grad()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        _DEPTH.n -= 1
        return False


def _roots(leaves):
    out = []
    for t in leaves:
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError(f"func transforms differentiate floating-point or complex tensors only, got an input "
                               f"of dtype {t.dtype}. Cast it (e.g. x.float()) or leave it out of argnums.")
        out.append(t.view_as(t) if t.requires_grad else t.detach().requires_grad_(True))
    return out


def _out(t, create_graph):
    return t if create_graph or t is None else t.detach()


def _argnums(argnums, n):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or not -n <= a < n:
            raise RuntimeError(f"Got argnums={argnums}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _diff_args(args, argnums):
    # the arguments at argnums, flattened to fresh roots; the full argument list with them swapped in
    nums = _argnums(argnums, len(args))
    args = list(args)
    parts = []
    for a in nums:
        leaves, spec = _flatten(args[a])
        parts.append((a, leaves, spec))
    return args, nums, parts


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of the scalar ``func`` w.r.t. ``argnums``, its value).

    >>> import workbench as wb
    >>> g, v = wb.func.grad_and_value(lambda x: (x ** 2).sum())(wb.tensor([1., 2.]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """

    def wrapper(*args, **kwargs):
        args, nums, parts = _diff_args(args, argnums)
        all_leaves = [t for _, ls, _ in parts for t in ls]
        with _Transform(all_leaves) as tr:
            roots = []
            for a, leaves, spec in parts:
                r = _roots(leaves)
                roots.append(r)
                args[a] = _unflatten(r, spec)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out).__name__}")
            if out.numel() != 1 or out.ndim != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            flat = [t for r in roots for t in r]
            gs = _F._grads((out,), flat, (_F._one(out),), tr.create_graph, False, "grad")
        gs = [_out(g, tr.create_graph) for g in gs]
        res, i = [], 0
        for (a, leaves, spec), r in zip(parts, roots):
            res.append(_unflatten(gs[i:i + len(r)], spec))
            i += len(r)
        g = res[0] if isinstance(argnums, int) else tuple(res)
        value = _out(out, tr.create_graph)
        if has_aux:
            return g, (value, _detach_tree(aux, tr.create_graph))
        return g, value

    return wrapper


def _detach_tree(tree, create_graph):
    leaves, spec = _flatten(tree)
    return _unflatten([_out(t, create_graph) for t in leaves], spec) if spec is not None or leaves else tree


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of the scalar ``func`` with respect to argument(s) ``argnums``.

    >>> import workbench as wb
    >>> wb.func.grad(lambda x: (x ** 3).sum())(wb.tensor([1., 2.]))
    tensor([ 3., 12.])
    >>> wb.func.grad(wb.func.grad(lambda x: x ** 3))(wb.tensor(2.))
    tensor(12.)
    """
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]); ``vjp_fn(cotangents)`` returns one gradient per primal.

    >>> import workbench as wb
    >>> out, fn = wb.func.vjp(lambda x: x ** 2, wb.tensor([1., 2.]))
    >>> fn(wb.tensor([1., 1.]))
    (tensor([2., 4.]),)
    """
    leaves, spec = _flatten(tuple(primals))
    tr = _Transform(leaves)
    with tr:
        roots = _roots(leaves)
        out = func(*_unflatten(roots, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                   "has_aux is True")
            out, aux = out
    out_leaves, out_spec = _flatten(out)
    if not out_leaves:
        raise RuntimeError("vjp(f, *primals): Expected f to return a Tensor or a tuple/list/dict of Tensors")
    create_graph = tr.create_graph

    def vjp_fn(cotangents):
        ct, ct_spec = _flatten(cotangents)
        if len(ct) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(ct)} cotangents for {len(out_leaves)} outputs")
        for c, o in zip(ct, out_leaves):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: cotangent has shape {list(c.shape)} and output "
                                   f"{list(o.shape)}")
        keep = create_graph or _DEPTH.n > 0  # differentiable if the forward was, or if called inside a transform
        with enable_grad():
            gs = _F._grads(out_leaves, roots, ct, keep, False, "vjp")
        gs = [_out(g, keep) for g in gs]
        return tuple(_unflatten(gs, spec))

    outs = _unflatten([_out(o, create_graph) for o in out_leaves], out_spec)
    if has_aux:
        return outs, vjp_fn, _detach_tree(aux, create_graph)
    return outs, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J @ tangents): forward-mode product, by the double-vjp trick.

    >>> import workbench as wb
    >>> wb.func.jvp(lambda x: x ** 2, (wb.tensor([1., 2.]),), (wb.tensor([1., 0.]),))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples. E.g. "
                           "jvp(f, (x,), (t,))")
    leaves, spec = _flatten(tuple(primals))
    tl, _ = _flatten(tuple(tangents))
    if len(tl) != len(leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure")
    for p, t in zip(leaves, tl):
        if p.shape != t.shape:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {list(p.shape)} and {list(t.shape)}")
    with _Transform(leaves + tl) as tr:
        roots = _roots(leaves)
        out = func(*_unflatten(roots, spec))
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, out_spec = _flatten(out)
        us = [zeros_like(o).requires_grad_(True) for o in out_leaves]  # dummy cotangents
        g = _F._grads(out_leaves, roots, us, True, strict, "jvp")
        t_out = _F._grads(g, us, tl, tr.create_graph, strict, "jvp", what="output")
    outs = _unflatten([_out(o, tr.create_graph) for o in out_leaves], out_spec)
    touts = _unflatten([_out(t, tr.create_graph) for t in t_out], out_spec)
    if has_aux:
        return outs, touts, _detach_tree(aux, tr.create_graph)
    return outs, touts


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of ``func`` w.r.t. ``argnums`` (shape out.shape + in.shape).

    >>> import workbench as wb
    >>> wb.func.jacrev(lambda x: x ** 2)(wb.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """

    def wrapper(*args, **kwargs):
        args, nums, parts = _diff_args(args, argnums)
        all_leaves = [t for _, ls, _ in parts for t in ls]
        with _Transform(all_leaves) as tr:
            roots = []
            for a, leaves, spec in parts:
                r = _roots(leaves)
                roots.append(r)
                args[a] = _unflatten(r, spec)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = out
            out_leaves, out_spec = _flatten(out)
            flat = [t for r in roots for t in r]
            rows = _F._jacobian_rows(out_leaves, flat, tr.create_graph, False, "jacrev")
        per_output = []
        for row in rows:
            row = [_out(j, tr.create_graph) for j in row]
            res, i = [], 0
            for (a, leaves, spec), r in zip(parts, roots):
                res.append(_unflatten(row[i:i + len(r)], spec))
                i += len(r)
            per_output.append(res[0] if isinstance(argnums, int) else tuple(res))
        jac = _unflatten(per_output, out_spec)
        return (jac, _detach_tree(aux, tr.create_graph)) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` w.r.t. ``argnums``, as jacrev gives it (computed in reverse mode; same values).

    >>> import workbench as wb
    >>> wb.func.jacfwd(lambda x: x.sin())(wb.tensor([0.]))
    tensor([[1.]])
    """
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """A function returning the Hessian of the scalar ``func`` w.r.t. ``argnums``.

    >>> import workbench as wb
    >>> wb.func.hessian(lambda x: (x ** 3).sum())(wb.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


# --- vmap ----------------------------------------------------------------------------------------------
def _select(t, dim, i):
    d = dim % t.ndim if t.ndim else dim
    return t[(slice(None),) * d + (i,)]


def _map_dims(args, in_dims):
    # one (leaf tensor, dim) list for the whole argument tree, following in_dims' structure
    if in_dims is None or isinstance(in_dims, int):
        leaves, spec = _flatten(args)
        return leaves, [in_dims] * len(leaves), spec
    if isinstance(in_dims, (tuple, list)) and isinstance(args, (tuple, list)):
        if len(in_dims) != len(args):
            raise ValueError(f"vmap: in_dims is not compatible with the structure of inputs: {len(in_dims)} in_dims "
                             f"for {len(args)} arguments")
        leaves, dims, specs = [], [], []
        for a, d in zip(args, in_dims):
            ls, ds, sp = _map_dims(a, d)
            leaves += ls
            dims += ds
            specs.append((len(ls), sp))
        return leaves, dims, (type(args), specs)
    if isinstance(in_dims, dict) and isinstance(args, dict):
        leaves, dims, specs = [], [], []
        for k, a in args.items():
            ls, ds, sp = _map_dims(a, in_dims.get(k))
            leaves += ls
            dims += ds
            specs.append((k, len(ls), sp))
        return leaves, dims, (dict, specs)
    raise ValueError(f"vmap: in_dims {in_dims!r} is not compatible with the structure of the inputs")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Map ``func`` over a batch dimension of its inputs (``in_dims``) and stack the results (``out_dims``).

    >>> import workbench as wb
    >>> wb.func.vmap(lambda row: row.sum())(wb.tensor([[1., 2.], [3., 4.]]))
    tensor([3., 7.])
    >>> wb.func.vmap(lambda a, b: a * b, in_dims=(0, None))(wb.tensor([1., 2.]), wb.tensor(10.))
    tensor([10., 20.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        dims = in_dims if not isinstance(in_dims, (tuple, list)) or len(args) != 1 or len(in_dims) == 1 else in_dims
        if isinstance(dims, (tuple, list)) and len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has {len(dims)} elements, but inputs has "
                             f"{len(args)}.")
        leaves, ds, spec = _map_dims(tuple(args), dims if isinstance(dims, (tuple, list)) else (dims,) * len(args))
        sizes = set()
        for t, d in zip(leaves, ds):
            if d is not None:
                if not -t.ndim <= d < max(t.ndim, 1) or t.ndim == 0:
                    raise ValueError(f"vmap: Tried to map over dim {d} of an input with {t.ndim} dims; in_dims must "
                                     "name an existing dim of each mapped input")
                sizes.add(t.shape[d])
        if not sizes:
            raise ValueError("vmap(f, in_dims=..., ...)(<inputs>): at least one input must be mapped over (got "
                             "in_dims=None for every tensor input)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        state = random.get_rng_state() if randomness == "same" else None
        results = []
        for i in range(n):
            if state is not None:
                random.set_rng_state(state)
            sliced = [t if d is None else _select(t, d, i) for t, d in zip(leaves, ds)]
            results.append(func(*_unflatten(sliced, spec), **kwargs))
        first, out_spec = _flatten(results[0])
        if not first or any(not isinstance(r, Tensor) and _flatten(r)[1] is None for r in results):
            raise ValueError(f"vmap: the function must return Tensors (or tuples/lists/dicts of Tensors), got "
                             f"{type(results[0]).__name__}")
        columns = list(zip(*[_flatten(r)[0] for r in results]))
        odims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(columns)
        if len(odims) != len(columns):
            raise ValueError(f"vmap: out_dims has {len(odims)} entries but the function returned {len(columns)} "
                             "tensors")
        outs = []
        for col, od in zip(columns, odims):
            if od is None:
                outs.append(col[0])
            else:
                outs.append(stack(list(col), dim=od if od >= 0 else od + col[0].ndim + 1))
        return _unflatten(outs, out_spec)

    return wrapper


# --- functional_call --------------------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module`` with some parameters/buffers replaced by the given tensors (the module is unchanged after).

    >>> import workbench as wb
    >>> lin = wb.nn.Linear(2, 1, bias=False)
    >>> wb.func.functional_call(lin, {"weight": wb.tensor([[1., 1.]])}, (wb.tensor([2., 3.]),))
    tensor([5.])
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        dicts = (dicts,)
    merged = {}
    for d in dicts:
        for k, v in d.items():
            if k in merged:
                raise ValueError(f"functional_call got multiple values for key {k}, which is not allowed.")
            merged[k] = v
    named = dict(module.named_parameters(remove_duplicate=False)) if _accepts_remove_duplicate(module) else dict(
        module.named_parameters())
    named.update(dict(module.named_buffers()))
    if strict:
        missing = sorted(set(named) - set(merged))
        unexpected = sorted(set(merged) - set(named))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reloading state_dict for {type(module).__name__}: missing keys "
                               f"{missing}, unexpected keys {unexpected}")
    if tie_weights:  # a tensor shared under several names takes the given value under all of them
        by_id = {}
        for name, t in named.items():
            by_id.setdefault(id(t), []).append(name)
        for name in list(merged):
            if name in named:
                for other in by_id[id(named[name])]:
                    merged.setdefault(other, merged[name])
    swapped = []
    try:
        for name, value in merged.items():
            owner, attr = _owner(module, name)
            for store in ("_parameters", "_buffers"):
                d = owner.__dict__.get(store)
                if d is not None and attr in d:
                    swapped.append((d, attr, d[attr]))
                    d[attr] = value
                    break
            else:
                swapped.append((owner.__dict__, attr, owner.__dict__.get(attr, _MISSING)))
                owner.__dict__[attr] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for d, attr, old in reversed(swapped):
            if old is _MISSING:
                d.pop(attr, None)
            else:
                d[attr] = old


_MISSING = object()


def _accepts_remove_duplicate(module):
    try:
        return "remove_duplicate" in inspect.signature(module.named_parameters).parameters
    except (TypeError, ValueError):
        return False


def _owner(module, name):
    *path, attr = name.split(".")
    m = module
    for p in path:
        sub = m.__dict__.get("_modules", {}).get(p)
        if sub is None:
            raise AttributeError(f"functional_call: {type(m).__name__} has no submodule '{p}' (in key '{name}')")
        m = sub
    return m, attr
