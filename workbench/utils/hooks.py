"""The one hook-handle registry (as ``torch.utils.hooks``): every ``register_*hook`` of autograd, nn and
optim, and the tape listeners, store their callable in a dict under a ``RemovableHandle``'s id.

Imports nothing of workbench, so the autograd core can use it.
"""
import collections
import weakref

__all__ = ["RemovableHandle", "add_hook", "unserializable_hook"]


class RemovableHandle:
    """A handle that removes a hook: ``remove()``, or leave a ``with`` block (PyTorch's class).

    ``hooks_dict`` holds the hook under ``id``; ``extra_dict`` (a dict or a list of dicts) holds what
    goes with it (``with_kwargs`` flags...) under the same id, removed together with it.

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> with x.register_hook(lambda g: g * 10):
    ...     (x * 1).sum().backward()
    >>> (x * 1).sum().backward(); x.grad
    tensor([11., 11.])
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        """Detach the hook (a second call does nothing)."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra_dict = ref()
            if extra_dict is not None and self.id in extra_dict:
                del extra_dict[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        # a handle unpickled without its dict gets a dead reference, as in PyTorch
        self.hooks_dict_ref = weakref.ref(collections.OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def add_hook(hooks_dict, hook, *, prepend=False, extra_dict=None):
    """Store ``hook`` in ``hooks_dict`` (an OrderedDict, first when ``prepend``); returns its handle.

    >>> import collections
    >>> hooks = collections.OrderedDict()
    >>> h = add_hook(hooks, print); list(hooks.values()) == [print]
    True
    >>> h.remove(); len(hooks)
    0
    """
    handle = RemovableHandle(hooks_dict, extra_dict=extra_dict)
    hooks_dict[handle.id] = hook
    if prepend:
        hooks_dict.move_to_end(handle.id, last=False)
    return handle


def unserializable_hook(f):
    """Mark ``f`` as a hook that is not saved with its tensor (PyTorch's decorator; returns ``f``).

    >>> import workbench as wb
    >>> @wb.utils.hooks.unserializable_hook
    ... def hook(grad):
    ...     return grad
    >>> hook.__torch_unserializable__
    True
    """
    f.__torch_unserializable__ = True
    return f
