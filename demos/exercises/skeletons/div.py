"""Exercise: the backward of a / b (minigrad/ops.py, class Div).

The forward divides element by element, with numpy's broadcasting:

    a (3, 4) / b (4,)  ->  y (3, 4),   y = a / b

Your backward gets g = dL/dy, shaped like y, and returns (dL/da, dL/db), each shaped like y (the
autograd walk sums a broadcast gradient down to its input's shape for you).

What the forward left in ctx:
    ctx.saved_tensors     (a, b)
    ctx.needs_input_grad  (bool, bool)

    python -m demos.exercises check div
    python -m demos.exercises train div
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class Div(ops.Div):
    """ops.Div's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # da = ...
        # db = ...
        # return da, db
        raise NotImplementedError("Div.backward")
