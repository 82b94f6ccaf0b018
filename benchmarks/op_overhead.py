"""Per-op overhead on tiny tensors: workbench against PyTorch CPU, measured side by side in one run.

    python benchmarks/op_overhead.py [--quick]

Both libraries run single-threaded (OMP/OpenBLAS/MKL threads = 1, torch.set_num_threads(1)) and take
turns, timed in process CPU time. Each figure is the minimum over several repetitions, divided by the
ten ops of the chain:

* fwd+bwd   a ten-op chain (mul, add, tanh, mul, sub, sin, mul, add, exp, sum) on leaves that require
            grad, then .backward()           target: workbench <= 1.5x PyTorch
* no_grad   the same chain under no_grad()  target: workbench <= 1.0x PyTorch
* record    the forward alone with recording on (what the tape costs before any backward)
* numpy     the same arithmetic on bare NumPy arrays: the floor a NumPy-based library stands on

Then the cost of recording metadata for the visualizer (op name and module scope): forward with
recording on, with no listener and with a listener storing (op, scope) per node; and the one check
an op pays when nothing listens.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workbench as wb  # noqa: E402
from workbench.autograd import graph  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # the oracle is a test extra; without it only workbench's figures print
    torch = None

N_OPS = 10


def chain(x, w, b):
    y = x * w
    y = y + b
    y = y.tanh()
    y = y * x
    y = y - w
    y = y.sin()
    y = y * b
    y = y + x
    y = y.exp()
    return y.sum()


def np_chain(x, w, b):
    y = x * w
    y = y + b
    y = np.tanh(y)
    y = y * x
    y = y - w
    y = np.sin(y)
    y = y * b
    y = y + x
    y = np.exp(y)
    return y.sum()


def best(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=CLOCK)) / number


# CPU time of this process: on a shared machine, time spent descheduled does not count against either
# library (wall-clock figures swing 3x with the load of other processes; CPU time far less)
CLOCK = time.process_time


def per_op_us(seconds):
    return seconds / N_OPS * 1e6


def _cases(lib, shape):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(shape).astype(np.float32) * 0.5 for _ in range(3)]
    x, w = (lib.tensor(a, requires_grad=True) for a in arrs[:2])
    b = lib.tensor(arrs[2])

    def fwd_bwd():
        x.grad = None
        w.grad = None
        chain(x, w, b).backward()

    def fwd():
        chain(x, w, b)

    def no_grad():
        with lib.no_grad():
            for _ in range(20):  # the context is entered once per 20 chains: the ops are what we time
                chain(x, w, b)

    return {"fwd+bwd": (fwd_bwd, 1), "no_grad": (no_grad, 20), "record": (fwd, 1)}


def measure(libs, shape, number, repeat):
    """{lib name: {mode: seconds per chain}}; the libraries take turns, so load changes hit all alike."""
    cases = {name: _cases(lib, shape) for name, lib in libs.items()}
    out = {name: {} for name in libs}
    for mode in ("fwd+bwd", "no_grad", "record"):
        for _ in range(repeat):
            for name in libs:
                fn, per_call = cases[name][mode]
                k = max(1, number // per_call)
                t = timeit.timeit(fn, number=k, timer=CLOCK) / (k * per_call)
                out[name][mode] = min(out[name].get(mode, t), t)
    return out


def measure_numpy(shape, number, repeat):
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(shape).astype(np.float32) * 0.5 for _ in range(3))
    return best(lambda: np_chain(x, w, b), number, repeat)


def measure_listener(shape, number, repeat):
    x = wb.tensor(np.full(shape, 0.5, np.float32), requires_grad=True)
    w = wb.tensor(np.full(shape, 0.25, np.float32), requires_grad=True)
    b = wb.tensor(np.full(shape, 0.1, np.float32))
    seen = []

    def listener(node, inputs, outputs):
        seen.append((node.op, node.scope))

    def run():
        seen.clear()
        with graph.scope("encoder.0"):
            chain(x, w, b)

    off = []
    on = []
    for _ in range(repeat):  # interleaved, so machine noise hits both alike
        off.append(best(run, number, 1))
        with graph.add_listener(listener):
            on.append(best(run, number, 1))
    return min(off), min(on)


def measure_metadata(number, repeat):
    """What recording the visualizer's metadata costs per node: the op name is a class attribute (free);
    the module scope and composite group are two context-variable reads stored in two slots."""
    from workbench.autograd.graph import GROUP, SCOPE

    class Slots:
        __slots__ = ("scope", "group")

    n = Slots()

    def with_meta():
        n.scope = SCOPE.get()
        n.group = GROUP.get()

    def without():
        pass

    return max(0.0, best(with_meta, number, repeat) - best(without, number, repeat))


def measure_check(number, repeat):
    listeners = graph.LISTENERS

    def with_check():
        if listeners:
            pass

    def without():
        pass

    return max(0.0, best(with_check, number, repeat) - best(without, number, repeat))


def main():
    quick = "--quick" in sys.argv
    number, repeat = (300, 5) if quick else (1000, 15)
    print(f"workbench per-op overhead, {'quick run' if quick else 'full run'}")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'} (threads: "
          f"{torch.get_num_threads() if torch else '-'}), {os.cpu_count()} CPU cores, "
          f"{platform.machine()}")
    print()
    header = f"{'shape':>8} {'mode':>8} {'workbench us/op':>16} {'torch us/op':>12} {'ratio':>7} {'target':>7}"
    print(header)
    print("-" * len(header))
    libs = {"wb": wb, **({"torch": torch} if torch else {})}
    for shape in ((4, 4), (64,)):
        res = measure(libs, shape, number, repeat)
        npm = measure_numpy(shape, number, repeat)
        for mode, target in (("fwd+bwd", 1.5), ("no_grad", 1.0), ("record", None)):
            a = per_op_us(res["wb"][mode])
            if torch:
                t = per_op_us(res["torch"][mode])
                ratio = a / t
                ok = "" if target is None else ("ok" if ratio <= target else "MISS")
                print(f"{str(shape):>8} {mode:>8} {a:16.2f} {t:12.2f} {ratio:7.2f} "
                      f"{('<=' + str(target)) if target else '':>7} {ok}")
            else:
                print(f"{str(shape):>8} {mode:>8} {a:16.2f}")
        print(f"{str(shape):>8} {'numpy':>8} {per_op_us(npm):16.2f}   (bare NumPy, the floor)")
    print()
    off, on = measure_listener((4, 4), number, repeat)
    overhead_off = per_op_us(off) - per_op_us(measure_numpy((4, 4), number, repeat))  # added to NumPy, per op
    extra = per_op_us(on - off)
    meta = measure_metadata(number * 20, repeat)
    check = measure_check(number * 20, repeat)
    print(f"recording forward (4x4) inside a module scope: {overhead_off:.2f} us/op on top of NumPy")
    print(f"  recording op + scope + group in the node: {meta * 1e9:.0f} ns/op = "
          f"{100 * meta * 1e6 / overhead_off:.1f}% of that (target < 5%)")
    print(f"  with no listener, the one check per op: {check * 1e9:.1f} ns = "
          f"{100 * check * 1e6 / overhead_off:.2f}%")
    print(f"  a Python listener that stores (op, scope) per node (the visualizer's side): +{extra:.3f} us/op = "
          f"{100 * extra / overhead_off:.1f}%")


if __name__ == "__main__":
    main()
