"""The one-image-at-a-time convolution (minigrad/kernels/conv2d.py): the compiled kernels agree with
their batch-wide numpy twins over strides, dilations, padding, windows that reach past the input,
pieces of one output row and whole images, one thread and two; float64 runs on the twins."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import num_threads
from minigrad.kernels import conv2d
from minigrad.kernels.conv2d import (
    conv2d_backward_numba, conv2d_backward_numpy, conv2d_forward_numba, conv2d_forward_numpy,
)
from strategies import seeds
from test_kernels_conv import layouts

EPS = np.finfo(np.float32).eps


def _bounds(x, w, b, g, args):
    """How far two float32 results may differ: each is a sum of K products, off by at most K eps times
    the sum of their sizes, so the two by twice that. The sums of sizes are the same convolution on
    absolute values, in float64."""
    ax, aw, ag = (np.abs(a).astype(np.float64) for a in (x, w, g))
    n_taps = w[0].size
    y = 2 * (n_taps + 1) * EPS * conv2d_forward_numpy(ax, aw, np.abs(b).astype(np.float64), *args)
    dx, dw = conv2d_backward_numpy(ag, ax, aw, *args[:3])
    positions = g.shape[0] * g.shape[2] * g.shape[3]
    # dW: a sum over every position of the batch, in parts; dx: O terms, then up to kh kw added per place
    return y, 2 * (w.shape[0] + n_taps) * EPS * dx, 2 * (positions + g.shape[0]) * EPS * dw


def _compare(x, w, b, args, rng):
    y = conv2d_forward_numba(x, w, b, *args)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y_bound, dx_bound, dw_bound = _bounds(x, w, b if b is not None else np.zeros(w.shape[0]), g, args)
    assert np.all(np.abs(y - conv2d_forward_numpy(x, w, b, *args)) <= y_bound)
    dx, dw = conv2d_backward_numba(g, x, w, *args[:3])
    dx_ref, dw_ref = conv2d_backward_numpy(g, x, w, *args[:3])
    assert dx.shape == x.shape and dw.shape == w.shape
    assert np.all(np.abs(dx - dx_ref) <= dx_bound)
    assert np.all(np.abs(dw - dw_ref) <= dw_bound)


@settings(max_examples=60, deadline=None)
@given(layout=layouts(), n_out=st.integers(1, 5), seed=seeds, bias=st.booleans(), one_row_pieces=st.booleans(),
       threads=st.sampled_from([1, 2]))
def test_conv2d_numba_matches_numpy(layout, n_out, seed, bias, one_row_pieces, threads):
    shape, kernel, stride, padding, dilation, out = layout
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((n_out, shape[1], *kernel)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32) if bias else None
    with num_threads(threads), pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv2d, "SERIAL_FLOPS", 0)  # (share even these small ones out)
        if one_row_pieces:
            patch.setattr(conv2d, "PIECE_BYTES", 1)
        _compare(x, w, b, (stride, padding, dilation, out), rng)


@pytest.mark.parametrize("shape, n_out, kernel, padding", [
    ((16, 6, 14, 14), 16, (5, 5), (0, 0)),  # LeNet's second layer
    ((6, 16, 40, 40), 24, (3, 3), (1, 1)),  # several pieces of rows per image
])
def test_conv2d_numba_on_threads_matches_numpy(shape, n_out, kernel, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((n_out, shape[1], *kernel)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    out = tuple(size + 2 * p - k + 1 for size, p, k in zip(shape[2:], padding, kernel))
    with num_threads(2):
        _compare(x, w, b, ((1, 1), padding, (1, 1), out), rng)


def test_conv2d_computes_only_what_is_needed():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    g = rng.standard_normal((3, 4, 4, 4)).astype(np.float32)
    args = ((1, 1), (0, 0), (1, 1))
    dx, dw = conv2d_backward_numba(g, x, w, *args, need_dx=False)
    assert dx is None and dw.shape == w.shape
    dx, dw = conv2d_backward_numba(g, x, w, *args, need_dweight=False)
    assert dw is None and dx.shape == x.shape
    # an empty batch: no output, no gradient of x, a zero gradient of the weight
    empty = np.zeros((0, 2, 6, 6), np.float32)
    assert conv2d_forward_numba(empty, w, None, *args, (4, 4)).shape == (0, 4, 4, 4)
    dx, dw = conv2d_backward_numba(np.zeros((0, 4, 4, 4), np.float32), empty, w, *args)
    assert dx.shape == empty.shape and np.array_equal(dw, np.zeros_like(w))


def test_conv2d_float64_runs_on_the_numpy_twins():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((2, 3, 2, 2))
    args = ((1, 1), (1, 1), (1, 1))
    np.testing.assert_array_equal(conv2d_forward_numba(x, w, None, *args, (6, 6)),
                                  conv2d_forward_numpy(x, w, None, *args, (6, 6)))
    g = rng.standard_normal((2, 2, 6, 6))
    for got, want in zip(conv2d_backward_numba(g, x, w, *args), conv2d_backward_numpy(g, x, w, *args)):
        np.testing.assert_array_equal(got, want)


def test_conv2d_kernels_reject_what_does_not_fit():
    x, w = np.zeros((1, 3, 5, 5), np.float32), np.zeros((2, 4, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r"conv2d_forward: .*\(1, 3, 5, 5\) and \(2, 4, 3, 3\)"):
        conv2d_forward_numba(x, w, None, (1, 1), (0, 0), (1, 1), (3, 3))
    with pytest.raises(TypeError, match="conv2d_backward"):
        conv2d_backward_numba(np.zeros((1, 2, 3, 3)), x, w[:, :3].astype(np.float64), (1, 1), (0, 0), (1, 1))
    with pytest.raises(ValueError, match="bias"):
        conv2d_forward_numba(x, w[:, :3], np.zeros(3, np.float32), (1, 1), (0, 0), (1, 1), (3, 3))
