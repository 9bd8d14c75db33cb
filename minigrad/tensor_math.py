"""TensorMath: the Tensor methods that compute values element by element (exp, tanh, gelu, floor,
ceil, square, nan_to_num, isnan, isinf, ...), those that reduce, sort or normalize along axes (sum,
var, prod, amax, norm, logsumexp, cumsum, topk, sort, softmax, ...), the tests and counts outside
the graph (all, any, isclose, nonzero, count_nonzero, histogram, histc) and the random ones
(multinomial, normal_, uniform_).

`Tensor` (tensor.py) inherits them; each calls one op of ops.py (or is a few Tensor operations:
square is x * x). The binary ops and the methods
that meet a Python number (+, *, **, maximum, clip, ...) live in tensor.py, with the dtype rules
for operands.
"""
import collections
import numbers

import numpy as np

from . import ops
from .ops import _axis
from .random import rng

TopK = collections.namedtuple("topk", ["values", "indices"])  # what topk returns, as PyTorch's
MaxMin = collections.namedtuple("max", ["values", "indices"])  # what max(dim=d) and min(dim=d) return
Sort = collections.namedtuple("sort", ["values", "indices"])  # what sort returns
Median = collections.namedtuple("median", ["values", "indices"])  # what median(dim) returns
KthValue = collections.namedtuple("kthvalue", ["values", "indices"])  # what kthvalue returns
Histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])  # what histogram returns
CumMax = collections.namedtuple("cummax", ["values", "indices"])  # what cummax returns
CumMin = collections.namedtuple("cummin", ["values", "indices"])  # what cummin returns
AMinMax = collections.namedtuple("aminmax", ["min", "max"])  # what aminmax returns


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

    def log10(self):
        return ops.Log10.apply(self)

    def log1p(self):
        """log(1 + x), exact to the last digits for small x."""
        return ops.Log1p.apply(self)

    def expm1(self):
        """e^x - 1, exact to the last digits for small x."""
        return ops.Expm1.apply(self)

    def rsqrt(self):
        """1 / sqrt(x)."""
        return ops.Rsqrt.apply(self)

    def square(self):
        """x * x (an integer tensor stays integer, as in PyTorch)."""
        return self * self

    def reciprocal(self):
        """1 / x (integers give float32, as in PyTorch)."""
        return 1 / self

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """A copy with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the
        largest and the smallest finite number of the dtype). The gradient flows to the finite
        elements only, as in PyTorch: the others were replaced by constants."""
        if self._data.dtype.kind != "f":
            return self.clone()  # (integers are all finite)
        return ops.NanToNum.apply(self, nan=nan, posinf=posinf, neginf=neginf)

    # piecewise constant: their gradient is 0 (as in PyTorch)
    def sign(self):
        return ops.Sign.apply(self)

    def floor(self):
        return ops.Floor.apply(self)

    def ceil(self):
        return ops.Ceil.apply(self)

    def round(self, decimals=0):
        """Round to `decimals` places; halves go to the even neighbour (round(2.5) = 2), as PyTorch."""
        return ops.Round.apply(self, decimals=decimals)

    def trunc(self):
        """Round toward 0: trunc(-2.7) = -2 (gradient 0, as the other roundings)."""
        return ops.Trunc.apply(self)

    fix = trunc  # (PyTorch's other name)

    def frac(self):
        """The fractional part x - trunc(x), with x's sign: frac(-2.5) = -0.5. Its gradient is 1."""
        return ops.Frac.apply(self)

    # trigonometric and hyperbolic functions and their inverses (integers give float32, as PyTorch)
    def tan(self):
        return ops.Tan.apply(self)

    def sinh(self):
        return ops.Sinh.apply(self)

    def cosh(self):
        return ops.Cosh.apply(self)

    def asin(self):
        """The angle in [-pi/2, pi/2] whose sine is x: NaN outside [-1, 1], gradient inf at +-1."""
        return ops.Asin.apply(self)

    def acos(self):
        """The angle in [0, pi] whose cosine is x: NaN outside [-1, 1], gradient -inf at +-1."""
        return ops.Acos.apply(self)

    def atan(self):
        """The angle in (-pi/2, pi/2) whose tangent is x."""
        return ops.Atan.apply(self)

    def asinh(self):
        return ops.Asinh.apply(self)

    def acosh(self):
        """The inverse of cosh on [1, inf): NaN below 1, gradient inf at 1."""
        return ops.Acosh.apply(self)

    def atanh(self):
        """The inverse of tanh: +-inf at +-1 (as is its gradient), NaN outside [-1, 1]."""
        return ops.Atanh.apply(self)

    def atan2(self, other):
        """The angle in (-pi, pi] of the point (other, self): atan2(y, x), as numpy's arctan2. Its
        gradient at (0, 0), where it has none, is 0 (PyTorch's)."""
        return ops.Atan2.apply(*_operands(self, other, "atan2"))

    arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2  # (numpy's names, PyTorch's aliases)
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    # more functions of one or two tensors
    def erfinv(self):
        """The inverse of erf: erfinv(erf(x)) = x on (-1, 1); +-inf at +-1, NaN outside."""
        return ops.Erfinv.apply(self)

    def sinc(self):
        """The normalized sinc, sin(pi x) / (pi x), and 1 at 0 (where its gradient is 0)."""
        return ops.Sinc.apply(self)

    def fmod(self, other):
        """The remainder of x / other rounded toward 0: the sign of x, as C's fmod (remainder, as
        Python's %, takes other's sign): fmod(-7, 2) = -1, remainder(-7, 2) = 1."""
        return ops.Fmod.apply(*_operands(self, other, "fmod"))

    def xlogy(self, other):
        """x * log(other), and 0 where x is 0 (even where other is 0: the 0 log 0 = 0 of entropies),
        as PyTorch; NaN where other is NaN."""
        return ops.Xlogy.apply(*_operands(self, other, "xlogy"))

    def copysign(self, other):
        """|x| with the sign of other (its sign bit: -0.0 is negative); integers give float32."""
        return ops.Copysign.apply(*_operands(self, other, "copysign"))

    def heaviside(self, values):
        """The step function: 0 where x < 0, 1 where x > 0, `values` where x == 0 (NaN gives 0, as
        PyTorch's). Outside the graph, as comparisons: it has no gradient."""
        a, b = _operands(self, values, "heaviside")
        try:
            out = np.where(a.numpy() == 0, b.numpy(), a.numpy() > 0)
        except ValueError:
            raise ValueError(f"heaviside: shapes {a.shape} and {b.shape} do not broadcast together") from None
        return self._from_op(out.astype(np.result_type(a.dtype, b.dtype), copy=False), False)

    def clamp_min(self, min):
        """max(x, min), elementwise: clamp(min=min); `min` may be a tensor (which then gets the
        gradient where it replaced x)."""
        return ops.ClampBound.apply(*_operands(self, min, "clamp_min"), upper=False)

    def clamp_max(self, max):
        """min(x, max), elementwise: clamp(max=max) (see clamp_min)."""
        return ops.ClampBound.apply(*_operands(self, max, "clamp_max"), upper=True)

    def clamp_min_(self, min):
        """x = x.clamp_min(min), in place (the rules of in-place updates, tensor.py)."""
        return self._update("clamp_min_", lambda x, m: x.clamp_min(m), min)

    def clamp_max_(self, max):
        """x = x.clamp_max(max), in place."""
        return self._update("clamp_max_", lambda x, m: x.clamp_max(m), max)

    # tests of each element: bool tensors, outside the graph (they have no gradient)
    def isnan(self):
        return self._from_op(np.isnan(self._data), False)

    def isfinite(self):
        return self._from_op(np.isfinite(self._data), False)

    def isinf(self):
        """True at +inf and -inf."""
        return self._from_op(np.isinf(self._data), False)

    # logic of each element (nonzero counts as True): bool tensors, outside the graph
    def logical_not(self):
        return self._from_op(np.logical_not(self._data), False)

    def logical_and(self, other):
        return self._from_op(np.logical_and(self._data, np.asarray(getattr(other, "_data", other))), False)

    def logical_or(self, other):
        return self._from_op(np.logical_or(self._data, np.asarray(getattr(other, "_data", other))), False)

    def logical_xor(self, other):
        return self._from_op(np.logical_xor(self._data, np.asarray(getattr(other, "_data", other))), False)

    # ------------------------------------------------------------------ reductions
    # Each takes numpy's names axis= and keepdims=, or PyTorch's dim= and keepdim=.
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None, dtype=None):
        """The sum over `axis` (all by default). dtype= converts first and gives a result of that
        dtype, as PyTorch (x.sum(dtype=minigrad.float64) sums float32 values in float64)."""
        if dim is not None or keepdim is not None:
            axis, keepdims = _pytorch_names("sum", axis, keepdims, dim, keepdim)
        if dtype is None:
            return ops.Sum.apply(self, axis=axis, keepdims=keepdims)
        out = ops.Sum.apply(self.to(dtype), axis=axis, keepdims=keepdims)
        return out if out.dtype == np.dtype(dtype) else out.to(dtype)  # (int32 sums in int64: back to int32)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None, dtype=None):
        """The mean over `axis` (all by default); dtype= (a float dtype) converts first, as PyTorch."""
        if dim is not None or keepdim is not None:
            axis, keepdims = _pytorch_names("mean", axis, keepdims, dim, keepdim)
        return ops.Mean.apply(_float_dtype("mean", self, dtype), axis=axis, keepdims=keepdims)

    def nansum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The sum over `dim` (an int or a tuple; all by default) of the elements that are not NaN; a
        NaN gets gradient 0. Integers sum to int64; dtype= converts first, as in `sum`."""
        dim, keepdim = _pytorch_names("nansum", dim, keepdim, axis, keepdims)
        x = self if dtype is None else self.to(dtype)
        out = ops.NanSum.apply(x, axis=_tuple(dim), keepdims=bool(keepdim))
        return out if dtype is None or out.dtype == np.dtype(dtype) else out.to(dtype)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The mean over `dim` of the elements that are not NaN (NaN where every one is); a NaN gets
        gradient 0. A float tensor only (dtype= converts first), as PyTorch."""
        dim, keepdim = _pytorch_names("nanmean", dim, keepdim, axis, keepdims)
        x = _float_dtype("nanmean", self, dtype)
        if x.dtype.kind != "f":
            raise TypeError(f"nanmean: expected a float tensor, got {x.dtype} (an integer is never NaN: use mean, "
                            "or give dtype=)")
        return ops.NanMean.apply(x, axis=_tuple(dim), keepdims=bool(keepdim))

    def var(self, dim=None, unbiased=None, keepdim=None, *, correction=None, ddof=None, axis=None, keepdims=None):
        """Variance, dividing by n - correction, with PyTorch's default correction=1 (the unbiased
        estimate, n - 1). `x.var(dim, unbiased, keepdim)` as PyTorch: unbiased=False, correction=0
        or numpy's ddof=0 divide by n (the population variance, what a layer norm uses); give only
        one of the three. numpy's axis= and keepdims= are accepted too."""
        dim, keepdim = _dim_and_keepdim("var", dim, unbiased, keepdim, axis, keepdims)
        if isinstance(dim, bool):  # x.var(False): PyTorch's var(unbiased) overload
            dim, unbiased = None, dim
        correction = _correction("var", unbiased, correction, ddof)
        return ops.Var.apply(self, axis=dim, keepdims=keepdim, ddof=correction)

    def std(self, dim=None, unbiased=None, keepdim=None, *, correction=None, ddof=None, axis=None, keepdims=None):
        """Standard deviation, sqrt(var): divides by n - 1 by default, as PyTorch (see `var` for
        unbiased=, correction= and ddof=). A composition of var and sqrt, so its gradient comes
        from theirs; at std = 0 (all values equal) it is 0, as PyTorch's (ops.SqrtOfVariance)."""
        dim, keepdim = _dim_and_keepdim("std", dim, unbiased, keepdim, axis, keepdims)
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        correction = _correction("std", unbiased, correction, ddof)
        return ops.SqrtOfVariance.apply(ops.Var.apply(self, axis=dim, keepdims=keepdim, ddof=correction))

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

    def cumprod(self, dim=None, *, dtype=None, axis=None):
        """Running products along `dim`: y_i = x_0 x_1 ... x_i (integers give int64; dtype= converts
        first). The gradient is exact where an element is 0 (it divides by nothing)."""
        dim = _pytorch_names("cumprod", dim, False, axis, None)[0]
        if dim is None:
            raise TypeError("cumprod: missing the dim (or axis) to multiply along")
        x = self if dtype is None else self.to(dtype)
        x = x.reshape(1) if x.ndim == 0 else x
        return ops.CumProd.apply(x, axis=_axis(dim, x.ndim, "cumprod", self.shape)).reshape(self.shape)

    def logcumsumexp(self, dim=None, *, axis=None):
        """Running log(sum(exp(x))) along `dim`: y_i = log(e^x_0 + ... + e^x_i), without overflow."""
        dim = _pytorch_names("logcumsumexp", dim, False, axis, None)[0]
        if dim is None:
            raise TypeError("logcumsumexp: missing the dim (or axis) to accumulate along")
        x = self.reshape(1) if self.ndim == 0 else self
        return ops.LogCumSumExp.apply(x, axis=_axis(dim, x.ndim, "logcumsumexp", self.shape)).reshape(self.shape)

    def cummax(self, dim=None, *, axis=None):
        """The running maximum along `dim` and where it is: the pair (values, indices), as PyTorch's
        (a tie, or a NaN, moves the index to the later element). The gradient of values[i] goes to
        the element at indices[i]."""
        return self._cumulative_extreme("cummax", dim, axis, True)

    def cummin(self, dim=None, *, axis=None):
        """The running minimum along `dim` and where it is (see cummax)."""
        return self._cumulative_extreme("cummin", dim, axis, False)

    def _cumulative_extreme(self, op, dim, axis, largest):
        dim = _pytorch_names(op, dim, False, axis, None)[0]
        if dim is None:
            raise TypeError(f"{op}: missing the dim (or axis) to run along")
        x = self.reshape(1) if self.ndim == 0 else self
        dim = _axis(dim, x.ndim, op, self.shape)
        indices = ops.cumulative_extreme_indices(x.numpy(), dim, largest)
        values = ops.CumExtreme.apply(x, indices=indices, axis=dim)
        return (CumMax if largest else CumMin)(values.reshape(self.shape),
                                               self._from_op(indices.reshape(self.shape), False))

    def aminmax(self, *, dim=None, keepdim=False):
        """The pair (min, max) over `dim` (one int; all elements by default), as `torch.aminmax`: the
        values of amin and amax, whose gradients equal extremes share evenly."""
        dims = () if dim is None else dim
        return AMinMax(self.amin(dims, keepdim), self.amax(dims, keepdim))

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The n-th forward difference along `dim`: out[i] = x[i+1] - x[i], n times (a bool tensor:
        x[i+1] != x[i]), after `prepend` and `append` (tensors of this shape but along dim; a number
        stands for one slice of it) are put before and after x. Each pass is one shorter; past the
        length, empty."""
        if self.ndim == 0:
            raise ValueError("diff: expected a tensor of at least one dim, got a 0-d one")
        if not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"diff: n must be an integer >= 0, got {n!r}")
        dim = _axis(dim, self.ndim, "diff", self.shape)
        x = self
        if prepend is not None or append is not None:
            x = _concatenated_along(self, dim, prepend, append)
        for _ in range(n):
            length = x.shape[dim]
            if length == 0:
                break
            later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
            x = later != earlier if x.dtype == np.bool_ else later - earlier
        return x

    def max(self, dim=None, keepdim=None, *, axis=None, keepdims=False):
        """The largest value. With a dim, positional or dim= (`x.max(1)`, `x.max(dim=1)`), PyTorch's
        pair (values, indices), with `.values` and `.indices`. With numpy's axis= (an int or a tuple),
        the values alone, as numpy's `a.max(axis=1)`. `x.max(other_tensor)` is `x.maximum(other)`,
        as `torch.max(x, y)`."""
        if isinstance(dim, TensorMath):
            return self.maximum(dim)
        if dim is not None:
            return self._max_with_indices("max", axis, keepdims, dim, keepdim, largest=True)
        axis, keepdims = _pytorch_names("max", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=True)

    def min(self, dim=None, keepdim=None, *, axis=None, keepdims=False):
        """The smallest value; with a dim, the pair (values, indices) (see max)."""
        if isinstance(dim, TensorMath):
            return self.minimum(dim)
        if dim is not None:
            return self._max_with_indices("min", axis, keepdims, dim, keepdim, largest=False)
        axis, keepdims = _pytorch_names("min", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=False)

    def _max_with_indices(self, op, axis, keepdims, dim, keepdim, largest):
        """PyTorch's max(dim): the gradient goes to the one element at the index of each row, even
        where others tie with it (amax, and max without a dim or with numpy's axis=, share it evenly
        among the ties)."""
        axis, keepdims = _pytorch_names(op, axis, keepdims, dim, keepdim)
        if not isinstance(axis, numbers.Integral):
            raise TypeError(f"{op}: dim must be one int (PyTorch's max(dim) returns values and indices), "
                            f"got {axis!r}; for several axes use axis=")
        axis = _axis(axis, self.ndim, op, self.shape)
        values = ops.IndexedMax.apply(self, axis=axis, keepdims=keepdims, largest=largest)
        indices = (self.argmax if largest else self.argmin)(axis=axis, keepdims=keepdims)
        return MaxMin(values, indices)

    def amax(self, dim=(), keepdim=False):
        """The largest value over `dim` (an int or a tuple; all dims by default), as `torch.amax`:
        values only, and equal largest values share the gradient evenly (max(dim) gives it to one)."""
        return ops.Max.apply(self, axis=_dims("amax", dim, self.shape), keepdims=keepdim, largest=True, op="amax")

    def amin(self, dim=(), keepdim=False):
        """The smallest value over `dim` (see amax)."""
        return ops.Max.apply(self, axis=_dims("amin", dim, self.shape), keepdims=keepdim, largest=False, op="amin")

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over `dim` (an int or a tuple; all elements by default), as
        `torch.norm`: p = 2 or 'fro' sqrt(sum x^2), p = 1 sum |x|, p = inf max |x|, p = -inf min |x|,
        any other p >= 1 (sum |x|^p)^(1/p). Its gradient at the zero vector is 0, as in PyTorch.
        `dtype` converts the tensor first. (Matrix norms such as 'nuc' are not supported.)"""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind != "f":
            raise TypeError(f"norm: expected a float tensor, got {x.dtype} (shape {x.shape}); convert it with "
                            ".float()")
        dims = _dims("norm", dim, x.shape) if dim is not None else None
        if isinstance(p, str):
            if p != "fro" or (dims is not None and len(dims) > 2):
                raise ValueError(f"norm: p={p!r} over dims {dim!r} is a matrix norm, which is not supported; "
                                 "expected p='fro' over at most 2 dims, or a number p")
            p = 2
        if p is None:
            p = 2
        if not isinstance(p, numbers.Real) or isinstance(p, bool) or not (p >= 1 or p == -np.inf):
            raise ValueError(f"norm: p={p!r} is not supported; expected 'fro', 1, 2, inf, -inf or a number >= 1")
        return ops.Norm.apply(x, p=float(p), axis=dims, keepdims=keepdim)

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

    def sort(self, dim=-1, descending=False, stable=False, *, axis=None):
        """The values in order along `dim` (smallest first; descending=True: largest first) and where
        each came from: a pair (values, indices), as `torch.sort`. Equal values keep their order
        (PyTorch promises that with stable=True). NaN counts as larger than every number, as in
        PyTorch. The values are `gather`ed, so the gradient flows back to where each came from."""
        dim = _pytorch_names("sort", axis, False, None if dim == -1 else dim, None)[0] if axis is not None else dim
        indices = self.argsort(dim, descending, stable)
        if self.ndim == 0:
            return Sort(self.clone(), indices)
        return Sort(self.gather(dim, indices), indices)

    def argsort(self, dim=-1, descending=False, stable=False, *, axis=None):
        """The positions that sort the values along `dim`: an int64 tensor (see `sort`)."""
        if axis is not None:  # numpy's name
            dim = _pytorch_names("argsort", axis, False, None if dim == -1 else dim, None)[0]
        values = self.numpy()
        if values.ndim == 0:
            return self._from_op(np.zeros((), dtype=np.int64), False)
        dim = _axis(dim, values.ndim, "argsort", values.shape)
        if not descending:
            order = np.argsort(values, axis=dim, kind="stable")
        elif values.dtype.kind == "f":  # NaN first, then from the largest number down
            order = np.lexsort((-values, ~np.isnan(values)), axis=dim)
        else:  # (unsigned and bool values have no negative: as int64)
            order = np.argsort(-values.astype(np.int64), axis=dim, kind="stable")
        return self._from_op(order.astype(np.int64), False)

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

    # ------------------------------------------------------------------ random numbers
    def multinomial(self, num_samples, replacement=False, *, generator=None):
        """Indices drawn with probabilities proportional to this tensor's weights; see
        `minigrad.multinomial`."""
        from .creation import multinomial  # (creation.py imports tensor.py, which imports this module)

        return multinomial(self, num_samples, replacement, generator=generator)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill with samples from N(mean, std^2), in place, drawn from `generator` or the default one.
        As every in-place change: on a weight, inside `no_grad()`."""
        values = rng(generator).normal(mean, std, self.shape)
        return self._update("normal_", _copy_op(), values.astype(self.dtype))

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        """Fill with samples from U(a, b), in place (see `normal_`). PyTorch names the bounds from and to."""
        values = rng(generator).uniform(a, b, self.shape)
        return self._update("uniform_", _copy_op(), values.astype(self.dtype))

    def bernoulli(self, p=None, *, generator=None):
        """0 or 1 in each place, 1 with probability this tensor's value there (`torch.bernoulli(probs)`),
        or with probability `p` everywhere when it is given; this tensor's dtype, outside the graph,
        drawn from `generator` or the default one."""
        if p is None:
            probabilities = _float_values("bernoulli", self)
        else:
            probabilities = np.asarray(p.numpy() if isinstance(p, TensorMath) else p, dtype=np.float64)
        _check_probabilities("bernoulli", probabilities)
        draws = rng(generator).random(self.shape) < probabilities
        return self._from_op(draws.astype(self.dtype), False)

    def bernoulli_(self, p=0.5, *, generator=None):
        """Fill with 0 or 1, 1 with probability `p` (a number, or a tensor broadcast to this shape), in
        place (see normal_)."""
        probabilities = np.asarray(p.numpy() if isinstance(p, TensorMath) else p, dtype=np.float64)
        _check_probabilities("bernoulli_", probabilities)
        try:
            probabilities = np.broadcast_to(probabilities, self.shape)
        except ValueError:
            raise ValueError(f"bernoulli_: p of shape {probabilities.shape} does not broadcast to this tensor's "
                             f"shape {self.shape}") from None
        draws = rng(generator).random(self.shape) < probabilities
        return self._update("bernoulli_", _copy_op(), draws.astype(self.dtype))

    def random_(self, *args, generator=None, **kwargs):
        """Fill with integers drawn uniformly, in place (see normal_), as PyTorch's random_:
        `random_(to)` from [0, to), `random_(from, to)` from [from, to) (or from=, to= by name), and
        to=None up to the largest value of the dtype: for a float dtype 2^mantissa (2^24 for float32),
        so that every integer is exact."""
        low, high = _random_bounds(self.dtype, args, kwargs)
        if self.dtype.kind in "biu":
            info = np.iinfo(np.int64 if self.dtype == np.bool_ else self.dtype)
            top = 1 if self.dtype == np.bool_ else info.max
            if low < (0 if self.dtype == np.bool_ else info.min) or high - 1 > top:
                raise ValueError(f"random_: [{low}, {high}) is out of the range of {self.dtype}")
        draw_dtype = np.uint64 if high - 1 > np.iinfo(np.int64).max else np.int64
        values = rng(generator).integers(low, high - 1, self.shape, dtype=draw_dtype, endpoint=True)
        return self._update("random_", _copy_op(), values.astype(self.dtype))

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill with samples of the exponential distribution of rate `lambd` (mean 1 / lambd), in place
        (see normal_); a float tensor only."""
        if self.dtype.kind != "f":
            raise TypeError(f"exponential_: the exponential distribution is continuous: expected a float tensor, "
                            f"got {self.dtype}")
        if not lambd > 0:
            raise ValueError(f"exponential_: expects lambd > 0, got {lambd}")
        values = rng(generator).exponential(1.0 / lambd, self.shape)
        return self._update("exponential_", _copy_op(), values.astype(self.dtype))

    # ------------------------------------------------------------------ tests and counts (outside the graph)
    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether every element (along `dim`, an int or a tuple) is nonzero: a bool tensor, so that
        `x.all().item()` and `if x.all():` both work (uint8 stays uint8, as in PyTorch)."""
        return self._truth("all", np.all, dim, keepdim, axis, keepdims)

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether some element (along `dim`) is nonzero: a bool tensor (see `all`)."""
        return self._truth("any", np.any, dim, keepdim, axis, keepdims)

    def count_nonzero(self, dim=None):
        """How many elements (over `dim`, an int or a tuple; all by default) are not zero: int64."""
        values = self.numpy()
        axes = None if dim is None else ops._normalize_axes(dim, values.shape, "count_nonzero")
        return self._from_op(np.asarray(np.count_nonzero(values, axis=axes), dtype=np.int64), False)

    def nonzero(self, as_tuple=False):
        """The positions of the nonzero elements, in row-major order: an int64 tensor (n, ndim), one
        row per element; as_tuple=True: one 1-D tensor per dim (x[x.nonzero(as_tuple=True)] picks them)."""
        values = self.numpy()
        if as_tuple:  # (a 0-d tensor counts as 1-D, as in PyTorch)
            positions = np.nonzero(values.reshape(values.shape or 1))
            return tuple(self._from_op(i.astype(np.int64), False) for i in positions)
        return self._from_op(np.argwhere(values).astype(np.int64), False)

    def _truth(self, op, fn, dim, keepdim, axis, keepdims):
        dim, keepdim = _pytorch_names(op, dim, keepdim, axis, keepdims)
        values = self.numpy()
        axes = None if dim is None else ops._normalize_axes(dim, values.shape, op)
        result = np.asarray(fn(values, axis=axes, keepdims=bool(keepdim)))
        return self._from_op(result.astype(np.uint8) if values.dtype == np.uint8 else result, False)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise |x - other| <= atol + rtol |other| (numpy's and PyTorch's test), as a bool tensor;
        NaNs are equal to each other only with equal_nan=True."""
        from .tensor import _operands  # (tensor.py imports this module)

        a, b = _operands(self, other, "isclose")
        try:
            result = np.isclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan)
        except ValueError:
            raise ValueError(f"isclose: shapes {a.shape} and {b.shape} do not broadcast together") from None
        return self._from_op(np.asarray(result), False)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True if every element is close to `other`'s (see `isclose`): a Python bool, as in PyTorch."""
        return bool(self.isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan).numpy().all())

    def histc(self, bins=100, min=0, max=0):
        """Counts of the elements in `bins` equal bins between min and max, a 1-D tensor of this
        tensor's (float) dtype, as `torch.histc`. min = max (the default 0, 0) takes the smallest and
        the largest element; elements outside [min, max] are not counted; the last bin includes max."""
        values = _float_values("histc", self)
        if not isinstance(bins, numbers.Integral) or bins <= 0:
            raise ValueError(f"histc: bins must be a positive integer, got {bins!r}")
        low, high = float(min), float(max)
        if low == high and values.size:
            low, high = float(values.min()), float(values.max())
        if low == high:
            low, high = low - 1, high + 1
        if not (np.isfinite(low) and np.isfinite(high)):
            raise ValueError(f"histc: the range [{low}, {high}] is not finite")
        if low > high:
            raise ValueError(f"histc: max must be larger than min, got min={low}, max={high}")
        edges = _linear_edges(low, high, int(bins), values.dtype)
        low, high = edges[0], edges[-1]
        inside = values[(values >= low) & (values <= high)]
        # the bin by linear interpolation, in the tensor's dtype: (x - min) * bins / (max - min)
        position = ((inside - low) * values.dtype.type(bins) / (high - low)).astype(np.int64)
        counts = np.bincount(np.minimum(position, bins - 1), minlength=bins)
        return self._from_op(counts.astype(values.dtype), False)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """A histogram of all the elements, as `torch.histogram`: the pair (hist, bin_edges), both of
        this tensor's float dtype. `bins` is a number of equal bins over `range` (default: from the
        smallest element to the largest) or a 1-D tensor of increasing edges. Each bin includes its
        left edge; the last also its right one. `weight` (this tensor's shape) gives each element's
        weight instead of 1; density=True divides by the total and the bin width (the integral is 1)."""
        values = _float_values("histogram", self).reshape(-1)
        if isinstance(bins, numbers.Integral):
            if bins <= 0:
                raise ValueError(f"histogram: bins must be a positive integer, got {bins}")
            if range is not None:
                low, high = (float(v) for v in range)
            elif values.size:
                low, high = float(values.min()), float(values.max())
            else:
                low, high = 0.0, 1.0
            if not (np.isfinite(low) and np.isfinite(high)):
                raise ValueError(f"histogram: the range [{low}, {high}] is not finite")
            if low > high:
                raise ValueError(f"histogram: range ({low}, {high}) must have min <= max")
            if low == high:
                low, high = low - 0.5, high + 0.5
            edges = _linear_edges(low, high, int(bins), values.dtype)
        else:
            edges = np.asarray(bins.numpy() if isinstance(bins, TensorMath) else bins)
            if edges.ndim != 1 or edges.size < 2:
                raise ValueError(f"histogram: bins as edges must be a 1-D tensor of at least 2 values, got shape "
                                 f"{edges.shape}")
            if edges.dtype != values.dtype:
                raise TypeError(f"histogram: the edges are {edges.dtype}, the input {values.dtype}; expected the same")
            if np.any(edges[1:] < edges[:-1]):
                raise ValueError("histogram: bin edges must be increasing")
        n = edges.size - 1
        keep = (values >= edges[0]) & (values <= edges[-1])
        position = np.minimum(np.searchsorted(edges, values[keep], side="right") - 1, n - 1)
        if weight is None:
            hist = np.bincount(position, minlength=n).astype(values.dtype)
        else:
            weights = np.asarray(weight.numpy() if isinstance(weight, TensorMath) else weight)
            if weights.shape != self.shape:
                raise ValueError(f"histogram: weight has shape {weights.shape}, expected the input's {self.shape}")
            hist = np.bincount(position, weights=weights.reshape(-1)[keep], minlength=n).astype(values.dtype)
        if density:  # (nothing counted: 0 / 0, NaN as in PyTorch)
            with np.errstate(invalid="ignore", divide="ignore"):
                hist = hist / hist.sum() / np.diff(edges)
        return Histogram(self._from_op(hist, False), self._from_op(edges, False))


    # ------------------------------------------------------------------ order statistics and counts
    def median(self, dim=None, keepdim=False):
        """The median, PyTorch's: of an even count the lower of the two middle values (not their
        mean); a NaN makes it NaN. With a dim, the pair (values, indices). The value is `gather`ed
        from where it is, so the gradient flows back to that element."""
        if dim is None:
            return self.reshape(-1).median(0).values
        dim = _axis(dim, self.ndim, "median", self.shape)
        values = self.numpy()
        if values.shape[dim] == 0:
            raise IndexError(f"median: dim {dim} of shape {self.shape} is empty")
        order = np.argsort(values, axis=dim, kind="stable")  # (NaN last)
        nans = np.isnan(values).sum(axis=dim, keepdims=True) if values.dtype.kind == "f" else 0
        n = values.shape[dim]
        k = np.where(nans > 0, n - nans, (n - 1) // 2)  # the middle, or the first NaN
        indices = np.take_along_axis(order, np.broadcast_to(k, order.shape[:dim] + (1,) + order.shape[dim + 1:]),
                                     axis=dim)
        out = self.gather(dim, indices)
        if not keepdim:
            out, indices = out.squeeze(dim), indices.squeeze(dim)
        return Median(out, self._from_op(indices, False))

    def kthvalue(self, k, dim=-1, keepdim=False):
        """The k-th smallest value along `dim` (k from 1) and where it is: the pair (values, indices);
        the value is gathered, so the gradient goes to that element."""
        dim = _axis(dim, self.ndim, "kthvalue", self.shape)
        n = self.shape[dim] if self.ndim else 1
        if not 1 <= k <= n:
            raise IndexError(f"kthvalue: k = {k} is out of range for {n} values along dim {dim} (1..{n})")
        order = self.argsort(dim, stable=True).numpy()
        indices = np.take(order, [k - 1], axis=dim)
        values = self.gather(dim, indices)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return KthValue(values, self._from_op(indices, False))

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """The q-th quantiles (q in [0, 1], a number or a 1-D tensor of them; then the result gets a
        first dim of len(q)), as `torch.quantile`: sorted values v along `dim` (all of them, flattened,
        without a dim), position p = q (n - 1), and v at p by `interpolation`: 'linear'
        v[⌊p⌋] + (p − ⌊p⌋)(v[⌈p⌉] − v[⌊p⌋]), 'lower', 'higher', 'nearest' or 'midpoint'. A NaN makes
        its row NaN. Built of sort and indexing, so gradients flow to the values used."""
        if interpolation not in ("linear", "lower", "higher", "nearest", "midpoint"):
            raise ValueError(f"quantile: interpolation must be 'linear', 'lower', 'higher', 'nearest' or 'midpoint', "
                             f"got {interpolation!r}")
        if self.dtype.kind != "f":
            raise TypeError(f"quantile: expected a float tensor, got {self.dtype}")
        qs = np.asarray(q.numpy() if isinstance(q, TensorMath) else q, dtype=np.float64)
        if qs.ndim > 1 or np.any((qs < 0) | (qs > 1)):
            raise ValueError(f"quantile: q must be a number or a 1-D tensor of numbers in [0, 1], got {qs.tolist()}")
        x, d = (self.reshape(-1), 0) if dim is None else (self, _axis(dim, self.ndim, "quantile", self.shape))
        n = x.shape[d]
        if n == 0:
            raise IndexError(f"quantile: dim {d} of shape {x.shape} is empty")
        ordered = x.sort(d).values  # (NaN last)
        p = qs.reshape(-1) * (n - 1)
        low, high = np.floor(p).astype(np.int64), np.ceil(p).astype(np.int64)
        if interpolation == "lower":
            high = low
        elif interpolation == "higher":
            low = high
        elif interpolation == "nearest":
            low = high = np.round(p).astype(np.int64)  # (half to even, as torch.round)
        v_low, v_high = ordered.index_select(d, low), ordered.index_select(d, high)
        weight = np.full_like(p, 0.5) if interpolation == "midpoint" else p - low
        shape = [1] * x.ndim
        shape[d] = len(p)
        out = v_low + (v_high - v_low) * weight.reshape(shape).astype(x.dtype)  # (m along d)
        if x.dtype.kind == "f":  # a NaN anywhere along d: NaN
            out = out.masked_fill(ordered.index_select(d, np.array([n - 1])).isnan(), float("nan"))
        out = out.movedim(d, 0) if x.ndim > 1 else out  # (m, ...)
        if keepdim:
            out = out.unsqueeze(d + 1) if dim is not None else out.reshape((len(p),) + (1,) * self.ndim)
        return out[0] if qs.ndim == 0 else out

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """The distinct values, in increasing order (outside the graph), as `torch.unique`; with
        return_inverse, also where each element's value is in them; with return_counts, how often each
        occurs. With a dim, the distinct slices along it."""
        values = self.numpy()
        result = np.unique(values, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
        if not (return_inverse or return_counts):
            return self._from_op(result, False)
        out = [self._from_op(result[0], False)]
        if return_inverse:
            inverse = result[1]
            out.append(self._from_op(inverse.reshape(values.shape if dim is None else -1).astype(np.int64), False))
        if return_counts:
            out.append(self._from_op(result[-1].astype(np.int64), False))
        return tuple(out)

    def bincount(self, weights=None, minlength=0):
        """How often each of 0, 1, 2, ... occurs in this 1-D tensor of integers >= 0 (int64), or the
        sums of their `weights` (in the weights' float dtype), at least `minlength` long."""
        values = self.numpy()
        if values.ndim != 1 or values.dtype.kind not in "iub" or (values.size and values.min() < 0):
            raise ValueError(f"bincount: expected a 1-D tensor of integers >= 0, got {values.dtype} of shape "
                             f"{values.shape}")
        w = None if weights is None else np.asarray(weights.numpy() if isinstance(weights, TensorMath) else weights)
        counts = np.bincount(values, weights=w, minlength=minlength)
        return self._from_op(counts.astype(np.int64 if w is None else w.dtype if w.dtype.kind == "f" else
                                           np.float64), False)


def _dims(op, dim, shape):
    """PyTorch's dim of amax, amin and norm (an int, a tuple or a list; () is every dim) as a tuple of
    axes, checked against `shape`, for errors that name `op`."""
    dim = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return ops._normalize_axes(None if dim == () else dim, shape, op)


def _dim_and_keepdim(op, dim, unbiased, keepdim, axis, keepdims):
    """dim and keepdim of var and std, by PyTorch's names or numpy's. A bool in unbiased's place is
    PyTorch's; a numpy user who writes x.var(0, True) meaning keepdims gets a clear error."""
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"{op}: the second argument is PyTorch's unbiased (True or False), got {unbiased!r}; "
                        "give numpy's ddof= or keepdims= by name")
    axis, keepdims = _pytorch_names(op, axis, keepdims or False, dim, keepdim)
    return axis, bool(keepdims)


def _correction(op, unbiased, correction, ddof):
    """The n - correction divisor of var and std, from PyTorch's unbiased= (True is correction=1) or
    correction=, or numpy's ddof=, given once; PyTorch's default is 1."""
    given = [f"{name}={value!r}" for name, value in (("unbiased", unbiased), ("correction", correction),
                                                       ("ddof", ddof)) if value is not None]
    if len(given) > 1:
        raise TypeError(f"{op}: got both {given[0]} and {given[1]}, which set the same divisor n - correction; "
                        "pass one")
    if unbiased is not None:
        return int(bool(unbiased))
    value = correction if correction is not None else ddof
    return 1 if value is None else value


def _operands(a, b, op):
    from .tensor import _operands  # (tensor.py imports this module)

    return _operands(a, b, op)


def _tuple(dim):
    """A dim given as a list is a tuple of axes."""
    return tuple(dim) if isinstance(dim, list) else dim


def _float_dtype(op, x, dtype):
    """x converted to dtype= (of mean and nanmean), which must be a float dtype, as PyTorch's."""
    if dtype is None:
        return x
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"{op}: dtype must be a float dtype (the mean of integers is not an integer), got {dtype}")
    return x.to(dtype)


def _check_probabilities(op, p):
    if p.size and not np.all((p >= 0) & (p <= 1)):  # (NaN fails too)
        raise ValueError(f"{op}: probabilities must be in [0, 1], got values from {np.nanmin(p)} to {np.nanmax(p)}"
                         f"{' and NaN' if np.isnan(p).any() else ''}")


def _random_bounds(dtype, args, kwargs):
    """[low, high) of random_(to), random_(from, to) or random_(from=, to=): to=None is the largest
    integer of the dtype (2^mantissa for a float dtype), included."""
    unknown = set(kwargs) - {"from", "to"}
    if unknown or len(args) > 2:
        raise TypeError(f"random_: takes from and to, got {len(args)} positional arguments and {sorted(kwargs)}")
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]  # random_(to)
    else:
        named = dict(zip(("from", "to"), args))
        for key, value in kwargs.items():
            if key in named:
                raise TypeError(f"random_: got {key} twice")
            named[key] = value
        low, high = named.get("from", 0), named.get("to")
    if high is None:
        if dtype.kind == "f":
            high = 2 ** (np.finfo(dtype).nmant + 1) + 1
        elif dtype == np.bool_:
            high = 2
        else:
            high = int(np.iinfo(dtype).max) + 1
    low, high = int(low), int(high)
    if low >= high:
        raise ValueError(f"random_: expects 'from' to be less than 'to', got from={low} >= to={high}")
    return low, high


def _concatenated_along(x, dim, prepend, append):
    """diff's prepend, x, append, joined along `dim`, in one dtype (a float one if any is float)."""
    from .creation import cat  # (creation.py imports tensor.py, which imports this module)

    parts = []
    for extra in (prepend, x, append):
        if extra is None:
            continue
        if not isinstance(extra, TensorMath):
            values = np.asarray(extra, dtype=x.dtype if x.dtype.kind == "f" and np.ndim(extra) == 0 else None)
            if values.ndim == 0:  # a number: one slice of it
                values = np.broadcast_to(values, x.shape[:dim] + (1,) + x.shape[dim + 1:])
            extra = x._from_op(np.array(values), False)
        if extra.ndim != x.ndim:
            raise ValueError(f"diff: prepend and append must have the input's number of dims ({x.ndim}), got shape "
                             f"{extra.shape}")
        parts.append(extra)
    dtypes = [p.dtype for p in parts]
    floats = [d for d in dtypes if d.kind == "f"]
    common = np.result_type(*floats) if floats else np.result_type(*dtypes)
    return cat([p.to(common) for p in parts], dim)


def _float_values(op, x):
    values = x.numpy()
    if values.dtype.kind != "f":
        raise TypeError(f"{op}: needs a float tensor, got {values.dtype} (shape {values.shape}); convert it with "
                        ".float()")
    return values


def _linear_edges(low, high, bins, dtype):
    """bins + 1 equally spaced edges from low to high in `dtype`, computed as PyTorch's linspace does
    (start + step i for the first half, end - step (bins - i) for the second, each product and sum
    rounded once, a fused multiply-add), so that the edges, and the bin of a value on an edge, are
    PyTorch's. The fused operation is done in a wider float: exact for float32, and for float64 where
    numpy's longdouble is wider than float64."""
    dtype = np.dtype(dtype)
    t = dtype.type
    start, end = t(low), t(high)
    step = (end - start) / t(bins)
    wide = np.longdouble if dtype == np.float64 else np.float64
    i = np.arange(bins + 1)
    first = wide(start) + wide(step) * i.astype(wide)
    second = wide(end) - wide(step) * (bins - i).astype(wide)
    return np.where(i < (bins + 1) // 2, first, second).astype(dtype)


def _copy_op():
    from .tensor import Copy  # (tensor.py imports this module)

    return Copy.apply
