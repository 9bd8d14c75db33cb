"""Normalization over a batch, a group of channels or one instance, with PyTorch's names.

Shapes: N = batch, C = channels (always dim 1), then any spatial dims: (N, C), (N, C, L) or
(N, C, H, W). Each layer normalizes a set of values to mean 0 and variance 1, then scales and
shifts every channel by its own weight and bias:

    batch norm      per channel c, over (N, *)          the statistics of the whole batch
    group norm      per sample and group of C/G channels, over (C/G, *)
    instance norm   per sample and channel, over (*)    (group norm with one channel per group)

Batch norm in training mode uses the batch's statistics and keeps running averages of them (the
buffers `running_mean` and `running_var`); in eval mode it uses those averages instead, so one
example's output no longer depends on the others in its batch. Training-mode batch norm is one
fused op, `BatchNorm` in minigrad/ops.py (its backward is the one-line formula); the rest is made
of ordinary ops (group and instance norm of layer norm's rows), so their gradients come for free.
"""
import math
import numbers
import warnings

import numpy as np

from .. import devices, kernels, ops
from ..creation import as_tensor
from ..grad_mode import no_grad
from ..ops import BatchNorm, _per_channel
from ..tensor import Tensor, default_float
from .module import Module, Parameter


# ============================================================================ checks
def _check_input(op, x, min_ndim=2):
    if x.ndim < min_ndim:
        raise ValueError(f"{op}: expected an input of shape (N, C, ...) with at least {min_ndim} dims, "
                         f"got shape {x.shape}")


def _check_channel_vector(op, name, t, x):
    if t is None:
        return None
    t = as_tensor(t)
    if t.shape != (x.shape[1],):
        raise ValueError(f"{op}: {name} has shape {t.shape}, but the input {x.shape} has {x.shape[1]} channels "
                         f"(dim 1); expected ({x.shape[1]},)")
    if t.dtype.kind == "f" and t.dtype != x.dtype:
        raise TypeError(f"{op}: the input is {x.dtype} but {name} is {t.dtype}; convert one (model.to(dtype))")
    return t


def _verify_batch_size(op, shape):
    """PyTorch's check: a channel's statistics need more than one value."""
    if shape[0] * math.prod(shape[2:]) == 1:
        raise ValueError(f"{op}: Expected more than 1 value per channel when training, got input of shape "
                         f"{tuple(shape)} (one value per channel: its variance is 0 and its output would be "
                         "just the bias; use a batch of more than one, or eval mode)")


def _ones_zeros(x, weight, bias):
    C = x.shape[1]
    weight = Tensor(np.ones(C, dtype=x.dtype)) if weight is None else weight
    bias = Tensor(np.zeros(C, dtype=x.dtype)) if bias is None else bias
    return weight, bias


def _update_running(x, running_mean, running_var, momentum, statistics):
    """running = (1 - momentum) running + momentum statistics(x)[name], in place, for the running
    buffers given (not None); no gradient (the op `RunningStatistics`)."""
    running = {name: t._data for name, t in (("mean", running_mean), ("var", running_var)) if t is not None}
    ops.RunningStatistics.apply(x.detach(), running=running, statistics=statistics, momentum=momentum)
    for t in (running_mean, running_var):
        if t is not None:
            t._bump("the running statistics")


def _batch_statistics(values):
    """Per channel: the mean and the unbiased variance (divided by n - 1, as PyTorch) over (N, *)."""
    n = values.size // values.shape[1]
    mean, var = kernels.channel_statistics(values)  # (float64)
    return {"mean": mean, "var": var * n / (n - 1)}


def _instance_statistics(values):
    """Per channel: each sample's mean and unbiased variance over its positions, averaged over the samples."""
    rows = values.reshape(values.shape[0], values.shape[1], -1)
    return {"mean": rows.mean(axis=2, dtype=np.float64).mean(axis=0),
            "var": rows.var(axis=2, ddof=1, dtype=np.float64).mean(axis=0)}


def _channel_vectors(op, x, running_mean, running_var, weight, bias):
    """The four per-channel vectors of batch and instance norm, each checked (None stays None)."""
    return tuple(_check_channel_vector(op, name, v, x) for name, v in (
        ("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)))


def _normalize_with_running(op, mode, x, running_mean, running_var, weight, bias, eps):
    """Batch or instance norm with the running statistics (`mode`: when the op uses them)."""
    if running_mean is None or running_var is None:
        raise ValueError(f"{op}: {mode} normalizes with running_mean and running_var, so both must be given")
    return _normalize_with_stats(x, running_mean, running_var, weight, bias, eps)


def _normalize_with_stats(x, mean, var, weight, bias, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias with given per-channel statistics (eval mode):
    an affine map of x per channel, made of ordinary ops, so its gradient needs no op of its own."""
    mean = np.asarray(mean.numpy(), dtype=x.dtype)
    rstd = (1.0 / np.sqrt(np.asarray(var.numpy(), dtype=np.float64) + eps)).astype(x.dtype)
    y = (x - Tensor(_per_channel(mean, x.ndim))) * Tensor(_per_channel(rstd, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


# ============================================================================ functions
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalization of `input` (N, C, *) per channel, as `torch.nn.functional.batch_norm`.

    training=True: normalize with the batch's mean and variance (the `BatchNorm` op) and, if given,
    update `running_mean` and `running_var` (C,) in place:
        running = (1 - momentum) running + momentum batch statistic,
    where the running variance takes the unbiased variance (divided by n - 1), as PyTorch does.
    training=False: normalize with `running_mean` and `running_var` instead.
    weight and bias (C,) scale and shift each channel (None: 1 and 0)."""
    x = as_tensor(input)
    _check_input("batch_norm", x)
    running_mean, running_var, weight, bias = _channel_vectors("batch_norm", x, running_mean, running_var, weight,
                                                               bias)
    if not training:
        return _normalize_with_running("batch_norm", "eval mode (training=False)", x, running_mean, running_var,
                                       weight, bias, eps)
    _verify_batch_size("batch_norm", x.shape)
    y = BatchNorm.apply(x, *_ones_zeros(x, weight, bias), eps=eps)
    if running_mean is not None or running_var is not None:
        _update_running(x, running_mean, running_var, momentum, _batch_statistics)
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization, as `torch.nn.functional.group_norm`: the C channels of `input` (N, C, *)
    are cut into `num_groups` groups of C/G neighbours; each sample's group is normalized over its
    C/G * (spatial) values, then each channel is scaled by weight (C,) and shifted by bias (C,).
    Each group is a row of layer norm (the `LayerNorm` op), so the backward is layer norm's."""
    x = as_tensor(input)
    _check_input("group_norm", x)
    N, C = x.shape[:2]
    if not isinstance(num_groups, numbers.Integral) or num_groups <= 0 or C % num_groups:
        raise ValueError(f"group_norm: the input {x.shape} has {C} channels (dim 1), which do not divide into "
                         f"num_groups={num_groups} equal groups")
    weight = _check_channel_vector("group_norm", "weight", weight, x)
    bias = _check_channel_vector("group_norm", "bias", bias, x)
    return _rows_normalized(x, N * num_groups, eps, weight, bias)


def _rows_normalized(x, rows, eps, weight, bias):
    """x cut into `rows` equal rows, each normalized to mean 0 and variance 1 (layer norm without
    its own scale), then scaled and shifted per channel."""
    d = x.numel() // rows if rows else 0
    flat = x.reshape(rows, d)
    ones, zeros = Tensor(np.ones(d, dtype=flat.dtype)), Tensor(np.zeros(d, dtype=flat.dtype))
    y = ops.LayerNorm.apply(flat, ones, zeros, eps=eps).reshape(x.shape)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Instance normalization, as `torch.nn.functional.instance_norm`: each sample's channel of
    `input` (N, C, *) is normalized over its spatial values, then scaled by weight (C,) and shifted
    by bias (C,). use_input_stats=True (training) updates running_mean and running_var (C,), if
    given, with the batch's average of the per-instance mean and unbiased variance;
    use_input_stats=False normalizes with them instead."""
    x = as_tensor(input)
    _check_input("instance_norm", x, min_ndim=3)
    running_mean, running_var, weight, bias = _channel_vectors("instance_norm", x, running_mean, running_var, weight,
                                                               bias)
    if not use_input_stats:
        return _normalize_with_running("instance_norm", "use_input_stats=False", x, running_mean, running_var, weight,
                                       bias, eps)
    L = math.prod(x.shape[2:])
    if L == 1:
        raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, got input of shape "
                         f"{x.shape} (each channel of a sample has one value: its variance is 0)")
    y = _rows_normalized(x, x.shape[0] * x.shape[1], eps, weight, bias)
    if running_mean is not None or running_var is not None:
        _update_running(x, running_mean, running_var, momentum, _instance_statistics)
    return y


# ============================================================================ modules
class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: weight and bias (C,) when `affine`, and the buffers
    running_mean (starts at 0), running_var (starts at 1) and num_batches_tracked when
    `track_running_stats`."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 dtype=None, device=None):
        super().__init__()
        devices.check_device(device, type(self).__name__)
        dtype = default_float() if dtype is None else dtype
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=dtype)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()

    def _check_channels(self, x):
        if x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}({self.num_features}): the input {x.shape} has {x.shape[1]} "
                             f"channels (dim 1), expected {self.num_features}")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = ()  # the input dims this module accepts

    def forward(self, x):
        x = as_tensor(x)
        if x.ndim not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected an input of shape {self._shapes}, got shape {x.shape}")
        self._check_channels(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            _verify_batch_size(type(self).__name__, x.shape)
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the average of every batch so far, each with the same weight
                momentum = 1.0 / int(self.num_batches_tracked.item())
        # batch statistics while training, and in eval mode when there are no running statistics
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return batch_norm(x, self.running_mean if track else None, self.running_var if track else None,
                          self.weight, self.bias, use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) features or (N, C, L) sequences, per channel C = num_features.
    Training mode normalizes with the batch's statistics and updates the running ones
    (momentum=None: their plain average over all batches so far); eval mode uses the running ones."""

    _dims, _shapes = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalization of images (N, C, H, W), per channel C = num_features (see BatchNorm1d)."""

    _dims, _shapes = (4,), "(N, C, H, W)"


class _InstanceNorm(_NormBase):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 dtype=None, device=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, device)

    def forward(self, x):
        x = as_tensor(x)
        if x.ndim not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected an input of shape {self._shapes}, got shape {x.shape}")
        unbatched = x.ndim == self._dims[0]
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features:
            if self.affine or self.track_running_stats:
                self._check_channels(x)
            warnings.warn(f"{type(self).__name__}({self.num_features}): the input {x.shape} has {x.shape[1]} channels "
                          "(dim 1); num_features is not used when affine=False", stacklevel=2)
        y = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                          self.training or not self.track_running_stats,
                          0.0 if self.momentum is None else self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of sequences (N, C, L) or one sequence (C, L): each sample's channel
    over its L values. As PyTorch: affine=False and track_running_stats=False by default."""

    _dims, _shapes = (2, 3), "(N, C, L) or (C, L)"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of images (N, C, H, W) or one image (C, H, W): each sample's channel
    over its H * W values (see InstanceNorm1d)."""

    _dims, _shapes = (3, 4), "(N, C, H, W) or (C, H, W)"


class GroupNorm(Module):
    """Group normalization of (N, C, *): `num_groups` groups of C/G channels, each sample's group
    normalized over its values; weight (C,) starts at 1 and bias at 0 when `affine`. Unlike batch
    norm it does not depend on the batch, so it has no running statistics and no eval mode."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=None, device=None):
        super().__init__()
        devices.check_device(device, "GroupNorm")
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must divide into num_groups={num_groups} "
                             "equal groups")
        dtype = default_float() if dtype is None else dtype
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(np.ones(num_channels, dtype=dtype)) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype=dtype)) if affine else None

    def forward(self, x):
        x = as_tensor(x)
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}): expected an input of shape "
                             f"(N, {self.num_channels}, ...), got shape {x.shape}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
