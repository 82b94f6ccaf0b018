"""Every public op has an op spec, or an entry in workbench/testing/spec_exemptions.toml with its reason.

Public ops: the Tensor method registry, workbench's top-level functions, nn.functional, linalg, fft and
special (workbench/testing/spec_coverage.py). In-place forms are covered through their out-of-place
op's spec, replayed in place here.
"""
import numpy as np
import pytest

import workbench as wb
from workbench.testing import spec_coverage

INPLACE = spec_coverage.inplace_calls()
# in-place ops on the metadata (shape, strides) rather than the values: the result takes x's place whole
RESHAPING = {"as_strided_", "squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_", "t_"}


def test_every_public_op_has_a_spec_or_a_reason():
    missing, stale, unknown = spec_coverage.report()
    assert not missing, ("public ops with neither an op spec (workbench/testing/specs/) nor an entry in "
                         f"spec_exemptions.toml: {missing}")
    assert not stale, f"spec_exemptions.toml lists ops that a spec now covers (delete their lines): {stale}"
    assert not unknown, f"spec_exemptions.toml lists names that are not public ops: {unknown}"


def test_exemption_reasons_say_why():
    exempt = spec_coverage.exemptions()
    assert exempt
    assert all(len(why.split()) >= 4 for why in exempt.values())


def test_the_recorder_sees_only_direct_calls():
    # cross_entropy calls log_softmax inside: only the outermost public call is the spec's
    log = {}
    x = wb.randn(3, 4)
    before = wb.nn.functional.cross_entropy, vars(wb.Tensor)["exp"], vars(wb.Tensor)["T"]
    with spec_coverage._recorders(log):
        wb.nn.functional.cross_entropy(x, wb.tensor([0, 1, 2]))
    ops = spec_coverage.public_ops()
    assert ops["nn.functional.cross_entropy"] in log
    assert ops["nn.functional.log_softmax"] not in log
    assert (wb.nn.functional.cross_entropy, vars(wb.Tensor)["exp"], vars(wb.Tensor)["T"]) == before  # restored


def _host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_form_matches_its_op(name):
    # x.op_(*args) writes op(x, *args) into x and returns x, or raises RuntimeError when the result's shape
    # or dtype cannot go there (PyTorch's rule), leaving x as it was
    base, args, kwargs = INPLACE[name]
    label, short = name.rsplit(".", 1)
    ns = spec_coverage.NAMESPACES[label]
    x = args[0].detach().clone()
    want = getattr(spec_coverage.NAMESPACES[label], base.rsplit(".", 1)[1])(x, *args[1:], **kwargs)
    want = want[0] if isinstance(want, tuple) else want
    before = _host(x).copy()
    fits = (tuple(want.shape) == tuple(x.shape) or short in RESHAPING) and wb.can_cast(want.dtype, x.dtype)
    fn = getattr(ns, short)
    if not fits:
        with pytest.raises(RuntimeError):
            fn(x, *args[1:], **kwargs)
        np.testing.assert_array_equal(_host(x), before)
        return
    got = fn(x, *args[1:], **kwargs)
    if not short.startswith("__i"):
        assert got is x
    assert tuple(x.shape) == tuple(want.shape) and x.stride() == want.stride()
    np.testing.assert_allclose(_host(x), _host(want.to(x.dtype)), rtol=1e-12, atol=1e-12, equal_nan=True)
