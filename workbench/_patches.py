"""Attributes replaced for a while and put back: how the compiler's tracer and the profiler hook the engine.

Both watch the same seams (``Function.apply``, the engine's ``_call_backward``/``_accumulate``,
``Module.__call__``...) by swapping the attribute for a wrapper while they are active; ``Patches``
keeps what it replaced and restores it in reverse order, so nested or repeated swaps unwind exactly.
"""


class Patches:
    """``swap(owner, name, new)`` now, ``restore()`` later.

    >>> import types
    >>> m = types.SimpleNamespace(f=1)
    >>> p = Patches(); p.swap(m, "f", 2); m.f
    2
    >>> p.restore(); m.f
    1
    """

    def __init__(self):
        self._saved = []

    def swap(self, owner, name, new):
        # a class's own attribute as stored (a staticmethod/classmethod/property object, not its binding)
        old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        self._saved.append((owner, name, old))
        setattr(owner, name, new)

    def restore(self):
        for owner, name, old in reversed(self._saved):
            setattr(owner, name, old)
        self._saved.clear()


def subclasses(cls):
    """``cls`` and every class below it, defined so far.

    >>> class A: pass
    >>> class B(A): pass
    >>> [c.__name__ for c in subclasses(A)]
    ['A', 'B']
    """
    out, stack = [], [cls]
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(c.__subclasses__())
    return out
