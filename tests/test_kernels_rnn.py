"""The elementwise half of an LSTM or GRU step (minigrad/kernels/rnn.py): the compiled float32
kernels agree with their numpy twins, both measured against the twins in float64 on the same
float32 inputs; the layer kernels leave float64 to the twins. (The layer kernels in float32, on
one thread and two, are compared in test_ops_rnn.py.)"""
import numpy as np
import pytest

from minigrad.kernels import rnn

EPS = float(np.finfo(np.float32).eps)
# The compiled sigmoid and tanh come from one fast_exp (within about 1 ulp) and a division: a few
# ulp of 1 at most, as absolute error, since both lie in [-1, 1]. Each later product or sum of
# numbers of size <= m adds at most one rounding, m eps. The bounds below allow 8 eps per step.
ACT = 8 * EPS


def _lstm_inputs(rng, n, hidden):
    pre = (3 * rng.standard_normal((n, 4 * hidden))).astype(np.float32)  # saturated and linear ranges
    pre.reshape(-1)[:3] = [0.0, -100.0, 100.0]
    return pre, rng.standard_normal((n, hidden)).astype(np.float32)


def _run(fn, inputs, out_shapes, dtype=np.float32):
    outs = [np.empty(s, dtype) for s in out_shapes]
    fn(*inputs, *outs)
    return outs


@pytest.mark.parametrize("n, hidden", [(1, 1), (3, 5), (32, 128)])
def test_lstm_cell_kernels_match_the_twins(n, hidden):
    rng = np.random.default_rng(n)
    pre, c_prev = _lstm_inputs(rng, n, hidden)
    shapes = [(n, 4 * hidden)] + [(n, hidden)] * 3
    fast = _run(rnn.lstm_cell_forward_numba, (pre, c_prev), shapes)
    exact = _run(rnn.lstm_cell_forward_numpy, (pre.astype(np.float64), c_prev.astype(np.float64)), shapes, np.float64)
    acts, c, tanh_c, h = fast
    err_c = (np.abs(c_prev) + 2) * ACT + np.abs(exact[1]) * EPS  # f c_prev + i g, errors of f, i, g
    for got, want, bound in zip(fast, exact, [ACT, err_c, err_c + ACT, err_c + 2 * ACT]):
        assert np.all(np.abs(got - want) <= bound)
    twin = _run(rnn.lstm_cell_forward_numpy, (pre, c_prev), shapes)
    assert np.all(np.abs(twin[0] - exact[0]) <= ACT)
    # backward, from the same float32 activations: only the roundings of the products differ
    dh, dc = (rng.standard_normal((n, hidden)).astype(np.float32) for _ in range(2))
    args = (dh, dc, acts, c_prev, tanh_c)
    got = _run(rnn.lstm_cell_backward_numba, args, [(n, 4 * hidden), (n, hidden)])
    want = _run(rnn.lstm_cell_backward_numpy, [a.astype(np.float64) for a in args], [(n, 4 * hidden), (n, hidden)],
                np.float64)
    size = (np.abs(dh) + np.abs(dc) + 1) * (np.abs(c_prev) + 1)  # the largest term any output sums
    for g, w in zip(got, want):
        assert np.all(np.abs(g - w) <= 8 * EPS * np.tile(size, g.shape[1] // hidden))


@pytest.mark.parametrize("n, hidden", [(1, 1), (4, 6), (32, 128)])
def test_gru_cell_kernels_match_the_twins(n, hidden):
    rng = np.random.default_rng(10 + n)
    gi, gh = ((2 * rng.standard_normal((n, 3 * hidden))).astype(np.float32) for _ in range(2))
    h_prev = rng.standard_normal((n, hidden)).astype(np.float32)
    shapes = [(n, 3 * hidden), (n, hidden)]
    acts, h = _run(rnn.gru_cell_forward_numba, (gi, gh, h_prev), shapes)
    exact = _run(rnn.gru_cell_forward_numpy, [a.astype(np.float64) for a in (gi, gh, h_prev)], shapes, np.float64)
    err_n = ACT * (1 + np.abs(gh[:, 2 * hidden:]))  # tanh of gi_n + r gh_n, r off by ACT
    assert np.all(np.abs(acts[:, :2 * hidden] - exact[0][:, :2 * hidden]) <= ACT)
    assert np.all(np.abs(acts[:, 2 * hidden:] - exact[0][:, 2 * hidden:]) <= err_n + ACT)
    assert np.all(np.abs(h - exact[1]) <= (err_n + ACT) * 2 + ACT * np.abs(h_prev) + 3 * EPS * (np.abs(h_prev) + 1))
    dh = rng.standard_normal((n, hidden)).astype(np.float32)
    args = (dh, acts, gh, h_prev)
    out_shapes = [(n, 3 * hidden), (n, 3 * hidden), (n, hidden)]
    got = _run(rnn.gru_cell_backward_numba, args, out_shapes)
    want = _run(rnn.gru_cell_backward_numpy, [a.astype(np.float64) for a in args], out_shapes, np.float64)
    size = np.abs(dh) * (np.abs(h_prev) + 1) * (np.abs(gh[:, 2 * hidden:]) + 1)
    for g, w in zip(got, want):
        assert np.all(np.abs(g - w) <= 8 * EPS * np.tile(size, g.shape[1] // hidden))


def test_layer_kernels_leave_float64_to_the_twins():
    rng = np.random.default_rng(3)
    gi, h0, c0 = rng.standard_normal((3, 2, 8)), rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    w_hh = rng.standard_normal((8, 2))
    for got, want in zip(rnn.lstm_layer_forward_numba(gi, h0, c0, w_hh, None, True),
                         rnn.lstm_layer_forward_numpy(gi, h0, c0, w_hh, None, True)):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)
