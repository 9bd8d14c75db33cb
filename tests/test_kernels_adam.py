"""The Adam / AdamW update kernel (minigrad/kernels/adam.py), compiled and reference.

- the compiled kernel (``adam_update_numba``) agrees with its numpy twin over several steps, for
  both dtypes, Adam and AdamW, with and without weight decay, on lengths that exercise the SIMD
  loop's remainder;
- the numpy twin agrees with the textbook formula (bias-corrected m_hat and v_hat, in float64);
- both agree with torch.optim.Adam / AdamW when torch is installed;
- inputs off the fast path (another grad dtype, non-contiguous arrays, 0-d parameters) still give
  the same in-place update.

Errors are compared relative to the largest value of each array: an element that lands near 0
after a cancellation (p - step, or beta1 * m + (1 - beta1) * g) has a large *relative* error in any
correctly rounded implementation.
"""

import numpy as np
import pytest

from minigrad import kernels
from minigrad.kernels.adam import adam_update_numba, adam_update_numpy

TOL = {np.float32: 1e-6, np.float64: 1e-14}
LR, BETAS, EPS = 1e-2, (0.9, 0.99), 1e-8
SETTINGS = [(False, 0.0), (False, 0.1), (True, 0.0), (True, 0.1)]  # (decoupled, weight_decay)


def assert_close(got, expected, tol):
    """got == expected within tol relative to the largest |expected| (same dtype, same shape)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * max(np.abs(expected).max(), 1e-30))


def problem(shape, dtype, n_steps=5, seed=0):
    """A parameter and n_steps gradients spanning a few orders of magnitude."""
    rng = np.random.default_rng(seed)
    param = rng.standard_normal(shape).astype(dtype)
    grads = [(rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 2)).astype(dtype) for _ in range(n_steps)]
    return param, grads


def run(update, param, grads, decoupled, weight_decay, lr=LR, betas=BETAS, eps=EPS):
    """(param, exp_avg, exp_avg_sq) after one ``update`` per gradient, from zero moving averages."""
    param = param.copy()
    exp_avg, exp_avg_sq = np.zeros_like(param), np.zeros_like(param)
    for step, grad in enumerate(grads, start=1):
        update(param, grad, exp_avg, exp_avg_sq, lr, betas[0], betas[1], eps, weight_decay, decoupled, step)
    return param, exp_avg, exp_avg_sq


def textbook(param, grads, decoupled, weight_decay, lr=LR, betas=BETAS, eps=EPS):
    """Adam / AdamW in float64, written as in the papers: m_hat = m / (1 - beta1^t), ..."""
    (beta1, beta2), p = betas, param.astype(np.float64)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        if decoupled:
            p = p - lr * weight_decay * p
        else:
            g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p, m, v


def test_registered_with_the_backends():
    assert kernels.implementation("adam_update", "numba") is adam_update_numba
    assert kernels.implementation("adam_update", "numpy") is adam_update_numpy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decoupled, weight_decay", SETTINGS)
@pytest.mark.parametrize("shape", [(1,), (7,), (33,), (1000,), (3, 4, 5), (128, 129)])
def test_numba_matches_numpy_twin(dtype, decoupled, weight_decay, shape):
    param, grads = problem(shape, dtype)
    got = run(adam_update_numba, param, grads, decoupled, weight_decay)
    expected = run(adam_update_numpy, param, grads, decoupled, weight_decay)
    for g, e in zip(got, expected):
        assert_close(g, e, TOL[dtype])


@pytest.mark.parametrize("decoupled, weight_decay", SETTINGS)
def test_numpy_twin_matches_textbook_formula(decoupled, weight_decay):
    param, grads = problem((200,), np.float64, n_steps=8)
    got = run(adam_update_numpy, param, grads, decoupled, weight_decay)
    for g, e in zip(got, textbook(param, grads, decoupled, weight_decay)):
        assert_close(g, e, 1e-14)


@pytest.mark.parametrize("update", [adam_update_numba, adam_update_numpy])
def test_first_step_moves_each_weight_by_lr(update):
    # bias correction: after one step m_hat = g and v_hat = g^2, so p moves by lr * g / (|g| + eps),
    # lr * sign(g) up to eps
    param, grads = problem((50,), np.float64, n_steps=1)
    p, m, v = run(update, param, grads, decoupled=True, weight_decay=0.0)
    g = grads[0]
    np.testing.assert_allclose(p, param - LR * g / (np.abs(g) + EPS), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(p, param - LR * np.sign(g), rtol=0, atol=LR * EPS / np.abs(g).min())
    np.testing.assert_allclose(m, (1 - BETAS[0]) * grads[0], rtol=1e-15)
    np.testing.assert_allclose(v, (1 - BETAS[1]) * grads[0] ** 2, rtol=1e-15)


@pytest.mark.parametrize("update", [adam_update_numba, adam_update_numpy])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_updates_in_place_and_leaves_grad_alone(update, dtype):
    param, grads = problem((4, 5), dtype, n_steps=1)
    grad_before = grads[0].copy()
    exp_avg, exp_avg_sq = np.zeros_like(param), np.zeros_like(param)
    arrays = (param, exp_avg, exp_avg_sq)
    before = [a.copy() for a in arrays]
    update(param, grads[0], exp_avg, exp_avg_sq, LR, *BETAS, EPS, 0.1, True, 1)
    for a, b in zip(arrays, before):
        assert a.dtype == dtype and a.shape == (4, 5)
        assert np.all(a != b)  # every element moved, in the caller's arrays
    np.testing.assert_array_equal(grads[0], grad_before)


def test_numba_off_the_fast_path_matches_numpy_twin():
    """Another grad dtype, non-contiguous arrays, read-only grad, 0-d parameter: same results."""
    rng = np.random.default_rng(1)
    cases = []
    base = rng.standard_normal((6, 8)).astype(np.float32)
    cases.append((base, rng.standard_normal((6, 8))))                      # float64 grad, float32 param
    cases.append((base, rng.standard_normal((8, 6)).astype(np.float32).T))  # non-contiguous grad
    read_only = rng.standard_normal((6, 8)).astype(np.float32)
    read_only.flags.writeable = False
    cases.append((base, read_only))                                         # read-only grad
    cases.append((np.asfortranarray(base), rng.standard_normal((6, 8)).astype(np.float32)))  # F-order param
    cases.append((np.array(0.5), np.array(-2.0)))                           # 0-d, float64
    for param, grad in cases:
        got = [param.copy(order="K"), np.zeros_like(param), np.zeros_like(param)]
        expected = [param.copy(order="K"), np.zeros_like(param), np.zeros_like(param)]
        for step in (1, 2, 3):
            adam_update_numba(got[0], grad, got[1], got[2], LR, *BETAS, EPS, 0.1, False, step)
            adam_update_numpy(expected[0], grad, expected[1], expected[2], LR, *BETAS, EPS, 0.1, False, step)
        for g, e in zip(got, expected):
            assert_close(g, e, TOL[e.dtype.type])
        assert not np.array_equal(got[0], param)


def test_numba_rejects_mismatched_state():
    param = np.zeros(4, np.float32)
    with pytest.raises(ValueError):  # grad of another shape: not broadcastable to the parameter's
        adam_update_numba(param, np.zeros(5, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32),
                          LR, *BETAS, EPS, 0.0, True, 1)


# ---------------------------------------------------------------------------- against PyTorch
@pytest.mark.parametrize("update", [adam_update_numba, adam_update_numpy])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decoupled, weight_decay", SETTINGS)
def test_matches_torch(update, dtype, decoupled, weight_decay):
    torch = pytest.importorskip("torch")
    param, grads = problem((37, 11), dtype, n_steps=6, seed=2)
    got = run(update, param, grads, decoupled, weight_decay)

    p = torch.tensor(param, requires_grad=True)
    optimizer_class = torch.optim.AdamW if decoupled else torch.optim.Adam
    optimizer = optimizer_class([p], lr=LR, betas=BETAS, eps=EPS, weight_decay=weight_decay)
    for grad in grads:
        p.grad = torch.tensor(grad)
        optimizer.step()
    state = optimizer.state[p]
    expected = [p.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()]
    for g, e in zip(got, expected):
        assert_close(g, e, 2 * TOL[dtype])  # torch rounds m differently (m + (1 - beta1) * (g - m))
    assert int(state["step"]) == len(grads)

