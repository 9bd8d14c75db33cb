"""Exercise: the backward of a matrix product (minigrad/ops.py, class MatMul).

    a (..., M, K) @ b (..., K, N)  ->  y (..., M, N)

The leading (batch) axes broadcast as in numpy: a (2, 3, 4) @ b (4, 5) is one matrix b against a
batch of two; a (2, 1, 3, 4) @ b (3, 4, 2) gives y (2, 3, 3, 2). Your backward gets g = dL/dy,
shaped like y, and returns (dL/da, dL/db). Each may keep y's batch axes: the autograd walk sums a
gradient down to its input's shape (b (4, 5) used by every batch element gets the sum of their
gradients). np.swapaxes(x, -1, -2) transposes the last two axes of any array.

What the forward left in ctx:
    ctx.saved_tensors     (a, b)
    ctx.needs_input_grad  (bool, bool)

    python -m demos.exercises check matmul
    python -m demos.exercises train matmul
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class MatMul(ops.MatMul):
    """ops.MatMul's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # da = ...    (..., M, K)
        # db = ...    (..., K, N)
        # return da, db
        raise NotImplementedError("MatMul.backward")
