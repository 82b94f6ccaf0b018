"""The API sweep against PyTorch (the oracle): every public name implemented with PyTorch's signature, or
exempted with a reason in workbench/testing/api_exemptions.toml. See workbench/testing/api_surface.py."""
import pytest

torch = pytest.importorskip("torch")

from workbench.testing import api_surface as A  # noqa: E402


@pytest.fixture(scope="module")
def swept():
    results = A.sweep()
    missing_ok, differs_ok = A.load_exemptions()
    return results, A.problems(results, missing_ok, differs_ok)


def _listing(items):
    return "\n  " + "\n  ".join(items[:60]) + ("\n  ..." if len(items) > 60 else "")


def test_every_public_name_is_implemented_or_exempted(swept):
    _, (new_missing, _, _) = swept
    assert not new_missing, (
        f"{len(new_missing)} PyTorch names missing from workbench and not in api_exemptions.toml "
        f"(implement them, or add them to a [[missing]] group with the reason):{_listing(new_missing)}")


def test_signatures_match_pytorch_or_are_exempted(swept):
    _, (_, new_diffs, _) = swept
    assert not new_diffs, (
        f"{len(new_diffs)} signature differences from PyTorch not in api_exemptions.toml "
        f"(fix the signature, or add the line to a [[signature]] group with the reason):{_listing(new_diffs)}")


def test_no_stale_exemptions(swept):
    _, (_, _, stale) = swept
    assert not stale, (f"{len(stale)} exemptions no longer apply (the name landed or the signature now matches "
                       f"PyTorch's): delete them from api_exemptions.toml:{_listing(stale)}")


def test_sweep_covers_the_namespaces(swept):
    results, _ = swept
    for ns, _ in A.NAMESPACES:
        assert sum(n.startswith(ns + ".") for n in results) > 3, ns
    assert results["torch.zeros_like"].status == "ok" and results["torch.zeros_like"].checked_signature
    assert results["torch.Tensor.sum"].checked_signature


def test_exemption_reasons_are_given():
    missing_ok, differs_ok = A.load_exemptions()
    assert all(reason.strip() for reason in {**missing_ok, **differs_ok}.values())


# --- the comparison itself must catch what it claims to ------------------------------------------------

def P(name, kind="pos", default=A._MISSING):
    return A.Param(name, kind, default)


def test_compare_flags_positional_renames_defaults_and_aliases():
    torch_sig = [P("input"), P("dim", default=None), P("keepdim", default=False), P("dtype", "kw", None)]
    assert A.compare(torch_sig, [P("input"), P("dim", default=None), P("keepdim", default=False),
                                 P("dtype", "kw", None)], True, {"axis", "keepdims"}) == []
    diffs = A.compare(torch_sig, [P("input"), P("axis", default=None), P("keepdim", default=True)], True, set())
    assert "positional argument 1 is 'axis', PyTorch's is 'dim'" in diffs
    assert "no parameter 'dim'" in diffs and "no parameter 'dtype'" in diffs
    assert "'keepdim' defaults to True, PyTorch's to False" in diffs
    assert "no NumPy alias 'keepdims' for 'keepdim'" in diffs
    assert "extra required parameter 'scale'" in A.compare([P("input")], [P("input"), P("scale", "kw")], False, set())


def test_pytorch_signatures_come_from_its_parser_and_docstrings():
    overloads, parsed = A.torch_signatures("torch.sum", torch.sum, False, torch)
    assert parsed and any([p.name for p in o] == ["input", "dim", "keepdim", "dtype", "out"] for o in overloads)
    assert all(not any(p.name == "dim" and p.kind == "kw" for p in o) for o in overloads)
    (narrow,), _ = A.torch_signatures("torch.Tensor.narrow_copy", torch.Tensor.narrow_copy, True, torch)
    assert [p.name for p in narrow] == ["dimension", "start", "length"]  # its docstring (one overload)
    (relu,), parsed = A.torch_signatures("torch.nn.functional.relu", torch.nn.functional.relu, False, torch)
    assert not parsed and [(p.name, p.default) for p in relu] == [("input", A._MISSING), ("inplace", False)]
