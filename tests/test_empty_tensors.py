"""Empty tensors and degenerate axes behave as in numpy and PyTorch: a product over an inner size
of 0 is all zeros, an op over no rows gives no rows, a variance without degrees of freedom is inf
or NaN (with a warning), an empty index list picks nothing, and a 0-d tensor has no axis 0."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F


def leaf(*shape):
    return mg.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32), requires_grad=True)


# ---------------------------------------------------------------------------- matmul and linear
@pytest.mark.parametrize("a_shape, b_shape, out_shape", [
    ((8, 0), (0, 8), (8, 8)),  # K = 0: every entry is an empty sum, 0
    ((8, 4), (4, 0), (8, 0)),  # N = 0
    ((0, 4), (4, 3), (0, 3)),  # M = 0
    ((0,), (0,), ()),  # an empty dot product
    ((0,), (0, 4), (4,)),
    ((5, 0), (0,), (5,)),
    ((2, 3, 0), (2, 0, 5), (2, 3, 5)),  # batched, K = 0
    ((2, 3, 0), (0, 5), (2, 3, 5)),  # a batch folded into rows, K = 0
])
def test_matmul_with_an_empty_axis_forward_and_backward(a_shape, b_shape, out_shape):
    a, b = leaf(*a_shape), leaf(*b_shape)
    out = a @ b
    expected = np.matmul(a.numpy(), b.numpy())
    assert out.shape == expected.shape == out_shape
    np.testing.assert_array_equal(out.numpy(), expected)
    g = np.ones(out_shape, dtype=np.float32)
    out.backward(g)
    expected_da, expected_db = matmul_grads(a.numpy(), b.numpy(), g)
    np.testing.assert_allclose(a.grad, expected_da, atol=1e-6)
    np.testing.assert_allclose(b.grad, expected_db, atol=1e-6)


def matmul_grads(a, b, g):
    """dA = G B^T and dB = A^T G in numpy, 1-D operands promoted and broadcast batch axes summed."""
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    g2 = g.reshape(np.matmul(a2, b2).shape)
    da = np.matmul(g2, np.swapaxes(b2, -1, -2))
    db = np.matmul(np.swapaxes(a2, -1, -2), g2)
    da = da.sum(axis=tuple(range(da.ndim - a2.ndim)))
    db = db.sum(axis=tuple(range(db.ndim - b2.ndim)))
    return da.reshape(a.shape), db.reshape(b.shape)


def test_zeros_8x0_times_0x8_is_zeros():
    out = mg.zeros(8, 0) @ mg.zeros(0, 8)
    assert out.shape == (8, 8) and out.dtype == np.float32 and not out.numpy().any()


@pytest.mark.parametrize("in_features, out_features", [(4, 0), (0, 3)])
def test_linear_with_no_output_or_no_input_features(in_features, out_features):
    x, w, b = leaf(5, in_features), leaf(out_features, in_features), leaf(out_features)
    y = F.linear(x, w, b)
    np.testing.assert_allclose(y.numpy(), x.numpy() @ w.numpy().T + b.numpy(), atol=1e-6)
    assert y.shape == (5, out_features)
    y.backward(np.ones(y.shape, dtype=np.float32))
    np.testing.assert_allclose(x.grad, np.ones((5, out_features)) @ w.numpy(), atol=1e-6)  # dx = g W
    np.testing.assert_allclose(w.grad, np.ones((out_features, 5)) @ x.numpy(), atol=1e-6)  # dW = g^T x
    np.testing.assert_array_equal(b.grad, np.full(out_features, 5.0))  # db = sum of g over the rows


# ---------------------------------------------------------------------------- variance
def test_var_over_an_empty_axis_is_nan_with_a_warning_and_backward_runs():
    x = mg.zeros(3, 0, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        v = x.var(axis=1)
    assert v.shape == (3,) and np.isnan(v.numpy()).all()  # numpy: nan too
    v.sum().backward()
    assert x.grad.shape == (3, 0)


def test_var_of_an_empty_tensor():
    x = mg.zeros(0, requires_grad=True)
    with pytest.warns(RuntimeWarning):
        v = x.var()
    assert np.isnan(v.item())
    v.backward()
    assert x.grad.shape == (0,)


@pytest.mark.parametrize("ddof", [3, 5])
def test_var_with_ddof_at_least_n_is_inf_like_numpy(ddof):
    values = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    x = mg.tensor(values, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        v = x.var(ddof=ddof)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        expected = np.var(values, ddof=ddof)
    assert v.item() == expected == np.inf  # not -1.0 or -2.3, a variance is never negative
    v.backward()  # no ZeroDivisionError: d var / d x_i = 2 (x_i - mean) / 0
    np.testing.assert_array_equal(x.grad, [-np.inf, -np.inf, np.inf])


def test_var_with_degrees_of_freedom_left_is_unchanged():
    values = np.array([1.0, 2.0, 4.0, 7.0], dtype=np.float32)
    x = mg.tensor(values, requires_grad=True)
    v = x.var(ddof=1)
    np.testing.assert_allclose(v.item(), np.var(values, ddof=1), rtol=1e-6)
    v.backward()
    np.testing.assert_allclose(x.grad, 2 * (values - values.mean()) / 3, rtol=1e-6)


def test_mean_over_an_empty_axis_backward_runs():
    x = mg.zeros(0, 3, requires_grad=True)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):  # numpy's "Mean of empty slice"
        m = x.mean(axis=0)
    assert np.isnan(m.numpy()).all()
    m.sum().backward()
    assert x.grad.shape == (0, 3)


def test_max_over_a_non_empty_axis_of_an_empty_tensor():
    x = mg.zeros(0, 3, requires_grad=True)
    assert x.max(axis=1).shape == (0,)  # numpy and PyTorch: no rows, no maxima
    with pytest.raises(ValueError, match="axis 0 .* is empty"):
        x.max(axis=0)
    with pytest.raises(ValueError, match="empty"):
        x.min()


# ---------------------------------------------------------------------------- indexing
def test_an_empty_index_list_picks_nothing():
    x = leaf(3, 2)
    y = x[[]]
    assert y.shape == (0, 2) == np.ones((3, 2))[[]].shape
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, np.zeros((3, 2)))
    assert x[[], 0].shape == (0,)
    assert x[:, []].shape == (3, 0)


# ---------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("shape, mask_shape", [((0, 4), (0, 4)), ((0, 4), (4,)), ((2, 4, 0), (4, 0)), ((3, 0), None)])
def test_masked_and_scaled_softmax_of_empty_tensors(shape, mask_shape):
    x = mg.zeros(*shape, requires_grad=True)
    mask = None if mask_shape is None else mg.ones(*mask_shape, dtype=bool)
    y = x.softmax(-1, mask=mask, scale=0.5)
    assert y.shape == shape
    y.sum().backward()
    assert x.grad.shape == shape


def test_softmax_with_a_mask_on_a_0x4_tensor():
    x = mg.zeros(0, 4, requires_grad=True)
    y = x.softmax(-1, mask=np.ones((0, 4), dtype=bool))
    assert y.shape == (0, 4)


# ---------------------------------------------------------------------------- 0-d tensors have no axis
@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min"])
@pytest.mark.parametrize("axis", [0, -1])
def test_a_0d_tensor_has_no_axis_to_reduce(op, axis):
    x = mg.tensor(1.5)
    with pytest.raises(mg.AxisError, match=f"{op}: axis {axis} is out of range for a tensor of shape \\(\\) "
                                                       r"\(0 dims\)"):
        getattr(x, op)(axis)
    if op == "var":  # one value over n - 1 = 0 degrees of freedom (PyTorch's default): NaN, with a warning
        with pytest.warns(RuntimeWarning, match="degrees of freedom"):
            assert x.var().shape == ()
    else:
        assert getattr(x, op)().shape == ()  # reducing over every axis (none) is fine
