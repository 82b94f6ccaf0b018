"""Op specs: sample inputs and a NumPy reference per op, run by one generic test suite.

A family registers its ops with ``spec(...)`` in ``workbench/testing/specs/<family>.py``;
``tests/ops/test_op_specs.py`` runs every spec on every backend: forward against the reference,
float64 gradcheck, gradgradcheck where supported, non-contiguous inputs, and (where the op is part
of PyTorch's contract) against PyTorch CPU.

Example::

    spec("exp", lambda x: wb.exp(x), np.exp, samples=[Sample(shape((3, 4)))])
"""
import dataclasses
import importlib
import pkgutil
from typing import Any, Callable, Optional, Sequence

import numpy as np

REGISTRY = {}


@dataclasses.dataclass
class Sample:
    """One call: ``args`` are arrays (become tensors), ``arg_fns`` or plain values; kwargs passed as is.

    Arrays in ``args`` are made into float tensors requiring grad when their dtype is floating (for
    gradcheck); set ``grad=False`` to keep all inputs constant, or list positions in ``nondiff``.
    """

    args: Sequence[Any]
    kwargs: dict = dataclasses.field(default_factory=dict)
    nondiff: Sequence[int] = ()
    grad: bool = True
    name: str = ""


@dataclasses.dataclass
class OpSpec:
    name: str
    op: Callable  # (*tensors_and_values, **kwargs) -> Tensor or tuple of Tensors
    ref: Optional[Callable]  # (*numpy_arrays_and_values, **kwargs) -> ndarray or tuple; None: no NumPy reference
    samples: Sequence[Sample]
    torch_op: Optional[Callable] = None  # (*torch_tensors_and_values, **kwargs), when PyTorch is the contract
    dtypes: Sequence[str] = ("float32", "float64")
    gradcheck: bool = True
    gradgradcheck: bool = True
    rtol: float = 1e-5
    atol: float = 1e-6
    family: str = ""
    output_index: Optional[int] = None  # for ops returning tuples: which output to differentiate


def spec(name, op, ref, samples, **kw):
    if name in REGISTRY:
        raise ValueError(f"op spec {name!r} registered twice")
    s = OpSpec(name, op, ref, samples, **kw)
    REGISTRY[name] = s
    return s


def rng(seed=0):
    return np.random.default_rng(seed)


def arr(*shape, low=-2.0, high=2.0, seed=0, positive=False):
    """A float64 sample array (away from zero when positive=True)."""
    a = rng(seed).uniform(low, high, size=shape)
    if positive:
        a = np.abs(a) + 0.5
    return a


def load_all():
    """Import every module of workbench.testing.specs, filling REGISTRY."""
    from . import specs

    for m in pkgutil.iter_modules(specs.__path__):
        importlib.import_module(f"{specs.__name__}.{m.name}")
    return REGISTRY
