"""Every differentiable op, one `Function` per op: `forward` on numpy arrays, and right below it
`backward`, headed by `rule`, the one-line calculus that justifies it. `rule` is a string rather
than a comment so that `minigrad.explain_backward` can print it beside the numbers as it walks.

`g` is the gradient of the loss with respect to the op's output; `backward` returns the gradient
with respect to each input. A gradient may come back shaped like the broadcast output: the
autograd walk sums it down to the input's shape (see `autograd.unbroadcast`).

The heavy ops (matmul, softmax, layer norm, gelu, cross-entropy) call `kernels`, which runs a numba
kernel or its numpy twin.
"""
import itertools
import math
import numbers
import warnings

import numpy as np

from . import kernels
from .autograd import Function, SliceGrad
from .random import rng

try:  # the error for an axis out of range: in numpy.exceptions from numpy 1.25, at the top level before
    from numpy.exceptions import AxisError
except ImportError:
    from numpy import AxisError

_NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def _in_dtype_of(a, y):
    """y in the float dtype of the input a. numpy < 2 computes a 0-d array (or a whole reduction)
    with a Python number in float64; numpy 2 keeps the array's dtype (NEP 50), and so does minigrad."""
    return y.astype(a.dtype, copy=False) if _NUMPY_1 and a.dtype.kind == "f" else y


def _as_rows(x):
    """x (..., n) as 2-D rows (R, n), R the product of the leading axes. (x.reshape(-1, n) cannot
    work out R when n is 0: any R times 0 is 0 elements.)"""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _binary(op, fn, a, b):
    try:
        return fn(a, b)
    except ValueError:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast together") from None


# ============================================================================ elementwise, two inputs
class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _binary("add", np.add, a, b)

    rule = "d(a+b)/da = d(a+b)/db = 1"

    @staticmethod
    def backward(ctx, g):
        return g, g

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g, g


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _binary("sub", np.subtract, a, b)

    rule = "d(a-b)/da = 1, d(a-b)/db = -1"

    @staticmethod
    def backward(ctx, g):
        return g, -g

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g, -g


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("mul", np.multiply, a, b)

    rule = "d(ab)/da = b, d(ab)/db = a"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = g * b if ctx.needs_input_grad[0] else None
        db = g * a if ctx.needs_input_grad[1] else None
        return da, db

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        a, b = ctx.inputs
        return g * b, g * a


class Div(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("div", np.divide, a, b)

    rule = "d(a/b)/da = 1/b, d(a/b)/db = -a/b^2"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = g / b if ctx.needs_input_grad[0] else None
        db = -g * a / (b * b) if ctx.needs_input_grad[1] else None
        return da, db

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        a, b = ctx.inputs
        return g / b, -g * a / (b * b)


class Pow(Function):
    """a ** b with a tensor exponent."""

    @staticmethod
    def forward(ctx, a, b):
        y = _binary("pow", np.power, a, b)
        ctx.save_for_backward(a, b, y)
        return y

    rule = "d(a^b)/da = b a^(b-1) (0 where b = 0: a^0 = 1 is constant), d(a^b)/db = a^b ln(a) (0 where a <= 0)"

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        da = None
        if ctx.needs_input_grad[0]:
            da = g * np.where(b == 0, 0, b * np.power(a, np.where(b == 0, 1, b) - 1))
        db = None
        if ctx.needs_input_grad[1]:
            safe = np.where(a > 0, a, 1)
            db = g * np.where(a > 0, y * np.log(safe), 0)
        return da, db


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("maximum", np.maximum, a, b)

    rule = "the larger input gets the gradient; a tie splits it evenly"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        share_a = (a > b) + 0.5 * (a == b)
        return g * share_a, g * (1 - share_a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        a, b = ctx.inputs
        share_a = (a > b) + 0.5 * (a == b)  # (a constant: the comparisons have no gradient)
        return g * share_a, g * (1 - share_a)


class Minimum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("minimum", np.minimum, a, b)

    rule = "the smaller input gets the gradient; a tie splits it evenly"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        share_a = (a < b) + 0.5 * (a == b)
        return g * share_a, g * (1 - share_a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        a, b = ctx.inputs
        share_a = (a < b) + 0.5 * (a == b)
        return g * share_a, g * (1 - share_a)


def _no_integer_zero_divisor(op, a, b):
    """Integer // and % by zero have no value (numpy would give 0 with a warning): refuse, as PyTorch."""
    if a.dtype.kind in "iub" and b.dtype.kind in "iub" and not np.all(b):
        raise ZeroDivisionError(f"{op}: integer division by zero (shapes {a.shape} and {b.shape})")


class FloorDivide(Function):
    """a // b, rounded down (toward -inf) as Python's // and PyTorch's floor_divide: -7 // 2 = -4."""

    @staticmethod
    def forward(ctx, a, b):
        _no_integer_zero_divisor("floor_divide", a, b)
        return _binary("floor_divide", np.floor_divide, a, b)

    rule = "floor(a/b) is a step function: its derivative is 0 wherever it exists"

    @staticmethod
    def backward(ctx, g):
        zero = np.zeros_like(g)
        return zero, zero


class Remainder(Function):
    """a % b = a - b * floor(a/b), with the sign of b as Python's % and PyTorch's remainder: -7 % 2 = 1."""

    @staticmethod
    def forward(ctx, a, b):
        _no_integer_zero_divisor("remainder", a, b)
        ctx.save_for_backward(a, b)
        return _binary("remainder", np.remainder, a, b)

    rule = "d(a - b floor(a/b))/da = 1, d/db = -floor(a/b) (floor is constant between its steps)"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        db = -g * np.floor_divide(a, b) if ctx.needs_input_grad[1] else None
        return g, db


# ============================================================================ elementwise, one input
class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return -a

    rule = "d(-a)/da = -1"

    @staticmethod
    def backward(ctx, g):
        return -g

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return -g


class PowScalar(Function):
    """a ** c with a constant exponent c."""

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return _in_dtype_of(a, np.power(a, exponent))

    rule = "d(a^c)/da = c a^(c-1) (0 for c = 0: a^0 = 1 whatever a is)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        c = ctx.exponent
        if c == 0:
            return np.zeros_like(g)  # a^0 = 1 whatever a is (0^-1 would make 0 * inf = NaN)
        return g * c * np.power(a, c - 1)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        (a,), c = ctx.inputs, ctx.exponent
        return g * 0.0 if c == 0 else g * c * a ** (c - 1)


class Exp(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = np.exp(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(e^a)/da = e^a"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * ctx.output


class Log(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log(a)

    rule = "d(ln a)/da = 1/a"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g / ctx.inputs[0]


class Sqrt(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = np.sqrt(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(sqrt a)/da = 1 / (2 sqrt a)"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g / (2 * y)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g / (2 * ctx.output)


class SqrtOfVariance(Function):
    """std = sqrt(var): sqrt, whose gradient at var = 0 (every value equal) is 0 instead of inf, as
    PyTorch's std: var's own gradient there is 0 (x - mean = 0), and inf * 0 would be NaN."""

    @staticmethod
    def forward(ctx, a):
        y = np.sqrt(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(sqrt v)/dv = 1 / (2 sqrt v), and 0 where v = 0 (the std of equal values: PyTorch's choice)"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(y > 0, g / (2 * y), 0).astype(y.dtype)


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.abs(a)

    rule = "d|a|/da = sign(a), taken as 0 at 0"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.sign(a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * ctx.inputs[0].sign()


class Sin(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.sin(a)

    rule = "d(sin a)/da = cos a"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.cos(a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * ctx.inputs[0].cos()


class Cos(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.cos(a)

    rule = "d(cos a)/da = -sin a"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return -g * np.sin(a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return -g * ctx.inputs[0].sin()


class Tanh(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = np.tanh(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(tanh a)/da = 1 - tanh^2 a"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * (1 - ctx.output * ctx.output)


class Sigmoid(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = _in_dtype_of(a, 0.5 * (1 + np.tanh(0.5 * a)))  # = 1 / (1 + e^-a), without overflow for large |a|
        ctx.save_for_backward(y)
        return y

    rule = "d(sigmoid a)/da = s (1 - s)"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        y = ctx.output
        return g * y * (1 - y)


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _in_dtype_of(a, kernels.relu_forward(a))  # max(a, 0), in one pass (kernels/relu.py)

    rule = "d max(a, 0)/da = 1 where a > 0, else 0"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return kernels.relu_backward(a, g)  # g * (a > 0)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * (ctx.inputs[0] > 0)


class GELU(Function):
    """x * Phi(x) (exact, with erf) or its tanh approximation; the kernel lives in kernels/gelu.py."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, approximate=False):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        return kernels.gelu_forward(a, approximate)

    rule = "d(x Phi(x))/dx = Phi(x) + x phi(x)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return kernels.gelu_backward(a, g, ctx.approximate)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        x = ctx.inputs[0]
        if ctx.approximate:  # y = x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3)
            c = math.sqrt(2 / math.pi)
            t = (c * (x + 0.044715 * x ** 3)).tanh()
            return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))
        phi = (-0.5 * x * x).exp() / math.sqrt(2 * math.pi)  # Phi(x) + x phi(x)
        return g * (0.5 * (1 + (x / math.sqrt(2)).erf()) + x * phi)


def check_clip_bounds(op, low, high):
    """PyTorch's rule: a clip with neither bound is a mistake, not a copy."""
    if low is None and high is None:
        raise RuntimeError(f"{op}: At least one of 'min' or 'max' must not be None")


class Clip(Function):
    @staticmethod
    def forward(ctx, a, low=None, high=None):
        check_clip_bounds("clip (clamp)", low, high)
        ctx.save_for_backward(a)
        ctx.low, ctx.high = low, high
        return _in_dtype_of(a, np.clip(a, low, high))

    rule = "d clip(a)/da = 1 where a was not clipped, else 0"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        inside = np.ones(a.shape, dtype=bool)
        if ctx.low is not None:
            inside &= a >= ctx.low
        if ctx.high is not None:
            inside &= a <= ctx.high
        return g * inside


class Log2(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log2(a)

    rule = "d(log2 a)/da = 1 / (a ln 2)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a * np.log(a.dtype.type(2)))


class Log10(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log10(a)

    rule = "d(log10 a)/da = 1 / (a ln 10)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a * np.log(a.dtype.type(10)))


class Log1p(Function):
    """log(1 + a), accurate for small a (where 1 + a would round away a's digits)."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log1p(a)

    rule = "d ln(1 + a)/da = 1 / (1 + a)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (1 + a)


class Expm1(Function):
    """e^a - 1, accurate for small a."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = np.expm1(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(e^a - 1)/da = e^a = y + 1"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y + 1)


class Rsqrt(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = 1 / np.sqrt(a)
        ctx.save_for_backward(y)
        return _in_dtype_of(a, y)

    rule = "d(a^(-1/2))/da = -1/2 a^(-3/2) = -y^3 / 2"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return -0.5 * g * y * y * y


_erf_elementwise = np.frompyfunc(math.erf, 1, 1)  # math.erf applied to each element (numpy has no erf)


class Erf(Function):
    """erf(x) = 2/sqrt(pi) * integral from 0 to x of e^(-t^2) dt, computed in float64 by math.erf."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.asarray(_erf_elementwise(a.astype(np.float64)), dtype=a.dtype)

    rule = "d erf(x)/dx = 2/sqrt(pi) e^(-x^2)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (2 / math.sqrt(math.pi)) * np.exp(-a * a)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * (2 / math.sqrt(math.pi)) * (-ctx.inputs[0] * ctx.inputs[0]).exp()


def _sigmoid(a):
    """1 / (1 + e^-a), without overflow for large |a|, in a's dtype."""
    return _in_dtype_of(a, 0.5 * (1 + np.tanh(0.5 * a)))


class SiLU(Function):
    """silu(x) = x * sigmoid(x) (also called swish)."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        s = _sigmoid(a)
        ctx.save_for_backward(a, s)
        return a * s

    rule = "d(x s)/dx = s + x s (1 - s), s = sigmoid(x)"

    @staticmethod
    def backward(ctx, g):
        a, s = ctx.saved_tensors
        return g * s * (1 + a * (1 - s))


class LeakyReLU(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, negative_slope=0.01):
        ctx.save_for_backward(a)
        ctx.slope = negative_slope
        return _in_dtype_of(a, np.where(a > 0, a, a * negative_slope))

    rule = "slope 1 where x > 0, negative_slope elsewhere (0 too)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.where(a > 0, 1.0, ctx.slope)


class PReLU(Function):
    """LeakyReLU with a learned slope w (broadcast against a: one per channel, or one for all)."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a, w):
        ctx.save_for_backward(a, w)
        return _in_dtype_of(a, np.where(a > 0, a, w * a))

    rule = "da = g where a > 0, g w elsewhere (w at a = 0, as PyTorch); dw = g a where a <= 0, summed"

    @staticmethod
    def backward(ctx, g):
        a, w = ctx.saved_tensors
        positive = a > 0
        zero = np.zeros((), dtype=g.dtype)
        return np.where(positive, g, g * w), np.where(positive, zero, g * a)


class Hardtanh(Function):
    """a clipped to [min_val, max_val] (ReLU6 is hardtanh(a, 0, 6))."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a, min_val=-1.0, max_val=1.0):
        ctx.inside = (a > min_val) & (a < max_val)
        return _in_dtype_of(a, np.clip(a, min_val, max_val))

    rule = "slope 1 strictly between the bounds, 0 outside and on them (PyTorch's choice; clip keeps 1 on them)"

    @staticmethod
    def backward(ctx, g):
        return np.where(ctx.inside, g, np.zeros((), dtype=g.dtype))


class Softplus(Function):
    """softplus(x) = log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (as PyTorch:
    there the two agree to float precision, and e^(beta x) could overflow)."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, beta=1.0, threshold=20.0):
        linear = a * beta > threshold
        ctx.save_for_backward(a, linear)
        ctx.beta = beta
        soft = np.log1p(np.exp(np.where(linear, 0, a * beta))) / beta  # (e^0 where linear: no overflow)
        return _in_dtype_of(a, np.where(linear, a, soft))

    rule = "d/dx log(1 + e^(bx)) / b = e^(bx) / (1 + e^(bx)) = sigmoid(bx); 1 on the linear part"

    @staticmethod
    def backward(ctx, g):
        a, linear = ctx.saved_tensors
        return g * np.where(linear, 1, _sigmoid(a * ctx.beta))


class ELU(Function):
    """elu(x) = x where x > 0, alpha (e^x - 1) elsewhere."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, alpha=1.0):
        ctx.save_for_backward(a)
        ctx.alpha = alpha
        return _in_dtype_of(a, np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0))))

    rule = "d elu(x)/dx = 1 for x > 0, alpha e^x for x <= 0"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.where(a > 0, 1, ctx.alpha * np.exp(np.minimum(a, 0)))


class NanToNum(Function):
    """NaN, +inf and -inf replaced by the numbers `nan`, `posinf` and `neginf` (None: the largest and
    the smallest finite number of the dtype), as numpy's and PyTorch's nan_to_num."""

    @staticmethod
    def forward(ctx, a, nan=0.0, posinf=None, neginf=None):
        ctx.finite = np.isfinite(a)
        return np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)

    rule = "finite elements pass unchanged: da = g there; the replaced ones are constants: da = 0"

    @staticmethod
    def backward(ctx, g):
        return np.where(ctx.finite, g, np.zeros((), dtype=g.dtype))


class Sign(Function):
    @staticmethod
    def forward(ctx, a):
        return np.sign(a)

    rule = "sign is constant on each side of 0: derivative 0 (taken as 0 at 0 too)"

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * 0.0


class Floor(Function):
    @staticmethod
    def forward(ctx, a):
        return np.floor(a) if a.dtype.kind == "f" else a.copy()  # an integer is its own floor

    rule = "a step function: derivative 0 between the steps (taken as 0 at them)"

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class Ceil(Function):
    @staticmethod
    def forward(ctx, a):
        return np.ceil(a) if a.dtype.kind == "f" else a.copy()  # an integer is its own ceiling

    rule = "a step function: derivative 0 between the steps (taken as 0 at them)"

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class Round(Function):
    """Round to `decimals` places, halves to even (as numpy and PyTorch: round(0.5) = 0, round(1.5) = 2)."""

    @staticmethod
    def forward(ctx, a, decimals=0):
        return np.round(a, decimals) if a.dtype.kind == "f" else a.copy()

    rule = "a step function: derivative 0 between the steps (taken as 0 at them)"

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class Cast(Function):
    @staticmethod
    def forward(ctx, a, dtype):
        ctx.source_dtype = a.dtype
        return a.astype(dtype)

    rule = "a cast is the identity on values: da = g, in a's dtype"

    @staticmethod
    def backward(ctx, g):
        return g.astype(ctx.source_dtype)


# ============================================================================ reductions

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g.to(ctx.source_dtype)


def _normalize_axes(axis, shape, op):
    """`axis` (None, an int or a tuple, negatives allowed) as a tuple of distinct axes >= 0."""
    ndim = len(shape)
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:  # a 0-d tensor has no axis at all
            raise AxisError(f"{op}: axis {ax} is out of range for a tensor of shape {shape} ({ndim} dims)")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis {axis} names an axis twice (tensor of shape {shape})")
    return tuple(out)


def _axis(axis, ndim, op, shape):
    """Check one axis (negatives count from the end) and return it as 0..ndim-1."""
    if not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise AxisError(f"{op}: axis {axis} is out of range for a tensor of shape {shape} ({len(shape)} dims)")
    return int(axis) % ndim


def _expand_reduced(g, shape, axes):
    """Put back the reduced axes (as size 1) so `g` broadcasts against the input of shape `shape`."""
    return g.reshape(tuple(1 if i in axes else n for i, n in enumerate(shape)))


class Sum(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "sum")
        # integers and bools sum to int64, as in PyTorch (numpy would sum unsigned ones to uint64)
        return np.sum(a, axis=ctx.axes, keepdims=keepdims, dtype=np.int64 if a.dtype.kind == "u" else None)

    rule = "every summed element contributes with weight 1: g copied back over the reduced axes"

    @staticmethod
    def backward(ctx, g):
        return np.broadcast_to(_expand_reduced(g, ctx.shape, ctx.axes), ctx.shape)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        kept = tuple(1 if i in ctx.axes else n for i, n in enumerate(ctx.shape))
        return g.reshape(kept).expand(ctx.shape)


class Mean(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "mean")
        ctx.count = math.prod([a.shape[i] for i in ctx.axes])
        return np.mean(a, axis=ctx.axes, keepdims=keepdims)

    rule = "d mean/da_i = 1/n"

    @staticmethod
    def backward(ctx, g):
        # (n = 0: the input has no elements, nor has its gradient: divide by 1)
        g = _expand_reduced(g, ctx.shape, ctx.axes) / max(ctx.count, 1)
        return np.broadcast_to(g, ctx.shape)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        kept = tuple(1 if i in ctx.axes else n for i, n in enumerate(ctx.shape))
        return g.reshape(kept).expand(ctx.shape) / max(ctx.count, 1)


class Var(Function):
    """Variance: divide by d = n - ddof. `Tensor.var` passes PyTorch's default, ddof = 1 (the
    unbiased estimate); a layer norm divides by n, ddof = 0.

    With no degrees of freedom left (n <= ddof, an empty axis included) d is 0, as in numpy and
    PyTorch: the variance is inf (NaN for 0/0), with a RuntimeWarning."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, ddof=1):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "var")
        n = math.prod([a.shape[i] for i in ctx.axes])
        ctx.divisor = max(n - ddof, 0)
        if ctx.divisor == 0:
            warnings.warn(f"var: {n} values with ddof={ddof} leave no degrees of freedom; the variance is inf "
                          "or NaN", RuntimeWarning, stacklevel=4)
        centered = a - np.mean(a, axis=ctx.axes, keepdims=True) if n else a  # (no values: nothing to center)
        ctx.save_for_backward(centered)
        with np.errstate(divide="ignore", invalid="ignore"):  # d = 0 gives inf or NaN, as warned
            return _in_dtype_of(a, np.sum(centered * centered, axis=ctx.axes, keepdims=keepdims) / ctx.divisor)

    rule = "d/da_i sum_j (a_j - mean)^2 / d = 2 (a_i - mean) / d  (the mean's own term sums to 0)"

    @staticmethod
    def backward(ctx, g):
        (centered,) = ctx.saved_tensors
        two_over_d = 2 / ctx.divisor if ctx.divisor else np.inf
        with np.errstate(invalid="ignore"):  # d = 0: inf, or NaN where a_i = mean
            return _expand_reduced(g, ctx.shape, ctx.axes) * two_over_d * centered


class Max(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, largest=True, op=None):
        name = op or ("max" if largest else "min")
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, name)
        empty = [i for i in ctx.axes if a.shape[i] == 0]
        if empty:  # (an empty axis that is not reduced is fine: no rows, no results)
            raise ValueError(f"{name}: axis {empty[0]} of the tensor of shape {a.shape} is empty: "
                             f"there is no {'largest' if largest else 'smallest'} value to take")
        y = (np.max if largest else np.min)(a, axis=ctx.axes, keepdims=True)
        ctx.save_for_backward(a, y)
        return y if keepdims else y.reshape([n for i, n in enumerate(a.shape) if i not in ctx.axes])

    rule = "only the extreme element moves the result; equal extremes share the gradient evenly"

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors
        winners = a == y
        return _expand_reduced(g, ctx.shape, ctx.axes) * winners / winners.sum(axis=ctx.axes, keepdims=True)


class IndexedMax(Function):
    """PyTorch's max(dim) and min(dim): the largest (smallest) value along `axis`, taken at the first
    position that holds it (the index that argmax gives), so that only that element gets a gradient."""

    @staticmethod
    def forward(ctx, a, axis, keepdims=False, largest=True):
        if a.shape[axis] == 0:
            raise ValueError(f"{'max' if largest else 'min'}: axis {axis} of the tensor of shape {a.shape} is empty: "
                             f"there is no {'largest' if largest else 'smallest'} value to take")
        ctx.shape, ctx.axis = a.shape, axis
        ctx.index = (np.argmax if largest else np.argmin)(a, axis=axis, keepdims=True)
        y = np.take_along_axis(a, ctx.index, axis)
        return y if keepdims else y.squeeze(axis)

    rule = "only the element picked moves the result (ties: the first one): da = g there, 0 elsewhere"

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        np.put_along_axis(grad, ctx.index, g.reshape(ctx.index.shape), ctx.axis)
        return grad


class Norm(Function):
    """The vector p-norm over `axis`: (sum |a_i|^p)^(1/p); p = inf is the largest |a_i|, -inf the
    smallest (PyTorch's `linalg.vector_norm`, which `Tensor.norm` calls for a number p and 'fro')."""

    @staticmethod
    def forward(ctx, a, p=2, axis=None, keepdims=False):
        ctx.shape, ctx.axes, ctx.p = a.shape, _normalize_axes(axis, a.shape, "norm"), p
        size = np.abs(a)
        if math.isinf(p):
            empty = [i for i in ctx.axes if a.shape[i] == 0]
            if empty:
                raise ValueError(f"norm: axis {empty[0]} of the tensor of shape {a.shape} is empty: p={p} takes "
                                 f"the {'largest' if p > 0 else 'smallest'} |value|, and there is none")
            n = (np.max if p > 0 else np.min)(size, axis=ctx.axes, keepdims=True)
        elif p == 1:
            n = np.sum(size, axis=ctx.axes, keepdims=True)
        elif p == 2:
            n = np.sqrt(np.sum(size * size, axis=ctx.axes, keepdims=True))
        else:
            n = np.power(np.sum(np.power(size, p), axis=ctx.axes, keepdims=True), 1 / p)
        n = _in_dtype_of(a, n)
        ctx.save_for_backward(a, n)
        return n if keepdims else n.reshape([k for i, k in enumerate(a.shape) if i not in ctx.axes])

    rule = ("d|a|_p/da_i = sign(a_i) (|a_i| / |a|_p)^(p-1): a_i / |a| for p = 2, sign(a_i) for p = 1; "
            "p = +-inf: sign(a_i) at the extreme |a_i| (ties share it evenly); 0 where |a|_p = 0")

    @staticmethod
    def backward(ctx, g):
        a, n = ctx.saved_tensors
        g, p = _expand_reduced(g, ctx.shape, ctx.axes), ctx.p
        if math.isinf(p):  # as max: only the extreme elements move the norm, equal ones share
            winners = np.abs(a) == n
            return g * np.sign(a) * winners / winners.sum(axis=ctx.axes, keepdims=True)
        if p == 1:
            return g * np.sign(a)
        # |a_i| / |a|_p is in [0, 1], so its power p - 1 >= 0 is finite; the zero vector (|a|_p = 0)
        # has no direction: 0 there, as PyTorch (not 0/0)
        ratio = np.abs(a) / np.where(n > 0, n, 1)
        return g * np.sign(a) * (ratio if p == 2 else np.power(ratio, p - 1))

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        (a,), p = ctx.inputs, ctx.p
        kept = tuple(1 if i in ctx.axes else n for i, n in enumerate(ctx.shape))
        g = g.reshape(kept)
        if p == 1:
            return g * a.sign()
        if p != 2:
            raise NotImplementedError(f"create_graph=True: the gradient of a {p:g}-norm is not written in "
                                      "tensor ops (the 1- and 2-norms are)")
        n = ctx.output.reshape(kept)
        return g * a / (n + (n == 0))  # (0 where the norm is 0, as backward)


class LogSumExp(Function):
    """log(sum(e^x)) over `axis`, computed as m + log(sum(e^(x - m))) with m the largest x, so that
    no e^x overflows. An empty axis gives -inf (the log of an empty sum, 0)."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, axis, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "logsumexp")
        m = np.max(a, axis=ctx.axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)  # a row of -inf (or an empty one) has nothing to shift by
        with np.errstate(divide="ignore"):  # log(0) = -inf for an empty row or a row of -inf
            y = _in_dtype_of(a, np.log(np.sum(np.exp(a - m), axis=ctx.axes, keepdims=True)) + m)
        ctx.save_for_backward(a, y)
        return y if keepdims else y.reshape([n for i, n in enumerate(a.shape) if i not in ctx.axes])

    rule = "d/dx_i log(sum_j e^x_j) = e^x_i / sum_j e^x_j = e^(x_i - y): the softmax of x"

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors
        return _expand_reduced(g, ctx.shape, ctx.axes) * np.exp(a - y)


class Prod(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "prod")
        ctx.save_for_backward(a)
        return np.prod(a, axis=ctx.axes, keepdims=keepdims)

    rule = "d(x_1 ... x_n)/dx_i = the product of the others = (product of those before i) (product of those after i)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if a.size == 0:
            return np.zeros(a.shape, dtype=g.dtype)  # no elements, no gradient
        # no division by x_i, so a zero among the x is no problem
        kept = [i for i in range(a.ndim) if i not in ctx.axes]
        moved = np.transpose(a, kept + list(ctx.axes))  # the reduced axes last, flattened into one
        n = math.prod([a.shape[i] for i in ctx.axes])
        rows = moved.reshape(moved.shape[: len(kept)] + (n,))
        ones = np.ones(rows.shape[:-1] + (1,), dtype=a.dtype)
        before = np.cumprod(np.concatenate([ones, rows[..., :-1]], axis=-1), axis=-1)
        after = np.flip(np.cumprod(np.flip(np.concatenate([rows[..., 1:], ones], axis=-1), -1), axis=-1), -1)
        others = np.transpose((before * after).reshape(moved.shape), np.argsort(kept + list(ctx.axes)))
        return _expand_reduced(g, ctx.shape, ctx.axes) * others


class CumSum(Function):
    """y_i = x_0 + ... + x_i along `axis`."""

    @staticmethod
    def forward(ctx, a, axis):
        ctx.axis = axis
        return np.cumsum(a, axis=axis)

    rule = "x_i appears in y_i, y_i+1, ...: dx_i = g_i + g_i+1 + ..., a cumulative sum from the end"

    @staticmethod
    def backward(ctx, g):
        return np.flip(np.cumsum(np.flip(g, ctx.axis), axis=ctx.axis), ctx.axis)


# ============================================================================ shape and indexing
class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape a tensor of shape {a.shape} ({a.size} elements) into {tuple(shape)}"
                + (f" ({int(np.prod(shape))} elements)" if -1 not in tuple(shape) else "")
            ) from None

    rule = "reshaping moves no values: the gradient is reshaped back"

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g.reshape(ctx.shape)


class Expand(Function):
    """Broadcast to a larger shape (a view, no copy). Its gradient is the sum over the copies,
    which the autograd walk does for every op, so backward just passes `g` on."""

    @staticmethod
    def forward(ctx, a, shape):
        shape = tuple(a.shape[i - len(shape) + a.ndim] if n == -1 else n for i, n in enumerate(shape))
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise ValueError(f"expand: a tensor of shape {a.shape} cannot be broadcast to {shape}") from None

    rule = "the gradient of a copy is a sum: g summed over the copies (by the walk's unbroadcast)"

    @staticmethod
    def backward(ctx, g):
        return g

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g  # (the walk sums it over the copies)


class Permute(Function):
    @staticmethod
    def forward(ctx, a, axes):
        n = max(a.ndim, 1)
        ctx.axes = [int(x) % n for x in axes]
        if sorted(ctx.axes) != list(range(a.ndim)):
            raise ValueError(f"permute: {tuple(axes)} is not an ordering of the {a.ndim} axes of shape {a.shape}")
        return a.transpose(ctx.axes)

    rule = "da = g with the permutation undone"

    @staticmethod
    def backward(ctx, g):
        undo = [0] * g.ndim  # the inverse permutation: output axis i is input axis axes[i]
        for i, axis in enumerate(ctx.axes):
            undo[axis] = i
        return g.transpose(undo)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        undo = [0] * len(ctx.axes)
        for i, axis in enumerate(ctx.axes):
            undo[axis] = i
        return g.permute(*undo)


class Contiguous(Function):
    """The same values laid out row-major in memory (a copy only if they are not already)."""

    @staticmethod
    def forward(ctx, a):
        return np.ascontiguousarray(a)

    rule = "the values are unchanged, so is their gradient: da = g"

    @staticmethod
    def backward(ctx, g):
        return g


class GetItem(Function):
    @staticmethod
    def forward(ctx, a, index):
        ctx.shape, ctx.index = a.shape, index
        try:
            return a[index]
        except IndexError as e:
            raise IndexError(f"getitem: {e} (tensor shape {a.shape})") from None

    rule = "da = g at the picked places, 0 elsewhere (an index picked twice gets both)"

    @staticmethod
    def backward(ctx, g):
        fancy = any(isinstance(x, np.ndarray) and x.dtype.kind in "iu" for x in ctx.index)
        if not fancy:
            return SliceGrad(ctx.index, g)  # (the walk adds it into place)
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        np.add.at(grad, ctx.index, g)  # an index may repeat: np.add.at adds every copy's gradient
        return grad

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return GetItemGrad.apply(g, index=ctx.index, shape=ctx.shape)


class GetItemGrad(Function):
    """GetItem's gradient as an op of its own, for create_graph=True: zeros of the input's shape
    with g added at `index` (twice where the index repeats)."""

    @staticmethod
    def forward(ctx, g, index, shape):
        ctx.index = index
        out = np.zeros(shape, dtype=g.dtype)
        np.add.at(out, index, g)
        return out

    rule = "it is linear in g: dg = G at the index (a GetItem)"

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.index]

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return GetItem.apply(g, index=ctx.index)


class Split(Function):
    """Consecutive pieces of `a` along `axis`, of the given sizes: views, and one node for all."""

    @staticmethod
    def forward(ctx, a, sizes, axis):
        ctx.input = a
        ends = list(itertools.accumulate(sizes))
        before = (slice(None),) * axis  # the index of each piece: all of the axes before `axis`, then its range
        ctx.indices = [before + (slice(end - size, end),) for size, end in zip(sizes, ends)]
        return tuple([a[index] for index in ctx.indices])

    rule = "each piece's gradient goes back where the piece came from"

    @staticmethod
    def backward(ctx, *grads):
        together = _pieces_of_one_array(ctx.input, ctx.indices, grads)
        if together is not None:  # the gradients already sit side by side, as the pieces do: no copy
            return together
        grad = np.empty_like(ctx.input)
        for index, g in zip(ctx.indices, grads):
            grad[index] = g
        return grad


def _pieces_of_one_array(a, indices, grads):
    """The gradient of ``a`` as a view, if every grads[i] sits in one array exactly where the piece
    a[indices[i]] sits in a's array (same offset, same strides), else None. (Kernels that write the
    gradients of q, k and v into one array make this so: kernels.attention.empty_like_parts.)"""
    whole, owner = getattr(grads[0], "base", None), a if a.base is None else a.base
    if not (isinstance(whole, np.ndarray) and isinstance(owner, np.ndarray)):
        return None
    if (whole.shape, whole.strides, whole.dtype) != (owner.shape, owner.strides, a.dtype):
        return None
    for index, g in zip(indices, grads):
        piece = a[index]
        if (getattr(g, "base", None) is not whole or g.strides != piece.strides
                or _address(g) - _address(whole) != _address(piece) - _address(owner)):
            return None
    return np.ndarray(a.shape, a.dtype, buffer=whole, offset=_address(a) - _address(owner), strides=a.strides)


def _address(array):
    return array.__array_interface__["data"][0]


class Unbind(Function):
    """The slices a[..., i, ...] along `axis`, each without that axis: views, and one node for all."""

    @staticmethod
    def forward(ctx, a, axis):
        ctx.input = a
        ctx.indices = [(slice(None),) * axis + (i,) for i in range(a.shape[axis])]
        return tuple(a[index] for index in ctx.indices)

    rule = "each slice's gradient goes back where the slice came from"

    @staticmethod
    def backward(ctx, *grads):
        grad = np.empty_like(ctx.input)  # laid out like the input, so a permuted input stays cheap
        for index, g in zip(ctx.indices, grads):
            grad[index] = g
        return grad


# ============================================================================ float32 meeting float64
def same_float_dtype(op, named):
    """The rule for two float dtypes in one op, decided here once, as in PyTorch:

    - Elementwise ops (+ - * / **, maximum, minimum, //, %), comparisons, where, cat and stack
      promote: they compute in numpy's `result_type`, float64 for float32 with float64, so
      `mg.eye(3) + mg.ones(3, 3, dtype="float64")` is float64. The float32 operand is cast first,
      in the graph (tensor._promoted), so the op sees one dtype and its backward works in float64;
      the cast's backward gives the float32 input its gradient in float32 (and the walk casts every
      gradient to its input's dtype as it accumulates, autograd._accumulate). An in-place op keeps
      its tensor's dtype: `w -= lr * g64` casts the right side to w's dtype, as PyTorch does.
    - matmul, linear, layer_norm and the fused attention kernel refuse a mix, as PyTorch's do
      ("expected both to have the same dtype"): this function is that refusal. Their kernels
      compute in one dtype, and a silent float64 copy of a float32 model's weights on every call
      would cost twice the memory and most of the speed; a float64 input reaching a float32 model
      is usually a numpy array that was not converted.

    named: [(name, array or Tensor or None)]; raises TypeError unless their float dtypes agree."""
    if len({x.dtype for _, x in named if x is not None}) == 1:
        return  # one dtype for all (the usual case): nothing can disagree
    floats = [(name, x.dtype) for name, x in named if x is not None and x.dtype.kind == "f"]
    if len({dtype for _, dtype in floats}) > 1:
        got = ", ".join(f"{name} {dtype}" for name, dtype in floats)
        raise TypeError(f"{op}: expected the same float dtype, got {got} (PyTorch refuses this mix too; "
                        "elementwise ops promote to float64). Convert with .float() or .double(), "
                        "or a model with model.float() or model.double()")


class Cat(Function):
    @staticmethod
    def forward(ctx, *arrays, axis=0):
        ctx.axis = axis
        ctx.splits = np.cumsum([a.shape[axis] for a in arrays])[:-1]
        try:
            return np.concatenate(arrays, axis=axis)
        except ValueError:
            raise ValueError(
                f"cat: shapes {[a.shape for a in arrays]} must match except along axis {axis}"
            ) from None

    rule = "each input gets its own slice of g back"

    @staticmethod
    def backward(ctx, g):
        return tuple(np.split(g, ctx.splits, axis=ctx.axis))

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        before, ends = (slice(None),) * ctx.axis, list(ctx.splits) + [g.shape[ctx.axis]]
        return tuple(g[before + (slice(start, end),)] for start, end in zip([0] + list(ctx.splits), ends))


class Stack(Function):
    @staticmethod
    def forward(ctx, *arrays, axis=0):
        ctx.axis = axis
        if len({a.shape for a in arrays}) > 1:
            raise ValueError(f"stack: all shapes must be equal, got {[a.shape for a in arrays]}")
        return np.stack(arrays, axis=axis)

    rule = "input i gets slice i of g along the new axis"

    @staticmethod
    def backward(ctx, g):
        return tuple(np.moveaxis(g, ctx.axis, 0))

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        before = (slice(None),) * ctx.axis
        return tuple(g[before + (i,)] for i in range(g.shape[ctx.axis]))


class Where(Function):
    @staticmethod
    def forward(ctx, a, b, condition):
        ctx.condition = condition
        try:
            return np.where(condition, a, b)
        except ValueError:
            raise ValueError(
                f"where: condition {condition.shape}, a {a.shape} and b {b.shape} do not broadcast together"
            ) from None

    rule = "da = g where the condition holds, db = g elsewhere"

    @staticmethod
    def backward(ctx, g):
        zero = np.zeros((), dtype=g.dtype)
        return np.where(ctx.condition, g, zero), np.where(ctx.condition, zero, g)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        zero = g * 0.0
        return g.where(ctx.condition, zero), zero.where(ctx.condition, g)


def _check_mask(op, mask, shape):
    """A mask must broadcast to the input's shape without enlarging it."""
    try:
        full = np.broadcast_shapes(mask.shape, shape)
    except ValueError:
        full = None
    if full != shape:
        raise ValueError(f"{op}: mask of shape {mask.shape} does not broadcast to the input's shape {shape}")


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, a, mask, value):
        _check_mask("masked_fill", mask, a.shape)
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be boolean, got {mask.dtype}")
        ctx.mask = mask
        return np.where(mask, np.asarray(value, dtype=a.dtype), a)

    rule = "filled places no longer depend on a: da = g, 0 where filled"

    @staticmethod
    def backward(ctx, g):
        return np.where(ctx.mask, np.zeros((), dtype=g.dtype), g)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g.masked_fill(ctx.mask, 0.0)


class Triangle(Function):
    """tril (lower=True) or triu of the last two axes, keeping diagonal `k` and below/above."""

    @staticmethod
    def forward(ctx, a, k=0, lower=True):
        if a.ndim < 2:
            raise ValueError(f"{'tril' if lower else 'triu'}: needs at least 2 dims, got shape {a.shape}")
        ctx.k, ctx.lower = k, lower
        return (np.tril if lower else np.triu)(a, k)

    rule = "zeroed entries pass no gradient: da = tril (or triu) of g"

    @staticmethod
    def backward(ctx, g):
        return (np.tril if ctx.lower else np.triu)(g, ctx.k)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g.tril(ctx.k) if ctx.lower else g.triu(ctx.k)


def _diagonal(shape, k):
    """The (rows, columns) positions of diagonal k of a matrix of `shape` (k > 0: above the main one)."""
    n = max(0, min(shape[0] + min(k, 0), shape[1] - max(k, 0)))
    i = np.arange(n)
    return i - min(k, 0), i + max(k, 0)


class Diag(Function):
    """PyTorch's diag: a 1-D input becomes the square matrix with it on diagonal k (0 elsewhere); a
    2-D input gives its diagonal k, as a 1-D copy."""

    @staticmethod
    def forward(ctx, a, k=0):
        if a.ndim not in (1, 2):
            raise ValueError(f"diag: expected a 1-D tensor (to put on a diagonal) or a 2-D one (to read a diagonal "
                             f"of), got shape {a.shape}")
        ctx.shape = a.shape
        if a.ndim == 2:
            ctx.where = _diagonal(a.shape, k)
            return a[ctx.where]
        side = a.shape[0] + abs(k)
        ctx.where = _diagonal((side, side), k)
        out = np.zeros((side, side), dtype=a.dtype)
        out[ctx.where] = a
        return out

    rule = "diag moves values between a vector and a diagonal: the gradient moves back (0 off the diagonal)"

    @staticmethod
    def backward(ctx, g):
        if len(ctx.shape) == 1:
            return g[ctx.where]
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        grad[ctx.where] = g
        return grad


def _index_grid(op, a_shape, index, dim, what="input"):
    """The numpy index that picks a[i_0, ..., index[i], ..., i_n] for every position i of `index`
    (PyTorch's gather/scatter rule along `dim`), after checking `index` against `a_shape`."""
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}: index must be an integer tensor, got {index.dtype}")
    if index.ndim != len(a_shape):
        raise ValueError(f"{op}: index of shape {index.shape} must have as many dims as the {what} "
                         f"{a_shape} ({len(a_shape)})")
    too_big = [d for d in range(index.ndim) if d != dim and index.shape[d] > a_shape[d]]
    if too_big:
        raise ValueError(f"{op}: index of shape {index.shape} is larger than the {what} {a_shape} along dim "
                         f"{too_big[0]}; expected index.shape[d] <= {what}.shape[d] for every d != dim ({dim})")
    if index.size and (index.min() < 0 or index.max() >= a_shape[dim]):
        bad = index.min() if index.min() < 0 else index.max()
        raise IndexError(f"{op}: index {int(bad)} is out of range for dim {dim} of the {what} {a_shape} "
                         f"(valid: 0..{a_shape[dim] - 1})")
    grid = list(np.indices(index.shape, sparse=True))  # grid[d] = the position along axis d, broadcastable
    grid[dim] = index.copy()  # (a copy: later changes to the index cannot reach backward)
    return tuple(grid)


class Gather(Function):
    """out[i][j] = a[index[i][j]][j] for dim 0 (a[i][index[i][j]] for dim 1, and so on): out has the
    shape of `index`, which has a's number of dims and is no larger than a except along `dim`."""

    @staticmethod
    def forward(ctx, a, index, dim):
        ctx.grid, ctx.shape = _index_grid("gather", a.shape, index, dim), a.shape
        return a[ctx.grid]

    rule = "each picked element gets its gradient; one picked twice gets both"

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        np.add.at(grad, ctx.grid, g)
        return grad


class ScatterAdd(Function):
    """A copy of `a` with src[i][j] added at [index[i][j]][j] for dim 0 (and so on for other dims):
    the reverse of gather. Only the part of src that `index` covers is used."""

    @staticmethod
    def forward(ctx, a, src, index, dim):
        if a.dtype != src.dtype:
            raise TypeError(f"scatter_add: the tensor is {a.dtype} but src is {src.dtype}; convert one")
        if index.ndim != src.ndim or any(n > m for n, m in zip(index.shape, src.shape)):
            raise ValueError(f"scatter_add: index of shape {index.shape} does not fit src {src.shape}; "
                             "expected as many dims, and index.shape[d] <= src.shape[d] for every d")
        ctx.grid = _index_grid("scatter_add", a.shape, index, dim)
        ctx.used = tuple(np.indices(index.shape, sparse=True))  # the part of src that is added
        ctx.src_shape = src.shape
        out = a.copy()
        np.add.at(out, ctx.grid, src[ctx.used])
        return out

    rule = "out = a + (src scattered): d out/da = 1; each used src element reads g where it was added"

    @staticmethod
    def backward(ctx, g):
        dsrc = None
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape, dtype=g.dtype)
            dsrc[ctx.used] = g[ctx.grid]
        return g, dsrc


class Scatter(Function):
    """A copy of `a` with src[i][j] written at [index[i][j]][j] for dim 0 (and so on): scatter_add,
    but writing instead of adding (an index given twice: the last write stays, as numpy's; PyTorch
    leaves that case undefined). `x.scatter_(1, y[:, None], 1.0)` writes one-hot rows."""

    @staticmethod
    def forward(ctx, a, src, index, dim):
        if a.dtype != src.dtype:
            raise TypeError(f"scatter: the tensor is {a.dtype} but src is {src.dtype}; convert one")
        if src.ndim == 0:
            src = np.broadcast_to(src, index.shape)
        if index.ndim != src.ndim or any(n > m for n, m in zip(index.shape, src.shape)):
            raise ValueError(f"scatter: index of shape {index.shape} does not fit src {src.shape}; expected as "
                             "many dims, and index.shape[d] <= src.shape[d] for every d")
        ctx.grid = _index_grid("scatter", a.shape, index, dim)
        ctx.used = tuple(np.indices(index.shape, sparse=True))  # the part of src that is written
        ctx.src_shape = src.shape
        out = a.copy()
        out[ctx.grid] = src[ctx.used]
        return out

    rule = "written places forget a: da = g with 0 there; each used src element reads g where it was written"

    @staticmethod
    def backward(ctx, g):
        da = dsrc = None
        if ctx.needs_input_grad[0]:
            da = g.copy()
            da[ctx.grid] = 0
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape, dtype=g.dtype)
            dsrc[ctx.used] = g[ctx.grid]
        return da, dsrc


class Flip(Function):
    """The elements in reverse order along the axes `dims` (a copy, as in PyTorch)."""

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return np.flip(a, dims).copy()

    rule = "flipping moves values: the gradient is flipped back"

    @staticmethod
    def backward(ctx, g):
        return np.flip(g, ctx.dims)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g.flip(ctx.dims)


class Roll(Function):
    """The elements shifted by `shifts` places along `dims`, those pushed off the end coming back at
    the start (numpy's roll; dims=None: over the flattened tensor, then back to its shape)."""

    @staticmethod
    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return np.roll(a, shifts, dims)

    rule = "rolling moves values: the gradient is rolled back, by -shifts"

    @staticmethod
    def backward(ctx, g):
        back = tuple(-s for s in ctx.shifts) if isinstance(ctx.shifts, tuple) else -ctx.shifts
        return np.roll(g, back, ctx.dims)


class Repeat(Function):
    """PyTorch's repeat (numpy's tile): `sizes[d]` copies of the tensor along axis d, one after the
    other; extra leading sizes add new axes in front."""

    @staticmethod
    def forward(ctx, a, sizes):
        ctx.shape = a.shape
        return np.tile(a, sizes)

    rule = "the gradient of a copy is a sum: dx = g summed over the copies"

    @staticmethod
    def backward(ctx, g):
        # output index k * n + i along an axis of size n is copy k of element i: view g as
        # (copies, n) per axis and sum over the copies (the gradient of a copy is a sum)
        shape = (1,) * (g.ndim - len(ctx.shape)) + ctx.shape
        pairs = [m for n, total in zip(shape, g.shape) for m in (total // n if n else 0, n)]
        return g.reshape(pairs).sum(axis=tuple(range(0, 2 * g.ndim, 2))).reshape(ctx.shape)


# ============================================================================ matrix product
def _mm(a, b, bias=None):
    """a @ b (+ bias): the matmul kernel for float operands, numpy for any others."""
    if a.dtype == b.dtype == (a.dtype if bias is None else bias.dtype) and a.dtype in (np.float32, np.float64):
        return kernels.gemm(a, b, bias)
    return np.matmul(a, b) if bias is None else np.matmul(a, b) + bias


def _mm_pair(a1, b1, a2, b2, rows=None):
    """(a1 @ b1, a2 @ b2, the sum of the rows of `rows` or None) for 2-D operands: a layer's two
    backward products and its bias gradient, side by side on two threads when the kernel finds
    that worth it (``kernels.gemm_pair``)."""
    if a1.dtype == b1.dtype == a2.dtype == b2.dtype and a1.dtype in (np.float32, np.float64):
        return kernels.gemm_pair(a1, b1, a2, b2, rows)
    return _mm(a1, b1), _mm(a2, b2), None if rows is None else rows.sum(axis=0)


class MatMul(Function):
    """(..., M, K) @ (..., K, N) -> (..., M, N), batch axes broadcast as in numpy.

    1-D operands are promoted by `Tensor.matmul` before they get here."""

    @staticmethod
    def forward(ctx, a, b):
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(
                f"matmul: inner dimensions differ: {a.shape} @ {b.shape} "
                f"(a.shape[-1] = {a.shape[-1]}, b.shape[-2] = {b.shape[-2]})"
            )
        ctx.save_for_backward(a, b)
        if b.ndim == 2:  # (..., M, K) @ (K, N): fold the batch into rows, one 2-D product
            out = _mm(_as_rows(a), b)
            return out.reshape(a.shape[:-1] + b.shape[-1:])
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ValueError(f"matmul: batch dimensions of {a.shape} and {b.shape} do not broadcast") from None
        return _mm(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))

    rule = "dA = G B^T, dB = A^T G"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = db = None
        if b.ndim == 2:
            g2 = _as_rows(g)
            if ctx.needs_input_grad[0] and ctx.needs_input_grad[1]:
                da, db, _ = _mm_pair(g2, b.T, _as_rows(a).T, g2)
                return da.reshape(a.shape), db
            if ctx.needs_input_grad[0]:
                da = _mm(g2, b.T).reshape(a.shape)
            if ctx.needs_input_grad[1]:
                db = _mm(_as_rows(a).T, g2)
            return da, db
        batch = g.shape[:-2]
        if ctx.needs_input_grad[0]:
            da = _mm(g, np.broadcast_to(b, batch + b.shape[-2:]).swapaxes(-1, -2))
        if ctx.needs_input_grad[1]:
            db = _mm(np.broadcast_to(a, batch + a.shape[-2:]).swapaxes(-1, -2), g)
        return da, db

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        a, b = ctx.inputs
        if b.ndim == 2:  # (..., M, K) @ (K, N): the batch folded into rows
            return g @ b.t(), a.reshape(-1, a.shape[-1]).t() @ g.reshape(-1, g.shape[-1])
        return g @ b.transpose(-1, -2), a.transpose(-1, -2) @ g  # (broadcast batches: summed by the walk)


def _spell_out_ellipsis(equation, inputs, output, arrow, shapes):
    """einsum's "..." (the dims no letter names, "...chw,c->...hw") written out as letters of their
    own: capitals the equation does not use, lined up from the right as broadcasting lines up
    dims, so an operand with fewer of them takes the last ones. Without "->" they lead the result."""
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} names {len(inputs)} operands, but got {len(shapes)}")
    if any(term.count("...") > 1 or term.replace("...", "").count(".") for term in inputs + [output]):
        raise ValueError(f"einsum: '...' may appear once per operand, as three dots (equation {equation!r})")
    counts = [len(shape) - len(term.replace("...", "")) if "..." in term else 0 for term, shape in zip(inputs, shapes)]
    if min(counts, default=0) < 0:
        raise ValueError(f"einsum: an operand has fewer dims than its letters name (equation {equation!r}, "
                         f"shapes {[tuple(s) for s in shapes]})")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation]
    dims = free[:max(counts, default=0)]
    inputs = [term.replace("...", "".join(dims[len(dims) - n:])) for term, n in zip(inputs, counts)]
    if arrow:
        return inputs, output.replace("...", "".join(dims)), arrow
    once = sorted(c for c in set("".join(inputs)) if c not in dims and "".join(inputs).count(c) == 1)
    return inputs, "".join(dims) + "".join(once), "->"


def parse_einsum(equation, shapes):
    """The letters of each operand and of the result of an einsum `equation` on operands of `shapes`,
    checked: (["ij", "jk"], "ik") for "ij,jk->ik". Without "->", the result is every letter that
    appears once, in alphabetical order (PyTorch's and numpy's rule)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation comes first, as a string such as 'ij,jk->ik', got {equation!r}")
    lhs, arrow, output = equation.replace(" ", "").partition("->")
    inputs = lhs.split(",")
    if "." in equation:
        inputs, output, arrow = _spell_out_ellipsis(equation, inputs, output, arrow, shapes)
        lhs = ",".join(inputs)
    if not all(c.isascii() and c.isalpha() for c in lhs.replace(",", "") + output):
        raise ValueError(f"einsum: the equation {equation!r} may hold only letters, ',' and '->'")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} names {len(inputs)} operands, but got {len(shapes)}")
    if not arrow:
        output = "".join(sorted(c for c in set(lhs) if c != "," and lhs.count(c) == 1))
    sizes = {}
    for i, (letters, shape) in enumerate(zip(inputs, shapes)):
        if len(letters) != len(shape):
            raise ValueError(f"einsum: operand {i} has shape {shape} ({len(shape)} dims), but its letters "
                             f"{letters!r} name {len(letters)} (equation {equation!r})")
        if len(set(letters)) != len(letters):
            raise ValueError(f"einsum: operand {i}'s letters {letters!r} repeat a letter (a diagonal or a trace), "
                             "which is not supported; take the diagonal first with diag(), or multiply by eye()")
        for c, n in zip(letters, shape):
            if sizes.setdefault(c, n) != n and 1 not in (n, sizes[c]):
                raise ValueError(f"einsum: letter {c!r} has size {sizes[c]} in one operand and {n} in operand {i} "
                                 f"(shapes {[tuple(s) for s in shapes]}, equation {equation!r}); expected equal "
                                 "sizes, or 1")
            sizes[c] = n if sizes[c] == 1 else sizes[c]
    if len(set(output)) != len(output) or any(c not in sizes for c in output):
        raise ValueError(f"einsum: the result's letters {output!r} must be distinct letters of the operands "
                         f"(equation {equation!r})")
    return inputs, output


class Einsum(Function):
    """Einstein summation: the product of the operands at every combination of the letters, summed
    over the letters missing from `output` (parse_einsum reads the equation). A letter of size 1 in
    one operand broadcasts against the others."""

    @staticmethod
    def forward(ctx, *arrays, inputs, output):
        sizes = {}
        for letters, a in zip(inputs, arrays):
            for c, n in zip(letters, a.shape):
                sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]  # (a size of 1 broadcasts)
        arrays = [np.broadcast_to(a, [sizes[c] for c in letters]) for letters, a in zip(inputs, arrays)]
        ctx.inputs_letters, ctx.output = inputs, output
        ctx.save_for_backward(*arrays)
        return np.einsum(",".join(inputs) + "->" + output, *arrays, optimize=len(arrays) > 2)

    rule = ("d out/d a_i = the product of the other operands: da_i = einsum of g with them, back to a_i's "
            "letters (copied along a letter only a_i has, which the forward summed)")

    @staticmethod
    def backward(ctx, g):
        arrays, grads = ctx.saved_tensors, []
        for i, (letters, a) in enumerate(zip(ctx.inputs_letters, arrays)):
            if not ctx.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [(ls, x) for j, (ls, x) in enumerate(zip(ctx.inputs_letters, arrays)) if j != i]
            elsewhere = set(ctx.output).union(*(ls for ls, _ in others))
            kept = "".join(c for c in letters if c in elsewhere)
            d = np.einsum(",".join([ctx.output] + [ls for ls, _ in others]) + "->" + kept, g,
                          *(x for _, x in others), optimize=len(others) > 1)
            # a letter of a_i alone was summed over: each of its elements gets the same gradient
            d = d.reshape([n if c in elsewhere else 1 for c, n in zip(letters, a.shape)])
            grads.append(np.broadcast_to(d, a.shape))  # (the walk sums a broadcast operand's copies)
        return tuple(grads)


class Linear(Function):
    """y = x W^T + b for x (..., in), W (out, in), b (out,): one node instead of three."""

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        same_float_dtype("linear", [("input", x), ("weight", weight), ("bias", bias)])
        if x.shape[-1] != weight.shape[1]:
            raise ValueError(
                f"linear: input of shape {x.shape} has {x.shape[-1]} features, "
                f"but the weight {weight.shape} expects {weight.shape[1]}"
            )
        if bias is not None and bias.shape != weight.shape[:1]:
            raise ValueError(f"linear: bias of shape {bias.shape} does not fit the weight {weight.shape}; "
                             f"expected ({weight.shape[0]},), one number per output feature")
        y = _mm(_as_rows(x), weight.T, bias)  # the bias is where the sums start
        ctx.save_for_backward(x, weight)
        return y.reshape(x.shape[:-1] + (weight.shape[0],))

    rule = "dx = g W, dW = g^T x, db = sum of g over the rows"

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        g2 = _as_rows(g)
        needs_db = len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2]
        db = None
        if ctx.needs_input_grad[0] and ctx.needs_input_grad[1]:  # (equal work: side by side on two threads)
            dx, dw, db = _mm_pair(g2, weight, g2.T, _as_rows(x), g2 if needs_db else None)
            dx = dx.reshape(x.shape)
        else:
            dx = _mm(g2, weight).reshape(x.shape) if ctx.needs_input_grad[0] else None
            dw = _mm(g2.T, _as_rows(x)) if ctx.needs_input_grad[1] else None
        if needs_db and db is None:
            db = kernels.sum_rows(g2)
        return (dx, dw) if len(ctx.needs_input_grad) == 2 else (dx, dw, db)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        x, weight = ctx.inputs[:2]
        rows = g.reshape(-1, g.shape[-1])
        grads = (g @ weight, rows.t() @ x.reshape(-1, x.shape[-1]))
        return grads if len(ctx.inputs) == 2 else grads + (rows.sum(0),)


class RNNTanhCell(Function):
    """One step of an Elman RNN, as one node (Elman 1990; PyTorch's nn.RNNCell):

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)

    x (..., I), h (..., H), W_ih (H, I), W_hh (H, H), b_ih and b_hh (H,) (both or neither)
    -> h' (..., H). nn.RNNCell and nn.RNN with nonlinearity "tanh" run it; the backward through
    time is the autograd walk calling this backward once per step."""

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih=None, b_hh=None):
        hidden = w_hh.shape[0]
        if w_ih.shape[0] != hidden or w_hh.shape != (hidden, hidden) or x.shape[-1:] != w_ih.shape[1:]:
            raise ValueError(f"rnn_tanh_cell: input {x.shape} and weights W_ih {w_ih.shape}, W_hh {w_hh.shape} do "
                             f"not fit: expected W_ih (H, I) and W_hh (H, H) with I = the input's last axis")
        if h.shape != x.shape[:-1] + (hidden,):
            raise ValueError(f"rnn_tanh_cell: hidden state of shape {h.shape} does not fit the input {x.shape}; "
                             f"expected {x.shape[:-1] + (hidden,)}")
        if (b_ih is None) != (b_hh is None) or (b_ih is not None and not b_ih.shape == b_hh.shape == (hidden,)):
            raise ValueError(f"rnn_tanh_cell: expected both biases of shape ({hidden},) or neither")
        bias = None if b_ih is None else b_ih + b_hh
        a = _mm(_as_rows(x), w_ih.T, bias) + _mm(_as_rows(h), w_hh.T)  # (R, H), R = rows of the batch
        y = np.tanh(a).reshape(h.shape)
        ctx.save_for_backward(x, h, w_ih, w_hh, y)
        return y

    rule = ("a = x W_ih^T + b_ih + h W_hh^T + b_hh, y = tanh a:  da = g (1 - y^2);  dx = da W_ih,  "
            "dh = da W_hh,  dW_ih = da^T x,  dW_hh = da^T h,  db_ih = db_hh = da summed over the rows")

    @staticmethod
    def backward(ctx, g):
        x, h, w_ih, w_hh, y = ctx.saved_tensors
        needs = ctx.needs_input_grad
        da = _as_rows(g * (1 - y * y))  # (R, H): through the tanh first
        dx = _mm(da, w_ih).reshape(x.shape) if needs[0] else None
        dh = _mm(da, w_hh).reshape(h.shape) if needs[1] else None
        dw_ih = _mm(da.T, _as_rows(x)) if needs[2] else None
        dw_hh = _mm(da.T, _as_rows(h)) if needs[3] else None
        if len(needs) == 4:
            return dx, dh, dw_ih, dw_hh
        db = kernels.sum_rows(da) if needs[4] or needs[5] else None
        return dx, dh, dw_ih, dw_hh, db, db


# ============================================================================ softmax family
def _rows(x, axis):
    """View `x` with `axis` moved last, as 2-D rows (R, N); also the moved shape."""
    moved = x if axis in (-1, x.ndim - 1) else np.moveaxis(x, axis, -1)  # (moveaxis costs microseconds)
    return _as_rows(moved) if moved.ndim != 2 else moved, moved.shape


def _unrows(rows, moved_shape, axis):
    moved = rows.reshape(moved_shape)
    return moved if axis in (-1, len(moved_shape) - 1) else np.moveaxis(moved, -1, axis)


def _rowwise_forward(ctx, a, axis, kernel):
    rows, ctx.moved_shape = _rows(a, axis)
    ctx.axis = axis
    y = kernel(rows)
    ctx.save_for_backward(y)
    return _unrows(y, ctx.moved_shape, axis)


def _rowwise_backward(ctx, g, kernel):
    (y,) = ctx.saved_tensors
    return _unrows(kernel(y, _rows(g, ctx.axis)[0]), ctx.moved_shape, ctx.axis)


class Softmax(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, axis=-1):
        return _rowwise_forward(ctx, a, axis, kernels.softmax_forward)  # y = e^x / sum(e^x)

    rule = "dx = y * (g - sum(g * y))"

    @staticmethod
    def backward(ctx, g):
        return _rowwise_backward(ctx, g, kernels.softmax_backward)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        y = ctx.output
        return y * (g - (g * y).sum(ctx.axis, keepdims=True))


class LogSoftmax(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, axis=-1):
        return _rowwise_forward(ctx, a, axis, kernels.log_softmax_forward)  # y = x - log(sum(e^x))

    rule = "dx = g - e^y sum(g)"

    @staticmethod
    def backward(ctx, g):
        return _rowwise_backward(ctx, g, kernels.log_softmax_backward)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g - ctx.output.exp() * g.sum(ctx.axis, keepdims=True)


class MaskedSoftmax(Function):
    """softmax(scale * x) over the last axis, counting only entries where `mask` is True; the
    others get weight 0. This is attention's softmax(Q K^T / sqrt(d_k) + M) in one pass, with
    M = 0 where allowed and -inf where not. mask: bool, broadcastable to x's shape (or None)."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a, mask=None, scale=1.0):
        if mask is not None:
            _check_mask("softmax", mask, a.shape)
        ctx.scale, ctx.shape = scale, a.shape
        if a.size == 0:  # no rows, or rows of nothing: no weights to compute
            ctx.save_for_backward(a)
            return a.copy()
        rows, mask_rows = _as_rows(a), None
        if mask is not None:
            if mask.ndim >= 2 and mask.shape[-2:] == a.shape[-2:] and all(d == 1 for d in mask.shape[:-2]):
                mask_rows = _as_rows(mask)  # one (T_q, T_k) mask shared by every leading index
            else:
                mask_rows = _as_rows(np.ascontiguousarray(np.broadcast_to(mask, a.shape)))
        y = kernels.masked_softmax_forward(rows, mask_rows, scale)
        ctx.save_for_backward(y)
        return y.reshape(a.shape)

    rule = "dx = scale * y * (g - sum(g * y)); masked entries have y = 0 and get 0"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if y.size == 0:
            return np.zeros(ctx.shape, g.dtype)
        return kernels.masked_softmax_backward(y, g.reshape(y.shape), ctx.scale).reshape(ctx.shape)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        y = ctx.output  # (masked entries have y = 0: they get 0)
        return ctx.scale * y * (g - (g * y).sum(-1, keepdims=True))


def _broadcast(x, shape):
    """np.broadcast_to(x, shape), or x itself if it has that shape already (the call costs microseconds)."""
    return x if x.shape == shape else np.broadcast_to(x, shape)


def _as_4d(x):
    """(..., T, d) as (n1, n2, T, d): views for 2 to 4 dims, a reshape (a copy if needed) above."""
    if x.ndim <= 4:
        return x.reshape((1,) * (4 - x.ndim) + x.shape)
    return x.reshape((-1,) + x.shape[-3:])


class ScaledDotProductAttention(Function):
    """Attention(Q, K, V) = softmax(scale * Q K^T, blocked keys at -inf) V in one node.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v); the leading axes
    broadcast. mask: bool, broadcastable to (..., T_q, T_k), True where a query may attend to a key.
    The same math as matmul, masked softmax and matmul in a row (transformer/attention.py spells it
    out), in one kernel: the scores never leave it, and keys past the last allowed one are skipped.
    """

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, q, k, v, mask=None, scale=None):
        for name, x in (("q", q), ("k", k), ("v", v)):
            if x.ndim < 2:
                raise ValueError(f"scaled_dot_product_attention: {name} must be (..., T, d), got shape {x.shape}")
        same_float_dtype("scaled_dot_product_attention", [("q", q), ("k", k), ("v", v)])
        if k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
            raise ValueError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit: "
                             "need q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)")
        batch = q.shape[:-2]
        if not batch == k.shape[:-2] == v.shape[:-2]:
            try:
                batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
            except ValueError:
                raise ValueError(f"scaled_dot_product_attention: the leading axes of q {q.shape}, k {k.shape} "
                                 f"and v {v.shape} do not broadcast") from None
        scores_shape = batch + (q.shape[-2], k.shape[-2])
        if mask is not None:
            if mask.dtype != np.bool_:
                raise TypeError("scaled_dot_product_attention: mask must be bool (True = may attend), "
                                f"got {mask.dtype}")
            _check_mask("scaled_dot_product_attention", mask, scores_shape)
            mask = _as_4d(np.broadcast_to(mask, scores_shape))
        q4, k4, v4 = (_as_4d(_broadcast(x, batch + x.shape[-2:])) for x in (q, k, v))
        ctx.scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else float(scale)
        out, weights = kernels.attention_forward(q4, k4, v4, mask, ctx.scale)
        ctx.save_for_backward(q4, k4, v4, weights)
        ctx.batch, ctx.mask = batch, mask
        return out.reshape(batch + out.shape[-2:])

    rule = "dV = W^T g;  dS = scale W (g V^T - rowsum(W * g V^T));  dQ = dS K;  dK = dS^T Q"

    @staticmethod
    def backward(ctx, g):
        q4, k4, v4, weights = ctx.saved_tensors
        g4 = g.reshape(q4.shape[:3] + v4.shape[3:])
        grads = kernels.attention_backward(g4, q4, k4, v4, weights, ctx.mask, ctx.scale)
        return tuple(d.reshape(ctx.batch + d.shape[-2:]) for d in grads)


# ============================================================================ layers' fused ops
class LayerNorm(Function):
    """Normalize over the last axis, then scale and shift: y = (x - mean) / sqrt(var + eps) * w + b."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        same_float_dtype("layer_norm", [("input", x), ("weight", weight), ("bias", bias)])
        d = x.shape[-1]
        if weight.shape != (d,) or bias.shape != (d,):
            raise ValueError(
                f"layer_norm: weight {weight.shape} and bias {bias.shape} must have shape ({d},) "
                f"to match the last axis of the input {x.shape}"
            )
        y, mean, rstd = kernels.layer_norm_forward(x.reshape(-1, d), weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.eps = eps
        return y.reshape(x.shape)

    rule = ("xhat = (x - mean) rstd, gh = g w:  dx = rstd (gh - mean(gh) - xhat mean(gh xhat)),  "
            "dw = sum(g xhat),  db = sum(g)")

    @staticmethod
    def backward(ctx, g):
        x, weight, mean, rstd = ctx.saved_tensors
        d = x.shape[-1]
        dx, dw, db = kernels.layer_norm_backward(g.reshape(-1, d), x.reshape(-1, d), weight, mean, rstd)
        return dx.reshape(x.shape), dw, db

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        x, weight = ctx.inputs[:2]
        mean = x.mean(-1, keepdims=True)
        rstd = 1 / ((x - mean).square().mean(-1, keepdims=True) + ctx.eps).sqrt()
        xhat, gh = (x - mean) * rstd, g * weight
        dx = rstd * (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True))
        rows = tuple(range(x.ndim - 1))
        return dx, (g * xhat).sum(rows), g.sum(rows)


def _per_channel(a, ndim):
    """A (C,) array shaped (1, C, 1, ...) to broadcast against an input of `ndim` dims."""
    return a.reshape((1, -1) + (1,) * (ndim - 2))


class BatchNorm(Function):
    """Batch normalization with the batch's own statistics (training mode), in one op:

        mean, var = mean and variance (divided by n) of x over (N, *), per channel
        xhat = (x - mean) / sqrt(var + eps)             y = xhat * weight + bias

    x (N, C, *), weight and bias (C,) -> y shaped like x. n = N * (product of the spatial dims),
    the number of values each channel's statistics average."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        y, xhat, rstd = kernels.batch_norm_forward(x, weight, bias, eps)  # (kernels/batchnorm.py)
        ctx.save_for_backward(xhat, weight, rstd)  # rstd (1, C, 1, ...)
        return y

    rule = ("xhat = (x - mean) rstd per channel over its n values, gh = g w:  "
            "dx = rstd/n (n gh - sum(gh) - xhat sum(gh xhat)),  dw = sum(g xhat),  db = sum(g)")

    @staticmethod
    def backward(ctx, g):
        xhat, weight, rstd = ctx.saved_tensors
        # mean and var depend on every x of the channel: the two sums carry their share back
        dx, dw, db = kernels.batch_norm_backward(g, xhat, weight, rstd)
        return dx, (dw if ctx.needs_input_grad[1] else None), (db if ctx.needs_input_grad[2] else None)


class RunningStatistics(Function):
    """Batch and instance norm's running statistics, updated in place while training:

        running = (1 - momentum) running + momentum statistic(x)      (in float64, stored in running's dtype)

    for each array of `running` (name -> array, e.g. running_mean and running_var) and the matching
    float64 array of `statistics(x)`. It returns an empty array and passes no gradient: the loss does
    not depend on the running statistics. It is an op, rather than Python after the forward, so that a
    recorded step (minigrad.compile) updates them again on every replay."""

    @staticmethod
    def forward(ctx, x, running=None, statistics=None, momentum=0.1):
        for name, value in statistics(x).items():
            old = running[name]
            old[...] = ((1.0 - momentum) * old.astype(np.float64) + momentum * value).astype(old.dtype)
        return np.empty(0, dtype=x.dtype)

    rule = "none: the running statistics are not part of the loss"

    @staticmethod
    def backward(ctx, g):
        return (None,)


class CrossEntropy(Function):
    """Cross-entropy of logits (..., V) against integer targets (...), with label smoothing and
    an ignored target id. reduction: "mean" (over counted targets), "sum" or "none"."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
        if targets.shape != logits.shape[:-1]:
            raise ValueError(
                f"cross_entropy: targets of shape {targets.shape} must match the logits' shape "
                f"{logits.shape} without its last (class) axis, i.e. {logits.shape[:-1]}"
            )
        if targets.dtype.kind not in "iu":
            raise TypeError(f"cross_entropy: targets must be integer class ids, got {targets.dtype} (class "
                            f"probabilities take the logits' shape {logits.shape})")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        rows = logits.reshape(-1, logits.shape[-1])
        ids = targets.reshape(-1).astype(np.int64)
        losses, lse = kernels.cross_entropy_forward(rows, ids, ignore_index, label_smoothing)
        ctx.save_for_backward(rows, ids, lse)
        ctx.settings = (ignore_index, label_smoothing, reduction, logits.shape)
        if reduction == "none":
            return losses.reshape(targets.shape)
        total = losses.sum(dtype=logits.dtype)
        if reduction == "sum":
            return total
        ctx.count = max(int(np.count_nonzero(ids != ignore_index)), 1)  # all ignored: loss 0, gradient 0
        return total / logits.dtype.type(ctx.count)

    rule = "d loss_r / d logits_r = softmax(logits_r) - target distribution (one-hot, smoothed)"

    @staticmethod
    def backward(ctx, g):
        rows, ids, lse = ctx.saved_tensors
        ignore_index, smoothing, reduction, shape = ctx.settings
        if reduction == "none":
            per_row = g.reshape(-1)
        else:
            scale = g / ctx.count if reduction == "mean" else g
            per_row = np.full(len(ids), scale, dtype=rows.dtype)
        d = kernels.cross_entropy_backward(rows, ids, lse, per_row, ignore_index, smoothing)
        return d.reshape(shape)

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        rows, ids, _ = ctx.saved_tensors
        ignore_index, smoothing, reduction, shape = ctx.settings
        classes, kept = shape[-1], ids != ignore_index
        target = np.zeros(rows.shape, dtype=rows.dtype)  # the (smoothed) one-hot rows, 0 if ignored
        target[np.arange(len(ids))[kept], ids[kept]] = 1 - smoothing
        target[kept] += smoothing / classes
        per_row = g.reshape(-1, 1) if reduction == "none" else (g / ctx.count if reduction == "mean" else g)
        p = ctx.inputs[0].reshape(-1, classes).softmax(-1)
        return ((p - target) * per_row * kept.reshape(-1, 1)).reshape(shape)


def _same_shape(op, a, b, names=("input", "target")):
    if a.shape != b.shape:
        raise ValueError(f"{op}: {names[0]} of shape {a.shape} and {names[1]} of shape {b.shape} must have "
                         "the same shape")


class BinaryCrossEntropy(Function):
    """-(y log p + (1 - y) log(1 - p)) elementwise, for probabilities p in [0, 1] and targets y; each
    log is clamped at -100 as in PyTorch, so p = 0 or 1 gives a finite loss."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, p, y):
        _same_shape("binary_cross_entropy", p, y)
        if p.size and not (p.min() >= 0 and p.max() <= 1):  # (NaN fails too)
            raise ValueError("binary_cross_entropy: input must be probabilities in [0, 1] (apply sigmoid, or use "
                             f"binary_cross_entropy_with_logits), got values from {p.min()} to {p.max()}")
        with np.errstate(divide="ignore"):
            log_p, log_q = np.maximum(np.log(p), -100), np.maximum(np.log1p(-p), -100)
        ctx.save_for_backward(p, y, log_p, log_q)
        return _in_dtype_of(p, -(y * log_p + (1 - y) * log_q))

    rule = "d/dp = -y/p + (1 - y)/(1 - p) = (p - y) / (p (1 - p)), d/dy = -(log p - log(1 - p))"

    @staticmethod
    def backward(ctx, g):
        p, y, log_p, log_q = ctx.saved_tensors
        # the denominator p (1 - p) kept >= 1e-12 (PyTorch's)
        dp = g * (p - y) / np.maximum(p * (1 - p), 1e-12) if ctx.needs_input_grad[0] else None
        dy = g * (log_q - log_p) if ctx.needs_input_grad[1] else None
        return dp, dy


class BinaryCrossEntropyWithLogits(Function):
    """binary_cross_entropy(sigmoid(x), y) in the numerically stable form
    max(x, 0) - x y + log(1 + e^-|x|): no e^x overflows and no log of 0 is taken."""

    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, x, y):
        _same_shape("binary_cross_entropy_with_logits", x, y)
        ctx.save_for_backward(x, y)
        return _in_dtype_of(x, np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))))

    rule = "the loss is log(1 + e^x) - x y:  d/dx = sigmoid(x) - y,  d/dy = -x"

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dx = g * (_sigmoid(x) - y) if ctx.needs_input_grad[0] else None
        dy = -g * x if ctx.needs_input_grad[1] else None
        return dx, dy


# ============================================================================ randomness and lookup
class Dropout(Function):
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1-p) so the
    expected value is unchanged (and nothing needs rescaling at evaluation)."""

    @staticmethod
    def forward(ctx, a, p=0.5, mask=None, generator=None):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout: p must be in [0, 1], got {p}")
        if mask is None:  # drawn from `generator` (a minigrad.Generator), or the default one
            mask = rng(generator).random(a.shape, dtype=np.float64 if a.dtype == np.float64 else np.float32) >= p
        elif mask.shape != a.shape:
            raise ValueError(f"dropout: mask of shape {mask.shape} must match the input's shape {a.shape}")
        scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
        ctx.multiplier = mask * np.asarray(scale, dtype=a.dtype)
        return a * ctx.multiplier

    rule = "y = x * m / (1 - p)  =>  dx = g * m / (1 - p)"

    @staticmethod
    def backward(ctx, g):
        return g * ctx.multiplier

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g * ctx.multiplier


class Embedding(Function):
    """Rows of `weight` (num_embeddings, dim) picked by integer `ids` of any shape. The row
    `padding_idx` (if not None) gets no gradient: a padding token's vector stays as it is."""

    @staticmethod
    def forward(ctx, weight, ids, padding_idx=None):
        if ids.dtype.kind not in "iu":
            raise TypeError(f"embedding: ids must be integers, got {ids.dtype}")
        n = weight.shape[0]
        # int64 ids read as unsigned: a negative id is huge, so one max shows 0 <= id < n for all
        in_range = ids.dtype == np.int64 and (ids.size == 0 or ids.view(np.uint64).max() < n)
        bad = None if in_range else (ids < 0) | (ids >= n)
        if bad is not None and bad.any():
            raise IndexError(
                f"embedding: id {int(ids[bad].flat[0])} is out of range for a table of {n} rows "
                f"(valid ids are 0..{n - 1})"
            )
        ctx.ids, ctx.shape = ids.copy(), weight.shape  # a copy: later changes to the ids cannot reach backward
        ctx.padding_idx = padding_idx
        return np.take(weight, ids, axis=0)

    rule = "each row's gradient is the sum of the gradients of every position that used it (0 for padding_idx)"

    @staticmethod
    def backward(ctx, g):
        dweight = kernels.embedding_backward(ctx.ids.reshape(-1), g.reshape(-1, ctx.shape[1]), ctx.shape[0])
        if ctx.padding_idx is not None:
            dweight[ctx.padding_idx] = 0  # the padding row is not learned
        return dweight


# ============================================================================ more elementwise functions and scans
# tan, the hyperbolic functions, the inverse ones (asin, acosh, atan2, ...), trunc, frac, fmod,
# erfinv, sinc, xlogy, copysign, clamp_min/clamp_max; then nansum, nanmean, cumprod, logcumsumexp,
# cummax/cummin. An inverse function outside its domain (asin of 2, acosh of 0.5) is NaN, as in
# numpy and PyTorch; at the end of its domain (asin at +-1, atanh at +-1) its slope is infinite and
# its gradient is inf there, as PyTorch's.

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        ids = ctx.ids if ctx.padding_idx is None else np.where(ctx.ids == ctx.padding_idx, -1, ctx.ids)
        keep = (ids >= 0)[..., None]
        return GetItemGrad.apply(g * keep, index=(np.where(ids >= 0, ids, 0),), shape=ctx.shape)


def _quietly(fn):
    """fn() with numpy's warnings about inf and NaN silenced: an op's edge values are its answer."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        return fn()


class Tan(Function):
    promotes_int_to_float = True  # integer inputs: computed in float32 (see Function)

    @staticmethod
    def forward(ctx, a):
        y = np.tan(a)
        ctx.save_for_backward(y)
        return y

    rule = "d(tan a)/da = 1 / cos^2 a = 1 + tan^2 a"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 + y * y)


class Sinh(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.sinh(a)

    rule = "d(sinh a)/da = cosh a"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.cosh(a)


class Cosh(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.cosh(a)

    rule = "d(cosh a)/da = sinh a"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.sinh(a)


class Asin(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _quietly(lambda: np.arcsin(a))

    rule = "d(asin a)/da = 1 / sqrt(1 - a^2): inf at a = +-1"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return _quietly(lambda: g / np.sqrt((1 - a) * (1 + a)))  # ((1 - a)(1 + a): no rounding of a^2 near 1)


class Acos(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _quietly(lambda: np.arccos(a))

    rule = "d(acos a)/da = -1 / sqrt(1 - a^2): -inf at a = +-1"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return _quietly(lambda: -g / np.sqrt((1 - a) * (1 + a)))


class Atan(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.arctan(a)

    rule = "d(atan a)/da = 1 / (1 + a^2)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return _quietly(lambda: g / (1 + a * a))  # (a^2 overflows for huge a: g / inf = 0, the limit)


class Asinh(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.arcsinh(a)

    rule = "d(asinh a)/da = 1 / sqrt(a^2 + 1)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / np.hypot(a, 1)  # sqrt(a^2 + 1) without overflow


class Acosh(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _quietly(lambda: np.arccosh(a))

    rule = "d(acosh a)/da = 1 / sqrt(a^2 - 1): inf at a = 1"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return _quietly(lambda: g / np.sqrt((a - 1) * (a + 1)))


class Atanh(Function):
    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _quietly(lambda: np.arctanh(a))

    rule = "d(atanh a)/da = 1 / (1 - a^2): inf at a = +-1"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return _quietly(lambda: g / ((1 - a) * (1 + a)))


class Atan2(Function):
    """atan2(a, b): the angle of the point (b, a) (x = b, y = a), in (-pi, pi], as numpy's arctan2."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary("atan2", np.arctan2, a, b)

    rule = "d atan2(a, b)/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2); 0 at (0, 0), as PyTorch"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        r = np.hypot(a, b)  # (b / r) / r rather than b / (a^2 + b^2): no overflow nor underflow
        r = np.where(r > 0, r, np.inf)  # (at the origin: b / inf = 0)
        da = g * (b / r) / r if ctx.needs_input_grad[0] else None
        db = -g * (a / r) / r if ctx.needs_input_grad[1] else None
        return da, db


class Trunc(Function):
    """Round toward 0: trunc(-2.7) = -2 (an integer is its own)."""

    @staticmethod
    def forward(ctx, a):
        return np.trunc(a) if a.dtype.kind == "f" else a.copy()

    rule = "a step function: derivative 0 between the steps (taken as 0 at them)"

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class Frac(Function):
    """The fractional part a - trunc(a), with a's sign: frac(-2.5) = -0.5 (NaN at +-inf)."""

    @staticmethod
    def forward(ctx, a):
        if a.dtype.kind != "f":
            raise TypeError(f"frac: expected a float tensor, got {a.dtype} (an integer has no fractional part; "
                            "PyTorch refuses it too)")
        return _quietly(lambda: a - np.trunc(a))

    rule = "d(a - trunc a)/da = 1 (trunc is constant between its steps)"

    @staticmethod
    def backward(ctx, g):
        return g


class Fmod(Function):
    """a - b trunc(a/b): the remainder of the division rounded toward 0, with the sign of a, as C's
    fmod and PyTorch's: fmod(-7, 2) = -1 (remainder, Python's %, gives 1). fmod(a, 0) is NaN."""

    @staticmethod
    def forward(ctx, a, b):
        _no_integer_zero_divisor("fmod", a, b)
        ctx.save_for_backward(a, b)
        return _quietly(lambda: _binary("fmod", np.fmod, a, b))

    rule = "d(a - b trunc(a/b))/da = 1, d/db = -trunc(a/b) (trunc is constant between its steps)"

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        db = _quietly(lambda: -g * np.trunc(a / b)) if ctx.needs_input_grad[1] else None
        return g, db


def _erf_inverse(y):
    """erfinv of a float64 array: M. Giles' polynomial ("Approximating the erfinv function", 2010;
    ~1e-7 relative), then Newton steps on erf(x) = y, which double the correct digits each. For
    |y| > 1/2 the steps solve log erfc(x) = log(1 - |y|) instead: 1 - |y| is exact there (erf(x) - |y|
    would cancel), and log erfc is nearly a parabola, so Newton converges even where the polynomial,
    made for float32, is far off (|y| within 1e-8 of 1)."""
    t = np.abs(y)
    inside = t < 1  # (NaN is not: it stays NaN)
    s = np.where(inside, t, 0.0)
    w = -np.log((1 - s) * (1 + s))
    low = w - 2.5
    p_low = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p_low = c + p_low * low
    high = np.sqrt(w) - 3
    p_high = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p_high = c + p_high * high
    x = np.where(w < 5, p_low, p_high) * s
    tail = s > 0.5
    for _ in range(4):
        slope = (2 / math.sqrt(math.pi)) * np.exp(-x * x)  # erf'(x)
        erf_x = np.asarray(_erf_elementwise(x), dtype=np.float64)
        erfc_x = np.asarray(_erfc_elementwise(x), dtype=np.float64)
        # the tail solves log erfc(x) = log(1 - s), nearly -x^2: Newton converges from far away there
        tail_step = (np.log(erfc_x) - np.log(np.where(tail, 1 - s, 1.0))) * erfc_x / slope
        x = np.where(tail, x + tail_step, x - (erf_x - s) / slope)
    x = np.where(inside, x, np.where(t == 1, np.inf, np.nan))
    return np.copysign(x, y)  # erfinv is odd (and -0 stays -0)


_erfc_elementwise = np.frompyfunc(math.erfc, 1, 1)


class Erfinv(Function):
    """The inverse of erf on (-1, 1): erfinv(erf(x)) = x; +-inf at +-1, NaN outside [-1, 1].
    Computed in float64 (see _erf_inverse), as Erf."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        y = _erf_inverse(a.astype(np.float64)).astype(a.dtype)
        ctx.save_for_backward(y)
        return y

    rule = "d erfinv(a)/da = 1 / erf'(erfinv a) = sqrt(pi)/2 e^(erfinv(a)^2): inf at a = +-1"

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return _quietly(lambda: g * (math.sqrt(math.pi) / 2) * np.exp(y * y))


class Sinc(Function):
    """The normalized sinc: sin(pi a) / (pi a), and 1 at a = 0 (its limit)."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        z = np.pi * a.astype(np.float64)
        safe = np.where(z == 0, 1.0, z)
        return _quietly(lambda: np.where(z == 0, 1.0, np.sin(safe) / safe)).astype(a.dtype)

    rule = ("d sinc(a)/da = (cos(pi a) - sinc(a)) / a = pi (z cos z - sin z) / z^2 with z = pi a; "
            "0 at a = 0 (sinc is even)")

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        z = np.pi * a.astype(np.float64)
        small = np.abs(z) < 0.05  # there z cos z - sin z cancels: its series -z/3 + z^3/30 - z^5/840 + z^7/45360
        zz = z * z
        series = z * (-1 / 3 + zz * (1 / 30 + zz * (-1 / 840 + zz / 45360)))
        safe = np.where(small, 1.0, z)
        direct = _quietly(lambda: (safe * np.cos(safe) - np.sin(safe)) / (safe * safe))
        return g * (np.pi * np.where(small, series, direct)).astype(g.dtype)


class Xlogy(Function):
    """x log(y), and 0 where x = 0 whatever y is (y = 0 included: 0 log 0 = 0, the limit that
    entropies need), unless y is NaN; as PyTorch's xlogy."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        out = _quietly(lambda: _binary("xlogy", lambda p, q: p * np.log(q), x, y))
        return np.where((x == 0) & ~np.isnan(y), np.zeros((), dtype=out.dtype), out)

    rule = ("d(x log y)/dx = log y (0 where x = 0 and y <= 0, as PyTorch); d/dy = x / y (0 where x = 0: "
            "there x log y is 0 for every y)")

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        zero = np.zeros((), dtype=g.dtype)
        dx = _quietly(lambda: g * np.where((x == 0) & (y <= 0), zero, np.log(y))) if ctx.needs_input_grad[0] else None
        dy = _quietly(lambda: g * np.where(x == 0, zero, x / y)) if ctx.needs_input_grad[1] else None
        return dx, dy


class Copysign(Function):
    """|a| with the sign of b (the sign bit: -0.0 counts as negative), as numpy's and PyTorch's."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a, b):
        y = _binary("copysign", np.copysign, a, b)
        ctx.save_for_backward(a, y)
        return y

    rule = "d copysign(a, b)/da = sign(a) sign(b) (0 at a = 0, as PyTorch); d/db = 0 (only its sign is used)"

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors
        flip = np.where(a == 0, 0, np.sign(a) * np.copysign(np.ones((), dtype=y.dtype), y))
        return g * flip, np.zeros_like(g) if ctx.needs_input_grad[1] else None


class ClampBound(Function):
    """clamp_min (max(a, bound)) or, with upper=True, clamp_max (min(a, bound)), where the bound may
    be a tensor. NaN in a stays NaN, as PyTorch's clamp."""

    @staticmethod
    def forward(ctx, a, bound, upper=False):
        ctx.save_for_backward(a, bound)
        ctx.upper = upper
        return _binary("clamp_max" if upper else "clamp_min", np.minimum if upper else np.maximum, a, bound)

    rule = ("da = g where a is kept (a >= min, or a <= max: a tie keeps a), d bound = g where the bound "
            "replaced a, as PyTorch")

    @staticmethod
    def backward(ctx, g):
        a, bound = ctx.saved_tensors
        keep, replaced = (a <= bound, a > bound) if ctx.upper else (a >= bound, a < bound)
        zero = np.zeros((), dtype=g.dtype)
        return np.where(keep, g, zero), np.where(replaced, g, zero) if ctx.needs_input_grad[1] else None


class NanSum(Function):
    """The sum of the elements that are not NaN (integers sum to int64, as Sum)."""

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "nansum")
        ctx.nan = np.isnan(a) if a.dtype.kind == "f" else None
        return np.nansum(a, axis=ctx.axes, keepdims=keepdims, dtype=np.int64 if a.dtype.kind in "biu" else None)

    rule = "each element that is not NaN counts with weight 1: g copied back; a NaN was left out: 0"

    @staticmethod
    def backward(ctx, g):
        g = np.broadcast_to(_expand_reduced(g, ctx.shape, ctx.axes), ctx.shape)
        return g if ctx.nan is None else np.where(ctx.nan, np.zeros((), dtype=g.dtype), g)


class NanMean(Function):
    """The mean of the elements that are not NaN: their sum / their count (NaN where all are NaN)."""

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.shape, ctx.axes = a.shape, _normalize_axes(axis, a.shape, "nanmean")
        ctx.nan = np.isnan(a)
        ctx.count = np.sum(~ctx.nan, axis=ctx.axes, keepdims=True).astype(a.dtype)
        total = np.nansum(a, axis=ctx.axes, keepdims=True)
        y = _quietly(lambda: total / ctx.count)  # (no value left: 0 / 0 = NaN, as PyTorch)
        return y if keepdims else y.reshape([n for i, n in enumerate(a.shape) if i not in ctx.axes])

    rule = "d mean/da_i = 1/n, n the count of values that are not NaN; 0 at a NaN (it was left out)"

    @staticmethod
    def backward(ctx, g):
        share = _quietly(lambda: _expand_reduced(g, ctx.shape, ctx.axes) / ctx.count)
        return np.where(ctx.nan, np.zeros((), dtype=share.dtype), share)


class CumProd(Function):
    """y_i = x_0 x_1 ... x_i along `axis` (integers and bools: int64, as PyTorch)."""

    @staticmethod
    def forward(ctx, a, axis):
        ctx.save_for_backward(a)
        ctx.axis = axis
        return np.cumprod(a, axis=axis, dtype=np.int64 if a.dtype.kind in "biu" else None)

    rule = ("dy_i/dx_k = the product of x_0..x_i but x_k (i >= k): dx_k = (x_0 ... x_k-1) s_k with "
            "s_k = g_k + x_k+1 s_k+1 (from the end; no division by x_k, so a zero is fine)")

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        x, g = np.moveaxis(a, ctx.axis, -1), np.moveaxis(g, ctx.axis, -1)
        n = x.shape[-1]
        if n == 0:
            return np.zeros(a.shape, dtype=g.dtype)
        ones = np.ones(x.shape[:-1] + (1,), dtype=x.dtype)
        before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)  # x_0 ... x_k-1
        s = np.empty(g.shape, dtype=np.result_type(g, x))
        s[..., n - 1] = g[..., n - 1]
        for k in range(n - 2, -1, -1):  # s_k = sum_{i >= k} g_i x_k+1 ... x_i, Horner's way
            s[..., k] = g[..., k] + x[..., k + 1] * s[..., k + 1]
        return np.moveaxis(before * s, -1, ctx.axis).astype(g.dtype, copy=False)


def _reverse_logcumsumexp(v, axis):
    """log(sum_{i >= k} e^(v_i)) for each k along `axis`."""
    return np.flip(np.logaddexp.accumulate(np.flip(v, axis), axis=axis), axis)


class LogCumSumExp(Function):
    """y_i = log(e^x_0 + ... + e^x_i) along `axis`, without overflow (numpy's logaddexp, accumulated)."""

    promotes_int_to_float = True

    @staticmethod
    def forward(ctx, a, axis):
        y = _quietly(lambda: np.logaddexp.accumulate(a, axis=axis))
        ctx.save_for_backward(a, y)
        ctx.axis = axis
        return y

    rule = ("dy_i/dx_k = e^(x_k - y_i) for k <= i (a softmax of x_0..x_i): dx_k = sum_{i>=k} g_i e^(x_k - y_i); "
            "a y_i of -inf (every x up to i is -inf) adds 0")

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors

        def part(weights):  # log(sum_{i>=k} w_i e^(-y_i)) for w >= 0, summed in logs: no overflow
            terms = np.where(np.isneginf(y) | (weights == 0), -np.inf, np.log(np.where(weights > 0, weights, 1)) - y)
            return _reverse_logcumsumexp(terms, ctx.axis)

        positive, negative = part(np.maximum(g, 0)), part(np.maximum(-g, 0))  # g = g+ - g-
        return _quietly(lambda: np.exp(a + positive) - np.exp(a + negative)).astype(g.dtype, copy=False)


def cumulative_extreme_indices(a, axis, largest=True):
    """Where the running max (min) of `a` along `axis` sits, as PyTorch's cummax (cummin): a tie
    moves it to the later element, and so does a NaN (after one, the running value stays NaN)."""
    running = (np.maximum if largest else np.minimum).accumulate(a, axis=axis)
    here = a == running
    if a.dtype.kind == "f":
        here |= np.isnan(a)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    positions = np.where(here, np.arange(a.shape[axis]).reshape(shape), 0)
    return np.maximum.accumulate(positions, axis=axis).astype(np.int64) if a.size else positions.astype(np.int64)


class CumExtreme(Function):
    """cummax's (cummin's) values: y_i = a at `indices`_i along `axis` (cumulative_extreme_indices)."""

    @staticmethod
    def forward(ctx, a, indices, axis):
        ctx.indices, ctx.axis, ctx.shape = indices, axis, a.shape
        return np.take_along_axis(a, indices, axis)

    rule = "y_i is the element where the running extreme sits: it gets g_i (an element that stays the extreme, each)"

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        grid = list(np.indices(ctx.indices.shape, sparse=True))
        grid[ctx.axis] = ctx.indices
        np.add.at(grad, tuple(grid), g)  # (add.at: an index that repeats adds up)
        return grad
