"""dtype rules, as in PyTorch: integer (and bool) tensors go through ops whose result is a real
number (division, square roots, exp, cos, mean, softmax, ...) in the default float dtype,
float32, not in numpy's float64 (or float16), so the result mixes with a float32 model."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F

INTEGERS = mg.arange(1, 5)  # int64: 1, 2, 3, 4
VALUES = np.arange(1, 5, dtype=np.float64)

REAL_VALUED = {
    "x / 4": (lambda x: x / 4, lambda v: v / 4),
    "4 / x": (lambda x: 4 / x, lambda v: 4 / v),
    "x / x": (lambda x: x / x, lambda v: v / v),
    "x ** 0.5": (lambda x: x ** 0.5, np.sqrt),
    "x ** -0.5": (lambda x: x ** -0.5, lambda v: v ** -0.5),
    "exp": (mg.exp, np.exp),
    "log": (mg.log, np.log),
    "sqrt": (mg.sqrt, np.sqrt),
    "sin": (mg.sin, np.sin),
    "cos": (mg.cos, np.cos),
    "tanh": (mg.tanh, np.tanh),
    "sigmoid": (mg.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    "mean": (mg.mean, np.mean),
    "var": (mg.var, lambda v: np.var(v, ddof=1)),  # n - 1, as PyTorch
    "softmax": (mg.softmax, lambda v: np.exp(v) / np.exp(v).sum()),
    "log_softmax": (mg.log_softmax, lambda v: v - np.log(np.exp(v).sum())),
    "masked softmax": (lambda x: x.softmax(mask=np.array([True, True, False, True])),
                       lambda v: np.where([1, 1, 0, 1], np.exp(v), 0) / np.exp(v[[0, 1, 3]]).sum()),
    "clip(0.5, 2.5)": (lambda x: x.clip(0.5, 2.5), lambda v: np.clip(v, 0.5, 2.5)),
}


@pytest.mark.parametrize("name", REAL_VALUED)
def test_integers_through_a_real_valued_op_give_float32(name):
    op, reference = REAL_VALUED[name]
    out = op(INTEGERS)
    assert out.dtype == np.float32, f"{name} gave {out.dtype}"
    np.testing.assert_allclose(out.numpy(), reference(VALUES), rtol=1e-6)


def test_gelu_of_integers_is_float32():
    out = mg.gelu(INTEGERS)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), mg.gelu(INTEGERS.float()).numpy())


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32])
def test_small_integers_and_bools_give_float32_not_float16(dtype):
    x = mg.tensor(np.array([0, 1, 1], dtype=dtype))
    assert x.exp().dtype == x.mean().dtype == (x / 2).dtype == np.float32


def test_arange_divided_then_added_to_a_float32_tensor():
    out = mg.arange(4) / 4 + mg.ones(4)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.25, 1.5, 1.75])


def test_integer_results_stay_integers():
    for out in (INTEGERS + 1, INTEGERS * 2, INTEGERS ** 2, 2 ** INTEGERS, -INTEGERS, INTEGERS.sum(),
                INTEGERS.max(), INTEGERS.relu(), INTEGERS.abs(), INTEGERS.clip(2, 3), INTEGERS @ INTEGERS):
        assert out.dtype == np.int64


def test_explicit_casts_and_float64_are_kept():
    assert INTEGERS.double().dtype == INTEGERS.to(np.float64).dtype == np.float64
    assert (INTEGERS.double() / 4).dtype == np.float64
    assert mg.tensor(VALUES).exp().dtype == np.float64
    assert (mg.tensor(VALUES) / INTEGERS).dtype == np.float64  # integers meet float64 as float64


def test_integer_inputs_in_a_float32_model():
    ids_as_floats = mg.arange(6).reshape(2, 3) / 5  # e.g. positions scaled to [0, 1]
    w = mg.ones(4, 3, requires_grad=True)
    y = F.linear(ids_as_floats, w)
    y.sum().backward()
    assert y.dtype == w.grad.dtype == np.float32
