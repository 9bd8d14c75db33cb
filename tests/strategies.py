"""Hypothesis strategies for shapes, the value helpers the engine tests share, and the op table.

Hypothesis draws shapes (and a seed); the values come from numpy's generator seeded with it, kept
away from the points where an op is not differentiable (a central difference across a kink or a
tie measures nothing useful).

The op table (`OPS`, at the end) lists every elementwise op once, with its numpy reference, the
inputs it is checked on and its tolerance: test_ops.py and test_properties.py derive their tests
from it, so testing a new elementwise op is one more row.
"""
import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg

# ----------------------------------------------------------------------------- strategies
seeds = st.integers(0, 2**32 - 1)

# every dim at most 5: a gradient check costs two forward passes per input element
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)
nonscalar_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)

# batches of rows for the row-wise kernels (softmax, layer norm, cross-entropy): lengths from 1 to
# 129, several next to multiples of 16 and 32, where a vectorised loop's remainder changes
row_counts = st.integers(1, 70)
row_lengths = st.sampled_from([1, 2, 3, 7, 16, 17, 31, 32, 33, 64, 65, 100, 129])

# two shapes that broadcast together, with size-1 and missing axes on either side
broadcast_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4)

# numpy's matmul rules, 1-D operands and broadcast batch axes included
matmul_pairs = hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, min_side=1, max_side=4)


@st.composite
def reductions(draw, min_dims=1):
    """(shape, axis, keepdims) with axis None, an int (maybe negative) or a tuple of distinct axes."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    ndim = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1),
        hnp.valid_tuple_axes(ndim, min_size=1),
    ))
    return shape, axis, draw(st.booleans())


# ----------------------------------------------------------------------------- values
def rng(seed):
    return np.random.default_rng(seed)


def normal(shape, seed=0, scale=1.0):
    return rng(seed).standard_normal(shape) * scale


def positive(shape, seed=0, low=0.5, high=2.0):
    return rng(seed).uniform(low, high, shape)


def away_from(shape, points, seed=0, low=-2.0, high=2.0, gap=0.05):
    """Uniform values with none closer than `gap` to any of `points` (kinks of the op)."""
    x = rng(seed).uniform(low, high, shape)
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.where(x >= p, gap, -gap) * 2, x)
    return x


def nonzero(shape, seed=0, low=0.5, high=2.0):
    """Values with |x| in [low, high] and random sign."""
    g = rng(seed)
    return g.uniform(low, high, shape) * g.choice([-1.0, 1.0], size=shape)


def distinct(shape, seed=0):
    """Values at least 0.2 apart from one another (no ties for max, min, sort-like ops)."""
    g = rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    return (g.permutation(n) * 0.3 + g.uniform(0.0, 0.1, n) - 0.15 * n).reshape(shape)


def interleaved(shape_a, shape_b, seed=0):
    """Two arrays (broadcastable shapes) whose elements are never within 0.5 of each other."""
    g = rng(seed)
    a = 2.0 * g.integers(-2, 3, shape_a) + g.uniform(0.0, 0.5, shape_a)
    b = 2.0 * g.integers(-2, 3, shape_b) + 1.0 + g.uniform(0.0, 0.5, shape_b)
    return a, b


def leaf(array, dtype=None):
    """A float64 (or `dtype`) leaf tensor that requires grad."""
    return mg.tensor(np.asarray(array, dtype=dtype or np.float64), requires_grad=True)


# ----------------------------------------------------------------------------- the op check
# gradient checks: float64 central differences are good to ~1e-9 at these sizes, so check much
# tighter than gradcheck's defaults (rtol=1e-3), so that a gradient off by 0.1% fails too
TIGHT = {"atol": 1e-7, "rtol": 1e-5}

# ops computed by a kernel (numba by default) may sum in another order than numpy: still tight
KERNEL_RTOL = 1e-10


def check_op(fn, reference, *arrays, rtol=1e-12, atol=1e-12, **gradcheck_options):
    """Forward of `fn` on float64 tensors equals `reference` on the arrays, and backward passes
    a gradient check (every element of every input, random upstream gradient)."""
    inputs = [leaf(a) for a in arrays]
    out = fn(*inputs)
    assert isinstance(out, mg.Tensor)
    assert out.dtype == np.float64, f"float64 inputs gave a {out.dtype} output"
    expected = np.asarray(reference(*[np.array(a, dtype=np.float64) for a in arrays]))
    assert out.shape == expected.shape, f"shape {out.shape}, numpy gives {expected.shape}"
    np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=atol)
    assert out.requires_grad
    gradcheck_options = {**TIGHT, **gradcheck_options}
    report = mg.gradcheck(fn, inputs, **gradcheck_options)
    assert report
    return out


# ----------------------------------------------------------------------------- numpy references
def softmax_reference(x, axis):
    """softmax in plain numpy, for comparing forward values."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_reference(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def gelu_reference(x):
    """x Phi(x), with Phi(x) = erfc(-x / sqrt 2) / 2 (1 + erf(x / sqrt 2) would lose digits for x << 0)."""
    return 0.5 * x * _erfc(-x / math.sqrt(2.0))


def gelu_tanh_reference(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


# ----------------------------------------------------------------------------- the op table
@dataclass(frozen=True)
class Domain:
    """The inputs on which an op is smooth and well conditioned, so that a central difference
    measures its gradient, and a chain of such ops stays in range.

    `sample(shape, seed)` draws values inside it (for two inputs: `sample(shape_a, shape_b, seed)`
    gives a pair); `contains(values)` (or `contains(a, b)`) tells whether values lie inside it."""

    text: str
    sample: Callable
    contains: Callable
    arity: int = 1


REAL = Domain("any x", normal, lambda v: True)
POSITIVE = Domain("x > 0.2", positive, lambda v: v.min() > 0.2)  # samples in [0.5, 2]
NONZERO = Domain("0.3 < |x| < 10", nonzero, lambda v: np.abs(v).min() > 0.3 and np.abs(v).max() < 10)
POWER_BASE = Domain("0.2 < x < 4", positive, lambda v: v.min() > 0.2 and v.max() < 4)


def within(limit):
    """|x| < limit: for ops that grow fast (exp, powers); samples are normal values clipped inside."""
    return Domain(f"|x| < {limit}", lambda shape, seed=0: np.clip(normal(shape, seed), -0.9 * limit, 0.9 * limit),
                  lambda v: np.abs(v).max() < limit)


def away(*kinks, gap=0.05):
    """No value within `gap` of the points where the op has a kink (no derivative there)."""
    return Domain(f"x not within {gap} of {kinks}", lambda shape, seed=0: away_from(shape, kinks, seed, gap=gap),
                  lambda v: all(np.abs(v - k).min() > gap for k in kinks))


def both(domain_a, domain_b):
    """Two inputs, each in its own domain."""
    return Domain(f"a: {domain_a.text}; b: {domain_b.text}",
                  lambda shape_a, shape_b, seed=0: (domain_a.sample(shape_a, seed), domain_b.sample(shape_b, seed + 1)),
                  lambda a, b: domain_a.contains(a) and domain_b.contains(b), arity=2)


# maximum and minimum: no ties between the inputs (a tie splits the gradient, see test_ops.py)
APART = Domain("|a - b| > 0.05", interleaved, lambda a, b: bool(np.all(np.abs(np.subtract(a, b)) > 0.05)), arity=2)


def quotients(shape_a, shape_b, seed=0):
    """a = n + u (n an integer, u in [0.3, 0.7]) and b in {-2, -1, 1, 2}: every a / b is at least 0.15
    from an integer, where a // b and a % b jump."""
    g = rng(seed)
    return g.integers(-3, 4, shape_a) + g.uniform(0.3, 0.7, shape_a), g.choice([-2.0, -1.0, 1.0, 2.0], size=shape_b)


def _fraction_apart(a, b):
    with np.errstate(all="ignore"):
        q = np.divide(a, b)
    return bool(np.all(np.abs(b) > 0.3) and np.all(np.abs(q - np.round(q)) > 0.05))


# a // b and a % b: a / b away from the integers (steps of floor), b away from 0
QUOTIENTS = Domain("a / b not within 0.05 of an integer, |b| > 0.3", quotients, _fraction_apart, arity=2)
_erf = np.vectorize(math.erf, otypes=[np.float64])


class Op(NamedTuple):
    name: str
    fn: Callable  # minigrad: tensors in, a tensor out
    reference: Callable  # numpy: float64 arrays in, an array out
    domain: Domain  # the inputs it is checked on
    rtol: float = 1e-12  # forward against the reference, in float64


OPS = [
    # one input
    Op("tanh", lambda x: x.tanh(), np.tanh, REAL),
    Op("sigmoid", lambda x: x.sigmoid(), lambda x: 1.0 / (1.0 + np.exp(-x)), REAL),
    Op("sin", lambda x: x.sin(), np.sin, REAL),
    Op("cos", lambda x: x.cos(), np.cos, REAL),
    Op("gelu", lambda x: x.gelu(), gelu_reference, within(20), KERNEL_RTOL),
    Op("gelu_none", lambda x: x.gelu(approximate="none"), gelu_reference, within(20), KERNEL_RTOL),
    Op("gelu_tanh", lambda x: x.gelu(approximate="tanh"), gelu_tanh_reference, within(20), KERNEL_RTOL),
    Op("exp", lambda x: x.exp(), np.exp, within(3)),
    Op("log", lambda x: x.log(), np.log, POSITIVE),
    Op("sqrt", lambda x: x.sqrt(), np.sqrt, POSITIVE),
    Op("pow_2", lambda x: x ** 2, np.square, within(5)),
    Op("pow_3", lambda x: x ** 3, lambda x: x ** 3, within(3)),
    Op("pow_half", lambda x: x ** 0.5, np.sqrt, POSITIVE),
    Op("pow_negative", lambda x: x ** -1.5, lambda x: x ** -1.5, POSITIVE),
    Op("rpow", lambda x: 2 ** x, lambda x: 2.0 ** x, within(10)),
    Op("rpow_float", lambda x: 1.5 ** x, lambda x: 1.5 ** x, within(10)),
    Op("rdiv_scalar", lambda x: 1 / x, lambda x: 1 / x, NONZERO),
    Op("abs", lambda x: x.abs(), np.abs, away(0.0)),
    Op("relu", lambda x: x.relu(), lambda x: np.maximum(x, 0.0), away(0.0)),
    Op("clip", lambda x: x.clip(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), away(-0.5, 0.7)),
    Op("clip_min", lambda x: x.clip(min=0.2), lambda x: np.maximum(x, 0.2), away(0.2)),
    Op("clip_max", lambda x: x.clip(max=-0.3), lambda x: np.minimum(x, -0.3), away(-0.3)),
    Op("maximum_scalar", lambda x: x.maximum(0.1), lambda x: np.maximum(x, 0.1), away(0.1)),
    Op("minimum_scalar", lambda x: x.minimum(0.1), lambda x: np.minimum(x, 0.1), away(0.1)),
    Op("affine", lambda x: 0.5 * x - 1.5, lambda x: 0.5 * x - 1.5, REAL),
    Op("add_scalar", lambda x: x + 2, lambda x: x + 2, REAL),
    Op("radd_scalar", lambda x: 2.5 + x, lambda x: 2.5 + x, REAL),
    Op("sub_scalar", lambda x: x - 2, lambda x: x - 2, REAL),
    Op("rsub_scalar", lambda x: 2 - x, lambda x: 2 - x, REAL),
    Op("mul_scalar", lambda x: x * 3, lambda x: x * 3, REAL),
    Op("rmul_scalar", lambda x: -0.5 * x, lambda x: -0.5 * x, REAL),
    Op("div_scalar", lambda x: x / 4, lambda x: x / 4, REAL),
    Op("neg", lambda x: -x, np.negative, REAL),
    Op("neg_method", lambda x: x.neg(), np.negative, REAL),
    Op("silu", lambda x: x.silu(), lambda x: x / (1.0 + np.exp(-x)), REAL),
    Op("leaky_relu", lambda x: x.leaky_relu(0.1), lambda x: np.where(x > 0, x, 0.1 * x), away(0.0)),
    Op("softplus", lambda x: x.softplus(), lambda x: np.log1p(np.exp(x)), REAL),
    Op("softplus_beta_threshold", lambda x: x.softplus(beta=2.0, threshold=1.0),
       lambda x: np.where(2.0 * x > 1.0, x, np.log1p(np.exp(2.0 * x)) / 2.0), away(0.5)),
    Op("elu", lambda x: x.elu(alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)), away(0.0)),
    Op("erf", lambda x: x.erf(), _erf, REAL),
    Op("log2", lambda x: x.log2(), np.log2, POSITIVE),
    Op("rsqrt", lambda x: x.rsqrt(), lambda x: 1.0 / np.sqrt(x), POSITIVE),
    Op("log10", lambda x: x.log10(), np.log10, POSITIVE),
    Op("log1p", lambda x: x.log1p(), np.log1p, POSITIVE),
    Op("expm1", lambda x: x.expm1(), np.expm1, within(3)),
    Op("sign", lambda x: x.sign(), np.sign, away(0.0)),
    Op("floor", lambda x: x.floor(), np.floor, away(-2.0, -1.0, 0.0, 1.0, 2.0)),
    Op("round", lambda x: x.round(), np.round, away(-1.5, -0.5, 0.5, 1.5)),
    # two inputs, of shapes that broadcast together
    Op("add", lambda a, b: a + b, np.add, both(REAL, REAL)),
    Op("sub", lambda a, b: a - b, np.subtract, both(REAL, REAL)),
    Op("mul", lambda a, b: a * b, np.multiply, both(within(10), within(10))),
    Op("div", lambda a, b: a / b, np.divide, both(within(10), NONZERO)),
    Op("pow", lambda a, b: a ** b, np.power, both(POWER_BASE, within(2.5))),
    Op("maximum", lambda a, b: a.maximum(b), np.maximum, APART),
    Op("minimum", lambda a, b: a.minimum(b), np.minimum, APART),
    Op("mg.maximum", lambda a, b: mg.maximum(a, b), np.maximum, APART),
    Op("floor_divide", lambda a, b: a // b, np.floor_divide, QUOTIENTS),
    Op("remainder", lambda a, b: a % b, np.remainder, QUOTIENTS),
    Op("add_method", lambda a, b: a.add(b), np.add, both(REAL, REAL)),
    Op("sub_method", lambda a, b: a.sub(b), np.subtract, both(REAL, REAL)),
    Op("mul_method", lambda a, b: a.mul(b), np.multiply, both(within(10), within(10))),
    Op("div_method", lambda a, b: a.div(b), np.divide, both(within(10), NONZERO)),
    Op("pow_method", lambda a, b: a.pow(b), np.power, both(POWER_BASE, within(2.5))),
]
UNARY_OPS = {op.name: op for op in OPS if op.domain.arity == 1}
BINARY_OPS = {op.name: op for op in OPS if op.domain.arity == 2}
