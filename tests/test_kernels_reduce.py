"""The reduction kernels (minigrad/kernels/reduce.py): the sum over rows (a bias gradient) within
the rounding bound of an in-order sum, for C and Fortran layouts; the sum of squares (a gradient
norm) accumulated in float64, so that float32 squares of 1e20 do not overflow."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import DTYPES
from minigrad.kernels.reduce import (NUMPY_ROWS, _sum_row_blocks, sum_rows_numba, sum_rows_numpy, sum_squares_numba,
                                     sum_squares_numpy)
from strategies import seeds


@pytest.mark.parametrize("dtype", DTYPES)
@given(n_rows=st.integers(0, 2000), n_cols=st.sampled_from([1, 7, 16, 33, 128, 384]), seed=seeds)
def test_sum_rows_numba_matches_numpy(dtype, n_rows, n_cols, seed):
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
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal(n)).astype(dtype)  # 1e20: the squares overflow float32, not float64
    got, expected = sum_squares_numba(x), sum_squares_numpy(x)
    assert isinstance(got, float) and math.isfinite(got)
    exact = math.fsum(float(v) ** 2 for v in x)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-300)
    assert expected == pytest.approx(exact, rel=1e-12, abs=1e-300)
    assert sum_squares_numba(x[::-1].copy()[::-1]) == got


@pytest.mark.parametrize("n_rows", [1, 5, NUMPY_ROWS])
def test_few_rows_give_the_compiled_loops_bits(n_rows):
    """Up to NUMPY_ROWS rows, sum_rows_numba hands the sum to numpy, which adds the rows in the
    same order as the compiled loop: the very same float32 result."""
    g = np.random.default_rng(n_rows).standard_normal((n_rows, 37)).astype(np.float32)
    partial = np.empty((1, 37), np.float32)
    _sum_row_blocks(g, partial, 0, 1)
    np.testing.assert_array_equal(sum_rows_numba(g), partial[0])
