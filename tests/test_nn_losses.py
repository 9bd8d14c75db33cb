"""minigrad.nn.functional's losses: cross-entropy (reductions, ignore_index, label smoothing, 3-D
logits, both backends) against an independent numpy reference and by float64 gradient checks,
large float32 batches, extreme logits and errors; mean squared error, values, gradients and errors."""
import math

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from helpers import BACKENDS, t64
from strategies import TIGHT, leaf, normal


# ============================================================================ losses
def numpy_cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """An independent reference: log-softmax by log-sum-exp, per-row loss, then the reduction."""
    v = logits.shape[-1]
    rows = logits.reshape(-1, v).astype(np.float64)
    t = targets.reshape(-1)
    losses = np.zeros(len(t))
    for r in range(len(t)):
        if t[r] == ignore_index:
            continue
        m = rows[r].max()
        lse = m + math.log(sum(math.exp(z - m) for z in rows[r]))
        logp = rows[r] - lse
        target = np.full(v, label_smoothing / v)
        target[t[r]] += 1 - label_smoothing
        losses[r] = -(target * logp).sum()
    if reduction == "none":
        return losses.reshape(targets.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / max(int((t != ignore_index).sum()), 1)


CE_CASES = {
    "mean": dict(reduction="mean"),
    "sum": dict(reduction="sum"),
    "none": dict(reduction="none"),
    "ignore_index": dict(ignore_index=-1),
    "ignore_index_sum": dict(ignore_index=-1, reduction="sum"),
    "ignore_index_none": dict(ignore_index=-1, reduction="none"),
    "smoothing": dict(label_smoothing=0.1),
    "smoothing_ignore": dict(label_smoothing=0.1, ignore_index=-1),
    "smoothing_none": dict(label_smoothing=0.1, reduction="none"),
}


def ce_targets(shape, v, seed, ignore=None):
    t = np.random.default_rng(seed).integers(0, v, shape)
    if ignore is not None:
        flat = t.reshape(-1)
        flat[[1, len(flat) - 1]] = ignore  # some targets ignored, some kept
    return t


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CE_CASES))
def test_cross_entropy_forward_matches_numpy(backend, case):
    minigrad.set_backend(backend)
    opts = CE_CASES[case]
    logits = normal((6, 5), seed=10) * 3
    targets = ce_targets((6,), 5, seed=11, ignore=opts.get("ignore_index"))
    out = F.cross_entropy(t64(logits), targets, **opts)
    expected = numpy_cross_entropy(logits, targets, **opts)
    assert out.shape == np.shape(expected)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CE_CASES))
def test_gradcheck_cross_entropy(backend, case):
    minigrad.set_backend(backend)
    opts = CE_CASES[case]
    logits = leaf(normal((4, 5), seed=12) * 2)
    targets = ce_targets((4,), 5, seed=13, ignore=opts.get("ignore_index"))
    assert minigrad.gradcheck(lambda z: F.cross_entropy(z, targets, **opts), [logits], **TIGHT)
    if "ignore_index" in opts:  # an ignored row gets exactly zero gradient
        logits.grad = None
        F.cross_entropy(logits, targets, **opts).sum().backward()
        np.testing.assert_array_equal(logits.grad[targets == -1], 0.0)
        assert np.all(logits.grad.numpy()[targets != -1] != 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_3d_logits(backend, reduction):
    minigrad.set_backend(backend)
    B, T, V = 2, 3, 4
    logits = leaf(normal((B, T, V), seed=14))
    targets = ce_targets((B, T), V, seed=15, ignore=-100)
    out = F.cross_entropy(logits, targets, reduction=reduction)
    expected = numpy_cross_entropy(logits.numpy(), targets, reduction=reduction)
    assert out.shape == np.shape(expected) == ((B, T) if reduction == "none" else ())
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)
    # the same as flattening to (B*T, V)
    flat = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(-1), reduction=reduction)
    np.testing.assert_allclose(out.numpy().reshape(-1), flat.numpy().reshape(-1), rtol=1e-14, atol=0)
    assert minigrad.gradcheck(lambda z: F.cross_entropy(z, targets, reduction=reduction), [logits], **TIGHT)
    assert minigrad.gradcheck(
        lambda z: F.cross_entropy(z, targets, label_smoothing=0.1, reduction=reduction), [logits], **TIGHT
    )


def test_cross_entropy_all_ignored_gives_zero():
    logits = leaf(normal((3, 4), seed=16))
    targets = np.full(3, -100)
    loss = F.cross_entropy(logits, targets)
    assert loss.item() == 0.0
    loss.backward()
    np.testing.assert_array_equal(logits.grad, 0.0)


def test_cross_entropy_extreme_logits_are_finite():
    logits = t64([[1e4, 0.0, -1e4], [0.0, 0.0, 0.0]])
    out = F.cross_entropy(logits, np.array([1, 2]), reduction="none").numpy()
    np.testing.assert_allclose(out, [1e4, math.log(3)], rtol=1e-14)


def test_cross_entropy_errors():
    logits = t64(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="targets of shape"):
        F.cross_entropy(logits, np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(logits, np.zeros(3))
    with pytest.raises(IndexError, match="4"):
        F.cross_entropy(logits, np.array([0, 4, 1]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, np.zeros(3, dtype=np.int64), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(logits, np.zeros(3, dtype=np.int64), label_smoothing=1.5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_values_and_gradcheck(reduction):
    a, b = normal((3, 4), seed=17), normal((3, 4), seed=18)
    out = F.mse_loss(t64(a), t64(b), reduction=reduction)
    sq = (a - b) ** 2
    expected = {"mean": sq.mean(), "sum": sq.sum(), "none": sq}[reduction]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14, atol=0)
    x, y = leaf(a), leaf(b)
    report = minigrad.gradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), [x, y], **TIGHT)
    assert len(report.inputs) == 2
    # a numpy target is a constant
    assert minigrad.gradcheck(lambda x: F.mse_loss(x, b, reduction=reduction), [x], **TIGHT)


def test_mse_loss_errors():
    with pytest.raises(ValueError, match="same shape"):
        F.mse_loss(t64(np.zeros(3)), np.zeros(4))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(t64(np.zeros(3)), np.zeros(3), reduction="avg")


def test_cross_entropy_large_float32_matches_formula():
    """Large enough for the compiled kernels' threaded paths; value and gradient against numpy."""
    logits = normal((64, 300), seed=25) * 3
    targets = np.random.default_rng(26).integers(0, 300, 64)
    targets[::7] = -100
    z = minigrad.tensor(logits.astype(np.float32), requires_grad=True)
    loss = F.cross_entropy(z, targets, label_smoothing=0.1)
    loss.backward()
    assert loss.dtype == np.float32 and z.grad.dtype == np.float32
    np.testing.assert_allclose(loss.item(), numpy_cross_entropy(logits, targets, label_smoothing=0.1), rtol=1e-5)
    kept = targets != -100
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    target = np.full_like(p, 0.1 / 300)
    target[np.arange(64), np.where(kept, targets, 0)] += 0.9
    expected = np.where(kept[:, None], p - target, 0.0) / kept.sum()
    np.testing.assert_allclose(z.grad, expected, rtol=1e-4, atol=1e-6 * np.abs(expected).max())


def test_functional_mse_loss_matches_formula_float32():
    a = minigrad.randn(5)
    b = np.arange(5, dtype=np.float32)
    out = F.mse_loss(a, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.item(), ((a.numpy() - b) ** 2).mean(), rtol=1e-6)
