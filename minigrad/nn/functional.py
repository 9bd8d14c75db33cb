"""Stateless layer functions: the math of each layer, without its parameters.

Shapes use B = batch, T = sequence length, C or D = features, V = classes (vocabulary). Inputs may
be Tensors, numpy arrays or Python lists."""
import math
import numbers

import numpy as np

from .. import ops
from ..creation import as_tensor, dropout, embedding, where  # noqa: F401  (re-exported)
from ..tensor import Tensor
from .normalization import batch_norm, group_norm, instance_norm  # noqa: F401  (re-exported)
from .conv import conv1d, conv2d, conv_transpose2d, fold, unfold  # noqa: F401  (re-exported)
from .padding import pad  # noqa: F401  (re-exported)
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d  # noqa: F401  (re-exported)
from .sampling import interpolate  # noqa: F401  (re-exported)


def linear(x, weight, bias=None):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out)."""
    if not isinstance(x, Tensor):  # a list in the weight's dtype; a numpy array keeps its own
        x = Tensor(x, dtype=None if isinstance(x, np.ndarray) else weight.dtype)
    if x.ndim == 0:
        raise ValueError(f"linear: the input must have a feature axis (..., {weight.shape[1]}), got shape ()")
    return ops.Linear.apply(x, weight) if bias is None else ops.Linear.apply(x, weight, bias)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing `normalized_shape` axes to mean 0 and variance 1, then scale by
    `weight` and shift by `bias` (both shaped `normalized_shape`; default 1 and 0)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    x = as_tensor(x)
    if x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}")
    d = math.prod(shape)
    weight = Tensor(np.ones(d, dtype=x.dtype)) if weight is None else weight.reshape(d)
    bias = Tensor(np.zeros(d, dtype=x.dtype)) if bias is None else bias.reshape(d)
    if len(shape) == 1:  # (ops.LayerNorm.forward checks the dtypes)
        return ops.LayerNorm.apply(x, weight, bias, eps=eps)
    flat = x.reshape(x.shape[: x.ndim - len(shape)] + (d,))
    return ops.LayerNorm.apply(flat, weight, bias, eps=eps).reshape(x.shape)


def gelu(x, approximate="none"):
    return as_tensor(x).gelu(approximate)


def relu(x):
    return as_tensor(x).relu()


def silu(x):
    return as_tensor(x).silu()


def leaky_relu(x, negative_slope=0.01):
    return as_tensor(x).leaky_relu(negative_slope)


def softplus(x, beta=1.0, threshold=20.0):
    return as_tensor(x).softplus(beta, threshold)


def elu(x, alpha=1.0):
    return as_tensor(x).elu(alpha)


def one_hot(tensor, num_classes=-1):
    """Integer class ids (...) -> int64 (..., num_classes), 1 at each id and 0 elsewhere; no gradient.
    num_classes=-1 takes the largest id + 1."""
    ids = np.asarray(tensor)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: class ids must be integers, got {ids.dtype} (shape {ids.shape})")
    if ids.size and ids.min() < 0:
        raise ValueError(f"one_hot: class ids must be >= 0, got {int(ids.min())} (shape {ids.shape})")
    if num_classes == -1:
        num_classes = int(ids.max()) + 1 if ids.size else 0
    if ids.size and ids.max() >= num_classes:
        raise ValueError(f"one_hot: class id {int(ids.max())} is out of range for num_classes={num_classes} "
                         f"(ids of shape {ids.shape})")
    return Tensor(np.arange(num_classes) == ids[..., None], dtype=np.int64)


def softmax(x, axis=None, *, dim=None):
    return as_tensor(x).softmax(axis, dim=dim)


def log_softmax(x, axis=None, *, dim=None):
    return as_tensor(x).log_softmax(axis, dim=dim)


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, *, attn_mask=None, dropout_p=0.0,
                                 is_causal=False):
    """softmax(scale * q k^T, with blocked keys at -inf) v, in one fused op.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v), leading axes
    broadcast; scale defaults to 1 / sqrt(d_k). mask (or PyTorch's name attn_mask): bool,
    broadcastable to (..., T_q, T_k), True where query i may attend to key j; a query with no
    allowed key gets a zero output. is_causal=True: query i attends to keys 0..i (the mask
    tril(ones(T_q, T_k)), as PyTorch). dropout_p must be 0 (no attention dropout here).
    transformer/attention.py builds the same thing from matmul and softmax, step by step, and also
    returns the attention weights; this op keeps them to itself and is faster."""
    if attn_mask is not None:
        if mask is not None:
            raise TypeError("scaled_dot_product_attention: got both mask= and attn_mask=, which are the same "
                            "argument; pass one")
        mask = attn_mask
    if dropout_p:
        raise NotImplementedError(f"scaled_dot_product_attention: dropout_p={dropout_p} is not supported; apply "
                                  "dropout to the output instead, or pass dropout_p=0")
    if mask is not None:
        mask = np.asarray(mask)
    if is_causal:
        if mask is not None:
            raise ValueError("scaled_dot_product_attention: give a mask or is_causal=True, not both "
                             "(as PyTorch); for a causal mask with more blocked keys, pass the combined mask")
        q_len, k_len = np.shape(q)[-2], np.shape(k)[-2]
        mask = np.tril(np.ones((q_len, k_len), dtype=bool))
    return ops.ScaledDotProductAttention.apply(q, k, v, mask=mask, scale=scale)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """Cross-entropy of `logits` (..., V) against integer `targets` (...): the class axis is last
    (for 2-D logits (N, V) this is PyTorch's layout too).

    loss = -log softmax(logits)[target], computed stably as logsumexp(logits) - logits[target].
    label_smoothing = eps mixes the one-hot target with the uniform distribution:
    loss = (1 - eps) * nll + eps * mean_j(-log p_j). Targets equal to `ignore_index` count for
    nothing; "mean" divides by the number of counted targets (0 counted gives loss 0).

    `targets` may also be class probabilities (float, the logits' shape), as in PyTorch:
    loss = -sum_j targets_j log softmax(logits)_j per row (label smoothing mixes them with the
    uniform distribution too), and "mean" divides by the number of rows."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    logits = as_tensor(logits)
    kind = (targets.dtype if hasattr(targets, "dtype") else np.asarray(targets).dtype).kind
    if kind == "f" and np.shape(targets) == logits.shape:  # class probabilities
        return _soft_cross_entropy(logits, targets, label_smoothing, reduction)
    targets = np.asarray(targets)
    return ops.CrossEntropy.apply(
        logits, targets=targets, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction
    )


def mse_loss(input, target, reduction="mean"):
    """Mean squared error: mean((input - target)^2) ('sum' and 'none' too)."""
    input = as_tensor(input)
    target = as_tensor(target, dtype=input.dtype) if not isinstance(target, Tensor) else target
    if input.shape != target.shape:
        raise ValueError(f"mse_loss: input {input.shape} and target {target.shape} must have the same shape")
    squared = (input - target) ** 2
    if reduction == "none":
        return squared
    if reduction not in ("mean", "sum"):
        raise ValueError(f"mse_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return squared.mean() if reduction == "mean" else squared.sum()


def _soft_cross_entropy(logits, targets, label_smoothing, reduction):
    """cross_entropy against class probabilities (..., V): a composition of log_softmax, products
    and sums, so the gradient (for the targets too, if they require it) comes from theirs."""
    if isinstance(targets, Tensor):
        if targets.dtype != logits.dtype:
            raise TypeError(f"cross_entropy: the logits are {logits.dtype} but the target probabilities are "
                            f"{targets.dtype}; convert one")
    else:
        targets = Tensor(np.asarray(targets, dtype=logits.dtype))
    if label_smoothing:
        targets = targets * (1 - label_smoothing) + label_smoothing / logits.shape[-1]
    losses = -(targets * logits.log_softmax(-1)).sum(-1)
    return _reduce("cross_entropy", losses, reduction)


def _reduce(op, losses, reduction):
    if reduction == "none":
        return losses
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return losses.mean() if reduction == "mean" else losses.sum()


def nll_loss(input, target, *, ignore_index=-100, reduction="mean"):
    """The negative log-likelihood: -input[..., target] for log-probabilities `input` (..., C) (the
    output of log_softmax; class axis last, as in `cross_entropy`) and integer `target` (...).
    Targets equal to `ignore_index` count for nothing; "mean" divides by the number of counted
    targets (0 counted gives loss 0, as `cross_entropy`). A composition of gather, where and sum:
    the gradient comes from theirs."""
    target = np.asarray(target)
    if input.ndim == 0 or target.shape != input.shape[:-1]:
        raise ValueError(f"nll_loss: target of shape {target.shape} must match the input's shape {input.shape} "
                         f"without its last (class) axis, i.e. {input.shape[:-1]}")
    if target.dtype.kind not in "iu":
        raise TypeError(f"nll_loss: target must be integer class ids, got {target.dtype}")
    counted = target != ignore_index
    classes = input.shape[-1]
    bad = counted & ((target < 0) | (target >= classes))
    if bad.any():
        raise IndexError(f"nll_loss: target {int(target[bad].flat[0])} is out of range for {classes} classes "
                         f"(valid: 0..{classes - 1}, or ignore_index={ignore_index})")
    picked = input.gather(-1, np.where(counted, target, 0)[..., None].astype(np.int64)).squeeze(-1)
    losses = where(counted, -picked, 0.0)
    if reduction == "mean":
        return losses.sum() / max(int(counted.sum()), 1)
    return _reduce("nll_loss", losses, reduction)


def binary_cross_entropy(input, target, reduction="mean"):
    """-(target log(input) + (1 - target) log(1 - input)), for probabilities `input` in [0, 1] (the
    output of sigmoid) and targets of the same shape; each log is clamped at -100, as in PyTorch."""
    target = as_tensor(target, dtype=input.dtype) if not isinstance(target, Tensor) else target
    return _reduce("binary_cross_entropy", ops.BinaryCrossEntropy.apply(input, target), reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits:
    max(x, 0) - x * target + log(1 + exp(-|x|))."""
    target = as_tensor(target, dtype=input.dtype) if not isinstance(target, Tensor) else target
    return _reduce("binary_cross_entropy_with_logits", ops.BinaryCrossEntropyWithLogits.apply(input, target),
                   reduction)
