"""The cross-entropy kernels (minigrad/kernels/cross_entropy.py), compiled and reference: the compiled
kernels agree with the numpy twins (random shapes, ignored rows, label smoothing, batches split over
threads, non-contiguous rows); the twins equal -log softmax at the target and cross-entropy with the
smoothed distribution (by formula and by central differences); logits of +-1e4 and -inf; targets
out of range are refused.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import DTYPES, RTOL, assert_close, central_difference, magnitude
from minigrad.kernels.cross_entropy import cross_entropy_backward_numba, cross_entropy_backward_numpy
from minigrad.kernels.cross_entropy import cross_entropy_forward_numba, cross_entropy_forward_numpy
from minigrad.kernels.softmax import softmax_forward_numpy
from strategies import row_counts, row_lengths, seeds


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
    n_rows=row_counts,
    n_classes=row_lengths,
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
@pytest.mark.parametrize("shape", [(768, 65), (6144, 65), (96, 5000)])
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
