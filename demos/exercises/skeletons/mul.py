"""Exercise: the backward of a * b (minigrad/ops.py, class Mul).

The forward multiplies element by element, with numpy's broadcasting:

    a (3, 1) * b (4,)  ->  y (3, 4),   y = a * b

Your backward gets g = dL/dy, shaped like y, and returns (dL/da, dL/db). Return each gradient
shaped like the output y: the autograd walk sums a broadcast gradient back down to its input's
shape (a value copied to many places gets the sum of their gradients). Return None for an input
that needs no gradient (ctx.needs_input_grad[i] is False), or compute it anyway.

What the forward left in ctx:
    ctx.saved_tensors     (a, b), the two inputs as numpy arrays
    ctx.needs_input_grad  (bool, bool): which inputs want a gradient

    python -m demos.exercises check mul       # until it passes
    python -m demos.exercises train mul       # then a model trains with your backward
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class Mul(ops.Mul):
    """ops.Mul's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # da = ...
        # db = ...
        # return da, db
        raise NotImplementedError("Mul.backward")
