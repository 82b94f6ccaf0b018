"""In-place ops where PyTorch refuses a program, or where workbench gave other values: each case run on both
(tests/autograd/test_view_inplace_fuzz.py draws random programs of the same kinds)."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")


def _run(lib, program):
    x = lib.tensor(np.arange(1.0, 13.0).reshape(4, 3) / 4, requires_grad=True)
    y = x * 1.5
    env = {"lib": lib, "x": x, "y": y}
    try:
        exec(program, env)
        out = env.get("out", y)
        (out * lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))).sum().backward()
    except RuntimeError as e:
        return str(e)
    return x.grad.numpy().copy()


def _same(program, words=None):
    t, w = _run(torch, program), _run(wb, program)
    if isinstance(t, str):
        assert isinstance(w, str), f"{program!r}: PyTorch raised {t!r}, workbench returned {w}"
        if words:
            assert words in t and words in w, (t, w)
    else:
        assert not isinstance(w, str), f"{program!r}: workbench raised {w!r}"
        np.testing.assert_allclose(w, t, rtol=1e-12)


MODIFIED = "modified by an inplace operation"


@pytest.mark.parametrize("program", ["y.exp_(); y.exp_()", "y.sigmoid_(); y.add_(1)", "y.relu_(); y.mul_(2)",
                                     "v = y[0:2]; v.exp_(); y.mul_(2)", "y.exp_()", "v = y[1:]; v.tanh_()"])
def test_an_in_place_ops_saved_result_is_the_tensor_it_wrote(program):
    # exp_ saves its result: y itself, at its version after the op, so a later in-place op on y fails backward
    _same(program, MODIFIED if ";" in program and "mul_(2)" in program or "add_" in program else None)


@pytest.mark.parametrize("program", ["y.mul_(y)", "y.div_(y)", "y.addcmul_(y, y, value=0.1)", "y.add_(y)",
                                     "y.mul_(y * 1)"])
def test_an_operand_that_is_the_tensor_written_is_saved_as_it(program):
    _same(program, MODIFIED if program in ("y.mul_(y)", "y.div_(y)") else None)


def test_in_place_fill_and_zero_replace_inf_and_nan_and_are_named_as_pytorch():
    for lib in (torch, wb):
        x = lib.tensor([1.0, float("inf"), float("nan")], requires_grad=True)
        y = x * 1.0
        y.fill_(2.0)
        assert y.tolist() == [2.0, 2.0, 2.0] and type(y.grad_fn).__name__ == "FillBackward2"
        z = x * 1.0
        z[1:].zero_()
        assert z.tolist() == [1.0, 0.0, 0.0]
        w = x * 1.0
        w.zero_()
        assert type(w.grad_fn).__name__ == "ZeroBackward0"
        (y.sum() + z.sum() + w.sum()).backward()
        assert x.grad.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("program", [
    "a = y.split(2)[0]; a.mul_(2)", "a = y.chunk(2)[1]; a.add_(1)", "a = y.unbind(1)[2]; a.zero_()",
    "a = y.split([1, 3])[1]; a.add_(1)", "a = y.split(2)[0]; b = a.view(-1); b.mul_(2)",
])
def test_in_place_on_a_view_that_split_or_unbind_returned_is_pytorchs_error(program):
    _same(program, "is a view and is being modified inplace")
    assert _run(wb, program) == _run(torch, program)  # the same words: "Output 1 of SplitWithSizes ..."


@pytest.mark.parametrize("program", [
    "a = y.split(2)[0]\nwith lib.no_grad(): a.mul_(2)", "a = y.split(2)[0]; a.detach().mul_(2)",
    "a = y.tensor_split(2)[1]; a.add_(1)", "a = lib.ones(4, 3).split(2)[0]; a.mul_(2)",
])
def test_what_pytorch_allows_on_those_views(program):
    _same(program)


@pytest.mark.parametrize("program", [
    "a = y.split(2)[0]; y.mul_(2); out = a * 1",
    "a = y.unbind()[1]; y[0].exp_(); out = a + 1",
    "a = y.chunk(2)[0]\nwith lib.no_grad(): y.mul_(2)\nout = a * 1",
])
def test_a_split_view_whose_base_changed_in_place_cannot_be_differentiated(program):
    # PyTorch raises where the view is next used; workbench in the backward through it, with PyTorch's words
    _same(program, "its base or another view of its base has been modified inplace")


def test_a_partly_overlapping_operand_is_pytorchs_error_and_nothing_is_written():
    for lib in (torch, wb):
        x = lib.arange(12.0).reshape(3, 4)
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
            x[1:].add_(x[:2])
        assert x.equal(lib.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("program", ["out = y[:, 1].expand(3, 4).diagonal()",
                                     "out = y[:, 2].expand(2, 4).unfold(1, 2, 1)",
                                     "out = y[0].expand(4, 3).diagonal(1)"])
def test_diagonal_and_unfold_of_an_expanded_tensor_differentiate_by_index(program):
    # the gradient went through memory: each of the expanded elements took the whole sum (3x too large)
    _same(program)
