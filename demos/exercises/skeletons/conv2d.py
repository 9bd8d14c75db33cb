"""Exercise: the backward of a 2-D convolution (minigrad/ops_conv.py, class Conv2d).

    x (N, C, H, W), weight (O, C / groups, kh, kw), bias (O,)  ->  y (N, O, OH, OW)
    y[n, o, i, j] = bias[o] + sum over c, ki, kj of weight[o, c, ki, kj] * xp[n, c, i sh + ki dh, j sw + kj dw]

where xp is x with `top` rows and `left` columns of zeros before it (and some after), (sh, sw) the
stride and (dh, dw) the dilation. The forward cuts every window of xp out as a column ("im2col"):

    cols (groups, C/groups kh kw, N OH OW)   row (c, ki, kj), column (n, i, j): xp[n, c, i sh + ki dh, j sw + kj dw]
    w2   (groups, O/groups, C/groups kh kw)  the weight, one matrix per group
    y    = w2 @ cols + bias                  one matrix product per group

So the convolution is a linear layer on the columns, and its backward is the linear layer's, plus
one step more: the gradient of each column goes back, added, to the places of x its window read.
A place read by several windows (overlapping windows) gets the sum.

Your backward gets g = dL/dy (N, O, OH, OW) and returns (dx, dweight, dbias), shaped like x,
weight and bias; without a bias (called with two inputs, len(ctx.needs_input_grad) == 2) it
returns (dx, dweight). A gradient nobody asked for (ctx.needs_input_grad[i] False) may be None.
g as (groups, O/groups, N OH OW) is written for you.

What the forward left in ctx:
    ctx.saved_tensors   (cols, or None when the weight needs no gradient; w2)
    ctx.shapes          (x_shape, weight_shape, (kh, kw), (sh, sw), (top, left), (dh, dw), groups)

Write the scatter of dcols into dx yourself (a loop over the kh kw taps: tap (ki, kj) of every
window adds into a strided slice of a padded dx). minigrad.kernels.col2im is the engine's own, to
compare with once yours passes.

    python -m demos.exercises check conv2d
    python -m demos.exercises train conv2d
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops_conv


class Conv2d(ops_conv.Conv2d):
    """ops_conv.Conv2d's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        cols, w2 = ctx.saved_tensors
        x_shape, w_shape, (kh, kw), (sh, sw), (top, left), (dh, dw), groups = ctx.shapes
        n, o, oh, ow = g.shape
        g2 = g.transpose(1, 0, 2, 3).reshape(groups, o // groups, n * oh * ow)  # (groups, O/groups, N OH OW)
        # dweight = ...   from g2 and cols, reshaped to w_shape
        # dbias = ...     (O,)
        # dcols = ...     from w2 and g2: (groups, C/groups kh kw, N OH OW)
        # dx = ...        every number of dcols added back where its window read x
        # return dx, dweight, dbias     (or dx, dweight without a bias)
        raise NotImplementedError("Conv2d.backward")
