"""``opcheck``: does an operator behave as registered? Schema (what it mutates and returns), autograd registration,
the fake function against the real kernel, a replay of its tape node (what ``workbench.compile`` does), and a
float64 gradcheck of the registered backward."""
from .. import _backend, autograd
from ..autograd import graph
from ..autograd import gradcheck
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .custom_op import _Layout, _outputs_list, resolve

numpy = _backend.numpy

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic",
                      "test_gradcheck")


class OpCheckError(Exception):
    """Raised by opcheck (with raise_exception=True) when one of its tests fails."""


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True, atol=None, rtol=None):
    """Check that ``op`` behaves as registered on sample ``args``; returns {test name: 'SUCCESS' or the error}.

    * test_schema: arguments not in mutates_args are left unchanged; outputs match the schema's return types;
    * test_autograd_registration: with an input that requires grad, a backward is registered;
    * test_faketensor: the register_fake function gives the kernel's output shapes, dtypes and devices;
    * test_aot_dispatch_dynamic: replaying the op's tape node from its recorded arguments (as a compiler
      replaying the tape does) gives the same outputs and gradients;
    * test_gradcheck (workbench's addition): the registered backward agrees with finite differences in float64.

    Call it with inputs that require grad to test autograd, and with inputs on every device the op supports.

    >>> import workbench as wb
    >>> @wb.library.custom_op("doc::sq", mutates_args=())
    ... def sq(x: wb.Tensor) -> wb.Tensor:
    ...     return x * x
    >>> sq.register_fake(lambda x: wb.empty_like(x))
    <function <lambda> at ...>
    >>> sq.register_autograd(lambda ctx, g: 2 * g * ctx.saved_tensors[0],
    ...                      setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    >>> wb.library.opcheck(sq, (wb.randn(3, requires_grad=True),))["test_gradcheck"]
    'SUCCESS'
    """
    opdef = resolve(op)
    kwargs = dict(kwargs or {})
    tests = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    unknown = [t for t in tests if t not in _TESTS]
    if unknown:
        raise ValueError(f"opcheck: unknown test_utils {unknown}; choose from {list(DEFAULT_TEST_UTILS)}")
    if (atol is None) != (rtol is None):
        raise ValueError("opcheck: if you specify atol you must specify rtol, and vice versa")
    results = {}
    for name in tests:
        try:
            _TESTS[name](opdef, tuple(args), kwargs, atol, rtol)
            results[name] = "SUCCESS"
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for stack trace)") from e
            results[name] = e
    return results


def _clone(v):
    if isinstance(v, Tensor):
        c = v.detach().clone()
        c.requires_grad_(v.requires_grad)
        return c
    if isinstance(v, (list, tuple)):
        return type(v)(_clone(x) for x in v)
    return v


def _host(t):
    return numpy.array(_backend.to_device(t._data, _backend.CPU), copy=True)


def _tensor_items(pos, kw, schema):
    values = list(pos) + [kw[a.name] for a in schema.arguments if a.kwarg_only]
    for a, v in zip(schema.arguments, values):
        for t in (v if isinstance(v, list) else [v]):
            if isinstance(t, Tensor):
                yield a, t


def _differentiable(t):
    return isinstance(t, Tensor) and t.requires_grad and t.dtype.is_floating_point


def _tolerances(t, atol, rtol):
    if atol is not None:
        return atol, rtol
    return {numpy.float16: (1e-3, 1e-3), numpy.float32: (1e-5, 1.3e-6)}.get(t._data.dtype.type, (1e-7, 1e-7))


def _assert_close(what, a, b, atol, rtol):
    tol_a, tol_r = _tolerances(a, atol, rtol)
    ha, hb = _host(a), _host(b)
    if ha.shape != hb.shape or not numpy.allclose(ha, hb, atol=tol_a, rtol=tol_r, equal_nan=True):
        raise RuntimeError(f"{what} differ: max abs difference "
                           f"{numpy.max(numpy.abs(ha - hb)) if ha.shape == hb.shape else 'n/a (shapes differ)'} "
                           f"(atol={tol_a}, rtol={tol_r})")


def _test_schema(opdef, args, kwargs, atol, rtol):
    schema = opdef._schema_obj
    pos, kw = schema.bind(opdef._qualname, _clone(args), _clone(kwargs))
    before = [(a, t, _host(t)) for a, t in _tensor_items(pos, kw, schema)]
    with no_grad():
        out = opdef(*pos, **kw)
    for a, t, old in before:
        new = _host(t)
        same = numpy.array_equal(old, new, equal_nan=old.dtype.kind in "fc")
        if not same and not a.mutable:
            raise RuntimeError(f"Argument {a.name} is not defined as mutable but was mutated (declare it with "
                               f"mutates_args={{'{a.name}'}})")
    if _outputs_list(out if not isinstance(out, list) or schema.returns == ["Tensor[]"] else tuple(out),
                     schema.returns) is None:
        raise RuntimeError(f"{opdef._qualname} returned {type(out).__name__}, which does not match its schema "
                           f"{opdef._schema}")


def _test_autograd_registration(opdef, args, kwargs, atol, rtol):
    schema = opdef._schema_obj
    pos, kw = schema.bind(opdef._qualname, _clone(args), _clone(kwargs))
    if not any(_differentiable(t) for _, t in _tensor_items(pos, kw, schema)) or opdef._direct_fns or opdef._composite_fns:
        return
    if opdef._backward_fn is None:
        raise RuntimeError(f"{opdef._qualname}: an input requires grad, but no autograd formula is registered. Use "
                           f"{opdef._name}.register_autograd(backward, setup_context=...), or call the op under "
                           "workbench.no_grad()")
    out = opdef(*pos, **kw)
    for o in (out if isinstance(out, (tuple, list)) else [out]):
        if isinstance(o, Tensor) and o.dtype.is_floating_point and (o.grad_fn is None or o.grad_fn._op !=
                                                                       opdef._qualname):
            raise RuntimeError(f"{opdef._qualname}: an output that should be differentiable was not recorded on the "
                               "tape by the op")


def _test_faketensor(opdef, args, kwargs, atol, rtol):
    schema = opdef._schema_obj
    if opdef._abstract_fn is None:
        raise RuntimeError(f"There was no fake impl registered for {opdef}. This is necessary for shape propagation "
                           f"without computing (workbench.compile). Please use `{opdef._name}.register_fake` to add a "
                           "fake impl.")
    pos, kw = schema.bind(opdef._qualname, _clone(args), _clone(kwargs))
    with no_grad():
        real = opdef(*pos, **kw)
        # stand-ins of the same shape, dtype and device whose contents are never initialised
        stand = lambda v: (v.new_empty(v.shape) if isinstance(v, Tensor)  # noqa: E731
                           else [stand(x) for x in v] if isinstance(v, list) else v)
        fake = opdef._abstract_fn(*[stand(v) for v in pos], **{k: stand(v) for k, v in kw.items()})
    r_outs = _outputs_list(tuple(real) if isinstance(real, list) and schema.returns != ["Tensor[]"] else real,
                           schema.returns)
    f_outs = _outputs_list(tuple(fake) if isinstance(fake, list) and schema.returns != ["Tensor[]"] else fake,
                           schema.returns)
    if f_outs is None or len(f_outs) != len(r_outs):
        raise RuntimeError(f"{opdef._qualname}: the fake function returned {type(fake).__name__}, but the schema "
                           f"{opdef._schema} and the kernel return {len(r_outs)} outputs")
    for i, (r, f) in enumerate(zip(r_outs, f_outs)):
        if isinstance(r, Tensor) != isinstance(f, Tensor):
            raise RuntimeError(f"{opdef._qualname}: output {i} is a {type(r).__name__} from the kernel but a "
                               f"{type(f).__name__} from the fake function")
        if isinstance(r, Tensor):
            for what in ("shape", "dtype", "device"):
                if getattr(r, what) != getattr(f, what):
                    raise RuntimeError(f"{opdef._qualname}: output {i} has {what} {getattr(r, what)} from the kernel "
                                       f"but {getattr(f, what)} from the fake function")


def _grad_outputs(outs):
    rng = numpy.random.default_rng(0)
    return [Tensor._make(_backend.to_device(rng.standard_normal(o.shape).astype(o._data.dtype), o.device))
            for o in outs]


def _test_aot_dispatch_dynamic(opdef, args, kwargs, atol, rtol):
    schema = opdef._schema_obj
    pos, kw = schema.bind(opdef._qualname, _clone(args), _clone(kwargs))
    recorded = []

    def listen(node, node_args, results):
        if node._op == opdef._qualname:
            recorded.append(node_args)

    with graph.add_listener(listen):
        eager = opdef(*pos, **kw)
    if recorded:
        node_args = recorded[-1]
    else:  # nothing required grad, so no node was recorded: the arguments a node would hold
        flat, lengths = schema.flatten(pos, kw)
        node_args = (*flat, _Layout(lengths))
    replay = opdef._fn_cls.apply(*node_args)
    e_outs = [o for o in (eager if isinstance(eager, (tuple, list)) else [eager]) if isinstance(o, Tensor)]
    r_outs = [o for o in (replay if isinstance(replay, tuple) else [replay]) if isinstance(o, Tensor)]
    if len(e_outs) != len(r_outs):
        raise RuntimeError(f"{opdef._qualname}: the replayed node returned {len(r_outs)} tensors, eager {len(e_outs)}")
    for i, (e, r) in enumerate(zip(e_outs, r_outs)):
        _assert_close(f"{opdef._qualname}: output {i} of eager and replayed calls", e, r, atol, rtol)
    inputs = [t for _, t in _tensor_items(pos, kw, schema) if _differentiable(t)]
    diff = [(e, r) for e, r in zip(e_outs, r_outs) if e.grad_fn is not None]
    if not inputs or not diff:
        return
    gos = _grad_outputs([e for e, _ in diff])
    ge = autograd.grad([e for e, _ in diff], inputs, gos, allow_unused=True)
    gr = autograd.grad([r for _, r in diff], inputs, gos, allow_unused=True)
    for i, (a, b) in enumerate(zip(ge, gr)):
        if (a is None) != (b is None):
            raise RuntimeError(f"{opdef._qualname}: input {i} got a gradient in one of the eager and replayed calls "
                               "only")
        if a is not None:
            _assert_close(f"{opdef._qualname}: gradients of input {i} of eager and replayed calls", a, b, atol, rtol)


def _test_gradcheck(opdef, args, kwargs, atol, rtol):
    schema = opdef._schema_obj
    pos, kw = schema.bind(opdef._qualname, _clone(args), _clone(kwargs))
    slots = []  # (container, index) of each differentiable tensor, to substitute float64 copies

    def collect(container, key, v):
        if _differentiable(v):
            slots.append((container, key))
        elif isinstance(v, list):
            for j, x in enumerate(v):
                collect(v, j, x)

    for i, v in enumerate(pos):
        collect(pos, i, v)
    for k, v in kw.items():
        collect(kw, k, v)
    if not slots:
        return
    if opdef._backward_fn is None and not (opdef._direct_fns or opdef._composite_fns):
        raise RuntimeError(f"Trying to backward through {opdef._namespace}.{opdef._name}.default but no autograd "
                           "formula was registered. Please use register_autograd to add one.")
    inputs = tuple(c[k].detach().double().requires_grad_(True) for c, k in slots)

    def fn(*xs):
        for (c, k), x in zip(slots, xs):
            c[k] = x
        out = opdef(*pos, **kw)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, Tensor) and o.dtype.is_floating_point]
        return tuple(outs) if len(outs) != 1 else outs[0]

    gradcheck(fn, inputs, atol=atol if atol is not None else 1e-5, rtol=rtol if rtol is not None else 1e-3)


_TESTS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic,
          "test_gradcheck": _test_gradcheck}
