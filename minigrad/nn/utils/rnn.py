"""minigrad.nn.utils.rnn, as torch.nn.utils.rnn: sequences of different lengths made into one batch.

    from minigrad.nn.utils.rnn import pad_sequence

    batch = pad_sequence([a, b, c], batch_first=True)    # a (5, D), b (3, D), c (4, D) -> (3, 5, D)

The short sequences are padded with `padding_value` after their end (or before their start, with
padding_side="left") up to the longest one's length T. The padding is `F.pad` and the batch is
`stack`, so gradients flow back to each sequence's own positions (the padding gets none).

PyTorch's packed sequences (`pack_padded_sequence`, `pad_packed_sequence`, `PackedSequence`) are
not here: minigrad's RNN, GRU and LSTM layers take padded tensors only (nn/rnn.py). To ignore the
padding, mask the outputs (or the loss) with the lengths instead.
"""
import numbers
from collections.abc import Iterable

from ...creation import as_tensor, stack
from ...tensor import Tensor
from ..padding import pad

__all__ = ["pad_sequence"]


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
