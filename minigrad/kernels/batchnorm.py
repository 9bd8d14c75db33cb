"""Batch normalization per channel of x (N, C, *), forward and backward, and a channel's statistics
(float32 kernels; other dtypes run on the twins).

    mean, var = mean and variance (divided by n) of channel c's n values (every sample, every position)
    xhat = (x - mean) rstd,   rstd = 1 / sqrt(var + eps),   y = xhat weight + bias
    backward, gh = g weight:  dx = rstd / n (n gh - sum(gh) - xhat sum(gh xhat)),
                              dweight = sum(g xhat),  dbias = sum(g)

The numpy twins are those lines, with numpy's reductions over the axes (0, 2, 3, ...). Those
reductions walk the channel axis in the middle of the array, and the running statistics took two
more passes in float64: a BatchNorm2d of a LeNet-sized batch took 1 ms forwards against
PyTorch's 0.14. The compiled kernels view x as (N, C, S) (S the positions) and give each thread whole
channels: a channel is N runs of S contiguous numbers, read twice for its statistics (its mean,
then the squares of the deviations, in float64) and once more to write y. With S = 1 ((N, C), after
a linear layer) a channel is a column: the passes then go row by row over the thread's channels
side by side (``_column_moments``). The backward reads g and
xhat once for the two sums and once for dx. Sums are accumulated in float64 in any order
("reassoc": LLVM adds many numbers per instruction); float32 inputs, float32 results.
"""
import numpy as np

from ._jit import jit, typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from ._parallel import parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS  # noqa: E402

_SUMS = {"reassoc", "contract"}  # the order of a sum's terms may change (float64 sums of float32 numbers)


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(a, ndim):
    """A (C,) array shaped (1, C, 1, ...) to broadcast against an input of `ndim` dims."""
    return a.reshape((1, -1) + (1,) * (ndim - 2))


# ----------------------------------------------------------------------------- numpy twins
def channel_statistics_numpy(x):
    """x (N, C, *) -> (mean, var) (C,) in float64, var divided by n (each channel's n values)."""
    return x.mean(axis=_axes(x), dtype=np.float64), x.var(axis=_axes(x), dtype=np.float64)


def batch_norm_forward_numpy(x, weight, bias, eps):
    """x (N, C, *), weight and bias (C,) -> (y shaped like x, xhat shaped like x, rstd (1, C, 1, ...))."""
    axes = _axes(x)
    mean = x.mean(axis=axes, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = centred * rstd
    return xhat * _per_channel(weight, x.ndim) + _per_channel(bias, x.ndim), xhat, rstd


def batch_norm_backward_numpy(g, xhat, weight, rstd):
    """g shaped like x -> (dx shaped like x, dweight (C,), dbias (C,))."""
    axes = _axes(xhat)
    n = xhat.size // xhat.shape[1]
    gh = g * _per_channel(weight, g.ndim)  # the gradient reaching xhat
    # mean and var depend on every x of the channel: the two sums carry their share back
    dx = rstd / n * (n * gh - gh.sum(axis=axes, keepdims=True) - xhat * (gh * xhat).sum(axis=axes, keepdims=True))
    return dx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


# ----------------------------------------------------------------------------- numba kernels
def _a3(dtype, readonly=False):
    return types.Array(dtype, 3, "C", readonly=readonly)


def _a1(dtype, readonly=False):
    return types.Array(dtype, 1, "C", readonly=readonly)


def _statistics_signature(dtype):
    """x (N, C, S); mean, var (C,) float64; first, stop (channels)."""
    return types.void(_a3(dtype, True), _a1(types.float64), _a1(types.float64), types.intp, types.intp)


def _forward_signature(dtype):
    """x (N, C, S), weight, bias (C,), eps, y, xhat (N, C, S), rstd (C,); first, stop (channels)."""
    return types.void(_a3(dtype, True), _a1(dtype, True), _a1(dtype, True), types.float64, _a3(dtype), _a3(dtype),
                      _a1(dtype), types.intp, types.intp)


def _backward_signature(dtype):
    """g, xhat (N, C, S), weight, rstd (C,), dx (N, C, S), dweight, dbias (C,); first, stop (channels)."""
    return types.void(_a3(dtype, True), _a3(dtype, True), _a1(dtype, True), _a1(dtype, True), _a3(dtype),
                      _a1(dtype), _a1(dtype), types.intp, types.intp)


@jit(fastmath=_SUMS)
def _moments(x, c):
    """Channel c's mean and variance (divided by n), in float64: the mean first, then the squares
    of the deviations from it (no cancellation, whatever the mean)."""
    n_batch, size = x.shape[0], x.shape[2]
    total = 0.0
    for i in range(n_batch):
        row = x[i, c]
        for s in range(np.uintp(size)):
            total += row[s]
    mean = total / (n_batch * size)
    squares = 0.0
    for i in range(n_batch):
        row = x[i, c]
        for s in range(np.uintp(size)):
            d = row[s] - mean
            squares += d * d
    return mean, squares / (n_batch * size)


@jit(fastmath=_SUMS)
def _column_moments(x2, first, stop, mean, var):
    """_moments of the channels first:stop of x2 (N, C) at once (one number per sample and channel,
    so a channel is a column): row by row, the channels side by side; into mean, var (float64)."""
    n, width, f = x2.shape[0], np.uintp(stop - first), np.uintp(first)
    for j in range(width):
        mean[f + j], var[f + j] = 0.0, 0.0
    for i in range(n):
        row = x2[i]
        for j in range(width):
            mean[f + j] += row[f + j]
    for j in range(width):
        mean[f + j] /= n
    for i in range(n):
        row = x2[i]
        for j in range(width):
            d = row[f + j] - mean[f + j]
            var[f + j] += d * d
    for j in range(width):
        var[f + j] /= n


@typed_jit(_statistics_signature)
def _statistics_channels(x, mean, var, first, stop):
    if x.shape[2] == 1:
        _column_moments(x.reshape((x.shape[0], x.shape[1])), first, stop, mean, var)
        return
    for c in range(first, stop):
        mean[c], var[c] = _moments(x, c)


@typed_jit(_forward_signature, fastmath=_SUMS)
def _forward_channels(x, weight, bias, eps, y, xhat, rstd, first, stop):
    if x.shape[2] == 1:  # (N, C): the channels side by side, row by row
        mean, var = np.empty(x.shape[1]), np.empty(x.shape[1])
        _column_moments(x.reshape((x.shape[0], x.shape[1])), first, stop, mean, var)
        f, width = np.uintp(first), np.uintp(stop - first)
        m, scale, shift = np.empty(width, np.float32), np.empty(width, np.float32), np.empty(width, np.float32)
        for j in range(width):  # y = (x - mean) rstd w + b
            r = 1.0 / np.sqrt(var[f + j] + eps)
            rstd[f + j] = r
            m[j], scale[j], shift[j] = mean[f + j], r, bias[f + j]
        for i in range(x.shape[0]):
            row, out, normed = x[i, :, 0], y[i, :, 0], xhat[i, :, 0]
            for j in range(width):
                v = (row[f + j] - m[j]) * scale[j]
                normed[f + j] = v
                out[f + j] = v * weight[f + j] + shift[j]
        return
    for c in range(first, stop):
        mean, var = _moments(x, c)
        r = 1.0 / np.sqrt(var + eps)
        rstd[c] = r
        m, r32, w, b = np.float32(mean), np.float32(r), weight[c], bias[c]
        for i in range(x.shape[0]):
            row, out, normed = x[i, c], y[i, c], xhat[i, c]
            for s in range(np.uintp(x.shape[2])):
                v = (row[s] - m) * r32
                normed[s] = v
                out[s] = v * w + b


@typed_jit(_backward_signature, fastmath=_SUMS)
def _backward_channels(g, xhat, weight, rstd, dx, dweight, dbias, first, stop):
    n_batch, size = g.shape[0], g.shape[2]
    n = n_batch * size
    if size == 1:  # (N, C): the channels side by side, row by row
        f, width = np.uintp(first), np.uintp(stop - first)
        sum_g, sum_gx = np.zeros(width), np.zeros(width)
        for i in range(n_batch):
            grow, xrow = g[i, :, 0], xhat[i, :, 0]
            for j in range(width):
                sum_g[j] += grow[f + j]
                sum_gx[j] += grow[f + j] * xrow[f + j]
        scale, mean_g, mean_gx = np.empty(width, np.float32), np.empty(width, np.float32), np.empty(width, np.float32)
        for j in range(width):
            dweight[f + j], dbias[f + j] = sum_gx[j], sum_g[j]
            scale[j], mean_g[j], mean_gx[j] = rstd[f + j] * weight[f + j], sum_g[j] / n, sum_gx[j] / n
        for i in range(n_batch):
            grow, xrow, out = g[i, :, 0], xhat[i, :, 0], dx[i, :, 0]
            for j in range(width):
                out[f + j] = scale[j] * (grow[f + j] - mean_g[j] - xrow[f + j] * mean_gx[j])
        return
    for c in range(first, stop):
        sum_g, sum_gx = 0.0, 0.0
        for i in range(n_batch):
            grow, xrow = g[i, c], xhat[i, c]
            for s in range(np.uintp(size)):
                sum_g += grow[s]
                sum_gx += grow[s] * xrow[s]
        dweight[c], dbias[c] = sum_gx, sum_g
        # dx = rstd w / n (n g - sum(g) - xhat sum(g xhat)) = rstd w (g - mean(g) - xhat mean(g xhat))
        scale = np.float32(rstd[c] * weight[c])
        mean_g, mean_gx = np.float32(sum_g / n), np.float32(sum_gx / n)
        for i in range(n_batch):
            grow, xrow, out = g[i, c], xhat[i, c], dx[i, c]
            for s in range(np.uintp(size)):
                out[s] = scale * (grow[s] - mean_g - xrow[s] * mean_gx)


def _as3(x):
    """x (N, C, *) as a C-contiguous (N, C, S) array (a view when x is C-contiguous)."""
    return np.ascontiguousarray(x).reshape(x.shape[0], x.shape[1], -1)


def _threads(x):
    return None if x.size >= PARALLEL_MIN_ELEMENTS else 1


def _compiled(x):
    return x.dtype == np.float32 and x.ndim >= 2 and x.size > 0


def channel_statistics_numba(x):
    """See channel_statistics_numpy."""
    if not _compiled(x):
        return channel_statistics_numpy(x)
    mean, var = np.empty(x.shape[1]), np.empty(x.shape[1])
    parallel_for(_statistics_channels.for_dtype(x.dtype), x.shape[1], _as3(x), mean, var, threads=_threads(x))
    return mean, var


def batch_norm_forward_numba(x, weight, bias, eps):
    """See batch_norm_forward_numpy."""
    if not (_compiled(x) and weight.dtype == bias.dtype == x.dtype):
        return batch_norm_forward_numpy(x, weight, bias, eps)
    y, xhat, rstd = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype), np.empty(x.shape[1], x.dtype)
    parallel_for(_forward_channels.for_dtype(x.dtype), x.shape[1], _as3(x), np.ascontiguousarray(weight),
                 np.ascontiguousarray(bias), float(eps), _as3(y), _as3(xhat), rstd, threads=_threads(x))
    return y, xhat, _per_channel(rstd, x.ndim)


def batch_norm_backward_numba(g, xhat, weight, rstd):
    """See batch_norm_backward_numpy."""
    if not (_compiled(xhat) and g.dtype == weight.dtype == rstd.dtype == xhat.dtype):
        return batch_norm_backward_numpy(g, xhat, weight, rstd)
    dx, dweight, dbias = np.empty(xhat.shape, xhat.dtype), np.empty(xhat.shape[1], xhat.dtype), \
        np.empty(xhat.shape[1], xhat.dtype)
    parallel_for(_backward_channels.for_dtype(xhat.dtype), xhat.shape[1], _as3(g), _as3(xhat),
                 np.ascontiguousarray(weight), np.ascontiguousarray(rstd).reshape(-1), _as3(dx), dweight, dbias,
                 threads=_threads(xhat))
    return dx, dweight, dbias
