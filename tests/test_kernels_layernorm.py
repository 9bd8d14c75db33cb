"""The layer norm kernels (minigrad/kernels/layernorm.py), compiled and reference: the compiled
kernels agree with the numpy twins (random shapes, batches split over threads, non-contiguous
rows); constant rows give the bias; the backward matches central differences and gives the same
bits on one thread as on several; mismatched parameters are refused.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import DTYPES, assert_close, central_difference, magnitude, num_threads
from minigrad.kernels.layernorm import layer_norm_backward_numba, layer_norm_backward_numpy
from minigrad.kernels.layernorm import layer_norm_forward_numba, layer_norm_forward_numpy
from strategies import row_counts, row_lengths, seeds


def check_layer_norm(x, weight, bias, g, eps=1e-5):
    y, mean, rstd = layer_norm_forward_numpy(x, weight, bias, eps)
    got = layer_norm_forward_numba(x, weight, bias, eps)
    for got_array, expected in zip(got, (y, mean, rstd)):
        assert_close(got_array, expected, scale=magnitude(expected))
    expected = layer_norm_backward_numpy(g, x, weight, mean, rstd)
    got = layer_norm_backward_numba(g, x, weight, mean, rstd)
    # dx = rstd * (g * weight - ...) can cancel to 0: its rounding scales with rstd * |g * weight|;
    # dweight and dbias are sums over rows: their rounding grows with the number of rows
    dx_scale = magnitude(rstd[:, None] * g * weight)
    sum_scale = np.sqrt(x.shape[0]) * magnitude(g * (x - mean[:, None]) * rstd[:, None], g)
    for got_array, expected_array, scale in zip(got, expected, (dx_scale, sum_scale, sum_scale)):
        assert_close(got_array, expected_array, scale=scale)
    return got


@given(
    n_rows=row_counts,
    n_features=row_lengths,
    dtype=st.sampled_from(DTYPES),
    eps=st.sampled_from([1e-5, 0.1]),
    seed=seeds,
)
def test_layer_norm_matches_numpy(n_rows, n_features, dtype, eps, seed):
    rng = np.random.default_rng(seed)
    x = (2 + 3 * rng.standard_normal((n_rows, n_features))).astype(dtype)
    weight, bias = rng.standard_normal(n_features).astype(dtype), rng.standard_normal(n_features).astype(
        dtype
    )
    check_layer_norm(x, weight, bias, rng.standard_normal((n_rows, n_features)).astype(dtype), eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(768, 128), (9000, 128), (2000, 33), (3, 20_000)])
def test_layer_norm_on_batches_split_over_threads_and_non_contiguous(shape, dtype):
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(dtype)
    weight, bias = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    check_layer_norm(x, weight, bias, g)
    check_layer_norm(np.asfortranarray(x)[::2], weight, bias, np.asfortranarray(g)[::2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_constant_rows_give_the_bias(dtype):
    x = np.array([[2.5] * 7, [-1e4] * 7, [0.0] * 7, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]], dtype=dtype)
    weight, bias = np.linspace(0.5, 2, 7).astype(dtype), np.linspace(-1, 1, 7).astype(dtype)
    g = np.ones_like(x)
    for forward, backward in [
        (layer_norm_forward_numba, layer_norm_backward_numba),
        (layer_norm_forward_numpy, layer_norm_backward_numpy),
    ]:
        y, mean, rstd = forward(x, weight, bias, 1e-5)
        assert np.all(np.isfinite(y)) and np.all(np.isfinite(rstd))
        np.testing.assert_allclose(
            y[:3], np.broadcast_to(bias, (3, 7)), atol=1e-3 if dtype == np.float32 else 1e-9
        )
        assert all(np.all(np.isfinite(a)) for a in backward(g, x, weight, mean, rstd))


def test_layer_norm_backward_matches_central_differences():
    rng = np.random.default_rng(5)
    x, weight, bias = rng.standard_normal((4, 6)), rng.standard_normal(6), rng.standard_normal(6)
    upstream = rng.standard_normal((4, 6))  # the loss is sum(y * upstream)

    def loss(x_, weight_, bias_):
        return np.sum(layer_norm_forward_numpy(x_, weight_, bias_, 1e-5)[0] * upstream)

    _, mean, rstd = layer_norm_forward_numpy(x, weight, bias, 1e-5)
    for backward in [layer_norm_backward_numpy, layer_norm_backward_numba]:
        dx, dweight, dbias = backward(upstream, x, weight, mean, rstd)
        np.testing.assert_allclose(
            dx, central_difference(lambda z: loss(z, weight, bias), x.copy()), rtol=1e-6, atol=1e-8
        )
        np.testing.assert_allclose(
            dweight, central_difference(lambda w: loss(x, w, bias), weight.copy()), rtol=1e-6, atol=1e-8
        )
        np.testing.assert_allclose(
            dbias, central_difference(lambda b: loss(x, weight, b), bias.copy()), rtol=1e-6, atol=1e-8
        )


def test_layer_norm_backward_is_deterministic_whatever_the_thread_count():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1000, 96)).astype(np.float32)
    weight, g = rng.standard_normal(96).astype(np.float32), rng.standard_normal((1000, 96)).astype(np.float32)
    _, mean, rstd = layer_norm_forward_numba(x, weight, np.zeros(96, np.float32))
    first = layer_norm_backward_numba(g, x, weight, mean, rstd)
    with num_threads(1):
        single = layer_norm_backward_numba(g, x, weight, mean, rstd)
    again = layer_norm_backward_numba(g, x, weight, mean, rstd)
    for a, b, c in zip(first, single, again):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_layer_norm_rejects_mismatched_parameters():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError):
        layer_norm_forward_numba(x, np.ones(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError):
        layer_norm_forward_numba(x, np.ones(3, np.float64), np.zeros(3, np.float64))


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("forward", [layer_norm_forward_numpy, layer_norm_forward_numba])
def test_a_row_whose_variance_overflows_gives_nan_not_zeros(forward):
    """float32 entries near 3e38: their variance overflows. Both twins say NaN for that row (as an
    overflow anywhere else does), and leave the other rows alone."""
    x = np.array([[3e38, 3e38, -3e38, 1.0], [1.0, 2.0, 3.0, 4.0]], dtype=np.float32)
    weight, bias = np.ones(4, np.float32), np.zeros(4, np.float32)
    y, _, rstd = forward(x, weight, bias)
    assert np.isnan(y[0]).all() and np.isnan(rstd[0])
    expected, _, _ = layer_norm_forward_numpy(x[1:].astype(np.float64), weight, bias)
    np.testing.assert_allclose(y[1], expected[0], rtol=1e-5)
