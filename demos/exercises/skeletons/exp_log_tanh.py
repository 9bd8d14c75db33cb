"""Exercise: the backwards of exp, log and tanh (minigrad/ops.py, classes Exp, Log, Tanh).

Each works element by element: x (any shape) -> y (x's shape). Each backward gets g = dL/dy and
returns dL/dx, shaped like x.

What each forward left in ctx (look at ops.py: an op saves whatever makes its backward cheapest):
    Exp:   ctx.saved_tensors = (y,)    y = e^x
    Log:   ctx.saved_tensors = (x,)
    Tanh:  ctx.saved_tensors = (y,)    y = tanh(x)

    python -m demos.exercises check exp_log_tanh
    python -m demos.exercises train exp_log_tanh
"""
import numpy as np  # noqa: F401  (yours to use)

from minigrad import ops


class Exp(ops.Exp):
    """ops.Exp's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        raise NotImplementedError("Exp.backward")


class Log(ops.Log):
    """ops.Log's forward; the backward is yours."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        raise NotImplementedError("Log.backward")


class Tanh(ops.Tanh):
    """ops.Tanh's forward; the backward is yours. Write it with y only (no new tanh)."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        raise NotImplementedError("Tanh.backward")
