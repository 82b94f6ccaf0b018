"""Run one snippet with workbench and with PyTorch: both must raise, with the same exception type."""
import pytest


def assert_same_error(fn):
    torch = pytest.importorskip("torch")
    import workbench as wb

    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(wb)
    want = theirs.type
    # torch.linalg.LinAlgError and friends are RuntimeError subclasses: compare the builtin base
    for base in (IndexError, ValueError, TypeError, RuntimeError):
        if issubclass(want, base):
            want = base
            break
    assert issubclass(ours.type, want), f"workbench raised {ours.type.__name__}: {ours.value}; PyTorch raised " \
                                        f"{theirs.type.__name__}: {theirs.value}"
    assert str(ours.value), "the error message must say what went wrong"
