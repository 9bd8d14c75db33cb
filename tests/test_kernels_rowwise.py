"""The row-wise kernels (softmax, log-softmax, layer norm, GELU, cross-entropy), compiled and reference.

Three kinds of checks:
- every compiled kernel (``*_numba``) agrees with its numpy twin (``*_numpy``) on random shapes,
  both dtypes, non-contiguous inputs, and batches large enough to run on several threads;
- edge values: logits of +-1e4, -inf entries, fully masked (all -inf) rows, constant rows;
- the numpy twins against independent formulas: explicit Jacobians, log(softmax), the smoothed
  target distribution, math.erf, and central differences in float64.
"""

import math

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad.kernels import gelu as gelu_module
from minigrad.kernels import softmax as softmax_module
from minigrad.kernels._jit import jit
from minigrad.kernels.cross_entropy import cross_entropy_backward_numba, cross_entropy_backward_numpy
from minigrad.kernels.cross_entropy import cross_entropy_forward_numba, cross_entropy_forward_numpy
from minigrad.kernels.gelu import (
    gelu_backward_numba,
    gelu_backward_numpy,
    gelu_forward_numba,
    gelu_forward_numpy,
)
from minigrad.kernels.layernorm import layer_norm_backward_numba, layer_norm_backward_numpy
from minigrad.kernels.layernorm import layer_norm_forward_numba, layer_norm_forward_numpy
from minigrad.kernels.softmax import fast_exp, log_softmax_backward_numba, log_softmax_backward_numpy
from minigrad.kernels.softmax import log_softmax_forward_numba, log_softmax_forward_numpy
from minigrad.kernels.softmax import softmax_backward_numba, softmax_backward_numpy
from minigrad.kernels.softmax import softmax_forward_numba, softmax_forward_numpy

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 1e-5, np.float64: 1e-12}
ATOL = {np.float32: 1e-6, np.float64: 1e-12}

rows = st.integers(1, 70)
columns = st.sampled_from([1, 2, 3, 7, 16, 17, 31, 32, 33, 64, 65, 100, 129])
seeds = st.integers(0, 2**32 - 1)


def assert_close(got, expected, scale=1.0):
    """got == expected to the tolerance of its dtype; ``scale`` widens atol for large values."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    dtype = got.dtype.type
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=ATOL[dtype] * scale)


def magnitude(*arrays):
    return max(1.0, *(float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0)) for a in arrays))


def central_difference(f, x, h=1e-6):
    """d f(x) / dx (same shape as x) for a scalar function f of a float64 array, by central differences."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + h
        up = f(x)
        x[index] = saved - h
        down = f(x)
        x[index] = saved
        grad[index] = (up - down) / (2 * h)
    return grad


# ---------------------------------------------------------------------------------------------------
# softmax and log-softmax
# ---------------------------------------------------------------------------------------------------


def check_softmax_family(x, g):
    """All four softmax kernels: numba == numpy on rows x and upstream gradient g."""
    for forward_numba, forward_numpy, backward_numba, backward_numpy in [
        (softmax_forward_numba, softmax_forward_numpy, softmax_backward_numba, softmax_backward_numpy),
        (
            log_softmax_forward_numba,
            log_softmax_forward_numpy,
            log_softmax_backward_numba,
            log_softmax_backward_numpy,
        ),
    ]:
        y = forward_numpy(np.ascontiguousarray(x))
        assert_close(forward_numba(x), y, scale=magnitude(y))
        dx = backward_numpy(y, np.ascontiguousarray(g))
        assert_close(backward_numba(y, g), dx, scale=magnitude(dx, g))


@given(
    n_rows=rows,
    n_columns=columns,
    dtype=st.sampled_from(DTYPES),
    spread=st.sampled_from([0.1, 3.0, 30.0]),
    seed=seeds,
)
def test_softmax_kernels_match_numpy(n_rows, n_columns, dtype, spread, seed):
    rng = np.random.default_rng(seed)
    x = (spread * rng.standard_normal((n_rows, n_columns))).astype(dtype)
    g = rng.standard_normal((n_rows, n_columns)).astype(dtype)
    check_softmax_family(x, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3072, 64), (600, 65), (2, 40_000), (40_000, 1)])
def test_softmax_kernels_on_batches_split_over_threads(shape, dtype):
    rng = np.random.default_rng(shape[0])
    x = (3 * rng.standard_normal(shape)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if dtype == np.float32 and shape[0] >= 2 and softmax_module.n_threads() > 1:
        assert softmax_module.use_threads(x)  # (float64 always runs on one thread)
    check_softmax_family(x, g)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_kernels_accept_non_contiguous_rows(dtype):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((40, 66)).astype(dtype)
    for x in [base.T, base[:, ::2], base[::3, 1:], np.asfortranarray(base)]:
        check_softmax_family(x, rng.standard_normal(x.shape).astype(dtype).T.copy().T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_extreme_and_masked_rows(dtype):
    inf = np.inf
    x = np.array(
        [
            [1e4, -1e4, 0.0, 1e4 - 1, 3.0],
            [-1e4, -1e4, -1e4, -1e4, -1e4],
            [0.5, -inf, 2.0, -inf, -inf],
            [-inf, -inf, -inf, -inf, -inf],  # fully masked
            [-inf, -inf, 7.0, -inf, -inf],
        ],
        dtype=dtype,
    )
    g = np.arange(1.0, 26.0).reshape(5, 5).astype(dtype)
    with np.errstate(invalid="ignore"):  # row 3: -inf - (-inf)
        exact = np.exp(x.astype(np.float64) - np.max(x, axis=1, keepdims=True))
    exact[3] = 0
    exact /= np.where(exact.sum(axis=1, keepdims=True) == 0, 1, exact.sum(axis=1, keepdims=True))
    for forward, backward in [
        (softmax_forward_numba, softmax_backward_numba),
        (softmax_forward_numpy, softmax_backward_numpy),
    ]:
        y = forward(x)
        assert y.dtype == dtype and np.all(np.isfinite(y))
        np.testing.assert_allclose(y, exact, rtol=RTOL[dtype], atol=ATOL[dtype])
        assert np.all(y[3] == 0)  # fully masked row: zero weights, not NaN
        assert np.all(np.isfinite(backward(y, g)))
        assert np.all(backward(y, g)[3] == 0)
    for forward, backward in [
        (log_softmax_forward_numba, log_softmax_backward_numba),
        (log_softmax_forward_numpy, log_softmax_backward_numpy),
    ]:
        y = forward(x)
        assert not np.any(np.isnan(y))
        assert np.all(y[3] == -inf)
        log_total = np.log1p(np.exp(-1.0))  # row 0: lse = 1e4 + log(1 + e^-1) (other terms < e^-9990)
        np.testing.assert_allclose(y[0], x[0].astype(np.float64) - 1e4 - log_total, rtol=RTOL[dtype])
        assert y[4, 2] == 0 and np.all(y[4, [0, 1, 3, 4]] == -inf)
        dx = backward(y, g)
        assert np.all(np.isfinite(dx))
        np.testing.assert_array_equal(dx[3], g[3])  # exp(-inf) = 0, so dx = g


def test_softmax_backward_matches_the_jacobian():
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((1, 6)), rng.standard_normal((1, 6))
    y = softmax_forward_numpy(x)
    jacobian = np.diag(y[0]) - np.outer(y[0], y[0])  # dy_i / dx_j, symmetric
    np.testing.assert_allclose(softmax_backward_numpy(y, g)[0], jacobian.T @ g[0], rtol=1e-13, atol=1e-15)
    log_jacobian = np.eye(6) - np.outer(np.ones(6), y[0])  # d log y_i / dx_j = delta_ij - y_j
    np.testing.assert_allclose(
        log_softmax_backward_numpy(np.log(y), g)[0], log_jacobian.T @ g[0], rtol=1e-13, atol=1e-15
    )


def test_log_softmax_is_the_log_of_softmax():
    rng = np.random.default_rng(2)
    x = 5 * rng.standard_normal((7, 11))
    np.testing.assert_allclose(
        log_softmax_forward_numpy(x), np.log(softmax_forward_numpy(x)), rtol=1e-13, atol=1e-13
    )
    np.testing.assert_allclose(softmax_forward_numpy(x).sum(axis=1), 1.0, rtol=1e-15)


@jit(error_model="numpy")
def _fast_exp_all(x, out):
    for i in range(x.size):
        out[i] = fast_exp(x[i])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_exp_is_accurate_and_handles_special_values(dtype):
    x = np.concatenate([np.linspace(-80, 80, 100_001), [-1e-30, 0.0, 1e-30]]).astype(dtype)
    out = np.empty_like(x)
    _fast_exp_all(x, out)
    exact = np.exp(x.astype(np.float64))
    ulp = np.finfo(dtype).eps
    np.testing.assert_array_less(np.abs(out - exact) / exact, 4 * ulp)
    special = np.array([-np.inf, np.nan, np.inf, -800.0, 800.0, -100.0, 100.0], dtype=dtype)
    out = np.empty_like(special)
    _fast_exp_all(special, out)
    assert out[0] == 0 and np.isnan(out[1]) and out[2] == np.inf and out[3] == 0 and out[4] == np.inf
    if dtype == np.float32:  # exp(-100) would be subnormal: flushed to 0; exp(100) overflows
        assert out[5] == 0 and out[6] == np.inf
    else:
        np.testing.assert_allclose(out[5:], np.exp([-100.0, 100.0]), rtol=4 * ulp)


@pytest.mark.parametrize("kernel", [softmax_forward_numba, log_softmax_forward_numba, softmax_forward_numpy])
def test_softmax_forward_checks_its_input_and_handles_empty_rows(kernel):
    assert kernel(np.zeros((0, 5), np.float32)).shape == (0, 5)
    assert kernel(np.zeros((3, 0), np.float64)).shape == (3, 0)
    if kernel is not softmax_forward_numpy:
        with pytest.raises(TypeError):
            kernel(np.zeros((2, 3), np.int64))
        with pytest.raises(ValueError):
            kernel(np.zeros(3, np.float32))


# ---------------------------------------------------------------------------------------------------
# cross-entropy
# ---------------------------------------------------------------------------------------------------


def check_cross_entropy(logits, targets, grad_losses, ignore_index, smoothing):
    """numba == numpy, forward and backward."""
    losses, lse = cross_entropy_forward_numpy(logits, targets, ignore_index, smoothing)
    got_losses, got_lse = cross_entropy_forward_numba(logits, targets, ignore_index, smoothing)
    assert_close(got_losses, losses, scale=magnitude(losses))
    assert_close(got_lse, lse, scale=magnitude(lse))
    dlogits = cross_entropy_backward_numpy(logits, targets, lse, grad_losses, ignore_index, smoothing)
    got = cross_entropy_backward_numba(logits, targets, lse, grad_losses, ignore_index, smoothing)
    assert_close(got, dlogits, scale=magnitude(grad_losses))
    return losses, dlogits


@given(
    n_rows=rows,
    n_classes=columns,
    dtype=st.sampled_from(DTYPES),
    smoothing=st.sampled_from([0.0, 0.1, 1.0]),
    ignore_index=st.sampled_from([-100, 0]),
    seed=seeds,
)
def test_cross_entropy_matches_numpy(n_rows, n_classes, dtype, smoothing, ignore_index, seed):
    rng = np.random.default_rng(seed)
    logits = (4 * rng.standard_normal((n_rows, n_classes))).astype(dtype)
    targets = rng.integers(0, n_classes, n_rows)
    targets[rng.random(n_rows) < 0.2] = ignore_index
    losses, dlogits = check_cross_entropy(
        logits, targets, rng.standard_normal(n_rows).astype(dtype), ignore_index, smoothing
    )
    ignored = targets == ignore_index
    assert np.all(losses[ignored] == 0) and np.all(dlogits[ignored] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(768, 65), (64, 5000)])
def test_cross_entropy_on_batches_split_over_threads(shape, dtype):
    rng = np.random.default_rng(shape[1])
    logits = (3 * rng.standard_normal(shape)).astype(dtype)
    targets = rng.integers(0, shape[1], shape[0])
    targets[::7] = -100
    check_cross_entropy(logits, targets, rng.standard_normal(shape[0]).astype(dtype), -100, 0.1)
    every_other_class = np.asfortranarray(logits)[:, ::2]  # non-contiguous rows
    targets = np.where(targets == -100, -100, targets // 2)
    check_cross_entropy(every_other_class, targets, np.ones(shape[0], dtype), -100, 0.0)


def test_cross_entropy_equals_minus_log_softmax_at_the_target():
    rng = np.random.default_rng(3)
    logits, targets = rng.standard_normal((9, 6)), rng.integers(0, 6, 9)
    expected = -np.log(softmax_forward_numpy(logits))[np.arange(9), targets]
    losses, lse = cross_entropy_forward_numpy(logits, targets, -100, 0.0)
    np.testing.assert_allclose(losses, expected, rtol=1e-13)
    np.testing.assert_allclose(lse, np.log(np.exp(logits).sum(axis=1)), rtol=1e-14)


def test_cross_entropy_with_smoothing_equals_cross_entropy_with_the_smoothed_distribution():
    rng = np.random.default_rng(4)
    n_rows, n_classes, eps = 8, 5, 0.3
    logits, targets = rng.standard_normal((n_rows, n_classes)), rng.integers(0, n_classes, n_rows)
    target_distribution = np.full((n_rows, n_classes), eps / n_classes)
    target_distribution[np.arange(n_rows), targets] += 1 - eps
    log_p = np.log(softmax_forward_numpy(logits))
    losses, lse = cross_entropy_forward_numpy(logits, targets, -100, eps)
    np.testing.assert_allclose(losses, -(target_distribution * log_p).sum(axis=1), rtol=1e-13)
    grad_losses = rng.standard_normal(n_rows)
    dlogits = cross_entropy_backward_numpy(logits, targets, lse, grad_losses, -100, eps)
    expected = grad_losses[:, None] * (np.exp(log_p) - target_distribution)
    np.testing.assert_allclose(dlogits, expected, rtol=1e-12, atol=1e-15)
    numeric = central_difference(
        lambda z: cross_entropy_forward_numpy(z, targets, -100, eps)[0] @ grad_losses, logits.copy()
    )
    np.testing.assert_allclose(dlogits, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_with_logits_of_1e4(dtype, smoothing):
    logits = np.array(
        [[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4, 1e4, 1e4], [5.0, -1e4, 2.0, 1.0]], dtype=dtype
    )
    targets = np.array([3, 0, 2])
    exact = logits.astype(np.float64)
    log_p = exact - exact.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    q = np.full(logits.shape, smoothing / 4)
    q[np.arange(3), targets] += 1 - smoothing
    expected_losses = -(q * log_p).sum(axis=1)
    expected_grad = np.exp(log_p) - q
    for forward, backward in [
        (cross_entropy_forward_numba, cross_entropy_backward_numba),
        (cross_entropy_forward_numpy, cross_entropy_backward_numpy),
    ]:
        losses, lse = forward(logits, targets, -100, smoothing)
        assert np.all(np.isfinite(losses)) and np.all(np.isfinite(lse))
        # the loss never forms lse - x[t] from two numbers near 1e4: it has full relative precision
        np.testing.assert_allclose(losses, expected_losses, rtol=10 * RTOL[dtype])
        dlogits = backward(logits, targets, lse, np.ones(3, dtype), -100, smoothing)
        # exp(x - lse) carries lse's rounding: ulp(1e4) / 2 = 5e-4 in float32
        tolerance = 1e-3 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(dlogits, expected_grad, rtol=tolerance, atol=tolerance)


def test_cross_entropy_with_masked_logits():
    logits = np.array([[0.0, -np.inf, 1.0, 2.0], [-np.inf, 3.0, -np.inf, -np.inf]], dtype=np.float32)
    for forward in [cross_entropy_forward_numba, cross_entropy_forward_numpy]:
        losses, lse = forward(logits, np.array([2, 1]), -100, 0.0)
        np.testing.assert_allclose(losses, [np.log(1 + np.e + np.e**2) - 1, 0.0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("forward", [cross_entropy_forward_numba, cross_entropy_forward_numpy])
@pytest.mark.parametrize("bad", [5, -1, 1000])
def test_cross_entropy_rejects_targets_out_of_range(forward, bad):
    logits = np.zeros((4, 5), np.float32)
    with pytest.raises(IndexError, match=rf"target {bad} in row 2 .*5 classes"):
        forward(logits, np.array([0, -100, bad, 1]), -100, 0.0)
    with pytest.raises(IndexError):
        cross_entropy_backward_numba(
            logits, np.array([0, 1, bad, 1]), np.zeros(4, np.float32), np.ones(4, np.float32)
        )


# ---------------------------------------------------------------------------------------------------
# layer norm
# ---------------------------------------------------------------------------------------------------


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
    n_rows=rows,
    n_features=columns,
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
@pytest.mark.parametrize("shape", [(768, 128), (2000, 33), (3, 20_000)])
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
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = layer_norm_backward_numba(g, x, weight, mean, rstd)
    finally:
        numba.set_num_threads(threads)
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


# ---------------------------------------------------------------------------------------------------
# GELU
# ---------------------------------------------------------------------------------------------------

shapes = st.lists(st.integers(0, 9), min_size=0, max_size=3).map(tuple)


@given(
    shape=shapes,
    dtype=st.sampled_from(DTYPES),
    approximate=st.booleans(),
    spread=st.sampled_from([1.0, 6.0]),
    seed=seeds,
)
def test_gelu_matches_numpy(shape, dtype, approximate, spread, seed):
    rng = np.random.default_rng(seed)
    x = np.asarray(spread * rng.standard_normal(shape), dtype=dtype)
    g = np.asarray(rng.standard_normal(shape), dtype=dtype)
    y = gelu_forward_numpy(x, approximate)
    got = gelu_forward_numba(x, approximate)
    assert got.shape == x.shape
    if dtype == np.float32 and not approximate:
        assert_exact_gelu_float32_close(x, g)
    assert_close(got, y, scale=magnitude(y))
    assert_close(
        gelu_backward_numba(x, g, approximate), gelu_backward_numpy(x, g, approximate), scale=magnitude(g)
    )


# The float32 exact kernel against the numpy twin (computed in float64, rounded once): measured over
# a dense grid of x in [-14, 14] and random values, the forward's relative error is at most 3.2 units
# of float32 epsilon (3.9e-7) and the backward's error at most 3 epsilon times |g| (|Phi| + |x phi|)
# <= 1.2 |g|. The tolerances below leave a factor of about 2 over that. The backward's error is not
# bounded relative to dx itself: gelu' = Phi + x phi crosses 0 at x = -0.75, where the two terms cancel.
GELU32_RTOL = 1e-6  # 8.4 epsilon
GELU32_ATOL = 1e-37  # results below 1.2e-38 * |x| are subnormal and lose relative precision


def assert_exact_gelu_float32_close(x, g):
    np.testing.assert_allclose(
        gelu_forward_numba(x), gelu_forward_numpy(x), rtol=GELU32_RTOL, atol=GELU32_ATOL
    )
    error = np.abs(gelu_backward_numba(x, g).astype(np.float64) - gelu_backward_numpy(x, g))
    np.testing.assert_array_less(error, GELU32_RTOL * np.abs(g) + GELU32_ATOL)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_on_large_and_non_contiguous_arrays(dtype, approximate):
    rng = np.random.default_rng(7)
    x = (3 * rng.standard_normal((96, 512))).astype(dtype)
    g = rng.standard_normal((96, 512)).astype(dtype)
    for view_x, view_g in [(x, g), (x.T, g.T), (x[:, ::3], g[:, 1::3])]:
        if dtype == np.float32 and not approximate:
            assert_exact_gelu_float32_close(view_x, view_g)
        assert_close(
            gelu_forward_numba(view_x, approximate), gelu_forward_numpy(view_x, approximate), scale=10
        )
        assert_close(
            gelu_backward_numba(view_x, view_g, approximate),
            gelu_backward_numpy(view_x, view_g, approximate),
            scale=10,
        )


def test_exact_gelu_equals_the_erf_formula():
    x = np.concatenate([np.linspace(-8, 8, 4001), [0.0, 1e-300, -1e-300, 30.0]])
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    for forward in [gelu_forward_numpy, gelu_forward_numba]:
        # identical up to the rounding of 1 + erf, which is absolute (1e-16), not relative
        np.testing.assert_array_less(
            np.abs(forward(x, False) - expected), 1e-14 * np.abs(expected) + 2e-16 * np.abs(x) + 1e-300
        )


def test_float32_exact_gelu_is_accurate_in_the_tails():
    x = np.linspace(-14, 14, 200_001).astype(np.float32)
    x64 = x.astype(np.float64)
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x64])
    gauss_term = x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)  # x phi(x)
    # A small relative error even where gelu is tiny (x far below 0, where 1 + erf would give 100%):
    # at most 3.2 float32 epsilon measured, for every x (see GELU32_RTOL above).
    eps = np.finfo(np.float32).eps
    forward_error = np.abs(gelu_forward_numba(x).astype(np.float64) - x64 * cdf)
    np.testing.assert_array_less(forward_error, 4 * eps * np.abs(x64 * cdf) + 1e-37)
    ones = np.ones_like(x)
    backward_error = np.abs(gelu_backward_numba(x, ones).astype(np.float64) - (cdf + gauss_term))
    np.testing.assert_array_less(backward_error, 4 * eps * (cdf + np.abs(gauss_term)) + 1e-37)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_gelu_at_extreme_values(dtype):
    x = np.array([0.0, -0.0, 1e-30, -1e-30, 10, -10, 13, -13, 30, -30, 1e4, -1e4, np.inf, np.nan], dtype)
    g = np.full_like(x, 0.5)
    y = gelu_forward_numba(x)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_allclose(y, gelu_forward_numpy(x), rtol=GELU32_RTOL, atol=1e-37)
        dx = gelu_backward_numba(x, g)
        np.testing.assert_allclose(dx, gelu_backward_numpy(x, g), rtol=GELU32_RTOL, atol=1e-37)
    assert np.signbit(y[1]) and y[0] == 0  # gelu(-0.0) = -0.0
    np.testing.assert_array_equal(y[[8, 10, 12]], x[[8, 10, 12]])  # gelu(x) = x for large x
    assert y[11] == 0 and abs(float(y[9])) < 1e-195  # and (about) 0 for very negative x
    np.testing.assert_array_equal(dx[[8, 10, 11]], [0.5, 0.5, 0])
    assert np.isnan(y[-1]) and np.isnan(dx[-1])  # NaN propagates


def test_float32_gelu_loops_are_vectorised_without_gathers():
    # Regression guard: indexing x[i] for i in range(start, stop) made LLVM gather and scatter (numba
    # wraps negative indices around), 3x slower. A fresh compile of the kernel, to read its LLVM IR.
    kernel = jit(cache=False, error_model="numpy")(gelu_module._gelu_forward_range.py_func)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    y = np.empty_like(x)
    kernel(x, y, False, 0, x.size)
    np.testing.assert_array_equal(y, gelu_forward_numba(x))
    llvm_ir = next(iter(kernel.inspect_llvm().values()))
    assert "x float>" in llvm_ir  # vector instructions (<16 x float>, or <8 x float> without AVX-512)
    assert "gather" not in llvm_ir and "scatter" not in llvm_ir


def test_tanh_gelu_equals_the_tanh_formula():
    x = np.linspace(-6, 6, 1201)
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    expected = 0.5 * x * (1 + np.tanh(u))
    np.testing.assert_allclose(gelu_forward_numpy(x, True), expected, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(gelu_forward_numba(x, True), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize(
    "backward, forward",
    [(gelu_backward_numpy, gelu_forward_numpy), (gelu_backward_numba, gelu_forward_numba)],
)
def test_gelu_backward_matches_central_differences(backward, forward, approximate):
    x = np.linspace(-5, 5, 41)
    g = np.cos(np.arange(41.0))
    numeric = central_difference(lambda z: float(forward(z, approximate) @ g), x.copy())
    np.testing.assert_allclose(backward(x, g, approximate), numeric, rtol=1e-7, atol=1e-9)


def test_gelu_keeps_shape_and_dtype():
    for x in [np.float32(1.5) * np.ones(()), np.zeros((2, 0, 3)), np.ones((2, 3, 4), np.float32)]:
        y = gelu_forward_numba(x)
        assert y.shape == x.shape and y.dtype == x.dtype
    with pytest.raises(TypeError):
        gelu_forward_numba(np.ones(3, np.int32))


# ---------------------------------------------------------------------------------------------------
# fused scale + mask + softmax (attention)
# ---------------------------------------------------------------------------------------------------

MASKED_TOL = {np.float32: 1e-6, np.float64: 1e-13}


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))


def check_masked_softmax(x, mask, scale, g):
    """numba == numpy for the fused forward and backward; returns the forward's y."""
    tol = MASKED_TOL[x.dtype.type]
    y = softmax_module.masked_softmax_forward_numpy(x, mask, scale)
    got = softmax_module.masked_softmax_forward_numba(x, mask, scale)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_allclose(got, y, rtol=tol, atol=tol)
    dx = softmax_module.masked_softmax_backward_numpy(y, g, scale)
    got = softmax_module.masked_softmax_backward_numba(y, g, scale)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, dx, rtol=tol, atol=tol * abs(scale) * magnitude(g))
    return y


@given(
    n_blocks=st.integers(1, 6),
    n_columns=columns,
    dtype=st.sampled_from(DTYPES),
    mask_kind=st.sampled_from(["none", "causal", "random"]),
    scale=st.sampled_from([1.0, 0.125, -0.7, 3.0]),
    spread=st.sampled_from([0.1, 3.0, 30.0]),
    seed=seeds,
)
def test_masked_softmax_kernels_match_numpy(n_blocks, n_columns, dtype, mask_kind, scale, spread, seed):
    rng = np.random.default_rng(seed)
    if mask_kind == "none":
        mask, n_mask_rows = None, int(rng.integers(1, 20))
    elif mask_kind == "causal":  # rows (B*h*T, T) with a (T, T) mask
        mask, n_mask_rows = causal_mask(n_columns), n_columns
    else:  # about 1 entry in 3 allowed: some rows are fully masked
        n_mask_rows = int(rng.integers(1, 9))
        mask = rng.random((n_mask_rows, n_columns)) < 0.3
    shape = (n_blocks * n_mask_rows, n_columns)
    x = (spread * rng.standard_normal(shape)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    check_masked_softmax(x, mask, scale, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, n_mask_rows", [((3072, 64), 64), ((600, 65), 10), ((2, 40_000), 1)])
def test_masked_softmax_on_batches_split_over_threads(shape, n_mask_rows, dtype):
    rng = np.random.default_rng(shape[0])
    x = (3 * rng.standard_normal(shape)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if dtype == np.float32 and softmax_module.n_threads() > 1:
        assert softmax_module.use_threads(x)
    mask = causal_mask(64) if shape[1] == 64 else rng.random((n_mask_rows, shape[1])) < 0.5
    for m in [None, mask]:
        check_masked_softmax(x, m, 0.125, g)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_softmax_extreme_and_fully_masked_rows(dtype):
    x = np.array(
        [
            [1e4, -1e4, 0.0, 1e4 - 1, 3.0],
            [-1e4, -1e4, -1e4, -1e4, -1e4],
            [0.5, np.nan, 2.0, np.inf, -np.inf],  # non-finite values where the mask hides them
            [1.0, 2.0, 3.0, 4.0, 5.0],  # fully masked
            [-1e4, 1e4, 1e4, 1e4, -1e4],
        ],
        dtype=dtype,
    )
    mask = np.array(
        [[1, 1, 1, 1, 1], [1, 0, 1, 1, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0], [1, 0, 1, 0, 1]], dtype=bool
    )
    g = np.arange(1.0, 26.0).reshape(5, 5).astype(dtype)
    for scale in [1.0, 0.5, 1 / 3]:
        z = np.where(mask, (dtype(scale) * x).astype(np.float64), -np.inf)  # (scale * x rounded to dtype)
        z[3] = 0  # (a fully masked row: no maximum to subtract)
        exact = np.where(mask, np.exp(z - z.max(axis=1, keepdims=True)), 0)
        exact /= np.where(exact.sum(axis=1, keepdims=True) == 0, 1, exact.sum(axis=1, keepdims=True))
        for suffix in ["numba", "numpy"]:
            forward = getattr(softmax_module, f"masked_softmax_forward_{suffix}")
            backward = getattr(softmax_module, f"masked_softmax_backward_{suffix}")
            y = forward(x, mask, scale)
            assert y.dtype == dtype and np.all(np.isfinite(y))
            np.testing.assert_allclose(y, exact, rtol=MASKED_TOL[dtype] * 10, atol=MASKED_TOL[dtype])
            assert np.all(y[3] == 0) and np.all(y[~mask] == 0)
            dx = backward(y, g, scale)
            assert np.all(np.isfinite(dx)) and np.all(dx[3] == 0) and np.all(dx[~mask] == 0)
        check_masked_softmax(np.nan_to_num(x), mask, scale, g)


def test_masked_softmax_numpy_equals_the_explicit_formula():
    rng = np.random.default_rng(3)
    n_mask_rows, n = 4, 9
    mask = rng.random((n_mask_rows, n)) < 0.6
    mask[1] = False  # a fully masked mask row
    x = 4 * rng.standard_normal((3 * n_mask_rows, n))
    for scale in [1.0, 0.125, -2.0]:
        y = softmax_module.masked_softmax_forward_numpy(x, mask, scale)
        for r in range(x.shape[0]):
            z = np.where(mask[r % n_mask_rows], scale * x[r], -np.inf)
            expected = np.zeros(n) if r % n_mask_rows == 1 else softmax_forward_numpy(z[None])[0]
            np.testing.assert_allclose(y[r], expected, rtol=1e-13, atol=1e-16)
        np.testing.assert_allclose(
            softmax_module.masked_softmax_forward_numpy(x, None, scale),
            softmax_forward_numpy(scale * x),
            rtol=1e-13,
        )


def test_masked_softmax_backward_matches_the_jacobian():
    rng = np.random.default_rng(4)
    x, g = rng.standard_normal((1, 7)), rng.standard_normal((1, 7))
    mask = np.array([[True, False, True, True, False, True, True]])
    scale = 0.35
    y = softmax_module.masked_softmax_forward_numpy(x, mask, scale)[0]
    # dy_i / dx_j = scale * y_i (delta_ij - y_j) for an allowed j, 0 for a masked j (y_j = 0 there)
    jacobian = scale * (np.diag(y) - np.outer(y, y)) * mask[0]
    expected = jacobian.T @ g[0]
    for suffix in ["numpy", "numba"]:
        backward = getattr(softmax_module, f"masked_softmax_backward_{suffix}")
        np.testing.assert_allclose(backward(y[None], g, scale)[0], expected, rtol=1e-13, atol=1e-15)
    forward = softmax_module.masked_softmax_forward_numpy
    numeric = central_difference(lambda z: float(forward(z, mask, scale)[0] @ g[0]), x.copy())
    np.testing.assert_allclose(expected, numeric[0], rtol=1e-7, atol=1e-9)


def test_masked_softmax_checks_its_mask_and_is_dispatched():
    import minigrad.kernels as kernels

    forward = softmax_module.masked_softmax_forward_numba
    x = np.random.default_rng(5).standard_normal((6, 4)).astype(np.float32)
    with pytest.raises(TypeError):
        forward(x, np.ones((2, 4), np.int8), 1.0)
    for bad in [np.ones((4, 4), bool), np.ones((2, 3), bool), np.ones(4, bool), np.ones((0, 4), bool)]:
        with pytest.raises(ValueError):
            forward(x, bad, 1.0)
    with pytest.raises(TypeError):
        forward(x.astype(np.int64), None, 1.0)
    mask = np.broadcast_to(np.array([True, False, True, True]), (3, 4))  # read-only, stride 0
    np.testing.assert_allclose(forward(x, mask, 0.5), forward(x, np.ascontiguousarray(mask), 0.5))
    np.testing.assert_array_equal(forward(x, None, 0.5), forward(x, np.ones((1, 4), bool), 0.5))
    assert forward(np.zeros((0, 4), np.float32), None, 1.0).shape == (0, 4)
    assert forward(np.zeros((3, 0), np.float64), np.ones((1, 0), bool), 1.0).shape == (3, 0)
    for backend in ["numba", "numpy"]:
        with kernels.use_backend(backend):
            y = kernels.masked_softmax_forward(x, causal_mask(4)[1:3], 0.5)  # (mask rows 1 and 2)
            dx = kernels.masked_softmax_backward(y, x, 0.5)
        expected = softmax_module.masked_softmax_forward_numpy(x, causal_mask(4)[1:3], 0.5)
        np.testing.assert_allclose(y, expected, rtol=1e-6)
        assert dx.shape == x.shape


def test_float32_masked_softmax_loops_are_vectorised_without_gathers():
    py_func = softmax_module._masked_softmax_forward_rows.py_func
    kernel = jit(cache=False, error_model="numpy", fastmath=False)(py_func)
    x = np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 64)
    y = np.empty_like(x)
    kernel(x, causal_mask(64)[:2], 0.5, y, 0, 2)
    np.testing.assert_array_equal(y, softmax_module.masked_softmax_forward_numba(x, causal_mask(64)[:2], 0.5))
    llvm_ir = next(iter(kernel.inspect_llvm().values()))
    assert "x float>" in llvm_ir
    assert "gather" not in llvm_ir and "scatter" not in llvm_ir


# ------------------------------------------------------------------------------ embedding backward
@pytest.mark.parametrize("dtype", DTYPES)
@given(n=st.integers(0, 300), rows=st.integers(1, 40), dim=st.sampled_from([1, 5, 16, 33]), seed=seeds)
def test_embedding_backward_numba_matches_numpy(dtype, n, rows, dim, seed):
    from minigrad.kernels.embedding import embedding_backward_numba, embedding_backward_numpy

    rng = np.random.default_rng(seed)
    ids = rng.integers(0, rows, size=n)  # ids repeat: each use adds to its row
    g = rng.standard_normal((n, dim)).astype(dtype)
    expected = embedding_backward_numpy(ids, g, rows)
    assert_close(embedding_backward_numba(ids.astype(np.int32), g, rows), expected)
    assert_close(embedding_backward_numba(ids, g[::-1][::-1], rows), expected)
    manual = np.zeros((rows, dim))
    for i, r in enumerate(ids):
        manual[r] += g[i]
    np.testing.assert_allclose(expected, manual, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ sum over rows
@pytest.mark.parametrize("dtype", DTYPES)
@given(n_rows=st.integers(0, 2000), n_cols=st.sampled_from([1, 7, 16, 33, 128, 384]), seed=seeds)
def test_sum_rows_numba_matches_numpy(dtype, n_rows, n_cols, seed):
    from minigrad.kernels.reduce import sum_rows_numba, sum_rows_numpy

    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n_rows, n_cols)).astype(dtype)
    exact = g.astype(np.float64).sum(axis=0)
    for layout in (g, np.asfortranarray(g)):  # the compiled loop, and the fallback for other layouts
        got = sum_rows_numba(layout)
        assert got.shape == (n_cols,) and got.dtype == dtype
        # summed in order: the rounding error grows at most like n_rows * eps * sum |g|
        bound = (n_rows + 1) * np.finfo(dtype).eps * np.abs(g).astype(np.float64).sum(axis=0)
        np.testing.assert_array_less(np.abs(got - exact), bound + 1e-30)
    np.testing.assert_allclose(sum_rows_numpy(g), exact, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@given(n=st.integers(0, 5000), scale=st.sampled_from([1e-3, 1.0, 1e20]), seed=seeds)
def test_sum_squares_numba_matches_numpy(dtype, n, scale, seed):
    from minigrad.kernels.reduce import sum_squares_numba, sum_squares_numpy

    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal(n)).astype(dtype)  # 1e20: the squares overflow float32, not float64
    got, expected = sum_squares_numba(x), sum_squares_numpy(x)
    assert isinstance(got, float) and math.isfinite(got)
    exact = math.fsum(float(v) ** 2 for v in x)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-300)
    assert expected == pytest.approx(exact, rel=1e-12, abs=1e-300)
    assert sum_squares_numba(x[::-1].copy()[::-1]) == got
