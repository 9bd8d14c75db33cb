"""The im2col and col2im kernels (minigrad/kernels/conv.py): the compiled kernels agree with their
numpy twins, for float32 and float64, over strides, dilations, asymmetric padding, windows that
reach past the input (ceil_mode), a -inf fill (max pooling) and strided inputs; and col2im is
the adjoint of im2col: <im2col(x), c> = <x, col2im(c)>. The max-pooling kernels
(minigrad/kernels/pool.py) agree with their twins too, ties, NaNs and windows of -inf included."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import DTYPES, num_threads
from minigrad.kernels.conv import col2im_numba, col2im_numpy, im2col_numba, im2col_numpy
from minigrad.ops_conv import output_size
from minigrad.kernels.pool import (
    max_pool2d_backward_numba, max_pool2d_backward_numpy, max_pool2d_forward_numba, max_pool2d_forward_numpy,
)
from strategies import seeds

pairs = st.tuples(st.integers(1, 3), st.integers(1, 3))


@st.composite
def layouts(draw):
    """(input shape, kernel, stride, (top, left) padding, dilation, output size) with a non-empty output."""
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    kernel, stride, dilation = draw(pairs), draw(pairs), draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    padding = (draw(st.integers(0, kernel[0])), draw(st.integers(0, kernel[1])))
    extra = draw(pairs)  # the bottom / right pad: up to 2 past the top / left one
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    ceil = draw(st.booleans())
    out = tuple(output_size(size, k, s, p, p + e - 1, d, ceil)
                for size, k, s, p, e, d in zip((h, w), kernel, stride, padding, extra, dilation))
    if min(out) < 1:
        out = (1, 1)  # the first window then still reads what falls inside
    return (n, c, h, w), kernel, stride, padding, dilation, out


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=60, deadline=None)
@given(layout=layouts(), seed=seeds, fill=st.sampled_from([0.0, -np.inf]), strided=st.booleans())
def test_im2col_and_col2im_numba_match_numpy(dtype, layout, seed, fill, strided):
    shape, kernel, stride, padding, dilation, out = layout
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    if strided:  # a view with other strides: the kernel reads it in place
        x = np.ascontiguousarray(np.swapaxes(x, 2, 3)).swapaxes(2, 3)
    cols = im2col_numpy(x, kernel, stride, padding, dilation, out, fill)
    # a copy: every number is a number of x or the fill, exactly
    np.testing.assert_array_equal(im2col_numba(x, kernel, stride, padding, dilation, out, fill), cols)
    c = rng.standard_normal(cols.shape).astype(dtype)
    dx = col2im_numpy(c, shape, kernel, stride, padding, dilation)
    # col2im adds at most kh*kw numbers into each place, in another order than numpy's slices: each
    # sum is off by at most (kh kw) eps times the sum of the |c| it adds, so the two differ by twice that
    bound = 2 * kernel[0] * kernel[1] * np.finfo(dtype).eps * col2im_numpy(np.abs(c), shape, kernel, stride,
                                                                            padding, dilation)
    assert np.all(np.abs(col2im_numba(c, shape, kernel, stride, padding, dilation) - dx) <= bound)
    if fill == 0.0:  # the adjoint identity, in float64 (float32 sums would blur it)
        x64, c64 = x.astype(np.float64), c.astype(np.float64)
        lhs = np.vdot(im2col_numpy(x64, kernel, stride, padding, dilation, out), c64)
        rhs = np.vdot(x64, col2im_numpy(c64, shape, kernel, stride, padding, dilation))
        assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_im2col_numba_on_threads_matches_numpy(dtype):
    """Large enough to be shared out over threads: rows of cols and planes of dx split between them."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16, 20, 20)).astype(dtype)
    args = ((3, 3), (1, 1), (1, 1), (1, 1), (20, 20))
    with num_threads(2):
        cols = im2col_numba(x, *args)
        np.testing.assert_array_equal(cols, im2col_numpy(x, *args))
        c = rng.standard_normal(cols.shape).astype(dtype)
        # 9 terms per place, summed in two orders (see above)
        bound = 2 * 9 * np.finfo(dtype).eps * col2im_numpy(np.abs(c), x.shape, *args[:4])
        assert np.all(np.abs(col2im_numba(c, x.shape, *args[:4]) - col2im_numpy(c, x.shape, *args[:4])) <= bound)


def test_output_size_follows_pytorch():
    # floor((n + pads - d (k - 1) - 1) / s) + 1
    assert output_size(28, 5, 1, 0, 0, 1) == 24
    assert output_size(50, 3, 2, 4, 4, 3) == 26  # PyTorch docs: (20, 16, 50, 100) input, kernel 3, dilation 3
    assert output_size(5, 2, 2, 0, 0, 1) == 2
    assert output_size(5, 2, 2, 0, 0, 1, ceil_mode=True) == 3
    # ceil_mode: a window starting in the back padding is dropped (6 + 1 pad, k 2, s 2: 4 would start at 7)
    assert output_size(6, 2, 2, 1, 1, 1, ceil_mode=True) == 4
    assert output_size(3, 5, 1, 0, 0, 1) == 0
    # ceil_mode: one window that starts at 0 and reaches past the end (taps 0 and 2 of a size 2)
    assert output_size(2, 2, 3, 0, 0, 2) == 0
    assert output_size(2, 2, 3, 0, 0, 2, ceil_mode=True) == 1


def test_kernels_reject_other_arrays():
    with pytest.raises(ValueError, match="im2col"):
        im2col_numba(np.zeros((2, 3, 4)), (1, 1), (1, 1), (0, 0), (1, 1), (3, 4))
    with pytest.raises(ValueError, match="col2im"):
        col2im_numba(np.zeros((2, 3, 4), dtype=np.int64), (1, 1, 3, 4), (1, 1), (1, 1), (0, 0), (1, 1))


@st.composite
def pool_layouts(draw):
    """(input shape, kernel, stride, padding (at most half the kernel), dilation, output size)."""
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel, stride, dilation = draw(pairs), draw(pairs), draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    padding = (draw(st.integers(0, kernel[0] // 2)), draw(st.integers(0, kernel[1] // 2)))
    h, w = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    ceil = draw(st.booleans())
    out = tuple(output_size(size, k, s, p, p, d, ceil)
                for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    if min(out) < 1:
        h, w = h + 2 * kernel[0] * dilation[0], w + 2 * kernel[1] * dilation[1]
        out = tuple(output_size(size, k, s, p, p, d, ceil)
                    for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))
    return (n, c, h, w), kernel, stride, padding, dilation, out


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=60, deadline=None)
@given(layout=pool_layouts(), seed=seeds, values=st.sampled_from(["normal", "ties", "special"]))
def test_max_pool_numba_matches_numpy(dtype, layout, seed, values):
    shape, kernel, stride, padding, dilation, out = layout
    rng = np.random.default_rng(seed)
    if values == "normal":
        x = rng.standard_normal(shape)
    elif values == "ties":  # few distinct values: the first max of each window must win in both
        x = rng.integers(0, 3, shape).astype(np.float64)
    else:  # -inf everywhere but a few NaNs and numbers: windows of -inf only, NaN that wins
        x = rng.choice([-np.inf, -np.inf, -np.inf, np.nan, 1.0], size=shape)
    x = x.astype(dtype)
    y, indices = max_pool2d_forward_numpy(x, kernel, stride, padding, dilation, out)
    y2, indices2 = max_pool2d_forward_numba(x, kernel, stride, padding, dilation, out)
    np.testing.assert_array_equal(y2, y)  # (NaN in the same places)
    np.testing.assert_array_equal(indices2, indices)
    assert indices.dtype == np.int64 and indices.max() < shape[2] * shape[3]
    # -1 only for a window whose taps all fall in the padding (dilation): -inf, and no gradient
    assert np.all((indices >= 0) | ((indices == -1) & (y == -np.inf)))
    g = rng.standard_normal(y.shape).astype(dtype)
    dx = max_pool2d_backward_numpy(g, indices, shape)
    # a place that is the max of several windows gets their sum: numpy adds in float64 and rounds once,
    # the kernel adds in the dtype; at most (windows per place) roundings of the sum of |g|
    per_place = -(-kernel[0] * dilation[0] // stride[0]) * -(-kernel[1] * dilation[1] // stride[1])
    bound = 2 * per_place * np.finfo(dtype).eps * max_pool2d_backward_numpy(np.abs(g), indices, shape)
    assert np.all(np.abs(max_pool2d_backward_numba(g, indices, shape) - dx) <= bound)


def test_max_pool_on_threads_matches_numpy():
    x = np.random.default_rng(1).standard_normal((16, 8, 24, 24)).astype(np.float32)
    args = ((3, 3), (2, 2), (1, 1), (1, 1), (12, 12))
    with num_threads(2):
        y, indices = max_pool2d_forward_numba(x, *args)
        y_ref, indices_ref = max_pool2d_forward_numpy(x, *args)
        np.testing.assert_array_equal(y, y_ref)
        np.testing.assert_array_equal(indices, indices_ref)
        g = np.ones_like(y)  # sums of at most 4 ones: exact in float32
        np.testing.assert_array_equal(max_pool2d_backward_numba(g, indices, x.shape),
                                      max_pool2d_backward_numpy(g, indices, x.shape))
