"""``torch.nn.modules.module``: ``Module``, and the hooks every module's call runs (global hooks).

Global hooks run before a module's own, in the order registered, as PyTorch's: ``register_module_forward_pre_hook``
(``hook(module, args)``), ``register_module_forward_hook`` (``hook(module, args, output)``),
``register_module_full_backward_pre_hook`` (``hook(module, grad_output)``) and
``register_module_full_backward_hook`` (``hook(module, grad_input, grad_output)``). A compiled call runs eagerly
while any is registered, so the hooks see every module.

>>> import workbench as wb
>>> from workbench.nn.modules.module import register_module_forward_hook
>>> seen = []
>>> h = register_module_forward_hook(lambda m, args, out: seen.append(type(m).__name__))
>>> _ = wb.nn.Sequential(wb.nn.Linear(2, 2), wb.nn.ReLU())(wb.ones(1, 2)); h.remove()
>>> seen
['Linear', 'ReLU', 'Sequential']
"""
from ...utils.hooks import add_hook as _add_hook
from ..module import _GLOBAL, _GLOBAL_ON, Module  # noqa: F401

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]


def _register(kind, hook, extra=None):
    handle = _add_hook(_GLOBAL[kind], hook, extra_dict=extra)
    _GLOBAL_ON[0] = True
    return handle


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward; returns a removable handle."""
    return _register("forward_pre", hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) -> None or a new output (``with_kwargs``: hook(module, args, kwargs, output)),
    after every module's forward (``always_call``: also when it raised, with output None)."""
    handle = _register("forward", hook, [_GLOBAL["forward_with_kwargs"], _GLOBAL["forward_always_called"]])
    if with_kwargs:
        _GLOBAL["forward_with_kwargs"][handle.id] = True
    if always_call:
        _GLOBAL["forward_always_called"][handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) -> None or new grad_output, as each module's output gradient arrives."""
    return _register("backward_pre", hook)


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) -> None or new grad_input, as each module's input gradient is
    computed."""
    return _register("backward", hook)
