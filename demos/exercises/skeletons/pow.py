"""Exercise: the backward of a ** c for a constant c (minigrad/ops.py, class PowScalar).

    a (any shape) ** c  ->  y (a's shape)

Your backward gets g = dL/dy and returns dL/da, shaped like a. The exponent c may be any number:
2, 3, 0.5, -1, ... and 0. Mind a = 0 when c - 1 is negative.

What the forward left in ctx:
    ctx.saved_tensors   (a,)
    ctx.exponent        c

    python -m demos.exercises check pow
    python -m demos.exercises train pow
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class PowScalar(ops.PowScalar):
    """ops.PowScalar's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        c = ctx.exponent
        # return ...
        raise NotImplementedError("PowScalar.backward")
