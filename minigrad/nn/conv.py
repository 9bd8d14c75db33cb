"""Convolutions, with PyTorch's names and arguments: `conv1d`, `conv2d`, `conv_transpose2d`, `unfold`,
`fold`, and the layers `Conv1d`, `Conv2d`, `ConvTranspose2d`.

Shapes: x (N, C_in, H, W) -> (N, C_out, OH, OW) with OH = floor((H + pads - dilation (k - 1) - 1) / stride) + 1.
A 1-D convolution is the 2-D one on an image of height 1. The ops and their gradients are in
minigrad/ops_conv.py; this file turns the arguments PyTorch accepts (an int or a pair, 'same',
'valid', an unbatched input) into the pairs of ints those ops take.
"""
import math
import numbers

import numpy as np

from .. import devices, ops_conv
from ..creation import as_tensor
from ..ops_conv import output_size
from ..tensor import Tensor, default_float
from . import init
from .module import Module, Parameter


def _tuple(value, n, name, what):
    """`value` (an int, or a sequence of n ints) as a tuple of n ints."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        values = tuple(value)
    except TypeError:
        values = None
    if values is None or len(values) != n or not all(isinstance(v, numbers.Integral) for v in values):
        raise ValueError(f"{name}: {what} must be an int or a tuple of {n} ints, got {value!r}")
    return tuple(int(v) for v in values)


def _positive(values, name, what):
    if min(values) < 1:
        raise ValueError(f"{name}: {what} must be positive, got {values}")
    return values


def _input(x, weight, name, dims):
    """x as a Tensor in the weight's dtype, with a batch axis; and whether one was added."""
    if not isinstance(x, Tensor):
        x = Tensor(x, dtype=None if isinstance(x, np.ndarray) else weight.dtype)
    if x.dtype != weight.dtype:
        raise TypeError(f"{name}: input is {x.dtype} but the weight is {weight.dtype}; convert one (model.to(dtype))")
    if x.ndim == dims + 1:  # unbatched (C, *spatial), as PyTorch accepts
        return x.unsqueeze(0), True
    return x, False


def conv_padding(padding, kernel, stride, dilation, name):
    """PyTorch's padding argument -> one (before, after) pair per spatial axis.
    'same': as much as keeps the size, dilation (k - 1) in all, the odd one after (PyTorch's choice)."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding != "same":
            raise ValueError(f"{name}: padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
        if any(s != 1 for s in stride):
            raise ValueError(f"{name}: padding='same' is not supported for strided convolutions (stride {stride})")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in totals]
    pads = _tuple(padding, n, name, "padding")
    if min(pads) < 0:
        raise ValueError(f"{name}: padding must be >= 0, got {pads}")
    return [(p, p) for p in pads]


def _bias_of(bias, weight):
    if bias is None or isinstance(bias, Tensor):
        return bias
    return Tensor(bias, dtype=weight.dtype)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input (N, C_in, H, W) or (C_in, H, W), weight (C_out, C_in / groups, kh, kw), bias (C_out,)
    -> (N, C_out, OH, OW). stride, dilation: an int or (sh, sw); padding: an int, (ph, pw), 'same'
    or 'valid'; groups: the channels split into this many groups that do not mix."""
    weight, name = as_tensor(weight), "conv2d"
    x, unbatched = _input(input, weight, name, 2)
    bias = _bias_of(bias, weight)
    ops_conv.check_conv(name, x.shape, weight.shape, groups, bias)
    kernel = weight.shape[2:]
    stride = _positive(_tuple(stride, 2, name, "stride"), name, "stride")
    dilation = _positive(_tuple(dilation, 2, name, "dilation"), name, "dilation")
    (top, bottom), (left, right) = conv_padding(padding, kernel, stride, dilation, name)
    ops_conv.conv_output_hw(name, x.shape, kernel, stride, (top, bottom, left, right), dilation)
    args = (x, weight) if bias is None else (x, weight, bias)
    y = ops_conv.Conv2d.apply(*args, stride=stride, padding=(top, bottom, left, right), dilation=dilation,
                              groups=groups)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input (N, C_in, L) or (C_in, L), weight (C_out, C_in / groups, k), bias (C_out,) -> (N, C_out, OL):
    conv2d on images of height 1."""
    weight, name = as_tensor(weight), "conv1d"
    x, unbatched = _input(input, weight, name, 1)
    bias = _bias_of(bias, weight)
    ops_conv.check_conv(name, x.shape, weight.shape, groups, bias, dims=1)
    (stride,) = _positive(_tuple(stride, 1, name, "stride"), name, "stride")
    (dilation,) = _positive(_tuple(dilation, 1, name, "dilation"), name, "dilation")
    ((before, after),) = conv_padding(padding, weight.shape[2:], (stride,), (dilation,), name)
    if output_size(x.shape[2], weight.shape[2], stride, before, after, dilation) <= 0:
        raise ValueError(f"{name}: the kernel {weight.shape[2]} (spanning {dilation * (weight.shape[2] - 1) + 1} "
                         f"with dilation {dilation}) is larger than the padded input {x.shape[2] + before + after} "
                         f"(input {x.shape}, padding {(before, after)})")
    args = (x.unsqueeze(2), weight.unsqueeze(2)) + (() if bias is None else (bias,))
    y = ops_conv.Conv2d.apply(*args, stride=(1, stride), padding=(0, 0, before, after), dilation=(1, dilation),
                              groups=groups).squeeze(2)
    return y.squeeze(0) if unbatched else y


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kh, kw), bias (C_out,)
    -> (N, C_out, OH, OW), OH = (H - 1) stride - 2 padding + dilation (kh - 1) + output_padding + 1:
    the gradient of conv2d with respect to its input, as a layer that upsamples."""
    weight, name = as_tensor(weight), "conv_transpose2d"
    x, unbatched = _input(input, weight, name, 2)
    bias = _bias_of(bias, weight)
    stride = _positive(_tuple(stride, 2, name, "stride"), name, "stride")
    dilation = _positive(_tuple(dilation, 2, name, "dilation"), name, "dilation")
    padding = _tuple(padding, 2, name, "padding")
    output_padding = _tuple(output_padding, 2, name, "output_padding")
    if min(padding) < 0:
        raise ValueError(f"{name}: padding must be >= 0, got {padding}")
    args = (x, weight) if bias is None else (x, weight, bias)
    y = ops_conv.ConvTranspose2d.apply(*args, stride=stride, padding=padding, output_padding=output_padding,
                                       dilation=dilation, groups=groups)
    return y.squeeze(0) if unbatched else y


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """input (N, C, H, W) -> (N, C kh kw, L): every window of the input as a column (im2col);
    L = OH OW windows, in rows of OW."""
    name = "unfold"
    kernel = _positive(_tuple(kernel_size, 2, name, "kernel_size"), name, "kernel_size")
    return ops_conv.Unfold.apply(as_tensor(input), kernel_size=kernel,
                                 dilation=_positive(_tuple(dilation, 2, name, "dilation"), name, "dilation"),
                                 padding=_tuple(padding, 2, name, "padding"),
                                 stride=_positive(_tuple(stride, 2, name, "stride"), name, "stride"))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """input (N, C kh kw, L) -> (N, C, H, W) with (H, W) = output_size: each column added into its
    window, overlapping windows summed (col2im, the adjoint of unfold)."""
    name = "fold"
    kernel = _positive(_tuple(kernel_size, 2, name, "kernel_size"), name, "kernel_size")
    return ops_conv.Fold.apply(as_tensor(input), output_size=_tuple(output_size, 2, name, "output_size"),
                               kernel_size=kernel,
                               dilation=_positive(_tuple(dilation, 2, name, "dilation"), name, "dilation"),
                               padding=_tuple(padding, 2, name, "padding"),
                               stride=_positive(_tuple(stride, 2, name, "stride"), name, "stride"))


# ============================================================================ layers
class _ConvNd(Module):
    """What the convolution layers share: PyTorch's arguments and initialisation.

    weight and bias start from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = weight.shape[1] * kernel
    area: PyTorch's kaiming_uniform_ with a = sqrt(5), i.e. gain sqrt(1/3) times sqrt(3 / fan_in)."""

    dims = 2
    transposed = False
    PADDING_MODES = ("zeros", "reflect", "replicate", "circular")

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", output_padding=0, dtype=None, device=None):
        super().__init__()
        name = type(self).__name__
        devices.check_device(device, name)
        dtype = default_float() if dtype is None else dtype
        n = self.dims
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels={in_channels} and "
                             f"out_channels={out_channels}")
        if padding_mode not in self.PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {self.PADDING_MODES}, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _positive(_tuple(kernel_size, n, name, "kernel_size"), name, "kernel_size")
        self.stride = _positive(_tuple(stride, n, name, "stride"), name, "stride")
        self.dilation = _positive(_tuple(dilation, n, name, "dilation"), name, "dilation")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n, name, "padding")
        self.output_padding = _tuple(output_padding, n, name, "output_padding")
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            conv_padding(padding, self.kernel_size, self.stride, self.dilation, name)  # (checks it now)
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        fan_in = shape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = init.uniform_(Parameter(np.empty(shape, dtype=dtype)), -bound, bound)
        self.bias = init.uniform_(Parameter(np.empty(out_channels, dtype=dtype)), -bound, bound) if bias else None

    def _padded(self, x):
        """For padding_mode other than 'zeros': x padded by F.pad, and the conv's padding then 0."""
        if self.padding_mode == "zeros":
            return x, self.padding
        from .padding import pad

        pairs = conv_padding(self.padding, self.kernel_size, self.stride, self.dilation, type(self).__name__)
        widths = [p for pair in reversed(pairs) for p in pair]  # last axis first, as F.pad takes them
        return pad(x, widths, mode=self.padding_mode), 0

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.dims:
            s += f", padding={self.padding!r}"
        if self.transposed and self.output_padding != (0,) * self.dims:
            s += f", output_padding={self.output_padding}"
        if self.dilation != (1,) * self.dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        return s


class Conv2d(_ConvNd):
    """A 2-D convolution layer: x (N, in_channels, H, W) -> (N, out_channels, OH, OW).
    weight (out_channels, in_channels / groups, kh, kw), bias (out_channels,)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        x, padding = self._padded(x)
        return conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """A 1-D convolution layer: x (N, in_channels, L) -> (N, out_channels, OL).
    weight (out_channels, in_channels / groups, k), bias (out_channels,)."""

    dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        x, padding = self._padded(x)
        return conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """A transposed 2-D convolution (the gradient of Conv2d as a layer; it upsamples with stride > 1):
    x (N, in_channels, H, W) -> (N, out_channels, OH, OW), OH = (H - 1) stride - 2 padding +
    dilation (k - 1) + output_padding + 1. weight (in_channels, out_channels / groups, kh, kw)."""

    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", dtype=None, device=None):
        if padding_mode != "zeros" or isinstance(padding, str):
            raise ValueError(f"ConvTranspose2d: only padding_mode='zeros' and int or tuple padding are supported, "
                             f"got padding_mode={padding_mode!r}, padding={padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding=output_padding, dtype=dtype, device=device)

    def forward(self, x):
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                self.groups, self.dilation)
