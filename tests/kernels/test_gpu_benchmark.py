"""The GPU benchmark runs only where a GPU is lent, rarely: CI runs its smoke mode (fake cupy, CPU PyTorch,
tiny sizes) so that run never dies of a typo or a changed kernel signature."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_gpu_benchmark_smoke_runs_every_measurement(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "gpu.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu.py"), "--smoke", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "| gpt train step |" in r.stdout and "| adam_step |" in r.stdout
    import json

    res = json.loads(out.read_text())
    for key in ("mlp_step", "cnn_step", "gpt_step", "matmul_fp32", "softmax_fwd", "layer_norm_bwd", "adam_step"):
        assert "error" not in res[key], res[key]
