"""Backward semantics: the walk, accumulation, graph lifetime, grad modes, custom Functions,
gradcheck itself, the in-place check and anomaly detection."""
import os

import numpy as np
import pytest

import minigrad as mg
from minigrad import autograd
from strategies import leaf


# ----------------------------------------------------------------------------- the walk
def test_scalar_output_needs_no_grad_argument():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])


def test_one_element_output_of_any_rank_needs_no_grad_argument():
    x = leaf([[2.0]])
    (x * x).backward()
    np.testing.assert_array_equal(x.grad, [[4.0]])


def test_non_scalar_output_needs_grad():
    x = leaf(np.ones((2, 3)))
    y = x * 2
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\)"):
        y.backward()
    y.backward(np.full((2, 3), 0.5))
    np.testing.assert_array_equal(x.grad, np.ones((2, 3)))


def test_explicit_grad_of_wrong_shape():
    y = leaf(np.ones(3)) * 2
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        y.backward(np.ones(2))


def test_backward_of_tensor_without_graph():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mg.tensor([1.0]).sum().backward()


def test_gradient_accumulates_until_cleared():
    x = leaf([1.0, -2.0])
    for _ in range(2):
        (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, -8.0])
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, -4.0])


def test_grad_is_not_aliased_to_upstream_gradient():
    x = leaf([1.0, 2.0])
    up = np.array([1.0, 1.0])
    (x + 0.0).backward(up)
    x.grad[0] = 100.0
    assert up[0] == 1.0
    (x + 0.0).backward(up)
    np.testing.assert_array_equal(x.grad, [101.0, 2.0])


def test_reused_subexpression():
    x = leaf([0.5, -1.5, 3.0])
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy() + 1, rtol=1e-15)


def test_same_tensor_both_operands():
    x = leaf([3.0])
    (x * x * x).backward()
    np.testing.assert_allclose(x.grad, [27.0])
    y = leaf([2.0])
    (y / y + y - y).backward()
    np.testing.assert_allclose(y.grad, [0.0], atol=1e-15)


def test_diamond_graph():
    x_np = np.array([0.3, -0.7])
    x = leaf(x_np)
    a = x * 2.0
    b = x.exp()
    c = a * b  # both branches meet again
    (c + a).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * np.exp(x_np) + 2 * x_np * np.exp(x_np) + 2, rtol=1e-14)


def test_deep_diamond_lattice():
    # y_{k+1} = y_k * a + y_k * b: every level doubles the number of paths (2^30 in total)
    x = leaf([1.0])
    y = x
    for _ in range(30):
        y = y * 0.5 + y * 0.5
    y.backward()
    np.testing.assert_allclose(x.grad, [1.0], rtol=1e-12)


def test_only_leaves_that_require_grad_get_grad():
    x = leaf([1.0, 2.0])
    c = mg.tensor(np.array([3.0, 4.0]))
    h = x * c
    (h * h).sum().backward()
    assert c.grad is None
    assert h.grad is None  # intermediate, not retained
    np.testing.assert_allclose(x.grad, 2 * x.numpy() * c.numpy() ** 2)


def test_retain_grad_keeps_intermediate_grad():
    x = leaf([1.0, 2.0])
    h = (x * 3.0).retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * h.numpy())
    np.testing.assert_allclose(x.grad, 6 * h.numpy())


def test_backward_from_leaf():
    x = leaf([5.0])
    x.backward()
    np.testing.assert_array_equal(x.grad, [1.0])


# ----------------------------------------------------------------------------- graph lifetime
def test_second_backward_without_retain_graph_fails():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_second_backward_through_freed_intermediate_fails():
    x = leaf([1.0, 2.0])
    h = x.exp()
    h.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        (h * 2).sum().backward()


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first, rtol=1e-15)
    np.testing.assert_allclose(first, np.exp(x.numpy()) * (1 + x.numpy()), rtol=1e-15)


def test_graph_is_freed_after_backward():
    x = leaf([1.0, 2.0])
    h = x * x
    y = h.sum()
    assert h._ctx.inputs is not None and len(h._ctx.saved_tensors) == 2
    y.backward()
    assert h._ctx.inputs is None and y._ctx.inputs is None
    assert h._ctx.saved_tensors == ()


def test_graph_kept_with_retain_graph():
    x = leaf([1.0, 2.0])
    h = x * x
    h.sum().backward(retain_graph=True)
    assert h._ctx.inputs is not None and len(h._ctx.saved_tensors) == 2


def test_long_chain_no_recursion_error():
    x = leaf([1.5])
    y = x
    for _ in range(100_000):
        y = -y
    y = y * 2.0
    y.backward()
    np.testing.assert_array_equal(y.numpy(), [3.0])
    np.testing.assert_array_equal(x.grad, [2.0])


# ----------------------------------------------------------------------------- grad modes
def test_no_grad_context():
    x = leaf([1.0])
    with mg.no_grad():
        assert not mg.is_grad_enabled()
        y = x * 2
    assert mg.is_grad_enabled()
    assert not y.requires_grad and y._ctx is None
    np.testing.assert_array_equal(y.numpy(), [2.0])


def test_no_grad_decorator():
    @mg.no_grad()
    def double(t):
        assert not mg.is_grad_enabled()
        return t * 2

    y = double(leaf([1.0]))
    assert not y.requires_grad
    assert mg.is_grad_enabled()


def test_no_grad_restores_after_exception():
    with pytest.raises(KeyError):
        with mg.no_grad():
            raise KeyError
    assert mg.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with mg.no_grad():
        with mg.enable_grad():
            y = x * 2
        z = x * 2
        assert not mg.is_grad_enabled()
    assert y.requires_grad and not z.requires_grad


def test_no_grad_decorator_is_reentrant():
    @mg.no_grad()
    def countdown(n):
        return 0 if n == 0 else countdown(n - 1)

    countdown(2)
    assert mg.is_grad_enabled()


def test_detach():
    x = leaf([1.0, 2.0])
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf
    y = (x * d).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0])  # d is a constant
    assert d.grad is None
    e = x.detach()
    assert np.shares_memory(e.numpy(), x.numpy())


def test_requires_grad_():
    t = mg.tensor([1.0, 2.0])
    assert t.requires_grad_() is t and t.requires_grad
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad, [2.0, 4.0])
    t.requires_grad_(False)
    assert not (t * t).requires_grad


def test_ops_on_constants_record_nothing():
    y = mg.tensor([1.0]) * mg.tensor([2.0])
    assert not y.requires_grad and y._ctx is None


# ----------------------------------------------------------------------------- custom Function
class Cube(mg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


class WrongCube(mg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * 3 * x ** 2  # deliberately twice the true gradient


def test_custom_function_readme_example():
    x = mg.randn(4, 5, dtype="float64", requires_grad=True)
    y = Cube.apply(x)
    np.testing.assert_allclose(y.numpy(), x.numpy() ** 3, rtol=1e-15)
    assert y.grad_fn == "Cube"
    report = mg.gradcheck(lambda t: Cube.apply(t), [x])
    assert report and report.passed
    assert "ok" in str(report) and "FAIL" not in str(report)


def test_custom_function_with_params_and_two_inputs():
    class ScaledMul(mg.Function):
        @staticmethod
        def forward(ctx, a, b, scale=1.0):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return scale * a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False)
            return g * ctx.scale * b, None

    a = leaf(np.array([[1.0, 2.0]]))
    b = mg.tensor(np.array([[3.0], [4.0]]))  # broadcast; no grad
    y = ScaledMul.apply(a, b, scale=0.5)
    assert y.shape == (2, 2)
    y.sum().backward()
    np.testing.assert_allclose(a.grad, [[3.5, 3.5]])  # summed back to a's shape


def test_gradcheck_catches_wrong_backward():
    x = mg.randn(3, 2, dtype="float64", requires_grad=True)
    with pytest.raises(mg.GradcheckError) as info:
        mg.gradcheck(lambda t: WrongCube.apply(t), [x])
    assert "FAIL" in str(info.value)


def test_gradcheck_report_without_raising():
    x = mg.randn(3, 2, dtype="float64", requires_grad=True)
    report = mg.gradcheck(lambda t: WrongCube.apply(t), [x], raise_exception=False)
    assert not report and not report.passed
    text = str(report)
    for word in ("input", "shape", "max abs err", "max rel err", "worst index", "analytic", "numeric", "result"):
        assert word in text
    assert "FAIL" in text and "(3, 2)" in text
    worst = report.inputs[0]
    np.testing.assert_allclose(worst.worst_analytic, 2 * worst.worst_numeric, rtol=1e-5)


def test_gradcheck_reports_each_input():
    class HalfWrong(mg.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * b  # right for a, wrong for b

    a = mg.randn(3, dtype="float64", requires_grad=True)
    b = mg.randn(3, dtype="float64", requires_grad=True)
    report = mg.gradcheck(HalfWrong.apply, [a, b], raise_exception=False)
    assert [r.passed for r in report.inputs] == [True, False]
    lines = str(report).splitlines()
    assert lines[2].rstrip().endswith("ok") and lines[3].rstrip().endswith("FAIL")


def test_gradcheck_catches_backward_that_is_right_only_for_sums():
    # softmax rows sum to 1: a backward returning 0 would pass a check against y.sum()
    class LazySoftmax(mg.Function):
        @staticmethod
        def forward(ctx, x):
            e = np.exp(x - x.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        @staticmethod
        def backward(ctx, g):
            return np.zeros_like(g)

    x = mg.randn(2, 4, dtype="float64", requires_grad=True)
    assert not mg.gradcheck(LazySoftmax.apply, [x], raise_exception=False)


def test_gradcheck_leaves_inputs_and_grads_untouched():
    x = mg.randn(2, 3, dtype="float64", requires_grad=True)
    before = x.numpy().copy()
    x.grad = np.full((2, 3), 7.0)
    mg.gradcheck(lambda t: (t * t).sum(axis=0), [x])
    np.testing.assert_array_equal(x.numpy(), before)
    np.testing.assert_array_equal(x.grad, np.full((2, 3), 7.0))


def test_gradcheck_skips_inputs_without_grad_and_needs_one():
    x = mg.randn(3, dtype="float64", requires_grad=True)
    c = mg.randn(3, dtype="float64")
    report = mg.gradcheck(lambda a, b: a * b, [x, c])
    assert len(report.inputs) == 1 and report.inputs[0].position == 0
    with pytest.raises(ValueError, match="requires grad"):
        mg.gradcheck(lambda a: a * 2, [c])


# ----------------------------------------------------------------------------- in-place checks
def test_assign_to_saved_input_detected():
    x = leaf([1.0, 2.0])
    w = mg.tensor(np.array([3.0, 4.0]))
    y = (x * w).sum()  # Mul saves w for x's gradient
    w.assign(np.array([5.0, 6.0]))
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_add_under_no_grad_to_saved_leaf_detected():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    with mg.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_in_place_change_of_unsaved_input_is_fine():
    x = leaf([1.0, 2.0])
    c = mg.tensor(np.array([1.0, 1.0]))
    y = (x + c).sum()  # Add saves nothing
    c.add_(5.0)
    y.backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_in_place_change_before_use_is_fine():
    x = leaf([1.0, 2.0])
    with mg.no_grad():
        x.mul_(2.0)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 8.0])


def test_in_place_on_leaf_requiring_grad_refused_while_recording():
    x = leaf([1.0])
    for update in (lambda: x.add_(1.0), lambda: x.assign([2.0]), lambda: x.zero_(), lambda: x.fill_(3.0),
                   lambda: x.mul_(2.0)):
        with pytest.raises(RuntimeError, match="no_grad"):
            update()
    np.testing.assert_array_equal(x.numpy(), [1.0])


def test_in_place_updates_values():
    t = mg.tensor(np.array([1.0, 2.0]))
    t.add_(np.array([1.0, 1.0]), alpha=2.0)
    np.testing.assert_array_equal(t.numpy(), [3.0, 4.0])
    t.mul_(0.5)
    np.testing.assert_array_equal(t.numpy(), [1.5, 2.0])
    t.fill_(7.0)
    np.testing.assert_array_equal(t.numpy(), [7.0, 7.0])
    t.zero_()
    np.testing.assert_array_equal(t.numpy(), [0.0, 0.0])
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        t.assign(np.ones(3))


def test_in_place_change_of_saved_output_detected():
    x = leaf([0.0, 1.0])
    y = x.exp()
    z = y.sum()
    with mg.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        z.backward()


# ----------------------------------------------------------------------------- anomaly mode
def test_detect_anomaly_names_op_and_call_site():
    x = mg.tensor(np.array([1.0, -1.0]), requires_grad=True)
    with pytest.raises(mg.AnomalyError) as info:
        with np.errstate(invalid="ignore"):
            with mg.detect_anomaly():
                x.log()
    message = str(info.value)
    assert "Log" in message and "NaN" in message
    assert os.path.basename(__file__) in message
    assert "(2,)" in message  # input shapes


def test_detect_anomaly_is_floating_point_error():
    assert issubclass(mg.AnomalyError, FloatingPointError)


def test_without_detect_anomaly_nan_passes_silently():
    x = mg.tensor(np.array([1.0, -1.0]), requires_grad=True)
    with np.errstate(invalid="ignore"):
        y = x.log()
    assert np.isnan(y.numpy()[1]) and y.numpy()[0] == 0.0


def test_detect_anomaly_in_backward():
    x = mg.tensor(np.array([0.0, 4.0]), requires_grad=True)
    with np.errstate(divide="ignore"):
        with mg.detect_anomaly():
            y = x.sqrt().sum()  # forward is finite, the gradient 1 / (2 sqrt 0) is not
            with pytest.raises(mg.AnomalyError, match="Sqrt backward produced Inf"):
                y.backward()


def test_detect_anomaly_reports_without_numpy_warnings():
    """Under detect_anomaly the error names the op and the line; numpy's 'divide by zero' warning,
    which points into ops.py, would only be noise beside it (outside anomaly mode it stays)."""
    import warnings

    x = mg.tensor(np.array([0.0, 4.0]), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        with mg.detect_anomaly():
            with pytest.raises(mg.AnomalyError, match="Log forward produced Inf"):
                x.log()  # log 0 = -inf: numpy would also warn "divide by zero"
        with mg.detect_anomaly():
            with pytest.raises(mg.AnomalyError, match="Sqrt backward produced Inf"):
                x.sqrt().sum().backward()


def test_detect_anomaly_around_backward_only():
    x = mg.tensor(np.array([0.0, 4.0]), requires_grad=True)
    y = x.sqrt().sum()
    with np.errstate(divide="ignore"):
        with mg.detect_anomaly():
            with pytest.raises(mg.AnomalyError, match="Sqrt"):
                y.backward()


def test_detect_anomaly_restores_mode_and_finite_graphs_pass():
    x = leaf([1.0, 2.0])
    with mg.detect_anomaly():
        assert autograd._anomaly_mode
        (x.log() * x).sum().backward()
    assert not autograd._anomaly_mode
    np.testing.assert_allclose(x.grad, np.log([1.0, 2.0]) + 1)


# ------------------------------------------------------------------ gradients of slices
def _dense_reference(x_data, build):
    """The gradient of build(x).sum()-style losses computed with every slice made dense by hand."""
    x = mg.tensor(x_data, requires_grad=True)
    build(x).backward()
    return x.grad


@pytest.mark.parametrize(
    "build",
    [
        lambda x: sum(p.sum() * (i + 1) for i, p in enumerate(x.split(2, axis=1))),  # pieces that tile x
        lambda x: x[:, 0:3].sum() + (x[:, 1:4] * 2).sum(),  # overlapping slices add up
        lambda x: (x * 3).sum() + x[1].sum() + x[:, -1].sum(),  # a dense gradient, then slices
        lambda x: x[0, ::2].sum() + (x * x).sum(),  # a slice first, then a dense gradient
        lambda x: x[:, 2].sum(),  # only part of x is used: the rest of the gradient is zero
        lambda x: x[x.data > 0].sum() + x[:1].sum(),  # a boolean mask and a slice
    ],
)
def test_slice_gradients_add_into_place(build):
    x_data = np.arange(24, dtype=np.float64).reshape(4, 6) - 11.5
    x = mg.tensor(x_data, requires_grad=True)
    build(x).backward()
    # the same gradient by central differences, element by element
    expected = np.zeros_like(x_data)
    for index in np.ndindex(x_data.shape):
        plus, minus = x_data.copy(), x_data.copy()
        plus[index] += 0.5
        minus[index] -= 0.5
        expected[index] = (float(build(mg.tensor(plus)).data) - float(build(mg.tensor(minus)).data))
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12, atol=1e-12)


def test_slice_gradient_of_a_leaf_used_only_by_slices_is_a_fresh_array():
    x = mg.tensor(np.ones((3, 4)), requires_grad=True)
    q, k = x.split(2, axis=1)
    (q.sum() + 2 * k.sum()).backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad, [[1, 1, 2, 2]] * 3)
    x.grad[0, 0] = 7.0  # the gradient belongs to x alone: nothing else changes with it
    q.sum().backward()
    np.testing.assert_array_equal(x.grad[1], [2, 2, 2, 2])


def test_slice_gradient_in_anomaly_mode():
    x = mg.tensor(np.array([1.0, 0.0, 2.0]), requires_grad=True)
    with mg.detect_anomaly():
        x[1:].sum().backward()  # finite: no error
        np.testing.assert_array_equal(x.grad, [0, 1, 1])
        with pytest.raises(mg.AnomalyError, match="backward"), np.errstate(divide="ignore"):
            (x[1:] ** 0.5).sum().backward()  # d sqrt(x)/dx at 0 is inf


# ------------------------------------------------------------------ ops with several outputs
class SinCos(mg.Function):
    """A learner's op with two outputs: (sin x, cos x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x), np.cos(x)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * np.cos(x) - g_cos * np.sin(x)  # d sin = cos, d cos = -sin


def test_function_with_two_outputs_passes_a_gradient_check():
    from minigrad.gradcheck import gradcheck

    x = mg.tensor(np.linspace(-2, 2, 7), requires_grad=True)
    s, c = SinCos.apply(x)
    assert s.grad_fn == c.grad_fn == "SinCos"
    assert gradcheck(lambda x: (lambda sc: sc[0] * 2 + sc[1] ** 2)(SinCos.apply(x)), (x,))


def test_an_unused_output_counts_as_zero():
    x = mg.tensor(np.array([0.3, 1.1]), requires_grad=True)
    s, _ = SinCos.apply(x)
    (3 * s).sum().backward()
    np.testing.assert_allclose(x.grad, 3 * np.cos(x.data), rtol=1e-15)
    y = mg.tensor(np.array([0.3, 1.1]), requires_grad=True)
    SinCos.apply(y)[1].sum().backward()  # the sin output is freed before backward runs
    np.testing.assert_allclose(y.grad, -np.sin(y.data), rtol=1e-15)


def test_each_output_may_feed_several_ops_and_be_retained():
    x = mg.tensor(np.array([0.5, -0.7, 2.0]), requires_grad=True)
    s, c = SinCos.apply(x)
    c.retain_grad()
    loss = (s * c).sum() + c.sum() + (s * 4).sum()
    loss.backward()
    np.testing.assert_allclose(c.grad, np.sin(x.data) + 1, rtol=1e-15)
    expected = np.cos(2 * x.data) - np.sin(x.data) + 4 * np.cos(x.data)  # d(sin cos)/dx = cos 2x
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)


@pytest.mark.parametrize("pieces", [
    lambda x: x.split(2, axis=1),
    lambda x: x.split([1, 0, 4, 1], axis=1),
    lambda x: x.chunk(3, axis=0),
    lambda x: x.unbind(1),
    lambda x: x.transpose(0, 1).unbind(0),  # pieces of a permuted view
])
def test_split_and_unbind_are_one_node_with_exact_gradients(pieces):
    x_data = np.arange(24, dtype=np.float64).reshape(4, 6) / 7
    x = mg.tensor(x_data, requires_grad=True)
    parts = pieces(x)
    assert len({p._ctx for p in parts}) == 1  # one node for all the pieces
    weights = [float(i + 1) for i in range(len(parts))]
    loss = sum(((p * p) * w).sum() for p, w in zip(parts[::2], weights[::2]))  # every other piece only
    loss.backward()
    expected = np.zeros_like(x_data)
    for p, w in zip(pieces(mg.tensor(x_data))[::2], weights[::2]):
        # each used element e contributes w * e^2: find where p's numbers sit in x
        for value in np.asarray(p.data).ravel():
            expected[x_data == value] = 2 * w * value
    np.testing.assert_allclose(x.grad, expected, rtol=1e-15)


def test_unbind_errors_and_views():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    rows = x.unbind(0)
    assert [r.shape for r in rows] == [(3,), (3,)] and np.shares_memory(rows[0].data, x.data)
    with pytest.raises(mg.AxisError, match="unbind"):
        x.unbind(2)
    assert mg.zeros(0, 3).split(2, axis=0) == ()
