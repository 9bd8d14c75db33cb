"""Exercise: the backward of an embedding lookup (minigrad/ops.py, class Embedding).

    weight (num_embeddings, D) looked up by integer ids (any shape)  ->  y (*ids.shape, D)
    y[..., :] = weight[ids[...], :]

Your backward gets g = dL/dy, shaped like y, and returns dL/dweight (num_embeddings, D). The ids
are not differentiable (they are not an input tensor of the op: there is one gradient to return).

What the forward left in ctx:
    ctx.ids     the ids (a copy), any shape
    ctx.shape   weight's shape (num_embeddings, D)

The built-in backward runs a numba kernel; `train embedding` makes a model run yours instead.

    python -m demos.exercises check embedding
    python -m demos.exercises train embedding
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class Embedding(ops.Embedding):
    """ops.Embedding's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        ids = ctx.ids.reshape(-1)                                  # (N,)
        g_rows = g.reshape(-1, ctx.shape[1])                       # (N, D): row n is the gradient of ids[n]'s row
        # return ...      (num_embeddings, D)
        raise NotImplementedError("Embedding.backward")
