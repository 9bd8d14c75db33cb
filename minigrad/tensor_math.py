"""TensorMath: the Tensor methods that compute values element by element (exp, tanh, gelu, ...)
and those that reduce or normalize along axes (sum, mean, var, max, softmax, ...).

`Tensor` (tensor.py) inherits them; each calls one op of ops.py. The binary ops and the methods
that meet a Python number (+, *, **, maximum, clip, ...) live in tensor.py, with the dtype rules
for operands.
"""
import numpy as np

from . import ops
from .ops import _axis


class TensorMath:
    """Elementwise functions and reductions of a Tensor (see tensor.py for the class itself)."""

    __slots__ = ()  # (Tensor declares the slots)

    # ------------------------------------------------------------------ elementwise functions
    def exp(self):
        return ops.Exp.apply(self)

    def log(self):
        return ops.Log.apply(self)

    def sqrt(self):
        return ops.Sqrt.apply(self)

    def abs(self):
        return ops.Abs.apply(self)

    def sin(self):
        return ops.Sin.apply(self)

    def cos(self):
        return ops.Cos.apply(self)

    def tanh(self):
        return ops.Tanh.apply(self)

    def sigmoid(self):
        return ops.Sigmoid.apply(self)

    def relu(self):
        return ops.ReLU.apply(self)

    def gelu(self, approximate="none"):
        """GELU(x) = x * Phi(x); approximate="tanh" uses the tanh formula (GPT-2's)."""
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return ops.GELU.apply(self, approximate=approximate == "tanh")

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False):
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return ops.Var.apply(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def max(self, axis=None, keepdims=False):
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=True)

    def min(self, axis=None, keepdims=False):
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=False)

    def argmax(self, axis=None, keepdims=False):
        if axis is not None:
            _axis(axis, self.ndim, "argmax", self.shape)
        return self._from_op(np.argmax(self.data, axis=axis, keepdims=keepdims), False)

    def argmin(self, axis=None, keepdims=False):
        if axis is not None:
            _axis(axis, self.ndim, "argmin", self.shape)
        return self._from_op(np.argmin(self.data, axis=axis, keepdims=keepdims), False)

    def softmax(self, axis=-1, scale=None, mask=None):
        """softmax along `axis`. With `scale` and/or a bool `mask` (over the last axis only):
        softmax(scale * x) counting only the entries where mask is True, in one fused op; a row
        with nothing allowed gives zeros."""
        axis = _axis(axis, self.ndim, "softmax", self.shape)
        if scale is None and mask is None:
            return ops.Softmax.apply(self, axis=axis)
        if axis != self.ndim - 1:
            raise ValueError(f"softmax: scale and mask work over the last axis only, got axis {axis}")
        if mask is not None:
            mask = np.asarray(getattr(mask, "data", mask))
            if mask.dtype != np.bool_:
                raise TypeError(f"softmax: mask must be bool (True = keep), got {mask.dtype}")
        return ops.MaskedSoftmax.apply(self, mask=mask, scale=1.0 if scale is None else float(scale))

    def log_softmax(self, axis=-1):
        return ops.LogSoftmax.apply(self, axis=_axis(axis, self.ndim, "log_softmax", self.shape))
