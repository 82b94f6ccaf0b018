"""Faults on 2 ranks. Usage: faults.py MODE, MODE one of kill, kill0, timeout, monitored, mismatch, unused."""
import datetime
import os
import signal
import sys
import time

import workbench as wb
import workbench.distributed as dist

mode = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
r = dist.get_rank()
t = wb.ones(4)
dist.all_reduce(t)  # both ranks are up (on a loaded machine one may start seconds after the other)
if mode == "kill":
    if r == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    for _ in range(1000):  # rank 0 keeps going: it must be ended, not hang
        dist.all_reduce(t)
        time.sleep(0.01)
elif mode == "kill0":
    if r == 0:
        os.kill(os.getpid(), signal.SIGKILL)  # the rank that started the rendezvous server
    for _ in range(1000):
        dist.all_reduce(t)
        time.sleep(0.01)
elif mode == "monitored":
    if r == 1:
        time.sleep(4)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))
elif mode == "timeout":
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=2))  # its ops time out after 2 s
    dist.all_reduce(t, group=g)
    if r == 1:
        time.sleep(6)  # rank 1 is late: rank 0's all_reduce must give up after 2 s, naming the op
        sys.exit(0)
    dist.all_reduce(wb.ones(3), group=g)
elif mode == "mismatch":
    shape = (4,) if r == 0 else (2, 2)  # equal byte counts: MPI alone would pass it silently
    try:
        dist.all_reduce(wb.ones(shape))
    except RuntimeError as e:
        sys.stdout.write(f"{r} RAISED {e}\n")
        sys.exit(0)
    sys.stdout.write(f"{r} NOT RAISED\n")
elif mode == "unused":
    from workbench.nn.parallel import DistributedDataParallel as DDP

    m = wb.nn.ModuleDict({"used": wb.nn.Linear(2, 2), "unused": wb.nn.Linear(2, 2)})
    m.forward = lambda x: m["used"](x)
    ddp = DDP(m)
    ddp(wb.ones(1, 2)).sum().backward()
    try:
        ddp(wb.ones(1, 2))
    except RuntimeError as e:
        sys.stdout.write(f"{r} RAISED {e}\n")
