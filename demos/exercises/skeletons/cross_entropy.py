"""Exercise: the backwards of log_softmax and of cross-entropy (minigrad/ops.py, classes LogSoftmax
and CrossEntropy).

1. LogSoftmax:   y_i = x_i - log(sum_j e^(x_j))   along `axis`; x and y have the same shape.
   The forward ran on rows, like softmax: the layout lines are written for you.
       ctx.saved_tensors   (y,): log_softmax as rows (R, N)
       ctx.axis, ctx.moved_shape   as in the softmax exercise

2. CrossEntropy: logits (..., V) and integer targets (...) -> the loss of each row,
       loss_r = -log softmax(logits_r)[target_r]
   then reduced: "mean" over the counted rows, "sum", or "none" (one loss per row).
   A target equal to ignore_index counts for nothing (loss 0, gradient 0, not in the mean).
   With label smoothing eps the target is a distribution, (1 - eps) one_hot(target) + eps / V,
   and loss_r = -sum_j target_j log softmax(logits_r)_j.
       ctx.saved_tensors   (rows (R, V) the logits, ids (R,) the targets, lse (R,) = log sum_j e^(logits_rj))
       ctx.settings        (ignore_index, label_smoothing, reduction, logits' shape)
       ctx.count           ("mean" only) the number of counted rows (at least 1)
   g is the gradient of the reduced loss: a number, or (...) for "none". The lines that turn it
   into per_row (R,), dL/dloss_r, are written for you; you write d loss_r / d logits_r.

The built-in backwards run numba kernels; `train cross_entropy` makes a model run yours instead.

    python -m demos.exercises check cross_entropy
    python -m demos.exercises train cross_entropy
"""
import numpy as np

from minigrad import ops


class LogSoftmax(ops.LogSoftmax):
    """ops.LogSoftmax's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors                                   # (R, N)
        g_rows = np.moveaxis(g, ctx.axis, -1).reshape(y.shape)     # (R, N), laid out like y
        # dx_rows = ...                                            # (R, N)
        # return np.moveaxis(dx_rows.reshape(ctx.moved_shape), -1, ctx.axis)
        raise NotImplementedError("LogSoftmax.backward")


class CrossEntropy(ops.CrossEntropy):
    """ops.CrossEntropy's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        rows, ids, lse = ctx.saved_tensors                         # (R, V), (R,), (R,)
        ignore_index, smoothing, reduction, shape = ctx.settings
        if reduction == "none":
            per_row = np.reshape(g, -1)                            # (R,)
        else:
            per_row = np.full(len(ids), g / ctx.count if reduction == "mean" else g, dtype=rows.dtype)
        # d = ...      (R, V): d loss_r / d logits_r, zero on ignored rows
        # return (d * per_row[:, None]).reshape(shape)
        raise NotImplementedError("CrossEntropy.backward")
