"""Cross-entropy of rows of logits against integer targets, with label smoothing, forward and backward.

For one row of logits x (V classes), target class t and smoothing eps (``label_smoothing``), the
model's distribution is p = softmax(x) and the target distribution puts 1 - eps on t plus eps
spread evenly over all V classes. The loss is the cross-entropy between the two:

    loss = (1 - eps) * (lse - x[t]) + eps * mean_j(lse - x[j]),     lse = log(sum_j exp(x[j]))

Rows whose target equals ``ignore_index`` (padding) get loss 0 and gradient 0. A target outside
[0, V) that is not ``ignore_index`` raises an ``IndexError`` naming it, its row and V.

Precision: with s = x - max(x) (all entries <= 0), ``lse - x[t] = log(sum exp(s)) - s[t]``: the
large max cancels exactly, so logits of size 1e4 still give losses accurate to float precision.
The backward rebuilds softmax as exp(x - lse) from the saved lse, as PyTorch does; lse is rounded
to the logits' dtype, so for float32 logits near 1e4 the gradient carries lse's rounding (about
5e-4 relative), while for logits of ordinary size it is float precision.
"""

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported
from ._rows import PARALLEL_MIN_ELEMENTS_EXP, as_rows, for_rows  # noqa: E402
from ._simd import fast_exp, simd_add, simd_max  # noqa: E402


def _check_targets(logits, targets, ignore_index):
    """targets as int64 (R,) for logits (R, V); raise IndexError on the first out-of-range id."""
    targets = np.ascontiguousarray(targets, dtype=np.int64)
    n_rows, n_classes = logits.shape
    if targets.shape != (n_rows,):
        raise ValueError(f"cross_entropy: targets of shape {targets.shape} for logits {logits.shape}")
    # read as unsigned, a negative id is larger than any class count: one max shows 0 <= id < V for all
    if n_rows and targets.view(np.uint64).max() < n_classes:
        return targets
    bad = (targets != ignore_index) & ((targets < 0) | (targets >= n_classes))
    if bad.any():
        row = int(np.argmax(bad))
        raise IndexError(
            f"cross_entropy: target {int(targets[row])} in row {row} is out of range for "
            f"{n_classes} classes (valid: 0..{n_classes - 1}, or ignore_index={ignore_index})"
        )
    return targets


def _check_smoothing(label_smoothing):
    """label_smoothing as a float in [0, 1] (else raise)."""
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing={label_smoothing} must be in [0, 1]")
    return label_smoothing


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------


def cross_entropy_forward_numpy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    """(losses (R,), lse (R,)) for logits (R, V) and int targets (R,); ignored rows give 0, 0."""
    targets = _check_targets(logits, targets, ignore_index)
    eps = _check_smoothing(label_smoothing)
    kept = targets != ignore_index
    rows = np.arange(logits.shape[0])
    row_max = logits.max(axis=-1, keepdims=True)
    shifted = logits - row_max  # <= 0: exp cannot overflow, and lse - x[t] = log_total - shifted[t]
    log_total = np.log(np.exp(shifted).sum(axis=-1))
    losses = log_total - (1 - eps) * shifted[rows, np.where(kept, targets, 0)]
    if eps:
        losses = losses - eps * shifted.mean(axis=-1)
    lse = row_max[:, 0] + log_total
    zero = logits.dtype.type(0)
    return np.where(kept, losses, zero), np.where(kept, lse, zero)


def cross_entropy_backward_numpy(logits, targets, lse, grad_losses, ignore_index=-100, label_smoothing=0.0):
    """dlogits (R, V) from logits (R, V), targets (R,), lse (R,) and the gradient of losses (R,)."""
    # d loss / d x_j = softmax_j - target_distribution_j = p_j - (1 - eps) [j == t] - eps / V
    targets = _check_targets(logits, targets, ignore_index)
    eps = _check_smoothing(label_smoothing)
    kept = targets != ignore_index
    n_rows, n_classes = logits.shape
    grad_losses = np.asarray(grad_losses, dtype=logits.dtype)
    dlogits = np.exp(logits - lse[:, None]) - eps / n_classes
    dlogits[np.arange(n_rows), np.where(kept, targets, 0)] -= 1 - eps
    dlogits *= grad_losses[:, None]
    return np.where(kept[:, None], dlogits, logits.dtype.type(0))


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba), each a function over a range of rows
# ---------------------------------------------------------------------------------------------------


@jit(error_model="numpy")
def _cross_entropy_forward_rows(logits, targets, ignore_index, eps, losses, lse, start, stop):
    """losses[r], lse[r] for rows start <= r < stop of logits (R, V), targets (R,)."""
    n = logits.shape[1]
    one, n_classes = logits.dtype.type(1), logits.dtype.type(n)  # (keeps float32 math in float32)
    for r in range(start, stop):
        t = targets[r]
        if t == ignore_index:
            losses[r] = 0
            lse[r] = 0
            continue
        shift = logits[r, 0]
        for j in range(n):
            shift = simd_max(shift, logits[r, j])
        total = logits.dtype.type(0)  # sum_j exp(x_j - max)
        gap_sum = logits.dtype.type(0)  # sum_j (max - x_j), for the smoothing term
        for j in range(n):
            total = simd_add(total, fast_exp(logits[r, j] - shift))
            gap_sum = simd_add(gap_sum, shift - logits[r, j])
        log_total = np.log(total)
        # loss = (1 - eps) (lse - x_t) + eps mean_j (lse - x_j), with lse - x = log_total + (max - x)
        loss = log_total + (one - eps) * (shift - logits[r, t])
        if eps > 0:  # (skipped when eps = 0, where a -inf logit would give 0 * inf = NaN)
            loss += eps * (gap_sum / n_classes)
        losses[r] = loss
        lse[r] = shift + log_total


@jit(error_model="numpy")
def _cross_entropy_backward_rows(logits, targets, lse, grad_losses, ignore_index, eps, dlogits, start, stop):
    """dlogits[r] (V,) for rows start <= r < stop of logits (R, V)."""
    # cross-entropy: dlogits = grad * (softmax(x) - (1 - eps) onehot(t) - eps / V)
    n = logits.shape[1]
    one, uniform = logits.dtype.type(1), eps / logits.dtype.type(n)  # uniform: smoothing per class
    for r in range(start, stop):
        t = targets[r]
        if t == ignore_index:
            for j in range(n):
                dlogits[r, j] = 0
            continue
        grad, row_lse = grad_losses[r], lse[r]
        for j in range(n):
            dlogits[r, j] = grad * (fast_exp(logits[r, j] - row_lse) - uniform)
        dlogits[r, t] -= grad * (one - eps)


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def cross_entropy_forward_numba(logits, targets, ignore_index=-100, label_smoothing=0.0):
    """(losses (R,), lse (R,)) for logits (R, V) and int targets (R,); ignored rows give 0, 0."""
    logits = as_rows("cross_entropy_forward", logits)
    targets = _check_targets(logits, targets, ignore_index)
    eps = logits.dtype.type(_check_smoothing(label_smoothing))
    if logits.shape[1] == 0:
        raise ValueError("cross_entropy_forward: logits have no classes")
    losses = np.empty(logits.shape[0], dtype=logits.dtype)
    lse = np.empty_like(losses)
    args = (logits, targets, np.int64(ignore_index), eps, losses, lse)
    for_rows(_cross_entropy_forward_rows, logits, *args, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return losses, lse


def cross_entropy_backward_numba(logits, targets, lse, grad_losses, ignore_index=-100, label_smoothing=0.0):
    """dlogits (R, V) from logits (R, V), targets (R,), lse (R,) and the gradient of losses (R,)."""
    logits = as_rows("cross_entropy_backward", logits)
    targets = _check_targets(logits, targets, ignore_index)
    n_rows = logits.shape[0]
    lse = as_rows("cross_entropy_backward", lse, ndim=1)
    grad_losses = as_rows("cross_entropy_backward", grad_losses, ndim=1)
    if lse.shape != (n_rows,) or grad_losses.shape != (n_rows,):
        raise ValueError(
            f"cross_entropy_backward: lse {lse.shape} and grad_losses {grad_losses.shape} "
            f"must both be ({n_rows},) for logits {logits.shape}"
        )
    lse = lse.astype(logits.dtype, copy=False)
    grad_losses = grad_losses.astype(logits.dtype, copy=False)
    eps = logits.dtype.type(_check_smoothing(label_smoothing))
    dlogits = np.empty_like(logits)
    args = (logits, targets, lse, grad_losses, np.int64(ignore_index), eps, dlogits)
    for_rows(_cross_entropy_backward_rows, logits, *args, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return dlogits
