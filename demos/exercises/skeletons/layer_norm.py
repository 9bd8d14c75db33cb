"""Exercise: the backward of layer norm (minigrad/ops.py, class LayerNorm).

Over the last axis (D numbers) of each row:

    mean = sum(x) / D,   var = sum((x - mean)^2) / D,   rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd
    y    = xhat * weight + bias

    x (..., D), weight (D,), bias (D,)  ->  y (..., D)

Your backward gets g = dL/dy, shaped like x, and returns (dx (..., D), dweight (D,), dbias (D,)).
The lines that fold the leading axes into rows are written for you.

What the forward left in ctx:
    ctx.saved_tensors   (x (..., D), weight (D,), mean (R,), rstd (R,)), R = the number of rows

The built-in backward runs a numba kernel; `train layer_norm` makes a GPT run yours instead.

    python -m demos.exercises check layer_norm
    python -m demos.exercises train layer_norm
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class LayerNorm(ops.LayerNorm):
    """ops.LayerNorm's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        x, weight, mean, rstd = ctx.saved_tensors
        d = x.shape[-1]
        x2, g2 = x.reshape(-1, d), g.reshape(-1, d)                # (R, D) each
        # dx2 = ...       (R, D)
        # dweight = ...   (D,)
        # dbias = ...     (D,)
        # return dx2.reshape(x.shape), dweight, dbias
        raise NotImplementedError("LayerNorm.backward")
