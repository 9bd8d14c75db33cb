"""`pad`, with PyTorch's argument order: the pads of the LAST axis first.

    pad(x, (1, 2))          last axis: 1 before, 2 after
    pad(x, (1, 2, 3, 4))    last axis 1 and 2, the one before it 3 and 4

Modes: 'constant' (`value`, default 0; negative pads crop), 'reflect' (mirrored about the edge,
which is not repeated: [1 2 3] -> 3 2 [1 2 3] 2 1), 'replicate' (the edge repeated: 1 1 [1 2 3] 3 3)
and 'circular' (wrapped around: 2 3 [1 2 3] 1 2). Every mode pads any number of trailing axes
(PyTorch's non-constant modes take only the last 1 to 3 axes of a 2-D to 5-D input, and give the
same numbers there). The op and its gradient: ops_conv.Pad.

The layers, one per mode and number of padded axes d = 1, 2, 3, as torch.nn: `ZeroPad{d}d`,
`ConstantPad{d}d(padding, value)`, `ReflectionPad{d}d`, `ReplicationPad{d}d`, `CircularPad{d}d`.
`padding` is an int (the same on every side) or 2 d ints in pad's order:

    ReflectionPad2d((left, right, top, bottom))     (N, C, H, W) -> (N, C, H + top + bottom, W + left + right)

The non-constant layers take (N, C, *d axes) or (C, *d axes), as PyTorch's; the constant ones any
input with at least d axes.
"""
import numbers

from .. import ops_conv
from ..creation import as_tensor
from .module import Module

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


# ============================================================================ layers
class _PadNd(Module):
    """pad(x, self.padding, self.mode, value) over the last `dims` axes (dims, mode: set by each layer)."""
    dims, mode, value = 1, "constant", None

    def __init__(self, padding, value=None):
        super().__init__()
        name, n, given = type(self).__name__, 2 * self.dims, padding
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * n
        try:
            padding = tuple(padding)
        except TypeError:
            padding = None
        if padding is None or len(padding) != n or not all(isinstance(p, numbers.Integral) for p in padding):
            raise ValueError(f"{name}: padding must be an int or a tuple of {n} ints (before and after each of the "
                             f"last {self.dims} axes, the last axis first), got {given!r}")
        self.padding = tuple(int(p) for p in padding)
        if value is not None:
            self.value = value

    def forward(self, x):
        x = as_tensor(x)
        if self.mode != "constant" and x.ndim not in (self.dims + 1, self.dims + 2):
            axes = ("L",) if self.dims == 1 else ("H", "W") if self.dims == 2 else ("D", "H", "W")
            raise ValueError(f"{type(self).__name__}: expected input (N, C, {', '.join(axes)}) or "
                             f"(C, {', '.join(axes)}), got shape {x.shape}")
        return pad(x, self.padding, self.mode, self.value)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad1d(_ConstantPadNd):
    """The last axis padded with `value`: (..., L) -> (..., L + left + right)."""
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """The last two axes padded with `value`: (..., H, W) -> (..., H + top + bottom, W + left + right)."""
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """The last three axes padded with `value`."""
    dims = 3


class ZeroPad1d(_ZeroPadNd):
    """The last axis padded with zeros."""
    dims = 1


class ZeroPad2d(_ZeroPadNd):
    """The last two axes padded with zeros: (..., H, W) -> (..., H + top + bottom, W + left + right)."""
    dims = 2


class ZeroPad3d(_ZeroPadNd):
    """The last three axes padded with zeros."""
    dims = 3


class ReflectionPad1d(_PadNd):
    """(N, C, L) mirrored about its edges (not repeated): [1 2 3] with 2 -> 3 2 [1 2 3] 2 1."""
    dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """(N, C, H, W) mirrored about its edges, rows and columns; each pad must be smaller than its axis."""
    dims, mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """(N, C, D, H, W) mirrored about its edges."""
    dims, mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """(N, C, L) with its edge numbers repeated: [1 2 3] with 2 -> 1 1 [1 2 3] 3 3."""
    dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """(N, C, H, W) with its edge rows and columns repeated."""
    dims, mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """(N, C, D, H, W) with its edges repeated."""
    dims, mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """(N, C, L) wrapped around: [1 2 3] with 2 -> 2 3 [1 2 3] 1 2."""
    dims, mode = 1, "circular"


class CircularPad2d(_PadNd):
    """(N, C, H, W) wrapped around, rows and columns."""
    dims, mode = 2, "circular"


class CircularPad3d(_PadNd):
    """(N, C, D, H, W) wrapped around."""
    dims, mode = 3, "circular"


__all__ = ["pad", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]
