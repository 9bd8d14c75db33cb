"""Exercise: the backward of batch norm in training mode (minigrad/ops.py, class BatchNorm).

For each channel c, over its n values (every sample, and every position of a sequence or image):

    mean = sum(x) / n,   var = sum((x - mean)^2) / n,   rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd
    y    = xhat * weight + bias

    x (N, C) or (N, C, L) or (N, C, H, W), weight (C,), bias (C,)  ->  y shaped like x

Your backward gets g = dL/dy, shaped like x, and returns (dx shaped like x, dweight (C,),
dbias (C,)). It is layer norm's backward with the roles of the axes swapped: the statistics are
shared by a channel across the batch, not by a row. The axes to sum over, n, and a helper that
shapes a (C,) array to broadcast against x are written for you.

What the forward left in ctx:
    ctx.saved_tensors   (xhat shaped like x, weight (C,), rstd (1, C, 1, ...))

    python -m demos.exercises check batch_norm
    python -m demos.exercises train batch_norm
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class BatchNorm(ops.BatchNorm):
    """ops.BatchNorm's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        xhat, weight, rstd = ctx.saved_tensors
        axes = (0,) + tuple(range(2, g.ndim))          # every axis but the channels (axis 1)
        n = g.size // g.shape[1]                        # values per channel
        w = weight.reshape((1, -1) + (1,) * (g.ndim - 2))   # (1, C, 1, ...): broadcasts against g
        # dx = ...        shaped like x     (sum(..., axis=axes, keepdims=True) keeps the shapes lined up)
        # dweight = ...   (C,)
        # dbias = ...     (C,)
        # return dx, dweight, dbias
        raise NotImplementedError("BatchNorm.backward")
