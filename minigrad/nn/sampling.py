"""`interpolate` and the layer `Upsample`: resizing (N, C, L) or (N, C, H, W) by `size` or `scale_factor`.

Each output position o of an axis of n inputs reads a source position src(o):

- 'nearest': x[min(floor(o * scale), n - 1)], scale = n / out (or 1 / scale_factor when given),
  except that out = 2 n repeats each input twice (as PyTorch does);
- 'linear' / 'bilinear': a blend of the two neighbours of src, weights 1 - t and t, t = src - floor(src):
  align_corners=True:  src = o (n - 1) / (out - 1), the corner pixels' centres meet;
  align_corners=False: src = (o + 1/2) scale - 1/2 (at least 0), the pixels' areas meet (PyTorch's default).

An axis that keeps its size (out = n) is copied, in every mode, whatever the scale factor (as in
PyTorch, where 2 * 1.3 rounds down to 2).

Both are a fixed matrix per axis, A (out, n), so the op is y = A x B^T (ops_conv.Resample), whose
gradient is A^T g B: each input gets back the share it gave to every output.
"""
import math
import numbers

import numpy as np

from .. import ops_conv
from ..creation import as_tensor
from .module import Module

MODES = {1: ("nearest", "linear"), 2: ("nearest", "bilinear")}


def _scale(n, out, scale_factor):
    return 1.0 / scale_factor if scale_factor is not None else n / out


def _nearest_matrix(n, out, scale_factor, dtype):
    if out == n:  # PyTorch's two exact cases, whatever the scale factor: a copy, and each input twice
        src = np.arange(out)
    elif out == 2 * n:
        src = np.arange(out) // 2
    else:  # PyTorch computes the source index in float32: floor(o * scale) rounds as it does
        scale = np.float32(_scale(n, out, scale_factor))
        src = np.minimum(np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64), n - 1)
    a = np.zeros((out, n), dtype=dtype)
    a[np.arange(out), src] = 1
    return a


def _linear_matrix(n, out, scale_factor, align_corners, dtype):
    if out == n:  # PyTorch copies an axis that keeps its size, whatever the scale factor
        return np.eye(n, dtype=dtype)
    o = np.arange(out, dtype=np.float64)
    if align_corners:
        src = o * ((n - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        src = np.maximum((o + 0.5) * _scale(n, out, scale_factor) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    t = src - i0
    a = np.zeros((out, n), dtype=np.float64)
    np.add.at(a, (np.arange(out), i0), 1 - t)
    np.add.at(a, (np.arange(out), i1), t)
    return a.astype(dtype)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """input (N, C, L) or (N, C, H, W) resized to `size` (an int or one per axis) or by `scale_factor`
    (output size floor(n * scale_factor)); mode 'nearest', 'linear' (3-D) or 'bilinear' (4-D)."""
    name = "interpolate"
    x = as_tensor(input)
    dims = x.ndim - 2
    if dims not in MODES or x.dtype.kind != "f":
        raise ValueError(f"{name}: expected a float input (N, C, L) or (N, C, H, W), got {x.shape} {x.dtype}")
    if mode not in MODES[dims]:
        raise ValueError(f"{name}: mode {mode!r} is not available for a {x.ndim}-D input {x.shape}; "
                         f"choose from {MODES[dims]}")
    if align_corners is not None and mode == "nearest":
        raise ValueError(f"{name}: align_corners can only be set with the interpolating modes (linear, bilinear)")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{name}: give exactly one of size and scale_factor")
    spatial = x.shape[2:]
    if size is not None:
        sizes = (size,) * dims if isinstance(size, numbers.Integral) else tuple(size)
        scales = (None,) * dims
    else:
        scales = (scale_factor,) * dims if isinstance(scale_factor, numbers.Real) else tuple(scale_factor)
        if len(scales) == dims:
            sizes = tuple(math.floor(n * float(s)) for n, s in zip(spatial, scales))
        else:
            sizes = ()
        if recompute_scale_factor:
            scales = (None,) * dims
    if len(sizes) != dims or min(sizes, default=0) < 1 or min(spatial) < 1:
        raise ValueError(f"{name}: input {x.shape} with size={size!r}, scale_factor={scale_factor!r} gives output "
                         f"size {sizes}; expected {dims} positive sizes")
    matrices = [_nearest_matrix(n, o, s, x.dtype) if mode == "nearest" else
                _linear_matrix(n, o, s, bool(align_corners), x.dtype)
                for n, o, s in zip(spatial, sizes, scales)]
    rows, cols = (None, matrices[0]) if dims == 1 else matrices
    return ops_conv.Resample.apply(x, rows=rows, cols=cols)


class Upsample(Module):
    """Resize by `size` or `scale_factor`; see interpolate."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, x):
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"
