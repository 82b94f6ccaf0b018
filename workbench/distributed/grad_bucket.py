"""``GradBucket``: what a DDP communication hook receives, as ``torch.distributed.GradBucket``."""


class GradBucket:
    """One bucket of a DDP model's gradients: a flat buffer holding several parameters' gradients.

    A communication hook (``DistributedDataParallel.register_comm_hook``) gets one per bucket, once the bucket's
    gradients are all computed, and returns a future of the reduced flat buffer.

    >>> import workbench as wb, workbench.distributed as dist
    >>> w = wb.nn.Parameter(wb.ones(2, 2)); w.grad = wb.full((2, 2), 3.0)
    >>> b = dist.GradBucket(0, True, wb.full((4,), 3.0), [w])
    >>> b.index(), b.is_last(), tuple(b.gradients()[0].shape), b.parameters()[0] is w
    (0, True, (2, 2), True)
    """

    def __init__(self, index, is_last, buffer, parameters):
        self._index, self._is_last, self._buffer, self._params = index, is_last, buffer, list(parameters)

    def index(self):
        """The bucket's position in launch order (0 is reduced first)."""
        return self._index

    def buffer(self):
        """The flat tensor of the bucket's gradients (a hook may change it in place)."""
        return self._buffer

    def set_buffer(self, buffer):
        """Replace the flat buffer (same number of elements)."""
        if buffer.numel() != self._buffer.numel():
            raise RuntimeError(f"GradBucket.set_buffer: the bucket holds {self._buffer.numel()} elements, the new "
                               f"buffer {buffer.numel()}")
        self._buffer = buffer

    def gradients(self):
        """Each parameter's gradient: views of the buffer, shaped like the parameters."""
        out, at = [], 0
        flat = self._buffer.reshape(-1)
        for p in self._params:
            n = p.numel()
            out.append(flat[at:at + n].view(p.shape))
            at += n
        return out

    def parameters(self):
        """The parameters whose gradients the bucket holds, in buffer order."""
        return list(self._params)

    def is_last(self):
        """Whether this is the last bucket of the backward pass."""
        return self._is_last

    def __repr__(self):
        return f"<GradBucket {self._index}: {len(self._params)} parameters, {self._buffer.numel()} elements>"
