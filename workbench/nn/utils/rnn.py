"""Variable-length sequences for RNNs: PackedSequence, pack/pad in both directions.

Packing and padding are single differentiable gathers (an index map built on the host), so
gradients flow through them to the original padded tensor.
"""
from collections import namedtuple

from ... import _backend, ops
from ..._backend import dtypes as _dt
from ...creation import full
from ...tensor import Tensor



def _np():
    return _backend.numpy


def _cat(ts):
    return ops.cat(ts)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Sequences of different lengths packed time-major: ``data`` holds step 0 of every sequence, then
    step 1 of those still running, ...; ``batch_sizes[t]`` says how many run at step t.

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pack_sequence
    >>> p = pack_sequence([wb.tensor([1, 2, 3]), wb.tensor([4, 5])])
    >>> p.data, p.batch_sizes
    (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes; build one with pack_padded_sequence or pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Move/cast ``data`` (and the index tensors to the same device), as Tensor.to."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        si = None if self.sorted_indices is None else self.sorted_indices.to(dev)
        ui = None if self.unsorted_indices is None else self.unsorted_indices.to(dev)
        return type(self)(data, self.batch_sizes, si, ui)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def float(self):
        return self.to(dtype=_dt.float32)

    def double(self):
        return self.to(dtype=_dt.float64)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None stays None).

    >>> import workbench as wb
    >>> invert_permutation(wb.tensor([2, 0, 1]))
    tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    p = _backend.to_device(permutation._data, _backend.CPU)
    inv = _np().empty_like(p)
    inv[p] = _np().arange(p.shape[0], dtype=p.dtype)
    return Tensor._make(_backend.to_device(inv, permutation.device))


def _host_lengths(lengths):
    if isinstance(lengths, Tensor):
        if lengths.device.type != "cpu":
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got 1D "
                               f"{lengths.device} {lengths.dtype} tensor")
        return [int(x) for x in lengths._data.reshape(-1)]
    return [int(x) for x in lengths]


def _batch_sizes(sorted_lengths):
    L = sorted_lengths[0] if sorted_lengths else 0
    a = _np().asarray(sorted_lengths)
    return _np().array([(a > t).sum() for t in range(L)], dtype=_np().int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (or (B, T, *) with batch_first) given each sequence's length.

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pack_padded_sequence
    >>> pack_padded_sequence(wb.tensor([[1, 4], [2, 5], [3, 0]]), [3, 2]).batch_sizes
    tensor([2, 2, 1])
    """
    lens = _host_lengths(lengths)
    B = input.shape[0 if batch_first else 1]
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={B})")
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    xnp = _np()
    if enforce_sorted:
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        order = xnp.arange(B)
        sorted_indices = None
    else:
        order = xnp.argsort(-xnp.asarray(lens), kind="stable")
        sorted_indices = Tensor._make(_backend.to_device(order.astype(xnp.int64), input.device))
    slens = [lens[i] for i in order]
    T = input.shape[1 if batch_first else 0]
    if slens[0] > T:
        raise RuntimeError(f"Expected the longest length {slens[0]} to be at most the input's time dimension {T}")
    bs = _batch_sizes(slens)
    # flat row index of (t, order[b]) in input viewed as (T*B, *) time-major, or (B*T, *) batch-major
    rows = []
    for t, n in enumerate(bs):
        for b in range(n):
            j = order[b]
            rows.append(j * T + t if batch_first else t * B + j)
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    idx = Tensor._make(_backend.to_device(xnp.asarray(rows, dtype=xnp.int64), input.device))
    data = flat[idx]
    return PackedSequence(data, Tensor._make(bs), sorted_indices, invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack to a padded tensor and the lengths (the inverse of pack_padded_sequence).

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> pad_packed_sequence(pack_sequence([wb.tensor([1, 2, 3]), wb.tensor([4, 5])]), batch_first=True)
    (tensor([[1, 2, 3],
            [4, 5, 0]]), tensor([3, 2]))
    """
    xnp = _np()
    data, bs_t = sequence.data, sequence.batch_sizes
    bs = [int(x) for x in bs_t._data]
    T = len(bs)
    B = bs[0] if bs else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {T}")
        T_out = total_length
    else:
        T_out = T
    lengths = xnp.array([sum(1 for n in bs if n > b) for b in range(B)], dtype=xnp.int64)
    pad_row = data.shape[0]
    index = xnp.full((T_out, B), pad_row, dtype=xnp.int64)  # time-major positions -> rows of data (+ pad row)
    off = 0
    for t, n in enumerate(bs):
        index[t, :n] = xnp.arange(off, off + n)
        off += n
    if sequence.unsorted_indices is not None:
        ui = _backend.to_device(sequence.unsorted_indices._data, _backend.CPU)
        index = index[:, ui]
        lengths = lengths[ui]
    if batch_first:
        index = index.T
    rest = tuple(data.shape[1:])
    pad = full((1,) + rest, padding_value, dtype=data.dtype, device=data.device)
    src = _cat([data, pad])
    idx = Tensor._make(_backend.to_device(xnp.ascontiguousarray(index).reshape(-1), data.device))
    out = src[idx].reshape(index.shape + rest)
    return out, Tensor._make(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *)), padding the short ones.

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pad_sequence
    >>> pad_sequence([wb.tensor([1, 2, 3]), wb.tensor([4])], batch_first=True)
    tensor([[1, 2, 3],
            [4, 0, 0]])
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    xnp = _np()
    lens = [s.shape[0] for s in sequences]
    L, B = max(lens), len(sequences)
    rest = tuple(sequences[0].shape[1:])
    total = sum(lens)
    index = xnp.full((B, L), total, dtype=xnp.int64)
    off = 0
    for b, n in enumerate(lens):
        start = 0 if padding_side == "right" else L - n
        index[b, start:start + n] = xnp.arange(off, off + n)
        off += n
    if not batch_first:
        index = index.T
    ref = sequences[0]
    pad = full((1,) + rest, padding_value, dtype=ref.dtype, device=ref.device)
    src = _cat(list(sequences) + [pad])
    idx = Tensor._make(_backend.to_device(xnp.ascontiguousarray(index).reshape(-1), ref.device))
    return src[idx].reshape(index.shape + rest)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of unpadded tensors.

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import unpad_sequence
    >>> unpad_sequence(wb.tensor([[1, 2], [3, 0]]), [2, 1], batch_first=True)
    [tensor([1, 2]), tensor([3])]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :n] for b, n in enumerate(_host_lengths(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of lengths L_i (sorted decreasing unless enforce_sorted=False).

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pack_sequence
    >>> pack_sequence([wb.tensor([1]), wb.tensor([2, 3])], enforce_sorted=False).data
    tensor([2, 1, 3])
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of unpadded tensors held in a PackedSequence.

    >>> import workbench as wb
    >>> from workbench.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> unpack_sequence(pack_sequence([wb.tensor([1, 2]), wb.tensor([3])]))
    [tensor([1, 2]), tensor([3])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
