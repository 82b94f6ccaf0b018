"""Small argument helpers shared by the layer modules (PyTorch's _single/_pair/_triple)."""
import collections.abc
from itertools import repeat


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)


def _reverse_repeat_tuple(t, n):
    """(1, 2) -> (2, 2, 1, 1) for n=2: the F.pad order of a conv's padding."""
    return tuple(x for x in reversed(t) for _ in range(n))
