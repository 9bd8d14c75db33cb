"""A whole recurrent layer (Elman RNN, LSTM or GRU), one direction, over a whole sequence: one op
each, with its backpropagation through time written out (nn/rnn.py uses them for `nn.RNN`,
`nn.LSTM` and `nn.GRU`).

Written with one op per gate and per step (nn/rnn.py's `lstm_cell`, `gru_cell`), a char-RNN's
training step is about 400 ops, and their Python costs three times the arithmetic. As one op, a
layer is a loop over the steps of two things: the product h W_hh^T, which must wait for the step
before, and the elementwise rest of the step. The input's part of every gate,
x W_ih^T + b_ih, does not depend on h: the caller computes it for all steps at once, one
product (L N, I) @ (I, G H), and passes it as `gi`. The loops themselves are kernels
(kernels/rnn.py): their numpy twins are the loops written plainly; the compiled ones run each
thread's rows of the batch through every step with no Python in between.

Backpropagation through time, for gates = gi[t] + h_{t-1} W_hh^T + b_hh, t = 0 ... L-1:

    walk the steps backwards, from the last one:
        dh_t       = g[t] + dh carried from step t+1      (g: the gradient of the output h_t)
        dgates[t]  = the step's elementwise backward (kernels/rnn.py), from dh_t (and dc_t)
        dh_{t-1}   = dgates[t] W_hh                       (carried to the step before)
    then, for all steps at once:
        dgi        = dgates                               (L, N, G H)
        dW_hh      = sum over t of dgates[t]^T h_{t-1}  = one product (G H, L N) @ (L N, H)
        db_hh      = sum over t and the batch of dgates

so only dh's chain is walked step by step; the weight's gradient is one large product instead of
L small ones. With reverse=True the steps run from the last to the first (the backward direction
of a bidirectional layer), and "the step before" is t+1.
"""
import numpy as np

from . import kernels
from .autograd import Function


def _previous(hs, h0, reverse):
    """h_{t-1} for every step t, in the sequence's order: (L, N, H)."""
    if reverse:
        return np.concatenate([hs[1:], h0[None]])
    return np.concatenate([h0[None], hs[:-1]])


class RNNLayer(Function):
    """gi (L, N, H) = x W_ih^T + b_ih at every step, h0 (N, H), w_hh (H, H), b_hh (H,) or none
    -> h (L, N, H): h_t = tanh(gi[t] + h_{t-1} W_hh^T + b_hh), or relu (Elman 1990)."""

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh=None, *, relu=False, reverse=False):
        _check("rnn", gi, h0, w_hh, 1)
        hs = kernels.rnn_layer_forward(gi, h0, w_hh, b_hh, relu, reverse)
        ctx.save_for_backward(h0, w_hh, hs)  # (hs is the output: changing it in place is then refused)
        ctx.relu, ctx.reverse = relu, reverse
        return hs

    rule = "BPTT: dpre[t] = (g[t] + dpre[t+1] W_hh) (1 - h_t^2) (relu: (h_t > 0)), dW_hh = sum_t dpre[t]^T h[t-1]"

    @staticmethod
    def backward(ctx, g_hs):
        h0, w_hh, hs = ctx.saved_tensors
        dpre, dh0 = kernels.rnn_layer_backward(g_hs, h0, w_hh, hs, ctx.relu, ctx.reverse)
        hidden = hs.shape[-1]
        dw_hh = kernels.gemm(dpre.reshape(-1, hidden).T, _previous(hs, h0, ctx.reverse).reshape(-1, hidden))
        return _with_bias(ctx, (dpre, dh0, dw_hh), dpre)


class LSTMLayer(Function):
    """gi (L, N, 4H) = x W_ih^T + b_ih at every step, h0, c0 (N, H), w_hh (4H, H), b_hh (4H,) or none
    -> (h (L, N, H) at every step, c after the last step (N, H)). Gates i, f, g, o (PyTorch's order)."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh=None, *, reverse=False):
        _check("lstm", gi, h0, w_hh, 4, c0)
        hs, cs, tanh_cs, acts = kernels.lstm_layer_forward(gi, h0, c0, w_hh, b_hh, reverse)
        ctx.save_for_backward(h0, c0, w_hh, hs)  # (hs is an output: changing it in place is then refused)
        ctx.steps, ctx.reverse = (cs, tanh_cs, acts), reverse
        return hs, cs[0 if reverse else -1].copy()

    rule = "BPTT: dgates[t] = cell backward of (g[t] + dgates[t+1] W_hh, dc), dW_hh = sum_t dgates[t]^T h[t-1]"

    @staticmethod
    def backward(ctx, g_hs, g_c):
        h0, c0, w_hh, hs = ctx.saved_tensors
        (cs, tanh_cs, acts), reverse = ctx.steps, ctx.reverse
        dgates, dh0, dc0 = kernels.lstm_layer_backward(g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse)
        hidden = h0.shape[-1]
        dw_hh = kernels.gemm(dgates.reshape(-1, 4 * hidden).T, _previous(hs, h0, reverse).reshape(-1, hidden))
        return _with_bias(ctx, (dgates, dh0, dc0, dw_hh), dgates)


class GRULayer(Function):
    """gi (L, N, 3H) = x W_ih^T + b_ih at every step, h0 (N, H), w_hh (3H, H), b_hh (3H,) or none
    -> h (L, N, H) at every step. Gates r, z, n (PyTorch's order; r multiplies h W_hn^T + b_hn)."""

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh=None, *, reverse=False):
        _check("gru", gi, h0, w_hh, 3)
        hs, acts, ghs = kernels.gru_layer_forward(gi, h0, w_hh, b_hh, reverse)
        ctx.save_for_backward(h0, w_hh, hs)  # (hs is the output: changing it in place is then refused)
        ctx.steps, ctx.reverse = (acts, ghs), reverse
        return hs

    rule = "BPTT: dgh[t] = cell backward of (g[t] + dh_carried), dh[t-1] = dh z + dgh[t] W_hh, dW_hh = sum_t dgh^T h"

    @staticmethod
    def backward(ctx, g_hs):
        h0, w_hh, hs = ctx.saved_tensors
        (acts, ghs), reverse = ctx.steps, ctx.reverse
        dgi, dgh, dh0 = kernels.gru_layer_backward(g_hs, h0, w_hh, hs, acts, ghs, reverse)
        dw_hh = kernels.gemm(dgh.reshape(-1, acts.shape[-1]).T, _previous(hs, h0, reverse).reshape(-1, hs.shape[-1]))
        return _with_bias(ctx, (dgi, dh0, dw_hh), dgh)


def _with_bias(ctx, grads, d_gates):
    """The gradients, and b_hh's if the op was given one: the sum of d_gates over steps and batch."""
    if len(ctx.needs_input_grad) == len(grads):  # (no b_hh)
        return grads
    return (*grads, d_gates.reshape(-1, d_gates.shape[-1]).sum(axis=0))


def _check(name, gi, h0, w_hh, gates, c0=None):
    dtypes = [a.dtype for a in (gi, h0, w_hh) + (() if c0 is None else (c0,))]
    if len(set(dtypes)) > 1:
        raise TypeError(f"{name}_layer: gi, the states and w_hh must share one dtype, got "
                        f"{', '.join(str(d) for d in dtypes)}")
    length, batch, n_gates = gi.shape if gi.ndim == 3 else (None, None, None)
    hidden = w_hh.shape[1] if w_hh.ndim == 2 else None
    ok = (gi.ndim == 3 and hidden is not None and w_hh.shape[0] == gates * hidden == n_gates
          and h0.shape == (batch, hidden) and (c0 is None or c0.shape == (batch, hidden)))
    if not ok:
        states = "h0" + ("" if c0 is None else f" {c0.shape} and c0")
        g = "" if gates == 1 else gates
        raise ValueError(f"{name}_layer: expected gi (L, N, {g}H), w_hh ({g}H, H) and h0 (N, H); got gi "
                         f"{gi.shape}, w_hh {w_hh.shape}, {states} {h0.shape}")
