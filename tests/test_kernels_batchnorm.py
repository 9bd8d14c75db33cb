"""The batch-norm kernels (minigrad/kernels/batchnorm.py): the compiled float32 kernels, measured
against their numpy twins run in float64 on the same float32 inputs, within bounds derived from
float32 rounding; channels far from zero (no cancellation in the variance); one thread and two; and
other dtypes left to the twins."""
import numpy as np
import pytest

from helpers import num_threads
from minigrad.kernels.batchnorm import (
    batch_norm_backward_numba, batch_norm_backward_numpy, batch_norm_forward_numba, batch_norm_forward_numpy,
    channel_statistics_numba, channel_statistics_numpy,
)

EPS = float(np.finfo(np.float32).eps)


def _inputs(shape, seed, offset=0.0):
    rng = np.random.default_rng(seed)
    x = (offset + rng.standard_normal(shape) * 2).astype(np.float32)
    c = shape[1]
    weight, bias = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    return x, weight, bias, rng.standard_normal(shape).astype(np.float32)


def _channel(a, ndim):
    return a.reshape((1, -1) + (1,) * (ndim - 2))


@pytest.mark.parametrize("shape, offset, threads", [((8, 3), 0.0, 1), ((8, 3, 1), 0.0, 1), ((256, 200), 5.0, 2),
                                                    ((4, 5, 7), 0.0, 1), ((16, 16, 14, 14), 0.0, 2),
                                                    ((6, 4, 9, 9), 1000.0, 2)])
def test_batch_norm_kernels_match_float64(shape, offset, threads):
    x, weight, bias, g = _inputs(shape, seed=len(shape), offset=offset)
    x64, w64, b64, g64 = (a.astype(np.float64) for a in (x, weight, bias, g))
    with num_threads(threads):
        y, xhat, rstd = batch_norm_forward_numba(x, weight, bias, 1e-5)
        mean, var = channel_statistics_numba(x)
    y64, xhat64, rstd64 = batch_norm_forward_numpy(x64, w64, b64, 1e-5)
    mean64, var64 = channel_statistics_numpy(x64)
    assert y.dtype == xhat.dtype == rstd.dtype == np.float32 and rstd.shape == _channel(weight, x.ndim).shape
    # statistics summed in float64: within float64 rounding of sums of n float32 numbers
    n = x.size // x.shape[1]
    assert np.all(np.abs(mean - mean64) <= n * 1e-15 * (np.abs(mean64) + 2))
    assert np.all(np.abs(var - var64) <= 4 * n * 1e-16 * var64)
    # xhat = (x - mean) rstd: x - mean is one float32 rounding (of a float32 mean), rstd one more,
    # the product one more: 4 eps of |xhat| (plus the mean's rounding, eps |mean| rstd)
    assert np.all(np.abs(rstd - rstd64) <= 2 * EPS * rstd64)
    bound = 4 * EPS * np.abs(xhat64) + 2 * EPS * np.abs(_channel(mean64, x.ndim)) * rstd64
    assert np.all(np.abs(xhat - xhat64) <= bound)
    assert np.all(np.abs(y - y64) <= np.abs(_channel(w64, x.ndim)) * (bound + EPS * np.abs(xhat64))
                  + 2 * EPS * np.abs(y64))
    # backward, from the same float32 xhat: dx = rstd w (g - mean(g) - xhat mean(g xhat))
    with num_threads(threads):
        dx, dw, db = batch_norm_backward_numba(g, xhat, weight, rstd)
    dx64, dw64, db64 = batch_norm_backward_numpy(g64, xhat.astype(np.float64), w64, rstd.astype(np.float64))
    axes = (0,) + tuple(range(2, x.ndim))
    # float64 sums of float32 numbers, rounded once to float32; dw's products g xhat are each rounded
    # to float32 first (eps of each term)
    assert np.all(np.abs(db - db64) <= 2 * EPS * np.abs(db64) + n * 1e-15 * np.abs(g64).sum(axis=axes))
    assert np.all(np.abs(dw - dw64) <= 2 * EPS * np.abs(dw64) + EPS * np.abs(g64 * xhat).sum(axis=axes))
    mean_g = np.abs(g64).mean(axis=axes, keepdims=True)
    mean_gx = np.abs(g64 * xhat).mean(axis=axes, keepdims=True)
    size = np.abs(rstd * _channel(w64, x.ndim)) * (np.abs(g64) + mean_g + np.abs(xhat) * mean_gx)
    assert np.all(np.abs(dx - dx64) <= 6 * EPS * size)


def test_batch_norm_kernels_leave_float64_to_the_twins():
    x, weight, bias, g = (a.astype(np.float64) for a in _inputs((5, 3, 4), seed=9))
    for got, want in zip(batch_norm_forward_numba(x, weight, bias, 1e-5), batch_norm_forward_numpy(x, weight, bias, 1e-5)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(channel_statistics_numba(x), channel_statistics_numpy(x)):
        np.testing.assert_array_equal(got, want)
