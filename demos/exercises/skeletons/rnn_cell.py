"""Exercise: the backward of one step of a tanh RNN (minigrad/ops.py, class RNNTanhCell).

One step of an Elman RNN, the op that nn.RNNCell and nn.RNN (nonlinearity "tanh") run once per
time step:

    a  = x W_ih^T + b_ih + h W_hh^T + b_hh
    h' = tanh(a)

    x (..., I), h (..., H), W_ih (H, I), W_hh (H, H), b_ih (H,), b_hh (H,)  ->  h' (..., H)

Your backward gets g = dL/dh', shaped like h', and returns one gradient per input, in the order
of the inputs: (dx, dh, dW_ih, dW_hh, db_ih, db_hh), each shaped like its input. A cell made
with bias=False has no biases: the op then got 4 inputs, and backward returns 4 gradients
(len(ctx.needs_input_grad) tells which case you are in).

Through time, the autograd walk calls this backward once per step, from the last step back to
the first: dh is what flows back to the step before, and the weights' gradients of all the
steps add up (the walk adds them; you return one step's).

What the forward left in ctx:
    ctx.saved_tensors   (x, h, W_ih, W_hh, y), y = h' = tanh(a)

The lines that fold the leading axes into rows (a batch (N, ...), or no batch at all) are
written for you.

    python -m demos.exercises check rnn_cell
    python -m demos.exercises train rnn_cell
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class RNNTanhCell(ops.RNNTanhCell):
    """ops.RNNTanhCell's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        x, h, w_ih, w_hh, y = ctx.saved_tensors
        x2, h2 = x.reshape(-1, x.shape[-1]), h.reshape(-1, h.shape[-1])  # (R, I), (R, H)
        g2, y2 = g.reshape(-1, y.shape[-1]), y.reshape(-1, y.shape[-1])  # (R, H) each
        # da = ...        (R, H): back through the tanh first
        # dx2 = ...       (R, I)
        # dh2 = ...       (R, H)
        # dw_ih = ...     (H, I)
        # dw_hh = ...     (H, H)
        # grads = (dx2.reshape(x.shape), dh2.reshape(h.shape), dw_ih, dw_hh)
        # if len(ctx.needs_input_grad) == 4:    # no biases
        #     return grads
        # db = ...        (H,)
        # return grads + (db, db)
        raise NotImplementedError("RNNTanhCell.backward")
