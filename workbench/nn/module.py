"""Module: the base class of every layer; registration, traversal, state dicts, hooks and the scope stack.

``Module.__call__`` pushes the module's dotted name (as ``named_modules`` of the outermost module
called gives it, the root being ``""``) onto the tape's scope stack, so every node recorded inside
records where in the model it was made, e.g. ``"encoder.0.linear1"``.
"""
import contextvars
import itertools
from collections import OrderedDict, namedtuple

from .. import _backend
from .._backend.dtypes import bfloat16, float16, float32, float64
from ..autograd import graph as _graph
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..ops.convert import _parse_to, _type_target
from ..tensor import Tensor
from ..utils.hooks import add_hook as _add_hook
from .parameter import Buffer, Parameter, is_lazy

_TREE_VERSION = itertools.count(1)  # bumped whenever any module's set of children changes
_tree = [0]
_NAMES = contextvars.ContextVar("workbench_module_names", default=None)  # the active root's {id: name}
_SCOPE = _graph.SCOPE
_CALLS = itertools.count()


class CallScope(str):
    """The module scope a tape node records: the dotted name (it is that string), and which call it was.

    ``call`` numbers this call (unique in the process), ``parent`` is the call it ran inside (or
    None), so the viewer can draw every call of a module as its own group and repeated calls (a
    loop, an RNN over time, one block applied N times) as a series.

    >>> import workbench as wb
    >>> net = wb.nn.Sequential(wb.nn.Linear(2, 2))
    >>> a, b = net(wb.ones(1, 2)), net(wb.ones(1, 2))
    >>> a.grad_fn.scope == b.grad_fn.scope == "0", a.grad_fn.scope.call != b.grad_fn.scope.call
    (True, True)
    """

    def __new__(cls, name, parent):
        self = super().__new__(cls, name)
        self.call = next(_CALLS)
        self.parent = parent if isinstance(parent, CallScope) else None
        return self


class call_scope:
    """Record the ops inside as one call of a named part of the current module (``"layer0"``, ``"step"``).

    Modules that loop inside one forward (an RNN over layers and time steps) use it so the viewer
    groups their ops by layer, then by step, as it groups module calls.

    >>> import workbench as wb
    >>> with call_scope("step"):
    ...     y = wb.ones(1, requires_grad=True) * 2
    >>> y.grad_fn.scope
    'step'
    """

    __slots__ = ("name", "token")

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        outer = _SCOPE.get()
        self.token = _SCOPE.set(CallScope(f"{outer}.{self.name}" if outer else self.name, outer))
        return self

    def __exit__(self, *exc):
        _SCOPE.reset(self.token)
        return False


def _changed():
    _tree[0] = next(_TREE_VERSION)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


# PyTorch's hook dicts (id -> hook), with the flags of forward hooks in their own dicts under the same ids,
# so code that reads module._forward_pre_hooks sees the hooks as in PyTorch
# hooks every module's call runs (``nn.modules.module.register_module_forward_hook`` and kin), before its own
_GLOBAL = {"forward_pre": OrderedDict(), "forward": OrderedDict(), "forward_with_kwargs": OrderedDict(),
           "forward_always_called": OrderedDict(), "backward": OrderedDict(), "backward_pre": OrderedDict()}
_GLOBAL_ON = [False]  # set when one is registered; cleared by the first call that finds them all removed


def global_hooks_on():
    """Whether a global module hook is registered (clears the flag once all are removed)."""
    G = _GLOBAL
    if _GLOBAL_ON[0] and not (G["forward_pre"] or G["forward"] or G["backward"] or G["backward_pre"]):
        _GLOBAL_ON[0] = False
    return _GLOBAL_ON[0]

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
               "_load_state_dict_post_hooks")

def zero_grads(params, set_to_none=True):
    """Reset the gradients of ``params``: PyTorch's ``zero_grad`` of both ``Module`` and ``Optimizer``.

    With ``set_to_none`` the ``.grad`` goes (the next backward allocates it anew); otherwise it is
    detached from any graph (``create_graph=True`` leaves one) and filled with zeros in place, so
    whoever holds it sees the zeros.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.ones(2)); w.sum().backward(); g = w.grad
    >>> zero_grads([w], set_to_none=False); g, w.grad is g
    (tensor([0., 0.]), True)
    """
    for p in params:
        g = p._grad
        if g is None:
            continue
        if set_to_none:
            p._grad = None
        else:
            if g.grad_fn is not None:
                g.detach_()
            else:
                g.requires_grad_(False)
            g._data[...] = 0
            g._vbox[0] += 1


def _tensor_typename(v):
    """PyTorch's type name of a tensor ("workbench.FloatTensor"), or the Python type name."""
    if isinstance(v, Tensor):
        return v.type()
    return type(v).__name__


class _BackwardHookFn(Function):
    """Identity on a module's tensor inputs or outputs: its node is where full backward hooks fire."""

    _raw = True
    op_name = "backward_hook"

    @staticmethod
    def forward(ctx, *xs):
        return tuple(xs)

    @staticmethod
    def backward(ctx, *grads):
        return grads


class Module:
    """Base class for all neural-network layers and models.

    Assigning a Parameter, a Module or (via ``register_buffer``) a tensor to an attribute registers it,
    so ``parameters()``, ``state_dict()``, ``to()`` and friends find it.

    >>> import workbench as wb
    >>> class Net(wb.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = wb.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> net = Net()
    >>> [n for n, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    >>> net(wb.randn(3, 4)).shape
    workbench.Size([3, 2])
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args or ''}{kwargs or ''}: "
                            "Module.__init__ takes no arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        for name in _HOOK_DICTS:
            d[name] = OrderedDict()
        d["_scope_cache"] = None

    def forward(self, *input):
        # abstract: every layer defines forward; calling a Module without one raises what PyTorch raises
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function: define '
            "forward(self, ...) in your subclass")

    # --- calling -------------------------------------------------------------------------------
    def _scope_names(self):
        c = self.__dict__.get("_scope_cache")
        if c is not None and c[0] == _tree[0] and c[1] == id(self):
            return c[2]
        names = {id(m): n for n, m in self.named_modules()}
        self.__dict__["_scope_cache"] = (_tree[0], id(self), names)
        return names

    def __call__(self, *args, **kwargs):
        names = _NAMES.get()
        if names is None:
            return self._call_root(args, kwargs)
        scope = names.get(id(self))
        if scope is None:  # a module not registered under the root (e.g. made on the fly)
            outer = _SCOPE.get()
            scope = f"{outer}.{type(self).__name__}" if outer else type(self).__name__
        tok = _SCOPE.set(CallScope(scope, _SCOPE.get()))
        try:
            d = self.__dict__
            if (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"]
                    or _GLOBAL_ON[0]):
                return self._call_with_hooks(args, kwargs)
            return self.forward(*args, **kwargs)
        finally:
            _SCOPE.reset(tok)

    def _call_root(self, args, kwargs):
        # the outermost module called: its named_modules give every nested module its dotted name
        ntok = _NAMES.set(self._scope_names())
        tok = _SCOPE.set("")
        try:
            d = self.__dict__
            if (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"]
                    or _GLOBAL_ON[0]):
                return self._call_with_hooks(args, kwargs)
            return self.forward(*args, **kwargs)
        finally:
            _SCOPE.reset(tok)
            _NAMES.reset(ntok)

    def _call_with_hooks(self, args, kwargs):
        G = _GLOBAL
        global_hooks_on()
        for fn in list(G["forward_pre"].values()):
            r = fn(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        for hid, fn in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = fn(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook registered with with_kwargs=True must return None "
                                           f"or a tuple of (new_args, new_kwargs), but got {r!r}")
                    args, kwargs = r
            else:
                r = fn(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = bool(self._backward_hooks or self._backward_pre_hooks or G["backward"] or G["backward_pre"]) and \
            is_grad_enabled()  # no graph, no hooks
        state = {}  # shared by the input and output identity nodes: grad_output reaches the grad_input hook
        if bw:
            args = self._wrap_inputs(args, state)
        try:
            out = self.forward(*args, **kwargs)
        except Exception:
            for hooks, always, kw in ((G["forward"], G["forward_always_called"], G["forward_with_kwargs"]),
                                      (self._forward_hooks, self._forward_hooks_always_called,
                                       self._forward_hooks_with_kwargs)):
                for hid, fn in list(hooks.items()):
                    if hid in always:
                        try:
                            fn(self, args, kwargs, None) if hid in kw else fn(self, args, None)
                        except Exception:
                            pass
            raise
        for hooks, kw in ((G["forward"], G["forward_with_kwargs"]), (self._forward_hooks, self._forward_hooks_with_kwargs)):
            for hid, fn in list(hooks.items()):
                r = fn(self, args, kwargs, out) if hid in kw else fn(self, args, out)
                if r is not None:
                    out = r
        if bw:
            out = self._wrap_outputs(out, state)
        return out

    def _wrap_inputs(self, args, state):
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        state["n_in"] = len(args)
        state["in_pos"] = pos
        if not pos:
            return args
        outs = _BackwardHookFn.apply(*[args[i] for i in pos])
        node = outs[0].grad_fn

        def pre(grads):
            gi = [None] * len(args)
            for k, i in enumerate(pos):
                gi[i] = grads[k]
            gi = tuple(gi)
            go = state.get("grad_output")
            for fn in [*_GLOBAL["backward"].values(), *self._backward_hooks.values()]:
                r = fn(self, gi, go)
                if r is not None:
                    if len(r) != len(gi):
                        raise RuntimeError(f"backward hook returned {len(r)} gradients, but the module has "
                                           f"{len(gi)} inputs; return one gradient (or None) per input")
                    gi = tuple(r)
            return tuple(gi[i] for i in pos)

        node.register_prehook(pre)
        args = list(args)
        for k, i in enumerate(pos):
            args[i] = outs[k]
        return tuple(args)

    def _wrap_outputs(self, out, state):
        single = isinstance(out, Tensor)
        seq = (out,) if single else out
        if not isinstance(seq, (tuple, list)):
            return out
        pos = [i for i, o in enumerate(seq) if isinstance(o, Tensor) and o.requires_grad]
        if not pos:
            return out
        wrapped = _BackwardHookFn.apply(*[seq[i] for i in pos])
        node = wrapped[0].grad_fn
        n_out = len(seq)
        no_inputs = not state["in_pos"]

        def pre(grads):
            go = [None] * n_out
            for k, i in enumerate(pos):
                go[i] = grads[k]
            go = tuple(go)
            for fn in [*_GLOBAL["backward_pre"].values(), *self._backward_pre_hooks.values()]:
                r = fn(self, go)
                if r is not None:
                    go = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            state["grad_output"] = go
            if no_inputs:  # nothing upstream needs grad: PyTorch calls the hooks with grad_input None
                for fn in [*_GLOBAL["backward"].values(), *self._backward_hooks.values()]:
                    fn(self, (None,) * state["n_in"], go)
            return tuple(go[i] for i in pos)

        node.register_prehook(pre)
        res = list(seq)
        for k, i in enumerate(pos):
            res[i] = wrapped[k]
        if single:
            return res[0]
        return tuple(res) if isinstance(out, tuple) else res

    # --- hooks ---------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs)).

        >>> import workbench as wb
        >>> m = wb.nn.Identity()
        >>> h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        >>> m(wb.ones(1)); h.remove()
        tensor([2.])
        """
        handle = _add_hook(self._forward_pre_hooks, hook, prepend=prepend,
                           extra_dict=self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output; returns a removable handle.

        >>> import workbench as wb
        >>> m = wb.nn.Identity(); seen = []
        >>> h = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
        >>> _ = m(wb.ones(3)); seen
        [workbench.Size([3])]
        """
        handle = _add_hook(self._forward_hooks, hook, prepend=prepend,
                           extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input, called during backward.

        >>> import workbench as wb
        >>> m = wb.nn.Linear(2, 1); seen = []
        >>> h = m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].shape))
        >>> m(wb.ones(1, 2, requires_grad=True)).sum().backward(); seen
        [workbench.Size([1, 1])]
        """
        return _add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, called before the module's backward.

        >>> import workbench as wb
        >>> m = wb.nn.Linear(2, 1)
        >>> h = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0,))
        >>> m(wb.ones(1, 2)).sum().backward(); m.weight.grad
        tensor([[0., 0.]])
        """
        return _add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """Deprecated alias kept for old code: registers ``hook`` as a full backward hook."""
        return self.register_full_backward_hook(hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) called after this module's entries are saved."""
        return _add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) called after ``load_state_dict`` on this module."""
        return _add_hook(self._load_state_dict_post_hooks, hook)

    # --- registration --------------------------------------------------------------------------
    def _check_name(self, name, kind):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor that is state but not a parameter (e.g. BatchNorm's running_mean).

        >>> import workbench as wb
        >>> m = wb.nn.Module(); m.register_buffer("steps", wb.zeros(()))
        >>> list(m.state_dict())
        ['steps']
        """
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_tensor_typename(tensor)}' object to buffer '{name}' "
                            "(workbench Tensor or None required)")
        if isinstance(tensor, (Buffer, Parameter)):
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``.

        >>> import workbench as wb
        >>> m = wb.nn.Module(); m.register_parameter("w", wb.nn.Parameter(wb.ones(2)))
        >>> [n for n, _ in m.named_parameters()]
        ['w']
        """
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_tensor_typename(param)}' object to parameter '{name}' "
                            "(workbench.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly; wrap a detached copy: nn.Parameter(t.detach().clone())")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (or None) as a child under ``name``.

        >>> import workbench as wb
        >>> m = wb.nn.Module(); m.add_module("fc", wb.nn.Linear(1, 1))
        >>> [n for n, _ in m.named_children()]
        ['fc']
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module
        _changed()

    register_module = add_module

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            if name in d["_parameters"]:
                return d["_parameters"][name]
            if name in d["_buffers"]:
                return d["_buffers"][name]
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_tensor_typename(value)}' as parameter '{name}' "
                                "(workbench.nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, d, keep="_modules")
            d["_modules"][name] = value
            _changed()
            return
        mods = d.get("_modules")
        if mods is not None and name in mods:
            if value is not None:
                raise TypeError(f"cannot assign '{_tensor_typename(value)}' as child module '{name}' "
                                "(workbench.nn.Module or None expected)")
            mods[name] = None
            _changed()
            return
        if isinstance(value, Buffer):
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            _remove_from(name, d, keep="_buffers")
            self.register_buffer(name, value, value.persistent)
            return
        bufs = d.get("_buffers")
        if bufs is not None and name in bufs:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_tensor_typename(value)}' as buffer '{name}' "
                                "(workbench Tensor or None expected)")
            bufs[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d.get(key, ()):
                del d[key][name]
                if key == "_buffers":
                    d["_non_persistent_buffers_set"].discard(name)
                if key == "_modules":
                    _changed()
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _get_name(self):
        return type(self).__name__

    # --- traversal -----------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every descendant, depth first; the root is "".

        >>> import workbench as wb
        >>> [n for n, _ in wb.nn.Sequential(wb.nn.Linear(1, 1), wb.nn.ReLU()).named_modules()]
        ['', '0', '1']
        """
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if remove_duplicate:
                if id(m) in memo:
                    continue
                memo.add(id(m))
            yield name, m
            kids = [(name + ("." if name else "") + k, c) for k, c in m._modules.items() if c is not None]
            stack.extend(reversed(kids))

    def modules(self):
        """This module and every descendant.  >>> len(list(wb.nn.Sequential(wb.nn.ReLU()).modules()))  ->  2"""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """(name, module) for the direct children.  >>> list(wb.nn.Sequential(wb.nn.ReLU()).named_children())  ->  [('0', ReLU())]"""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """The direct children.  >>> list(wb.nn.Sequential(wb.nn.ReLU()).children())  ->  [ReLU()]"""
        for _, m in self.named_children():
            yield m

    def _named_members(self, attr, prefix, recurse, remove_duplicate):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mname, m in mods:
            for k, v in m.__dict__[attr].items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (mname + "." + k if mname else k), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) pairs; shared parameters are listed once.

        >>> import workbench as wb
        >>> [n for n, _ in wb.nn.Linear(2, 1).named_parameters()]
        ['weight', 'bias']
        """
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Every Parameter of this module and its descendants.

        >>> import workbench as wb
        >>> sum(p.numel() for p in wb.nn.Linear(2, 3).parameters())
        9
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, tensor) for every buffer.  >>> [n for n, _ in wb.nn.BatchNorm1d(2).named_buffers()]  ->  ['running_mean', 'running_var', 'num_batches_tracked']"""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer tensor.  >>> len(list(wb.nn.BatchNorm1d(2).buffers()))  ->  3"""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        """The descendant at a dotted path.  >>> wb.nn.Sequential(wb.nn.ReLU()).get_submodule("0")  ->  ReLU()"""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module):
        """Replace the descendant at a dotted path with ``module``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent, _, name = target.rpartition(".")
        mod = self.get_submodule(parent)
        if name not in mod._modules:
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        setattr(mod, name, module)

    def _get_leaf(self, target, kind, table):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod.__dict__[table]:
            raise AttributeError(f"`{name}` is not {kind}")
        return getattr(mod, name)

    def get_parameter(self, target):
        """The Parameter at a dotted path.  >>> wb.nn.Sequential(wb.nn.Linear(1, 1)).get_parameter("0.bias").shape  ->  workbench.Size([1])"""
        return self._get_leaf(target, "an nn.Parameter", "_parameters")

    def get_buffer(self, target):
        """The buffer at a dotted path.  >>> wb.nn.BatchNorm1d(2).get_buffer("running_mean")  ->  tensor([0., 0.])"""
        return self._get_leaf(target, "a buffer", "_buffers")

    # --- state dicts ---------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict from dotted name to (detached) parameter and persistent-buffer tensors.

        >>> import workbench as wb
        >>> list(wb.nn.Linear(2, 1).state_dict())
        ['weight', 'bias']
        """
        if args:  # the positional (destination, prefix, keep_vars) of old code
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:  # PyTorch's per-module format versions, which some loading code reads
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for h in list(self._state_dict_hooks.values()):
            r = h(self, destination, prefix, {})
            if r is not None:
                destination = r
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _state_entries(self):
        # (key, owner module, table, local name) for every entry state_dict would hold
        out = []
        for mname, m in self.named_modules(remove_duplicate=False):
            pre = mname + "." if mname else ""
            for k, p in m._parameters.items():
                if p is not None:
                    out.append((pre + k, m, "_parameters", k))
            for k, b in m._buffers.items():
                if b is not None and k not in m._non_persistent_buffers_set:
                    out.append((pre + k, m, "_buffers", k))
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from ``state_dict`` into this module's parameters and buffers.

        Everything is checked before anything is copied: a missing or unexpected key (with
        ``strict=True``) or a shape mismatch raises RuntimeError listing every problem, and the module
        is left as it was. Returns ``(missing_keys, unexpected_keys)``.

        >>> import workbench as wb
        >>> a, b = wb.nn.Linear(2, 1), wb.nn.Linear(2, 1)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        entries = self._state_entries()
        expected = {e[0] for e in entries}
        missing = []
        errors = []
        todo = []
        for key, m, table, name in entries:
            if key not in state_dict:
                if key not in missing:
                    missing.append(key)
                continue
            v = state_dict[key]
            cur = m.__dict__[table][name]
            if not isinstance(v, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected workbench Tensor from '
                              f"checkpoint but received {type(v).__name__}")
                continue
            if tuple(v.shape) != tuple(cur.shape) and not is_lazy(cur):  # a lazy entry takes the loaded shape
                errors.append(f"size mismatch for {key}: copying a param with shape {v.shape} from checkpoint, "
                              f"the shape in current model is {cur.shape}.")
                continue
            todo.append((m, table, name, cur, v))
        unexpected = [k for k in state_dict.keys() if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))
        with no_grad():
            for m, table, name, cur, v in todo:
                if assign:
                    new = v.detach().to(device=cur.device)
                    if table == "_parameters":
                        new = Parameter(new, requires_grad=cur.requires_grad)
                    m.__dict__[table][name] = new
                    continue
                if is_lazy(cur):
                    cur.materialize(tuple(v.shape))
                src = _backend.to_device(v._data, cur.device)
                cur._data[...] = src.astype(cur._data.dtype, copy=False)
                cur._vbox[0] += 1
        result = _IncompatibleKeys(missing, unexpected)
        for _, m in self.named_modules():
            for h in list(m._load_state_dict_post_hooks.values()):
                h(m, result)
        return result

    # --- modes, devices, dtypes ----------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode (Dropout drops, BatchNorm uses batch statistics) here and below; returns self.

        >>> import workbench as wb
        >>> wb.nn.Dropout().train(False).training
        False
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        """Evaluation mode, the same as ``train(False)``.  >>> wb.nn.Dropout().eval().training  ->  False"""
        return self.train(False)

    def compile(self, *args, **kwargs):
        """Compile this module's forward in place with ``workbench.compile(forward, *args, **kwargs)``.

        >>> import workbench as wb
        >>> m = wb.nn.Linear(2, 1); m.compile()
        >>> m(wb.ones(1, 2)).shape
        workbench.Size([1, 1])
        """
        from ..compiler import compile as _compile  # a real cycle: workbench.compiler imports nn.module (it traces modules)

        kwargs.setdefault("name", type(self).__name__)  # as workbench.compile(module) names it
        self.__dict__["forward"] = _compile(self.__dict__.get("forward", self.forward), *args, **kwargs)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (to freeze or unfreeze); returns self.

        >>> import workbench as wb
        >>> m = wb.nn.Linear(2, 2).requires_grad_(False)
        >>> m.weight.requires_grad
        False
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient (to None by default).

        >>> import workbench as wb
        >>> m = wb.nn.Linear(2, 1); m(wb.ones(1, 2)).sum().backward(); m.zero_grad()
        >>> m.weight.grad is None
        True
        """
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Call ``fn`` on every descendant (children first) and then on this module; returns self.

        >>> import workbench as wb
        >>> net = wb.nn.Sequential(wb.nn.Linear(2, 2))
        >>> _ = net.apply(lambda m: wb.nn.init.zeros_(m.bias) if isinstance(m, wb.nn.Linear) else None)
        """
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        """Convert every parameter (keeping the Parameter objects, as ``param.data = fn(param)``) and buffer."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        with no_grad():
            for name, p in self._parameters.items():
                if p is None:
                    continue
                new = fn(p)
                if new._data is not p._data:
                    p._data = new._data
                    p._acc = None
                if p._grad is not None:
                    g = fn(p._grad)
                    if g._data is not p._grad._data:
                        p._grad = Tensor._make(g._data)
            for name, b in self._buffers.items():
                if b is None:
                    continue
                new = fn(b)
                if is_lazy(b):  # stay a placeholder, now on the new device/dtype, for the first forward to fill
                    b._data = new._data
                    new = b
                self._buffers[name] = new
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers in place (floating point ones for a dtype); returns self.

        >>> import workbench as wb
        >>> wb.nn.Linear(2, 2).to(wb.float64).weight.dtype
        workbench.float64
        """
        dtype, device, _ = _parse_to(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            fp = t.is_floating_point() or t.is_complex()
            if dtype is not None and fp and not (t.is_complex() and not dtype.is_complex):
                return t.to(device=device, dtype=dtype)
            return t.to(device=device) if device is not None else t

        return self._apply(convert)

    def cuda(self, device=None):
        """Move every parameter and buffer to a CUDA device.  >>> wb.nn.Linear(1, 1).cuda().weight.device  ->  device(type='cuda', index=0)  # doctest: +SKIP"""
        return self._apply(lambda t: t.to("cuda" if device is None else
                                          (f"cuda:{device}" if isinstance(device, int) else device)))

    def cpu(self):
        """Move every parameter and buffer to the CPU.  >>> wb.nn.Linear(1, 1).cpu().weight.device  ->  device(type='cpu')"""
        return self._apply(lambda t: t.to("cpu"))

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type``: a dtype, or a legacy type (name), as ``Tensor.type``.

        >>> import workbench as wb
        >>> wb.nn.Linear(1, 1).type("torch.DoubleTensor").weight.dtype
        workbench.float64
        """
        dt, _ = _type_target(dst_type)
        if not (dt.is_floating_point or dt.is_complex):  # checked first, so that nothing is half-converted
            for name, p in self.named_parameters():
                if p.requires_grad:
                    raise RuntimeError("data set to a tensor that requires gradients must be floating point or "
                                       f"complex dtype: {type(self).__name__}.type({dst_type!r}) would make "
                                       f"parameter '{name}' {dt}; call requires_grad_(False) on the parameters "
                                       "first, or convert to a floating point type")
        return self._apply(lambda t: t.type(dst_type))

    def _cast_float(self, dt):
        return self._apply(lambda t: t.to(dtype=dt) if t.is_floating_point() else t)

    def float(self):
        """Floating point parameters and buffers to float32.  >>> wb.nn.Linear(1, 1).double().float()  ->  Linear(in_features=1, out_features=1, bias=True)"""
        return self._cast_float(float32)

    def double(self):
        """Floating point parameters and buffers to float64.  >>> wb.nn.Linear(1, 1).double().weight.dtype  ->  workbench.float64"""
        return self._cast_float(float64)

    def half(self):
        """Floating point parameters and buffers to float16.  >>> wb.nn.Linear(1, 1).half().weight.dtype  ->  workbench.float16"""
        return self._cast_float(float16)

    def bfloat16(self):
        """Floating point parameters and buffers to bfloat16."""
        return self._cast_float(bfloat16)

    def share_memory(self):
        """Move parameters and buffers to shared memory (for multiprocessing); returns self."""
        return self._apply(lambda t: t.share_memory_())

    # --- repr ----------------------------------------------------------------------------------
    def extra_repr(self):
        """The layer's own settings shown in its repr; override in subclasses.  >>> wb.nn.Linear(2, 3)  ->  Linear(in_features=2, out_features=3, bias=True)"""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:  # modules pickled by older versions (of PyTorch too) may lack some
            self.__dict__.setdefault(name, OrderedDict())


def _remove_from(name, d, keep=None):
    """Forget ``name`` wherever the module holds it, before it is registered anew in ``keep``.

    ``keep`` is left alone so that replacing ``seq[1]`` or a parameter keeps its place in the order
    (``named_modules``, ``state_dict``, a Sequential's forward), as in PyTorch.
    """
    for key in ("_parameters", "_buffers", "_modules"):
        if key != keep and name in d.get(key, ()):
            del d[key][name]
            if key == "_modules":
                _changed()
    d.pop(name, None)
    d["_non_persistent_buffers_set"].discard(name)
