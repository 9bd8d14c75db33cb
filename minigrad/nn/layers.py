"""Layers with PyTorch's names and parameter names (`weight`, `bias`)."""
import math
import numbers

import numpy as np

from .. import devices
from ..tensor import default_float
from . import functional as F
from . import init
from .module import Module, Parameter


class Linear(Module):
    """y = x W^T + b.   x (..., in_features) -> y (..., out_features)

    weight (out_features, in_features) and bias (out_features,) start from
    U(-1/sqrt(in_features), 1/sqrt(in_features)), PyTorch's default."""

    def __init__(self, in_features, out_features, bias=True, dtype=None, device=None):
        super().__init__()
        devices.check_device(device, "Linear")
        dtype = default_float() if dtype is None else dtype
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = init.uniform_(Parameter(np.empty((out_features, in_features), dtype=dtype)), -bound, bound)
        self.bias = init.uniform_(Parameter(np.empty(out_features, dtype=dtype)), -bound, bound) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class LayerNorm(Module):
    """Normalize each vector over its last axes, then y = xhat * weight + bias.
    weight starts at 1, bias at 0."""

    def __init__(self, normalized_shape, eps=1e-5, dtype=None, device=None):
        super().__init__()
        devices.check_device(device, "LayerNorm")
        dtype = default_float() if dtype is None else dtype
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype))
        self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dtype))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`; ids (...) -> (..., dim).
    weight starts from N(0, 1), PyTorch's default. `padding_idx` (as PyTorch's): that row starts
    at zeros and gets no gradient, so a padding token's vector stays zero while the rest learn."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None, device=None):
        super().__init__()
        devices.check_device(device, "Embedding")
        dtype = default_float() if dtype is None else dtype
        if padding_idx is not None:
            if not isinstance(padding_idx, numbers.Integral) or not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be an integer in [-{num_embeddings}, {num_embeddings}) "
                                 f"for a table of {num_embeddings} rows, got {padding_idx!r}")
            padding_idx = int(padding_idx) % num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = init.normal_(Parameter(np.empty((num_embeddings, embedding_dim), dtype=dtype)))
        if padding_idx is not None:
            self.weight.numpy()[padding_idx] = 0

    def forward(self, ids):
        return F.embedding(ids, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


class _DropoutNd(Module):
    """What the dropout layers share: p, the generator of the masks, and the identity in eval()."""

    def __init__(self, p=0.5, inplace=False, *, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace  # inplace=True: the result is written into the input (F.dropout)
        self.generator = generator  # a minigrad.Generator for the masks; None: the default one

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p while training (scaling the rest by 1/(1-p))."""

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace, generator=self.generator)


class Dropout1d(_DropoutNd):
    """Zero whole channels with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, L) or (C, L); see F.dropout1d."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace, generator=self.generator)


class Dropout2d(_DropoutNd):
    """Zero whole feature maps with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, H, W); see F.dropout2d (and what it does with a 3-D input, as PyTorch)."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace, generator=self.generator)


class Dropout3d(_DropoutNd):
    """Zero whole channels with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, D, H, W) or (C, D, H, W); see F.dropout3d."""

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.inplace, generator=self.generator)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r), r = upscale_factor; see F.pixel_shuffle."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W), r = downscale_factor; see F.pixel_unshuffle."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Identity(Module):
    def forward(self, x):
        return x


class Flatten(Module):
    """Flatten dims start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) with the defaults
    (start_dim=1: the batch axis stays)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return F.as_tensor(x).flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size`, the inverse of Flatten: Unflatten(1, (C, H, W))
    turns (N, C*H*W) into (N, C, H, W). One size may be -1 (worked out from the others)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        x = F.as_tensor(x)
        if not -x.ndim <= self.dim < x.ndim:
            raise ValueError(f"Unflatten: dim {self.dim} is out of range for an input of shape {x.shape}")
        dim = self.dim % x.ndim
        sizes = self.unflattened_size
        known = math.prod(n for n in sizes if n != -1)
        n = x.shape[dim]
        if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise ValueError(f"Unflatten: cannot split dim {self.dim} of size {n} (input {x.shape}) into "
                             f"{sizes}: their product must be {n}")
        return x.reshape(x.shape[:dim] + sizes + x.shape[dim + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """y_k = x1^T A_k x2 + b_k.   x1 (..., in1_features), x2 (..., in2_features) -> y (..., out_features)

    weight A (out_features, in1_features, in2_features) and bias (out_features,) start from
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)), PyTorch's default."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "Bilinear")
        dtype = default_float() if dtype is None else dtype
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        bound = 1.0 / math.sqrt(in1_features) if in1_features > 0 else 0.0
        shape = (out_features, in1_features, in2_features)
        self.weight = init.uniform_(Parameter(np.empty(shape, dtype=dtype)), -bound, bound)
        self.bias = init.uniform_(Parameter(np.empty(out_features, dtype=dtype)), -bound, bound) if bias else None

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Unfold(Module):
    """(N, C, H, W) -> (N, C kh kw, L): every sliding window as a column (im2col); see F.unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """(N, C kh kw, L) -> (N, C, H, W), (H, W) = output_size: each column added into its window,
    overlaps summed (col2im, the adjoint of Unfold); see F.fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class ChannelShuffle(Module):
    """(N, C, *) with the channels of its `groups` groups interleaved (ShuffleNet); see F.channel_shuffle."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
