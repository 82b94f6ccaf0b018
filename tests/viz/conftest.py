import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

SCHEMA = Path(__file__).resolve().parents[2] / "workbench" / "viz" / "tape.v1.schema.json"


@pytest.fixture(scope="session")
def validate():
    """validate(snapshot_or_dict): JSON-Schema check plus the rules PROTOCOL.md adds (ids, order, strict JSON)."""
    jsonschema = pytest.importorskip("jsonschema")
    v = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))

    def check(snap):
        d = snap.to_dict() if hasattr(snap, "to_dict") else snap
        d = json.loads(json.dumps(d, allow_nan=False))  # strict JSON round trip
        v.validate(d)
        ids = [n["id"] for n in d["nodes"]]
        assert len(ids) == len(set(ids))
        pos = {i: k for k, i in enumerate(ids)}
        for e in d["edges"]:
            assert pos[e["source"]] < pos[e["target"]], f"nodes not in topological order at {e}"
        for r in d["roots"]:
            assert r in pos
        for k, st in enumerate((d["trace"] or {}).get("steps", [])):
            assert st["index"] == k and st["node"] in pos
            for gi in st["grad_inputs"]:
                assert gi["target"] in pos
            for leaf in st["leaves"]:
                assert leaf["node"] in pos
        return d

    return check


@pytest.fixture(autouse=True)
def _no_leftover_hooks():
    """A failed test must not leave a monitor or recorder listening for the next one."""
    from workbench.autograd import graph

    yield
    graph.BACKWARD_HOOKS.clear()
    graph.LISTENERS.clear()
    graph.CUTS[0] = None
    graph.TRACE[0] = 1
