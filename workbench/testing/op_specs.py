"""Op specs: sample inputs and a NumPy reference per op, run by one generic test suite.

A family registers its ops with ``spec(...)`` in ``workbench/testing/specs/<family>.py``;
``tests/ops/test_op_specs.py`` runs every spec on every backend (numpy, the fake cupy, real CuPy on a
GPU): forward against the reference, float64 gradcheck, gradgradcheck, non-contiguous inputs (forward values,
gradients against the contiguous ones, gradcheck), and (where the op is part of PyTorch's contract) against
PyTorch CPU.

A check that does not apply is switched off with the reason why (``no_ref``, ``no_grad``,
``no_gradgrad``, ``no_torch`` on the spec, ``values_only`` on a sample): the suite skips with that
reason, and a spec that leaves a check out without one is refused when it is registered.

Example::

    spec("exp", lambda x: wb.exp(x), np.exp, samples=[Sample(shape((3, 4)))])
"""
import dataclasses
import importlib
import pkgutil
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import specs

REGISTRY = {}


@dataclasses.dataclass
class Sample:
    """One call: ``args`` are arrays (become tensors), ``arg_fns`` or plain values; kwargs passed as is.

    Arrays in ``args`` are made into float tensors requiring grad when their dtype is floating (for
    gradcheck); list positions to keep constant in ``nondiff``, or keep them all constant with
    ``values_only="why"`` (the sample checks values only: the gradient checks skip it with that reason).
    """

    args: Sequence[Any]
    kwargs: dict = dataclasses.field(default_factory=dict)
    nondiff: Sequence[int] = ()
    values_only: str = ""
    name: str = ""

    @property
    def grad(self):
        return not self.values_only


@dataclasses.dataclass
class OpSpec:
    name: str
    op: Callable  # (*tensors_and_values, **kwargs) -> Tensor or tuple of Tensors
    ref: Optional[Callable]  # (*numpy_arrays_and_values, **kwargs) -> ndarray or tuple; None: no NumPy reference
    samples: Sequence[Sample]
    torch_op: Optional[Callable] = None  # (*torch_tensors_and_values, **kwargs), when PyTorch is the contract
    dtypes: Sequence[str] = ("float32", "float64")
    no_ref: str = ""  # why there is no NumPy reference (required when ref is None)
    no_grad: str = ""  # why the op has no gradient to check: it skips gradcheck and gradgradcheck
    no_gradgrad: str = ""  # why the second derivative is not checked
    no_torch: str = ""  # why PyTorch is not compared (required when torch_op is None)
    rtol: float = 1e-5
    atol: float = 1e-6
    family: str = ""
    output_index: Optional[int] = None  # for ops returning tuples: which output to differentiate

    @property
    def gradcheck(self):
        return not self.no_grad

    @property
    def gradgradcheck(self):
        return not (self.no_grad or self.no_gradgrad)

    def skip_reason(self, check, sample):
        """Why ``check`` ("forward", "noncontiguous", "noncontiguous_backward", "noncontiguous_gradcheck",
        "gradcheck", "gradgradcheck", "torch") does not run on ``sample`` (an empty string when it runs)."""
        if check == "forward":
            return self.no_ref
        if check == "torch":
            return self.no_torch
        if check in ("gradcheck", "gradgradcheck", "noncontiguous_backward", "noncontiguous_gradcheck"):
            why = self.no_grad or sample.values_only
            return why or (self.no_gradgrad if check == "gradgradcheck" else "")
        if check == "noncontiguous":
            return ""
        raise ValueError(f"unknown op-spec check {check!r}")


def _check_reasons(s):
    for field, attr in (("no_ref", "ref"), ("no_torch", "torch_op")):
        why, missing = getattr(s, field), getattr(s, attr) is None
        if missing and not why:
            raise ValueError(f"op spec {s.name!r} has no {attr}: say why in {field}=")
        if why and not missing:
            raise ValueError(f"op spec {s.name!r} gives both {attr} and {field}=: drop one")
    for field in ("no_ref", "no_grad", "no_gradgrad", "no_torch"):
        if not isinstance(getattr(s, field), str):
            raise TypeError(f"op spec {s.name!r}: {field}= takes the reason (a str)")
    for k, sample in enumerate(s.samples):
        if not isinstance(sample.values_only, str):
            raise TypeError(f"op spec {s.name!r} sample {k}: values_only= takes the reason (a str)")


def spec(name, op, ref, samples, **kw):
    """Register the spec of one op (see the module docstring); returns the OpSpec."""
    if name in REGISTRY:
        raise ValueError(f"op spec {name!r} registered twice")
    s = OpSpec(name, op, ref, samples, **kw)
    _check_reasons(s)
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
    for m in pkgutil.iter_modules(specs.__path__):
        importlib.import_module(f"{specs.__name__}.{m.name}")
    return REGISTRY
