"""make bench / make bench-gpu: every benchmark script in one go, each printing its ratios.

    python benchmarks/run_all.py [--gpu] [--smoke]

``--smoke`` runs each CPU script once on its smallest setting: a check that the scripts run (the README
test does this), not a measurement.
"""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
# each CPU script, with the arguments of its smoke run
CPU = {
    "op_overhead.py": ["--quick"],
    "small_ops.py": ["--quick", "--only", "arith,view"],
    "train_cpu.py": ["--steps", "2", "--rounds", "1"],
    "monitor_overhead.py": ["--steps", "60"],
    "custom_op_overhead.py": ["--quick"],
    "compile_cpu.py": ["--steps", "2", "--rounds", "1", "--only", "tiny,mlp,tiny-module"],
    "user_forms.py": ["--rounds", "1", "--only", "chain,tiny,mlp"],
    "peers.py": ["--rounds", "1", "--steps-scale", "0.05"],
    "conv_models.py": ["--rounds", "1", "--steps", "1", "--only", "mobilenet,einsum"],
    "functional_ops.py": ["--rounds", "1", "--reps", "1", "--only", "relu,layer_norm,cross_entropy"],
    "viewer_speed.py": ["--nodes", "200"],
    "debugger_step.py": ["--links", "100", "--steps", "5", "--runs", "1"],
    "import_time.py": ["--runs", "1"],
}


def main():
    smoke = "--smoke" in sys.argv
    if "--gpu" in sys.argv:
        runs = {"gpu.py": ["--smoke"] if smoke else []}
    else:
        runs = {s: (args if smoke else []) for s, args in CPU.items()}
    failed = []
    for s, args in runs.items():
        print(f"\n=== {s} {' '.join(args)} ===", flush=True)
        if subprocess.run([sys.executable, str(HERE / s), *args]).returncode:
            failed.append(s)
    if failed:
        sys.exit(f"benchmarks failed: {failed}")


if __name__ == "__main__":
    main()
