"""No PyTorch name that workbench had disappears: workbench/testing/api_names.tsv is the committed list
(see workbench/testing/api_snapshot.py; the documentation's compatibility page shows the same sweep)."""
import pytest

from workbench.testing import api_snapshot, api_surface


def test_the_list_covers_every_reported_namespace():
    committed = api_snapshot.load()
    assert set(committed.values()) <= {"ok", "differs", "missing"}
    for ns, _ in api_surface.NAMESPACES + api_surface.REPORTED:
        assert sum(n.startswith(ns + ".") and committed[n] in api_snapshot.PRESENT for n in committed) > 3, ns


def test_no_name_that_was_there_disappeared():
    pytest.importorskip("torch")
    gone = api_snapshot.lost(api_snapshot.live(), api_snapshot.load())
    assert not gone, (
        f"{len(gone)} PyTorch names workbench had are missing now: {gone[:40]}. Restore them; if the removal "
        "is intended, rewrite the list with `python -m workbench.testing.api_snapshot --update` (and give the "
        "names a reason in workbench/testing/api_exemptions.toml, which tests/test_api_surface.py asks for).")


def test_lost_reports_only_names_that_went_missing():
    R = api_surface.Result
    committed = {"torch.a": "ok", "torch.b": "differs", "torch.c": "missing", "torch.d": "ok", "torch.e": "ok"}
    now = {"torch.a": R("torch.a", "missing"), "torch.b": R("torch.b", "missing"), "torch.c": R("torch.c", "ok"),
           "torch.d": R("torch.d", "differs")}  # torch.e: PyTorch itself no longer has it
    assert api_snapshot.lost(now, committed) == ["torch.a", "torch.b"]


def test_write_then_load_round_trips(tmp_path):
    R = api_surface.Result
    results = {"torch.x": R("torch.x", "ok"), "torch.nn.Y": R("torch.nn.Y", "missing")}
    api_snapshot.write(results, tmp_path / "names.tsv")
    assert api_snapshot.load(tmp_path / "names.tsv") == {"torch.nn.Y": "missing", "torch.x": "ok"}
