"""minigrad.nn.utils.rnn, as torch.nn.utils.rnn: sequences of different lengths made into one batch.

    from minigrad.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence

    batch = pad_sequence([a, b, c], batch_first=True)    # a (5, D), b (3, D), c (4, D) -> (3, 5, D)
    packed = pack_padded_sequence(batch, [5, 3, 4], batch_first=True, enforce_sorted=False)
    out, h_n = gru(packed)                                # h_n: each sequence's own last step
    out, lengths = pad_packed_sequence(out, batch_first=True)

Padding: the short sequences are padded with `padding_value` after their end (or before their start,
with padding_side="left") up to the longest one's length T. The padding is `F.pad` and the batch is
`stack`, so gradients flow back to each sequence's own positions (the padding gets none).

Packing: a `PackedSequence` holds only the real steps, time-major: first step 0 of every sequence
(the longest first), then step 1 of those that have one, and so on. `batch_sizes[t]` counts the
sequences that have a step t, so it never grows. An RNN, GRU or LSTM given a PackedSequence runs
each sequence for its own length only: its last state h_n is the state after the sequence's own
last step (not after the padding), and the reverse direction of a bidirectional layer starts at
that step. Packing and unpacking are indexing (a gather), so gradients flow through both.

    lengths [3, 1, 2], sorted longest first: [3, 2, 1] (sorted_indices [0, 2, 1])
    padded (T = 3)     a0 b0 c0          data     a0 c0 b0 | a1 c1 | a2
                       a1 .  c1          batch_sizes  3      2      1
                       a2 .  .
"""
import numbers
from collections import namedtuple
from collections.abc import Iterable

import numpy as np

from ...creation import as_tensor, cat, stack
from ...tensor import Tensor
from ..padding import pad

__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpack_sequence", "unpad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """A list of B tensors (L_i, *) -> one tensor (T, B, *), or (B, T, *) with batch_first=True,
    T = max L_i: sequence b is out[:L_b, b] (right padding) or out[T - L_b:, b] (left padding), and
    the rest of column b is padding_value. The trailing dims * must be equal; the result has the
    first sequence's dtype. A tensor (B, L, *) is taken as its B rows, as in PyTorch."""
    name = "pad_sequence"
    if isinstance(sequences, (str, bytes)) or not isinstance(sequences, (Iterable, Tensor)):
        raise TypeError(f"{name}: expected a list of tensors, got {type(sequences).__name__}")
    if padding_side not in ("left", "right"):
        raise ValueError(f"{name}: padding_side must be 'left' or 'right', got {padding_side!r}")
    if not isinstance(padding_value, numbers.Number):
        raise TypeError(f"{name}: padding_value must be a number, got {type(padding_value).__name__}")
    sequences = [as_tensor(s) for s in sequences]
    if not sequences:
        raise ValueError(f"{name}: got an empty list of sequences")
    first = sequences[0]
    for i, s in enumerate(sequences):
        if s.ndim == 0 or s.shape[1:] != first.shape[1:]:
            raise ValueError(f"{name}: every sequence must be (L, *) with the same trailing dims *, got shape "
                             f"{s.shape} for sequence {i} and {first.shape} for sequence 0")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        if s.dtype != first.dtype:
            s = s.to(first.dtype)
        missing = longest - s.shape[0]
        # F.pad's pads go from the last axis backwards: (0, 0) for each trailing dim, then the time axis
        time = (0, missing) if padding_side == "right" else (missing, 0)
        padded.append(pad(s, (0, 0) * (s.ndim - 1) + time, value=padding_value))
    return stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """pad_sequence undone: (T, B, *) (or (B, T, *)) and the B lengths -> a list of B tensors (L_b, *)."""
    x = as_tensor(padded_sequences)
    if not batch_first:
        x = x.transpose(0, 1)
    return [x[b, :int(n)] for b, n in enumerate(_lengths("unpad_sequence", lengths, x.shape[0]))]


# ---------------------------------------------------------------------- packed sequences
class PackedSequence(namedtuple("PackedSequence", "data batch_sizes sorted_indices unsorted_indices")):
    """The real steps of a batch of sequences, without padding (see the module's docstring):

    data              (sum of the lengths, *): step 0 of each sequence (longest first), then step 1, ...
    batch_sizes       (T,) int64: how many sequences have a step t
    sorted_indices    (B,) int64: the batch's sequences, longest first (None if they came sorted)
    unsorted_indices  (B,) int64: its inverse, to put results back in the batch's order (or None)

    Made by pack_padded_sequence or pack_sequence, undone by pad_packed_sequence."""

    def to(self, *args, **kwargs):
        """The same packing with data.to(...) (a dtype; the device is the CPU)."""
        return self._replace(data=self.data.to(*args, **kwargs))

    def cpu(self):
        return self

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    @property
    def is_cuda(self):
        return False


def _lengths(name, lengths, batch):
    lengths = np.asarray(lengths.numpy() if isinstance(lengths, Tensor) else lengths)
    if lengths.ndim != 1 or lengths.shape[0] != batch or lengths.dtype.kind not in "iu" and not (
            lengths.dtype.kind == "f" and np.all(lengths == np.round(lengths))):
        raise ValueError(f"{name}: expected one whole-number length per sequence, {batch} of them, got "
                         f"{lengths.tolist()!r}")
    return lengths.astype(np.int64)


def _steps(batch_sizes):
    """Where each row of a PackedSequence's data sits in the padded (T, B) batch, B sorted longest
    first: rows t of the data are (t, 0), (t, 1), ..., (t, batch_sizes[t] - 1). Two index arrays."""
    times = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    rows = np.concatenate([np.arange(n) for n in batch_sizes])
    return times, rows


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Padded sequences (T, B, *) (or (B, T, *) with batch_first) and their B lengths -> a
    PackedSequence of their real steps. With enforce_sorted=True the lengths must not increase (the
    longest first, as the packing needs them); with False any order, and the packing keeps the
    permutation that sorts them (the RNN's results come back in the batch's own order)."""
    name = "pack_padded_sequence"
    x = as_tensor(input)
    if x.ndim < 2:
        raise ValueError(f"{name}: expected padded sequences (T, B, *) or (B, T, *), got shape {x.shape}")
    if batch_first:
        x = x.transpose(0, 1)  # (T, B, *)
    lengths = _lengths(name, lengths, x.shape[1])
    if lengths.size and (lengths.min() <= 0 or lengths.max() > x.shape[0]):
        raise ValueError(f"{name}: every length must be in 1..{x.shape[0]} (the padded length), got "
                         f"{lengths.tolist()}")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(f"{name}: `lengths` array must be sorted in decreasing order when `enforce_sorted` "
                               f"is True, got {lengths.tolist()}. Pass enforce_sorted=False to pack sequences in "
                               "any order")
        sorted_indices = unsorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices, unsorted_indices = Tensor(order), Tensor(np.argsort(order))
        lengths = lengths[order]
    batch_sizes = (np.arange(lengths[0])[:, None] < lengths[None, :]).sum(axis=1)
    times, rows = _steps(batch_sizes)
    columns = rows if sorted_indices is None else sorted_indices.numpy()[rows]
    return PackedSequence(x[times, columns], Tensor(batch_sizes.astype(np.int64)), sorted_indices, unsorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """A PackedSequence -> (padded (T, B, *) or (B, T, *) with batch_first, lengths (B,) int64), the
    sequences in the batch's own order (before sorting). T is the longest length, or total_length
    (to pad to a fixed length, as a DataParallel batch needs)."""
    name = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{name}: expected a PackedSequence, got {type(sequence).__name__}")
    data, batch_sizes = sequence.data, np.asarray(sequence.batch_sizes.numpy(), dtype=np.int64)
    steps, batch = len(batch_sizes), int(batch_sizes[0])
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"{name}: expected total_length to be at least the length of the longest sequence "
                             f"({steps}), got {total_length}")
        steps = total_length
    times, rows = _steps(batch_sizes)
    # each (t, b) of the padded batch reads row `where[t, b]` of the data, or the padding row after it
    where = np.full((steps, batch), data.shape[0], dtype=np.int64)
    where[times, rows] = np.arange(data.shape[0])
    filler = Tensor(np.full((1,) + data.shape[1:], padding_value, dtype=data.dtype))
    padded = cat([data, filler], dim=0)[where]  # (T, B, *), B sorted longest first
    lengths = (batch_sizes[:, None] > np.arange(batch)[None, :]).sum(axis=0)
    if sequence.unsorted_indices is not None:
        back = sequence.unsorted_indices.numpy()
        padded, lengths = padded[:, back], lengths[back]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, Tensor(lengths.astype(np.int64))


def pack_sequence(sequences, enforce_sorted=True):
    """A list of B tensors (L_b, *) -> a PackedSequence (pad_sequence, then pack_padded_sequence)."""
    sequences = [as_tensor(s) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """pack_sequence undone: a PackedSequence -> the list of B tensors (L_b, *), in the batch's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def _repack(padded, like):
    """The steps of padded (T, B, *) (the batch's own order) packed as PackedSequence `like` is."""
    times, rows = _steps(np.asarray(like.batch_sizes.numpy(), dtype=np.int64))
    columns = rows if like.sorted_indices is None else like.sorted_indices.numpy()[rows]
    return like._replace(data=padded[times, columns])
