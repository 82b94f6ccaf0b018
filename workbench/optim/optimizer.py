"""Optimizer: param groups, per-parameter state, state dicts that resume bit for bit, and hooks.

Subclasses update parameters on their raw arrays in place (under no autograd), bumping each
parameter's version counter, so a step allocates little and records nothing on the tape.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _backend
from .._backend import blas
from .._backend import fused as _fused
from ..autograd.grad_mode import enable_grad
from ..nn.module import _tensor_typename, zero_grads
from ..tensor import Tensor
from ..utils.hooks import add_hook as _add_hook


class _RequiredParameter:
    """Marks a hyper-parameter (lr for SGD in old PyTorch) that every param group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(x):
    return _tensor_typename(x)


def _real(a):
    """A complex array viewed as real (..., 2) pairs, so the real-valued update rules apply."""
    return a.view(a.real.dtype) if a.dtype.kind == "c" else a


def _scalar_step(value=0.0):
    """The ``step`` state entry: a 0-d float32 tensor on the CPU, as PyTorch keeps it."""
    return Tensor._make(_backend.numpy.asarray(value, dtype=_backend.numpy.float32))


def _zeros_like(p):
    xp = _backend.xp_of(p._data)
    with _backend.on_device(p.device):
        return Tensor._make(xp.zeros_like(p._data))


class Optimizer:
    """Base class of all optimizers: holds ``param_groups`` and ``state`` and implements their bookkeeping.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.ones(2))
    >>> opt = wb.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w
    Parameter containing:
    tensor([0.8000, 0.8000], requires_grad=True)
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._step_count = 0
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {_typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:  # an unpickled or deep-copied optimizer starts without hooks
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_step_count", 0)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n" + f"Parameter Group {i}"
            for key in sorted(group.keys()):
                if key != "params":
                    s += "\n" + f"    {key}: {group[key]}"
        return s + "\n)"

    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with "params" and optional per-group options).

        >>> import workbench as wb
        >>> a, b = wb.nn.Parameter(wb.ones(1)), wb.nn.Parameter(wb.ones(1))
        >>> opt = wb.optim.SGD([a], lr=0.1); opt.add_param_group({"params": [b], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = []
        plain = []
        for p in params:
            if isinstance(p, tuple) and len(p) == 2:
                names.append(p[0])
                plain.append(p[1])
            else:
                plain.append(p)
        if names and len(names) != len(plain):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        group = dict(param_group)
        group["params"] = plain
        if names:
            group["param_names"] = names
        for p in plain:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in plain}) != len(plain):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        existing = set()
        for g in self.param_groups:
            existing.update(id(p) for p in g["params"])
            if ("param_names" in g) != bool(names):
                raise ValueError("all optimizer param groups should be with/without names.")
        if existing & {id(p) for p in plain}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every optimized parameter (to None by default).

        >>> import workbench as wb
        >>> w = wb.nn.Parameter(wb.ones(1)); opt = wb.optim.SGD([w], lr=0.1)
        >>> w.sum().backward(); opt.zero_grad(); w.grad is None
        True
        """
        zero_grads(chain.from_iterable(group["params"] for group in self.param_groups), set_to_none)

    def _plan(self):
        """None, or a function that does what the next ``step()`` (no closure) would, with the checks ``step()``
        makes on every call (which parameters have gradients, their state, the path their update takes) made
        once here: it returns False, having changed nothing, where ``step()`` would now do something else.
        A compiled training step's replay calls it in place of ``step()`` (``workbench.compiler``), when the
        class that defines the ``step()`` in use defines this too; optimizers with a steady state worth it
        override this, the others keep the plain ``step()``."""
        return None

    def _plan_holds(self, param_groups, n_groups):
        """What every plan checks first: no step hooks, the loops on, and the same list of groups as planned."""
        return not (self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks or not _fused.ENABLED[0]
                    or self.param_groups is not param_groups or len(param_groups) != n_groups)

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # --- state dicts ---------------------------------------------------------------------------
    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}, as PyTorch's.

        >>> import workbench as wb
        >>> opt = wb.optim.Adam([wb.nn.Parameter(wb.ones(1))])
        >>> sorted(opt.state_dict()["param_groups"][0])[:3]
        ['amsgrad', 'betas', 'capturable']
        """
        for h in list(self._optimizer_state_dict_pre_hooks.values()):
            h(self)
        mapping = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        sd = {"state": packed_state, "param_groups": groups}
        for h in list(self._optimizer_state_dict_post_hooks.values()):
            r = h(self, sd)
            if r is not None:
                sd = r
        return sd

    @staticmethod
    def _cast_state(param, value, key):
        if isinstance(value, Tensor):
            if key == "step":
                return Tensor._make(value._data.copy() if hasattr(value._data, "copy") else value._data)
            if param.is_floating_point() or param.is_complex():
                v = value.to(dtype=param.dtype, device=param.device)
            else:
                v = value.to(device=param.device)
            return Tensor._make(v.xp_copy() if v is value else v._data)
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state(param, v, None) for v in value)
        return value

    def load_state_dict(self, state_dict):
        """Restore the state and hyper-parameters saved by ``state_dict`` (checked before anything changes).

        >>> import workbench as wb
        >>> w = wb.nn.Parameter(wb.ones(1)); opt = wb.optim.Adam([w])
        >>> opt.load_state_dict(opt.state_dict())
        """
        state_dict = dict(state_dict)
        for h in list(self._optimizer_load_state_dict_pre_hooks.values()):
            r = h(self, state_dict)
            if r is not None:
                state_dict = r
        if "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state dict must have the keys 'state' and 'param_groups' (as returned by "
                             "Optimizer.state_dict())")
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v, None)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for h in list(self._optimizer_load_state_dict_post_hooks.values()):
            h(self)

    # --- hooks ---------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before each step."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) called after each step."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) called before ``state_dict`` packs the state."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend=prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a new state dict, after ``state_dict``."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend=prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a new state dict, before loading."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend=prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) called after loading."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend=prepend)


def _with_step_hooks(step):
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for h in list(self._optimizer_step_pre_hooks.values()):
            r = h(self, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError(f"{h} must return None or a tuple of (new_args, new_kwargs), but got {r}.")
                args, kwargs = r
        out = step(self, *args, **kwargs)
        self._step_count += 1
        for h in list(self._optimizer_step_post_hooks.values()):
            h(self, args, kwargs)
        return out

    wrapper._wrapped_step = True
    return wrapper


def _params_with_grad(group):
    """(param, its array, its gradient's array) for each parameter of the group that has a gradient."""
    for p in group["params"]:
        g = p._grad
        if g is not None:
            yield p, p._data, g._data


def _scratch(opt, x):
    """Two scratch arrays shaped like ``x``: views into buffers shared by every parameter of that
    dtype and device, sized to the largest one, so steps allocate nothing and memory grows by two
    parameters' worth, not two per parameter."""
    bufs = opt.__dict__.get("_scratch_bufs")
    if bufs is None:
        bufs = opt.__dict__["_scratch_bufs"] = {}
    key = (x.dtype, _backend.device_of(x))
    b = bufs.get(key)
    n = x.size
    if b is None or b.shape[1] < n:
        xp = _backend.xp_of(x)
        with _backend.on_device(key[1]):
            b = bufs[key] = xp.empty((2, n), dtype=x.dtype)
    return b[0, :n].reshape(x.shape), b[1, :n].reshape(x.shape)


# PyTorch's word for an argument in its "Invalid <word> value: <v>" messages, where not the name itself.
_ARG_WORDS = {"eps": "epsilon"}
_BOUNDS = {"beta2_decay": ("<=", 0.0), "d": (">=", 1.0)}  # Adafactor's; every other argument: ">= 0"


class _Flat:
    """One param group's parameters that have gradients, laid end to end for a whole-array update.

    The gradients are gathered into ``grad`` (one copy per step) and the per-parameter state arrays
    named by ``keys`` are views into one array per key (``bufs``), so an update rule runs as a few
    calls over all parameters instead of a few per parameter: on the digits MLP the per-call overhead
    was most of an Adam step. The parameters keep their own arrays (anything holding one, a NumPy view
    or a module's state dict, stays live); the update is written back into each (``scatter``). Where the
    compiled loops serve the group (``fused.adam_step``, ``sgd_step``), Adam and SGD skip the gather and the
    write-back: each parameter is one pass on its own gradient and its views of ``bufs``. The state stays
    PyTorch's: ``optimizer.state[p][key]`` is a tensor shaped like ``p``.
    """

    __slots__ = ("group", "params", "datas", "flats", "views", "bufs", "grad", "tmp", "tmp_views", "grad_views",
                 "fresh")

    def flat_grads(self):
        """The gradients as a tuple of flat arrays, for a loop over the whole group (``fused.sgd_steps``), or
        None where one is not a C-contiguous NumPy array of the parameters' dtype or the parameters' own
        arrays are not writable flat (``flats`` is then None)."""
        if self.flats is None:
            return None
        dt = self.datas[0].dtype
        gs = []
        for p in self.params:
            g = p._grad._data
            if g.__class__ is not _backend.ndarray or g.dtype != dt or not g.flags.c_contiguous:
                return None
            gs.append(g.reshape(-1))
        return tuple(gs)

    def gather(self, xp):
        """The gradients, end to end, in ``self.grad``."""
        xp.concatenate([p._grad._data.reshape(-1) for p in self.params], out=self.grad)
        return self.grad

    def scatter(self, views, alpha):
        """Each parameter += alpha * its view in ``views`` (one BLAS pass where it can), version bumped."""
        for p, u in zip(self.params, views):
            x = p._data
            if not blas.axpy(alpha, u, x):
                x += u * alpha
            p._vbox[0] += 1


def _flat_group(opt, group, keys):
    """The ``_Flat`` of ``group`` for this step, (re)built when its parameters, their arrays or their
    state changed, or None when the per-parameter path must run: fewer than two parameters with
    gradients, mixed or non-float dtypes or devices, a parameter listed twice, or state present for
    some parameters and not others (their first steps differ). ``fresh`` is True when the state was
    just created (zeros), so the caller initializes it as on a first step."""
    ps = [p for p in group["params"] if p._grad is not None]
    if len(ps) < 2:
        return None
    cache = opt.__dict__.setdefault("_flat_cache", {})
    f = cache.get(id(group))
    state = opt.state
    if f is not None and f.group is group and len(f.params) == len(ps):
        ok = True
        for i, p in enumerate(ps):
            if p is not f.params[i] or p._data is not f.datas[i]:
                ok = False
                break
            st = state.get(p)
            if st is None or any(st.get(k) is None or st[k]._data is not f.views[k][i] for k in keys):
                ok = False
                break
        if ok:
            f.fresh = False
            return f
    x0 = ps[0]._data
    dt, dev = x0.dtype, _backend.device_of(x0)
    if (dt.kind != "f" or len({id(p) for p in ps}) != len(ps)
            or any(p._data.dtype != dt or _backend.device_of(p._data) != dev for p in ps)):
        return None
    present = {all(k in state[p] for k in keys) for p in ps} | {any(k in state[p] for k in keys) for p in ps}
    if len(present) != 1:
        return None
    fresh = not present.pop()
    xp = _backend.xp_of(x0)
    sizes = [p._data.size for p in ps]
    n = sum(sizes)
    f = _Flat()
    f.group, f.params, f.datas, f.fresh = group, ps, [p._data for p in ps], fresh
    f.flats = (tuple(x.reshape(-1) for x in f.datas) if all(
        x.__class__ is _backend.ndarray and x.flags.c_contiguous and x.flags.writeable for x in f.datas) else None)
    offsets = [0]
    for s in sizes:
        offsets.append(offsets[-1] + s)

    def views(buf):
        return [buf[a:b].reshape(p._data.shape) for p, a, b in zip(ps, offsets, offsets[1:])]

    with _backend.on_device(dev):
        f.grad, f.tmp = xp.empty(n, dt), xp.empty(n, dt)
        f.bufs, f.views = {}, {}
        for k in keys:
            buf = f.bufs[k] = xp.zeros(n, dt)
            f.views[k] = views(buf)
            for p, v in zip(ps, f.views[k]):
                old = state[p].get(k)
                if old is not None:
                    v[...] = old._data
                state[p][k] = Tensor._make(v)
    f.tmp_views, f.grad_views = views(f.tmp), views(f.grad)
    cache[id(group)] = f
    return f


# --- plans (Optimizer._plan): a group's steady-state flat path, its checks made once -------------------------
class _FlatPlan:
    """A group whose next ``step()`` would take the flat path of ``_flat_group``'s cached ``_Flat`` ``f``: every
    parameter with a gradient, the state ``keys`` in f's buffers, the loops serving (``usable``). ``grads()``
    is what a plan calls each time: the gradients' flat arrays, or None (then step() must run) where anything
    ``_flat_group`` and the loops check changed: the group's parameters, their arrays, their state tensors
    (``also``: more state entries kept as they are, and their version counters), a gradient's dtype or
    layout."""

    __slots__ = ("opt", "group", "params", "f", "keys", "also", "entries", "dtype", "cache")

    def __init__(self, opt, group, f, keys, also, entries):
        self.opt, self.group, self.params, self.f, self.keys, self.also = opt, group, f.params, f, keys, also
        self.entries, self.dtype, self.cache = entries, f.datas[0].dtype, opt.__dict__["_flat_cache"]

    @classmethod
    def of(cls, opt, group, keys, also=()):
        f = opt.__dict__.get("_flat_cache", {}).get(id(group))
        params = group["params"]
        if (f is None or f.group is not group or f.fresh or not _same(f.params, params)
                or not _fused.usable(f.grad)):
            return None
        entries = []  # per parameter: p, its array, its state tensors, the extra entries' tensors, and the
        # (key, tensor) and (key, tensor, version) pairs grads() checks
        for i, p in enumerate(params):
            st = opt.state.get(p)
            if p._grad is None or p._data is not f.datas[i] or st is None:
                return None
            ts = tuple(st.get(k) for k in keys)
            if any(t is None or t._data is not f.views[k][i] for t, k in zip(ts, keys)):
                return None
            extra = tuple(st.get(k) for k in also)
            if any(t is None for t in extra):
                return None
            entries.append((p, f.datas[i], ts, extra, tuple(zip(keys, ts)),
                            tuple(zip(also, extra, [t._vbox[0] for t in extra]))))
        return cls(opt, group, f, keys, also, entries)

    def grads(self):
        if not _same(self.group["params"], self.params) or self.cache.get(id(self.group)) is not self.f:
            return None
        state, dt, gs = self.opt.state, self.dtype, []
        for p, x, _ts, _extra, held, kept in self.entries:
            g, st = p._grad, state.get(p)
            if g is None or p._data is not x or st is None:
                return None
            g = g._data
            if g.__class__ is not x.__class__ or g.dtype is not dt or not g.flags.c_contiguous:
                return None
            for k, t in held:
                if st.get(k) is not t:
                    return None
            for k, t, v in kept:
                if st.get(k) is not t or t._vbox[0] != v:
                    return None
            gs.append(g.reshape(-1))
        return gs


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _check_args(should_be=None, **args):
    """Check an optimizer's constructor arguments in the order given, raising PyTorch's ValueError
    (its exact message) for the first out of range: lr >= 0 (a Tensor lr of 1 element), each beta in
    [0, 1), rho in [0, 1], 0 < etas[0] < 1 < etas[1], every other argument >= 0.

    The older optimizers' messages read "Invalid <name> value: <v>"; the newer ones (Adafactor, Muon)
    read "<words> should be >= 0 but is: <v>", with their words per argument in ``should_be`` (a tuple
    of words for a tuple argument, whose None entries go unchecked) and the bounds other than ">= 0" in
    ``_BOUNDS``.

    >>> _check_args(lr=0.1, betas=(0.9, 0.999), eps=1e-8)
    >>> _check_args(lr=-1)
    Traceback (most recent call last):
    ValueError: Invalid learning rate: -1
    >>> _check_args({"d": "Clipping threshold d"}, d=0.5)
    Traceback (most recent call last):
    ValueError: Clipping threshold d should be >= 1 but is: 0.5
    """
    for name, value in args.items():
        if name == "lr" and isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if should_be is not None:
            words = should_be.get(name, name)
            pairs = zip(words, value) if isinstance(value, tuple) else [(words, value)]
            op, bound = _BOUNDS.get(name, (">=", 0.0))
            for w, v in pairs:
                if v is not None and not (float(v) <= bound if op == "<=" else bound <= float(v)):
                    raise ValueError(f"{w} should be {op} {bound:g} but is: {v}")
        elif name == "lr":
            if not 0.0 <= float(value):
                raise ValueError(f"Invalid learning rate: {value}")
        elif name == "betas":
            for i in (0, 1):
                if not 0.0 <= value[i] < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {value[i]}")
        elif name == "etas":
            if not 0.0 < value[0] < 1.0 < value[1]:
                raise ValueError(f"Invalid eta values: {value[0]}, {value[1]}")
        elif not (0.0 <= value <= 1.0 if name == "rho" else 0.0 <= value):
            raise ValueError(f"Invalid {_ARG_WORDS.get(name, name)} value: {value}")


