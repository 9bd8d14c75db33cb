"""TensorMath: the Tensor methods that compute values element by element (exp, tanh, gelu, floor,
isnan, ...) and those that reduce or normalize along axes (sum, var, prod, logsumexp, cumsum, topk,
softmax, ...).

`Tensor` (tensor.py) inherits them; each calls one op of ops.py. The binary ops and the methods
that meet a Python number (+, *, **, maximum, clip, ...) live in tensor.py, with the dtype rules
for operands.
"""
import collections
import numbers

import numpy as np

from . import ops
from .ops import _axis

TopK = collections.namedtuple("topk", ["values", "indices"])  # what topk returns, as PyTorch's
MaxMin = collections.namedtuple("max", ["values", "indices"])  # what max(dim=d) and min(dim=d) return


def _pytorch_names(op, axis, keepdims, dim, keepdim):
    """axis and keepdims, given by their numpy names or by PyTorch's (dim=, keepdim=), not both."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}: got both axis={axis!r} and dim={dim!r}, which are the same argument; pass one")
        axis = dim
    if keepdim is not None:
        if keepdims:
            raise TypeError(f"{op}: got both keepdims= and keepdim=, which are the same argument; pass one")
        keepdims = keepdim
    return axis, keepdims


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

    def silu(self):
        """silu(x) = x * sigmoid(x)."""
        return ops.SiLU.apply(self)

    def leaky_relu(self, negative_slope=0.01):
        """x where x > 0, negative_slope * x elsewhere."""
        return ops.LeakyReLU.apply(self, negative_slope=negative_slope)

    def softplus(self, beta=1.0, threshold=20.0):
        """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (PyTorch's)."""
        return ops.Softplus.apply(self, beta=beta, threshold=threshold)

    def elu(self, alpha=1.0):
        """x where x > 0, alpha (e^x - 1) elsewhere."""
        return ops.ELU.apply(self, alpha=alpha)

    def erf(self):
        return ops.Erf.apply(self)

    def log2(self):
        return ops.Log2.apply(self)

    def rsqrt(self):
        """1 / sqrt(x)."""
        return ops.Rsqrt.apply(self)

    # piecewise constant: their gradient is 0 (as in PyTorch)
    def sign(self):
        return ops.Sign.apply(self)

    def floor(self):
        return ops.Floor.apply(self)

    def round(self, decimals=0):
        """Round to `decimals` places; halves go to the even neighbour (round(2.5) = 2), as PyTorch."""
        return ops.Round.apply(self, decimals=decimals)

    # tests of each element: bool tensors, outside the graph (they have no gradient)
    def isnan(self):
        return self._from_op(np.isnan(self._data), False)

    def isfinite(self):
        return self._from_op(np.isfinite(self._data), False)

    # ------------------------------------------------------------------ reductions
    # Each takes numpy's names axis= and keepdims=, or PyTorch's dim= and keepdim=.
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        if dim is not None or keepdim is not None:
            axis, keepdims = _pytorch_names("sum", axis, keepdims, dim, keepdim)
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        if dim is not None or keepdim is not None:
            axis, keepdims = _pytorch_names("mean", axis, keepdims, dim, keepdim)
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, keepdims=False, ddof=0, *, dim=None, keepdim=None, unbiased=None, correction=None):
        """Variance, dividing by n - ddof: numpy's convention, ddof=0 by default. PyTorch divides by
        n - 1 by default; its unbiased=True or correction=1 mean ddof=1."""
        axis, keepdims = _pytorch_names("var", axis, keepdims, dim, keepdim)
        ddof = _ddof("var", ddof, unbiased, correction)
        return ops.Var.apply(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def std(self, axis=None, keepdims=False, ddof=0, *, dim=None, keepdim=None, unbiased=None, correction=None):
        """Standard deviation, sqrt(var): numpy's convention as `var`, dividing by n - ddof with ddof=0
        by default (PyTorch divides by n - 1 by default: pass ddof=1 for its result). A composition
        of var and sqrt, so its gradient comes from theirs; at std = 0 that gradient is inf or NaN."""
        axis, keepdims = _pytorch_names("std", axis, keepdims, dim, keepdim)
        return self.var(axis=axis, keepdims=keepdims, ddof=_ddof("std", ddof, unbiased, correction)).sqrt()

    def prod(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _pytorch_names("prod", axis, keepdims, dim, keepdim)
        return ops.Prod.apply(self, axis=axis, keepdims=keepdims)

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """log(sum(exp(x))) over `dim` (an int or a tuple), without overflow."""
        dim, keepdim = _pytorch_names("logsumexp", dim, keepdim, axis, keepdims)
        if dim is None:
            raise TypeError("logsumexp: missing the dim (or axis) to reduce over")
        return ops.LogSumExp.apply(self, axis=dim, keepdims=keepdim)

    def cumsum(self, dim=None, *, axis=None):
        """Running sums along `dim`: y_i = x_0 + ... + x_i."""
        dim = _pytorch_names("cumsum", dim, False, axis, None)[0]
        if dim is None:
            raise TypeError("cumsum: missing the dim (or axis) to sum along")
        x = self.reshape(1) if self.ndim == 0 else self  # (a 0-d tensor: its one value)
        return ops.CumSum.apply(x, axis=_axis(dim, x.ndim, "cumsum", self.shape)).reshape(self.shape)

    def max(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The largest value (along `axis`). Called with PyTorch's dim=, it returns PyTorch's pair
        (values, indices), as `torch.max(x, dim=d)` does."""
        if dim is not None:
            return self._max_with_indices("max", axis, keepdims, dim, keepdim, largest=True)
        axis, keepdims = _pytorch_names("max", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=True)

    def min(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The smallest value; with dim=, the pair (values, indices) (see max)."""
        if dim is not None:
            return self._max_with_indices("min", axis, keepdims, dim, keepdim, largest=False)
        axis, keepdims = _pytorch_names("min", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=False)

    def _max_with_indices(self, op, axis, keepdims, dim, keepdim, largest):
        axis, keepdims = _pytorch_names(op, axis, keepdims, dim, keepdim)
        if not isinstance(axis, numbers.Integral):
            raise TypeError(f"{op}: dim must be one int (PyTorch's max(dim=d) returns values and indices), "
                            f"got {axis!r}; for several axes use axis=")
        values = ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=largest)
        indices = (self.argmax if largest else self.argmin)(axis=axis, keepdims=keepdims)
        return MaxMin(values, indices)

    def argmax(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _pytorch_names("argmax", axis, keepdims, dim, keepdim)
        if axis is not None:
            _axis(axis, self.ndim, "argmax", self.shape)
        return self._from_op(np.argmax(self._data, axis=axis, keepdims=keepdims), False)

    def argmin(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _pytorch_names("argmin", axis, keepdims, dim, keepdim)
        if axis is not None:
            _axis(axis, self.ndim, "argmin", self.shape)
        return self._from_op(np.argmin(self._data, axis=axis, keepdims=keepdims), False)

    def topk(self, k, dim=-1, largest=True, sorted=True, *, axis=None):
        """The k largest elements along `dim`, largest first (largest=False: the k smallest, smallest
        first), and their positions: a pair (values, indices), indices int64. The values are
        `gather`ed from this tensor, so the gradient flows through them to the elements picked.
        They are always in order (PyTorch's sorted=False allows any order); ties keep x's order."""
        if self.ndim == 0:
            raise ValueError("topk: needs a tensor with at least 1 dim, got shape ()")
        if axis is not None:
            dim = axis
        dim = _axis(dim, self.ndim, "topk", self.shape)
        n = self.shape[dim]
        if not isinstance(k, numbers.Integral) or not 0 <= k <= n:
            raise ValueError(f"topk: k={k} is out of range for dim {dim} of size {n} (shape {self.shape}); "
                             f"expected 0 <= k <= {n}")
        key = self._data
        if largest:  # sort by -x (as int64 for unsigned and bool values, which have no negative)
            key = -key if key.dtype.kind in "fi" else -key.astype(np.int64)
        order = np.argsort(key, axis=dim, kind="stable")
        indices = np.take(order, np.arange(k), axis=dim).astype(np.int64)
        return TopK(self.gather(dim, indices), self._from_op(indices, False))

    def softmax(self, axis=None, scale=None, mask=None, *, dim=None):
        """softmax along `axis` (or dim=; the last axis if neither is given). With `scale` and/or a
        bool `mask` (over the last axis only): softmax(scale * x) counting only the entries where mask
        is True, in one fused op; a row with nothing allowed gives zeros."""
        if dim is not None:
            axis = _pytorch_names("softmax", axis, False, dim, None)[0]
        axis = _axis(-1 if axis is None else axis, self.ndim, "softmax", self.shape)
        if scale is None and mask is None:
            return ops.Softmax.apply(self, axis=axis)
        if axis != self.ndim - 1:
            raise ValueError(f"softmax: scale and mask work over the last axis only, got axis {axis}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_:
                raise TypeError(f"softmax: mask must be bool (True = keep), got {mask.dtype}")
        return ops.MaskedSoftmax.apply(self, mask=mask, scale=1.0 if scale is None else float(scale))

    def log_softmax(self, axis=None, *, dim=None):
        """log(softmax(x)) along `axis` (or dim=; the last axis if neither is given), computed stably."""
        if dim is not None:
            axis = _pytorch_names("log_softmax", axis, False, dim, None)[0]
        return ops.LogSoftmax.apply(self, axis=_axis(-1 if axis is None else axis, self.ndim, "log_softmax",
                                                     self.shape))


def _ddof(op, ddof, unbiased, correction):
    """ddof from numpy's name or PyTorch's (unbiased=True is correction=1), given once."""
    given = [name for name, value in (("unbiased", unbiased), ("correction", correction)) if value is not None]
    if len(given) > 1 or (given and ddof != 0):
        raise TypeError(f"{op}: give the correction once, as ddof=, unbiased= or correction=")
    if unbiased is not None:
        return int(bool(unbiased))
    return ddof if correction is None else correction
