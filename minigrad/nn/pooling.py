"""Pooling, with PyTorch's names and arguments: `max_pool1d`, `max_pool2d`, `avg_pool1d`, `avg_pool2d`,
`adaptive_avg_pool1d`, `adaptive_avg_pool2d`, `adaptive_max_pool1d`, `adaptive_max_pool2d`, and the
layers `MaxPool1d`, `MaxPool2d`, `AvgPool1d`, `AvgPool2d`, `AdaptiveAvgPool1d`, `AdaptiveAvgPool2d`,
`AdaptiveMaxPool1d`, `AdaptiveMaxPool2d`.

A pooling window slides over each channel on its own: (N, C, H, W) -> (N, C, OH, OW), with
OH = floor((H + 2 padding - dilation (k - 1) - 1) / stride) + 1 (ceil with ceil_mode), and stride
kernel_size unless given. The 1-d poolings are the 2-d ones on a height of 1.

Adaptive pooling is given the output size instead, and cuts each axis of n into `out` windows
that cover it, PyTorch's rule:

    window i = [floor(i n / out), ceil((i + 1) n / out))     (n = 5, out = 3: [0, 2), [1, 4), [3, 5))

so windows may differ in size by one and neighbours may share an input. The ops and their
gradients: ops_conv.MaxPool2d, AvgPool2d, AdaptiveMaxPool2d, Resample.
"""
import numbers

import numpy as np

from .. import ops_conv
from ..creation import as_tensor
from ..ops_conv import output_size
from .conv import _positive, _tuple
from .module import Module


def _pool_args(name, x, dims, kernel_size, stride, padding, dilation, ceil_mode):
    """(x with a batch axis, unbatched?, kernel, stride, padding, dilation, output size), checked."""
    x = as_tensor(x)
    if x.ndim not in (dims + 1, dims + 2):
        spatial = "L" if dims == 1 else "H, W"
        raise ValueError(f"{name}: expected input (N, C, {spatial}) or (C, {spatial}), got shape {x.shape}")
    if x.dtype.kind != "f":
        raise TypeError(f"{name}: expected a float input, got {x.dtype}")
    unbatched = x.ndim == dims + 1
    if unbatched:
        x = x.unsqueeze(0)
    kernel = _positive(_tuple(kernel_size, dims, name, "kernel_size"), name, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _positive(_tuple(stride, dims, name, "stride"), name, "stride")
    padding = _tuple(padding, dims, name, "padding")
    dilation = _positive(_tuple(dilation, dims, name, "dilation"), name, "dilation")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{name}: padding {padding} must be >= 0 and at most half the kernel size {kernel}")
    spatial = x.shape[2:]
    out = tuple(output_size(n, k, s, p, p, d, ceil_mode)
                for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if min(out) <= 0:
        raise ValueError(f"{name}: the window {kernel} (dilation {dilation}) does not fit the padded input: input "
                         f"{tuple(x.shape)}, padding {padding}, stride {stride} give an output of size {out}")
    return x, unbatched, kernel, stride, padding, dilation, out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """input (N, C, H, W) or (C, H, W) -> the max of each window; with return_indices also where each
    max sits, as an index h W + w into its (H, W) plane (int64, what max_unpool takes in PyTorch)."""
    x, unbatched, kernel, stride, padding, dilation, out = _pool_args(
        "max_pool2d", input, 2, kernel_size, stride, padding, dilation, ceil_mode)
    y, indices = ops_conv.MaxPool2d.apply(x, kernel_size=kernel, stride=stride, padding=padding,
                                          dilation=dilation, out_size=out)
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices.detach()) if return_indices else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """input (N, C, L) or (C, L) -> the max of each window (max_pool2d on a height of 1)."""
    x, unbatched, (k,), (s,), (p,), (d,), (o,) = _pool_args(
        "max_pool1d", input, 1, kernel_size, stride, padding, dilation, ceil_mode)
    y, indices = ops_conv.MaxPool2d.apply(x.unsqueeze(2), kernel_size=(1, k), stride=(1, s), padding=(0, p),
                                          dilation=(1, d), out_size=(1, o))
    y, indices = y.squeeze(2), indices.squeeze(2)  # (with height 1, h W + w is w)
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices.detach()) if return_indices else y


def _window_sizes(n, kernel, stride, padding, out, count_include_pad):
    """How many numbers each window along one axis averages: the window clipped to the padded input
    (count_include_pad) or to the input itself."""
    start = np.arange(out) * stride - padding
    end = np.minimum(start + kernel, n + padding)
    if not count_include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, n)
    return end - start


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """input (N, C, H, W) or (C, H, W) -> the mean of each window. count_include_pad: the padding's
    zeros count in the mean; divisor_override: divide every window's sum by this instead."""
    name = "avg_pool2d"
    x, unbatched, kernel, stride, padding, _, out = _pool_args(name, input, 2, kernel_size, stride, padding, 1,
                                                               ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{name}: divisor_override must not be 0")
        divisor = np.full(out, float(divisor_override))
    else:
        rows, cols = [_window_sizes(n, k, s, p, o, count_include_pad)
                      for n, k, s, p, o in zip(x.shape[2:], kernel, stride, padding, out)]
        divisor = np.outer(rows, cols).astype(np.float64)
    y = ops_conv.AvgPool2d.apply(x, kernel_size=kernel, stride=stride, padding=padding, out_size=out,
                                 divisor=divisor)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """input (N, C, L) or (C, L) -> the mean of each window (avg_pool2d on a height of 1)."""
    x, unbatched, (k,), (s,), (p,), _, (o,) = _pool_args("avg_pool1d", input, 1, kernel_size, stride, padding, 1,
                                                         ceil_mode)
    divisor = _window_sizes(x.shape[-1], k, s, p, o, count_include_pad).astype(np.float64).reshape(1, o)
    y = ops_conv.AvgPool2d.apply(x.unsqueeze(2), kernel_size=(1, k), stride=(1, s), padding=(0, p), out_size=(1, o),
                                 divisor=divisor).squeeze(2)
    return y.squeeze(0) if unbatched else y


# ---------------------------------------------------------------------------- adaptive pooling
def _adaptive_bounds(n, out):
    """PyTorch's `out` windows on an axis of n, ((start, end), ...):
    window i = [floor(i n / out), ceil((i + 1) n / out))."""
    return tuple(((i * n) // out, -(-((i + 1) * n) // out)) for i in range(out))


def _adaptive_windows(n, out, dtype):
    """(out, n): row i averages the window i of _adaptive_bounds, so that y = A x pools x's axis."""
    a = np.zeros((out, n), dtype=dtype)
    for i, (start, end) in enumerate(_adaptive_bounds(n, out)):
        a[i, start:end] = 1.0 / (end - start)
    return a


def _adaptive_args(name, input, dims, output_size):
    """(x, its output size along each of its `dims` last axes), checked: x is (N, C, *spatial) or
    (C, *spatial), float, with no empty axis but N; output_size an int (every axis) or a tuple of
    `dims` ints or None (None keeps that axis's size)."""
    x = as_tensor(input)
    spatial = "L" if dims == 1 else "H, W"
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{name}: expected input (N, C, {spatial}) or (C, {spatial}), got shape {x.shape}")
    if x.dtype.kind != "f":
        raise TypeError(f"{name}: expected a float input, got {x.dtype}")
    if min(x.shape[-dims - 1:]) < 1:
        raise ValueError(f"{name}: the input {x.shape} has an empty axis (only the batch axis N may be empty)")
    sizes = (output_size,) * dims if output_size is None or isinstance(output_size, numbers.Integral) \
        else tuple(output_size)
    if len(sizes) != dims or not all(s is None or isinstance(s, numbers.Integral) for s in sizes):
        raise ValueError(f"{name}: output_size must be an int or a tuple of {dims} ints (or None), got {output_size!r}")
    sizes = tuple(n if s is None else int(s) for s, n in zip(sizes, x.shape[-dims:]))
    if min(sizes) < 1:
        raise ValueError(f"{name}: output_size {sizes} must be positive (input {x.shape})")
    return x, sizes


def adaptive_avg_pool2d(input, output_size):
    """input (N, C, H, W) or (C, H, W) -> (N, C, OH, OW) for output_size (OH, OW) (an int for both;
    None keeps that axis): y[..., i, j] is the mean of x over rows window i and columns window j
    (see the module docstring). A bigger output than the input is allowed (windows then repeat inputs)."""
    x, sizes = _adaptive_args("adaptive_avg_pool2d", input, 2, output_size)
    if sizes == (1, 1):  # global average pooling (a ResNet's last layer): one mean over H and W
        return x.mean(axis=(-2, -1), keepdims=True)
    dtype = x.dtype
    return ops_conv.Resample.apply(x, rows=_adaptive_windows(x.shape[-2], sizes[0], dtype),
                                   cols=_adaptive_windows(x.shape[-1], sizes[1], dtype))


def adaptive_avg_pool1d(input, output_size):
    """input (N, C, L) or (C, L) -> (N, C, output_size): y[..., i] is the mean of x over window i."""
    x, (size,) = _adaptive_args("adaptive_avg_pool1d", input, 1, output_size)
    if size == 1:  # global average pooling: one mean over L
        return x.mean(axis=-1, keepdims=True)
    return ops_conv.Resample.apply(x, rows=None, cols=_adaptive_windows(x.shape[-1], size, x.dtype))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """input (N, C, H, W) or (C, H, W) -> (N, C, OH, OW): the max over rows window i and columns window
    j; with return_indices also where each max sits, as h W + w in its (H, W) plane (int64).
    When OH divides H and OW divides W, the windows are those of max_pool2d(kernel = stride = H / OH)."""
    x, (oh, ow) = _adaptive_args("adaptive_max_pool2d", input, 2, output_size)
    unbatched = x.ndim == 3
    if unbatched:
        x = x.unsqueeze(0)
    h, w = x.shape[-2:]
    if h % oh == 0 and w % ow == 0:  # windows of one size that tile the input: max pooling's kernel
        kernel = (h // oh, w // ow)
        y, indices = ops_conv.MaxPool2d.apply(x, kernel_size=kernel, stride=kernel, padding=(0, 0),
                                              dilation=(1, 1), out_size=(oh, ow))
    else:
        y, indices = ops_conv.AdaptiveMaxPool2d.apply(x, rows=_adaptive_bounds(h, oh), cols=_adaptive_bounds(w, ow))
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices.detach()) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """input (N, C, L) or (C, L) -> (N, C, output_size): the max over window i (adaptive_max_pool2d on
    a height of 1); with return_indices also the position of each max along L (int64)."""
    x, (size,) = _adaptive_args("adaptive_max_pool1d", input, 1, output_size)
    y, indices = adaptive_max_pool2d(x.unsqueeze(-2), (1, size), return_indices=True)
    y, indices = y.squeeze(-2), indices.squeeze(-2)  # (with height 1, h W + w is w)
    return (y, indices) if return_indices else y


# ============================================================================ layers
class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, **more):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        for key, value in more.items():
            setattr(self, key, value)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_Pool):
    """The max of each window: (N, C, H, W) -> (N, C, OH, OW); see max_pool2d."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, padding, dilation, ceil_mode, return_indices=return_indices)

    def forward(self, x):
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class MaxPool1d(_Pool):
    """The max of each window: (N, C, L) -> (N, C, OL); see max_pool1d."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, padding, dilation, ceil_mode, return_indices=return_indices)

    def forward(self, x):
        return max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class AvgPool2d(_Pool):
    """The mean of each window: (N, C, H, W) -> (N, C, OH, OW); see avg_pool2d."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, padding, 1, ceil_mode, count_include_pad=count_include_pad,
                         divisor_override=divisor_override)

    def forward(self, x):
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_Pool):
    """The mean of each window: (N, C, L) -> (N, C, OL); see avg_pool1d. As PyTorch's, it keeps its
    sizes as 1-tuples: AvgPool1d(3).kernel_size == (3,)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        one = "AvgPool1d"
        kernel_size = _tuple(kernel_size, 1, one, "kernel_size")
        stride = kernel_size if stride is None else _tuple(stride, 1, one, "stride")
        super().__init__(kernel_size, stride, _tuple(padding, 1, one, "padding"), 1, ceil_mode,
                         count_include_pad=count_include_pad)

    def forward(self, x):
        return avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    def __init__(self, output_size, **more):
        super().__init__()
        self.output_size = output_size
        for key, value in more.items():
            setattr(self, key, value)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool):
    """The mean over windows that tile the input into output_size cells: (N, C, H, W) -> (N, C, *output_size)."""

    def forward(self, x):
        return adaptive_avg_pool2d(x, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePool):
    """The mean over output_size windows that tile L: (N, C, L) -> (N, C, output_size)."""

    def forward(self, x):
        return adaptive_avg_pool1d(x, self.output_size)


class AdaptiveMaxPool2d(_AdaptivePool):
    """The max over windows that tile the input into output_size cells: (N, C, H, W) -> (N, C, *output_size)
    (and the indices of the maxima with return_indices=True)."""

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size, return_indices=return_indices)

    def forward(self, x):
        return adaptive_max_pool2d(x, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptivePool):
    """The max over output_size windows that tile L: (N, C, L) -> (N, C, output_size)."""

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size, return_indices=return_indices)

    def forward(self, x):
        return adaptive_max_pool1d(x, self.output_size, self.return_indices)


__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]
