"""Tensor creation, dtype rules and attributes."""
import numpy as np
import pytest

import minigrad as mg


# ----------------------------------------------------------------------------- creation
def test_tensor_copies_its_data():
    a = np.array([1.0, 2.0])
    t = mg.tensor(a)
    a[0] = 100.0
    assert t.numpy()[0] == 1.0


def test_tensor_of_a_tensor_is_a_copy_with_the_same_values():
    t = mg.tensor([1.0, 2.0])
    u = mg.tensor(t)
    u.numpy()[0] = 5.0
    assert t.numpy()[0] == 1.0 and u.dtype == t.dtype


@pytest.mark.parametrize("shape_args, shape", [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), (((2, 3),), (2, 3)),
                                               (([4, 1],), (4, 1))])
@pytest.mark.parametrize("make, value", [(mg.zeros, 0.0), (mg.ones, 1.0)])
def test_zeros_ones(make, value, shape_args, shape):
    t = make(*shape_args)
    assert t.shape == shape
    assert t.dtype == np.float32
    assert np.all(t.numpy() == value)
    assert not t.requires_grad


def test_zeros_ones_dtype_and_requires_grad():
    t = mg.zeros(2, dtype="float64", requires_grad=True)
    assert t.dtype == np.float64 and t.requires_grad
    assert mg.ones(3, dtype="int64").dtype == np.int64


def test_full():
    t = mg.full((2, 3), 7.5)
    assert t.shape == (2, 3) and t.dtype == np.float32 and np.all(t.numpy() == 7.5)
    assert mg.full(4, -1.0).shape == (4,)
    assert mg.full((2,), 3, dtype="int64").numpy().tolist() == [3, 3]


def test_arange():
    t = mg.arange(5)
    assert t.dtype == np.int64 and t.numpy().tolist() == [0, 1, 2, 3, 4]
    assert mg.arange(2, 8, 3).numpy().tolist() == [2, 5]
    f = mg.arange(0.0, 1.0, 0.25)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), [0.0, 0.25, 0.5, 0.75])
    assert mg.arange(3, dtype="float64").dtype == np.float64


def test_arange_step_without_stop():
    assert mg.arange(6, step=2).numpy().tolist() == [0, 2, 4]


@pytest.mark.parametrize("make", [mg.randn, mg.rand])
def test_random_creation_shape_dtype(make):
    t = make(2, 3)
    assert t.shape == (2, 3) and t.dtype == np.float32
    assert make((4,)).shape == (4,)
    assert make(3, dtype="float64").dtype == np.float64
    assert make(3, requires_grad=True).requires_grad


def test_rand_in_unit_interval_and_randn_looks_normal():
    mg.manual_seed(0)
    u = mg.rand(20000).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02
    z = mg.randn(20000).numpy()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.05


def test_manual_seed_reproducible():
    mg.manual_seed(42)
    a, b = mg.randn(5).numpy().copy(), mg.rand(3).numpy().copy()
    mg.manual_seed(42)
    np.testing.assert_array_equal(mg.randn(5).numpy(), a)
    np.testing.assert_array_equal(mg.rand(3).numpy(), b)
    mg.manual_seed(43)
    assert not np.array_equal(mg.randn(5).numpy(), a)


def test_manual_seed_makes_dropout_masks_reproducible():
    x = mg.ones(100)
    mg.manual_seed(7)
    first = mg.dropout(x, p=0.5).numpy().copy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(mg.dropout(x, p=0.5).numpy(), first)


@pytest.mark.parametrize("make, value", [(mg.zeros_like, 0), (mg.ones_like, 1)])
def test_like_functions(make, value):
    ref = mg.tensor(np.arange(6.0).reshape(2, 3))  # float64
    t = make(ref)
    assert t.shape == (2, 3) and t.dtype == np.float64 and np.all(t.numpy() == value)
    assert make(mg.arange(3)).dtype == np.int64
    assert make(ref, dtype="float32").dtype == np.float32
    assert make(np.zeros((4, 1))).shape == (4, 1)
    assert make(ref, requires_grad=True).requires_grad


# ----------------------------------------------------------------------------- dtype rules
@pytest.mark.parametrize("data, dtype", [
    (1.5, np.float32),
    ([1.0, 2.0], np.float32),
    ([[1, 2.5]], np.float32),
    (3, np.int64),
    ([1, 2, 3], np.int64),
    ([True, False], np.bool_),
    (np.array([1.0, 2.0]), np.float64),
    (np.array([1.0], dtype=np.float32), np.float32),
    (np.array([1, 2], dtype=np.int32), np.int32),
    (np.float64(2.0), np.float64),
])
def test_dtype_of_created_tensor(data, dtype):
    assert mg.tensor(data).dtype == dtype


def test_explicit_dtype_wins():
    assert mg.tensor([1.0, 2.0], dtype="float64").dtype == np.float64
    assert mg.tensor([1, 2], dtype="float32").dtype == np.float32
    assert mg.tensor(np.ones(2), dtype=mg.float32).dtype == np.float32


def test_float64_computes_in_float64():
    x = mg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * 3.0 + 1.0).exp().sum()
    assert y.dtype == np.float64
    y.backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad, 3 * np.exp(3 * np.array([1.0, 2.0]) + 1), rtol=1e-14)


def test_python_scalars_take_the_tensor_dtype():
    x32 = mg.tensor([1.0, 2.0])
    x64 = mg.tensor(np.array([1.0, 2.0]))
    for scalar in (2, 2.5, np.float64(2.5)):
        assert (x32 * scalar).dtype == np.float32
        assert (scalar - x32).dtype == np.float32
        assert (x64 / scalar).dtype == np.float64


def test_integer_tensor_with_float_operand_becomes_float():
    i = mg.arange(3)
    assert (i + 1).dtype == np.int64
    y = i + 0.5
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [0.5, 1.5, 2.5])
    assert (i * mg.tensor(np.ones(3))).dtype == np.float64


@pytest.mark.parametrize("data", [[1, 2], [True, False], np.arange(3, dtype=np.int32)])
def test_integer_and_bool_tensors_cannot_require_grad(data):
    with pytest.raises(TypeError, match="requires_grad"):
        mg.tensor(data, requires_grad=True)
    t = mg.tensor(data)
    with pytest.raises(TypeError):
        t.requires_grad = True
    with pytest.raises(TypeError):
        t.requires_grad_()
    assert not t.requires_grad


def test_to_and_casts():
    x = mg.tensor([1.5, 2.5], requires_grad=True)
    d = x.double()
    assert d.dtype == np.float64 and d.requires_grad
    assert x.to("float32") is x
    assert d.float().dtype == np.float32
    (d * d).sum().backward()
    assert x.grad.dtype == np.float32  # the cast's gradient comes back in the source dtype
    np.testing.assert_allclose(x.grad, [3.0, 5.0])
    long = x.long()
    assert long.dtype == np.int64 and long.numpy().tolist() == [1, 2] and not long.requires_grad


# ----------------------------------------------------------------------------- attributes
def test_attributes():
    data = np.arange(6.0).reshape(2, 3)
    t = mg.tensor(data, requires_grad=True)
    assert isinstance(t.numpy(), np.ndarray)
    assert isinstance(t.data, mg.Tensor) and not t.data.requires_grad  # as in PyTorch
    assert t.grad is None
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and len(t) == 2
    assert t.dtype == np.float64
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    assert np.shares_memory(t.numpy(), t.data.numpy())
    np.testing.assert_array_equal(np.asarray(t), data)
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert t.tolist() == data.tolist()
    y = t * 2
    assert not y.is_leaf and y.grad_fn == "Mul"


def test_numpy_shares_memory():
    t = mg.zeros(3)
    t.numpy()[1] = 4.0
    assert t.tolist() == [0.0, 4.0, 0.0]


def test_item():
    assert mg.tensor(2.5).item() == 2.5
    assert isinstance(mg.tensor([[3]]).item(), int)
    with pytest.raises(ValueError, match=r"\(2,\)"):
        mg.tensor([1.0, 2.0]).item()


def test_numpy_functions_accept_tensors():
    t = mg.tensor([1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.sqrt(np.asarray(t)), [1.0, 2.0, 3.0])
    assert np.array(t).dtype == np.float32


def test_repr():
    x = mg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    r = repr(x)
    assert "shape=(1, 3)" in r and "dtype=float32" in r and "requires_grad=True" in r
    assert "1." in r and "3." in r
    y = x.exp()
    assert "grad_fn=Exp" in repr(y) and "shape=(1, 3)" in repr(y)
    plain = repr(mg.arange(4))
    assert "dtype=int64" in plain and "requires_grad" not in plain and "grad_fn" not in plain


def test_truth_value():
    assert bool(mg.tensor([1.0]))
    assert not bool(mg.tensor(0.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mg.tensor([1.0, 2.0]))


# ----------------------------------------------------------------------------- comparisons
@pytest.mark.parametrize("op", ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"])
def test_comparisons_give_bool_tensors_without_grad(op):
    a_np, b_np = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    a = mg.tensor(a_np, requires_grad=True)
    b = mg.tensor(b_np, requires_grad=True)
    for other, other_np in ((b, b_np), (2.0, 2.0), (2, 2)):
        out = getattr(a, op)(other)
        assert isinstance(out, mg.Tensor)
        assert out.dtype == np.bool_
        assert not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), getattr(a_np, op)(other_np))


def test_comparison_broadcasts_and_combines():
    a = mg.tensor([[1.0], [3.0]])
    b = mg.tensor([0.0, 2.0, 4.0])
    np.testing.assert_array_equal((a > b).numpy(), [[True, False, False], [True, True, False]])
    m = (a > 0.0) & (a < 2.0)
    np.testing.assert_array_equal(m.numpy(), [[True], [False]])
    np.testing.assert_array_equal((~m).numpy(), [[False], [True]])
    np.testing.assert_array_equal(((a < 2.0) | (a > 2.5)).numpy(), [[True], [True]])
    assert (a > 0.0).all() and (a > 2.0).any() and not (a > 5.0).any()
    with pytest.raises(TypeError):
        ~a


def test_tensor_usable_in_sets_and_dicts():
    a, b = mg.tensor([1.0]), mg.tensor([1.0])
    assert len({a, b}) == 2
    assert {a: 1}[a] == 1


def test_module_level_functions_match_methods():
    x = mg.tensor(np.array([[0.5, 1.5], [2.0, 3.0]]))
    np.testing.assert_array_equal(mg.exp(x).numpy(), x.exp().numpy())
    np.testing.assert_array_equal(mg.sum(x, axis=0).numpy(), x.sum(axis=0).numpy())
    np.testing.assert_array_equal(mg.reshape(x, 4).numpy(), x.reshape(4).numpy())
    np.testing.assert_array_equal(mg.softmax(x, axis=0).numpy(), x.softmax(axis=0).numpy())
    np.testing.assert_array_equal(mg.log([1.0, 2.0]).numpy(), np.log(np.float32([1.0, 2.0])))
