"""Weight initialisation, in place, from minigrad's seeded generator (`minigrad.manual_seed`).

Each function fills `tensor.data` under the hood and returns the tensor."""
import math

import numpy as np

from ..random import rng


def _fill(tensor, values, by):
    tensor.numpy()[...] = values
    tensor._bump(by)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Samples from N(mean, std^2), from `generator` (a `minigrad.Generator`) or the default one."""
    return _fill(tensor, rng(generator).normal(mean, std, tensor.shape), "init.normal_")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Samples from U(a, b), from `generator` or the default one."""
    return _fill(tensor, rng(generator).uniform(a, b, tensor.shape), "init.uniform_")


def zeros_(tensor):
    return _fill(tensor, 0.0, "init.zeros_")


def ones_(tensor):
    return _fill(tensor, 1.0, "init.ones_")


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), so activations keep
    their variance both forwards and backwards. For a weight (out, in): fan_in = in, fan_out = out."""
    if tensor.ndim < 2:
        raise ValueError(f"xavier_uniform_: needs a tensor with at least 2 dims, got shape {tensor.shape}")
    receptive = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    fan_in, fan_out = tensor.shape[1] * receptive, tensor.shape[0] * receptive
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)
