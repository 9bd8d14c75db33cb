"""Stateless layer functions: the math of each layer, without its parameters.

Shapes use B = batch, T = sequence length, C or D = features, V = classes (vocabulary)."""
import numbers

import numpy as np

from .. import ops
from ..creation import as_tensor, dropout, embedding  # noqa: F401  (re-exported)
from ..tensor import Tensor


def linear(x, weight, bias=None):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out)."""
    if x.ndim == 0:
        raise ValueError(f"linear: the input must have a feature axis (..., {weight.shape[1]}), got shape ()")
    if x.dtype != weight.dtype:
        raise TypeError(f"linear: input is {x.dtype} but the weight is {weight.dtype}; convert one (model.to(dtype))")
    return ops.Linear.apply(x, weight) if bias is None else ops.Linear.apply(x, weight, bias)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing `normalized_shape` axes to mean 0 and variance 1, then scale by
    `weight` and shift by `bias` (both shaped `normalized_shape`; default 1 and 0)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}")
    d = int(np.prod(shape))
    weight = Tensor(np.ones(d, dtype=x.dtype)) if weight is None else weight.reshape(d)
    bias = Tensor(np.zeros(d, dtype=x.dtype)) if bias is None else bias.reshape(d)
    if weight.dtype != x.dtype:
        raise TypeError(f"layer_norm: input is {x.dtype} but the weight is {weight.dtype}; convert one")
    flat = x.reshape(x.shape[: x.ndim - len(shape)] + (d,)) if len(shape) != 1 else x
    return ops.LayerNorm.apply(flat, weight, bias, eps=eps).reshape(x.shape)


def gelu(x, approximate="none"):
    return x.gelu(approximate)


def relu(x):
    return x.relu()


def softmax(x, axis=-1):
    return x.softmax(axis)


def log_softmax(x, axis=-1):
    return x.log_softmax(axis)


def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
    """softmax(scale * q k^T, with blocked keys at -inf) v, in one fused op.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v), leading axes
    broadcast; scale defaults to 1 / sqrt(d_k). mask: bool, broadcastable to (..., T_q, T_k), True
    where query i may attend to key j; a query with no allowed key gets a zero output.
    transformer/attention.py builds the same thing from matmul and softmax, step by step, and also
    returns the attention weights; this op keeps them to itself and is faster."""
    if mask is not None:
        mask = np.asarray(getattr(mask, "data", mask))
    return ops.ScaledDotProductAttention.apply(q, k, v, mask=mask, scale=scale)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """Cross-entropy of `logits` (..., V) against integer `targets` (...): the class axis is last
    (for 2-D logits (N, V) this is PyTorch's layout too).

    loss = -log softmax(logits)[target], computed stably as logsumexp(logits) - logits[target].
    label_smoothing = eps mixes the one-hot target with the uniform distribution:
    loss = (1 - eps) * nll + eps * mean_j(-log p_j). Targets equal to `ignore_index` count for
    nothing; "mean" divides by the number of counted targets (0 counted gives loss 0)."""
    targets = np.asarray(getattr(targets, "data", targets))
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    return ops.CrossEntropy.apply(
        logits, targets=targets, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction
    )


def mse_loss(input, target, reduction="mean"):
    """Mean squared error: mean((input - target)^2) ('sum' and 'none' too)."""
    target = as_tensor(target, dtype=input.dtype)
    if input.shape != target.shape:
        raise ValueError(f"mse_loss: input {input.shape} and target {target.shape} must have the same shape")
    squared = (input - target) ** 2
    if reduction == "none":
        return squared
    if reduction not in ("mean", "sum"):
        raise ValueError(f"mse_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return squared.mean() if reduction == "mean" else squared.sum()
