"""DistributedDataParallel and DistributedSampler on 2 ranks (see workers/ddp.py for what each check compares)."""
import pytest

from .launch import oks, run

CHECKS = ["equals_single_process-cap25-view0", "equals_single_process-cap0.0005-view0",
          "equals_single_process-cap0.0005-view1", "no_sync", "find_unused_parameters", "buffers_and_state_dict",
          "sampler_epochs"]


def test_ddp_matches_single_process_training_with_buckets_no_sync_and_unused_parameters():
    rc, out = run("workers/ddp.py")
    assert rc == 0, out
    missing = {(r, c) for r in (0, 1) for c in CHECKS} - oks(out)
    assert not missing, f"{sorted(missing)}\n{out[-3000:]}"


def test_sampler_matches_pytorch_padding_and_drop_last():
    torch_sampler = pytest.importorskip("torch.utils.data.distributed").DistributedSampler
    from workbench.utils.data.distributed import DistributedSampler

    for size in (1, 5, 6, 7, 10):
        for replicas in (2, 3, 4):
            for drop_last in (False, True):
                for rank in range(replicas):
                    ours = DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
                    theirs = torch_sampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
                    assert list(ours) == list(theirs) and len(ours) == len(theirs), (size, replicas, drop_last, rank)
    s = DistributedSampler(range(10), 2, 0, seed=5)
    first = list(s)
    assert list(s) == first  # the same epoch, the same order
    s.set_epoch(1)
    other = DistributedSampler(range(10), 2, 1, seed=5)
    other.set_epoch(1)
    assert list(s) != first and sorted(list(s) + list(other)) == list(range(10))
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
