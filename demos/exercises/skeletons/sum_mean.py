"""Exercise: the backwards of sum and mean over axes (minigrad/ops.py, classes Sum and Mean).

    x (3, 4, 5).sum(axis=1)                       ->  y (3, 5)
    x (3, 4, 5).sum(axis=(0, 2), keepdims=True)   ->  y (1, 4, 1)
    x (3, 4, 5).mean(axis=None)                   ->  y ()

Your backward gets g = dL/dy, shaped like y, and returns dL/dx, shaped like x (3, 4, 5).
Careful: numpy broadcasts from the right, so a g of shape (3, 5) does not line up with the axes
0 and 2 of x by itself. (np.broadcast_to(g, shape) returns a read-only view; that is fine here.)

What the forward left in ctx:
    ctx.shape    x's shape
    ctx.axes     the reduced axes, a tuple of numbers >= 0, e.g. (1,) or (0, 2) (all axes for None)
    ctx.count    (Mean only) how many numbers each mean averaged

    python -m demos.exercises check sum_mean
    python -m demos.exercises train sum_mean
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class Sum(ops.Sum):
    """ops.Sum's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("Sum.backward")


class Mean(ops.Mean):
    """ops.Mean's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("Mean.backward")
