"""``Join``: training on uneven inputs, as ``torch.distributed.algorithms.join``.

Inside ``with Join([ddp]):`` every step of a rank still training starts with a small census (an all-gather:
who still trains, and in what state). A rank whose loop ended waits in ``__exit__`` and, step by step, runs
each joinable's ``JoinHook.main_hook`` (the collectives the training ranks run, with neutral inputs) until the
census says every rank has ended; then each ``post_hook(is_last_joiner)`` (DDP: everyone takes the model of
the last ranks to finish).
"""
import abc

from ... import _backend
from ...tensor import Tensor
from ..collectives import all_gather_into_tensor

JOINED = 0  # a rank's census state: it ran out of inputs; training ranks report a positive state


class JoinHook:
    """What a joinable does on a rank that joined: ``main_hook()`` once per step the others still take,
    ``post_hook(is_last_joiner)`` once at the end."""

    def main_hook(self):
        """Shadow one step of the ranks still training."""

    def post_hook(self, is_last_joiner):
        """Run once every rank has joined; ``is_last_joiner``: this rank trained until the last step."""


class Joinable(abc.ABC):
    """A class whose collectives a joined rank can shadow: DistributedDataParallel."""

    @abc.abstractmethod
    def join_hook(self, **kwargs):
        """The JoinHook of this joinable (``kwargs``: the ones given to ``Join``)."""

    @property
    @abc.abstractmethod
    def join_device(self):
        """The device the census tensor lives on."""

    @property
    @abc.abstractmethod
    def join_process_group(self):
        """The process group the census runs on."""


class Census:
    """One Join block's census: each step, every rank's state (JOINED, or a joinable-defined positive one)."""

    def __init__(self, pg, device, throw):
        self.pg, self.device, self.throw = pg, device, throw
        self.states = [1] * pg.size()
        self.last_training = list(range(pg.size()))  # the group ranks training at the latest step any did
        self.last = pg.size() - 1  # the highest of them

    @property
    def active(self):
        """How many ranks still train."""
        return sum(1 for s in self.states if s != JOINED)

    def round(self, mine):
        """All-gather each rank's state (this rank's is ``mine``)."""
        np = _backend.numpy
        out = Tensor._make(_backend.to_device(np.zeros(self.pg.size(), np.int64), self.device))
        all_gather_into_tensor(out, Tensor._make(_backend.to_device(np.full(1, mine, np.int64), self.device)),
                               group=self.pg)
        self.states = out._data.tolist()
        training = [r for r, s in enumerate(self.states) if s != JOINED]
        if self.throw and len(training) < len(self.states):
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        if training:
            self.last_training, self.last = training, training[-1]
        return self


class Join:
    """Context manager for training on uneven inputs: ``with Join([ddp]): for x in my_batches: ...``.

    ``joinables``: the DistributedDataParallel models of the loop (one process group, one device);
    ``throw_on_early_termination``: raise RuntimeError on every rank at the first step one rank has run out,
    instead of shadowing; other keyword arguments go to each ``join_hook`` (DDP:
    ``divide_by_initial_world_size=True``).

    >>> from workbench.distributed.algorithms.join import Join  # doctest: +SKIP
    >>> with Join([ddp]):  # doctest: +SKIP
    ...     for x in my_batches:  # a different number of batches on each rank
    ...         opt.zero_grad(); ddp(x).sum().backward(); opt.step()
    """

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        joinables = list(joinables)
        if not joinables:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join: {type(j).__name__} is not a Joinable (DistributedDataParallel is one)")
        groups = {id(j.join_process_group) for j in joinables}
        devices = {str(j.join_device) for j in joinables}
        if len(groups) > 1 or len(devices) > 1:
            raise ValueError("Join: the joinables must share one process group and one device; found "
                             f"{len(groups)} groups and devices {sorted(devices)}")
        self._joinables, self._enable, self._throw, self._kwargs = joinables, enable, throw_on_early_termination, \
            kwargs
        self._hooks = None

    def __enter__(self):
        if not self._enable:
            return self
        if any(getattr(j, "_join", None) is not None for j in self._joinables):
            raise RuntimeError("Join: a joinable is already inside a Join block")
        census = Census(self._joinables[0].join_process_group, self._joinables[0].join_device, self._throw)
        self._hooks = [j.join_hook(**self._kwargs) for j in self._joinables]
        for k, j in enumerate(self._joinables):
            j._join = (census, k == 0)
        self._census = census
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._enable:
            return False
        try:
            if exc_type is None:
                rank = self._census.pg.rank()
                while self._census.round(JOINED).active:
                    for h in self._hooks:
                        h.main_hook()
                for h in self._hooks:
                    h.post_hook(rank in self._census.last_training)
        finally:
            for j in self._joinables:
                j._join = None
        return False

    @staticmethod
    def notify_join_context(joinable, state=1):
        """Called by a joinable at the start of each step: the census of its Join block (the first joinable
        takes it, with this rank's ``state``), or None outside one."""
        join = getattr(joinable, "_join", None)
        if join is None:
            return None
        census, first = join
        return census.round(state) if first else census
