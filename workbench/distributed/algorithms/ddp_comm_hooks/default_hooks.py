"""PyTorch's default DDP communication hooks: plain averaging, and averaging in float16 / bfloat16.

The ``state`` of each is a process group (None: the default one), as in PyTorch:
``ddp.register_comm_hook(None, fp16_compress_hook)``.
"""
from ... import process_group as _pg
from ...collectives import all_reduce
from ...._backend import dtypes as _dtypes


def _allreduce_fut(process_group, tensor):
    # average tensor across the group: divide first (as PyTorch), then sum
    group = _pg.resolve(process_group)
    tensor.div_(group.size())
    return all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket's gradients across the group: what DDP does without a hook.

    >>> ddp.register_comm_hook(None, allreduce_hook)  # doctest: +SKIP
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = _pg.resolve(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())

    def decompress(fut):
        buffer.copy_(fut.value()[0])  # back into the bucket, in its own dtype
        return buffer

    return all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Average the gradients in float16 (half the bytes on the wire), then write them back in the bucket's dtype.

    >>> ddp.register_comm_hook(None, fp16_compress_hook)  # doctest: +SKIP
    """
    return _compress_hook(_dtypes.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """As ``fp16_compress_hook``, in bfloat16 (float32's range, 8 bits of mantissa).

    >>> ddp.register_comm_hook(None, bf16_compress_hook)  # doctest: +SKIP
    """
    return _compress_hook(_dtypes.bfloat16, process_group, bucket)


__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]
