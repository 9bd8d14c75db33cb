"""Exercise: the backward of softmax (minigrad/ops.py, class Softmax).

    y_i = e^(x_i) / sum_j e^(x_j)        along `axis`; x and y have the same shape

Your backward gets g = dL/dy and returns dL/dx. The forward ran on rows: it moved `axis` last and
folded the other axes, so each row (R of them) is one softmax of N numbers. The lines that put g
in that layout, and that put your answer back in x's layout, are written for you.

What the forward left in ctx:
    ctx.saved_tensors   (y,): the softmax as rows (R, N)
    ctx.axis            the axis the softmax ran along
    ctx.moved_shape     x's shape with `axis` moved last (before folding)

The built-in backward runs a numba kernel; `train softmax` makes a model run yours instead.

    python -m demos.exercises check softmax
    python -m demos.exercises train softmax
"""
import numpy as np

from minigrad import ops


class Softmax(ops.Softmax):
    """ops.Softmax's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors                                   # (R, N)
        g_rows = np.moveaxis(g, ctx.axis, -1).reshape(y.shape)     # (R, N), laid out like y
        # dx_rows = ...                                            # (R, N)
        # return np.moveaxis(dx_rows.reshape(ctx.moved_shape), -1, ctx.axis)   # back in x's layout
        raise NotImplementedError("Softmax.backward")
