"""The corpus: complete PyTorch programs (tests/programs/*.py), each run with ``import torch`` answered by
workbench (tests/programs/_shim/sitecustomize.py), in its own process, and checked for its learning result (each program asserts its own loss
drop or accuracy, as its author would, and prints one summary line)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "programs"
PROGRAMS = sorted(HERE.glob("*.py"))


def test_the_corpus_is_big_enough():
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_program_runs_under_workbench(program, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONPATH=os.pathsep.join([str(HERE / "_shim"), str(Path(__file__).parents[1])]))
    proc = subprocess.run([sys.executable, str(program)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{program.name} failed under workbench:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
