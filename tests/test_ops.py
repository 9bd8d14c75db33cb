"""Every differentiable op: the forward equals numpy, and the backward passes a float64 gradient
check (central differences on every element of every input, random upstream gradient).

The elementwise ops are the rows of the op table in strategies.py (`OPS`); the ops that take axes,
shapes or indices (reductions, matmul, shape ops, indexing, softmax, ...) are checked case by case."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import ops
from strategies import (
    BINARY_OPS, KERNEL_RTOL, UNARY_OPS, broadcast_pairs, check_op, distinct, leaf, log_softmax_reference,
    matmul_pairs, nonscalar_shapes, normal, positive, reductions, rng, seeds, shapes, softmax_reference,
)


# ============================================================================ elementwise, one input
# the rows of strategies.OPS with one input: the forward equals the row's numpy reference, on values
# from the row's domain, and the gradient passes the check
@pytest.mark.parametrize("name", list(UNARY_OPS))
@settings(max_examples=10)
@given(shape=shapes, seed=seeds)
def test_unary(name, shape, seed):
    op = UNARY_OPS[name]
    check_op(op.fn, op.reference, op.domain.sample(shape, seed), rtol=op.rtol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_0d_tensor_is_0d(approximate):
    y = mg.tensor(np.float64(0.5)).gelu(approximate=approximate)
    assert y.shape == ()


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        mg.tensor([1.0]).gelu(approximate="erf")


def test_relu_and_abs_gradient_at_zero_is_zero():
    x = leaf([0.0, 0.0])
    (x.relu() + x.abs()).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0])


def test_clip_gradient_passes_inside_only():
    x = leaf([-2.0, 0.0, 2.0])
    x.clip(-1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])


def test_sigmoid_saturates_without_overflow():
    with np.errstate(all="raise"):
        y = mg.tensor(np.array([-1000.0, 0.0, 1000.0])).sigmoid()
    np.testing.assert_allclose(y.numpy(), [0.0, 0.5, 1.0])


# ============================================================================ elementwise, two inputs
# the rows of strategies.OPS with two inputs, on shapes that broadcast together
@pytest.mark.parametrize("name", list(BINARY_OPS))
@settings(max_examples=15)
@given(pair=broadcast_pairs, seed=st.integers(0, 2**31))
def test_binary_broadcasting(name, pair, seed):
    op = BINARY_OPS[name]
    shape_a, shape_b = pair.input_shapes
    a, b = op.domain.sample(shape_a, shape_b, seed)
    check_op(op.fn, op.reference, a, b, rtol=op.rtol)


@pytest.mark.parametrize("shape_a, shape_b", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3)), ((2, 3), ()),
                                              ((5, 1, 3), (4, 1)), ((1,), (3, 1))])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_gradient_summed_to_input_shape(name, shape_a, shape_b):
    op = BINARY_OPS[name]
    a_np, b_np = op.domain.sample(shape_a, shape_b, 3)
    a, b = leaf(a_np), leaf(b_np)
    out = op.fn(a, b)
    assert out.shape == np.broadcast_shapes(shape_a, shape_b)
    out.backward(np.ones(out.shape))
    assert a.grad.shape == shape_a and b.grad.shape == shape_b
    check_op(op.fn, op.reference, a_np, b_np, rtol=op.rtol)


def test_broadcast_add_gradient_counts_copies():
    a = leaf(np.zeros((3, 1)))
    b = leaf(np.zeros((1, 4)))
    (a + b).sum().backward()
    np.testing.assert_array_equal(a.grad, np.full((3, 1), 4.0))
    np.testing.assert_array_equal(b.grad, np.full((1, 4), 3.0))


def test_maximum_tie_splits_gradient():
    a, b = leaf([1.0, 2.0, 0.0]), leaf([1.0, 0.0, 3.0])
    a.maximum(b).sum().backward()
    np.testing.assert_array_equal(a.grad, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(b.grad, [0.5, 0.0, 1.0])
    c, d = leaf([1.0, 2.0]), leaf([1.0, 0.0])
    c.minimum(d).sum().backward()
    np.testing.assert_array_equal(c.grad, [0.5, 0.0])
    np.testing.assert_array_equal(d.grad, [0.5, 1.0])


def test_binary_with_numpy_array_operand():
    x = leaf([1.0, 2.0])
    y = np.array([3.0, 4.0]) * x + x * np.array([1.0, 1.0])
    assert isinstance(y, mg.Tensor)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 5.0])


# ============================================================================ reductions
def _reduce(method, axis, keepdims, **kw):
    return lambda x: getattr(x, method)(axis=axis, keepdims=keepdims, **kw)


@pytest.mark.parametrize("method", ["sum", "mean", "var", "max", "min"])
@settings(max_examples=15)
@given(case=reductions(), seed=seeds)
def test_reduction(method, case, seed):
    shape, axis, keepdims = case
    values = distinct(shape, seed) if method in ("max", "min") else normal(shape, seed)
    reference = lambda a: getattr(np, method)(a, axis=axis, keepdims=keepdims)  # noqa: E731
    options = {"correction": 0} if method == "var" else {}  # numpy's default (the default is PyTorch's, n - 1)
    check_op(_reduce(method, axis, keepdims, **options), reference, values)


@settings(max_examples=15)
@given(case=reductions(), seed=seeds)
def test_var_ddof1(case, seed):
    shape, axis, keepdims = case
    axes = range(len(shape)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    assume(np.prod([shape[a] for a in axes]) > 1)
    check_op(_reduce("var", axis, keepdims, ddof=1),
             lambda a: np.var(a, axis=axis, keepdims=keepdims, ddof=1), normal(shape, seed))


@pytest.mark.parametrize("method", ["sum", "mean", "var", "max", "min"])
def test_reduction_of_scalar_tensor(method):
    options = {"correction": 0} if method == "var" else {}  # (one value: n - 1 = 0 would give NaN)
    check_op(lambda x: getattr(x, method)(**options), lambda a: getattr(np, method)(a), np.array(1.5))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_max_ties_share_gradient(axis):
    x = leaf([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x.max(axis=axis).sum().backward()
    expected = {None: [[0, 0.5, 0.5], [0, 0, 0]], 0: [[0, 1, 1], [1, 0, 0]],
                1: [[0, 0.5, 0.5], [0.5, 0.5, 0]], -1: [[0, 0.5, 0.5], [0.5, 0.5, 0]]}[axis]
    np.testing.assert_array_equal(x.grad, expected)


@pytest.mark.parametrize("method", ["argmax", "argmin"])
@settings(max_examples=15)
@given(case=reductions(), seed=seeds)
def test_argmax_argmin(method, case, seed):
    shape, axis, keepdims = case
    assume(axis is None or isinstance(axis, int))
    values = distinct(shape, seed)
    x = leaf(values)
    out = getattr(x, method)(axis=axis, keepdims=keepdims)
    expected = getattr(np, method)(values, axis=axis, keepdims=keepdims)
    assert out.dtype == np.int64 and not out.requires_grad and out.grad_fn is None
    np.testing.assert_array_equal(out.numpy(), expected)


def test_reduction_bad_axis():
    with pytest.raises(mg.AxisError):
        mg.tensor(np.ones((2, 3))).sum(axis=2)


# ============================================================================ matmul
@settings(max_examples=25)
@given(pair=matmul_pairs, seed=seeds)
def test_matmul_numpy_rules(pair, seed):
    shape_a, shape_b = pair.input_shapes
    check_op(lambda a, b: a @ b, np.matmul, normal(shape_a, seed), normal(shape_b, seed + 1), rtol=KERNEL_RTOL)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((1, 1), (1, 1)),
    ((5, 1, 4, 3), (2, 3, 6)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 3)), ((2, 2, 3), (3,)), ((3, 4), (2, 4, 2)),
    ((2, 1, 3, 2), (1, 3, 2, 2)),
])
def test_matmul_shapes(shape_a, shape_b):
    out = check_op(lambda a, b: a @ b, np.matmul, normal(shape_a, 1), normal(shape_b, 2), rtol=KERNEL_RTOL)
    assert out.shape == np.matmul(np.ones(shape_a), np.ones(shape_b)).shape


@pytest.mark.parametrize("fn, reference", [
    (lambda a, b: a.T @ b, lambda a, b: a.T @ b),
    (lambda a, b: a @ b.transpose(), lambda a, b: a @ b.T),
    (lambda a, b: a.T @ b.T.T, lambda a, b: a.T @ b),
    (lambda a, b: mg.matmul(a.transpose(0, 1), b), lambda a, b: a.T @ b),
    (lambda a, b: a.T.matmul(b), lambda a, b: a.T @ b),
])
def test_matmul_transposed_operands(fn, reference):
    check_op(fn, reference, normal((4, 3), 5), normal((4, 3), 6), rtol=KERNEL_RTOL)


def test_matmul_batched_transposed_operands():
    check_op(lambda a, b: a @ b.transpose(-1, -2), lambda a, b: a @ np.swapaxes(b, -1, -2),
             normal((2, 3, 4), 7), normal((2, 5, 4), 8), rtol=KERNEL_RTOL)
    check_op(lambda a, b: a.permute(0, 2, 1) @ b, lambda a, b: np.transpose(a, (0, 2, 1)) @ b,
             normal((2, 4, 3), 9), normal((4, 2), 10), rtol=KERNEL_RTOL)


def test_matmul_only_one_input_requires_grad():
    a = leaf(normal((2, 3), 1))
    b = mg.tensor(normal((3, 4), 2))
    (a @ b).sum().backward()
    np.testing.assert_allclose(a.grad, np.ones((2, 4)) @ b.numpy().T, rtol=1e-12)
    assert b.grad is None


def test_matmul_float32():
    a = mg.randn(3, 5, requires_grad=True)
    b = mg.randn(5, 2, requires_grad=True)
    out = a @ b
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)
    out.backward(np.ones((3, 2), dtype=np.float32))
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float32


def test_matmul_integer():
    out = mg.arange(6).reshape(2, 3) @ mg.arange(3)
    assert out.dtype == np.int64 and out.numpy().tolist() == [5, 14]


# ============================================================================ shape ops
@pytest.mark.parametrize("fn, reference", [
    (lambda x: x.reshape(6, 4), lambda a: a.reshape(6, 4)),
    (lambda x: x.reshape((4, -1)), lambda a: a.reshape(4, -1)),
    (lambda x: x.reshape([24]), lambda a: a.reshape(24)),
    (lambda x: x.view(2, 12), lambda a: a.reshape(2, 12)),
    (lambda x: x.flatten(), lambda a: a.reshape(-1)),
    (lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    (lambda x: x.flatten(0, 1), lambda a: a.reshape(6, 4)),
    (lambda x: x.transpose(), lambda a: np.swapaxes(a, -1, -2)),
    (lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    (lambda x: x.permute(2, 0, 1), lambda a: np.transpose(a, (2, 0, 1))),
    (lambda x: x.permute((1, -1, 0)), lambda a: np.transpose(a, (1, 2, 0))),
    (lambda x: x.T, lambda a: a.T),
    (lambda x: x.unsqueeze(0), lambda a: a[None]),
    (lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    (lambda x: x.unsqueeze(1).squeeze(), lambda a: a),
    (lambda x: x.reshape(2, 1, 3, 4, 1).squeeze(1), lambda a: a.reshape(2, 3, 4, 1)),
    (lambda x: x.reshape(2, 1, 3, 4, 1).squeeze((1, -1)), lambda a: a),
    (lambda x: x.reshape(2, 3, 4, 1).expand(2, 3, 4, 5), lambda a: np.broadcast_to(a[..., None], (2, 3, 4, 5))),
    (lambda x: x[:, :1].expand(5, 2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4))),
    (lambda x: x[:, :1].expand(-1, 3, -1), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    (lambda x: x[0, :, :1].broadcast_to((2, 3, 4)), lambda a: np.broadcast_to(a[0, :, :1], (2, 3, 4))),
    (lambda x: mg.broadcast_to(x, (3, 2, 3, 4)), lambda a: np.broadcast_to(a, (3, 2, 3, 4))),
])
def test_shape_op(fn, reference):
    check_op(fn, reference, normal((2, 3, 4), 11))


def test_transpose_and_T_of_vector_are_identity():
    x = leaf([1.0, 2.0])
    assert x.T is x and x.transpose() is x
    assert x.reshape(2) is x


def test_flatten_scalar():
    check_op(lambda x: x.flatten(), lambda a: a.reshape(1), np.array(2.0))


# ============================================================================ indexing
_MASK = rng(0).random((3, 4, 5)) > 0.5
INDEXES = [
    1, -1, (0, 2), (1, -1, 3), slice(1, 3), slice(None, None, -1), (slice(None), slice(1, None, 2)),
    (slice(None), 2), (1, slice(None), -2), None, (None, 1, None), (Ellipsis, 1), (1, Ellipsis),
    (slice(None), None, slice(0, 2)), Ellipsis, (Ellipsis, None),
    np.array([0, 2, 0]), np.array([[1, 1], [0, 2]]), [2, 2, 2], (slice(None), [0, 0, 3]),
    (np.array([0, 1, 1]), np.array([2, 2, 2])), (1, np.array([3, 3, 0]), slice(1, 4)), (Ellipsis, [4, 4]),
    np.array([-1, -1]),
    _MASK, (1, _MASK[0]), np.array([True, False, True]), (slice(None), np.array([False, True, True, False])),
]


@pytest.mark.parametrize("index", INDEXES, ids=[f"index{i}" for i in range(len(INDEXES))])
def test_getitem(index):
    check_op(lambda x: x[index], lambda a: a[index], normal((3, 4, 5), 12))


def test_getitem_repeated_indices_accumulate():
    x = leaf([10.0, 20.0, 30.0, 40.0])
    y = x[np.array([1, 1, 1, 3, -1])]
    np.testing.assert_array_equal(y.numpy(), [20.0, 20.0, 20.0, 40.0, 40.0])
    y.backward(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(x.grad, [0.0, 6.0, 0.0, 9.0])


def test_getitem_repeated_rows_accumulate():
    x = leaf(np.zeros((3, 2)))
    x[[0, 0, 2]].sum().backward()
    np.testing.assert_array_equal(x.grad, [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]])


def test_getitem_with_tensor_indices():
    x = leaf(np.arange(6.0))
    idx = mg.tensor([5, 0, 5])
    y = x[idx]
    np.testing.assert_array_equal(y.numpy(), [5.0, 0.0, 5.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 0.0, 0.0, 0.0, 0.0, 2.0])
    m = x > 2.5
    z = x[m]
    np.testing.assert_array_equal(z.numpy(), [3.0, 4.0, 5.0])


# ============================================================================ joining and splitting
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cat(axis):
    shapes_ = [(2, 3), (2, 3), (2, 3)]
    shapes_ = [tuple(n + i if d == axis % 2 else n for d, n in enumerate(s)) for i, s in enumerate(shapes_)]
    arrays = [normal(s, i) for i, s in enumerate(shapes_)]
    check_op(lambda *xs: mg.cat(xs, axis=axis), lambda *xs: np.concatenate(xs, axis=axis), *arrays)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(axis):
    arrays = [normal((2, 3), i) for i in range(3)]
    check_op(lambda *xs: mg.stack(xs, axis=axis), lambda *xs: np.stack(xs, axis=axis), *arrays)


def test_cat_single_and_gradient_slices():
    a, b = leaf(np.zeros(2)), leaf(np.zeros(3))
    mg.cat([a, b]).backward(np.arange(5.0))
    np.testing.assert_array_equal(a.grad, [0.0, 1.0])
    np.testing.assert_array_equal(b.grad, [2.0, 3.0, 4.0])


@pytest.mark.parametrize("split, axis, sizes", [(2, 1, [2, 2, 1]), ([1, 4], 1, [1, 4]), (1, 0, [1, 1, 1]),
                                                (3, -1, [3, 2]), (5, 1, [5])])
def test_split(split, axis, sizes):
    a = normal((3, 5), 13)
    x = leaf(a)
    parts = x.split(split, axis=axis)
    assert [p.shape[axis] for p in parts] == sizes
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts], axis=axis), a)
    weights = [float(i + 1) for i in range(len(parts))]

    def weighted(t):
        pieces = t.split(split, axis=axis)
        return mg.cat([p * w for p, w in zip(pieces, weights)], axis=axis)

    assert mg.gradcheck(weighted, [x])
    x.grad = None
    total = None
    for p, w in zip(x.split(split, axis=axis), weights):
        total = (p * w).sum() if total is None else total + (p * w).sum()
    total.backward()
    expected = np.concatenate([np.full(p.shape, w) for p, w in zip(parts, weights)], axis=axis)
    np.testing.assert_array_equal(x.grad, expected)


@pytest.mark.parametrize("chunks, n, sizes", [(3, 5, [2, 2, 1]), (2, 4, [2, 2]), (1, 3, [3]), (4, 4, [1, 1, 1, 1])])
def test_chunk(chunks, n, sizes):
    a = normal((2, n), 14)
    x = leaf(a)
    parts = x.chunk(chunks, axis=1)
    assert [p.shape[1] for p in parts] == sizes
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts], axis=1), a)
    assert mg.gradcheck(lambda t: t.chunk(chunks, axis=1)[-1] * 3.0, [x])
    assert mg.gradcheck(lambda t: mg.chunk(t, chunks, axis=1)[0].exp(), [x])


# ============================================================================ selection and masks
def test_where():
    cond = rng(1).random((3, 4)) > 0.5
    check_op(lambda a, b: mg.where(cond, a, b), lambda a, b: np.where(cond, a, b), normal((3, 4), 1), normal((3, 4), 2))


def test_where_broadcasts():
    cond = np.array([[True], [False], [True]])
    check_op(lambda a, b: mg.where(cond, a, b), lambda a, b: np.where(cond, a, b), normal((1, 4), 1), normal((4,), 2))
    check_op(lambda a: mg.where(mg.tensor(cond), a, 0.5), lambda a: np.where(cond, a, 0.5), normal((3, 4), 3))


def test_where_gradient_goes_to_picked_side():
    a, b = leaf([1.0, 2.0, 3.0]), leaf([4.0, 5.0, 6.0])
    mg.where([True, False, True], a, b).sum().backward()
    np.testing.assert_array_equal(a.grad, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(b.grad, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("mask_shape", [(3, 4), (1, 4), (3, 1), (4,), ()])
def test_masked_fill(mask_shape):
    mask = rng(2).random(mask_shape) > 0.4
    check_op(lambda x: x.masked_fill(mask, -3.0), lambda a: np.where(mask, -3.0, a), normal((3, 4), 4))
    check_op(lambda x: mg.masked_fill(x, mg.tensor(mask), 0.0), lambda a: np.where(mask, 0.0, a), normal((3, 4), 5))


def test_masked_fill_minus_inf_then_softmax():
    # a causal attention mask: -inf above the diagonal, softmax gives exact zeros there
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    x = leaf(normal((2, 4, 4), 6))
    p = x.masked_fill(causal, -np.inf).softmax(-1)
    assert np.all(p.numpy()[:, causal] == 0.0)
    np.testing.assert_allclose(p.numpy().sum(-1), 1.0, rtol=1e-12)
    p.backward(normal((2, 4, 4), 7))
    assert np.all(np.isfinite(x.grad)) and np.all(x.grad.numpy()[:, causal] == 0.0)
    assert mg.gradcheck(lambda t: t.masked_fill(causal, -np.inf).softmax(-1), [x])


def test_masked_fill_gradient_zero_where_filled():
    x = leaf([1.0, 2.0, 3.0])
    x.masked_fill(np.array([False, True, False]), 9.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 0.0, 1.0])


@pytest.mark.parametrize("k", [-1, 0, 1, 2])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 4, 3)])
def test_tril_triu(k, shape):
    a = normal(shape, 15)
    check_op(lambda x: x.tril(k), lambda v: np.tril(v, k), a)
    check_op(lambda x: x.triu(k=k), lambda v: np.triu(v, k), a)
    check_op(lambda x: mg.tril(x, k), lambda v: np.tril(v, k), a)


# ============================================================================ softmax family
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_softmax(shape, axis):
    a = normal(shape, 16, scale=2.0)
    out = check_op(lambda x: x.softmax(axis=axis), lambda v: softmax_reference(v, axis), a, rtol=KERNEL_RTOL)
    np.testing.assert_allclose(out.numpy().sum(axis=axis), 1.0, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_log_softmax(shape, axis):
    a = normal(shape, 17, scale=2.0)
    check_op(lambda x: x.log_softmax(axis=axis), lambda v: log_softmax_reference(v, axis), a, rtol=KERNEL_RTOL)


@settings(max_examples=15)
@given(shape=nonscalar_shapes, seed=seeds, data=st.data())
def test_softmax_any_shape_and_axis(shape, seed, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = normal(shape, seed, scale=3.0)
    check_op(lambda x: x.softmax(axis), lambda v: softmax_reference(v, axis), a, rtol=KERNEL_RTOL)
    check_op(lambda x: x.log_softmax(axis), lambda v: log_softmax_reference(v, axis), a, rtol=KERNEL_RTOL)


def test_softmax_large_logits_stay_finite():
    x = mg.tensor(np.array([[1000.0, 1000.0, -1000.0], [-800.0, 0.0, 800.0]]))
    np.testing.assert_allclose(x.softmax(-1).numpy(), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], atol=1e-300)
    np.testing.assert_allclose(x.log_softmax(-1).numpy(), [[-np.log(2), -np.log(2), -2000 - np.log(2)],
                                                         [-1600.0, -800.0, 0.0]], rtol=1e-12)


# ============================================================================ dropout
def test_dropout_p0_and_eval_are_identity():
    x = leaf(normal((3, 4), 1))
    assert mg.dropout(x, p=0.0) is x
    assert mg.dropout(x, p=0.5, training=False) is x
    y = ops.Dropout.apply(x, p=0.0)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_dropout_fixed_mask_gradcheck():
    mask = rng(3).random((3, 4)) > 0.5
    check_op(lambda x: ops.Dropout.apply(x, p=0.5, mask=mask), lambda a: a * mask / 0.5, normal((3, 4), 2))
    check_op(lambda x: ops.Dropout.apply(x, p=0.2, mask=mask), lambda a: a * mask / 0.8, normal((3, 4), 3))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.75])
def test_dropout_inverted_scaling(p):
    a = positive((200, 100), 4)
    x = mg.tensor(a, requires_grad=True)
    y = mg.dropout(x, p=p)
    out = y.numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], a[kept] / (1 - p), rtol=1e-12)
    assert abs(1.0 - kept.mean() - p) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad, kept / (1 - p), rtol=1e-12)


def test_dropout_p1_zeroes_everything():
    x = leaf(normal((3, 3), 5))
    y = mg.dropout(x, p=1.0)
    assert np.all(y.numpy() == 0) and np.all(np.isfinite(y.numpy()))


def test_dropout_float32_stays_float32():
    x = mg.randn(4, 4, requires_grad=True)
    y = mg.dropout(x, p=0.5)
    assert y.dtype == np.float32


# ============================================================================ embedding
def test_embedding_rows():
    w = normal((6, 3), 1)
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    out = check_op(lambda t: mg.embedding(ids, t), lambda v: v[ids], w)
    assert out.shape == (2, 3, 3)


def test_embedding_repeated_ids_accumulate():
    weight = leaf(np.zeros((4, 2)))
    ids = mg.tensor([[3, 1], [3, 3]])
    mg.embedding(ids, weight).backward(np.arange(8.0).reshape(2, 2, 2))
    np.testing.assert_array_equal(weight.grad, [[0, 0], [2, 3], [0, 0], [0 + 4 + 6, 1 + 5 + 7]])


def test_embedding_scalar_and_1d_ids():
    w = normal((5, 3), 2)
    check_op(lambda t: mg.embedding(np.array(4), t), lambda v: v[4], w)
    check_op(lambda t: mg.embedding([1, 1, 0], t), lambda v: v[[1, 1, 0]], w)


# ============================================================================ cross-entropy
def cross_entropy_reference(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    v = logits.shape[-1]
    z = logits.reshape(-1, v)
    t = targets.reshape(-1)
    logp = log_softmax_reference(z, -1)
    keep = t != ignore_index
    nll = -logp[np.arange(len(t)), np.where(keep, t, 0)]
    loss = np.where(keep, (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1), 0.0)
    if reduction == "none":
        return loss.reshape(targets.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / max(keep.sum(), 1)


def _cross_entropy(**options):
    return lambda x: ops.CrossEntropy.apply(x, **options)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy(reduction, label_smoothing, ignore):
    logits = normal((2, 3, 5), 6, scale=2.0)
    targets = np.array([[0, 4, 2], [1, 1, 3]])
    ignore_index = -100
    if ignore:
        ignore_index = 7
        targets[0, 1] = targets[1, 2] = 7
    options = dict(targets=targets, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction)
    out = check_op(_cross_entropy(**options), lambda v: cross_entropy_reference(v, **options), logits,
                   rtol=KERNEL_RTOL)
    assert out.shape == (targets.shape if reduction == "none" else ())


def test_cross_entropy_defaults_and_2d():
    logits = normal((4, 3), 7)
    targets = np.array([2, 0, 1, 2])
    check_op(lambda x: ops.CrossEntropy.apply(x, targets=targets), lambda v: cross_entropy_reference(v, targets),
             logits, rtol=KERNEL_RTOL)


def test_cross_entropy_ignored_rows_get_no_gradient():
    x = leaf(normal((3, 4), 8))
    targets = np.array([1, -100, 3])
    ops.CrossEntropy.apply(x, targets=targets).backward()
    np.testing.assert_array_equal(x.grad[1], np.zeros(4))
    p = softmax_reference(x.numpy(), -1)
    expected = p.copy()
    expected[0, 1] -= 1
    expected[2, 3] -= 1
    np.testing.assert_allclose(x.grad[[0, 2]], expected[[0, 2]] / 2, rtol=1e-10)


def test_cross_entropy_all_ignored_is_zero():
    x = leaf(normal((2, 4), 9))
    loss = ops.CrossEntropy.apply(x, targets=np.array([-100, -100]))
    assert loss.item() == 0.0
    loss.backward()
    np.testing.assert_array_equal(x.grad, np.zeros((2, 4)))


# ============================================================================ layer norm
def layer_norm_reference(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4)])
def test_layer_norm(shape):
    d = shape[-1]
    out = check_op(lambda x, w, b: ops.LayerNorm.apply(x, w, b, eps=1e-5), layer_norm_reference,
                   normal(shape, 10, scale=2.0) + 1.0, positive((d,), 11), normal((d,), 12), rtol=KERNEL_RTOL)
    assert out.shape == shape


def test_layer_norm_eps_matters():
    x = normal((2, 4), 13) * 1e-3
    w, b = np.ones(4), np.zeros(4)
    check_op(lambda t, u, v: ops.LayerNorm.apply(t, u, v, eps=1e-2),
             lambda t, u, v: layer_norm_reference(t, u, v, eps=1e-2), x, w, b, rtol=KERNEL_RTOL)


def test_layer_norm_only_input_requires_grad():
    x = leaf(normal((3, 4), 14))
    w, b = mg.tensor(positive((4,), 15)), mg.tensor(normal((4,), 16))
    assert mg.gradcheck(lambda t: ops.LayerNorm.apply(t, w, b, eps=1e-5), [x])
    assert w.grad is None and b.grad is None


# ============================================================================ float32 stays float32
FLOAT32_CASES = {
    "add": lambda x: x + x.exp(),
    "rsub": lambda x: 1 - x,
    "rdiv": lambda x: 2 / x,
    "pow": lambda x: x ** 2 + x ** x + 2 ** x,
    "unary": lambda x: x.sqrt().log().abs().sin().cos().tanh().sigmoid().relu(),
    "gelu": lambda x: x.gelu() + x.gelu(approximate="tanh"),
    "clip": lambda x: x.clip(0.2, 0.8).maximum(0.5).minimum(0.6),
    "reductions": lambda x: x.sum(0) + x.mean(0) + x.var(0) + x.max(axis=0) + x.min(axis=0),
    "softmax": lambda x: x.softmax(-1) + x.log_softmax(0),
    "matmul": lambda x: x @ x.T,
    "shape": lambda x: x.reshape(4, 3).T.unsqueeze(0).expand(2, 3, 4).sum(0),
    "index": lambda x: x[[0, 0], 1:] + x[x > 0.5].sum(),
    "join": lambda x: mg.cat([x, x], 0).reshape(2, 3, 4) + mg.stack([x, x]),
    "where": lambda x: mg.where(x > 0.5, x, 0.0).masked_fill(x > 0.9, 1.0).tril(),
    "layer_norm": lambda x: ops.LayerNorm.apply(x, mg.ones(4), mg.zeros(4), eps=1e-5),
    "cross_entropy": lambda x: ops.CrossEntropy.apply(x, targets=np.array([0, 1, 3])),
    "cross_entropy_smooth": lambda x: ops.CrossEntropy.apply(x, targets=np.array([0, -100, 3]), label_smoothing=0.1,
                                                             reduction="none"),
    "embedding": lambda x: mg.embedding([2, 0, 2], x),
    "dropout": lambda x: mg.dropout(x, 0.5),
}


@pytest.mark.parametrize("name", list(FLOAT32_CASES))
def test_float32_in_float32_out(name):
    x = mg.tensor(positive((3, 4), 20, low=0.1, high=0.99).astype(np.float32), requires_grad=True)
    out = FLOAT32_CASES[name](x)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert x.grad.dtype == np.float32 and x.grad.shape == x.shape
    assert np.all(np.isfinite(x.grad))


@pytest.mark.parametrize("mask_shape", [None, (4, 5), (2, 1, 1, 5), (1, 3, 4, 5)])
def test_fused_scaled_masked_softmax(mask_shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 5))
    mask = None if mask_shape is None else rng.random(mask_shape) > 0.3
    if mask is not None:
        mask[..., 0, :] = False  # a query with no allowed key: zero weights, zero gradient
    keep = np.ones(x.shape, bool) if mask is None else np.broadcast_to(mask, x.shape)
    z = np.where(keep, 0.5 * x, -np.inf)
    e = np.exp(z - np.max(np.where(keep, z, -1e300), axis=-1, keepdims=True))
    total = e.sum(axis=-1, keepdims=True)
    expected = np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    t = mg.tensor(x, requires_grad=True)
    out = t.softmax(axis=-1, scale=0.5, mask=mask)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-15)
    mg.gradcheck(lambda a: a.softmax(axis=-1, scale=0.5, mask=mask), [t], atol=1e-7, rtol=1e-5)


def test_fused_softmax_rejects_a_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5\).*\(2, 4, 5\)"):
        mg.ones(2, 4, 5).softmax(axis=-1, mask=np.ones((3, 5), bool))


def test_contiguous_copies_a_transposed_view_and_passes_the_gradient():
    x = mg.tensor(np.random.default_rng(4).standard_normal((2, 3, 4)), requires_grad=True)
    view = x.transpose(0, 2)
    assert not view.numpy().flags.c_contiguous
    y = view.contiguous()
    assert y.numpy().flags.c_contiguous and y.contiguous() is y
    np.testing.assert_array_equal(y.numpy(), view.numpy())
    mg.gradcheck(lambda t: t.transpose(0, 2).contiguous() * 2.0, [x], atol=1e-7, rtol=1e-5)
