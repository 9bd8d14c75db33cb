"""Layer normalisation over the last axis of a batch of rows, forward and backward.

For each row x (D entries) with per-feature ``weight`` and ``bias`` (D,):

    mean = sum(x) / D,  var = sum((x - mean)^2) / D   (biased, computed in two passes),
    rstd = 1 / sqrt(var + eps),  xhat = (x - mean) * rstd,  y = xhat * weight + bias.

The forward also returns ``mean`` and ``rstd`` (R,) for the backward. A constant row has var = 0 and
gives y = bias (finite, since eps > 0). A row whose variance overflows (float32 entries near 3e38)
gives NaN, as an overflow anywhere else does, never a quiet row of zeros.

The backward's dweight and dbias are sums over rows. The compiled version cuts the rows into blocks
of ``ROWS_PER_BLOCK``, sums each block into its own partial row (so threads never write to the same
memory), then adds the partial rows in order. The blocks do not depend on the number of threads, so
the result is the same on every run and on every machine.
"""

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported
from ._parallel import parallel_for  # noqa: E402
from ._rows import as_rows, for_rows, same_rows, use_threads  # noqa: E402
from ._simd import simd_add  # noqa: E402

ROWS_PER_BLOCK = 64  # rows per partial sum of dweight / dbias in the compiled backward


def _check_parameters(name, x, weight, bias=None):
    """weight (and bias) as C-contiguous (D,) arrays of x's dtype, for x (R, D)."""
    params = [weight] if bias is None else [weight, bias]
    checked = []
    for p in params:
        p = as_rows(name, p, ndim=1)
        if p.shape != (x.shape[1],) or p.dtype != x.dtype:
            raise ValueError(f"{name}: parameter {p.shape} {p.dtype} does not fit x {x.shape} {x.dtype}")
        checked.append(p)
    return checked


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------


def layer_norm_forward_numpy(x, weight, bias, eps=1e-5):
    """(y (R, D), mean (R,), rstd (R,)) for x (R, D), weight (D,), bias (D,)."""
    mean = x.mean(axis=-1)
    centered = x - mean[:, None]
    var = (centered * centered).mean(axis=-1)
    rstd = np.where(np.isfinite(var), 1 / np.sqrt(var + eps), np.nan)  # overflow: NaN, not 0
    y = centered * rstd[:, None] * weight + bias
    return y, mean, rstd


def layer_norm_backward_numpy(g, x, weight, mean, rstd):
    """(dx (R, D), dweight (D,), dbias (D,)) from the upstream gradient g (R, D) and the forward's
    x (R, D), weight (D,), mean (R,), rstd (R,)."""
    # layer norm: with xhat = (x - mean) * rstd and gh = g * weight,
    # dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)); dweight = sum_rows(g * xhat); dbias = sum_rows(g)
    xhat = (x - mean[:, None]) * rstd[:, None]
    gh = g * weight
    dx = rstd[:, None] * (
        gh - gh.mean(axis=-1, keepdims=True) - xhat * (gh * xhat).mean(axis=-1, keepdims=True)
    )
    return dx, (g * xhat).sum(axis=0), g.sum(axis=0)


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba)
# ---------------------------------------------------------------------------------------------------


@jit(error_model="numpy")
def _layer_norm_forward_rows(x, weight, bias, eps, y, mean, rstd, start, stop):
    """y[r], mean[r], rstd[r] for rows start <= r < stop of x (R, D); weight, bias (D,)."""
    n = x.shape[1]
    size = x.dtype.type(n)
    for r in range(start, stop):
        total = x.dtype.type(0)
        for j in range(n):
            total = simd_add(total, x[r, j])
        row_mean = total / size
        square_sum = x.dtype.type(0)  # second pass: sum of squared deviations (no cancellation)
        for j in range(n):
            d = x[r, j] - row_mean
            square_sum = simd_add(square_sum, d * d)
        row_rstd = x.dtype.type(1) / np.sqrt(square_sum / size + eps)
        if not np.isfinite(square_sum):  # the variance overflowed: NaN, not silent zeros
            row_rstd = x.dtype.type(np.nan)
        for j in range(n):
            y[r, j] = (x[r, j] - row_mean) * row_rstd * weight[j] + bias[j]
        mean[r] = row_mean
        rstd[r] = row_rstd


@jit(error_model="numpy")
def _layer_norm_backward_blocks(g, x, weight, mean, rstd, dx, dweight_parts, dbias_parts, first, last):
    """dx for the rows of blocks first <= b < last, and their partial sums
    dweight_parts[b], dbias_parts[b] (n_blocks, D) of dweight and dbias."""
    # layer norm: with xhat = (x - mean) * rstd and gh = g * weight,
    # dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)); dweight = sum_rows(g * xhat); dbias = sum_rows(g)
    n_rows, n = x.shape
    size = x.dtype.type(n)
    for block in range(first, last):  # block b holds rows [b * ROWS_PER_BLOCK, ...) and partial row b
        for r in range(block * ROWS_PER_BLOCK, min((block + 1) * ROWS_PER_BLOCK, n_rows)):
            row_mean, row_rstd = mean[r], rstd[r]
            gh_sum = x.dtype.type(0)
            gh_xhat_sum = x.dtype.type(0)
            for j in range(n):
                xhat = (x[r, j] - row_mean) * row_rstd
                gh = g[r, j] * weight[j]
                gh_sum = simd_add(gh_sum, gh)
                gh_xhat_sum = simd_add(gh_xhat_sum, gh * xhat)
            gh_mean, gh_xhat_mean = gh_sum / size, gh_xhat_sum / size
            for j in range(n):
                xhat = (x[r, j] - row_mean) * row_rstd
                dx[r, j] = row_rstd * (g[r, j] * weight[j] - gh_mean - xhat * gh_xhat_mean)
                dweight_parts[block, j] += g[r, j] * xhat
                dbias_parts[block, j] += g[r, j]


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def layer_norm_forward_numba(x, weight, bias, eps=1e-5):
    """(y (R, D), mean (R,), rstd (R,)) for x (R, D), weight (D,), bias (D,); float32 or float64."""
    x = as_rows("layer_norm_forward", x)
    weight, bias = _check_parameters("layer_norm_forward", x, weight, bias)
    y = np.empty_like(x)
    mean = np.empty(x.shape[0], dtype=x.dtype)
    rstd = np.empty_like(mean)
    args = (x, weight, bias, x.dtype.type(eps), y, mean, rstd)
    for_rows(_layer_norm_forward_rows, x, *args)
    return y, mean, rstd


def layer_norm_backward_numba(g, x, weight, mean, rstd):
    """(dx (R, D), dweight (D,), dbias (D,)) from the upstream gradient g (R, D) and the forward's
    x (R, D), weight (D,), mean (R,), rstd (R,)."""
    x = as_rows("layer_norm_backward", x)
    g = same_rows("layer_norm_backward", x, g)
    (weight,) = _check_parameters("layer_norm_backward", x, weight)
    mean = as_rows("layer_norm_backward", mean, ndim=1)
    rstd = as_rows("layer_norm_backward", rstd, ndim=1)
    if mean.shape != (x.shape[0],) or rstd.shape != (x.shape[0],):
        raise ValueError(
            f"layer_norm_backward: mean {mean.shape} and rstd {rstd.shape} do not fit x {x.shape}"
        )
    mean, rstd = mean.astype(x.dtype, copy=False), rstd.astype(x.dtype, copy=False)
    n_blocks = -(-x.shape[0] // ROWS_PER_BLOCK)
    dx = np.empty_like(x)
    dweight_parts = np.zeros((n_blocks, x.shape[1]), dtype=x.dtype)
    dbias_parts = np.zeros_like(dweight_parts)
    args = (g, x, weight, mean, rstd, dx, dweight_parts, dbias_parts)
    if x.size:  # blocks of rows shared by the threads
        parallel_for(_layer_norm_backward_blocks, n_blocks, *args, threads=None if use_threads(x) else 1)
    if n_blocks == 1:  # (one block: its partial rows are the sums)
        return dx, dweight_parts[0], dbias_parts[0]
    # Add the partial rows (a fixed order for a given shape: the same result on every run).
    return dx, dweight_parts.sum(axis=0), dbias_parts.sum(axis=0)
