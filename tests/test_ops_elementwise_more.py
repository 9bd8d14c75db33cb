"""The elementwise ops and reductions added beside the first ones: tan, the hyperbolic functions and
the inverse ones (asin ... atanh, atan2), trunc, frac, fmod, erfinv, sinc, xlogy, copysign,
heaviside, clamp_min/clamp_max (and in place); nansum, nanmean, sum/mean(dtype=), cumprod,
logcumsumexp, cummax, cummin, aminmax, diff; and bernoulli, random_, exponential_.

Each differentiable op: its forward equals numpy's (or math's) formula, and its backward passes a
float64 gradient check of every element (strategies.check_op) at points away from its kinks; then
its edge values, and PyTorch's numbers (when PyTorch is installed)."""
import math

import numpy as np
import pytest

import minigrad as mg
from strategies import away_from, check_op, distinct, leaf, normal, positive, rng

_erf = np.vectorize(math.erf, otypes=[np.float64])
def _erfinv_reference(y):
    """erfinv by bisection on math.erf: 64 halvings of [-6, 6] (y in (-1, 1))."""
    low, high = np.full(np.shape(y), -6.0), np.full(np.shape(y), 6.0)
    for _ in range(64):
        middle = (low + high) / 2
        below = _erf(middle) < y
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    return (low + high) / 2


_sinc = np.vectorize(lambda v: 1.0 if v == 0 else math.sin(math.pi * v) / (math.pi * v), otypes=[np.float64])
SHAPE = (3, 4)


def _inside(shape, seed, low, high):
    return rng(seed).uniform(low, high, shape)


# (name, the method, numpy's or math's formula, values away from the kinks and the domain's ends)
UNARY = [
    ("tan", lambda x: x.tan(), np.tan, lambda s: _inside(SHAPE, s, -1.3, 1.3)),
    ("sinh", lambda x: x.sinh(), np.sinh, lambda s: normal(SHAPE, s, 2.0)),
    ("cosh", lambda x: x.cosh(), np.cosh, lambda s: normal(SHAPE, s, 2.0)),
    ("asin", lambda x: x.asin(), np.arcsin, lambda s: _inside(SHAPE, s, -0.95, 0.95)),
    ("acos", lambda x: x.acos(), np.arccos, lambda s: _inside(SHAPE, s, -0.95, 0.95)),
    ("atan", lambda x: x.atan(), np.arctan, lambda s: normal(SHAPE, s, 3.0)),
    ("asinh", lambda x: x.asinh(), np.arcsinh, lambda s: normal(SHAPE, s, 3.0)),
    ("acosh", lambda x: x.acosh(), np.arccosh, lambda s: _inside(SHAPE, s, 1.05, 5.0)),
    ("atanh", lambda x: x.atanh(), np.arctanh, lambda s: _inside(SHAPE, s, -0.95, 0.95)),
    ("trunc", lambda x: x.trunc(), np.trunc, lambda s: away_from(SHAPE, [-2, -1, 0, 1, 2], s, -2.9, 2.9, 0.05)),
    ("frac", lambda x: x.frac(), lambda a: a - np.trunc(a),
     lambda s: away_from(SHAPE, [-2, -1, 0, 1, 2], s, -2.9, 2.9, 0.05)),
    ("erfinv", lambda x: x.erfinv(), _erfinv_reference, lambda s: _inside(SHAPE, s, -0.98, 0.98)),
    ("sinc", lambda x: x.sinc(), _sinc, lambda s: away_from(SHAPE, [0.0], s, -3.0, 3.0, 0.01)),
    ("clamp_min", lambda x: x.clamp_min(0.25), lambda a: np.maximum(a, 0.25),
     lambda s: away_from(SHAPE, [0.25], s)),
    ("clamp_max", lambda x: x.clamp_max(-0.5), lambda a: np.minimum(a, -0.5),
     lambda s: away_from(SHAPE, [-0.5], s)),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name, method, formula, values", UNARY, ids=[row[0] for row in UNARY])
def test_unary_op_matches_its_formula_and_passes_gradcheck(name, method, formula, values, seed):
    check_op(method, formula, values(seed), rtol=1e-13, atol=1e-14)


# (name, the method of two tensors, the formula, the two inputs, broadcast against each other)
def _atan2_values(s):
    return nonzero_pair((3, 4), (4,), s)


def nonzero_pair(shape_a, shape_b, seed):
    g = rng(seed)
    return g.uniform(0.3, 2.0, shape_a) * g.choice([-1.0, 1.0], shape_a), g.uniform(0.3, 2.0, shape_b) * g.choice(
        [-1.0, 1.0], shape_b)


def _fmod_values(s):
    """a / b at least 0.1 away from an integer (where fmod jumps)."""
    g = rng(s)
    b = g.uniform(0.5, 2.0, (4,)) * g.choice([-1.0, 1.0], (4,))
    q = g.integers(-3, 4, (3, 4)) + g.uniform(0.1, 0.9, (3, 4))
    return q * b, b


def _xlogy_values(s):
    g = rng(s)
    return g.standard_normal((3, 4)), g.uniform(0.2, 3.0, (3, 1))


def _copysign_values(s):
    a, b = nonzero_pair((3, 4), (3, 4), s)
    return a, b


def _clamp_values(s):
    g = rng(s)
    a = g.uniform(-2.0, 2.0, (3, 4))
    return a, a + g.choice([-0.5, 0.5], (3, 4))  # never a tie


BINARY = [
    ("atan2", lambda a, b: a.atan2(b), np.arctan2, _atan2_values),
    ("fmod", lambda a, b: a.fmod(b), np.fmod, _fmod_values),
    ("xlogy", lambda a, b: a.xlogy(b), lambda a, b: a * np.log(b), _xlogy_values),
    ("copysign", lambda a, b: a.copysign(b), np.copysign, _copysign_values),
    ("clamp_min", lambda a, b: a.clamp_min(b), np.maximum, _clamp_values),
    ("clamp_max", lambda a, b: a.clamp_max(b), np.minimum, _clamp_values),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name, method, formula, values", BINARY, ids=[row[0] for row in BINARY])
def test_binary_op_matches_its_formula_and_passes_gradcheck(name, method, formula, values, seed):
    check_op(method, formula, *values(seed), rtol=1e-13, atol=1e-14)


def test_the_aliases_and_the_module_functions():
    x = mg.tensor([0.25, -0.5], dtype=mg.float64)
    y = mg.tensor([1.5, 2.0], dtype=mg.float64)
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arctanh", "atanh"), ("fix", "trunc")]:
        assert np.array_equal(getattr(x, alias)().numpy(), getattr(x, name)().numpy())
        assert np.array_equal(getattr(mg, alias)(x).numpy(), getattr(x, name)().numpy())
    assert np.array_equal(y.arccosh().numpy(), np.arccosh([1.5, 2.0]))
    assert np.array_equal(mg.arctan2(x, y).numpy(), np.arctan2(x.numpy(), y.numpy()))
    assert np.array_equal(mg.atan2(x, y).numpy(), np.arctan2(x.numpy(), y.numpy()))
    assert np.array_equal(mg.fmod(x, 0.3).numpy(), np.fmod(x.numpy(), 0.3))
    assert np.array_equal(mg.xlogy(2.0, y).numpy(), 2.0 * np.log(y.numpy()))
    assert mg.xlogy(2.0, y).dtype == np.float64
    for name in ("nansum", "nanmean", "cumprod", "logcumsumexp", "cummax", "cummin", "aminmax", "diff",
                 "heaviside", "clamp_min", "clamp_max", "copysign", "erfinv", "sinc", "bernoulli", "frac", "tan",
                 "sinh", "cosh"):
        assert callable(getattr(mg, name)), name


# ============================================================================ dtypes
@pytest.mark.parametrize("name", ["tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
                                  "erfinv", "sinc"])
def test_integers_give_float32(name):
    assert getattr(mg.tensor([0, 1, 2]), name)().dtype == np.float32
    assert getattr(mg.tensor([0.0, 0.5], dtype=mg.float64), name)().dtype == np.float64
    assert getattr(mg.tensor([0.0, 0.5]), name)().dtype == np.float32


def test_dtypes_of_the_ops_of_two_inputs():
    i, j = mg.tensor([7, -7, 5]), mg.tensor([2, 2, -3])
    assert mg.atan2(i, j).dtype == np.float32 and mg.copysign(i, j).dtype == np.float32
    assert mg.xlogy(i, j.abs()).dtype == np.float32
    fmod = mg.fmod(i, j)
    assert fmod.dtype == np.int64 and fmod.numpy().tolist() == [1, -1, 2]  # the dividend's sign
    assert i.remainder(j).numpy().tolist() == [1, 1, -1]  # (remainder: the divisor's)
    assert i.trunc().dtype == np.int64 and i.trunc().numpy().tolist() == [7, -7, 5]
    assert i.clamp_min(0).dtype == np.int64 and i.clamp_min(0).numpy().tolist() == [7, 0, 5]
    assert i.clamp_max(0.5).dtype == np.float32 and i.clamp_max(0.5).numpy().tolist() == [0.5, -7.0, 0.5]
    f32, f64 = mg.tensor([1.0, -2.0]), mg.tensor([0.5, 0.5], dtype=mg.float64)
    assert mg.atan2(f32, f64).dtype == np.float64 and mg.atan2(f32, 2.0).dtype == np.float32
    with pytest.raises(ZeroDivisionError, match="fmod"):
        mg.fmod(i, mg.tensor([1, 0, 1]))
    with pytest.raises(TypeError, match="frac"):
        i.frac()


# ============================================================================ edge values
def test_inverse_functions_at_the_ends_of_their_domain():
    ends = leaf([-1.0, 1.0])
    ends.asin().sum().backward()
    assert ends.grad.tolist() == [np.inf, np.inf]
    assert mg.tensor([-1.0, 1.0], dtype=mg.float64).asin().numpy().tolist() == [-math.pi / 2, math.pi / 2]
    ends = leaf([-1.0, 1.0])
    ends.acos().sum().backward()
    assert ends.grad.tolist() == [-np.inf, -np.inf]
    ends = leaf([-1.0, 1.0])
    assert ends.atanh().numpy().tolist() == [-np.inf, np.inf]
    ends.atanh().backward(mg.ones(2, dtype=mg.float64))
    assert ends.grad.tolist() == [np.inf, np.inf]
    one = leaf([1.0])
    assert one.acosh().numpy().tolist() == [0.0]
    one.acosh().sum().backward()
    assert one.grad.tolist() == [np.inf]
    ends = leaf([-1.0, 1.0])
    assert ends.erfinv().numpy().tolist() == [-np.inf, np.inf]
    ends.erfinv().backward(mg.ones(2, dtype=mg.float64))
    assert ends.grad.tolist() == [np.inf, np.inf]
    # outside the domain: NaN, without numpy's warnings
    with np.errstate(all="raise"):
        outside = mg.tensor([1.5, -2.0], dtype=mg.float64)
        for name in ("asin", "acos", "atanh", "erfinv"):
            assert np.isnan(getattr(outside, name)().numpy()).all(), name
        assert np.isnan(mg.tensor([0.5]).acosh().numpy()).all()


def test_erfinv_to_float64_precision_far_into_the_tails():
    y = np.array([0.0, -0.0, 1e-300, 1e-8, 0.3, -0.7, 0.999, 1 - 1e-10, -(1 - 2 ** -52), 1 - 2 ** -53])
    x = mg.tensor(y).erfinv().numpy()
    assert x[0] == 0 and math.copysign(1, x[1]) == -1 and x[2] == pytest.approx(1e-300 * math.sqrt(math.pi) / 2)
    # erf(x) = y, measured where it has digits to spare: through erfc for y near 1
    np.testing.assert_allclose(_erf(x[:6]), y[:6], rtol=2e-16, atol=0)
    erfc = np.vectorize(math.erfc)
    np.testing.assert_allclose(erfc(np.abs(x[6:])), 1 - np.abs(y[6:]), rtol=1e-13)
    assert mg.tensor([0.5]).erfinv().dtype == np.float32
    assert mg.tensor([0.5]).erfinv().item() == pytest.approx(0.4769362762044699, rel=1e-7)


def test_sinc_is_1_at_0_with_gradient_0_and_accurate_near_0():
    x = leaf([0.0, 1e-9, -1e-4, 0.01, 1.0, 2.5])
    y = x.sinc()
    assert y.numpy()[0] == 1.0
    np.testing.assert_allclose(y.numpy()[1:], _sinc(x.numpy()[1:]), rtol=1e-15, atol=1e-16)
    y.sum().backward()
    assert x.grad.numpy()[0] == 0.0
    # near 0 the direct formula cancels: against the derivative of sinc's series,
    # pi sum_k (-1)^k 2k z^(2k-1) / (2k+1)!, z = pi x, to 12 terms
    for v, g in zip(x.numpy()[1:4], x.grad.numpy()[1:4]):
        z = math.pi * v
        series = math.pi * sum((-1) ** k * 2 * k * z ** (2 * k - 1) / math.factorial(2 * k + 1) for k in range(1, 13))
        assert g == pytest.approx(series, rel=1e-14)
    assert x.grad.numpy()[4] == pytest.approx(-1.0, rel=1e-14)  # (cos(pi) - 0) / 1
    assert np.isfinite(mg.tensor([0.0, 1e-30], requires_grad=True).sinc().numpy()).all()


def test_xlogy_is_0_where_x_is_0_even_at_y_0_but_nan_at_y_nan():
    x = leaf([0.0, 0.0, 0.0, 1.0, 2.0])
    y = leaf([0.0, -1.0, np.nan, 0.0, 3.0])
    out = x.xlogy(y)
    assert out.numpy()[:3].tolist()[:2] == [0.0, 0.0] and np.isnan(out.numpy()[2])
    assert out.numpy()[3] == -np.inf and out.numpy()[4] == pytest.approx(2 * math.log(3))
    (out * mg.tensor([1.0, 1.0, 0.0, 1.0, 1.0], dtype=mg.float64)).sum().backward()
    assert x.grad.numpy()[:2].tolist() == [0.0, 0.0]  # (log y is -inf or NaN there: PyTorch's 0)
    assert y.grad.numpy()[:2].tolist() == [0.0, 0.0]  # (0 log y is 0 for every y: PyTorch's is NaN at y = 0)
    assert x.grad.numpy()[3] == -np.inf and y.grad.numpy()[3] == np.inf
    assert x.grad.numpy()[4] == pytest.approx(math.log(3)) and y.grad.numpy()[4] == pytest.approx(2 / 3)
    x, y = leaf([0.0, 0.0]), leaf([2.0, 0.5])  # at x = 0, y > 0: x log y is smooth in x, slope log y
    x.xlogy(y).sum().backward()
    assert x.grad.numpy().tolist() == [math.log(2.0), math.log(0.5)] and y.grad.numpy().tolist() == [0.0, 0.0]


def test_atan2_at_the_origin_and_on_the_axes():
    a, b = leaf([0.0, 0.0, 1.0, -0.0]), leaf([0.0, -1.0, 0.0, -1.0])
    out = a.atan2(b)
    assert out.numpy().tolist() == [0.0, math.pi, math.pi / 2, -math.pi]
    out.sum().backward()
    assert a.grad.tolist() == [0.0, -1.0, 0.0, -1.0] and b.grad.tolist() == [0.0, 0.0, -1.0, 0.0]
    huge = leaf([1e200]), leaf([1e200])
    huge[0].atan2(huge[1]).sum().backward()
    assert huge[0].grad.numpy()[0] == pytest.approx(0.5e-200) and huge[1].grad.numpy()[0] == pytest.approx(-0.5e-200)


def test_trunc_frac_fmod_copysign_edges():
    x = leaf([2.7, -2.7, 3.0, -0.5])
    assert x.trunc().numpy().tolist() == [2.0, -2.0, 3.0, -0.0]
    np.testing.assert_allclose(x.frac().numpy(), [0.7, -0.7, 0.0, -0.5], atol=1e-15)
    x.trunc().sum().backward()
    assert x.grad.tolist() == [0.0] * 4
    x.grad = None
    x.frac().sum().backward()
    assert x.grad.tolist() == [1.0] * 4
    assert np.isnan(mg.tensor([np.inf]).frac().item())
    a, b = leaf([7.0, -7.0, 5.5, 1.0]), leaf([2.0, 2.0, -2.0, 0.0])
    out = a.fmod(b)
    assert out.numpy()[:3].tolist() == [1.0, -1.0, 1.5] and np.isnan(out.numpy()[3])
    out[:3].sum().backward()
    assert a.grad.numpy()[:3].tolist() == [1.0, 1.0, 1.0] and b.grad.numpy()[:3].tolist() == [-3.0, 3.0, 2.0]
    a, b = leaf([0.0, 2.0, -3.0, 1.0]), leaf([1.0, -1.0, 1.0, -0.0])
    out = a.copysign(b)
    assert out.numpy().tolist() == [0.0, -2.0, 3.0, -1.0]
    out.sum().backward()
    assert a.grad.tolist() == [0.0, -1.0, -1.0, -1.0] and b.grad.tolist() == [0.0] * 4


def test_heaviside_is_outside_the_graph():
    x = mg.tensor([-1.5, 0.0, 2.0, np.nan], requires_grad=True)
    out = x.heaviside(mg.tensor([0.25]))
    assert out.numpy().tolist() == [0.0, 0.25, 1.0, 0.0] and not out.requires_grad and out.dtype == np.float32
    assert mg.heaviside(mg.tensor([-3, 0, 4]), mg.tensor([7])).numpy().tolist() == [0, 7, 1]
    assert mg.tensor([[0.0], [1.0]]).heaviside(mg.tensor([0.5, 0.75])).shape == (2, 2)


def test_clamp_min_and_max_ties_tensor_bounds_and_in_place():
    x = leaf([0.0, 1.0, -1.0])
    x.clamp_min(0.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0]  # a tie keeps x (PyTorch's)
    x, bound = leaf([0.0, 1.0, -1.0]), leaf([0.0, 0.5, 0.5])
    out = x.clamp_max(bound)
    assert out.numpy().tolist() == [0.0, 0.5, -1.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0] and bound.grad.tolist() == [0.0, 1.0, 0.0]
    assert np.isnan(mg.tensor([np.nan]).clamp_min(0.0).item())
    y = mg.tensor([-2.0, 0.5, 3.0])
    assert y.clamp_min_(0.0) is y and y.numpy().tolist() == [0.0, 0.5, 3.0]
    assert y.clamp_max_(1.0) is y and y.numpy().tolist() == [0.0, 0.5, 1.0]
    w = leaf([-2.0, 0.5, 3.0])
    h = w * 2
    h.clamp_min_(0.0)  # in the graph: the gradient goes through the in-place op
    h.clamp_max_(mg.tensor([5.0, 5.0, 5.0], dtype=mg.float64))
    assert h.numpy().tolist() == [0.0, 1.0, 5.0]
    h.sum().backward()
    assert w.grad.tolist() == [0.0, 2.0, 0.0]
    with pytest.raises(TypeError):
        mg.tensor([1, 2]).clamp_min_(0.5)  # (an int tensor cannot hold floats)


# ============================================================================ reductions
def test_nansum_and_nanmean_ignore_nan_and_pass_gradcheck():
    a = normal((3, 4), 0)
    a[0, 1] = a[2, 3] = a[1, 0] = np.nan
    for dim, keepdim in [(None, False), (1, False), (0, True), ((0, 1), False)]:
        check_op(lambda x: x.nansum(dim, keepdim), lambda v: np.nansum(v, axis=dim, keepdims=keepdim), a)
        check_op(lambda x: x.nanmean(dim, keepdim), lambda v: np.nanmean(v, axis=dim, keepdims=keepdim), a,
                 rtol=1e-14)
    x = leaf(a)
    x.nanmean(1).sum().backward()
    counts = (~np.isnan(a)).sum(1, keepdims=True)
    np.testing.assert_allclose(x.grad, np.where(np.isnan(a), 0.0, 1.0 / counts))
    assert (x.grad.numpy()[np.isnan(a)] == 0).all()


def test_nanmean_of_all_nan_is_nan_with_gradient_0():
    x = leaf([[np.nan, np.nan], [1.0, np.nan]])
    out = x.nanmean(dim=1)
    assert np.isnan(out.numpy()[0]) and out.numpy()[1] == 1.0
    out[1].backward()
    assert x.grad.tolist() == [[0.0, 0.0], [1.0, 0.0]]
    with pytest.raises(TypeError, match="nanmean"):
        mg.tensor([1, 2]).nanmean()
    assert mg.tensor([1, 2]).nanmean(dtype=mg.float64).item() == 1.5
    assert mg.tensor([1, 2], dtype=mg.int32).nansum().dtype == np.int64
    assert mg.tensor([np.nan, 1.0]).nansum(dtype=mg.float64).dtype == np.float64


def test_sum_and_mean_with_dtype():
    x = mg.tensor([1.5, 2.5, 0.25], requires_grad=True)
    s = x.sum(dtype=mg.float64)
    assert s.dtype == np.float64 and s.item() == 4.25
    s.backward()
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [1.0, 1.0, 1.0]
    m = mg.tensor([1, 2]).mean(dtype=mg.float64)
    assert m.dtype == np.float64 and m.item() == 1.5
    assert mg.tensor([1.5, 2.5]).sum(dtype=mg.int32).dtype == np.int32
    assert mg.tensor([1.5, 2.5]).sum(dtype=mg.int32).item() == 3  # converted first, then summed (PyTorch's)
    assert mg.tensor([[1, 2]], dtype=mg.int32).sum(dim=1, dtype=mg.int32).dtype == np.int32
    with pytest.raises(TypeError, match="mean"):
        mg.tensor([1.0]).mean(dtype=mg.int32)
    assert mg.sum(mg.tensor([1.0, 2.0]), dtype=mg.float64).dtype == np.float64


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_passes_gradcheck_also_at_zeros(dim):
    a = rng(dim + 5).uniform(0.5, 1.5, (3, 4)) * rng(dim + 7).choice([-1.0, 1.0], (3, 4))
    check_op(lambda x: x.cumprod(dim), lambda v: np.cumprod(v, axis=dim), a, rtol=1e-14)
    a[1, 1] = 0.0
    a[0, 2] = a[2, 2] = 0.0  # one zero, and two zeros in a row or column
    check_op(lambda x: x.cumprod(dim), lambda v: np.cumprod(v, axis=dim), a, rtol=1e-14)


def test_cumprod_gradient_at_zeros_is_the_product_of_the_others():
    x = leaf([2.0, 0.0, 3.0, 0.0, 5.0])
    x.cumprod(0).sum().backward()
    assert x.grad.tolist() == [1.0, 8.0, 0.0, 0.0, 0.0]  # d/dx_1 = 2 + 2*3 + 0 + 0: (by hand, and PyTorch's)
    assert mg.tensor([1, 2, 3], dtype=mg.int32).cumprod(0).dtype == np.int64
    assert mg.tensor([1, 2, 3]).cumprod(0, dtype=mg.float64).numpy().tolist() == [1.0, 2.0, 6.0]
    assert mg.tensor(3.0).cumprod(0).item() == 3.0


def _logcumsumexp_reference(v, axis):
    return np.log(np.cumsum(np.exp(v), axis=axis))


@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_passes_gradcheck(dim):
    check_op(lambda x: x.logcumsumexp(dim), lambda v: _logcumsumexp_reference(v, dim), normal((3, 4), dim, 2.0),
             rtol=1e-13)


def test_logcumsumexp_does_not_overflow_and_takes_minus_inf():
    x = leaf([1000.0, 1000.0, -1000.0, 1001.0])
    with np.errstate(all="raise"):
        out = x.logcumsumexp(0)
    np.testing.assert_allclose(out.numpy(), [1000.0, 1000.0 + math.log(2), 1000.0 + math.log(2),
                                             1000.0 + math.log(2 + math.e)], rtol=1e-15)
    out.backward(mg.tensor([1.0, -2.0, 0.5, 3.0], dtype=mg.float64))
    # dx_k = sum_{i >= k} g_i e^(x_k - y_i), summed by hand
    y, g = out.numpy(), np.array([1.0, -2.0, 0.5, 3.0])
    expected = [sum(g[i] * math.exp(x.numpy()[k] - y[i]) for i in range(k, 4)) for k in range(4)]
    np.testing.assert_allclose(x.grad, expected, rtol=1e-11, atol=1e-15)
    z = leaf([-np.inf, -np.inf, 0.0])
    out = z.logcumsumexp(0)
    assert out.numpy().tolist() == [-np.inf, -np.inf, 0.0]
    out.sum().backward()
    assert z.grad.tolist() == [0.0, 0.0, 1.0]
    assert mg.tensor([1, 2]).logcumsumexp(0).dtype == np.float32


@pytest.mark.parametrize("name, accumulate", [("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate)])
@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_and_cummin_pass_gradcheck(name, accumulate, dim):
    a = distinct((4, 5), dim + 11)
    check_op(lambda x: getattr(x, name)(dim).values, lambda v: accumulate(v, axis=dim), a)
    values, indices = getattr(mg.tensor(a), name)(dim)
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(np.take_along_axis(a, indices.numpy(), dim), values.numpy())


def test_cummax_ties_nan_gradient_to_the_index_and_0d():
    values, indices = mg.tensor([1.0, 1.0, 0.0, 1.0, 2.0]).cummax(0)
    assert values.numpy().tolist() == [1.0, 1.0, 1.0, 1.0, 2.0] and indices.numpy().tolist() == [0, 1, 1, 3, 4]
    values, indices = mg.cummin(mg.tensor([1.0, np.nan, 3.0, np.nan, 0.0]), 0)
    assert np.isnan(values.numpy()[1:]).all() and indices.numpy().tolist() == [0, 1, 1, 3, 3]
    x = leaf([1.0, 3.0, 2.0, 5.0])
    x.cummax(0).values.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 0.0, 1.0]  # x_1 = 3 is the running max twice
    v, i = mg.tensor(3.0).cummax(0)
    assert v.shape == () and i.shape == () and i.item() == 0
    assert mg.tensor([1, 3, 2]).cummax(0).values.numpy().tolist() == [1, 3, 3]


def test_aminmax():
    a = distinct((3, 4), 3)
    out = mg.aminmax(mg.tensor(a), dim=1)
    assert out.min.numpy().tolist() == a.min(1).tolist() and out.max.numpy().tolist() == a.max(1).tolist()
    lo, hi = mg.tensor(a).aminmax()
    assert lo.item() == a.min() and hi.item() == a.max()
    assert mg.tensor(a).aminmax(dim=0, keepdim=True).max.shape == (1, 4)
    check_op(lambda x: x.aminmax(dim=1).min * 2 + x.aminmax(dim=1).max, lambda v: 2 * v.min(1) + v.max(1), a)
    x = leaf([1.0, 3.0, 3.0, 1.0])
    lo, hi = x.aminmax()
    (lo + hi).backward()
    assert x.grad.tolist() == [0.5, 0.5, 0.5, 0.5]  # equal extremes share, as amin and amax
    with pytest.raises(ValueError):
        mg.zeros(0).aminmax()


@pytest.mark.parametrize("n, dim", [(1, -1), (2, 1), (1, 0), (3, 1)])
def test_diff_passes_gradcheck(n, dim):
    check_op(lambda x: x.diff(n, dim), lambda v: np.diff(v, n, axis=dim), normal((3, 5), n))


def test_diff_with_prepend_and_append():
    a, p, q = normal((3, 4), 1), normal((3, 1), 2), normal((3, 2), 3)
    check_op(lambda x, u, w: x.diff(2, 1, prepend=u, append=w),
             lambda v, u, w: np.diff(v, 2, axis=1, prepend=u, append=w), a, p, q)
    assert mg.diff(mg.tensor([1, 4, 9, 16]), n=2).numpy().tolist() == [2, 2]
    assert mg.tensor([1, 4, 9, 16]).diff(n=0).numpy().tolist() == [1, 4, 9, 16]
    assert mg.tensor([1, 4, 9, 16]).diff(n=5).shape == (0,)
    assert mg.tensor([True, False, False, True]).diff().numpy().tolist() == [True, False, True]
    mixed = mg.tensor([1, 4]).diff(prepend=mg.tensor([0.5]))
    assert mixed.dtype == np.float32 and mixed.numpy().tolist() == [0.5, 3.0]
    assert mg.tensor([[1.0, 4.0]]).diff(dim=1, prepend=0.0).numpy().tolist() == [[1.0, 3.0]]
    with pytest.raises(ValueError, match="diff"):
        mg.tensor(1.0).diff()
    with pytest.raises(ValueError, match="diff"):
        mg.tensor([[1.0, 4.0]]).diff(prepend=mg.tensor([0.0]))


# ============================================================================ random, outside the graph
def test_bernoulli_follows_its_probabilities_and_the_seed():
    p = mg.tensor([0.0, 1.0, 0.3, 0.8] * 2500)
    mg.manual_seed(5)
    first = mg.bernoulli(p)
    mg.manual_seed(5)
    again = p.bernoulli()
    assert np.array_equal(first.numpy(), again.numpy()) and first.dtype == np.float32 and not first.requires_grad
    draws = first.numpy().reshape(-1, 4)
    assert (draws[:, 0] == 0).all() and (draws[:, 1] == 1).all()
    assert abs(draws[:, 2].mean() - 0.3) < 0.04 and abs(draws[:, 3].mean() - 0.8) < 0.04
    g1, g2 = mg.Generator().manual_seed(1), mg.Generator().manual_seed(1)
    assert np.array_equal(p.bernoulli(generator=g1).numpy(), mg.bernoulli(p, generator=g2).numpy())
    assert set(np.unique(mg.zeros(100).bernoulli(0.5).numpy())) == {0.0, 1.0}
    p.requires_grad = True
    assert not p.bernoulli().requires_grad
    with pytest.raises(ValueError, match="bernoulli"):
        mg.tensor([1.5]).bernoulli()
    with pytest.raises(TypeError, match="bernoulli"):
        mg.tensor([0, 1]).bernoulli()


def test_bernoulli_in_place():
    x = mg.zeros(4000)
    g = mg.Generator().manual_seed(3)
    assert x.bernoulli_(0.25, generator=g) is x
    assert abs(x.numpy().mean() - 0.25) < 0.03 and set(np.unique(x.numpy())) == {0.0, 1.0}
    y = mg.zeros(4000)
    y.bernoulli_(0.25, generator=mg.Generator().manual_seed(3))
    assert np.array_equal(x.numpy(), y.numpy())
    z = mg.zeros(3, dtype=mg.int64).bernoulli_(mg.tensor([0.0, 1.0, 1.0]))
    assert z.dtype == np.int64 and z.numpy().tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        mg.zeros(3).bernoulli_(-0.1)


def test_random_in_place_ranges_and_seed():
    g = mg.Generator().manual_seed(0)
    x = mg.zeros(2000).random_(5, generator=g)
    assert set(np.unique(x.numpy())) == {0.0, 1.0, 2.0, 3.0, 4.0}
    x.random_(2, 5, generator=g)
    assert set(np.unique(x.numpy())) == {2.0, 3.0, 4.0}
    x.random_(**{"from": -3, "to": -1})
    assert set(np.unique(x.numpy())) == {-3.0, -2.0}
    assert set(np.unique(mg.zeros(500).random_(to=2).numpy())) == {0.0, 1.0}
    assert 0 <= mg.zeros(500).random_().numpy().min() and mg.zeros(500).random_().numpy().max() <= 2 ** 24
    assert mg.zeros(500).random_().numpy().max() > 2 ** 20
    u = mg.zeros(500, dtype=mg.uint8).random_(250, None)
    assert u.numpy().min() >= 250 and u.numpy().max() <= 255
    b = mg.zeros(100, dtype=mg.bool_).random_()
    assert b.dtype == np.bool_ and set(np.unique(b.numpy())) == {False, True}
    a1 = mg.zeros(10).random_(0, 100, generator=mg.Generator().manual_seed(9))
    a2 = mg.zeros(10).random_(0, 100, generator=mg.Generator().manual_seed(9))
    assert np.array_equal(a1.numpy(), a2.numpy())
    with pytest.raises(ValueError, match="from"):
        mg.zeros(3).random_(5, 2)
    with pytest.raises(ValueError, match="uint8"):
        mg.zeros(3, dtype=mg.uint8).random_(300)


def test_exponential_in_place():
    mg.manual_seed(1)
    x = mg.zeros(20000).exponential_(4.0)
    mg.manual_seed(1)
    y = mg.zeros(20000).exponential_(4.0)
    assert np.array_equal(x.numpy(), y.numpy()) and x.dtype == np.float32
    assert x.numpy().min() >= 0 and abs(x.numpy().mean() - 0.25) < 0.01 and abs(x.numpy().std() - 0.25) < 0.01
    with pytest.raises(ValueError, match="lambd"):
        mg.zeros(3).exponential_(0)
    with pytest.raises(TypeError, match="exponential_"):
        mg.zeros(3, dtype=mg.int64).exponential_()
    w = mg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        w.exponential_()  # (a leaf that requires grad: in place only inside no_grad)
    with mg.no_grad():
        w.exponential_()
    assert (w.numpy() > 0).all()


# ============================================================================ PyTorch's numbers
def _torch_unary_points():
    g = np.random.default_rng(0)
    return {
        "tan": g.uniform(-1.5, 1.5, 9), "sinh": g.normal(0, 3, 9), "cosh": g.normal(0, 3, 9),
        "asin": np.r_[g.uniform(-1, 1, 7), -1.0, 1.0], "acos": np.r_[g.uniform(-1, 1, 7), -1.0, 1.0],
        "atan": g.normal(0, 5, 9), "asinh": g.normal(0, 5, 9), "acosh": np.r_[g.uniform(1, 9, 8), 1.0],
        "atanh": np.r_[g.uniform(-1, 1, 7), -1.0, 1.0], "trunc": g.normal(0, 3, 9), "frac": g.normal(0, 3, 9),
        "erfinv": np.r_[g.uniform(-1, 1, 6), -1.0, 0.0, 0.999999], "sinc": np.r_[g.normal(0, 2, 7), 0.0, 1e-3],
    }


@pytest.mark.parametrize("name", sorted(_torch_unary_points()))
def test_unary_ops_match_pytorch(name):
    torch = pytest.importorskip("torch")
    points = _torch_unary_points()[name]
    x = leaf(points)
    out = getattr(x, name)()
    out.backward(mg.ones(out.shape, dtype=mg.float64))  # (not sum(): atanh's -inf + inf would be NaN)
    t = torch.tensor(points, dtype=torch.float64, requires_grad=True)
    expected = getattr(torch, name)(t)
    expected.backward(torch.ones_like(expected))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    for dtype in (np.float32, np.int64):  # the result dtype, of integers too
        small = np.array([0, 1]) if dtype == np.int64 else points[:3].astype(dtype)
        if name == "frac" and dtype == np.int64:
            continue  # (PyTorch and minigrad both refuse)
        assert str(getattr(mg.tensor(small), name)().dtype) == str(getattr(torch, name)(torch.tensor(small)).dtype
                                                                   ).replace("torch.", "")


@pytest.mark.parametrize("name", ["atan2", "fmod", "xlogy", "copysign", "clamp_min", "clamp_max"])
def test_binary_ops_match_pytorch(name):
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(1)
    a = np.r_[g.normal(0, 2, 8), 0.0, 0.0, 3.0]
    b = np.r_[g.normal(0, 2, 8), 0.5, -2.0, -1.5]
    if name == "xlogy":
        b = np.abs(b)
    x, y = leaf(a), leaf(b)
    out = getattr(x, name)(y)
    out.backward(mg.tensor(np.arange(1.0, 12.0)))
    tx, ty = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
    expected = getattr(torch, name)(tx, ty)
    expected.backward(torch.arange(1.0, 12.0, dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.grad, ty.grad.numpy(), rtol=1e-12, atol=1e-14)
    ints = np.array([7, -7, 3]), np.array([2, 3, -2])
    assert str(getattr(mg.tensor(ints[0]), name)(mg.tensor(ints[1])).dtype) == str(
        getattr(torch, name)(torch.tensor(ints[0]), torch.tensor(ints[1])).dtype).replace("torch.", "")


def test_heaviside_matches_pytorch():
    torch = pytest.importorskip("torch")
    a, v = np.array([-1.0, 0.0, 2.0, np.nan, -0.0]), np.array([0.5])
    np.testing.assert_array_equal(mg.tensor(a).heaviside(mg.tensor(v)).numpy(),
                                  torch.heaviside(torch.tensor(a), torch.tensor(v)).numpy())


def test_reductions_and_scans_match_pytorch():
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(2)
    a = g.normal(0, 1, (4, 5))
    a[1, 2] = a[3, 0] = 0.0
    nans = a.copy()
    nans[0, 1] = nans[2, 4] = np.nan
    upstream = g.normal(0, 1, (4, 5))
    cases = [
        (lambda x: x.cumprod(1), lambda t: torch.cumprod(t, 1), a),
        (lambda x: x.cumprod(0), lambda t: torch.cumprod(t, 0), a),
        (lambda x: x.logcumsumexp(1), lambda t: torch.logcumsumexp(t, 1), a * 30),
        (lambda x: x.cummax(1).values, lambda t: torch.cummax(t, 1).values, a),
        (lambda x: x.cummin(0).values, lambda t: torch.cummin(t, 0).values, a),
        (lambda x: x.diff(2, 1), lambda t: torch.diff(t, 2, 1), a),
        (lambda x: x.nansum(1, keepdim=True).expand(4, 5), lambda t: torch.nansum(t, 1, keepdim=True).expand(4, 5),
         nans),
        (lambda x: x.nanmean(0).expand(4, 5), lambda t: torch.nanmean(t, 0).expand(4, 5), nans),
    ]
    for ours, theirs, values in cases:
        x = leaf(values)
        out = ours(x)
        v = upstream[tuple(slice(0, n) for n in out.shape)]
        out.backward(mg.tensor(v))
        t = torch.tensor(values, requires_grad=True)
        expected = theirs(t)
        expected.backward(torch.tensor(v))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    for name in ("cummax", "cummin"):
        ties = np.array([[1.0, 1.0, 0.0, 1.0, 2.0], [3.0, np.nan, 3.0, np.nan, 0.0]])
        np.testing.assert_array_equal(getattr(mg.tensor(ties), name)(1).indices.numpy(),
                                      getattr(torch, name)(torch.tensor(ties), 1).indices.numpy())
    lo, hi = mg.tensor(a).aminmax(dim=0)
    expected = torch.aminmax(torch.tensor(a), dim=0)
    assert lo.numpy().tolist() == expected.min.tolist() and hi.numpy().tolist() == expected.max.tolist()
    f = np.array([1.5, 2.5, 0.25], dtype=np.float32)
    assert mg.tensor(f).sum(dtype=mg.int32).item() == torch.tensor(f).sum(dtype=torch.int32).item()
    assert mg.tensor([1, 2, 3], dtype=mg.int32).cumprod(0).dtype == np.int64
    assert torch.cumprod(torch.tensor([1, 2, 3], dtype=torch.int32), 0).dtype == torch.int64
    assert str(mg.tensor(f).mean(dtype=mg.float64).dtype) == "float64"
    assert mg.tensor(f).mean(dtype=mg.float64).item() == torch.tensor(f).mean(dtype=torch.float64).item()


def test_inverse_functions_at_one_match_pytorch_in_float32():
    torch = pytest.importorskip("torch")
    points = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], dtype=np.float32)
    for name in ("asin", "acos", "atanh", "erfinv"):
        x = mg.tensor(points, requires_grad=True)
        out = getattr(x, name)()
        out.backward(mg.ones(out.shape))
        t = torch.tensor(points, requires_grad=True)
        expected = getattr(torch, name)(t)
        expected.backward(torch.ones_like(expected))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=2e-6)
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=2e-6)


def test_positive_helper_values_for_acosh_and_log_like_ops():
    # xlogy against its formula where y is a float32 tensor: float32 kept
    y = mg.tensor(positive((5,), 4).astype(np.float32))
    out = mg.tensor([0.0, 1.0, 2.0, 0.0, -1.0]).xlogy(y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.array([0.0, 1.0, 2.0, 0.0, -1.0]) * np.log(y.numpy()), rtol=1e-6)
