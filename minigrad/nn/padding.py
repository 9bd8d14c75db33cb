"""`pad`, with PyTorch's argument order: the pads of the LAST axis first.

    pad(x, (1, 2))          last axis: 1 before, 2 after
    pad(x, (1, 2, 3, 4))    last axis 1 and 2, the one before it 3 and 4

Modes: 'constant' (`value`, default 0; negative pads crop), 'reflect' (mirrored about the edge,
which is not repeated: [1 2 3] -> 3 2 [1 2 3] 2 1), 'replicate' (the edge repeated: 1 1 [1 2 3] 3 3)
and 'circular' (wrapped around: 2 3 [1 2 3] 1 2). Every mode pads any number of trailing axes
(PyTorch's non-constant modes take only the last 1 to 3 axes of a 2-D to 5-D input, and give the
same numbers there). The op and its gradient: ops_conv.Pad.
"""
import numbers

from .. import ops_conv
from ..creation import as_tensor

MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """input padded by `pad` = (before, after) pairs from the last axis backwards (see the module docstring)."""
    x = as_tensor(input)
    pads = tuple(pad)
    if len(pads) % 2 or len(pads) // 2 > x.ndim or not all(isinstance(p, numbers.Integral) for p in pads):
        raise ValueError(f"pad: expected an even number of ints, at most 2 per axis of the input {x.shape}, "
                         f"got {pad!r}")
    if mode not in MODES:
        raise ValueError(f"pad: mode must be one of {MODES}, got {mode!r}")
    if value is not None and mode != "constant":
        raise ValueError(f"pad: value={value} only applies to mode='constant', not {mode!r}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        widths[x.ndim - 1 - i] = (int(pads[2 * i]), int(pads[2 * i + 1]))
    if any(p < 0 for pair in widths for p in pair):
        if mode != "constant":
            raise ValueError(f"pad: negative pads {pad!r} (cropping) need mode='constant', not {mode!r}")
        crop = tuple(slice(max(0, -b), n - max(0, -a)) for (b, a), n in zip(widths, x.shape))
        x = x[crop]
        widths = [(max(0, b), max(0, a)) for b, a in widths]
    for axis, ((before, after), n) in enumerate(zip(widths, x.shape)):
        if mode == "reflect" and (before or after) and max(before, after) >= n:
            raise ValueError(f"pad: reflect padding {(before, after)} of axis {axis} must be smaller than its size "
                             f"{n} (input {x.shape})")
        if mode == "replicate" and (before or after) and n == 0:
            raise ValueError(f"pad: replicate padding {(before, after)} of axis {axis} needs a number to repeat, "
                             f"but the axis is empty (input {x.shape})")
        if mode == "circular" and (before or after) and max(before, after) > n:
            raise ValueError(f"pad: circular padding {(before, after)} of axis {axis} must be at most its size "
                             f"{n} (input {x.shape})")
    if all(pair == (0, 0) for pair in widths):
        return x
    return ops_conv.Pad.apply(x, widths=tuple(widths), mode=mode, value=0.0 if value is None else value)
