"""The elementwise half of one LSTM or GRU step, forward and backward (for ops_rnn.py).

A recurrent step is one matrix product, h W_hh^T, and then a dozen elementwise operations on
(N, H) arrays: sigmoids, tanhs, products, sums. As separate ops, each costs more in Python than in
arithmetic at a char-RNN's sizes (N = 32, H = 128). Here they are one pass over the gates, on the
calling thread (a step's arrays are too small to share out). All arrays are (N, G*H) for the gates and (N, H) for a state; the results go into arrays the
caller passes (``out`` arguments), so that the sequence's arrays are allocated once, not per step.

LSTM, gates stacked (i, f, g, o) as in PyTorch; pre = x W_ih^T + b_ih + h W_hh^T + b_hh:

    forward                                     backward (dh, dc: the gradients of h and c)
    i, f, o = sigmoid(pre_i, pre_f, pre_o)      dc~     = dc + dh o (1 - tanh(c)^2)
    g       = tanh(pre_g)                       dpre_i  = dc~ g i (1 - i)
    c       = f c_prev + i g                    dpre_f  = dc~ c_prev f (1 - f)
    h       = o tanh(c)                         dpre_g  = dc~ i (1 - g^2)
                                                dpre_o  = dh tanh(c) o (1 - o)
                                                dc_prev = dc~ f

GRU, gates stacked (r, z, n); gi = x W_ih^T + b_ih and gh = h_prev W_hh^T + b_hh, kept apart
because r multiplies the hidden part of n:

    r = sigmoid(gi_r + gh_r)                    dpre_n  = dh (1 - z) (1 - n^2)
    z = sigmoid(gi_z + gh_z)                    dpre_z  = dh (h_prev - n) z (1 - z)
    n = tanh(gi_n + r gh_n)                     dpre_r  = dpre_n gh_n r (1 - r)
    h = n + z (h_prev - n)                      dgi     = (dpre_r, dpre_z, dpre_n)
                                                dgh     = (dpre_r, dpre_z, dpre_n r)
                                                dh_prev = dh z    (+ dgh W_hh, the caller's product)

The numpy twins are those lines. The compiled kernels (float32 and C-contiguous arrays; others run
on the twins)
compute sigmoid and tanh from one ``fast_exp`` of -|x| (as gelu.py does), which LLVM runs a
whole SIMD register at a time: sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, with
e = exp(-|x|), to a few units of float32 rounding; tanh(x) = sign(x) (1 - e) / (1 + e) with
e = exp(-2|x|), off by a few units of rounding of 1 (not of tanh(x) itself) near 0.
"""
import numpy as np

from ._jit import jit, typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from ._simd import fast_exp  # noqa: E402


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------
def _sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))  # = 1 / (1 + e^-x), without overflow for large |x|


def lstm_cell_forward_numpy(pre, c_prev, acts, c, tanh_c, h):
    """pre (N, 4H) -> acts (N, 4H) = (i, f, g, o) after their nonlinearities, c, tanh_c = tanh(c)
    and h (N, H), written into the arrays given."""
    hidden = c_prev.shape[-1]
    acts[...] = _sigmoid(pre)
    acts[:, 2 * hidden:3 * hidden] = np.tanh(pre[:, 2 * hidden:3 * hidden])
    i, f, g, o = np.split(acts, 4, axis=-1)
    c[...] = f * c_prev + i * g
    tanh_c[...] = np.tanh(c)
    h[...] = o * tanh_c


def lstm_cell_backward_numpy(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
    """The gradients of h and c (N, H) -> dpre (N, 4H) and dc_prev (N, H), written into the arrays
    given (dc_prev may be dc itself)."""
    i, f, g, o = np.split(acts, 4, axis=-1)
    dc_total = dc + dh * o * (1 - tanh_c * tanh_c)
    dpre[...] = np.concatenate([dc_total * g * i * (1 - i), dc_total * c_prev * f * (1 - f),
                                dc_total * i * (1 - g * g), dh * tanh_c * o * (1 - o)], axis=-1)
    dc_prev[...] = dc_total * f


def gru_cell_forward_numpy(gi, gh, h_prev, acts, h):
    """gi, gh (N, 3H), h_prev (N, H) -> acts (N, 3H) = (r, z, n) and h (N, H), written into the arrays given."""
    i_r, i_z, i_n = np.split(gi, 3, axis=-1)
    h_r, h_z, h_n = np.split(gh, 3, axis=-1)
    r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    acts[...] = np.concatenate([r, z, n], axis=-1)
    h[...] = n + z * (h_prev - n)


def gru_cell_backward_numpy(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
    """The gradient of h (N, H) -> dgi, dgh (N, 3H) and dh_prev = dh z (N, H), the part of h_prev's
    gradient that does not pass through W_hh; written into the arrays given."""
    r, z, n = np.split(acts, 3, axis=-1)
    h_n = np.split(gh, 3, axis=-1)[2]
    d_n = dh * (1 - z) * (1 - n * n)
    d_z = dh * (h_prev - n) * z * (1 - z)
    d_r = d_n * h_n * r * (1 - r)
    dgi[...] = np.concatenate([d_r, d_z, d_n], axis=-1)
    dgh[...] = np.concatenate([d_r, d_z, d_n * r], axis=-1)
    dh_prev[...] = dh * z


# ---------------------------------------------------------------------------------------------------
# Compiled kernels: one version each, for C-contiguous float32 arrays (read-only, then written)
# ---------------------------------------------------------------------------------------------------
def _signature(n_read, n_written):
    def signature(dtype):
        read, written = types.Array(dtype, 2, "C", readonly=True), types.Array(dtype, 2, "C")
        return types.void(*[read] * n_read, *[written] * n_written)
    return signature


@jit(error_model="numpy")
def _sigmoid_fast(x):
    e = fast_exp(-abs(x))
    return (np.float32(1) if x >= 0 else e) / (np.float32(1) + e)


@jit(error_model="numpy")
def _tanh_fast(x):
    e = fast_exp(np.float32(-2) * abs(x))
    t = (np.float32(1) - e) / (np.float32(1) + e)
    return t if x >= 0 else -t  # (NaN: e is NaN, and so is t)


# Each row is done in a few short passes over 1-D rows, with unsigned indices (np.uintp): LLVM runs
# a pass a SIMD register at a time only when it can check cheaply that the arrays a loop writes do
# not overlap those it reads, and one loop over all six arrays of a step is past that (it then ran
# nine times slower). numba's handling of negative indices would stop it too (see matmul.py).
@typed_jit(_signature(2, 4), error_model="numpy")
def _lstm_forward(pre, c_prev, acts, c, tanh_c, h):
    n_rows, hidden = c_prev.shape
    u1, u2, u3 = np.uintp(hidden), np.uintp(2 * hidden), np.uintp(3 * hidden)
    for row in range(n_rows):
        r = np.uintp(row)
        p, a, cp, cn, tc, hn = pre[r], acts[r], c_prev[r], c[r], tanh_c[r], h[r]
        for j in range(u2):  # i, f
            a[j] = _sigmoid_fast(p[j])
        for j in range(u1):  # g
            a[u2 + j] = _tanh_fast(p[u2 + j])
        for j in range(u1):  # o
            a[u3 + j] = _sigmoid_fast(p[u3 + j])
        for j in range(u1):  # c = f c_prev + i g
            cn[j] = a[u1 + j] * cp[j] + a[j] * a[u2 + j]
        for j in range(u1):
            tc[j] = _tanh_fast(cn[j])
        for j in range(u1):  # h = o tanh(c)
            hn[j] = a[u3 + j] * tc[j]


@typed_jit(_signature(5, 2), error_model="numpy")
def _lstm_backward(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
    n_rows, hidden = dh.shape
    u1, u2, u3 = np.uintp(hidden), np.uintp(2 * hidden), np.uintp(3 * hidden)
    one = np.float32(1)
    for row in range(n_rows):
        r = np.uintp(row)
        d_h, a, cp, t, d, dcp = dh[r], acts[r], c_prev[r], tanh_c[r], dpre[r], dc_prev[r]
        dcr = dc[r]
        for j in range(u1):  # dc~ = dc + dh o (1 - tanh(c)^2), kept in dc_prev for now
            dcp[j] = dcr[j] + d_h[j] * a[u3 + j] * (one - t[j] * t[j])
        for j in range(u1):  # i
            d[j] = dcp[j] * a[u2 + j] * a[j] * (one - a[j])
        for j in range(u1):  # f
            d[u1 + j] = dcp[j] * cp[j] * a[u1 + j] * (one - a[u1 + j])
        for j in range(u1):  # g
            d[u2 + j] = dcp[j] * a[j] * (one - a[u2 + j] * a[u2 + j])
        for j in range(u1):  # o
            d[u3 + j] = d_h[j] * t[j] * a[u3 + j] * (one - a[u3 + j])
        for j in range(u1):  # dc_prev = dc~ f
            dcp[j] = dcp[j] * a[u1 + j]


@typed_jit(_signature(3, 2), error_model="numpy")
def _gru_forward(gi, gh, h_prev, acts, h):
    n_rows, hidden = h_prev.shape
    u1, u2 = np.uintp(hidden), np.uintp(2 * hidden)
    for row in range(n_rows):
        r = np.uintp(row)
        x, y, hp, a, hn = gi[r], gh[r], h_prev[r], acts[r], h[r]
        for j in range(u2):  # r, z
            a[j] = _sigmoid_fast(x[j] + y[j])
        for j in range(u1):  # n = tanh(gi_n + r gh_n)
            a[u2 + j] = _tanh_fast(x[u2 + j] + a[j] * y[u2 + j])
        for j in range(u1):  # h = n + z (h_prev - n)
            hn[j] = a[u2 + j] + a[u1 + j] * (hp[j] - a[u2 + j])


@typed_jit(_signature(4, 3), error_model="numpy")
def _gru_backward(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
    n_rows, hidden = dh.shape
    u1, u2 = np.uintp(hidden), np.uintp(2 * hidden)
    one = np.float32(1)
    for row in range(n_rows):
        r = np.uintp(row)
        d_h, a, y, hp, di, dg, dhp = dh[r], acts[r], gh[r], h_prev[r], dgi[r], dgh[r], dh_prev[r]
        for j in range(u1):  # dpre_n
            di[u2 + j] = d_h[j] * (one - a[u1 + j]) * (one - a[u2 + j] * a[u2 + j])
        for j in range(u1):  # dpre_z
            di[u1 + j] = d_h[j] * (hp[j] - a[u2 + j]) * a[u1 + j] * (one - a[u1 + j])
        for j in range(u1):  # dpre_r
            di[j] = di[u2 + j] * y[u2 + j] * a[j] * (one - a[j])
        for j in range(u2):  # dgh = dgi for r and z
            dg[j] = di[j]
        for j in range(u1):  # and dpre_n r for n
            dg[u2 + j] = di[u2 + j] * a[j]
        for j in range(u1):
            dhp[j] = d_h[j] * a[u1 + j]


def _compiled(*arrays):
    """Do these arrays go to the kernels: float32 and C-contiguous (the others: the twins)."""
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


def lstm_cell_forward_numba(pre, c_prev, acts, c, tanh_c, h):
    """See lstm_cell_forward_numpy."""
    if not _compiled(pre, c_prev, acts, c, tanh_c, h):
        return lstm_cell_forward_numpy(pre, c_prev, acts, c, tanh_c, h)
    _lstm_forward.for_dtype(pre.dtype)(pre, c_prev, acts, c, tanh_c, h)


def lstm_cell_backward_numba(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
    """See lstm_cell_backward_numpy."""
    if not _compiled(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
        return lstm_cell_backward_numpy(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev)
    _lstm_backward.for_dtype(dh.dtype)(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev)


def gru_cell_forward_numba(gi, gh, h_prev, acts, h):
    """See gru_cell_forward_numpy."""
    if not _compiled(gi, gh, h_prev, acts, h):
        return gru_cell_forward_numpy(gi, gh, h_prev, acts, h)
    _gru_forward.for_dtype(gi.dtype)(gi, gh, h_prev, acts, h)


def gru_cell_backward_numba(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
    """See gru_cell_backward_numpy."""
    if not _compiled(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
        return gru_cell_backward_numpy(dh, acts, gh, h_prev, dgi, dgh, dh_prev)
    _gru_backward.for_dtype(dh.dtype)(dh, acts, gh, h_prev, dgi, dgh, dh_prev)
