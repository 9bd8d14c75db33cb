"""Stateless layer functions: the math of each layer, without its parameters.

Shapes use B = batch, T = sequence length, C or D = features, V = classes (vocabulary). Inputs may
be Tensors, numpy arrays or Python lists."""
import math
import numbers
import warnings

import numpy as np

from .. import ops
from .. import creation
from ..creation import as_tensor, embedding, where  # noqa: F401  (re-exported)
from ..ops import _axis
from ..tensor import Tensor
from .normalization import batch_norm, group_norm, instance_norm  # noqa: F401  (re-exported)
from .conv import conv1d, conv2d, conv_transpose2d, fold, unfold  # noqa: F401  (re-exported)
from .padding import pad  # noqa: F401  (re-exported)
from .pooling import (  # noqa: F401  (re-exported)
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d,
    max_pool1d, max_pool2d,
)
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


# ---------------------------------------------------------------------- activations
def _maybe_in_place(name, x, inplace, f):
    """f(x), or with inplace=True (PyTorch's argument) f(x) written into x's memory and x returned:
    `Tensor._update`'s rules, so inside the graph x's history becomes "f of x as it was", and a
    leaf that requires grad is refused. It saves no memory here (the op keeps a copy of its input)."""
    x = as_tensor(x)
    return x._update(name + "_", f) if inplace else f(x)


def gelu(x, approximate="none"):
    return as_tensor(x).gelu(approximate)


def relu(x, inplace=False):
    return _maybe_in_place("relu", x, inplace, Tensor.relu)


def relu_(x):
    return relu(x, inplace=True)


def silu(x, inplace=False):
    return _maybe_in_place("silu", x, inplace, Tensor.silu)


def leaky_relu(x, negative_slope=0.01, inplace=False):
    return _maybe_in_place("leaky_relu", x, inplace, lambda t: t.leaky_relu(negative_slope))


def leaky_relu_(x, negative_slope=0.01):
    return leaky_relu(x, negative_slope, inplace=True)


def softplus(x, beta=1.0, threshold=20.0):
    return as_tensor(x).softplus(beta, threshold)


def elu(x, alpha=1.0, inplace=False):
    return _maybe_in_place("elu", x, inplace, lambda t: t.elu(alpha))


def elu_(x, alpha=1.0):
    return elu(x, alpha, inplace=True)


def tanh(input):
    return as_tensor(input).tanh()


def sigmoid(input):
    return as_tensor(input).sigmoid()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]; the gradient is 1 strictly inside, 0 elsewhere (PyTorch's:
    0 on the bounds themselves too).   hardtanh(x) = min_val if x < min_val, max_val if x > max_val, else x"""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not be larger than max_val ({max_val})")
    return _maybe_in_place("hardtanh", input, inplace,
                           lambda t: ops.Hardtanh.apply(t, min_val=float(min_val), max_val=float(max_val)))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6) = hardtanh(x, 0, 6) (MobileNet's activation)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input):
    """log sigmoid(x) = -log(1 + e^-x) = min(x, 0) - log(1 + e^-|x|), without overflow: it is minus the
    logits binary cross-entropy with target 1, whose op computes exactly that stable form."""
    x = as_tensor(input)
    return -ops.BinaryCrossEntropyWithLogits.apply(x, Tensor(np.ones(x.shape, dtype=x.dtype)))


def mish(input, inplace=False):
    """mish(x) = x * tanh(softplus(x))   (softplus(x) = log(1 + e^x))."""
    return _maybe_in_place("mish", input, inplace, lambda x: x * x.softplus().tanh())


# SELU's constants (Klambauer et al.): with them, layers of selu keep activations at mean 0, variance 1
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """selu(x) = scale * (x if x > 0 else alpha * (e^x - 1)) = scale * elu(x, alpha)."""
    return _maybe_in_place("selu", input, inplace, lambda x: x.elu(SELU_ALPHA) * SELU_SCALE)


def prelu(input, weight):
    """x where x > 0, a * x elsewhere, with a learned slope a (`weight`): one for every channel (dim 1
    of the input, weight of shape (C,)) or one for all (weight of shape (1,))."""
    x = as_tensor(input)
    n = weight.numel()
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be 1-D (C,) or a single slope, got shape {tuple(weight.shape)}")
    if n == 1:
        slope = weight.reshape(())
    elif x.ndim >= 2 and x.shape[1] == n:
        slope = weight.reshape((n,) + (1,) * (x.ndim - 2))  # (C, 1, ..., 1): broadcast over dim 1
    else:
        raise ValueError(f"prelu: {n} slopes (weight {tuple(weight.shape)}) need an input with {n} channels in dim 1, "
                         f"got shape {tuple(x.shape)}")
    return ops.PReLU.apply(x, slope)  # (x = 0 takes the slope's side: gradient a, as PyTorch)


# ---------------------------------------------------------------------- dropout
def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """Inverted dropout: each element zeroed with probability p, the others scaled by 1 / (1 - p), so
    the expected value is unchanged; the identity when not training. The mask is drawn from
    `generator` (a minigrad.Generator) or the default one."""
    x = as_tensor(input)
    if not training or p == 0.0:
        return x
    return _maybe_in_place("dropout", x, inplace, lambda t: creation.dropout(t, p, training, generator=generator))


def _feature_dropout(name, x, p, training, generator):
    """Dropout of whole channels: x (N, C, *positions) times a mask m (N, C, 1, ..., 1), which is 0
    with probability p and 1 / (1 - p) otherwise, one number per (sample, channel), broadcast over the
    channel's positions. (Neighbouring pixels of a feature map are strongly correlated, so dropping
    them one at a time hardly regularises; dropping the whole map does: Tompson et al., 2015.)

    m is ops.Dropout applied to ones (N, C, 1, ...): drawn inside that op, from `generator` (a
    minigrad.Generator) or the default one, so a replayed step (minigrad.compile) draws afresh."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability p must be in [0, 1], got {p}")
    if x.dtype.kind != "f":
        raise TypeError(f"{name}: expected a float input, got {x.dtype}")
    if not training or p == 0.0:
        return x
    ones = Tensor(np.ones(x.shape[:2] + (1,) * (x.ndim - 2), dtype=x.dtype))
    return x * ops.Dropout.apply(ones, p=p, generator=generator)


def _channel_dropout(name, x, unbatched, p, training, inplace, generator):
    """_feature_dropout of x, written into x with inplace=True; an unbatched x gets a batch dim of 1
    around the draw."""
    def drop(t):
        if unbatched:
            return _feature_dropout(name, t.unsqueeze(0), p, training, generator).squeeze(0)
        return _feature_dropout(name, t, p, training, generator)

    return _maybe_in_place(name, x, inplace, drop)


def dropout1d(input, p=0.5, training=True, inplace=False, *, generator=None):
    """input (N, C, L) or (C, L) with whole channels zeroed (probability p each, a new draw per sample)
    and the others scaled by 1 / (1 - p); the identity when not training. See _feature_dropout."""
    x = as_tensor(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"dropout1d: expected input (N, C, L) or (C, L), got shape {x.shape}")
    return _channel_dropout("dropout1d", x, x.ndim == 2, p, training, inplace, generator)


def dropout2d(input, p=0.5, training=True, inplace=False, *, generator=None):
    """input (N, C, H, W) with whole channels (feature maps) zeroed, probability p each, the others
    scaled by 1 / (1 - p); the identity when not training. See _feature_dropout.

    A 3-D input is taken, as PyTorch does (with a warning), as (N, C, L): it zeroes whole rows of
    each (C, H, W) image, not channels; for an unbatched image call x.unsqueeze(0) first, or use
    dropout1d for (N, C, L)."""
    x = as_tensor(input)
    if x.ndim not in (3, 4):
        raise ValueError(f"dropout2d: expected input (N, C, H, W) (or (N, C, L), as PyTorch), got shape {x.shape}")
    if x.ndim == 3:
        warnings.warn("dropout2d: a 3-D input is taken as (N, C, L), as PyTorch does, and its dim 1 dropped whole; "
                      "for channel dropout of an unbatched image (C, H, W) pass x.unsqueeze(0), and for (N, C, L) "
                      "use dropout1d", UserWarning, stacklevel=2)
    return _channel_dropout("dropout2d", x, False, p, training, inplace, generator)


def dropout3d(input, p=0.5, training=True, inplace=False, *, generator=None):
    """input (N, C, D, H, W) or (C, D, H, W) with whole channels zeroed (probability p each) and the
    others scaled by 1 / (1 - p); the identity when not training. See _feature_dropout."""
    x = as_tensor(input)
    if x.ndim not in (4, 5):
        raise ValueError(f"dropout3d: expected input (N, C, D, H, W) or (C, D, H, W), got shape {x.shape}")
    return _channel_dropout("dropout3d", x, x.ndim == 4, p, training, inplace, generator)


# ---------------------------------------------------------------------- pixel shuffle
def _shuffle_args(name, input, factor, what):
    x = as_tensor(input)
    if not isinstance(factor, numbers.Integral) or isinstance(factor, bool) or factor < 1:
        raise ValueError(f"{name}: {what} must be a positive int, got {factor!r}")
    if x.ndim < 3:
        raise ValueError(f"{name}: expected input (*, C, H, W), at least 3-D, got shape {x.shape}")
    return x, int(factor), x.shape[:-3], len(x.shape) - 3


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r), r = upscale_factor: each group of r^2 channels becomes
    the r x r blocks of one channel (the upsampling of a sub-pixel convolution, Shi et al., 2016):

        y[..., c, h r + i, w r + j] = x[..., c r^2 + i r + j, h, w]

    A reshape to (*, C, r, r, H, W), a permutation to (*, C, H, r, W, r) and a reshape: no numbers
    change, so the gradient is g moved back the same way."""
    x, r, batch, b = _shuffle_args("pixel_shuffle", input, upscale_factor, "upscale_factor")
    c, h, w = x.shape[-3:]
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channels ({c}, dim -3 of the input {x.shape}) must be divisible by "
                         f"upscale_factor^2 = {r * r}")
    x = x.reshape(batch + (c // (r * r), r, r, h, w))
    x = x.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return x.reshape(batch + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W), r = downscale_factor: pixel_shuffle undone, each r x r
    block of a channel becomes r^2 channels:   y[..., c r^2 + i r + j, h, w] = x[..., c, h r + i, w r + j]"""
    x, r, batch, b = _shuffle_args("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    c, h, w = x.shape[-3:]
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: the height and width {(h, w)} of the input {x.shape} must be divisible "
                         f"by downscale_factor = {r}")
    x = x.reshape(batch + (c, h // r, r, w // r, r))
    x = x.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return x.reshape(batch + (c * r * r, h // r, w // r))


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


def _implicit_dim(op, ndim, stacklevel=3):
    """PyTorch's choice when softmax, log_softmax or softmin get no dim (deprecated there too, with a
    warning): dim 0 for a 0-, 1- or 3-D input, dim 1 otherwise."""
    dim = 0 if ndim in (0, 1, 3) else 1
    warnings.warn(f"{op}: no dim given, so dim={dim} is taken (PyTorch's implicit choice for a {ndim}-D input); "
                  f"pass dim= to say which axis sums to 1", UserWarning, stacklevel=stacklevel)
    return dim


def softmin(input, dim=None, dtype=None):
    """softmax(-x) along `dim`: the smallest value gets the largest weight. dtype: convert the input
    first. No dim: PyTorch's implicit (deprecated) choice, with a warning."""
    x = as_tensor(input, dtype=dtype)
    dim = _implicit_dim("softmin", x.ndim) if dim is None else _axis(dim, x.ndim, "softmin", x.shape)
    return (-x).softmax(dim=dim)


def _clamped_norm(x, p, dim, eps):
    """max(||x||_p, eps) along `dim`, kept as size 1, with ||x||_p = (sum |x|^p)^(1/p) (max |x| for
    p = inf). Computed as root(max(sum |x|^p, eps^p)), the same number: the root is never taken of
    0, so a vector of zeros gets a finite gradient, with no mask (which minigrad.compile could not
    replay)."""
    if p == math.inf:
        return x.abs().max(axis=dim, keepdims=True).clip(min=eps)
    total = (x * x if p == 2 else x.abs() ** p).sum(dim, keepdims=True)
    floor = eps ** p
    if total.dtype.kind != "f" or floor >= np.finfo(total.dtype).tiny:  # (the usual case)
        clamped = total.clip(min=floor)
        return clamped.sqrt() if p == 2 else clamped ** (1.0 / p)
    # eps^p underflows this dtype (a large p): the root where the sum is > 0, 0 elsewhere, then eps
    nonzero = total > 0
    root = where(nonzero, total, 1.0) ** (1.0 / p)  # (1 where the sum is 0: no 0 * inf in the gradient)
    return where(nonzero, root, 0.0).clip(min=eps)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """x / max(||x||_p, eps) along `dim` (default 1: each row of a (N, D) batch gets norm 1)."""
    x = as_tensor(input)
    if not (p > 0):
        raise ValueError(f"normalize: p must be > 0 (or inf), got {p}")
    return x / _clamped_norm(x, float(p), dim, eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along `dim`, which the result drops: (N, D) and
    (N, D) -> (N,). x1 and x2 broadcast to a common shape first (one vector against a batch)."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 of shape {tuple(x1.shape)} and x2 of shape {tuple(x2.shape)} do "
                         "not broadcast to a common shape") from None
    if len(shape) == 0:
        raise ValueError("cosine_similarity: needs inputs with at least 1 dim, got two 0-d tensors")
    x1, x2 = x1.broadcast_to(shape), x2.broadcast_to(shape)
    n1, n2 = _clamped_norm(x1, 2.0, dim, eps), _clamped_norm(x2, 2.0, dim, eps)
    return ((x1 * x2).sum(dim, keepdims=True) / (n1 * n2)).squeeze(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim, row by row (x1, x2 broadcast): PyTorch's, whose eps
    keeps the gradient finite where two rows are equal."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    return (x1 - x2 + eps).norm(p, dim=-1, keepdim=keepdim)


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


def _classes_last(op, logits, targets):
    """logits with their class axis last, for integer targets. minigrad's layout has it last,
    (N, d, C) with targets (N, d); PyTorch's has it at dim 1, (N, C, d) with targets (N, d): the
    targets' shape says which one this is (for 2-D logits (N, C) they are the same). When it could
    be either (C = d), the losses would differ, so that is refused rather than guessed."""
    if logits.ndim < 3:
        return logits
    last = targets.shape == logits.shape[:-1]
    pytorch = targets.shape == logits.shape[:1] + logits.shape[2:]
    if pytorch and not last:
        return logits.movedim(1, -1)  # (N, C, d...) -> (N, d..., C)
    if pytorch and last:
        raise ValueError(
            f"{op}: logits {logits.shape} with targets {targets.shape} could have their classes along dim 1 "
            f"(PyTorch's layout (N, C, d)) or along the last dim (minigrad's (N, d, C)), which give different "
            f"losses. Make it 2-D: {op}(logits.movedim(1, -1).reshape(-1, C), targets.reshape(-1)) for PyTorch's "
            f"layout, {op}(logits.reshape(-1, C), targets.reshape(-1)) for the last")
    return logits


def cross_entropy(logits, targets, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy of `logits` (..., V) against integer `targets` (...): the class axis is last
    (for 2-D logits (N, V) this is PyTorch's layout too). PyTorch's layout for more dims, (N, V, d)
    with targets (N, d), is taken too, when the shapes say which one it is (see _classes_last).

    loss = -log softmax(logits)[target], computed stably as logsumexp(logits) - logits[target].
    label_smoothing = eps mixes the one-hot target with the uniform distribution:
    loss = (1 - eps) * nll + eps * mean_j(-log p_j). Targets equal to `ignore_index` count for
    nothing; "mean" divides by the number of counted targets (0 counted gives loss 0).

    `targets` may also be class probabilities (float, the logits' shape), as in PyTorch:
    loss = -sum_j targets_j log softmax(logits)_j per row (label smoothing mixes them with the
    uniform distribution too), and "mean" divides by the number of rows. Their class axis is last
    whatever the number of dims (the shape cannot tell PyTorch's (N, V, d) from (N, d, V) here).

    weight (V,): a weight per class, PyTorch's: each loss times its target's weight, and "mean"
    divides by the sum of the counted targets' weights; with label smoothing, the smoothing term's
    -log p_j are weighted by w_j too."""
    if size_average is not None or reduce is not None:
        raise TypeError("cross_entropy: size_average and reduce are PyTorch's deprecated arguments; use reduction=")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    logits = as_tensor(logits)
    kind = (targets.dtype if hasattr(targets, "dtype") else np.asarray(targets).dtype).kind
    if kind == "f" and np.shape(targets) == logits.shape:  # class probabilities
        if weight is not None:
            raise NotImplementedError("cross_entropy: weight= with class probabilities is not supported")
        return _soft_cross_entropy(logits, targets, label_smoothing, reduction)
    targets = np.asarray(targets)
    logits = _classes_last("cross_entropy", logits, targets)
    if weight is not None:
        return _weighted_cross_entropy(logits, targets, weight, ignore_index, label_smoothing, reduction)
    return ops.CrossEntropy.apply(
        logits, targets=targets, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction
    )


def _weighted_cross_entropy(logits, targets, weight, ignore_index, label_smoothing, reduction):
    """cross_entropy with class weights w, composed of log_softmax and nll_loss (PyTorch's formula):
        loss_i = (1 - eps) w[t_i] (-log p[t_i]) + eps / V sum_j w_j (-log p_j)
    and "mean" divides by sum_i w[t_i] over the counted targets."""
    log_p = logits.log_softmax(-1)
    nll = nll_loss(log_p, targets, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    classes = logits.shape[-1]
    w = np.asarray(weight.detach().numpy() if isinstance(weight, Tensor) else weight, dtype=logits.dtype)
    counted = targets != ignore_index
    smooth = where(counted, -(log_p * w).sum(-1), 0.0) / classes  # eps / V sum_j w_j (-log p_j), per target
    if reduction == "mean":
        total = np.where(counted, w[np.where(counted, targets, 0)], 0).sum()
        smooth = smooth.sum() / (total if total != 0 else 1)
    else:
        smooth = _reduce("cross_entropy", smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing * smooth


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


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """The negative log-likelihood: -input[..., target] for log-probabilities `input` (..., C) (the
    output of log_softmax; class axis last, as in `cross_entropy`) and integer `target` (...).
    Targets equal to `ignore_index` count for nothing; "mean" divides by the number of counted
    targets (0 counted gives loss 0, as `cross_entropy`). A composition of gather, where and sum:
    the gradient comes from theirs.

    weight (C,): a weight per class, a constant. Each loss is multiplied by its target's weight,
    and "mean" divides by the sum of the counted targets' weights (PyTorch's weighted mean):
        loss = sum_i -w[t_i] input[i, t_i] / sum_i w[t_i]"""
    input = as_tensor(input)
    target = np.asarray(target)
    input = _classes_last("nll_loss", input, target) if input.ndim else input
    if input.ndim == 0 or target.shape != input.shape[:-1]:
        raise ValueError(f"nll_loss: target of shape {target.shape} must match the input's shape {input.shape} "
                         f"without its last (class) axis, i.e. {input.shape[:-1]}")
    if target.dtype.kind not in "iu":
        raise TypeError(f"nll_loss: target must be integer class ids, got {target.dtype}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"nll_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    counted = target != ignore_index
    classes = input.shape[-1]
    bad = counted & ((target < 0) | (target >= classes))
    if bad.any():
        raise IndexError(f"nll_loss: target {int(target[bad].flat[0])} is out of range for {classes} classes "
                         f"(valid: 0..{classes - 1}, or ignore_index={ignore_index})")
    safe_target = np.where(counted, target, 0)
    picked = input.gather(-1, safe_target[..., None].astype(np.int64)).squeeze(-1)
    if weight is None:
        losses = where(counted, -picked, 0.0)
        if reduction == "mean":
            return losses.sum() / max(int(counted.sum()), 1)
        return _reduce("nll_loss", losses, reduction)
    weight = np.asarray(weight.detach().numpy() if isinstance(weight, Tensor) else weight, dtype=input.dtype)
    if weight.shape != (classes,):
        raise ValueError(f"nll_loss: weight must have one value per class, shape ({classes},), got {weight.shape} "
                         f"(input {input.shape})")
    w = np.where(counted, weight[safe_target], 0).astype(input.dtype)  # w[t_i], 0 where ignored
    losses = -picked * w
    if reduction == "mean":  # (all weights 0 or nothing counted: the sum is 0, and so is the loss)
        total = w.sum()
        return losses.sum() / (total if total != 0 else 1)
    return _reduce("nll_loss", losses, reduction)


def _check_weight(op, name, weight, input):
    """A weight Tensor that broadcasts to the input's shape without enlarging it. A constant weight
    (a numpy array, a list, a tensor that does not require grad) takes the input's dtype: a float64
    array of weights does not turn a float32 loss into float64."""
    if not isinstance(weight, Tensor):
        weight = Tensor(np.asarray(weight, dtype=input.dtype))
    elif not weight.requires_grad and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    try:
        full = np.broadcast_shapes(weight.shape, input.shape)
    except ValueError:
        full = None
    if full != input.shape:
        raise ValueError(f"{op}: {name} of shape {tuple(weight.shape)} does not broadcast to the input's shape "
                         f"{tuple(input.shape)}")
    return weight


def binary_cross_entropy(input, target, reduction="mean", *, weight=None):
    """-(target log(input) + (1 - target) log(1 - input)), for probabilities `input` in [0, 1] (the
    output of sigmoid) and targets of the same shape; each log is clamped at -100, as in PyTorch.
    weight: multiplies each element's loss (broadcast to the input's shape)."""
    input = as_tensor(input)
    target = as_tensor(target, dtype=input.dtype) if not isinstance(target, Tensor) else target
    _check_reduction("binary_cross_entropy", reduction)
    losses = ops.BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        losses = losses * _check_weight("binary_cross_entropy", "weight", weight, input)
    return _reduce("binary_cross_entropy", losses, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean", *, weight=None, pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits:
    max(x, 0) - x * target + log(1 + exp(-|x|)).

    weight: multiplies each element's loss (broadcast to the input's shape). pos_weight (e.g. (C,)
    for (N, C) logits, one per class): the weight of the positive term,
        loss = -[pos_weight * y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]
    which is the plain loss plus (pos_weight - 1) * y * (-log sigmoid(x)); pos_weight = #negatives /
    #positives balances a rare class."""
    input = as_tensor(input)
    target = as_tensor(target, dtype=input.dtype) if not isinstance(target, Tensor) else target
    op = "binary_cross_entropy_with_logits"
    _check_reduction(op, reduction)
    losses = ops.BinaryCrossEntropyWithLogits.apply(input, target)
    if pos_weight is not None:
        pos_weight = _check_weight(op, "pos_weight", pos_weight, input)
        # -log sigmoid(x) = the same op with target 1 (stable, and its gradient is exact at x = 0)
        minus_log_p = ops.BinaryCrossEntropyWithLogits.apply(input, Tensor(np.ones(input.shape, dtype=input.dtype)))
        losses = losses + (pos_weight - 1) * target * minus_log_p
    if weight is not None:
        losses = losses * _check_weight(op, "weight", weight, input)
    return _reduce(op, losses, reduction)


# ---------------------------------------------------------------------- regression and divergence losses
def _check_reduction(op, reduction, allowed=("mean", "sum", "none")):
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be {', '.join(repr(r) for r in allowed[:-1])} or {allowed[-1]!r}, "
                         f"got {reduction!r}")


def _loss_operands(op, input, target, reduction, allowed=("mean", "sum", "none")):
    """input and target as Tensors of the same shape (a numpy or list target takes the input's dtype).
    Nothing is broadcast: a (N,) target against a (N, 1) prediction would silently give an (N, N)
    loss, so it is an error here (PyTorch only warns)."""
    _check_reduction(op, reduction, allowed)
    input = as_tensor(input)
    target = target if isinstance(target, Tensor) else as_tensor(target, dtype=input.dtype)
    if input.shape != target.shape:
        raise ValueError(f"{op}: input of shape {tuple(input.shape)} and target of shape {tuple(target.shape)} must "
                         "have the same shape (nothing is broadcast; reshape one of them, e.g. "
                         f"target.reshape{tuple(input.shape)} if the sizes agree)")
    return input, target


def l1_loss(input, target, *, reduction="mean"):
    """Mean absolute error: |input - target| per element, then averaged ('mean'), summed ('sum') or
    kept ('none'). The gradient sign(input - target) is 0 where they are equal (as PyTorch)."""
    input, target = _loss_operands("l1_loss", input, target, reduction)
    return _reduce("l1_loss", (input - target).abs(), reduction)


def smooth_l1_loss(input, target, *, reduction="mean", beta=1.0):
    """Quadratic near 0, linear beyond beta (Fast R-CNN's box loss), per element d = input - target:
        smooth L1: 0.5 d^2 / beta if |d| < beta else |d| - 0.5 beta
    computed as 0.5 m^2 / beta + (|d| - m) with m = min(|d|, beta), the part of |d| in the quadratic
    zone: the same numbers and gradient, without a mask (which minigrad.compile could not replay).
    beta = 0 is the L1 loss."""
    input, target = _loss_operands("smooth_l1_loss", input, target, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    size = (input - target).abs()
    if beta == 0:  # (no quadratic zone; and 0.5 m^2 / 0 would divide by zero)
        return _reduce("smooth_l1_loss", size, reduction)
    m = size.clip(max=beta)
    return _reduce("smooth_l1_loss", 0.5 * m * m / beta + (size - m), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """Quadratic near 0, linear beyond delta (robust regression), per element d = input - target:
        huber: 0.5 d^2 if |d| < delta else delta (|d| - 0.5 delta)      (= delta * smooth L1 with beta = delta)
    computed as 0.5 m^2 + delta (|d| - m) with m = min(|d|, delta) (see smooth_l1_loss)."""
    input, target = _loss_operands("huber_loss", input, target, reduction)
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    size = (input - target).abs()
    m = size.clip(max=delta)
    return _reduce("huber_loss", 0.5 * m * m + delta * (size - m), reduction)


def kl_div(input, target, *, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence KL(target || model) for log-probabilities `input` (the model's,
    from log_softmax) and probabilities `target` (log-probabilities if log_target=True), per element:
        target * (log target - input)          (0 log 0 counts 0)
        e^target * (target - input)            (log_target=True)
    reduction: 'batchmean' (the sum divided by the batch size input.shape[0]: the true KL per
    sample), 'sum', 'none', or 'mean' (PyTorch's default: divides by the number of elements, not
    the KL; PyTorch warns, and so does this)."""
    op = "kl_div"
    input, target = _loss_operands(op, input, target, reduction, allowed=("mean", "batchmean", "sum", "none"))
    if log_target:
        losses = target.exp() * (target - input)
    else:  # target clipped at the smallest normal number inside the log: 0 log 0 = 0 * log(tiny) = 0
        tiny = np.finfo(target.dtype).tiny if target.dtype.kind == "f" else np.finfo(np.float32).tiny
        losses = target * target.clip(min=tiny).log() - target * input
    if reduction == "batchmean":
        return losses.sum() / input.shape[0] if input.ndim else losses.sum()
    if reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides by the number of elements (batch size x classes), which is "
                      "not the KL divergence; reduction='batchmean' divides by the batch size only",
                      UserWarning, stacklevel=2)
    return _reduce(op, losses, reduction)


# ---------------------------------------------------------------------- more activations (PyTorch's)
# Each is composed of Tensor ops, chosen so that the gradient at a kink is PyTorch's: clip's gradient
# counts its bounds as inside (1 there), hardtanh's and relu's count them as outside (0 there).
def hardsigmoid(input, inplace=False):
    """hardsigmoid(x) = min(max(x + 3, 0), 6) / 6: 0 below -3, 1 above 3, x/6 + 1/2 between.
    The gradient is 1/6 strictly inside (-3, 3), 0 elsewhere, the kinks too (PyTorch's)."""
    return _maybe_in_place("hardsigmoid", input, inplace, lambda x: hardtanh(x + 3.0, 0.0, 6.0) / 6.0)


def hardswish(input, inplace=False):
    """hardswish(x) = x * min(max(x + 3, 0), 6) / 6 (MobileNetV3's cheap swish): 0 below -3, x above 3.
    The gradient is x/3 + 1/2 strictly inside (-3, 3), 0 at -3 and 1 at 3 (PyTorch's)."""
    return _maybe_in_place("hardswish", input, inplace, lambda x: x * hardtanh(x + 3.0, 0.0, 6.0) / 6.0)


def softsign(input):
    """softsign(x) = x / (1 + |x|), in (-1, 1)."""
    x = as_tensor(input)
    return x / (x.abs() + 1)


def tanhshrink(input):
    """tanhshrink(x) = x - tanh(x)."""
    x = as_tensor(input)
    return x - x.tanh()


def threshold(input, threshold, value, inplace=False):
    """threshold(x) = x if x > threshold else value. The gradient is 1 where x > threshold, 0 elsewhere."""
    return _maybe_in_place("threshold", input, inplace, lambda x: where(x <= threshold, value, x))


def threshold_(input, threshold, value):
    return _maybe_in_place("threshold", input, True, lambda x: where(x <= threshold, value, x))


def glu(input, dim=-1):
    """The gated linear unit: the input split in halves a, b along `dim`, then glu = a * sigmoid(b).
    (..., 2n, ...) -> (..., n, ...)"""
    x = as_tensor(input)
    if x.ndim == 0:
        raise ValueError("glu: does not support a 0-d input (it halves a dimension)")
    d = _axis(dim, x.ndim, "glu", x.shape)
    if x.shape[d] % 2:
        raise ValueError(f"glu: the halved dimension must have an even size, but dim {dim} of the input "
                         f"{tuple(x.shape)} has size {x.shape[d]}")
    n = x.shape[d] // 2
    return x.narrow(d, 0, n) * x.narrow(d, n, n).sigmoid()


def celu(input, alpha=1.0, inplace=False):
    """celu(x) = max(0, x) + min(0, alpha (e^(x / alpha) - 1)), computed as
    relu(x) + alpha * expm1(min(x, 0) / alpha): x itself for x > 0, and a gradient of 1 at 0 (PyTorch's)."""
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0 (it divides by alpha)")
    return _maybe_in_place("celu", input, inplace, lambda x: x.relu() + alpha * (x.clip(max=0.0) / alpha).expm1())


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def softshrink(input, lambd=0.5):
    """softshrink(x) = x - lambd if x > lambd, x + lambd if x < -lambd, else 0; computed as
    x - clip(x, -lambd, lambd). The gradient is 0 on [-lambd, lambd], the kinks included (PyTorch's)."""
    if not lambd >= 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}")
    x = as_tensor(input)
    return x - x.clip(-lambd, lambd)


def hardshrink(input, lambd=0.5):
    """hardshrink(x) = 0 if -lambd <= x <= lambd, else x. The gradient is 0 on [-lambd, lambd] (PyTorch's)."""
    x = as_tensor(input)
    values = x.detach().numpy()
    return where((values >= -lambd) & (values <= lambd), 0.0, x)


# ---------------------------------------------------------------------- more layers' functions
def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T A_k x2 + b_k:   x1 (..., in1), x2 (..., in2), weight A (out, in1, in2), bias (out,) -> (..., out).
    Computed as a matmul, x1 @ A (as (in1, out in2)), then the products with x2 summed over in2."""
    x1, x2 = as_tensor(input1), as_tensor(input2)
    if weight.ndim != 3:
        raise ValueError(f"bilinear: weight must be 3-D (out, in1, in2), got shape {tuple(weight.shape)}")
    out, in1, in2 = weight.shape
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[-1] != in1 or x2.shape[-1] != in2 or x1.shape[:-1] != x2.shape[:-1]:
        raise ValueError(f"bilinear: expected input1 (..., {in1}) and input2 (..., {in2}) with the same leading "
                         f"dims for weight {tuple(weight.shape)}, got {tuple(x1.shape)} and {tuple(x2.shape)}")
    x1_a = x1 @ weight.permute(1, 0, 2).reshape(in1, out * in2)           # (..., out in2): sum_i x1_i A_kij
    y = (x1_a.reshape(x1.shape[:-1] + (out, in2)) * x2.unsqueeze(-2)).sum(-1)  # sum_j (...)_kj x2_j
    return y if bias is None else y + bias


def channel_shuffle(input, groups):
    """(N, C, *) -> (N, C, *) with the channels, seen as a (groups, C / groups) table, read by columns
    (ShuffleNet): y[:, k * groups + g] = x[:, g * (C / groups) + k]. A reshape, a transpose, a reshape."""
    x = as_tensor(input)
    if not isinstance(groups, numbers.Integral) or groups <= 0:
        raise ValueError(f"channel_shuffle: groups must be a positive int, got {groups!r}")
    if x.ndim < 3:
        raise ValueError(f"channel_shuffle: expected input (N, C, *) with more than 2 dims, got shape {tuple(x.shape)}")
    n, c = x.shape[:2]
    if c % groups:
        raise ValueError(f"channel_shuffle: the number of channels must be divisible by groups, got {c} channels "
                         f"(input {tuple(x.shape)}) and {groups} groups")
    rest = tuple(x.shape[2:])
    return x.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


# ---------------------------------------------------------------------- more losses (PyTorch's)
def _no_legacy(op, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise TypeError(f"{op}: size_average and reduce are PyTorch's deprecated arguments; use reduction=")


def _same_shape(op, **tensors):
    """Every named tensor with the first one's shape: nothing is broadcast (see _loss_operands)."""
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} of shape {shape}" for name, shape in shapes.items())
        raise ValueError(f"{op}: {listed} must have the same shape (nothing is broadcast)")


def _like(value, input):
    """A target or a variance: a Tensor as it is, anything else a constant in the input's dtype."""
    return value if isinstance(value, Tensor) else as_tensor(value, dtype=input.dtype)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """loss = max(0, -y (x1 - x2) + margin), y = 1 when x1 should rank higher, -1 when x2 should.
    x1, x2 and y of one shape. At the kink the gradient is that of the line (PyTorch's clamp_min)."""
    op = "margin_ranking_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    x1 = as_tensor(input1)
    x2, y = _like(input2, x1), _like(target, x1)
    _same_shape(op, input1=x1, input2=x2, target=y)
    return _reduce(op, (-y * (x1 - x2) + margin).clip(min=0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """loss = x where y = 1, max(0, margin - x) where y = -1 (x: e.g. a distance), PyTorch's form:
        loss = [y != 1] max(0, margin - x) + [y != -1] x
    The target only selects: it has no gradient."""
    op = "hinge_embedding_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    x = as_tensor(input)
    y = _like(target, x)
    _same_shape(op, input=x, target=y)
    t = y.detach().numpy()
    return _reduce(op, where(t != 1, (margin - x).clip(min=0.0), 0.0) + where(t != -1, x, 0.0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """x1, x2 (N, D) (or (D,)), y (N,) (or ()) of 1 (similar) or -1 (dissimilar), cos along D:
        loss = 1 - cos(x1, x2) where y = 1,   max(0, cos(x1, x2) - margin) where y = -1
    with PyTorch's cos = x1 . x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12))."""
    op = "cosine_embedding_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    x1 = as_tensor(input1)
    x2, y = _like(input2, x1), _like(target, x1)
    _same_shape(op, input1=x1, input2=x2)
    if x1.ndim not in (1, 2) or tuple(y.shape) != tuple(x1.shape[:-1]):
        raise ValueError(f"{op}: expected inputs (N, D) with target (N,), or (D,) with target (), got inputs "
                         f"{tuple(x1.shape)} and target {tuple(y.shape)}")
    eps = 1e-12
    dot = (x1 * x2).sum(-1)
    cos = dot / ((x1 * x1).sum(-1) + eps).mul((x2 * x2).sum(-1) + eps).sqrt()
    t = y.detach().numpy()
    return _reduce(op, where(t == 1, 1 - cos, 0.0) + where(t == -1, (cos - margin).clip(min=0.0), 0.0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """loss = max(0, margin + d(a, p) - d(a, n)), d(u, v) = ||u - v + eps||_p along the last dim
    (pairwise_distance): the anchor nearer the positive than the negative, by a margin. swap=True
    takes d(a, n) = min(d(a, n), d(p, n)) (the harder negative distance, Balntas et al.).
    a, p, n (N, D) -> (N,) before the reduction."""
    op = "triplet_margin_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    a = as_tensor(anchor)
    pos, neg = _like(positive, a), _like(negative, a)
    _same_shape(op, anchor=a, positive=pos, negative=neg)
    if a.ndim == 0:
        raise ValueError(f"{op}: expected inputs (N, D) or (D,), got 0-d tensors")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(pos, neg, p, eps))
    return _reduce(op, (margin + d_pos - d_neg).clip(min=0.0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The negative log-likelihood of target under N(input, var), per element:
        loss = 0.5 (log max(var, eps) + (input - target)^2 / max(var, eps))   (+ 0.5 log(2 pi) if full)
    var: the input's shape, or one dim short (input.shape[:-1]: one variance per row), or with
    size 1 in one dim (shared along it). max(var, eps) is PyTorch's clamp under no_grad: the value
    is clamped, the gradient flows to var as if it were not (var - var.detach() + the clamped value)."""
    op = "gaussian_nll_loss"
    _check_reduction(op, reduction)
    input = as_tensor(input)
    target = _like(target, input)
    _same_shape(op, input=input, target=target)
    var = _like(var, input) if not isinstance(var, numbers.Number) else _full_like(input, var)
    if var.shape != input.shape:
        mismatched = [i for i in range(var.ndim) if var.ndim == input.ndim and var.shape[i] != input.shape[i]]
        if tuple(var.shape) == tuple(input.shape[:-1]):
            var = var.unsqueeze(-1)
        elif not (var.ndim == input.ndim and len(mismatched) == 1 and var.shape[mismatched[0]] == 1):
            raise ValueError(f"{op}: var of shape {tuple(var.shape)} does not fit the input's shape "
                             f"{tuple(input.shape)}: expected {tuple(input.shape)}, {tuple(input.shape[:-1])}, or "
                             "the input's shape with one dim of size 1")
    if (var.detach().numpy() < 0).any():
        raise ValueError(f"{op}: var has negative entries (var of shape {tuple(var.shape)})")
    fixed = var.detach()
    var = var - fixed + fixed.clip(min=eps)  # the value max(var, eps), the gradient of var itself
    losses = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return _reduce(op, losses, reduction)


def _full_like(input, value):
    """A constant tensor of the input's shape and dtype, filled with `value`."""
    return Tensor(np.full(input.shape, value, dtype=input.dtype))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """The negative log-likelihood of counts `target` under Poisson(rate), without the log(target!)
    term unless full=True:
        log_input=True (input = log rate):   loss = e^input - target * input
        log_input=False (input = rate):      loss = input - target * log(input + eps)
        full=True adds Stirling's log(target!) ~ target log target - target + 0.5 log(2 pi target), where target > 1."""
    op = "poisson_nll_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    input = as_tensor(input)
    target = _like(target, input)
    _same_shape(op, input=input, target=target)
    losses = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target.detach().numpy() > 1
        t = where(big, target, 2.0)  # (a safe value where the term is dropped: no log 0, no 0 * inf in the gradient)
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        losses = losses + where(big, stirling, 0.0)
    return _reduce(op, losses, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """loss = log(1 + e^(-y x)) for targets y of 1 or -1 (the logistic loss), computed stably as
    -logsigmoid(y x)."""
    op = "soft_margin_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    input = as_tensor(input)
    target = _like(target, input)
    _same_shape(op, input=input, target=target)
    return _reduce(op, -logsigmoid(target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label logistic loss: x, y (N, C) with y of 0 and 1 (any number of labels per sample),
        loss_n = -1/C sum_c w_c (y_nc log sigmoid(x_nc) + (1 - y_nc) log sigmoid(-x_nc))
    (N,) before the reduction. weight (C,): a weight per class."""
    op = "multilabel_soft_margin_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    input = as_tensor(input)
    target = _like(target, input)
    _same_shape(op, input=input, target=target)
    if input.ndim == 0:
        raise ValueError(f"{op}: expected input (N, C) or (C,), got a 0-d tensor")
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * _check_weight(op, "weight", weight, input)
    return _reduce(op, losses.sum(-1) / input.shape[-1], reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """The multi-class hinge loss: scores x (N, C) (or (C,)), class ids y (N,) (or ()),
        loss_n = 1/C sum_{j != y_n} w[y_n] max(0, margin - x[n, y_n] + x[n, j])^p      (p = 1 or 2)
    The gradient at the kink (margin - x[y] + x[j] = 0) is 0 (PyTorch's)."""
    op = "multi_margin_loss"
    _no_legacy(op, size_average, reduce)
    _check_reduction(op, reduction)
    if p not in (1, 2):
        raise ValueError(f"{op}: only p = 1 and p = 2 are supported, got p={p}")
    x = as_tensor(input)
    y = np.asarray(target.detach().numpy() if isinstance(target, Tensor) else target)
    if x.ndim not in (1, 2) or y.shape != x.shape[:-1]:
        raise ValueError(f"{op}: expected input (N, C) with target (N,), or (C,) with target (), got input "
                         f"{tuple(x.shape)} and target {y.shape}")
    if y.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must be integer class ids, got {y.dtype}")
    classes = x.shape[-1]
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise IndexError(f"{op}: target {int(y[(y < 0) | (y >= classes)].flat[0])} is out of range for {classes} "
                         f"classes (input {tuple(x.shape)})")
    picked = x.gather(-1, y[..., None].astype(np.int64))                    # x[n, y_n], (N, 1)
    others = (np.arange(classes) != y[..., None]).astype(x.dtype)           # 0 at j = y_n
    hinge = (margin - picked + x).relu()
    terms = (hinge if p == 1 else hinge * hinge) * others
    if weight is not None:
        w = np.asarray(weight.detach().numpy() if isinstance(weight, Tensor) else weight, dtype=x.dtype)
        if w.shape != (classes,):
            raise ValueError(f"{op}: weight must have one value per class, shape ({classes},), got {w.shape}")
        terms = terms * w[y][..., None]
    return _reduce(op, terms.sum(-1) / classes, reduction)
