"""Layers with PyTorch's names and parameter names (`weight`, `bias`)."""
import math

import numpy as np

from .. import devices
from . import functional as F
from . import init
from .module import Module, Parameter


class Linear(Module):
    """y = x W^T + b.   x (..., in_features) -> y (..., out_features)

    weight (out_features, in_features) and bias (out_features,) start from
    U(-1/sqrt(in_features), 1/sqrt(in_features)), PyTorch's default."""

    def __init__(self, in_features, out_features, bias=True, dtype=np.float32, device=None):
        super().__init__()
        devices.check_device(device, "Linear")
        dtype = np.float32 if dtype is None else dtype
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

    def __init__(self, normalized_shape, eps=1e-5, dtype=np.float32, device=None):
        super().__init__()
        devices.check_device(device, "LayerNorm")
        dtype = np.float32 if dtype is None else dtype
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
    weight starts from N(0, 1), PyTorch's default."""

    def __init__(self, num_embeddings, embedding_dim, dtype=np.float32, device=None):
        super().__init__()
        devices.check_device(device, "Embedding")
        dtype = np.float32 if dtype is None else dtype
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = init.normal_(Parameter(np.empty((num_embeddings, embedding_dim), dtype=dtype)))

    def forward(self, ids):
        return F.embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Module):
    """Zero each element with probability p while training (scaling the rest by 1/(1-p))."""

    def __init__(self, p=0.5, *, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.generator = generator  # a minigrad.Generator for the masks; None: the default one

    def forward(self, x):
        return F.dropout(x, self.p, self.training, generator=self.generator)

    def extra_repr(self):
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x):
        return x.relu()


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return x.gelu(self.approximate)


class SiLU(Module):
    def forward(self, x):
        return x.silu()


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return x.leaky_relu(self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return x.softplus(self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return x.elu(self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


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


# ---------------------------------------------------------------------- losses as modules
class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """(input - target)^2, averaged ('mean'), summed ('sum') or per element ('none')."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy as a module: logits (..., C) with the class axis last (for (N, C) logits,
    PyTorch's layout too), targets as class ids (...) or probabilities (..., C)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: per-class weights (weight=) are not supported")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                               reduction=self.reduction)
