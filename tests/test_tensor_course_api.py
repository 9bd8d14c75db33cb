"""The Tensor methods and `torch.*` functions that course code calls (x.t(), x.gt(0), x.new_zeros(3),
x.masked_fill_(m, v), x.index_select(0, i), x.amax(1), x.norm(), x.mm(y), torch.triu(x, diagonal=1),
torch.meshgrid, torch.einsum, ...), each checked three ways:

- values, shapes and dtypes against numpy formulas, always, and against PyTorch when it is installed
  (`pytest.importorskip("torch")`), to a tolerance derived from the dtype: a few units in the last
  place (eps) per value that a result sums;
- gradients with `minigrad.gradcheck` in float64 on every element, and against PyTorch's where the
  gradient is a convention (ties of amax, amin and max(dim), the zero vector of norm, nan_to_num);
- errors: a wrong shape, dim or argument gets a message naming the op, the shapes and what was
  expected.

Grad modes (set_grad_enabled, inference_mode) are in test_grad_mode_course_api.py.
"""
import math

import numpy as np
import pytest

import minigrad as mg
from strategies import TIGHT, leaf

RNG_SEED = 20240601


def values(shape, dtype="float64", seed=0, distinct=False):
    """Normal values of `shape`; distinct=True: far apart from each other in |x| and x (no ties, no
    kinks within a gradient check's eps)."""
    rng = np.random.default_rng(seed)
    if distinct:
        n = int(np.prod(shape))
        magnitudes = 0.5 + 0.25 * rng.permutation(n)
        return (magnitudes * rng.choice([-1.0, 1.0], n)).reshape(shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tolerance(dtype, terms=1):
    """rtol for a result that sums `terms` values of `dtype` in some order: 2 eps per term."""
    return 2 * terms * float(np.finfo(dtype).eps) if np.dtype(dtype).kind == "f" else 0.0


def assert_values(ours, expected, rtol=0.0, atol=0.0, dtype=None):
    """ours (a minigrad Tensor) has expected's shape, the dtype `dtype` (expected's by default) and its
    values within rtol/atol (0: bit for bit)."""
    expected = np.asarray(expected)
    assert tuple(ours.shape) == expected.shape, (ours.shape, expected.shape)
    assert ours.dtype == np.dtype(dtype or expected.dtype), (ours.dtype, dtype or expected.dtype)
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def assert_torch(ours, theirs, rtol=0.0, atol=0.0):
    """minigrad's tensor and PyTorch's: the same shape, dtype and (within rtol, atol) values."""
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=np.float64),
                               theirs.detach().numpy().astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def gradcheck(fn, *arrays):
    """gradcheck fn on float64 leaves of `arrays`, every element, at the repo's tight tolerance."""
    assert mg.gradcheck(fn, [leaf(a) for a in arrays], **TIGHT)


def torch_grad(torch, fn, array, upstream):
    """d sum(upstream * fn(x)) / dx in PyTorch, as numpy."""
    x = torch.tensor(array, requires_grad=True)
    fn(x).backward(torch.tensor(upstream))
    return x.grad.numpy()


def our_grad(fn, array, upstream):
    x = mg.tensor(array, requires_grad=True)
    fn(x).backward(upstream)
    return x.grad.numpy()


# ============================================================================ t, comparisons, *_as
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (1, 5)])
def test_t_transposes_a_matrix_and_returns_a_view_of_smaller_ones(shape):
    a = values(shape)
    x = mg.tensor(a)
    assert_values(x.t(), a.T)
    assert_values(mg.t(x), a.T)
    assert x.t() is not x and np.shares_memory(x.t().numpy(), x.numpy())  # a view, as PyTorch's
    if len(shape) == 2:
        gradcheck(lambda t: t.t() * 2.0, a)


def test_t_against_torch():
    torch = pytest.importorskip("torch")
    for shape in [(), (3,), (2, 3)]:
        a = values(shape, "float32")
        assert_torch(mg.tensor(a).t(), torch.tensor(a).t())


def test_t_of_more_than_two_dims_is_refused():
    with pytest.raises(ValueError, match=r"t: expects a tensor of at most 2 dims, got shape \(2, 3, 4\).*transpose"):
        mg.ones(2, 3, 4).t()


COMPARISONS = {"gt": np.greater, "lt": np.less, "ge": np.greater_equal, "le": np.less_equal, "eq": np.equal,
               "ne": np.not_equal}


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_methods_are_the_operators(name):
    a = np.array([[0.5, 0.97, -1.0], [2.0, 0.97, 0.0]], dtype=np.float32)
    b = np.array([0.97, 0.5, 0.0], dtype=np.float32)
    x, y = mg.tensor(a), mg.tensor(b)
    operator = {"gt": "__gt__", "lt": "__lt__", "ge": "__ge__", "le": "__le__", "eq": "__eq__", "ne": "__ne__"}[name]
    for other, other_array in [(y, b), (0.97, np.float32(0.97)), (1, 1), (mg.tensor(b.astype(np.float64)), b)]:
        got = getattr(x, name)(other)
        assert_values(got, COMPARISONS[name](a, other_array))
        assert_values(getattr(x, operator)(other), got.numpy())
        assert_values(getattr(mg, name)(x, other), got.numpy())
        assert not got.requires_grad
    assert_values(getattr(mg.arange(4), name)(2), COMPARISONS[name](np.arange(4), 2))


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_methods_against_torch(name):
    torch = pytest.importorskip("torch")
    a, b = values((3, 4), "float32", 1), values((4,), "float32", 2)
    assert_torch(getattr(mg.tensor(a), name)(mg.tensor(b)), getattr(torch.tensor(a), name)(torch.tensor(b)))
    assert_torch(getattr(mg.tensor(a).abs(), name)(0.97), getattr(torch.tensor(a).abs(), name)(0.97))
    assert_torch(getattr(mg, name)(mg.arange(5), 2), getattr(torch, name)(torch.arange(5), 2))


def test_view_as_reshape_as_expand_as_type_as():
    a, b = values((2, 6)), values((3, 4))
    x, other = mg.tensor(a), mg.tensor(b)
    assert_values(x.view_as(other), a.reshape(3, 4))
    assert_values(x.reshape_as(other), a.reshape(3, 4))
    row = values((1, 4))
    assert_values(mg.tensor(row).expand_as(other), np.broadcast_to(row, (3, 4)))
    assert_values(x.type_as(mg.ones(1, dtype="float32")), a.astype(np.float32))
    assert_values(mg.arange(3).type_as(x), np.arange(3.0))
    assert x.type_as(x) is x
    gradcheck(lambda t: t.view_as(other) * mg.tensor(b), a)
    gradcheck(lambda t: t.expand_as(other) * mg.tensor(b), row)  # the copies' gradients add up
    with pytest.raises(ValueError, match=r"expand: a tensor of shape \(2, 6\) cannot be broadcast to \(3, 4\)"):
        x.expand_as(other)


def test_as_methods_against_torch():
    torch = pytest.importorskip("torch")
    a, b = values((2, 6), "float32"), values((3, 4), "float64")
    x, t = mg.tensor(a), torch.tensor(a)
    assert_torch(x.view_as(mg.tensor(b)), t.view_as(torch.tensor(b)))
    assert_torch(x.type_as(mg.tensor(b)), t.type_as(torch.tensor(b)))
    assert_torch(mg.tensor(a[:1, :4]).expand_as(mg.tensor(b)), t[:1, :4].expand_as(torch.tensor(b)))


# ============================================================================ new_* tensors
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_new_tensors_take_this_tensors_dtype_unless_given(dtype):
    x = mg.ones(2, dtype=dtype)
    for made, expected in [
        (x.new_zeros(2, 3), np.zeros((2, 3))), (x.new_zeros((2, 3)), np.zeros((2, 3))),
        (x.new_ones([4]), np.ones(4)), (x.new_full((2, 2), 7), np.full((2, 2), 7)),
        (x.new_empty(3, 1), np.zeros((3, 1))), (x.new_tensor([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]])),
        (x.new_zeros(()), np.zeros(())),
    ]:
        assert_values(made, expected, dtype=dtype)
        assert made.is_leaf and not made.requires_grad
    assert x.new_zeros(2, dtype="float16").dtype == np.float16
    assert x.new_tensor([1.5], dtype=mg.float64).dtype == np.float64
    assert x.new_ones(2, dtype=mg.float64, requires_grad=True).requires_grad
    assert x.new_full((2,), 1.5, device="cpu").shape == (2,)


def test_new_tensor_copies_its_data():
    data = np.array([1.0, 2.0])
    made = mg.ones(1, dtype="float64").new_tensor(data)
    data[0] = 9.0
    assert made.tolist() == [1.0, 2.0]


def test_new_tensors_against_torch():
    torch = pytest.importorskip("torch")
    for dtype in ["float32", "float64", "int64"]:
        a = np.ones(2, dtype=dtype)
        x, t = mg.tensor(a), torch.tensor(a)
        assert_torch(x.new_zeros(2, 3), t.new_zeros(2, 3))
        assert_torch(x.new_ones((3,)), t.new_ones((3,)))
        assert_torch(x.new_full((2, 2), 3), t.new_full((2, 2), 3))
        assert_torch(x.new_tensor([1, 2]), t.new_tensor([1, 2]))
        assert_torch(x.new_zeros(2, dtype=mg.float64), t.new_zeros(2, dtype=torch.float64))
        assert tuple(x.new_empty(2, 3).shape) == tuple(t.new_empty(2, 3).shape)


def test_new_tensors_refuse_a_bad_shape_or_device():
    with pytest.raises(ValueError, match=r"new_zeros: a shape is integers >= 0, got \(2, -1\)"):
        mg.ones(1).new_zeros(2, -1)
    with pytest.raises(Exception, match="new_ones"):
        mg.ones(1).new_ones(2, device="cuda")


# ============================================================================ masked_fill_
def test_masked_fill_in_place_writes_the_memory_and_counts_a_version():
    a = values((2, 3), "float32")
    mask = np.array([[True, False, True], [False, False, True]])
    x = mg.tensor(a)
    memory, view = x.numpy(), x[1]
    assert x.masked_fill_(mg.tensor(mask), -1.5) is x
    expected = np.where(mask, np.float32(-1.5), a)
    assert x.numpy() is memory and x._version == 1
    assert_values(x, expected)
    assert_values(view, expected[1])
    x.masked_fill_(np.array([True, False, False]), 0.0)  # a mask that broadcasts
    assert_values(x, np.where([True, False, False], np.float32(0), expected))


def test_masked_fill_in_place_against_torch():
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32")
    mask = a > 0.3
    x, t = mg.tensor(a), torch.tensor(a)
    x.masked_fill_(mg.tensor(mask), float("-inf"))
    t.masked_fill_(torch.tensor(mask), float("-inf"))
    assert_torch(x, t)


def test_masked_fill_in_place_follows_the_in_place_rules():
    mask = np.array([True, False, True])
    w = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="masked_fill_: a leaf tensor that requires grad.*no_grad"):
        w.masked_fill_(mask, 0.0)
    assert w.tolist() == [1.0, 2.0, 3.0] and w._version == 0
    with mg.no_grad():
        w.masked_fill_(mask, 0.0)
    assert w.tolist() == [0.0, 2.0, 0.0] and w.is_leaf and w.requires_grad and w._version == 1
    # inside the graph the update is recorded: its gradient is 0 where filled
    a = values((3,), seed=3)
    gradcheck(lambda t: (t * 2.0).masked_fill_(mask, 5.0) * t, a)
    x = leaf(a)
    y = x.exp()  # exp's backward needs y as it was: changing y afterwards must be refused
    y.masked_fill_(mask, 0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*masked_fill_"):
        y.sum().backward()
    with pytest.raises(TypeError, match="masked_fill: mask must be boolean"):
        mg.ones(3).masked_fill_(np.array([1, 0, 1]), 0.0)


# ============================================================================ index_select
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_picks_slices_and_adds_the_gradients_of_repeats(dim):
    a = values((4, 5, 3))
    index = np.array([2, 0, 2, 1])
    if a.shape[dim] <= 2:
        index = index % a.shape[dim]
    x = mg.tensor(a)
    assert_values(x.index_select(dim, mg.tensor(index)), np.take(a, index, axis=dim))
    assert_values(mg.index_select(x, dim, index), np.take(a, index, axis=dim))
    gradcheck(lambda t: t.index_select(dim, mg.tensor(index)), a)
    upstream = values(np.take(a, index, axis=dim).shape, seed=1)
    expected = np.zeros_like(a)
    np.add.at(np.moveaxis(expected, dim, 0), index, np.moveaxis(upstream, dim, 0))  # scatter-add
    np.testing.assert_allclose(our_grad(lambda t: t.index_select(dim, index), a, upstream), expected, rtol=1e-15)


def test_index_select_against_torch():
    torch = pytest.importorskip("torch")
    a = values((4, 5), "float32")
    index = np.array([3, 3, 0])
    assert_torch(mg.tensor(a).index_select(1, mg.tensor(index)), torch.tensor(a).index_select(1, torch.tensor(index)))
    assert_torch(mg.tensor(a).index_select(0, mg.tensor(2)), torch.tensor(a).index_select(0, torch.tensor(2)))
    a64 = values((4, 5))
    upstream = values((4, 3), seed=2)
    np.testing.assert_allclose(our_grad(lambda t: t.index_select(1, index), a64, upstream),
                               torch_grad(torch, lambda t: t.index_select(1, torch.tensor(index)), a64, upstream),
                               rtol=tolerance("float64", 2))


def test_index_select_errors_name_the_index_and_the_dim():
    x = mg.ones(4, 5)
    with pytest.raises(ValueError, match=r"index_select: index must be a 1-D integer tensor, got shape \(2, 2\)"):
        x.index_select(0, np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="index_select: index must be a 1-D integer tensor.*float32"):
        x.index_select(0, mg.tensor([1.0]))
    with pytest.raises(IndexError, match=r"index_select: index 5 is out of range for dim 1 of size 5 \(tensor of "
                                         r"shape \(4, 5\)\)"):
        x.index_select(1, [0, 5])
    with pytest.raises(IndexError, match="index_select: index -1 is out of range"):
        x.index_select(0, [-1])
    with pytest.raises(Exception, match=r"index_select: axis 2 is out of range for a tensor of shape \(4, 5\)"):
        x.index_select(2, [0])


# ============================================================================ amax, amin, max(dim)
@pytest.mark.parametrize("dim, keepdim", [((), False), (0, False), (1, True), ((0, 2), False), ([-1], True)])
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin_values_and_gradient(name, dim, keepdim):
    a = values((3, 4, 2), distinct=True)
    axes = None if dim == () else tuple(dim) if isinstance(dim, list) else dim
    reference = getattr(np, name)(a, axis=axes, keepdims=keepdim)
    assert_values(getattr(mg.tensor(a), name)(dim, keepdim), reference)
    assert_values(getattr(mg, name)(mg.tensor(a), dim=dim, keepdim=keepdim), reference)
    gradcheck(lambda t: getattr(t, name)(dim, keepdim), a)


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin_split_the_gradient_evenly_among_ties(name):
    a = np.array([[1.0, 3.0, 3.0, 3.0], [2.0, -1.0, 2.0, -1.0]])
    upstream = np.array([6.0, 12.0])
    extreme = getattr(np, name)(a, axis=1, keepdims=True)
    ties = a == extreme
    expected = ties * upstream[:, None] / ties.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(our_grad(lambda t: getattr(t, name)(1), a, upstream), expected)


def test_amax_amin_and_max_dim_gradients_against_torch():
    """amax and amin share the gradient among ties; max(dim) and min(dim) give it to one element
    (PyTorch's documented difference); max() over everything shares it, as amax."""
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -5.0, -5.0], [7.0, 7.0, 7.0, 7.0]])
    upstream = np.array([1.0, 2.0, 3.0])
    for ours, theirs in [
        (lambda t: t.amax(1), lambda t: t.amax(1)),
        (lambda t: t.amin(1), lambda t: t.amin(1)),
        (lambda t: mg.amax(t, dim=(0, 1), keepdim=True).reshape(1).expand(3),
         lambda t: torch.amax(t, dim=(0, 1), keepdim=True).reshape(1).expand(3)),
        (lambda t: t.max(1).values, lambda t: t.max(1).values),
        (lambda t: t.min(dim=1).values, lambda t: t.min(dim=1).values),
        (lambda t: t.max(dim=1, keepdim=True)[0].reshape(3), lambda t: t.max(dim=1, keepdim=True)[0].reshape(3)),
        (lambda t: t.max().expand(3), lambda t: t.max().expand(3)),
    ]:
        np.testing.assert_array_equal(our_grad(ours, a, upstream), torch_grad(torch, theirs, a, upstream))
    for shape, dim, keepdim in [((3, 4), 0, False), ((2, 3, 4), (0, 2), True), ((5,), (), False)]:
        b = values(shape, "float32")
        assert_torch(mg.tensor(b).amax(dim, keepdim), torch.tensor(b).amax(dim, keepdim))
        assert_torch(mg.tensor(b).amin(dim, keepdim), torch.tensor(b).amin(dim, keepdim))


def test_max_dim_gives_the_gradient_to_its_index():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    result = mg.tensor(a, requires_grad=True)
    values_, indices = result.max(1)
    values_.sum().backward()
    expected = np.zeros_like(a)
    expected[np.arange(2), indices.numpy()] = 1.0
    np.testing.assert_array_equal(result.grad.numpy(), expected)
    gradcheck(lambda t: t.max(dim=0).values + t.min(1, keepdim=True).values.sum(), values((3, 4), distinct=True))
    with pytest.raises(ValueError, match=r"max: axis 1 of the tensor of shape \(2, 0\) is empty"):
        mg.ones(2, 0).max(1)


def test_amax_errors_name_amax():
    with pytest.raises(Exception, match=r"amax: axis 3 is out of range for a tensor of shape \(2, 3\)"):
        mg.ones(2, 3).amax(3)
    with pytest.raises(ValueError, match=r"amin: axis 0 of the tensor of shape \(0, 3\) is empty"):
        mg.ones(0, 3).amin(0)


# ============================================================================ norm
def numpy_norm(a, p, axis=None, keepdims=False):
    m = np.abs(a)
    if p in ("fro", 2):
        return np.sqrt(np.sum(m * m, axis=axis, keepdims=keepdims))
    if p == math.inf:
        return np.max(m, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return np.min(m, axis=axis, keepdims=keepdims)
    return np.sum(m ** p, axis=axis, keepdims=keepdims) ** (1 / p)


NORMS = ["fro", 2, 1, math.inf, -math.inf, 3, 1.5]


@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (1, False), ((0, 2), True), (-1, False)])
def test_norm_values_and_gradient(p, dim, keepdim):
    a = values((2, 3, 4), distinct=True)
    axis = tuple(dim) if isinstance(dim, list) else dim
    terms = a.size if dim is None else np.prod([a.shape[d] for d in np.atleast_1d(dim)])
    assert_values(mg.tensor(a).norm(p, dim, keepdim), numpy_norm(a, p, axis, keepdim),
                  rtol=tolerance("float64", terms))
    a32 = a.astype(np.float32)
    assert_values(mg.norm(mg.tensor(a32), p=p, dim=dim, keepdim=keepdim), numpy_norm(a32, p, axis, keepdim),
                  rtol=tolerance("float32", terms), dtype="float32")  # (numpy < 2 gives the reference in float64)
    gradcheck(lambda t: t.norm(p, dim, keepdim), a)


@pytest.mark.parametrize("p", NORMS)
def test_norm_against_torch(p):
    torch = pytest.importorskip("torch")
    a = values((3, 5), "float32", seed=4)
    for dim, keepdim in [(None, False), (1, True), ((0, 1), False), (0, False)]:
        assert_torch(mg.tensor(a).norm(p, dim, keepdim), torch.tensor(a).norm(p, dim, keepdim),
                     rtol=tolerance("float32", a.size))
        assert_torch(mg.norm(mg.tensor(a), p, dim), torch.norm(torch.tensor(a), p, dim),
                     rtol=tolerance("float32", a.size))
    a64 = values((3, 5), seed=5)
    upstream = values((3,), seed=6)
    np.testing.assert_allclose(our_grad(lambda t: t.norm(p, 1), a64, upstream),
                               torch_grad(torch, lambda t: t.norm(p, 1), a64, upstream), rtol=tolerance("float64", 15))


@pytest.mark.parametrize("p", NORMS)
def test_norm_gradient_at_the_zero_vector_is_zero(p):
    a = np.zeros((2, 3))
    a[1] = [0.0, 3.0, -4.0]  # row 0 is the zero vector, row 1 is not
    grad = our_grad(lambda t: t.norm(p, dim=1), a, np.array([1.0, 1.0]))
    assert np.all(np.isfinite(grad)), grad
    np.testing.assert_array_equal(grad[0], 0.0)
    full_zero = our_grad(lambda t: t.norm(p), np.zeros(4), np.array(1.0))
    np.testing.assert_array_equal(full_zero, 0.0)


@pytest.mark.parametrize("p", NORMS)
def test_norm_gradient_at_zero_and_ties_against_torch(p):
    torch = pytest.importorskip("torch")
    a = np.array([[0.0, 0.0, 0.0], [3.0, -3.0, 1.0], [0.0, 2.0, -2.0]])  # a zero row, ties of |x| for inf
    upstream = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(our_grad(lambda t: t.norm(p, 1), a, upstream),
                               torch_grad(torch, lambda t: t.norm(p, 1), a, upstream), rtol=tolerance("float64", 3),
                               atol=tolerance("float64"))


def test_norm_refuses_integers_matrix_norms_and_small_p():
    with pytest.raises(TypeError, match=r"norm: expected a float tensor, got int64 \(shape \(3,\)\).*float\(\)"):
        mg.arange(3).norm()
    assert_values(mg.arange(3).norm(dtype=mg.float64), np.sqrt(5.0), rtol=tolerance("float64", 3))
    with pytest.raises(ValueError, match="norm: p='nuc'.*matrix norm, which is not supported"):
        mg.ones(2, 2).norm("nuc")
    with pytest.raises(ValueError, match=r"norm: p='fro' over dims \(0, 1, 2\) is a matrix norm"):
        mg.ones(2, 2, 2).norm("fro", dim=(0, 1, 2))
    for p in (0.5, 0, -1, True):
        with pytest.raises(ValueError, match=f"norm: p={p!r} is not supported; expected 'fro', 1, 2, inf"):
            mg.ones(3).norm(p)
    with pytest.raises(Exception, match=r"norm: axis 2 is out of range for a tensor of shape \(2, 2\)"):
        mg.ones(2, 2).norm(dim=2)
    with pytest.raises(ValueError, match=r"norm: axis 0 of the tensor of shape \(0,\) is empty"):
        mg.ones(0).norm(math.inf)


# ============================================================================ ceil, square, reciprocal
def test_ceil_square_reciprocal_values_and_dtypes():
    for dtype in ["float32", "float64"]:
        a = values((3, 4), dtype) * 3
        x = mg.tensor(a)
        assert_values(x.ceil(), np.ceil(a))
        assert_values(x.square(), a * a)
        assert_values(x.reciprocal(), 1 / a, rtol=tolerance(dtype))
        assert_values(mg.square(x), a * a)
    i = np.array([-3, 0, 2, 5])
    assert_values(mg.tensor(i).ceil(), i)
    assert_values(mg.tensor(i).square(), i * i)
    assert_values(mg.tensor(np.array([1, 2, 4])).reciprocal(), np.array([1, 0.5, 0.25], dtype=np.float32))
    gradcheck(lambda t: t.square(), values((3, 4)))
    gradcheck(lambda t: t.reciprocal(), values((3, 4), distinct=True))
    np.testing.assert_array_equal(our_grad(lambda t: t.ceil(), values((3,)), np.ones(3)), 0.0)


def test_ceil_square_reciprocal_against_torch():
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32") * 3
    for name in ["ceil", "square", "reciprocal"]:
        assert_torch(getattr(mg.tensor(a), name)(), getattr(torch.tensor(a), name)(), rtol=tolerance("float32"))
        assert_torch(getattr(mg, name)(mg.tensor(a)), getattr(torch, name)(torch.tensor(a)), rtol=tolerance("float32"))
    i = np.array([-3, 1, 2, 5])
    for name in ["ceil", "square", "reciprocal"]:
        assert_torch(getattr(mg.tensor(i), name)(), getattr(torch.tensor(i), name)(), rtol=tolerance("float32"))


# ============================================================================ mm, bmm, outer, dot
def test_mm_bmm_outer_dot_values_and_gradients():
    a, b = values((3, 4), seed=1), values((4, 2), seed=2)
    A, B = values((5, 3, 4), seed=3), values((5, 4, 2), seed=4)
    u, v = values((4,), seed=5), values((3,), seed=6)
    assert_values(mg.tensor(a).mm(mg.tensor(b)), a @ b, rtol=tolerance("float64", 4))
    assert_values(mg.mm(mg.tensor(a), mg.tensor(b)), a @ b, rtol=tolerance("float64", 4))
    assert_values(mg.tensor(A).bmm(mg.tensor(B)), A @ B, rtol=tolerance("float64", 4))
    assert_values(mg.bmm(mg.tensor(A), mg.tensor(B)), A @ B, rtol=tolerance("float64", 4))
    assert_values(mg.tensor(u).outer(mg.tensor(v)), np.outer(u, v))
    assert_values(mg.outer(mg.tensor(u), mg.tensor(v)), np.outer(u, v))
    assert_values(mg.tensor(u).dot(mg.tensor(u[::-1].copy())), np.dot(u, u[::-1]), rtol=tolerance("float64", 4))
    assert_values(mg.dot(mg.arange(3), mg.arange(3)), np.int64(5))
    gradcheck(lambda x, y: x.mm(y), a, b)
    gradcheck(lambda x, y: x.bmm(y), A, B)
    gradcheck(lambda x, y: x.outer(y), u, v)
    gradcheck(lambda x, y: x.dot(y), u, values((4,), seed=7))


def test_mm_bmm_outer_dot_against_torch():
    torch = pytest.importorskip("torch")
    a, b = values((3, 4), "float32", 1), values((4, 2), "float32", 2)
    A, B = values((5, 3, 4), "float32", 3), values((5, 4, 2), "float32", 4)
    u, v = values((4,), "float32", 5), values((3,), "float32", 6)
    rtol = tolerance("float32", 4)
    assert_torch(mg.tensor(a).mm(mg.tensor(b)), torch.tensor(a).mm(torch.tensor(b)), rtol=rtol, atol=rtol)
    assert_torch(mg.bmm(mg.tensor(A), mg.tensor(B)), torch.bmm(torch.tensor(A), torch.tensor(B)), rtol=rtol, atol=rtol)
    assert_torch(mg.tensor(u).outer(mg.tensor(v)), torch.tensor(u).outer(torch.tensor(v)))
    assert_torch(mg.dot(mg.tensor(u), mg.tensor(u)), torch.dot(torch.tensor(u), torch.tensor(u)), rtol=rtol)
    assert_torch(mg.dot(mg.arange(4), mg.arange(4)), torch.dot(torch.arange(4), torch.arange(4)))


def test_mm_bmm_outer_dot_shape_errors():
    with pytest.raises(ValueError, match=r"mm: expected two 2-D \(matrices\) tensors, got shapes \(2, 3, 4\) and "
                                         r"\(4, 2\)"):
        mg.ones(2, 3, 4).mm(mg.ones(4, 2))
    with pytest.raises(ValueError, match=r"mm: expected two 2-D.*got shapes \(3, 4\) and \(4,\)"):
        mg.mm(mg.ones(3, 4), mg.ones(4))
    with pytest.raises(ValueError, match=r"mm: inner dimensions differ: \(3, 4\) @ \(3, 2\) \(4 != 3\)"):
        mg.ones(3, 4).mm(mg.ones(3, 2))
    with pytest.raises(ValueError, match=r"bmm: expected two 3-D \(batches of matrices\) tensors, got shapes "
                                         r"\(3, 4\) and \(4, 2\)"):
        mg.ones(3, 4).bmm(mg.ones(4, 2))
    with pytest.raises(ValueError, match=r"bmm: the batch sizes differ: \(2, 3, 4\) and \(1, 4, 2\) \(2 != 1\)"):
        mg.bmm(mg.ones(2, 3, 4), mg.ones(1, 4, 2))
    with pytest.raises(ValueError, match=r"bmm: inner dimensions differ: \(2, 3, 4\) @ \(2, 5, 2\)"):
        mg.bmm(mg.ones(2, 3, 4), mg.ones(2, 5, 2))
    with pytest.raises(TypeError, match="mm: expected the same float dtype, got self float32, mat2 float64"):
        mg.ones(2, 2).mm(mg.ones(2, 2, dtype="float64"))
    with pytest.raises(ValueError, match=r"outer: expected two 1-D tensors, got shapes \(2, 2\) and \(3,\)"):
        mg.ones(2, 2).outer(mg.ones(3))
    with pytest.raises(ValueError, match=r"dot: expected two 1-D tensors of the same length, got shapes \(3,\) and "
                                         r"\(4,\)"):
        mg.dot(mg.ones(3), mg.ones(4))
    with pytest.raises(ValueError, match=r"dot: expected two 1-D.*\(2, 2\) and \(2, 2\)"):
        mg.ones(2, 2).dot(mg.ones(2, 2))
    with pytest.raises(TypeError, match="dot: expected both tensors to have the same dtype, got float32 and float64"):
        mg.ones(2).dot(mg.ones(2, dtype="float64"))


# ============================================================================ where, unflatten, narrow
def test_where_method_and_the_one_argument_form():
    a, b = values((2, 3), seed=1), values((3,), seed=2)
    condition = a > 0
    x = mg.tensor(a)
    assert_values(x.where(mg.tensor(condition), mg.tensor(b)), np.where(condition, a, b))
    assert_values(x.where(condition, 0.0), np.where(condition, a, 0.0))
    gradcheck(lambda s, t: s.where(mg.tensor(condition), t), a, b)
    positions = mg.where(mg.tensor(condition))
    assert isinstance(positions, tuple) and len(positions) == 2
    for ours, theirs in zip(positions, np.nonzero(condition)):
        assert_values(ours, theirs.astype(np.int64))
    with pytest.raises(TypeError, match=r"where: expected where\(condition, input, other\)"):
        mg.where(condition, x)


def test_where_against_torch():
    torch = pytest.importorskip("torch")
    a, b = values((2, 3), "float32", 1), values((3,), "float32", 2)
    condition = a > 0
    assert_torch(mg.tensor(a).where(mg.tensor(condition), mg.tensor(b)),
                 torch.tensor(a).where(torch.tensor(condition), torch.tensor(b)))
    for ours, theirs in zip(mg.where(mg.tensor(condition)), torch.where(torch.tensor(condition))):
        assert_torch(ours, theirs)


@pytest.mark.parametrize("dim, sizes, shape", [(1, (3, 4), (2, 3, 4, 5)), (-2, (2, -1), (2, 2, 6, 5)),
                                               (0, (1, 2, 1), (1, 2, 1, 12, 5)), (2, (5,), (2, 12, 5))])
def test_unflatten(dim, sizes, shape):
    a = values((2, 12, 5))
    assert_values(mg.tensor(a).unflatten(dim, sizes), a.reshape(shape))
    assert_values(mg.unflatten(mg.tensor(a), dim, sizes), a.reshape(shape))
    gradcheck(lambda t: t.unflatten(dim, sizes), a)


def test_unflatten_against_torch_and_its_errors():
    torch = pytest.importorskip("torch")
    a = values((2, 12), "float32")
    for dim, sizes in [(1, (3, 4)), (1, (-1, 6)), (0, (2, 1))]:
        assert_torch(mg.tensor(a).unflatten(dim, sizes), torch.tensor(a).unflatten(dim, sizes))


def test_unflatten_errors():
    x = mg.ones(2, 12)
    for sizes in [(5, 3), (5, -1), (-1, -1), (), (-2, -6)]:
        with pytest.raises(ValueError, match=r"unflatten: sizes .* do not split dim 1 of size 12 \(tensor of shape "
                                             r"\(2, 12\)\); expected sizes that multiply to 12"):
            x.unflatten(1, sizes)
    with pytest.raises(Exception, match=r"unflatten: axis 2 is out of range"):
        x.unflatten(2, (1,))


def test_narrow():
    a = values((4, 6))
    x = mg.tensor(a)
    assert_values(x.narrow(1, 2, 3), a[:, 2:5])
    assert_values(x.narrow(0, -2, 2), a[2:4])
    assert_values(mg.narrow(x, 0, 4, 0), a[4:4])
    assert np.shares_memory(x.narrow(1, 2, 3).numpy(), x.numpy())  # a view, as PyTorch's
    gradcheck(lambda t: t.narrow(1, 1, 4) * 3.0, a)
    for start, length in [(5, 2), (-7, 1), (0, 7), (2, -1)]:
        with pytest.raises(ValueError, match=rf"narrow: start -?\d+ and length {length} do not fit in dim 1 of size 6 "
                                             r"\(tensor of shape \(4, 6\)\)"):
            x.narrow(1, start, length)


def test_narrow_against_torch():
    torch = pytest.importorskip("torch")
    a = values((4, 6), "float32")
    for dim, start, length in [(1, 2, 3), (0, -2, 2), (0, 0, 4)]:
        assert_torch(mg.tensor(a).narrow(dim, start, length), torch.tensor(a).narrow(dim, start, length))


def test_is_contiguous_against_torch():
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32")
    for change in [lambda t: t, lambda t: t.t(), lambda t: t.t().contiguous(), lambda t: t[:, 1:3],
                   lambda t: t[1:], lambda t: t.transpose(0, 1), lambda t: t.reshape(4, 3)]:
        assert change(mg.tensor(a)).is_contiguous() == change(torch.tensor(a)).is_contiguous()
    assert mg.ones(3).is_contiguous() and not mg.ones(3, 4).t().is_contiguous()


# ============================================================================ roll, diag
@pytest.mark.parametrize("shifts, dims", [(1, 0), (-2, 1), ((1, 3), (0, 1)), (5, None), (-1, -1), ([2], [1])])
def test_roll(shifts, dims):
    a = values((3, 4))
    axis = tuple(dims) if isinstance(dims, list) else dims
    shift = tuple(shifts) if isinstance(shifts, list) else shifts
    assert_values(mg.tensor(a).roll(shifts, dims), np.roll(a, shift, axis))
    assert_values(mg.roll(mg.tensor(a), shifts, dims), np.roll(a, shift, axis))
    gradcheck(lambda t: t.roll(shifts, dims), a)


def test_roll_against_torch_and_its_errors():
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32")
    for shifts, dims in [(1, 0), (-2, 1), ((1, 3), (0, 1)), (5, None)]:
        assert_torch(mg.tensor(a).roll(shifts, dims), torch.tensor(a).roll(shifts, dims))
    with pytest.raises(ValueError, match=r"roll: 2 shifts \(1, 2\) for 1 dims \(0,\); expected one shift per dim"):
        mg.ones(3, 4).roll((1, 2), 0)
    with pytest.raises(Exception, match=r"roll: axis 2 is out of range for a tensor of shape \(3, 4\)"):
        mg.ones(3, 4).roll(1, 2)


@pytest.mark.parametrize("k", [0, 1, -1, 2, -3])
def test_diag_of_a_vector_and_of_a_matrix(k):
    v, m = values((3,)), values((3, 5))
    assert_values(mg.tensor(v).diag(k), np.diag(v, k))
    assert_values(mg.diag(mg.tensor(m), k), np.diag(m, k))
    assert_values(mg.diag(mg.tensor(m.T.copy()), k), np.diag(m.T, k))
    gradcheck(lambda t: t.diag(k), v)
    gradcheck(lambda t: t.diag(k), m)


def test_diag_against_torch_and_its_errors():
    torch = pytest.importorskip("torch")
    for shape in [(4,), (3, 5), (5, 3)]:
        a = values(shape, "float32")
        for k in [0, 2, -1, 6]:
            assert_torch(mg.tensor(a).diag(k), torch.tensor(a).diag(k))
    with pytest.raises(ValueError, match=r"diag: expected a 1-D tensor .* or a 2-D one .*, got shape \(2, 2, 2\)"):
        mg.ones(2, 2, 2).diag()
    with pytest.raises(ValueError, match=r"diag: expected a 1-D tensor .*, got shape \(\)"):
        mg.tensor(1.0).diag()


# ============================================================================ nonzero, count_nonzero, isinf, nan_to_num
@pytest.mark.parametrize("array", [np.array([[0, 1.5, 0], [2, 0, -1]]), np.array([0.0, 0.0]), np.array(3.0),
                                   np.array(0), np.zeros((2, 0)), np.array([[True, False], [True, True]])])
def test_nonzero_and_count_nonzero(array):
    x = mg.tensor(array)
    assert_values(x.nonzero(), np.argwhere(array).astype(np.int64))
    positions = mg.nonzero(x, as_tuple=True)
    for ours, theirs in zip(positions, np.nonzero(np.atleast_1d(array))):
        assert_values(ours, theirs.astype(np.int64))
    assert len(positions) == max(array.ndim, 1)
    assert_values(x.count_nonzero(), np.int64(np.count_nonzero(array)))
    if array.ndim == 2:
        assert_values(mg.count_nonzero(x, dim=0), np.count_nonzero(array, axis=0).astype(np.int64))
        assert_values(x.count_nonzero((0, 1)), np.int64(np.count_nonzero(array)))
    assert not mg.tensor(array.astype(np.float64), requires_grad=True).nonzero().requires_grad


def test_nonzero_and_count_nonzero_against_torch():
    torch = pytest.importorskip("torch")
    for array in [np.array([[0, 1.5, 0], [2, 0, -1]], dtype=np.float32), np.array(3.0), np.array(0), np.zeros((2, 0))]:
        assert_torch(mg.tensor(array).nonzero(), torch.tensor(array).nonzero())
        for ours, theirs in zip(mg.tensor(array).nonzero(as_tuple=True), torch.tensor(array).nonzero(as_tuple=True),
                                strict=True):
            assert_torch(ours, theirs)
        assert_torch(mg.count_nonzero(mg.tensor(array)), torch.count_nonzero(torch.tensor(array)))
    array = np.array([[0, 1, 0], [2, 0, 0]])
    assert_torch(mg.tensor(array).count_nonzero(1), torch.tensor(array).count_nonzero(1))


def test_isinf_and_nan_to_num():
    a = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], dtype=np.float32)
    x = mg.tensor(a)
    assert_values(x.isinf(), np.isinf(a))
    assert_values(mg.isinf(x), np.isinf(a))
    assert_values(x.nan_to_num(), np.nan_to_num(a))
    assert_values(mg.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), np.nan_to_num(a, nan=-1.0, posinf=9.0,
                                                                                       neginf=-9.0))
    assert_values(x.nan_to_num(posinf=2.0), np.nan_to_num(a, posinf=2.0))
    assert_values(mg.arange(3).nan_to_num(), np.arange(3))
    a64 = np.array([[np.nan, 1.0, np.inf], [-2.0, -np.inf, 3.0]])
    upstream = values((2, 3), seed=1)
    np.testing.assert_array_equal(our_grad(lambda t: t.nan_to_num(), a64, upstream),
                                  np.where(np.isfinite(a64), upstream, 0.0))
    gradcheck(lambda t: t.nan_to_num(), values((2, 3)))


def test_isinf_and_nan_to_num_against_torch():
    torch = pytest.importorskip("torch")
    for dtype in ["float32", "float64", "float16"]:
        a = np.array([np.nan, np.inf, -np.inf, 1.5, 0.0], dtype=dtype)
        assert_torch(mg.tensor(a).isinf(), torch.tensor(a).isinf())
        assert_torch(mg.tensor(a).nan_to_num(), torch.tensor(a).nan_to_num())
        assert_torch(mg.nan_to_num(mg.tensor(a), 1.0, 2.0, -3.0), torch.nan_to_num(torch.tensor(a), 1.0, 2.0, -3.0))
    a64 = np.array([[np.nan, 1.0, np.inf], [-2.0, -np.inf, 3.0]])
    upstream = values((2, 3), seed=1)
    np.testing.assert_array_equal(our_grad(lambda t: t.nan_to_num(), a64, upstream),
                                  torch_grad(torch, lambda t: t.nan_to_num(), a64, upstream))


# ============================================================================ tril, triu
@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [0, 1, -1, 3])
def test_tril_triu_take_diagonal_by_pytorchs_name(name, diagonal):
    a = values((2, 3, 4))
    reference = getattr(np, name)(a, diagonal)
    x = mg.tensor(a)
    for result in [getattr(x, name)(diagonal=diagonal), getattr(x, name)(k=diagonal), getattr(x, name)(diagonal),
                   getattr(mg, name)(x, diagonal=diagonal), getattr(mg, name)(x, diagonal)]:
        assert_values(result, reference)
    gradcheck(lambda t: getattr(t, name)(diagonal=diagonal), a)
    with pytest.raises(TypeError, match=f"{name}: got both diagonal=1 and k=2, which are the same argument"):
        getattr(x, name)(diagonal=1, k=2)
    with pytest.raises(TypeError, match=f"{name}: diagonal must be an int, got 0.5"):
        getattr(x, name)(0.5)


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_against_torch(name):
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32")
    for diagonal in [0, 1, -2]:
        assert_torch(getattr(mg, name)(mg.tensor(a), diagonal=diagonal),
                     getattr(torch, name)(torch.tensor(a), diagonal=diagonal))


# ============================================================================ repeat_interleave, hstack, vstack
@pytest.mark.parametrize("repeats, dim", [(2, None), (3, 0), (2, 1), ([1, 0, 2], 0), ([2, 1, 1, 3], -1), ([2], 1)])
def test_repeat_interleave(repeats, dim):
    a = values((3, 4))
    expected = np.repeat(a, repeats, axis=dim)
    assert_values(mg.tensor(a).repeat_interleave(mg.tensor(repeats) if isinstance(repeats, list) else repeats, dim),
                  expected)
    assert_values(mg.repeat_interleave(mg.tensor(a), repeats, dim=dim), expected)
    gradcheck(lambda t: t.repeat_interleave(repeats, dim), a)


def test_repeat_interleave_against_torch_and_its_errors():
    torch = pytest.importorskip("torch")
    a = values((3, 4), "float32")
    for repeats, dim in [(2, None), (3, 0), ([1, 0, 2], 0), ([2], 1)]:
        theirs = torch.tensor(repeats) if isinstance(repeats, list) else repeats
        assert_torch(mg.tensor(a).repeat_interleave(mg.tensor(repeats) if isinstance(repeats, list) else repeats, dim),
                     torch.tensor(a).repeat_interleave(theirs, dim))
    assert_torch(mg.repeat_interleave(mg.tensor([2, 0, 3])), torch.repeat_interleave(torch.tensor([2, 0, 3])))
    with pytest.raises(ValueError, match=r"repeat_interleave: repeats must be an int or a 1-D integer tensor of 3 "
                                         r"counts \(dim 0 of shape \(3, 4\)\) or of 1, got shape \(2,\)"):
        mg.ones(3, 4).repeat_interleave([1, 2], dim=0)
    with pytest.raises(ValueError, match=r"repeat_interleave: repeats must be >= 0, got \[1, -1, 1\]"):
        mg.ones(3).repeat_interleave([1, -1, 1])
    with pytest.raises(ValueError, match="repeat_interleave: output_size=5, but the repeats give 6"):
        mg.ones(3).repeat_interleave(2, output_size=5)


def test_hstack_vstack():
    a, b = values((2, 3), seed=1), values((2, 1), seed=2)
    u, v = values((3,), seed=3), values((2,), seed=4)
    assert_values(mg.hstack([mg.tensor(a), mg.tensor(b)]), np.hstack([a, b]))
    assert_values(mg.hstack([mg.tensor(u), mg.tensor(v)]), np.hstack([u, v]))
    assert_values(mg.hstack([mg.tensor(1.0), mg.tensor(u)]), np.hstack([np.float32(1.0), u]))
    assert_values(mg.vstack([mg.tensor(a), mg.tensor(u)]), np.vstack([a, u]))
    assert_values(mg.vstack([mg.tensor(u), mg.tensor(u)]), np.vstack([u, u]))
    gradcheck(lambda s, t: mg.hstack([s, t]), a, b)
    gradcheck(lambda s, t: mg.vstack([s, t]), a, u)


def test_hstack_vstack_against_torch():
    torch = pytest.importorskip("torch")
    a, u = values((2, 3), "float32", 1), values((3,), "float32", 2)
    assert_torch(mg.hstack([mg.tensor(a), mg.tensor(a)]), torch.hstack([torch.tensor(a), torch.tensor(a)]))
    assert_torch(mg.hstack([mg.tensor(u), mg.tensor(u)]), torch.hstack([torch.tensor(u), torch.tensor(u)]))
    assert_torch(mg.vstack([mg.tensor(a), mg.tensor(u)]), torch.vstack([torch.tensor(a), torch.tensor(u)]))
    assert_torch(mg.vstack([mg.tensor(2.0), mg.tensor(3.0)]), torch.vstack([torch.tensor(2.0), torch.tensor(3.0)]))


# ============================================================================ meshgrid
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b, c = values((3,), seed=1), values((4,), seed=2), values((2,), seed=3)
    ours = mg.meshgrid(mg.tensor(a), mg.tensor(b), mg.tensor(c), indexing=indexing)
    for got, expected in zip(ours, np.meshgrid(a, b, c, indexing=indexing), strict=True):
        assert_values(got, expected)
    listed = mg.meshgrid([mg.tensor(a), mg.tensor(b)], indexing=indexing)
    for got, expected in zip(listed, np.meshgrid(a, b, indexing=indexing), strict=True):
        assert_values(got, expected)
    assert_values(mg.meshgrid(mg.tensor(a))[0], a)
    assert_values(mg.meshgrid(mg.tensor(np.float64(1.0)), mg.tensor(b), indexing=indexing)[1],
                  np.meshgrid(np.float64(1.0), b, indexing=indexing)[1])
    gradcheck(lambda s, t: mg.meshgrid(s, t, indexing=indexing)[0] * mg.meshgrid(s, t, indexing=indexing)[1], a, b)


def test_meshgrid_against_torch_and_its_errors():
    torch = pytest.importorskip("torch")
    a, b = values((3,), "float32", 1), values((4,), "float32", 2)
    for indexing in ["ij", "xy"]:
        for ours, theirs in zip(mg.meshgrid(mg.tensor(a), mg.tensor(b), indexing=indexing),
                                torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing), strict=True):
            assert_torch(ours, theirs)
    with pytest.raises(ValueError, match=r"meshgrid: expects 0-D or 1-D tensors, got shapes \[\(3,\), \(2, 2\)\]"):
        mg.meshgrid(mg.ones(3), mg.ones(2, 2))
    with pytest.raises(TypeError, match=r"meshgrid: expects tensors of one dtype, got \['float32', 'int64'\]"):
        mg.meshgrid(mg.ones(3), mg.arange(2))
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'ij' or 'xy', got 'yx'"):
        mg.meshgrid(mg.ones(3), indexing="yx")


# ============================================================================ einsum
EQUATIONS = [  # (equation, operand shapes)
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,j", [(3, 4), (4,)]),  # implicit output: "i"
    ("ba,ca", [(3, 4), (2, 4)]),  # implicit output, alphabetical: "bc"
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ik,jk->ijk", [(3, 1), (2, 4)]),  # k of size 1 in one operand broadcasts
    ("abc,cd->abd", [(2, 1, 3), (3, 4)]),
    ("ij,kl->", [(2, 3), (4, 5)]),  # letters of one operand alone are summed
]


def test_einsum_of_integers_and_of_an_integer_with_a_float():
    a, b = np.arange(6).reshape(2, 3), np.arange(3)
    assert_values(mg.einsum("ij,j->i", mg.tensor(a), mg.tensor(b)), np.einsum("ij,j->i", a, b))
    f = values((3,), "float32")
    assert_values(mg.einsum("ij,j->i", mg.tensor(a), mg.tensor(f)), np.einsum("ij,j->i", a.astype(np.float32), f),
                  rtol=tolerance("float32", 3))


@pytest.mark.parametrize("equation, shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_values_and_gradients(equation, shapes):
    arrays = [values(shape, seed=i) for i, shape in enumerate(shapes)]
    terms = max(1, int(np.prod([n for s in shapes for n in s])) // int(np.prod(np.einsum(equation, *arrays).shape)))
    expected = np.einsum(equation, *arrays)
    assert_values(mg.einsum(equation, *[mg.tensor(a) for a in arrays]), expected, rtol=tolerance("float64", terms),
                  atol=tolerance("float64", terms))
    assert_values(mg.einsum(equation, [mg.tensor(a) for a in arrays]), expected, rtol=tolerance("float64", terms),
                  atol=tolerance("float64", terms))
    gradcheck(lambda *ts: mg.einsum(equation, *ts), *arrays)


@pytest.mark.parametrize("equation, shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_against_torch(equation, shapes):
    torch = pytest.importorskip("torch")
    arrays = [values(shape, "float32", seed=i) for i, shape in enumerate(shapes)]
    terms = int(np.prod([n for s in shapes for n in s]))
    assert_torch(mg.einsum(equation, *[mg.tensor(a) for a in arrays]),
                 torch.einsum(equation, *[torch.tensor(a) for a in arrays]), rtol=tolerance("float32", terms),
                 atol=tolerance("float32", terms))
    arrays = [values(shape, seed=i) for i, shape in enumerate(shapes)]
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = mg.einsum(equation, *ours)
    upstream = values(out.shape, seed=9)
    out.backward(upstream)
    torch.einsum(equation, *theirs).backward(torch.tensor(upstream))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=tolerance("float64", terms),
                                   atol=tolerance("float64", terms))


def test_einsum_errors():
    a, b = mg.ones(3, 4), mg.ones(4, 2)
    with pytest.raises(ValueError, match=r"einsum: '\.\.\.' may appear once per operand"):
        mg.einsum("......ij,jk", a, b)
    with pytest.raises(ValueError, match=r"einsum: an operand has fewer dims than its letters name"):
        mg.einsum("...ijk,jk", a, b)
    with pytest.raises(ValueError, match="einsum: operand 0's letters 'ii' repeat a letter.*diag"):
        mg.einsum("ii->i", mg.ones(3, 3))
    with pytest.raises(ValueError, match=r"einsum: letter 'j' has size 4 in one operand and 3 in operand 1 \(shapes "
                                         r"\[\(3, 4\), \(3, 2\)\], equation 'ij,jk->ik'\)"):
        mg.einsum("ij,jk->ik", a, mg.ones(3, 2))
    with pytest.raises(ValueError, match=r"einsum: operand 1 has shape \(4, 2\) \(2 dims\), but its letters 'j' name 1"):
        mg.einsum("ij,j->i", a, b)
    with pytest.raises(ValueError, match="einsum: the equation 'ij,jk->ik' names 2 operands, but got 1"):
        mg.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="einsum: the result's letters 'iz' must be distinct letters of the operands"):
        mg.einsum("ij,jk->iz", a, b)
    with pytest.raises(TypeError, match="einsum: the equation comes first"):
        mg.einsum(a, "ij->ji")
    with pytest.raises(TypeError, match="einsum: expected the same float dtype, got operand 0 float32, operand 1 "
                                        "float64"):
        mg.einsum("ij,jk->ik", a, b.double())


# ============================================================================ creation and dtype facts
def test_empty_and_empty_like():
    assert_values(mg.empty(2, 3), np.zeros((2, 3), dtype=np.float32))
    assert_values(mg.empty((4,), dtype=mg.int64), np.zeros(4, dtype=np.int64))
    assert mg.empty(2, requires_grad=True).requires_grad
    x = mg.ones(3, 2, dtype="float64")
    assert_values(mg.empty_like(x), np.zeros((3, 2)))
    assert_values(mg.empty_like(x, dtype=mg.int32), np.zeros((3, 2), dtype=np.int32))
    with pytest.raises(ValueError, match=r"empty: a shape is integers >= 0, got \(2, -3\)"):
        mg.empty(2, -3)


def test_empty_against_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in [(mg.empty(2, 3), torch.empty(2, 3)), (mg.empty((4,), dtype=mg.float64),
                                                                torch.empty((4,), dtype=torch.float64)),
                         (mg.empty_like(mg.ones(2, dtype=mg.int64)), torch.empty_like(torch.ones(2, dtype=torch.int64)))]:
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).replace("torch.", "")


def test_random_like():
    x = mg.ones(200, 3, dtype="float64")
    r, n = mg.rand_like(x), mg.randn_like(x, dtype=mg.float32)
    assert r.shape == (200, 3) and r.dtype == np.float64 and 0 <= r.numpy().min() and r.numpy().max() < 1
    assert n.shape == (200, 3) and n.dtype == np.float32 and abs(float(n.mean())) < 0.2 and 0.8 < float(n.std()) < 1.2
    i = mg.randint_like(mg.ones(500, dtype=mg.int32), 3, 7)
    assert i.dtype == np.int32 and set(np.unique(i.numpy())) == {3, 4, 5, 6}
    f = mg.randint_like(x, 10)
    assert f.dtype == np.float64 and np.all(f.numpy() == np.floor(f.numpy())) and f.numpy().max() <= 9
    assert mg.rand_like(x, requires_grad=True).requires_grad
    same = [mg.randn_like(x, generator=mg.Generator().manual_seed(7)).numpy() for _ in range(2)]
    np.testing.assert_array_equal(*same)
    assert mg.randint_like(x, high=3).numpy().max() <= 2
    with pytest.raises(TypeError, match=r"randint_like: missing high; write randint_like\(input, high\)"):
        mg.randint_like(x)
    with pytest.raises(TypeError, match="rand_like: random floats need a float dtype, got int64"):
        mg.rand_like(mg.arange(3))
    with pytest.raises(TypeError, match="randn_like: random floats need a float dtype, got int32"):
        mg.randn_like(x, dtype=mg.int32)


def test_random_like_against_torch():
    torch = pytest.importorskip("torch")
    for dtype in ["float32", "float64"]:
        x, t = mg.ones(2, 3, dtype=dtype), torch.ones(2, 3, dtype=getattr(torch, dtype))
        for ours, theirs in [(mg.rand_like(x), torch.rand_like(t)), (mg.randn_like(x), torch.randn_like(t)),
                             (mg.randint_like(x, 5), torch.randint_like(t, 5)),
                             (mg.randint_like(mg.arange(3), 1, 5), torch.randint_like(torch.arange(3), 1, 5))]:
            assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).replace("torch.", "")


def test_is_tensor():
    assert mg.is_tensor(mg.ones(2)) and mg.is_tensor(mg.tensor(1.0)) and mg.is_tensor(mg.ones(2).data)
    assert not mg.is_tensor(np.ones(2)) and not mg.is_tensor(1.0) and not mg.is_tensor([1.0])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_finfo(dtype):
    info = mg.finfo(getattr(mg, dtype))
    reference = np.finfo(dtype)
    assert (info.eps, info.max, info.min, info.tiny, info.bits) == (float(reference.eps), float(reference.max),
                                                                    float(reference.min), float(reference.tiny),
                                                                    reference.bits)
    assert info.smallest_normal == info.tiny and info.dtype == dtype and info.resolution == 10.0 ** -reference.precision
    assert all(type(getattr(info, name)) is float for name in ["eps", "max", "min", "tiny", "resolution"])
    assert mg.finfo().eps == float(np.finfo(np.float32).eps)
    assert mg.finfo(mg.ones(1, dtype=dtype)).eps == float(reference.eps)  # (a tensor's dtype, too)
    assert dtype in repr(info)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo(dtype):
    info, reference = mg.iinfo(getattr(mg, dtype)), np.iinfo(dtype)
    assert (info.max, info.min, info.bits, info.dtype) == (int(reference.max), int(reference.min), reference.bits, dtype)


def test_finfo_iinfo_against_torch_and_their_errors():
    torch = pytest.importorskip("torch")
    for name in ["float16", "float32", "float64"]:
        ours, theirs = mg.finfo(getattr(mg, name)), torch.finfo(getattr(torch, name))
        for attribute in ["eps", "max", "min", "tiny", "bits", "resolution", "smallest_normal", "dtype"]:
            assert getattr(ours, attribute) == getattr(theirs, attribute), (name, attribute)
    assert mg.finfo().eps == torch.finfo().eps and mg.finfo(mg.float).bits == torch.finfo(torch.float).bits
    for name in ["int8", "int16", "int32", "int64", "uint8"]:
        ours, theirs = mg.iinfo(getattr(mg, name)), torch.iinfo(getattr(torch, name))
        assert (ours.max, ours.min, ours.bits, ours.dtype) == (theirs.max, theirs.min, theirs.bits, theirs.dtype)
    assert mg.iinfo(mg.long).max == torch.iinfo(torch.long).max
    with pytest.raises(TypeError, match="finfo: int64 is not a float dtype; use minigrad.iinfo for it"):
        mg.finfo(mg.int64)
    with pytest.raises(TypeError, match="iinfo: float32 is not an integer dtype; use minigrad.finfo for it"):
        mg.iinfo(mg.float32)
    with pytest.raises(TypeError, match="iinfo: bool is not an integer dtype$"):
        mg.iinfo(mg.bool_)
    with pytest.raises(TypeError, match="finfo: expected a dtype"):
        mg.finfo(3.5)


# ============================================================================ functions equal methods
FUNCTIONS = [  # (name, extra arguments)
    ("gt", (0.1,)), ("le", (0.1,)), ("t", ()), ("index_select", (1, [2, 0])), ("amax", (1,)), ("amin", ((0, 1),)),
    ("norm", (1,)), ("ceil", ()), ("square", ()), ("reciprocal", ()), ("unflatten", (1, (2, 2))),
    ("narrow", (1, 1, 2)), ("roll", (1, 0)), ("diag", (1,)), ("nonzero", ()), ("count_nonzero", ()), ("isinf", ()),
    ("nan_to_num", ()), ("masked_fill", (np.eye(3, 4, dtype=bool), 2.0)), ("repeat_interleave", (2,)),
]


@pytest.mark.parametrize("name, args", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functions_are_the_methods(name, args):
    a = values((3, 4), "float32", distinct=True)
    np.testing.assert_array_equal(getattr(mg, name)(mg.tensor(a), *args).numpy(),
                                  getattr(mg.tensor(a), name)(*args).numpy())
    np.testing.assert_array_equal(getattr(mg, name)(a, *args).numpy(), getattr(mg.tensor(a), name)(*args).numpy())


def test_torch_has_the_same_functions():
    torch = pytest.importorskip("torch")
    names = [name for name, _ in FUNCTIONS] + ["mm", "bmm", "outer", "dot", "einsum", "meshgrid", "hstack", "vstack",
                                               "empty", "empty_like", "rand_like", "randn_like", "randint_like",
                                               "is_tensor", "finfo", "iinfo", "set_grad_enabled", "inference_mode",
                                               "tril", "triu", "where"]
    assert [name for name in names if not hasattr(torch, name)] == []
    assert [name for name in names if not hasattr(mg, name)] == []
    methods = ["t", "gt", "lt", "ge", "le", "eq", "ne", "view_as", "reshape_as", "expand_as", "type_as", "new_zeros",
               "new_ones", "new_full", "new_empty", "new_tensor", "masked_fill_", "index_select", "amax", "amin",
               "norm", "ceil", "square", "reciprocal", "mm", "bmm", "outer", "dot", "where", "unflatten", "narrow",
               "is_contiguous", "roll", "diag", "nonzero", "count_nonzero", "isinf", "nan_to_num",
               "repeat_interleave"]
    assert [name for name in methods if not hasattr(torch.Tensor, name)] == []
    assert [name for name in methods if not hasattr(mg.Tensor, name)] == []


# ============================================================================ minigrad.compile
def test_a_compiled_step_recomputes_the_new_ops_at_each_call():
    """The differentiable ops here are ops (or compositions of ops) that a replay recomputes: nothing
    computed from the values in Python is frozen into the replay (max(dim)'s positions, nan_to_num's
    finite elements, ...). (index_select with a tensor index makes the step run eagerly, as
    minigrad.compile does for any index array computed outside an op.)"""
    w = mg.tensor(np.ones((3, 4)), requires_grad=True)

    def step(x, z):
        y = x * w
        out = (y.max(1).values.sum() + y.amax(0).sum() + y.norm() + y.norm(math.inf, dim=1).sum()
               + (z.nan_to_num(posinf=2.0) * w).square().sum() + mg.einsum("ij,ij->", y, y)
               + y.roll(1, 1).diag().sum() + y.t().mm(y).sum() + y.index_select(1, [3, 0]).sum()
               + y.narrow(0, 1, 2).ceil().sum())
        out.backward()
        return out

    compiled = mg.compile(step)
    for seed in range(4):
        a, z = values((3, 4), seed=seed), values((3, 4), seed=seed + 10)
        z[seed % 3, seed] = np.inf
        w.grad = None
        got, got_grad = compiled(mg.tensor(a), mg.tensor(z)).item(), w.grad.numpy().copy()
        w.grad = None
        expected = step(mg.tensor(a), mg.tensor(z)).item()
        assert got == expected and np.array_equal(got_grad, w.grad.numpy()), seed


# ============================================================================ d2l's habits: mv, normal, type, backward(gradient)
def test_mv_is_a_matrix_times_a_vector():
    m, v = values((3, 4), seed=40), values((4,), seed=41)
    assert_values(mg.mv(mg.tensor(m), mg.tensor(v)), m @ v, rtol=tolerance("float64", 4))
    gradcheck(lambda a, b: a.mv(b), m, v)
    with pytest.raises(ValueError, match=r"mv: expected a matrix \(n, m\) and a vector \(m,\), got shapes \(3, 4\) and \(3,\)"):
        mg.tensor(m).mv(mg.tensor(v[:3]))
    with pytest.raises(ValueError, match="mv: expected a matrix"):
        mg.tensor(m).mv(mg.tensor(m))


def test_normal_takes_numbers_and_a_size_or_tensors():
    g = mg.Generator().manual_seed(5)
    x = mg.normal(3.0, 0.5, (4000,), generator=g)
    assert x.shape == (4000,) and x.dtype == np.float32 and not x.requires_grad
    # mean within 5 standard errors (0.5 / sqrt(4000)), std within 5% of 0.5
    assert abs(x.numpy().mean() - 3.0) < 5 * 0.5 / math.sqrt(4000) and abs(x.numpy().std() / 0.5 - 1) < 0.05
    again = mg.normal(3.0, 0.5, (4000,), generator=mg.Generator().manual_seed(5))
    np.testing.assert_array_equal(again.numpy(), x.numpy())
    mean = mg.tensor(np.array([0.0, 100.0, -100.0]))
    y = mg.normal(mean, 1e-6)
    assert y.shape == (3,) and y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), mean.numpy(), atol=1e-4)
    assert mg.normal(mean, mg.tensor(np.ones((2, 1)))).shape == (2, 3)
    assert mg.normal(0.0, 0.0, size=(2, 2)).numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(TypeError, match="normal: with a number mean and std, give the size too"):
        mg.normal(0.0, 1.0)
    with pytest.raises(ValueError, match="normal: std must be >= 0"):
        mg.normal(0.0, -1.0, (2,))


def test_type_casts_or_names_the_type():
    x = mg.tensor([1.5, -2.0])
    assert x.type() == "minigrad.FloatTensor" and x.long().type() == "minigrad.LongTensor"
    assert x.type(mg.int64).dtype == np.int64 and x.double().type() == "minigrad.DoubleTensor"
    assert (x.type(mg.int64) == mg.tensor([1, -2])).all().item()


def test_backward_takes_pytorchs_gradient_argument():
    x = mg.tensor(np.arange(4.0), requires_grad=True)
    (x * x).backward(gradient=mg.ones(4, dtype=mg.float64))
    assert x.grad.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    x.grad = None
    (x * x).backward(mg.tensor(np.array([1.0, 0.0, 1.0, 0.0])))  # (by position, as before)
    assert x.grad.numpy().tolist() == [0.0, 0.0, 4.0, 0.0]
    x.grad = None
    (x * x).sum().backward(create_graph=True)  # .grad = 2x, in a graph (tests/test_create_graph.py)
    assert x.grad.requires_grad and np.allclose(x.grad.numpy(), 2 * x.numpy())


def test_mv_normal_and_type_as_pytorch():
    torch = pytest.importorskip("torch")
    m, v = values((3, 4), "float32", seed=42), values((4,), "float32", seed=43)
    assert_torch(mg.mv(mg.tensor(m), mg.tensor(v)), torch.mv(torch.tensor(m), torch.tensor(v)),
                 rtol=tolerance("float32", 4))
    assert mg.normal(0.0, 1.0, (2, 3)).dtype == str(torch.normal(0.0, 1.0, (2, 3)).dtype).replace("torch.", "")
    assert mg.tensor([1, 2]).type() == torch.tensor([1, 2]).type().replace("torch.", "minigrad.")
    assert mg.tensor([1.0]).type() == torch.tensor([1.0]).type().replace("torch.", "minigrad.")


# ============================================================================ printing and the device questions
@pytest.fixture
def print_options():
    from minigrad.tensor import PRINT_OPTIONS  # (the module: minigrad.tensor the name is the function)

    saved = dict(PRINT_OPTIONS)
    yield
    PRINT_OPTIONS.clear()
    PRINT_OPTIONS.update(saved)


def test_set_printoptions_changes_how_tensors_print(print_options):
    x = mg.tensor(np.array([1.23456789, -0.5]))
    assert "1.2346" in repr(x)
    mg.set_printoptions(precision=2)
    assert "1.23," in repr(x) and "1.2346" not in repr(x)
    mg.set_printoptions(sci_mode=True)
    assert "1.23e+00" in repr(x)
    mg.set_printoptions(threshold=5, edgeitems=1)
    assert repr(mg.arange(10.0)).startswith("tensor([0., ..., 9.]")  # one at each end; sci_mode back to None, as PyTorch
    mg.set_printoptions(profile="full")
    assert "..." not in repr(mg.arange(2000.0))
    with pytest.raises(ValueError, match="set_printoptions: profile must be one of"):
        mg.set_printoptions(profile="long")
    with pytest.raises(ValueError, match="set_printoptions: precision must be an integer >= 0"):
        mg.set_printoptions(precision=-1)


def test_printing_as_before_by_default():
    x = mg.tensor(np.array([[1.0, 2.5], [3.0, 1e-5]]))
    assert repr(x).startswith("tensor(" + np.array2string(x.numpy(), separator=", ", prefix="tensor(", precision=4))


def test_pytorchs_device_questions_say_cpu():
    device = "cuda" if mg.cuda.is_available() else "mps" if mg.backends.mps.is_available() else "cpu"
    assert device == "cpu" and not mg.backends.mps.is_built() and not mg.backends.cudnn.is_available()
    assert not mg.accelerator.is_available() and mg.accelerator.current_accelerator() is None
    assert mg.accelerator.device_count() == 0
    assert mg.tensor([1.0]).to(device).device.type == "cpu"
