"""make bench / make bench-gpu: every benchmark script in one go, each printing its ratios."""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
CPU = ["op_overhead.py", "train_cpu.py", "monitor_overhead.py"]


def main():
    scripts = ["gpu.py"] if "--gpu" in sys.argv else CPU
    failed = []
    for s in scripts:
        print(f"\n=== {s} ===", flush=True)
        if subprocess.run([sys.executable, str(HERE / s)]).returncode:
            failed.append(s)
    if failed:
        sys.exit(f"benchmarks failed: {failed}")


if __name__ == "__main__":
    main()
