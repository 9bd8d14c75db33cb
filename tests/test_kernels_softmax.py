"""The softmax kernels (minigrad/kernels/softmax.py): softmax, log-softmax and the fused
scale + mask + softmax of attention, compiled (``*_numba``) and reference (``*_numpy``).

- every compiled kernel agrees with its numpy twin on random shapes, both dtypes, non-contiguous
  inputs, and batches large enough to be split over threads;
- edge values: logits of +-1e4, -inf entries, fully masked rows, non-finite values under the mask;
- the numpy twins against independent formulas: explicit Jacobians, log(softmax), the masked
  formula row by row, central differences in float64;
- the fast exp the kernels use, and the float32 loops compile to vector code without gathers.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
import minigrad.kernels as kernels
from helpers import ATOL, DTYPES, RTOL, assert_close, central_difference, magnitude
from minigrad.kernels import softmax as softmax_module
from minigrad.kernels._jit import jit
from minigrad.kernels._rows import PARALLEL_MIN_ELEMENTS_EXP, use_threads
from minigrad.kernels.softmax import fast_exp, log_softmax_backward_numba, log_softmax_backward_numpy
from minigrad.kernels.softmax import log_softmax_forward_numba, log_softmax_forward_numpy
from minigrad.kernels.softmax import masked_softmax_backward_numba, masked_softmax_backward_numpy
from minigrad.kernels.softmax import masked_softmax_forward_numba, masked_softmax_forward_numpy
from minigrad.kernels.softmax import softmax_backward_numba, softmax_backward_numpy
from minigrad.kernels.softmax import softmax_forward_numba, softmax_forward_numpy
from strategies import row_counts, row_lengths, seeds


# ============================================================================ softmax and log-softmax
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
    n_rows=row_counts,
    n_columns=row_lengths,
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
@pytest.mark.parametrize("shape", [(6144, 64), (600, 65), (4, 100_000), (400_000, 1)])
def test_softmax_kernels_on_batches_split_over_threads(shape, dtype):
    """Large batches (all but (600, 65)) are shared out among threads, in float32."""
    rng = np.random.default_rng(shape[0])
    x = (3 * rng.standard_normal(shape)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if dtype == np.float32 and shape != (600, 65) and minigrad.get_num_threads() > 1:
        assert use_threads(x, PARALLEL_MIN_ELEMENTS_EXP)  # the forward shares the rows out (float64: one thread)
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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_columns", [5, softmax_module.SHORT_ROW - 1, softmax_module.SHORT_ROW, 300])
def test_softmax_short_and_long_rows_treat_special_rows_alike(n_columns, dtype):
    """Rows shorter than SHORT_ROW take another path (one flat pass of exponentials): an all -inf
    row still gives zeros, a -inf entry a zero weight, and a NaN makes its row NaN, not zeros."""
    rng = np.random.default_rng(n_columns)
    x = (3 * rng.standard_normal((6, n_columns))).astype(dtype)
    x[1] = -np.inf
    x[2, ::2] = -np.inf
    x[3, n_columns // 2] = np.nan
    x[4, 0] = 1e4
    with np.errstate(invalid="ignore"):
        y_ref = softmax_forward_numpy(x)
    y = softmax_forward_numba(x)
    np.testing.assert_allclose(y, y_ref, rtol=RTOL[dtype], atol=ATOL[dtype])  # (NaN matches NaN)
    assert np.all(y[1] == 0) and np.all(y[2, ::2] == 0) and np.all(np.isnan(y[3]))
    np.testing.assert_allclose(y[[0, 2, 4, 5]].sum(axis=1), 1, rtol=RTOL[dtype] * n_columns)


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


# ============================================================================ fused scale + mask + softmax (attention)
MASKED_TOL = {np.float32: 1e-6, np.float64: 1e-13}


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))


def check_masked_softmax(x, mask, scale, g):
    """numba == numpy for the fused forward and backward; returns the forward's y."""
    tol = MASKED_TOL[x.dtype.type]
    y = masked_softmax_forward_numpy(x, mask, scale)
    got = masked_softmax_forward_numba(x, mask, scale)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_allclose(got, y, rtol=tol, atol=tol)
    dx = masked_softmax_backward_numpy(y, g, scale)
    got = masked_softmax_backward_numba(y, g, scale)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, dx, rtol=tol, atol=tol * abs(scale) * magnitude(g))
    return y


@given(
    n_blocks=st.integers(1, 6),
    n_columns=row_lengths,
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
@pytest.mark.parametrize("shape, n_mask_rows", [((6144, 64), 64), ((600, 65), 10), ((4, 100_000), 1)])
def test_masked_softmax_on_batches_split_over_threads(shape, n_mask_rows, dtype):
    rng = np.random.default_rng(shape[0])
    x = (3 * rng.standard_normal(shape)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if dtype == np.float32 and shape != (600, 65) and minigrad.get_num_threads() > 1:
        assert use_threads(x, PARALLEL_MIN_ELEMENTS_EXP)  # the forward shares the rows out
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
        for forward, backward in [
            (masked_softmax_forward_numba, masked_softmax_backward_numba),
            (masked_softmax_forward_numpy, masked_softmax_backward_numpy),
        ]:
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
        y = masked_softmax_forward_numpy(x, mask, scale)
        for r in range(x.shape[0]):
            z = np.where(mask[r % n_mask_rows], scale * x[r], -np.inf)
            expected = np.zeros(n) if r % n_mask_rows == 1 else softmax_forward_numpy(z[None])[0]
            np.testing.assert_allclose(y[r], expected, rtol=1e-13, atol=1e-16)
        np.testing.assert_allclose(
            masked_softmax_forward_numpy(x, None, scale),
            softmax_forward_numpy(scale * x),
            rtol=1e-13,
        )


def test_masked_softmax_backward_matches_the_jacobian():
    rng = np.random.default_rng(4)
    x, g = rng.standard_normal((1, 7)), rng.standard_normal((1, 7))
    mask = np.array([[True, False, True, True, False, True, True]])
    scale = 0.35
    y = masked_softmax_forward_numpy(x, mask, scale)[0]
    # dy_i / dx_j = scale * y_i (delta_ij - y_j) for an allowed j, 0 for a masked j (y_j = 0 there)
    jacobian = scale * (np.diag(y) - np.outer(y, y)) * mask[0]
    expected = jacobian.T @ g[0]
    for backward in [masked_softmax_backward_numpy, masked_softmax_backward_numba]:
        np.testing.assert_allclose(backward(y[None], g, scale)[0], expected, rtol=1e-13, atol=1e-15)
    forward = masked_softmax_forward_numpy
    numeric = central_difference(lambda z: float(forward(z, mask, scale)[0] @ g[0]), x.copy())
    np.testing.assert_allclose(expected, numeric[0], rtol=1e-7, atol=1e-9)


def test_masked_softmax_checks_its_mask_and_is_dispatched():
    forward = masked_softmax_forward_numba
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
        expected = masked_softmax_forward_numpy(x, causal_mask(4)[1:3], 0.5)
        np.testing.assert_allclose(y, expected, rtol=1e-6)
        assert dx.shape == x.shape


def test_float32_masked_softmax_loops_are_vectorised_without_gathers():
    py_func = softmax_module._masked_softmax_forward_rows.py_func
    kernel = jit(cache=False, error_model="numpy", fastmath=False)(py_func)
    x = np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 64)
    y = np.empty_like(x)
    kernel(x, causal_mask(64)[:2], 0.5, y, 0, 2)
    np.testing.assert_array_equal(y, masked_softmax_forward_numba(x, causal_mask(64)[:2], 0.5))
    llvm_ir = next(iter(kernel.inspect_llvm().values()))
    assert "x float>" in llvm_ir
    assert "gather" not in llvm_ir and "scatter" not in llvm_ir


@pytest.mark.parametrize("mask_rows", [0, 1, 2])
def test_masked_softmax_of_no_rows(mask_rows):
    """A (0, 4) batch of scores gives a (0, 4) result on both twins, whatever mask tiles it."""
    from minigrad.kernels.softmax import masked_softmax_forward_numba, masked_softmax_forward_numpy

    x, mask = np.zeros((0, 4), np.float32), np.ones((mask_rows, 4), bool)
    for forward in (masked_softmax_forward_numpy, masked_softmax_forward_numba):
        assert forward(x, mask, 0.5).shape == (0, 4)
