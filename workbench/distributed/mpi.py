"""Loading MPI (mpi4py) the way workbench needs it, and how NumPy dtypes and reduce ops map onto it.

mpi4py's wheel works with either ABI: the ``mpich`` wheel from PyPI (which ships ``mpiexec``) or a system
MPICH / Open MPI / Intel MPI (``MPI4PY_LIBMPI`` or ``MPI4PY_MPIABI`` choose one, see mpi4py's docs). MPI
is initialised when ``mpi4py.MPI`` is first imported, so that import happens only in
``init_process_group``, after the environment says how this process meets the others.
"""
import os
import sys

_MPI = None
# variables an MPI launcher sets in each process it starts: hydra (MPICH, Intel MPI), Open MPI, PMIx, Slurm
_LAUNCHER_VARS = ("PMI_RANK", "PMI_FD", "PMI_PORT", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALRANKID")


def launched_by_mpi():
    """True when an MPI launcher (``mpiexec``, ``mpirun``, ``srun --mpi``) started this process."""
    return _MPI is not None and _MPI.COMM_WORLD.Get_size() > 1 or any(v in os.environ for v in _LAUNCHER_VARS)


def allow_root(env):
    """Open MPI refuses to run as root unless told twice; these machines (containers) run as root."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def is_available():
    """Whether mpi4py and an MPI library can be loaded (without initialising MPI)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def initialized_elsewhere():
    """True when something imported ``mpi4py.MPI`` (initialising MPI) before workbench could prepare it."""
    mod = sys.modules.get("mpi4py.MPI")
    return mod is not None and _MPI is None and mod.Is_initialized()


def load(pmi=None):
    """Import ``mpi4py.MPI`` (initialising MPI) and return it.

    ``pmi``: (address, port, rank) of a workbench rendezvous server to use as this process's process
    manager, for ranks no MPI launcher started (see ``rendezvous``).
    """
    global _MPI
    if _MPI is not None:
        return _MPI
    try:
        import mpi4py
    except ImportError:
        raise RuntimeError(
            "workbench.distributed needs mpi4py and an MPI library: pip install 'workbench[distributed]' "
            "(mpi4py + the mpich wheel, which ships mpiexec), or pip install mpi4py against your system MPI."
        ) from None
    allow_root(os.environ)
    # workbench finalizes MPI itself at exit, and only when no rank failed: MPI_Finalize waits for every
    # rank, so finalizing after a failure would hang on the ranks that are gone
    mpi4py.rc.finalize = False
    if pmi is not None:
        addr, port, rank = pmi
        os.environ["PMI_PORT"] = f"{addr}:{port}"
        os.environ["PMI_ID"] = str(rank)
    try:
        from mpi4py import MPI
    finally:
        if pmi is not None:  # processes this rank starts later must not connect to the job's server
            os.environ.pop("PMI_PORT", None)
            os.environ.pop("PMI_ID", None)
    _MPI = MPI
    return MPI


def loaded():
    """The MPI module if MPI was initialised in this process, else None."""
    return _MPI


def reduce_op(MPI, name):
    """The MPI.Op for a workbench ReduceOp name (AVG is a SUM followed by a division)."""
    return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
            "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[name]
