"""The README works as written: every command it shows is run by a test (except
`make test`, which is what runs this, and the targets that need a GPU). Its Python blocks run, in order, and
its links are checked in tests/test_doc_pages.py, with every other page's.

`make lab` itself is started, opened in Chromium and stopped by tests/browser/test_make_lab.py.
"""
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE_CMD = re.compile(r"`((?:[A-Z_]+=\S+ )*(?:make|pip|python -m pip|python -m workbench\.[\w.]+) [^`]+)`")

# commands the README shows that no test here runs, and why
NOT_RUN = {
    "make test": "it is the command running this test",
    "make test-fast": "the Python part of make test, less its browser and slow tests: make test runs them all",
    "make test-gpu": "needs an NVIDIA GPU",
    "make bench-gpu": "needs an NVIDIA GPU",
    "make gpu-check": "needs an NVIDIA GPU and a GPU image",
    'pip install -e ".[cuda]"': "installs CuPy for a GPU",
    'pip install -e ".[distributed]"': "mpi4py and the mpich wheel: [dev] holds them, and "
                                       "tests/distributed/ runs on them",
    "pip install tensorboard": "an optional dependency; make test installs it with [dev] and tests the writer",
    "pip install onnx": "an optional dependency; make test installs it with [dev] and tests the export",
}
RUN_BY = {  # command -> the test that runs it
    "make lab": "tests/browser/test_make_lab.py",
    "make lab PORT=8899": "tests/browser/test_make_lab.py",
    "JUPYTER_PORT=8899 make lab": "tests/browser/test_make_lab.py",
    "make lab NO_BROWSER=1": "tests/browser/test_make_lab.py",
    "make bench": "test_make_bench_runs",
    "pip install -e .": "test_pip_install_editable",
    "make docs": "tests/test_site.py (the same sphinx command, into a temporary folder)",
    "make wheel": "tests/browser/test_wheel_install.py",
    "pip install dist/workbench-0.1.0-py3-none-any.whl": "tests/browser/test_wheel_install.py (the wheel make wheel built)",
    "pip install jupyterlab": "tests/browser/test_wheel_install.py (next to the wheel, in a virtualenv without Node)",
    "python -m workbench.distributed.run --nproc-per-node 2 examples/ddp_train.py --epochs 2":
        "tests/distributed/test_launch.py (the same launcher and script, one epoch)",
}


def python_blocks():
    return [code for lang, code in FENCE.findall(README) if lang == "python"]


def commands():
    """Every shell command the README shows: lines of un-tagged/shell blocks and inline `make ...` spans."""
    cmds = []
    for lang, code in FENCE.findall(README):
        if lang in ("", "sh", "bash", "shell", "console"):
            for line in code.splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    cmds.append(line)
    flat = re.sub(r"\s*\n\s*", " ", README)  # an inline span may wrap over a line break
    cmds += [m.strip() for m in INLINE_CMD.findall(flat)]
    return cmds


def test_readme_shows_python_and_commands():
    assert len(python_blocks()) >= 2
    assert {"make lab", "make test"} <= set(commands())


def test_every_command_is_run_or_exempt():
    unchecked = [c for c in commands() if c not in NOT_RUN and c not in RUN_BY]
    assert not unchecked, (f"README.md shows commands no test runs: {unchecked}. Run them in tests/test_readme.py "
                           "(RUN_BY) or say in NOT_RUN why they cannot run here.")


@pytest.mark.slow
def test_make_bench_runs():
    """`make bench` as the README says, each script once on its smallest setting (a run check, no figures)."""
    r = subprocess.run(["make", "bench", "BENCH_ARGS=--smoke"], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for script in ("op_overhead.py", "train_cpu.py", "monitor_overhead.py"):
        assert f"=== {script}" in r.stdout
    assert "ratio" in r.stdout


@pytest.mark.slow
def test_pip_install_editable(tmp_path):
    """`pip install -e .` into a fresh virtualenv gives an importable workbench that computes."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "-e", "."], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = subprocess.run([str(py), "-c", "import workbench as wb; print(wb.ones(3).sum().item())"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3.0", r.stderr


def test_install_from_a_clone_without_node_says_what_to_do(tmp_path):
    """The README: Node is needed to install from a clone. Without npm, make says so before pip runs."""
    for name in ("pyproject.toml", "extensions/package.json", "extensions/package-lock.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    (tmp_path / "Makefile").write_text((REPO / "Makefile").read_text())
    fake_python = tmp_path / ".venv" / "bin" / "python"
    fake_python.parent.mkdir(parents=True)
    fake_python.write_text("#!/bin/sh\necho pip ran >> ../pip.log\n")  # an existing venv: no venv is made
    fake_python.chmod(0o755)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    for target in (".venv/.installed-lab", ".venv/.installed"):
        r = subprocess.run([shutil.which("make"), target], cwd=tmp_path, env={"PATH": str(empty)},
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "needs Node 20 with npm" in r.stderr and "make wheel" in r.stderr, r.stderr
    assert not (tmp_path / "pip.log").exists() and not (tmp_path / ".venv" / ".installed-lab").exists()
