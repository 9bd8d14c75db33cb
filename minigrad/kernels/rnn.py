"""One Elman RNN, LSTM or GRU layer in one direction over a whole sequence, forward and backward
(for ops_rnn.py, which explains the backpropagation through time).

Each step is one matrix product, h W_hh^T, that must wait for the step before, and then a dozen
elementwise operations on (N, H) arrays: sigmoids, tanhs, products, sums. As separate ops, each
costs more in Python than in arithmetic at a char-RNN's sizes (N = 32, H = 128). Here:

- ``*_cell_*``: the elementwise half of one step, as one pass over the gates. All arrays are
  (N, G*H) for the gates and (N, H) for a state; the results go into arrays the caller passes.
- ``*_layer_*``: the loop over the steps. The numpy twins are that loop written plainly (a product,
  then the cell); the compiled kernels run it with no Python between the steps, and in parallel
  over the batch: the rows of h never mix (row n of h_t depends on row n of h_{t-1} only), so each
  thread runs every step for its own rows, with no waiting for the others between steps
  (``_rnn_rows``, ``_lstm_rows``, ``_gru_rows`` and their backwards; the products are matmul.py's
  blocked kernel, on W_hh packed once per call: ``_pack``, ``_times``).

LSTM, gates stacked (i, f, g, o) as in PyTorch; pre = gi + h W_hh^T + b_hh, gi = x W_ih^T + b_ih:

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

The numpy twins are those lines. The compiled kernels (float32; other dtypes run on the twins)
compute sigmoid and tanh from one ``fast_exp`` of -|x| (as gelu.py does), which LLVM runs a
whole SIMD register at a time: sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, with
e = exp(-|x|), to a few units of float32 rounding; tanh(x) = sign(x) (1 - e) / (1 + e) with
e = exp(-2|x|), off by a few units of rounding of 1 (not of tanh(x) itself) near 0.
"""
import numpy as np

from ._jit import INLINE, jit, typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from ._parallel import get_num_threads, parallel_for  # noqa: E402
from ._simd import fast_exp  # noqa: E402
from .matmul import CACHE, NR, block_address, block_product, block_scratch, strided  # noqa: E402

ROWS_PER_THREAD = 8  # fewer batch rows than this per thread: one thread runs the layer


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


def _steps(length, reverse):
    """The steps in the order they run: 0 ... L-1, or L-1 ... 0 for the reverse direction."""
    return range(length - 1, -1, -1) if reverse else range(length)


def rnn_layer_forward_numpy(gi, h0, w_hh, b_hh=None, relu=False, reverse=False):
    """gi (L, N, H) = x W_ih^T + b_ih at every step, h0 (N, H), w_hh (H, H), b_hh (H,) or None
    -> hs (L, N, H), h_t = tanh(gi[t] + h_{t-1} W_hh^T + b_hh) (or relu)."""
    hs, h = np.empty_like(gi), h0
    for t in _steps(len(gi), reverse):
        pre = gi[t] + h @ w_hh.T + (0 if b_hh is None else b_hh)
        hs[t] = np.maximum(pre, 0) if relu else np.tanh(pre)
        h = hs[t]
    return hs


def rnn_layer_backward_numpy(g_hs, h0, w_hh, hs, relu=False, reverse=False):
    """The gradient of hs (L, N, H) -> dpre (L, N, H) (= the gradient of gi) and dh0 (N, H):
    dpre[t] = (g[t] + dh) * (1 - h_t^2) (tanh) or * (h_t > 0) (relu), dh = dpre[t] W_hh."""
    dpre, dh = np.empty_like(hs), np.zeros_like(h0)
    for t in _steps(len(hs), not reverse):
        d = g_hs[t] + dh
        dpre[t] = d * (hs[t] > 0) if relu else d * (1 - hs[t] * hs[t])
        dh = dpre[t] @ w_hh
    return dpre, dh


def lstm_layer_forward_numpy(gi, h0, c0, w_hh, b_hh=None, reverse=False):
    """gi (L, N, 4H) = x W_ih^T + b_ih at every step, h0, c0 (N, H), w_hh (4H, H), b_hh (4H,) or None
    -> hs, cs, tanh_cs (L, N, H) (h, c, tanh(c) after every step) and acts (L, N, 4H) (the gates)."""
    length, batch, n_gates = gi.shape
    hs, cs, tanh_cs = (np.empty((length, batch, n_gates // 4), gi.dtype) for _ in range(3))
    acts = np.empty_like(gi)
    h, c = h0, c0
    for t in _steps(length, reverse):
        pre = gi[t] + h @ w_hh.T + (0 if b_hh is None else b_hh)
        lstm_cell_forward_numpy(pre, c, acts[t], cs[t], tanh_cs[t], hs[t])
        h, c = hs[t], cs[t]
    return hs, cs, tanh_cs, acts


def lstm_layer_backward_numpy(g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse=False):
    """The gradients of hs (L, N, H) and of the last c (N, H) -> dgates (L, N, 4H) (= the gradient of
    gi), dh0, dc0 (N, H). The steps run backwards; dh is carried to the step before through W_hh."""
    dgates = np.empty_like(acts)
    dh, dc = np.zeros_like(h0), np.array(g_c, dtype=acts.dtype)
    first = _steps(len(acts), reverse)[0]  # the sequence's first step: its c_prev is c0
    for t in _steps(len(acts), not reverse):
        c_prev = c0 if t == first else cs[t + 1 if reverse else t - 1]
        lstm_cell_backward_numpy(g_hs[t] + dh, dc, acts[t], c_prev, tanh_cs[t], dgates[t], dc)
        dh = dgates[t] @ w_hh
    return dgates, dh, dc


def gru_layer_forward_numpy(gi, h0, w_hh, b_hh=None, reverse=False):
    """gi (L, N, 3H) = x W_ih^T + b_ih at every step, h0 (N, H), w_hh (3H, H), b_hh (3H,) or None
    -> hs (L, N, H), acts (L, N, 3H) (r, z, n) and ghs (L, N, 3H) (h_{t-1} W_hh^T + b_hh)."""
    length, batch, n_gates = gi.shape
    hs, acts, ghs = np.empty((length, batch, n_gates // 3), gi.dtype), np.empty_like(gi), np.empty_like(gi)
    h = h0
    for t in _steps(length, reverse):
        ghs[t] = h @ w_hh.T + (0 if b_hh is None else b_hh)
        gru_cell_forward_numpy(gi[t], ghs[t], h, acts[t], hs[t])
        h = hs[t]
    return hs, acts, ghs


def gru_layer_backward_numpy(g_hs, h0, w_hh, hs, acts, ghs, reverse=False):
    """The gradient of hs (L, N, H) -> dgi, dgh (L, N, 3H) (the gradients of gi and of the ghs) and dh0."""
    dgi, dgh = np.empty_like(acts), np.empty_like(acts)
    dh, dh_direct = np.zeros_like(h0), np.empty_like(h0)
    first = _steps(len(acts), reverse)[0]
    for t in _steps(len(acts), not reverse):
        h_prev = h0 if t == first else hs[t + 1 if reverse else t - 1]
        gru_cell_backward_numpy(g_hs[t] + dh, acts[t], ghs[t], h_prev, dgi[t], dgh[t], dh_direct)
        dh = dh_direct + dgh[t] @ w_hh
    return dgi, dgh, dh


# ---------------------------------------------------------------------------------------------------
# Compiled kernels
# ---------------------------------------------------------------------------------------------------
@jit(error_model="numpy", inline=INLINE)
def _sigmoid_fast(x):
    e = fast_exp(-abs(x))
    return (np.float32(1) if x >= 0 else e) / (np.float32(1) + e)


@jit(error_model="numpy", inline=INLINE)
def _tanh_fast(x):
    e = fast_exp(np.float32(-2) * abs(x))
    t = (np.float32(1) - e) / (np.float32(1) + e)
    return t if x >= 0 else -t  # (NaN: e is NaN, and so is t)


# Each row is done in a few short passes over 1-D rows, with unsigned indices (np.uintp): LLVM runs
# a pass a SIMD register at a time only when it can check cheaply that the arrays a loop writes do
# not overlap those it reads, and one loop over all six arrays of a step is past that (it then ran
# nine times slower). numba's handling of negative indices would stop it too (see matmul.py).
@jit(error_model="numpy", inline=INLINE)
def _lstm_cell(pre, c_prev, acts, c, tanh_c, h):
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


@jit(error_model="numpy", inline=INLINE)
def _lstm_cell_backward(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
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


@jit(error_model="numpy", inline=INLINE)
def _gru_cell(gi, gh, h_prev, acts, h):
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


@jit(error_model="numpy", inline=INLINE)
def _gru_cell_backward(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
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


# The layers: each call runs every step for the batch rows first <= n < stop.
def _layer_signature(read, written, *more):
    """C-contiguous arrays, `read` read-only and `written` writable, given by their ndim; then more
    types; then matmul_block's address (``matmul.block_address``), first and stop."""
    def signature(dtype):
        return types.void(*[types.Array(dtype, n, "C", readonly=True) for n in read],
                          *[types.Array(dtype, n, "C") for n in written], *more, types.int64, types.intp, types.intp)
    return signature


@jit(inline=INLINE)
def _sum_into(out, a, b):
    """out = a + b, for (rows, n) C-contiguous arrays, one row at a time."""
    for r in range(out.shape[0]):
        x, y, z = a[r], b[r], out[r]
        for j in range(np.uintp(out.shape[1])):
            z[j] = x[j] + y[j]


@jit(cache=CACHE, inline=INLINE)
def _pack(b):
    """b (K, N), any strides -> its column strips (ceil(N / NR), K, NR), zeros past column N. The
    products of every step read these in place: packed once per layer, not once per step."""
    n_inner, n_cols = b.shape
    strips = np.zeros(((n_cols + NR - 1) // NR, n_inner, NR), dtype=b.dtype)
    for s in range(strips.shape[0]):
        for k in range(n_inner):
            for jj in range(min(NR, n_cols - s * NR)):
                strips[s, k, jj] = b[k, s * NR + jj]
    return strips


@jit(cache=CACHE, inline=INLINE)
def _times(a, strips, out, tile, scratch, matmul_at):
    """out (M, N) = a (M, K) @ the matrix packed in strips, one strip of NR columns at a time, each
    product into tile (M, NR) and then copied into place."""
    n_cols = out.shape[1]
    for s in range(strips.shape[0]):
        block_product(strided(a), strided(strips[s]), tile, scratch, matmul_at)
        for r in range(out.shape[0]):
            src, dst = tile[r], out[r]
            for jj in range(min(NR, n_cols - s * NR)):
                dst[s * NR + jj] = src[jj]


@typed_jit(_layer_signature((3, 2, 2, 1), (3,), types.boolean, types.boolean), cache=CACHE, error_model="numpy")
def _rnn_rows(gi, h0, w_hh, b_hh, hs, relu, reverse, matmul_at, first, stop):
    """rnn_layer_forward for the rows first:stop of the batch."""
    length, hidden = gi.shape[0], gi.shape[2]
    pre, tile = np.empty((stop - first, hidden), dtype=gi.dtype), np.empty((stop - first, NR), dtype=gi.dtype)
    scratch = block_scratch(pre, NR)
    w_t = _pack(w_hh.T)
    h_prev = h0[first:stop].copy()
    zero = np.float32(0)
    for s in range(length):
        t = length - 1 - s if reverse else s
        _times(h_prev, w_t, pre, tile, scratch, matmul_at)
        h = hs[t, first:stop]
        for r in range(stop - first):
            p, g, out = pre[r], gi[t, first + r], h[r]
            if relu:
                for j in range(np.uintp(hidden)):
                    v = p[j] + g[j] + b_hh[j]
                    out[j] = v if not v <= 0 else zero  # (NaN passes through, as in PyTorch)
            else:
                for j in range(np.uintp(hidden)):
                    out[j] = _tanh_fast(p[j] + g[j] + b_hh[j])
        h_prev = h


@typed_jit(_layer_signature((3, 2, 3), (3, 2), types.boolean, types.boolean), cache=CACHE, error_model="numpy")
def _rnn_rows_backward(g_hs, w_hh, hs, dpre, dh0, relu, reverse, matmul_at, first, stop):
    """rnn_layer_backward for the rows first:stop of the batch."""
    length, rows, hidden = hs.shape[0], stop - first, hs.shape[2]
    dh, tile = np.zeros((rows, hidden), dtype=hs.dtype), np.empty((rows, NR), dtype=hs.dtype)
    scratch = block_scratch(dh, NR)
    w = _pack(w_hh)
    one, zero = np.float32(1), np.float32(0)
    for s in range(length):  # the steps, the last one first
        t = s if reverse else length - 1 - s
        d = dpre[t, first:stop]
        for r in range(rows):
            g, h, carried, out = g_hs[t, first + r], hs[t, first + r], dh[r], d[r]
            if relu:
                for j in range(np.uintp(hidden)):
                    out[j] = g[j] + carried[j] if h[j] > 0 else zero
            else:
                for j in range(np.uintp(hidden)):
                    out[j] = (g[j] + carried[j]) * (one - h[j] * h[j])
        _times(d, w, dh, tile, scratch, matmul_at)  # dh_{t-1} = dpre[t] W_hh
    for r in range(rows):
        for j in range(hidden):
            dh0[first + r, j] = dh[r, j]


@typed_jit(_layer_signature((3, 2, 2, 2, 1), (3, 3, 3, 3), types.boolean), cache=CACHE, error_model="numpy")
def _lstm_rows(gi, h0, c0, w_hh, b_hh, hs, cs, tanh_cs, acts, reverse, matmul_at, first, stop):
    """lstm_layer_forward for the rows first:stop of the batch."""
    length, n_gates = gi.shape[0], gi.shape[2]
    pre, tile = np.empty((stop - first, n_gates), dtype=gi.dtype), np.empty((stop - first, NR), dtype=gi.dtype)
    scratch = block_scratch(pre, NR)
    w_t = _pack(w_hh.T)  # W_hh^T (H, 4H)
    h_prev, c_prev = h0[first:stop].copy(), c0[first:stop].copy()
    for s in range(length):
        t = length - 1 - s if reverse else s
        _times(h_prev, w_t, pre, tile, scratch, matmul_at)  # pre = h_{t-1} W_hh^T + gi[t] + b_hh
        for r in range(stop - first):
            p, g = pre[r], gi[t, first + r]
            for j in range(np.uintp(n_gates)):
                p[j] += g[j] + b_hh[j]
        h, c = hs[t, first:stop], cs[t, first:stop]
        _lstm_cell(pre, c_prev, acts[t, first:stop], c, tanh_cs[t, first:stop], h)
        h_prev, c_prev = h, c


@typed_jit(_layer_signature((3, 2, 2, 2, 3, 3, 3), (3, 2, 2), types.boolean), cache=CACHE, error_model="numpy")
def _lstm_rows_backward(g_hs, g_c, c0, w_hh, cs, tanh_cs, acts, dgates, dh0, dc0, reverse, matmul_at, first, stop):
    """lstm_layer_backward for the rows first:stop of the batch."""
    length, rows, hidden = cs.shape[0], stop - first, cs.shape[2]
    dh, dh_t = np.zeros((rows, hidden), dtype=cs.dtype), np.empty((rows, hidden), dtype=cs.dtype)
    dc, dc_prev = g_c[first:stop].copy(), np.empty((rows, hidden), dtype=cs.dtype)
    tile = np.empty((rows, NR), dtype=cs.dtype)
    scratch = block_scratch(dh, NR)
    w = _pack(w_hh)  # (4H, H)
    for s in range(length):  # the steps, the last one first
        t = s if reverse else length - 1 - s
        c_prev = c0[first:stop] if s == length - 1 else cs[t + 1 if reverse else t - 1, first:stop]
        _sum_into(dh_t, g_hs[t, first:stop], dh)
        d = dgates[t, first:stop]
        _lstm_cell_backward(dh_t, dc, acts[t, first:stop], c_prev, tanh_cs[t, first:stop], d, dc_prev)
        dc, dc_prev = dc_prev, dc
        _times(d, w, dh, tile, scratch, matmul_at)  # dh_{t-1} = dgates[t] W_hh
    for r in range(rows):
        for j in range(hidden):
            dh0[first + r, j], dc0[first + r, j] = dh[r, j], dc[r, j]


@typed_jit(_layer_signature((3, 2, 2, 1), (3, 3, 3), types.boolean), cache=CACHE, error_model="numpy")
def _gru_rows(gi, h0, w_hh, b_hh, hs, acts, ghs, reverse, matmul_at, first, stop):
    """gru_layer_forward for the rows first:stop of the batch (b_hh: zeros without a bias)."""
    length, n_gates = gi.shape[0], gi.shape[2]
    tile = np.empty((stop - first, NR), dtype=gi.dtype)
    scratch = block_scratch(hs, NR)
    w_t = _pack(w_hh.T)  # W_hh^T (H, 3H)
    h_prev = h0[first:stop].copy()
    for s in range(length):
        t = length - 1 - s if reverse else s
        gh = ghs[t, first:stop]
        _times(h_prev, w_t, gh, tile, scratch, matmul_at)  # gh = h_{t-1} W_hh^T + b_hh
        for r in range(stop - first):
            row = gh[r]
            for j in range(np.uintp(n_gates)):
                row[j] += b_hh[j]
        h = hs[t, first:stop]
        _gru_cell(gi[t, first:stop], gh, h_prev, acts[t, first:stop], h)
        h_prev = h


@typed_jit(_layer_signature((3, 2, 2, 3, 3, 3), (3, 3, 2), types.boolean), cache=CACHE, error_model="numpy")
def _gru_rows_backward(g_hs, h0, w_hh, hs, acts, ghs, dgi, dgh, dh0, reverse, matmul_at, first, stop):
    """gru_layer_backward for the rows first:stop of the batch."""
    length, rows, hidden = hs.shape[0], stop - first, hs.shape[2]
    dh, dh_t = np.zeros((rows, hidden), dtype=hs.dtype), np.empty((rows, hidden), dtype=hs.dtype)
    dh_direct, dh_w = np.empty((rows, hidden), dtype=hs.dtype), np.empty((rows, hidden), dtype=hs.dtype)
    tile = np.empty((rows, NR), dtype=hs.dtype)
    scratch = block_scratch(dh, NR)
    w = _pack(w_hh)  # (3H, H)
    for s in range(length):  # the steps, the last one first
        t = s if reverse else length - 1 - s
        h_prev = h0[first:stop] if s == length - 1 else hs[t + 1 if reverse else t - 1, first:stop]
        _sum_into(dh_t, g_hs[t, first:stop], dh)
        _gru_cell_backward(dh_t, acts[t, first:stop], ghs[t, first:stop], h_prev, dgi[t, first:stop],
                           dgh[t, first:stop], dh_direct)
        _times(dgh[t, first:stop], w, dh_w, tile, scratch, matmul_at)
        _sum_into(dh, dh_direct, dh_w)  # dh_{t-1} = dh z + dgh[t] W_hh
    for r in range(rows):
        for j in range(hidden):
            dh0[first + r, j] = dh[r, j]


def _threads(batch):
    """Threads for a layer of this batch: each takes whole rows, at least ROWS_PER_THREAD of them."""
    return max(1, min(get_num_threads(), batch // ROWS_PER_THREAD))


def _c(*arrays):
    return [np.ascontiguousarray(a) for a in arrays]


def _bias(b_hh, gi):
    """b_hh, or zeros (G H,) without a bias: the kernels always add one."""
    return np.zeros(gi.shape[-1], gi.dtype) if b_hh is None else b_hh


def rnn_layer_forward_numba(gi, h0, w_hh, b_hh=None, relu=False, reverse=False):
    """See rnn_layer_forward_numpy."""
    if gi.dtype != np.float32:
        return rnn_layer_forward_numpy(gi, h0, w_hh, b_hh, relu, reverse)
    hs = np.empty_like(gi)
    parallel_for(_rnn_rows.for_dtype(gi.dtype), gi.shape[1], *_c(gi, h0, w_hh, _bias(b_hh, gi)), hs, bool(relu),
                 bool(reverse), block_address(np.float32), chunks_per_thread=1, threads=_threads(gi.shape[1]))
    return hs


def rnn_layer_backward_numba(g_hs, h0, w_hh, hs, relu=False, reverse=False):
    """See rnn_layer_backward_numpy."""
    if hs.dtype != np.float32:
        return rnn_layer_backward_numpy(g_hs, h0, w_hh, hs, relu, reverse)
    dpre, dh0 = np.empty_like(hs), np.empty_like(h0)
    parallel_for(_rnn_rows_backward.for_dtype(hs.dtype), hs.shape[1], *_c(g_hs, w_hh), hs, dpre, dh0, bool(relu),
                 bool(reverse), block_address(np.float32), chunks_per_thread=1, threads=_threads(hs.shape[1]))
    return dpre, dh0


def lstm_layer_forward_numba(gi, h0, c0, w_hh, b_hh=None, reverse=False):
    """See lstm_layer_forward_numpy."""
    if gi.dtype != np.float32:
        return lstm_layer_forward_numpy(gi, h0, c0, w_hh, b_hh, reverse)
    length, batch, n_gates = gi.shape
    hs, cs, tanh_cs = (np.empty((length, batch, n_gates // 4), gi.dtype) for _ in range(3))
    acts = np.empty_like(gi)
    parallel_for(_lstm_rows.for_dtype(gi.dtype), batch, *_c(gi, h0, c0, w_hh, _bias(b_hh, gi)), hs, cs, tanh_cs, acts,
                 bool(reverse), block_address(np.float32), chunks_per_thread=1, threads=_threads(batch))
    return hs, cs, tanh_cs, acts


def lstm_layer_backward_numba(g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse=False):
    """See lstm_layer_backward_numpy."""
    if acts.dtype != np.float32:
        return lstm_layer_backward_numpy(g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse)
    dgates, dh0, dc0 = np.empty_like(acts), np.empty_like(h0), np.empty_like(c0)
    parallel_for(_lstm_rows_backward.for_dtype(acts.dtype), acts.shape[1], *_c(g_hs, g_c, c0, w_hh), cs, tanh_cs,
                 acts, dgates, dh0, dc0, bool(reverse), block_address(np.float32), chunks_per_thread=1,
                 threads=_threads(acts.shape[1]))
    return dgates, dh0, dc0


def gru_layer_forward_numba(gi, h0, w_hh, b_hh=None, reverse=False):
    """See gru_layer_forward_numpy."""
    if gi.dtype != np.float32:
        return gru_layer_forward_numpy(gi, h0, w_hh, b_hh, reverse)
    length, batch, n_gates = gi.shape
    hs, acts, ghs = np.empty((length, batch, n_gates // 3), gi.dtype), np.empty_like(gi), np.empty_like(gi)
    parallel_for(_gru_rows.for_dtype(gi.dtype), batch, *_c(gi, h0, w_hh, _bias(b_hh, gi)), hs, acts, ghs,
                 bool(reverse), block_address(np.float32), chunks_per_thread=1, threads=_threads(batch))
    return hs, acts, ghs


def gru_layer_backward_numba(g_hs, h0, w_hh, hs, acts, ghs, reverse=False):
    """See gru_layer_backward_numpy."""
    if acts.dtype != np.float32:
        return gru_layer_backward_numpy(g_hs, h0, w_hh, hs, acts, ghs, reverse)
    dgi, dgh, dh0 = np.empty_like(acts), np.empty_like(acts), np.empty_like(h0)
    parallel_for(_gru_rows_backward.for_dtype(acts.dtype), acts.shape[1], *_c(g_hs, h0, w_hh), hs, acts, ghs, dgi,
                 dgh, dh0, bool(reverse), block_address(np.float32), chunks_per_thread=1,
                 threads=_threads(acts.shape[1]))
    return dgi, dgh, dh0


# The elementwise halves alone (the tests compare them with their twins)
def lstm_cell_forward_numba(pre, c_prev, acts, c, tanh_c, h):
    _lstm_cell(pre, c_prev, acts, c, tanh_c, h)


def lstm_cell_backward_numba(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev):
    _lstm_cell_backward(dh, dc, acts, c_prev, tanh_c, dpre, dc_prev)


def gru_cell_forward_numba(gi, gh, h_prev, acts, h):
    _gru_cell(gi, gh, h_prev, acts, h)


def gru_cell_backward_numba(dh, acts, gh, h_prev, dgi, dgh, dh_prev):
    _gru_cell_backward(dh, acts, gh, h_prev, dgi, dgh, dh_prev)
