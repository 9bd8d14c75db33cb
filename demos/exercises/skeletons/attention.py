"""Exercise: the backward of scaled dot-product attention (minigrad/ops.py, class
ScaledDotProductAttention).

    S   = scale * Q K^T                (T_q, T_k), scale = 1 / sqrt(d_k) unless given
    W   = softmax(S) along each row, where mask is False: weight 0 (a row with no allowed key: all 0)
    out = W V                          (T_q, d_v)

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)  ->  out (..., T_q, d_v)

Your backward gets g = dL/dout and returns (dq, dk, dv). The forward brought every array to 4
dims (n1, n2, T, d) with the batch axes broadcast, and that is how it saved them; numpy's @ and
np.swapaxes(x, -1, -2) work on the last two axes of 4-D arrays. The lines that shape g like the
saved arrays and your answers like the op's batch are written for you.

What the forward left in ctx:
    ctx.saved_tensors   (q4 (n1, n2, T_q, d_k), k4 (n1, n2, T_k, d_k), v4 (n1, n2, T_k, d_v),
                         weights (n1, n2, T_q, T_k): W, 0 where masked)
    ctx.scale           the scale used
    ctx.mask            the mask (n1, n2, T_q, T_k) or None; masked weights are already 0
    ctx.batch           the broadcast batch shape of the output

The built-in backward runs a numba kernel; `train attention` makes a GPT run yours instead.

    python -m demos.exercises check attention
    python -m demos.exercises train attention
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class ScaledDotProductAttention(ops.ScaledDotProductAttention):
    """ops.ScaledDotProductAttention's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        q4, k4, v4, weights = ctx.saved_tensors
        g4 = g.reshape(q4.shape[:3] + v4.shape[3:])                # (n1, n2, T_q, d_v)
        # dq4, dk4, dv4 = ...                                      # shaped like q4, k4, v4
        # return tuple(d.reshape(ctx.batch + d.shape[-2:]) for d in (dq4, dk4, dv4))
        raise NotImplementedError("ScaledDotProductAttention.backward")
