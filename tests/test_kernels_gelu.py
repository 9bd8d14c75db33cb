"""The GELU kernels (minigrad/kernels/gelu.py), exact (erf) and tanh approximation, compiled and
reference: the compiled kernels agree with the numpy twins (any shape, large and non-contiguous
arrays; float32 exact GELU to a measured bound); the twins equal the erf and tanh formulas and
central differences; extreme values, NaN, -0.0; the float32 loops compile to vector code without
gathers.
"""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import DTYPES, assert_close, central_difference, magnitude
from minigrad.kernels import gelu as gelu_module
from minigrad.kernels._jit import jit
from minigrad.kernels.gelu import gelu_backward_numba, gelu_backward_numpy, gelu_forward_numba, gelu_forward_numpy
from strategies import seeds

# any shape: 0-d, and empty axes too
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
