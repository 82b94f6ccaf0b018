"""``workbench.distributed``: PyTorch's ``torch.distributed`` on MPI (mpi4py) and NCCL (CuPy).

Backends: ``"mpi"`` and ``"gloo"`` (the same thing here: MPI, so CPU PyTorch scripts run unchanged) for
CPU tensors, and ``"nccl"`` for CUDA tensors. Start the ranks with ``python -m workbench.distributed.run
--nproc-per-node N script.py`` (torchrun's flags), ``multiprocessing.spawn``, ``mpiexec``, or by hand with
MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE. See docs/distributed.md.

>>> import workbench.distributed as dist
>>> dist.is_available(), dist.is_initialized()
(True, False)
"""
from .collectives import (P2POp, all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single,
                          barrier, batch_isend_irecv, broadcast, gather, irecv, isend, monitored_barrier, recv,
                          reduce, reduce_scatter, reduce_scatter_tensor, scatter, send)
from .objects import (all_gather_object, broadcast_object_list, gather_object, recv_object_list,
                      scatter_object_list, send_object_list)
from .process_group import (Backend, GroupMember, ProcessGroup, ReduceOp, destroy_process_group, get_backend,
                            get_global_rank, get_group_rank, get_process_group_ranks, get_rank, get_world_size,
                            group, init_process_group, is_available, is_gloo_available, is_initialized,
                            is_mpi_available, is_nccl_available, is_torchelastic_launched, new_group)
from .work import Work
from .grad_bucket import GradBucket
from . import algorithms

__all__ = ["Backend", "GradBucket", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
           "batch_isend_irecv", "broadcast", "broadcast_object_list", "destroy_process_group", "gather",
           "gather_object", "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_gloo_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "isend",
           "monitored_barrier", "new_group", "recv", "recv_object_list", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send", "send_object_list"]
