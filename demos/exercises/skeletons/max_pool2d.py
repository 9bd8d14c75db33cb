"""Exercise: the backward of 2-D max pooling (minigrad/ops_conv.py, class MaxPool2d).

    x (N, C, H, W)  ->  y (N, C, OH, OW), y[n, c, i, j] = the max of window (i, j) of x[n, c]

(windows kh x kw, moved by the stride, maybe dilated, over x padded with -inf). The max of a
window moves with one input only, the one that holds it: dy/dx is 1 there and 0 for the others.
An input that is the max of several windows (windows that overlap) gets all their gradients.

The forward returns two outputs, y and the indices of the maxima (what F.max_pool2d returns with
return_indices=True), so backward gets a gradient for each; the indices are integers and their
gradient, g_indices, is ignored. Return dx shaped like x.

What the forward left in ctx:
    ctx.indices   (N, C, OH, OW) int64: where the max of each window sits in its plane, as h * W + w
    ctx.shape     x's shape (N, C, H, W)

    python -m demos.exercises check max_pool2d
    python -m demos.exercises train max_pool2d
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops_conv


class MaxPool2d(ops_conv.MaxPool2d):
    """ops_conv.MaxPool2d's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g, g_indices=None):
        n, c, h, w = ctx.shape
        # dx = ...   (N, C, H, W): g[n, c, i, j] added at position ctx.indices[n, c, i, j] of plane (n, c)
        # return dx
        raise NotImplementedError("MaxPool2d.backward")
