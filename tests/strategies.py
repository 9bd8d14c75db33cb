"""Hypothesis strategies for shapes, and the value helpers the engine tests share.

Hypothesis draws shapes (and a seed); the values come from numpy's generator seeded with it, kept
away from the points where an op is not differentiable (a central difference across a kink or a
tie measures nothing useful).
"""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg

# ----------------------------------------------------------------------------- strategies
seeds = st.integers(0, 2**32 - 1)

# every dim at most 5: a gradient check costs two forward passes per input element
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)
nonscalar_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)

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
    # float64 central differences are good to ~1e-9 here: check much tighter than gradcheck's
    # defaults (rtol=1e-3), so that a gradient off by 0.1% fails too
    gradcheck_options = {"atol": 1e-7, "rtol": 1e-5, **gradcheck_options}
    report = mg.gradcheck(fn, inputs, **gradcheck_options)
    assert report
    return out



def softmax_reference(x, axis):
    """softmax in plain numpy, for comparing forward values."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_reference(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))
