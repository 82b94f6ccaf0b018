"""Every collective, point-to-point and object op on 2 ranks against a NumPy oracle (see workers/collectives.py)."""
import pytest

from .launch import oks, run

OPS = ["all_reduce-SUM", "all_reduce-PRODUCT", "all_reduce-MIN", "all_reduce-MAX", "all_reduce-AVG", "all_reduce-async",
       "broadcast", "reduce", "all_gather0", "all_gather1", "all_gather_into_tensor", "reduce_scatter",
       "reduce_scatter_tensor", "scatter", "all_to_all_single", "all_to_all0", "all_to_all1", "isend_irecv",
       "batch_isend_irecv"]


def expected(devices):
    want = set()
    for dev in devices:
        for dt in ("float32", "float64", "int64"):
            for rank in (0, 1):
                want |= {(rank, f"{op}-{dev}-{dt}") for op in OPS}
            want |= {(1, f"gather0-{dev}-{dt}"), (1, f"gather1-{dev}-{dt}"), (1, f"send_recv-{dev}-{dt}")}
    return want | {(0, "objects"), (1, "objects"), (1, "new_group")}


@pytest.mark.parametrize("backend", ["gloo", "mpi", "nccl"])
def test_every_collective_matches_numpy_on_cpu_and_fake_cuda(backend):
    """gloo: CPU and CUDA tensors over MPI; mpi: CPU; nccl: CUDA tensors through (fake) cupy.cuda.nccl, and DDP."""
    devices = {"gloo": ["cpu", "cuda"], "mpi": ["cpu"], "nccl": ["cuda"]}[backend]
    rc, out = run("workers/collectives.py", backend, *devices)
    assert rc == 0, out
    want = expected(devices) | ({(0, "ddp-nccl"), (1, "ddp-nccl")} if backend == "nccl" else set())
    missing = want - oks(out)
    assert not missing, f"checks that did not run: {sorted(missing)[:10]}\n{out[-3000:]}"
