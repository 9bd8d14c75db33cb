"""One Adam / AdamW step for one parameter, in place, as PyTorch computes it.

For a parameter p with gradient g, running averages m (``exp_avg``) and v (``exp_avg_sq``), step
number t (1, 2, ...), learning rate lr, weight decay wd:

    g = g + wd * p                     (Adam: weight decay as an L2 penalty on the gradient)
    p = p * (1 - lr * wd)              (AdamW, ``decoupled``: decay the weight itself)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2
    p = p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

The last line is arranged as PyTorch arranges it: the two bias corrections become the scalars
step_size = lr / (1 - beta1^t) and sqrt(1 - beta2^t), so that per element

    p = p - step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).

The optimizer (``minigrad/optim/__init__.py``) calls this once per parameter. The numpy twin spells the
formula out with whole-array operations, a dozen passes over memory. The compiled kernel reads
p, g, m, v once and writes p, m, v once, in the parameter's dtype, a SIMD register at a time (the
square root and the division set the pace).

It runs on one thread: the optimizer step is a small part of a training step, and each parameter
is too small to pay for waking other threads.
"""

import math

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported


# ---------------------------------------------------------------------------------------------------
# Reference twin (numpy)
# ---------------------------------------------------------------------------------------------------


def adam_update_numpy(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    """Update ``param``, ``exp_avg`` and ``exp_avg_sq`` in place by one Adam (``decoupled=False``)
    or AdamW (``decoupled=True``) step; ``step`` is this step's number, 1 for the first."""
    grad = np.asarray(grad, dtype=param.dtype)  # (scalars below are cast to param's dtype by numpy)
    if weight_decay != 0:
        if decoupled:
            param *= 1 - lr * weight_decay                    # p = p * (1 - lr * wd)
        else:
            grad = grad + weight_decay * param                # g = g + wd * p  (a new array)
    exp_avg *= beta1                                          # m = beta1 * m + (1 - beta1) * g
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2                                       # v = beta2 * v + (1 - beta2) * g^2
    exp_avg_sq += (1 - beta2) * (grad * grad)
    step_size = lr / (1 - beta1**step)                        # p = p - lr * m_hat / (sqrt(v_hat) + eps)
    denom = np.sqrt(exp_avg_sq) / math.sqrt(1 - beta2**step) + eps
    param -= step_size * (exp_avg / denom)


# ---------------------------------------------------------------------------------------------------
# Compiled kernel (numba)
# ---------------------------------------------------------------------------------------------------


# Compiled the first time a dtype is used: the wrapper below passes exactly these types.
@jit(error_model="numpy")
def _adam_update(param, grad, exp_avg, exp_avg_sq, l2, decay, beta1, beta2, step_size, inv_root_bias2, eps):
    """One Adam step over 1-D arrays, in one pass. Both forms of weight decay run this loop:
    ``l2`` is wd for Adam (0 for AdamW), ``decay`` is 1 - lr * wd for AdamW (1 for Adam).
    ``step_size`` = lr / (1 - beta1^t), ``inv_root_bias2`` = 1 / sqrt(1 - beta2^t)."""
    dtype = param.dtype.type  # scalars: computed in float64, then rounded once to the arrays' dtype
    one_minus_beta1, one_minus_beta2 = dtype(1.0 - beta1), dtype(1.0 - beta2)
    beta1, beta2, l2, decay, eps = dtype(beta1), dtype(beta2), dtype(l2), dtype(decay), dtype(eps)
    step_size, inv_root_bias2 = dtype(step_size), dtype(inv_root_bias2)
    for i in range(param.shape[0]):
        p = param[i]
        g = grad[i] + l2 * p                                  # g = g + wd * p         (Adam)
        p = p * decay                                         # p = p * (1 - lr * wd)  (AdamW)
        m = beta1 * exp_avg[i] + one_minus_beta1 * g          # m = beta1 * m + (1 - beta1) * g
        v = beta2 * exp_avg_sq[i] + one_minus_beta2 * (g * g)  # v = beta2 * v + (1 - beta2) * g^2
        exp_avg[i] = m
        exp_avg_sq[i] = v
        # p = p - step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps): a product instead of the
        # first division (within one rounding of it), since the divider is the bottleneck here
        param[i] = p - step_size * (m / (np.sqrt(v) * inv_root_bias2 + eps))


_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fits(array, param):
    """True if ``array`` has param's dtype and shape and is C-contiguous, aligned and writable (numpy's
    ``flags.carray``): its ``ravel()`` is then a view that the kernel can read or update in place,
    element i matching param's element i. (A read-only array would be another numba type.)"""
    return array.dtype == param.dtype and array.shape == param.shape and array.flags.carray


def adam_update_numba(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    """Update ``param``, ``exp_avg`` and ``exp_avg_sq`` in place by one Adam (``decoupled=False``)
    or AdamW (``decoupled=True``) step; ``step`` is this step's number, 1 for the first.

    The three arrays should be float32 or float64, of one dtype and shape, C-contiguous and writable,
    as the optimizer's parameters and buffers are; otherwise this falls back to the numpy twin.
    ``grad`` is converted to param's dtype (and made C-contiguous) if needed.
    """
    if not (param.dtype in _DTYPES and param.flags.carray and _fits(exp_avg, param) and _fits(exp_avg_sq, param)):
        adam_update_numpy(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step)
        return
    if not _fits(grad, param):
        grad = np.array(np.broadcast_to(grad, param.shape), dtype=param.dtype, order="C")
    if decoupled:
        l2, decay = 0.0, 1.0 - lr * weight_decay
    else:
        l2, decay = weight_decay, 1.0
    step_size, inv_root_bias2 = lr / (1 - beta1**step), 1 / math.sqrt(1 - beta2**step)
    _adam_update(param.ravel(), grad.ravel(), exp_avg.ravel(), exp_avg_sq.ravel(),  # (views: C-contiguous)
                 float(l2), decay, float(beta1), float(beta2), step_size, inv_root_bias2, float(eps))
