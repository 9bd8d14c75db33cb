"""The walk adds a gradient that already fits its input (an array of the input's shape and dtype)
as it is, and fits the others first (autograd._accumulate and _fitted). These tests give the walk
each kind of gradient a backward may return, and check what reaches .grad."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import autograd


def _op_whose_backward_returns(make_grad):
    """A Function: forward is the identity; backward returns make_grad(g) for its input."""

    class Passing(mg.Function):
        @staticmethod
        def forward(ctx, a):
            return a.copy()

        @staticmethod
        def backward(ctx, g):
            return make_grad(g)

    return Passing


@pytest.mark.parametrize("make_grad, expected", [
    (lambda g: g * 2, [2.0, 2.0, 2.0]),                                    # fits: kept as it is
    (lambda g: (g * 2).astype(np.float64), [2.0, 2.0, 2.0]),               # other dtype: cast
    (lambda g: np.full((4, 3), 0.5, dtype=g.dtype), [2.0, 2.0, 2.0]),      # broadcast shape: summed
    (lambda g: [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]),                          # a list: made an array
])
def test_each_kind_of_gradient_reaches_grad_in_the_input_shape_and_dtype(make_grad, expected):
    x = mg.tensor(np.zeros(3, np.float32), requires_grad=True)
    _op_whose_backward_returns(make_grad).apply(x).sum().backward()
    assert x.grad.shape == (3,) and x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, expected)


def test_a_gradient_of_the_wrong_shape_names_the_op_and_the_input():
    x = mg.tensor(np.zeros(3, np.float32), requires_grad=True)
    y = _op_whose_backward_returns(lambda g: np.ones((2,), g.dtype)).apply(x).sum()
    with pytest.raises(ValueError, match=r"Passing.backward: gradient for input 0 of shape \(2,\)"):
        y.backward()


def test_a_fitting_gradient_shared_by_two_inputs_is_not_added_into_twice():
    # Add's backward returns g for both inputs: the walk keeps the same array for both, so it may
    # add into neither in place. a is used twice, b once: a.grad must be 2, b.grad 1.
    a = mg.tensor(np.zeros(3, np.float32), requires_grad=True)
    b = mg.tensor(np.zeros(3, np.float32), requires_grad=True)
    ((a + b) + a).sum().backward()
    np.testing.assert_array_equal(a.grad, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(b.grad, [1.0, 1.0, 1.0])


def test_topological_order_puts_every_input_before_its_outputs_with_several_roots():
    x = mg.tensor(np.ones(2, np.float32), requires_grad=True)
    h = x * 2
    u, v = h * h, h + x
    order = autograd._topological_order([u, v])
    position = {id(t): i for i, t in enumerate(order)}
    assert len(order) == len(position) == 4  # x, h, u, v, each once (not the constant 2)
    for t in order:
        if t._ctx is not None:
            inputs = [p for p, needed in zip(t._ctx.inputs, t._ctx.needs_input_grad) if needed]
            assert all(position[id(p)] < position[id(t)] for p in inputs)
    (dx,) = autograd.grad([u, v], [x], grad_outputs=[np.ones(2, np.float32)] * 2)
    np.testing.assert_array_equal(dx, [11.0, 11.0])  # u + v = 4x^2 + 3x: 8x + 3 at x = 1


def test_apply_without_grad_records_nothing_and_with_anomaly_checks_the_forward():
    x = mg.tensor(np.array([1.0, -1.0], np.float32), requires_grad=True)
    with mg.no_grad():
        y = x * 2
    assert y._ctx is None and not y.requires_grad
    with mg.detect_anomaly(), pytest.raises(mg.AnomalyError, match="Log forward produced NaN"):
        x.log()
