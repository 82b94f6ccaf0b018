"""softmax, log_softmax and softmin on integer tensors: PyTorch's NotImplementedError naming its kernel and
the dtype (the message once had a broken str.replace, so it raised TypeError instead)."""
import pytest
import torch

import workbench as wb


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_input_raises_what_pytorch_raises(fn, dtype):
    if fn == "softmin" and dtype == "bool":
        pytest.skip("PyTorch's softmin negates first, and refuses -bool before any kernel")
    def call(lib):
        getattr(lib.nn.functional, fn)(lib.tensor([1, 0, 1]).to(getattr(lib, dtype)), 0)

    with pytest.raises(NotImplementedError) as theirs:
        call(torch)
    with pytest.raises(NotImplementedError) as ours:
        call(wb)
    assert str(ours.value).startswith(str(theirs.value)), (str(ours.value), str(theirs.value))


def test_dtype_argument_still_converts_integer_input():
    y = wb.nn.functional.softmax(wb.tensor([1, 2]), 0, dtype=wb.float32)
    want = torch.nn.functional.softmax(torch.tensor([1, 2]), 0, dtype=torch.float32)
    assert y.tolist() == pytest.approx(want.tolist())
