"""The ops that take axes, indices or targets, beyond those of test_ops.py: logsumexp, std, prod,
cumsum, topk, gather, scatter_add, flip, repeat, one_hot, the losses nll_loss, binary_cross_entropy
(with logits) and cross_entropy against probabilities; then what the op table cannot say about the
elementwise ops it lists (integers, ties, PyTorch's conventions), the tests without gradient
(isnan, isfinite), the creation functions eye, linspace, full_like, and the errors of each.

Every differentiable op: the forward equals a numpy reference and the backward passes a float64
gradient check (every element of every input, see strategies.check_op)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from helpers import has_all
from minigrad import nn
from minigrad.nn import functional as F
from strategies import check_op, distinct, leaf, log_softmax_reference, normal, reductions, rng, seeds, shapes


def _refuse(fn, exception, *parts):
    """`fn()` raises `exception`, with a message that contains every one of `parts`."""
    with pytest.raises(exception) as info:
        fn()
    has_all(str(info.value), *parts)


def _axes(shape, axis):
    return tuple(range(len(shape))) if axis is None else axis


# ============================================================================ reductions
def logsumexp_reference(x, axis, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@settings(max_examples=15)
@given(case=reductions(), seed=seeds)
def test_logsumexp(case, seed):
    shape, axis, keepdims = case
    dim = _axes(shape, axis)
    check_op(lambda x: x.logsumexp(dim, keepdim=keepdims),
             lambda a: logsumexp_reference(a, dim, keepdims), normal(shape, seed), rtol=1e-10)


def test_logsumexp_does_not_overflow_and_takes_rows_of_minus_inf():
    x = mg.tensor(np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [-1000.0, 0.0]]))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = x.logsumexp(1).numpy()
    np.testing.assert_allclose(out, [1000.0 + math.log(2.0), -np.inf, 0.0])
    assert mg.logsumexp(mg.zeros(2, 0), 1).numpy().tolist() == [-np.inf, -np.inf]


def test_logsumexp_keeps_float32_and_promotes_integers():
    assert mg.randn(3, 4).logsumexp(-1).dtype == np.float32
    assert mg.arange(4).logsumexp(0).dtype == np.float32


@pytest.mark.parametrize("ddof", [0, 1])
@settings(max_examples=10)
@given(case=reductions(), seed=seeds)
def test_std(ddof, case, seed):
    shape, axis, keepdims = case
    if np.prod([shape[a] for a in np.atleast_1d(_axes(shape, axis))]) < 2:
        return  # one value: std 0, where sqrt has no derivative (and ddof=1 leaves no degrees of freedom)
    check_op(lambda x: x.std(axis=axis, keepdims=keepdims, ddof=ddof),
             lambda a: np.std(a, axis=axis, keepdims=keepdims, ddof=ddof), normal(shape, seed), rtol=1e-10)


@settings(max_examples=15)
@given(case=reductions(), seed=seeds)
def test_prod(case, seed):
    shape, axis, keepdims = case
    values = rng(seed).uniform(0.5, 1.5, shape) * rng(seed + 1).choice([-1.0, 1.0], shape)
    check_op(lambda x: x.prod(axis=axis, keepdims=keepdims),
             lambda a: np.prod(a, axis=axis, keepdims=keepdims), values, rtol=1e-10)


def test_prod_gradient_with_zeros_is_the_product_of_the_others():
    x = leaf([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    x.prod(axis=1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])
    check_op(lambda x: x.prod(), np.prod, np.array([[2.0, 0.0], [3.0, -1.0]]))


def test_prod_of_integers_stays_integer_and_of_nothing_is_one():
    assert mg.tensor([2, 3, 4]).prod().item() == 24 and mg.tensor([2, 3, 4]).prod().dtype == np.int64
    x = leaf(np.zeros((0, 3)))
    out = x.prod(axis=0)
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0, 1.0])
    out.sum().backward()
    assert x.grad.shape == (0, 3)


@settings(max_examples=15)
@given(shape=shapes, seed=seeds, data=st.data())
def test_cumsum(shape, seed, data):
    ndim = max(len(shape), 1)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    reference = (lambda a: np.cumsum(a, axis=dim)) if shape else (lambda a: a.copy())
    check_op(lambda x: x.cumsum(dim), reference, normal(shape, seed))


def test_cumsum_of_integers_and_bad_dim():
    np.testing.assert_array_equal(mg.tensor([[1, 2], [3, 4]]).cumsum(0).numpy(), [[1, 2], [4, 6]])
    _refuse(lambda: mg.ones(2, 3).cumsum(2), mg.AxisError, "cumsum", "axis 2", "(2, 3)")


@pytest.mark.parametrize("largest", [True, False])
@settings(max_examples=15)
@given(shape=st.sampled_from([(5,), (3, 4), (2, 3, 4)]), seed=seeds, data=st.data())
def test_topk(largest, shape, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, shape[dim]))
    values = distinct(shape, seed)
    order = np.argsort(-values if largest else values, axis=dim)
    expected_indices = np.take(order, np.arange(k), axis=dim)
    out, indices = leaf(values).topk(k, dim=dim, largest=largest)
    assert indices.dtype == np.int64 and not indices.requires_grad
    np.testing.assert_array_equal(indices.numpy(), expected_indices)
    check_op(lambda x: x.topk(k, dim, largest).values,
             lambda a: np.take_along_axis(a, expected_indices, axis=dim), values)


def test_topk_returns_named_values_and_indices_and_ties_keep_order():
    result = mg.topk(mg.tensor([1.0, 3.0, 3.0, 2.0]), 2)
    values, indices = result
    assert result.values is values and result.indices is indices
    assert values.tolist() == [3.0, 3.0] and indices.tolist() == [1, 2]
    assert mg.tensor([1, 5, 2], dtype=np.uint8).topk(1).indices.tolist() == [1]


def test_topk_errors():
    _refuse(lambda: mg.ones(2, 3).topk(4, dim=1), ValueError, "topk", "k=4", "dim 1", "size 3", "(2, 3)")
    _refuse(lambda: mg.ones(2, 3).topk(1, dim=2), mg.AxisError, "topk", "axis 2", "(2, 3)")
    _refuse(lambda: mg.tensor(1.0).topk(1), ValueError, "topk", "()")


# ============================================================================ indexing
def gather_reference(a, dim, index):
    """PyTorch's gather, by loops: out[i] = a[i with i[dim] replaced by index[i]]."""
    out = np.empty(index.shape, dtype=a.dtype)
    for i in np.ndindex(*index.shape):
        source = list(i)
        source[dim] = index[i]
        out[i] = a[tuple(source)]
    return out


def scatter_add_reference(a, dim, index, src):
    out = a.copy()
    for i in np.ndindex(*index.shape):
        target = list(i)
        target[dim] = index[i]
        out[tuple(target)] += src[i]
    return out


@st.composite
def index_cases(draw):
    """(input shape, dim, index) with PyTorch's rules: index as many dims as the input, no larger
    along the other dims, any size along dim (positions repeat), values in 0..size-1 along dim."""
    shape = draw(st.sampled_from([(4,), (3, 4), (2, 3, 4)]))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(draw(st.integers(1, 5)) if d == dim % len(shape) else draw(st.integers(1, n))
                        for d, n in enumerate(shape))
    seed = draw(seeds)
    return shape, dim, rng(seed).integers(0, shape[dim], index_shape)


@settings(max_examples=20)
@given(case=index_cases(), seed=seeds)
def test_gather(case, seed):
    shape, dim, index = case
    out = check_op(lambda x: x.gather(dim, index), lambda a: gather_reference(a, dim % len(shape), index),
                   normal(shape, seed))
    assert out.shape == index.shape


def test_gather_gradient_adds_up_repeated_positions():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    out = x.gather(1, mg.tensor([[0, 0, 0], [1, 0, 1]]))
    np.testing.assert_array_equal(out.numpy(), [[1.0, 1.0, 1.0], [4.0, 3.0, 4.0]])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad, [[3.0, 0.0], [1.0, 2.0]])


def test_gather_errors():
    x = mg.ones(2, 3)
    _refuse(lambda: x.gather(1, mg.tensor([[0, 3]])), IndexError, "gather", "index 3", "dim 1", "(2, 3)")
    _refuse(lambda: x.gather(1, mg.tensor([[-1]])), IndexError, "gather", "index -1")
    _refuse(lambda: x.gather(1, mg.tensor([0, 1])), ValueError, "gather", "(2,)", "(2, 3)", "dims")
    _refuse(lambda: x.gather(1, mg.tensor([[0], [1], [2]])), ValueError, "gather", "(3, 1)", "(2, 3)", "dim 0")
    _refuse(lambda: x.gather(0, mg.tensor([[0.0]])), TypeError, "gather", "integer", "float32")
    _refuse(lambda: x.gather(2, mg.tensor([[0]])), mg.AxisError, "gather", "axis 2")


@settings(max_examples=20)
@given(case=index_cases(), seed=seeds, extra=st.integers(0, 2))
def test_scatter_add(case, seed, extra):
    shape, dim, index = case
    d = dim % len(shape)
    index = index.clip(0, shape[d] - 1)
    src_shape = tuple(n + extra for n in index.shape)  # src may be larger than index: only its corner is used
    out = check_op(lambda x, s: x.scatter_add(dim, index, s),
                   lambda a, s: scatter_add_reference(a, d, index, s), normal(shape, seed), normal(src_shape, seed + 1))
    assert out.shape == shape


def test_scatter_add_adds_every_copy_and_leaves_the_input_alone():
    x = mg.zeros(3)
    out = mg.scatter_add(x, 0, mg.tensor([0, 2, 0, 0]), [1.0, 2.0, 3.0, 4.0])
    assert out.tolist() == [8.0, 0.0, 2.0] and x.tolist() == [0.0, 0.0, 0.0]


def test_scatter_add_errors():
    x = mg.zeros(2, 3)
    _refuse(lambda: x.scatter_add(1, mg.tensor([[0, 5]]), mg.ones(1, 2)), IndexError, "scatter_add", "index 5")
    _refuse(lambda: x.scatter_add(1, mg.tensor([[0, 1]]), mg.ones(1, 1)), ValueError, "scatter_add", "(1, 2)",
            "(1, 1)")
    _refuse(lambda: x.scatter_add(1, mg.tensor([[0]]), mg.ones(1, 1, dtype=np.float64)), TypeError, "scatter_add",
            "float32", "float64")


@settings(max_examples=15)
@given(shape=st.sampled_from([(4,), (3, 4), (2, 3, 4)]), seed=seeds, data=st.data())
def test_flip(shape, seed, data):
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    check_op(lambda x: x.flip(dims), lambda a: np.flip(a, dims), normal(shape, seed))


def test_flip_copies_as_pytorch_and_checks_dims():
    x = mg.tensor([1.0, 2.0, 3.0])
    y = x.flip(0)
    y.zero_()
    assert x.tolist() == [1.0, 2.0, 3.0] and mg.flip(x, -1).tolist() == [3.0, 2.0, 1.0]
    _refuse(lambda: mg.ones(2, 3).flip(0, -2), ValueError, "flip", "twice", "(2, 3)")
    _refuse(lambda: mg.ones(2, 3).flip(2), mg.AxisError, "flip", "axis 2")


@pytest.mark.parametrize("shape, sizes", [((3,), (2,)), ((2, 3), (2, 1)), ((2, 3), (1, 3)), ((2, 3), (2, 2, 2)),
                                          ((), (3,)), ((2, 1), (1, 4)), ((2, 3), (0, 1))])
def test_repeat(shape, sizes):
    out = check_op(lambda x: x.repeat(*sizes), lambda a: np.tile(a, sizes), normal(shape, 4))
    assert out.shape == np.tile(np.ones(shape), sizes).shape
    assert mg.ones(*shape).repeat(sizes).shape == out.shape  # sizes as one tuple too


def test_repeat_errors():
    _refuse(lambda: mg.ones(2, 3).repeat(2), ValueError, "repeat", "(2, 3)", "at least one per dim")
    _refuse(lambda: mg.ones(2).repeat(-1), ValueError, "repeat", ">= 0")


def test_one_hot():
    out = F.one_hot(mg.tensor([[0, 2], [1, 2]]))
    assert out.dtype == np.int64 and out.shape == (2, 2, 3) and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 2]]])
    assert F.one_hot(np.array([1]), num_classes=4).tolist() == [[0, 1, 0, 0]]
    _refuse(lambda: F.one_hot(mg.tensor([0, 4]), 3), ValueError, "one_hot", "class id 4", "num_classes=3")
    _refuse(lambda: F.one_hot(mg.tensor([-1])), ValueError, "one_hot", "-1")
    _refuse(lambda: F.one_hot(mg.tensor([1.0])), TypeError, "one_hot", "integers", "float32")


# ============================================================================ losses
def _targets(shape, classes, seed, ignore_some=False):
    t = rng(seed).integers(0, classes, shape)
    if ignore_some:
        t[rng(seed + 1).random(shape) < 0.3] = -100
    return t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_nll_loss_equals_cross_entropy_of_log_softmax(reduction, shape):
    logits, targets = normal(shape + (4,), 1), _targets(shape, 4, 2, ignore_some=True)

    def reference(a):
        picked = -np.take_along_axis(log_softmax_reference(a, -1), np.where(targets >= 0, targets, 0)[..., None],
                                     -1)[..., 0]
        losses = np.where(targets >= 0, picked, 0.0)
        return {"none": losses, "sum": losses.sum(), "mean": losses.sum() / max((targets >= 0).sum(), 1)}[reduction]

    check_op(lambda x: F.nll_loss(x.log_softmax(-1), targets, reduction=reduction), reference, logits,
             rtol=1e-10)
    x = leaf(logits)
    np.testing.assert_allclose(F.nll_loss(x.log_softmax(-1), targets, reduction=reduction).numpy(),
                               F.cross_entropy(x, targets, reduction=reduction).numpy(), rtol=1e-12)


def test_nll_loss_all_ignored_is_zero_and_ignore_index_is_settable():
    x = leaf(normal((3, 4), 1))
    assert F.nll_loss(x, [-100, -100, -100]).item() == 0.0
    assert F.nll_loss(x, [0, 9, 9], ignore_index=9).item() == pytest.approx(-x.numpy()[0, 0])


def test_nll_loss_errors():
    x = mg.zeros(2, 3)
    _refuse(lambda: F.nll_loss(x, [0, 3]), IndexError, "nll_loss", "target 3", "3 classes")
    _refuse(lambda: F.nll_loss(x, [0, 1, 2]), ValueError, "nll_loss", "(3,)", "(2, 3)", "(2,)")
    _refuse(lambda: F.nll_loss(x, np.array([0.0, 1.0])), TypeError, "nll_loss", "integer", "float64")
    _refuse(lambda: F.nll_loss(x, [0, 1], reduction="avg"), ValueError, "nll_loss", "'avg'")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction):
    p, y = rng(1).uniform(0.05, 0.95, (3, 4)), rng(2).uniform(0.0, 1.0, (3, 4))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    check_op(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
             lambda a, b: reduce(-(b * np.log(a) + (1 - b) * np.log(1 - a))), p, y, rtol=1e-10)


def test_binary_cross_entropy_clamps_its_logs_at_minus_100():
    p = leaf([0.0, 1.0, 0.0])
    loss = F.binary_cross_entropy(p, np.array([1.0, 0.0, 0.0]), reduction="none")
    np.testing.assert_array_equal(loss.numpy(), [100.0, 100.0, 0.0])
    loss.sum().backward()
    assert np.isfinite(p.grad).all()


def test_binary_cross_entropy_errors():
    _refuse(lambda: F.binary_cross_entropy(mg.tensor([0.5, 1.5]), mg.tensor([0.0, 1.0])), ValueError,
            "binary_cross_entropy", "[0, 1]", "1.5")
    _refuse(lambda: F.binary_cross_entropy(mg.tensor([0.5, 0.5]), mg.tensor([0.0])), ValueError,
            "binary_cross_entropy", "(2,)", "(1,)")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(reduction):
    x, y = normal((3, 4), 1) * 3, rng(2).uniform(0.0, 1.0, (3, 4))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]

    def naive(a, b):  # the textbook form, fine for these moderate logits
        p = 1 / (1 + np.exp(-a))
        return reduce(-(b * np.log(p) + (1 - b) * np.log(1 - p)))

    check_op(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction), naive, x, y, rtol=1e-9)


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    x = leaf([1000.0, -1000.0, 1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        loss = F.binary_cross_entropy_with_logits(x, [1.0, 0.0, 0.0], reduction="none")
        loss.sum().backward()
    np.testing.assert_allclose(loss.numpy(), [0.0, 0.0, 1000.0])
    np.testing.assert_allclose(x.grad, [0.0, 0.0, 1.0])
    _refuse(lambda: F.binary_cross_entropy_with_logits(mg.zeros(2), mg.zeros(3)), ValueError,
            "binary_cross_entropy_with_logits", "(2,)", "(3,)")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_with_probability_targets(reduction, smoothing):
    logits, probs = normal((2, 3, 5), 1), rng(2).dirichlet(np.ones(5), (2, 3))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]

    def reference(a, t):
        return reduce(-((t * (1 - smoothing) + smoothing / 5) * log_softmax_reference(a, -1)).sum(-1))

    check_op(lambda a, t: F.cross_entropy(a, t, label_smoothing=smoothing, reduction=reduction), reference,
             logits, probs, rtol=1e-10)
    # one-hot probabilities give the loss of the class ids
    ids = _targets((2, 3), 5, 3)
    x = leaf(logits)
    np.testing.assert_allclose(F.cross_entropy(x, np.eye(5)[ids], label_smoothing=smoothing).item(),
                               F.cross_entropy(x, ids, label_smoothing=smoothing).item(), rtol=1e-12)


def test_cross_entropy_probability_targets_dtype():
    logits = mg.zeros(2, 3)  # float32: a float64 numpy array of probabilities is taken in float32
    assert F.cross_entropy(logits, np.full((2, 3), 1 / 3)).dtype == np.float32
    _refuse(lambda: F.cross_entropy(logits, mg.full((2, 3), 1 / 3, dtype=np.float64)), TypeError,
            "cross_entropy", "float32", "float64")


# ============================================================================ activations and elementwise ops
def test_activation_modules_and_functions_equal_the_methods():
    x = mg.randn(3, 4)
    pairs = [(nn.SiLU(), F.silu, lambda t: t.silu()),
             (nn.LeakyReLU(0.2), lambda t: F.leaky_relu(t, 0.2), lambda t: t.leaky_relu(0.2)),
             (nn.Softplus(beta=2.0, threshold=5.0), lambda t: F.softplus(t, 2.0, 5.0), lambda t: t.softplus(2.0, 5.0)),
             (nn.ELU(alpha=0.5), lambda t: F.elu(t, 0.5), lambda t: t.elu(0.5))]
    for module, function, method in pairs:
        np.testing.assert_array_equal(module(x).numpy(), method(x).numpy())
        np.testing.assert_array_equal(function(x).numpy(), method(x).numpy())
    assert "negative_slope=0.2" in repr(nn.LeakyReLU(0.2)) and "alpha=0.5" in repr(nn.ELU(0.5))


def test_activations_at_their_kinks_follow_pytorch():
    x = leaf([0.0])
    x.leaky_relu(0.1).sum().backward()
    assert x.grad.tolist() == [0.1]  # PyTorch: negative_slope at 0
    y = leaf([0.0])
    y.elu(2.0).sum().backward()
    assert y.grad.tolist() == [2.0]  # alpha * e^0
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        big = mg.tensor([100.0, -100.0], dtype=np.float32).softplus()
    np.testing.assert_allclose(big.numpy(), [100.0, 0.0], atol=1e-30)


def test_elementwise_ops_on_integers():
    i = mg.tensor([-3, 0, 2])
    for method in ("floor", "round", "sign"):
        out = getattr(i, method)()
        assert out.dtype == np.int64, method
    assert i.floor().tolist() == [-3, 0, 2] and i.sign().tolist() == [-1, 0, 1]
    for method in ("log2", "rsqrt", "erf", "silu", "elu", "softplus", "leaky_relu"):
        assert getattr(mg.tensor([1, 4]), method)().dtype == np.float32, method


def test_round_halves_to_even_and_takes_decimals():
    assert mg.tensor([0.5, 1.5, 2.5, -0.5]).round().tolist() == [0.0, 2.0, 2.0, -0.0]
    np.testing.assert_allclose(mg.tensor(np.array([1.2345, -2.5678])).round(2).numpy(), [1.23, -2.57])


@pytest.mark.parametrize("method", ["sign", "floor", "round"])
def test_piecewise_constant_ops_have_zero_gradient(method):
    x = leaf([-1.5, -0.3, 0.0, 0.7, 2.5])
    getattr(x, method)().sum().backward()
    np.testing.assert_array_equal(x.grad, np.zeros(5))


def test_isnan_isfinite():
    x = leaf([1.0, np.nan, np.inf, -np.inf])
    assert x.isnan().tolist() == [False, True, False, False]
    assert mg.isfinite(x).tolist() == [True, False, False, False]
    for out in (x.isnan(), x.isfinite()):
        assert out.dtype == np.bool_ and not out.requires_grad and out.grad_fn is None


# ============================================================================ // and %
def test_floor_divide_and_remainder_follow_python_signs():
    a, b = [-7, 7, -7, 7, 0], [2, -2, -2, 2, 3]
    ints, floats = mg.tensor(a), mg.tensor(np.array(a, dtype=np.float64))
    assert (ints // mg.tensor(b)).tolist() == [x // y for x, y in zip(a, b)]
    assert (ints % mg.tensor(b)).tolist() == [x % y for x, y in zip(a, b)]
    assert (floats // mg.tensor(np.array(b, np.float64))).tolist() == [float(x // y) for x, y in zip(a, b)]
    assert (floats % mg.tensor(np.array(b, np.float64))).tolist() == [float(x % y) for x, y in zip(a, b)]
    assert (ints // 2).dtype == np.int64 and (ints % 2.5).dtype == np.float32
    assert (7 // mg.tensor([2])).tolist() == [3] and (7.5 % mg.tensor([2.0])).tolist() == [1.5]
    assert mg.remainder(ints, 3).tolist() == mg.tensor(a).__mod__(3).tolist() == [x % 3 for x in a]
    assert mg.floor_divide(ints, 3).tolist() == [x // 3 for x in a]


def test_floor_divide_and_remainder_gradients():
    a, b = leaf([5.5, -3.2]), leaf([2.0, 2.0])
    (a // b).sum().backward()
    np.testing.assert_array_equal(a.grad, [0.0, 0.0])
    np.testing.assert_array_equal(b.grad, [0.0, 0.0])
    a.grad = b.grad = None
    (a % b).sum().backward()
    np.testing.assert_array_equal(a.grad, [1.0, 1.0])  # d(a % b)/da = 1
    np.testing.assert_array_equal(b.grad, [-2.0, 2.0])  # d(a % b)/db = -floor(a / b)


def test_integer_division_by_zero_is_refused():
    _refuse(lambda: mg.tensor([1, 2]) // mg.tensor([1, 0]), ZeroDivisionError, "floor_divide", "zero")
    _refuse(lambda: mg.tensor([1, 2]) % 0, ZeroDivisionError, "remainder", "zero")
    _refuse(lambda: mg.ones(2, 3) % mg.ones(4), ValueError, "remainder", "(2, 3)", "(4,)")
    _refuse(lambda: mg.ones(2, 3) // mg.ones(4), ValueError, "floor_divide", "(2, 3)", "(4,)")


# ============================================================================ creation
def test_eye_linspace_full_like():
    assert mg.eye(3).dtype == np.float32 and mg.eye(3).tolist() == np.eye(3).tolist()
    assert mg.eye(2, 3, dtype=np.int64).tolist() == [[1, 0, 0], [0, 1, 0]]
    np.testing.assert_allclose(mg.linspace(-1, 1, 5).numpy(), [-1.0, -0.5, 0.0, 0.5, 1.0])
    assert mg.linspace(0, 1, 3).dtype == np.float32 and mg.linspace(0, 1, 1).tolist() == [0.0]
    x = mg.zeros(2, 3, dtype=np.float64)
    y = mg.full_like(x, 7)
    assert y.shape == (2, 3) and y.dtype == np.float64 and y.tolist() == [[7.0] * 3] * 2
    assert mg.full_like(x, 1, dtype=np.int64).dtype == np.int64
    assert mg.eye(2, requires_grad=True).requires_grad
    _refuse(lambda: mg.eye(-1), ValueError, "eye", "-1")
    _refuse(lambda: mg.linspace(0, 1, 2.5), ValueError, "linspace", "steps", "2.5")


def test_exports():
    for name in ("logsumexp std prod cumsum topk gather scatter_add flip repeat silu leaky_relu softplus elu erf "
                 "sign floor round isnan isfinite log2 rsqrt add sub mul div pow neg floor_divide remainder eye "
                 "linspace full_like").split():
        assert callable(getattr(mg, name)), name
    for name in ("silu leaky_relu softplus elu one_hot nll_loss binary_cross_entropy "
                 "binary_cross_entropy_with_logits").split():
        assert callable(getattr(F, name)), name
    x = mg.tensor([1.0, 2.0])
    assert mg.add(x, 1).tolist() == x.add(1).tolist() == [2.0, 3.0]
    assert x.sub(1).tolist() == [0.0, 1.0] and x.mul(2).tolist() == [2.0, 4.0] and x.div(2).tolist() == [0.5, 1.0]
    assert x.pow(2).tolist() == [1.0, 4.0] and x.neg().tolist() == [-1.0, -2.0]
