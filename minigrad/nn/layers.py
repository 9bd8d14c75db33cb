"""Layers with PyTorch's names and parameter names (`weight`, `bias`)."""
import math
import numbers

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
    weight starts from N(0, 1), PyTorch's default. `padding_idx` (as PyTorch's): that row starts
    at zeros and gets no gradient, so a padding token's vector stays zero while the rest learn."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=np.float32, device=None):
        super().__init__()
        devices.check_device(device, "Embedding")
        dtype = np.float32 if dtype is None else dtype
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

    def __init__(self, p=0.5, *, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p = p
        self.generator = generator  # a minigrad.Generator for the masks; None: the default one

    def extra_repr(self):
        return f"p={self.p}"


class Dropout(_DropoutNd):
    """Zero each element with probability p while training (scaling the rest by 1/(1-p))."""

    def forward(self, x):
        return F.dropout(x, self.p, self.training, generator=self.generator)


class Dropout1d(_DropoutNd):
    """Zero whole channels with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, L) or (C, L); see F.dropout1d."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, generator=self.generator)


class Dropout2d(_DropoutNd):
    """Zero whole feature maps with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, H, W); see F.dropout2d (and what it does with a 3-D input, as PyTorch)."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, generator=self.generator)


class Dropout3d(_DropoutNd):
    """Zero whole channels with probability p while training (scaling the rest by 1/(1-p)):
    (N, C, D, H, W) or (C, D, H, W); see F.dropout3d."""

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, generator=self.generator)


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


class ReLU6(Module):
    """min(max(x, 0), 6)."""

    def forward(self, x):
        return F.relu6(x)


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not be larger than max_val ({max_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class LogSigmoid(Module):
    """log sigmoid(x) = -log(1 + e^-x), computed stably."""

    def forward(self, x):
        return F.logsigmoid(x)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def forward(self, x):
        return F.mish(x)


class SELU(Module):
    """scale * elu(x, alpha), with SELU's fixed scale and alpha."""

    def forward(self, x):
        return F.selu(x)


class PReLU(Module):
    """x where x > 0, a * x elsewhere, with the slope a learned: one for all (num_parameters=1) or one
    per channel (num_parameters = C, the input's dim 1). weight (num_parameters,) starts at `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "PReLU")
        dtype = np.float32 if dtype is None else dtype
        self.num_parameters = num_parameters
        self.weight = Parameter(np.full(num_parameters, init, dtype=dtype))

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxLike(Module):
    """Softmax, LogSoftmax and Softmin: dim=None takes PyTorch's implicit (deprecated) choice, with a
    warning; pass the dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def _dim(self, x):
        if self.dim is not None:
            return self.dim
        return F._implicit_dim(type(self).__name__, F.as_tensor(x).ndim, stacklevel=5)  # (the caller of model(x))

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxLike):
    """softmax along `dim`: e^x_i / sum_j e^x_j, each slice sums to 1."""

    def forward(self, x):
        return F.softmax(x, dim=self._dim(x))


class LogSoftmax(_SoftmaxLike):
    """log softmax along `dim` (for NLLLoss), computed stably: x_i - logsumexp(x)."""

    def forward(self, x):
        return F.log_softmax(x, dim=self._dim(x))


class Softmin(_SoftmaxLike):
    """softmax(-x) along `dim`."""

    def forward(self, x):
        return F.softmin(x, dim=self._dim(x))


class CosineSimilarity(Module):
    """x1 . x2 / (max(||x1||, eps) max(||x2||, eps)) along `dim`, which the result drops."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self):
        return f"dim={self.dim}, eps={self.eps}"


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
    _reductions = ("mean", "sum", "none")

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in self._reductions:
            allowed = ", ".join(repr(r) for r in self._reductions[:-1]) + f" or {self._reductions[-1]!r}"
            raise ValueError(f"{type(self).__name__}: reduction must be {allowed}, got {reduction!r}")
        self.reduction = reduction

    def _register_weight(self, name, weight):
        """A weight given to the loss is a buffer, as in PyTorch: in the state_dict, and converted by .to()."""
        self.register_buffer(name, None if weight is None else F.as_tensor(weight))

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


class L1Loss(_Loss):
    """|input - target|, averaged ('mean'), summed ('sum') or per element ('none')."""

    def __init__(self, *, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target)."""

    def __init__(self, *, reduction="mean", beta=1.0):
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    def extra_repr(self):
        return f"reduction={self.reduction!r}, beta={self.beta}"


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (d = input - target)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        if not delta > 0:
            raise ValueError(f"HuberLoss: delta must be > 0, got {delta}")
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)

    def extra_repr(self):
        return f"reduction={self.reduction!r}, delta={self.delta}"


class KLDivLoss(_Loss):
    """F.kl_div as a module: input log-probabilities, target probabilities (or log-probabilities with
    log_target=True). reduction='batchmean' gives the KL divergence per sample."""

    _reductions = ("mean", "batchmean", "sum", "none")

    def __init__(self, *, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss(_Loss):
    """F.nll_loss as a module: log-probabilities (..., C) (from LogSoftmax; class axis last, as
    CrossEntropyLoss here) and integer targets (...). LogSoftmax then NLLLoss is CrossEntropyLoss.
    weight (C,): a weight per class (a buffer)."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.ignore_index = ignore_index
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (after a sigmoid) against targets in [0, 1], the same
    shape. weight: multiplies each element's loss (a buffer)."""

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.reduction, weight=self.weight)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits (no sigmoid before it: this is stabler), against targets in
    [0, 1] of the same shape. weight: multiplies each element's loss; pos_weight (e.g. (C,)): the
    weight of the positive term of each class. Both are buffers."""

    def __init__(self, weight=None, *, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self._register_weight("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.reduction, weight=self.weight,
                                                  pos_weight=self.pos_weight)
