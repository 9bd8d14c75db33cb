"""A whole LSTM or GRU layer, one direction, over a whole sequence: one op each, with its
backpropagation through time written out (nn/rnn.py uses them for `nn.LSTM` and `nn.GRU`).

Written with one op per gate and per step (nn/rnn.py's `lstm_cell`, `gru_cell`), a char-RNN's
training step is about 400 ops, and their Python costs three times the arithmetic. As one op, a
layer is a loop over the steps of two things: the product h W_hh^T, which must wait for the step
before, and the elementwise rest of the step (kernels/rnn.py). The input's part of every gate,
x W_ih^T + b_ih, does not depend on h: the caller computes it for all steps at once, one
product (L N, I) @ (I, G H), and passes it as `gi`.

Backpropagation through time, for gates = gi[t] + h_{t-1} W_hh^T (+ b_hh), t = 0 ... L-1:

    walk the steps backwards, from the last one:
        dh_t       = g[t] + dh carried from step t+1      (g: the gradient of the output h_t)
        dgates[t]  = the step's elementwise backward (kernels/rnn.py), from dh_t (and dc_t)
        dh_{t-1}   = dgates[t] W_hh                       (carried to the step before)
    then, for all steps at once:
        dgi        = dgates                               (L, N, G H)
        dW_hh      = sum over t of dgates[t]^T h_{t-1}  = one product (G H, L N) @ (L N, H)

so only dh's chain is walked step by step; the weight's gradient is one large product instead of
L small ones. With reverse=True the steps run from the last to the first (the backward direction
of a bidirectional layer), and "the step before" is t+1.
"""
import numpy as np

from . import kernels
from .autograd import Function


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def _previous(hs, h0, reverse):
    """h_{t-1} for every step t, in the sequence's order: (L, N, H)."""
    if reverse:
        return np.concatenate([hs[1:], h0[None]])
    return np.concatenate([h0[None], hs[:-1]])


def _contiguous(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


class LSTMLayer(Function):
    """gi (L, N, 4H) = x W_ih^T + b_ih + b_hh at every step, h0, c0 (N, H), w_hh (4H, H)
    -> (h (L, N, H) at every step, c after the last step (N, H)). Gates i, f, g, o (PyTorch's order)."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, *, reverse=False):
        _check("lstm", gi, h0, w_hh, 4, c0)
        length, batch, n_gates = gi.shape
        hidden = n_gates // 4
        gi, h0, c0 = _contiguous(gi), _contiguous(h0), _contiguous(c0)
        hs, cs, tanh_cs = (np.empty((length, batch, hidden), gi.dtype) for _ in range(3))
        acts = np.empty_like(gi)
        pre = np.empty((batch, n_gates), gi.dtype)
        h, c, w_t = h0, c0, w_hh.T
        for t in _steps(length, reverse):
            np.add(gi[t], kernels.gemm(h, w_t), out=pre)  # the gates before their nonlinearities
            kernels.lstm_cell_forward(pre, c, acts[t], cs[t], tanh_cs[t], hs[t])
            h, c = hs[t], cs[t]
        ctx.save_for_backward(h0, c0, w_hh)
        ctx.steps = (hs, cs, tanh_cs, acts, reverse)
        return hs, c.copy()

    rule = "BPTT: dgates[t] = cell backward of (g[t] + dgates[t+1] W_hh, dc), dW_hh = sum_t dgates[t]^T h[t-1]"

    @staticmethod
    def backward(ctx, g_hs, g_c):
        h0, c0, w_hh = ctx.saved_tensors
        hs, cs, tanh_cs, acts, reverse = ctx.steps
        length, batch, hidden = hs.shape
        dgates = np.empty_like(acts)
        dh_t = np.empty((batch, hidden), hs.dtype)
        dh = np.zeros((batch, hidden), hs.dtype)  # carried from the step after
        dc, dc_prev = _contiguous(g_c).astype(hs.dtype), np.empty((batch, hidden), hs.dtype)
        for t in _steps(length, not reverse):
            first = t == (length - 1 if reverse else 0)  # the sequence's first step: its c_prev is c0
            c_prev = c0 if first else cs[t + 1 if reverse else t - 1]
            np.add(g_hs[t], dh, out=dh_t)
            kernels.lstm_cell_backward(dh_t, dc, acts[t], c_prev, tanh_cs[t], dgates[t], dc_prev)
            dc, dc_prev = dc_prev, dc
            dh = kernels.gemm(dgates[t], w_hh)
        n_gates = acts.shape[-1]
        dw_hh = kernels.gemm(dgates.reshape(-1, n_gates).T, _previous(hs, h0, reverse).reshape(-1, hidden))
        return dgates, dh, dc, dw_hh


class GRULayer(Function):
    """gi (L, N, 3H) = x W_ih^T + b_ih at every step, h0 (N, H), w_hh (3H, H), b_hh (3H,) or none
    -> h (L, N, H) at every step. Gates r, z, n (PyTorch's order; r multiplies h W_hn^T + b_hn)."""

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh=None, *, reverse=False):
        _check("gru", gi, h0, w_hh, 3)
        length, batch, n_gates = gi.shape
        hidden = n_gates // 3
        gi, h0 = _contiguous(gi), _contiguous(h0)
        hs, acts, ghs = np.empty((length, batch, hidden), gi.dtype), np.empty_like(gi), np.empty_like(gi)
        h, w_t = h0, w_hh.T
        for t in _steps(length, reverse):
            ghs[t] = kernels.gemm(h, w_t, b_hh)  # the hidden state's part of the gates
            kernels.gru_cell_forward(gi[t], ghs[t], h, acts[t], hs[t])
            h = hs[t]
        ctx.save_for_backward(h0, w_hh)
        ctx.steps = (hs, acts, ghs, reverse)
        return hs

    rule = "BPTT: dgh[t] = cell backward of (g[t] + dh_carried), dh[t-1] = dh z + dgh[t] W_hh, dW_hh = sum_t dgh^T h"

    @staticmethod
    def backward(ctx, g_hs):
        h0, w_hh = ctx.saved_tensors
        hs, acts, ghs, reverse = ctx.steps
        length, batch, hidden = hs.shape
        dgi, dgh = np.empty_like(acts), np.empty_like(acts)
        dh_t, dh_direct = np.empty((batch, hidden), hs.dtype), np.empty((batch, hidden), hs.dtype)
        dh = np.zeros((batch, hidden), hs.dtype)
        for t in _steps(length, not reverse):
            first = t == (length - 1 if reverse else 0)
            h_prev = h0 if first else hs[t + 1 if reverse else t - 1]
            np.add(g_hs[t], dh, out=dh_t)
            kernels.gru_cell_backward(dh_t, acts[t], ghs[t], h_prev, dgi[t], dgh[t], dh_direct)
            dh = dh_direct + kernels.gemm(dgh[t], w_hh)
        n_gates = acts.shape[-1]
        flat_dgh = dgh.reshape(-1, n_gates)
        dw_hh = kernels.gemm(flat_dgh.T, _previous(hs, h0, reverse).reshape(-1, hidden))
        if len(ctx.needs_input_grad) == 3:  # (no b_hh)
            return dgi, dh, dw_hh
        return dgi, dh, dw_hh, flat_dgh.sum(axis=0)


def _check(name, gi, h0, w_hh, gates, c0=None):
    length, batch, n_gates = gi.shape if gi.ndim == 3 else (None, None, None)
    hidden = w_hh.shape[1] if w_hh.ndim == 2 else None
    ok = (gi.ndim == 3 and hidden is not None and w_hh.shape[0] == gates * hidden == n_gates
          and h0.shape == (batch, hidden) and (c0 is None or c0.shape == (batch, hidden)))
    if not ok:
        states = "h0" + ("" if c0 is None else f" {c0.shape} and c0")
        raise ValueError(f"{name}_layer: expected gi (L, N, {gates}H), w_hh ({gates}H, H) and h0 (N, H); got gi "
                         f"{gi.shape}, w_hh {w_hh.shape}, {states} {h0.shape}")
