"""Mistakes give clear errors: the right exception type, and a message that names the op and
the shapes, dtypes or values involved."""
import re
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import ops


def _has_all(message, *parts):
    missing = [p for p in parts if p not in message]
    assert not missing, f"{missing} not in message: {message!r}"


# ----------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("shape_a, shape_b", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (2,)), ((5, 2, 3), (4, 2)),
                                              ((4,), (2, 3, 5))])
def test_matmul_inner_dims(shape_a, shape_b):
    with pytest.raises(ValueError) as info:
        mg.ones(*shape_a) @ mg.ones(*shape_b)
    _has_all(str(info.value), "matmul", str(shape_a), str(shape_b))


def test_matmul_batch_dims():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3, 4) @ mg.ones(3, 4, 5)
    _has_all(str(info.value), "matmul", "(2, 3, 4)", "(3, 4, 5)")


def test_matmul_scalar_operand():
    with pytest.raises(ValueError, match="matmul"):
        mg.tensor(2.0) @ mg.ones(2)


def test_matmul_mixed_float_dtypes():
    with pytest.raises(TypeError) as info:
        mg.ones(2, 2) @ mg.ones(2, 2, dtype="float64")
    _has_all(str(info.value), "float32", "float64")


# ----------------------------------------------------------------------------- broadcasting and dtypes
@pytest.mark.parametrize("name, fn", [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b), ("pow", lambda a, b: a ** b), ("maximum", lambda a, b: a.maximum(b)),
    ("minimum", lambda a, b: a.minimum(b)),
])
def test_binary_shapes_that_do_not_broadcast(name, fn):
    with pytest.raises(ValueError) as info:
        fn(mg.ones(2, 3), mg.ones(4))
    message = str(info.value)
    _has_all(message, name, "(2, 3)", "(4,)")
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no numpy traceback attached


@pytest.mark.parametrize("fn", [lambda a, b: a + b, lambda a, b: b * a, lambda a, b: a - b, lambda a, b: a / b,
                                lambda a, b: a.maximum(b), lambda a, b: mg.where(np.array(True), a, b),
                                lambda a, b: a < b])
def test_float32_with_float64(fn):
    a = mg.ones(2, 3)
    b = mg.ones(2, 3, dtype="float64")
    with pytest.raises(TypeError) as info:
        fn(a, b)
    _has_all(str(info.value), "float32", "float64")


def test_float32_with_float64_message_says_how_to_fix():
    with pytest.raises(TypeError, match=r"\.float\(\) or \.double\(\)"):
        mg.ones(2) + mg.ones(2, dtype="float64")


def test_where_shapes():
    with pytest.raises(ValueError, match="where"):
        mg.where(np.ones(3, dtype=bool), mg.ones(2), mg.ones(2))


# ----------------------------------------------------------------------------- autograd
def test_backward_non_scalar_without_grad():
    y = mg.ones(2, 3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=re.escape("(2, 3)")):
        y.backward()


def test_backward_through_freed_graph():
    x = mg.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


@pytest.mark.parametrize("data", [[1, 2], np.array([1], dtype=np.int32), [True]])
def test_requires_grad_on_integer_tensor(data):
    with pytest.raises(TypeError) as info:
        mg.tensor(data, requires_grad=True)
    _has_all(str(info.value), "requires_grad", str(np.asarray(data).dtype))
    with pytest.raises(TypeError):
        mg.arange(3, requires_grad=True)


def test_custom_backward_with_wrong_number_of_gradients():
    class Bad(mg.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g

    y = Bad.apply(mg.ones(2, requires_grad=True), mg.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="1 gradients for 2 inputs"):
        y.sum().backward()


def test_custom_backward_with_unsummable_gradient_shape():
    class Bad(mg.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return np.ones((5,))

    y = Bad.apply(mg.ones(3, requires_grad=True))
    with pytest.raises(ValueError) as info:
        y.sum().backward()
    _has_all(str(info.value), "Bad.backward", "(5,)", "(3,)")


# ----------------------------------------------------------------------------- shapes
def test_reshape_to_different_size():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).reshape(4, 2)
    _has_all(str(info.value), "reshape", "(2, 3)", "6", "(4, 2)", "8")


def test_reshape_with_inferred_axis_that_cannot_fit():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).reshape(4, -1)
    _has_all(str(info.value), "reshape", "(2, 3)", "6", "(4, -1)")


def test_permute_errors():
    with pytest.raises(ValueError, match="permute"):
        mg.ones(2, 3).permute(0, 1, 2)
    with pytest.raises(ValueError, match="permute"):
        mg.ones(2, 3).permute(0, 0)


def test_squeeze_of_axis_that_is_not_1():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 1).squeeze(0)
    _has_all(str(info.value), "squeeze", "(2, 1)")


def test_expand_to_incompatible_shape():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).expand(4, 3)
    _has_all(str(info.value), "expand", "(2, 3)", "(4, 3)")


def test_split_errors():
    with pytest.raises(ValueError, match="add up to 4"):
        mg.ones(5).split([1, 3])
    with pytest.raises(ValueError, match="positive"):
        mg.ones(5).split(0)


def test_cat_and_stack_shape_mismatch():
    with pytest.raises(ValueError) as info:
        mg.cat([mg.ones(2, 3), mg.ones(3, 2)], axis=0)
    _has_all(str(info.value), "cat", "(2, 3)", "(3, 2)")
    with pytest.raises(ValueError) as info:
        mg.stack([mg.ones(2), mg.ones(3)])
    _has_all(str(info.value), "stack", "(2,)", "(3,)")


def test_tril_needs_two_dims():
    with pytest.raises(ValueError, match="tril"):
        mg.ones(3).tril()


def test_reduction_axis_out_of_range():
    with pytest.raises(np.exceptions.AxisError, match="sum"):
        mg.ones(2, 3).sum(axis=-3)
    with pytest.raises(np.exceptions.AxisError, match="max"):
        mg.ones(2, 3).max(axis=(0, 5))


def test_max_of_empty_tensor():
    with pytest.raises(ValueError, match="max"):
        mg.zeros(0).max()


# ----------------------------------------------------------------------------- indexing and lookup
@pytest.mark.parametrize("index", [3, -4, (0, 5), (slice(None), 7), np.array([0, 3])])
def test_index_out_of_range(index):
    with pytest.raises(IndexError) as info:
        mg.ones(3, 4)[index]
    assert "(3, 4)" in str(info.value)


@pytest.mark.parametrize("bad_id", [10, -1])
def test_embedding_id_out_of_range(bad_id):
    weight = mg.ones(10, 4, requires_grad=True)
    with pytest.raises(IndexError) as info:
        mg.embedding(np.array([[1, bad_id]]), weight)
    _has_all(str(info.value), "embedding", str(bad_id), "10")


def test_embedding_float_ids():
    with pytest.raises(TypeError, match="embedding"):
        mg.embedding(np.array([1.0]), mg.ones(3, 2))


def test_masked_fill_mask_that_does_not_broadcast():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).masked_fill(np.ones((3, 2), dtype=bool), 0.0)
    _has_all(str(info.value), "masked_fill", "(3, 2)", "(2, 3)")
    with pytest.raises(ValueError, match="masked_fill"):  # would broadcast the *input* to a larger shape
        mg.ones(1, 3).masked_fill(np.ones((2, 3), dtype=bool), 0.0)


def test_masked_fill_non_boolean_mask():
    with pytest.raises(TypeError, match="bool"):
        mg.ones(2, 3).masked_fill(np.ones((2, 3)), 0.0)


# ----------------------------------------------------------------------------- fused ops
def test_cross_entropy_targets_of_wrong_shape():
    logits = mg.ones(4, 5, requires_grad=True)
    with pytest.raises(ValueError) as info:
        ops.CrossEntropy.apply(logits, targets=np.zeros((4, 5), dtype=np.int64))
    _has_all(str(info.value), "cross_entropy", "(4, 5)", "(4,)")
    with pytest.raises(ValueError, match="cross_entropy"):
        ops.CrossEntropy.apply(logits, targets=np.zeros(3, dtype=np.int64))


def test_cross_entropy_float_targets_and_bad_reduction():
    logits = mg.ones(4, 5)
    with pytest.raises(TypeError, match="integer"):
        ops.CrossEntropy.apply(logits, targets=np.zeros(4))
    with pytest.raises(ValueError, match="reduction"):
        ops.CrossEntropy.apply(logits, targets=np.zeros(4, dtype=np.int64), reduction="avg")


def test_layer_norm_weight_shape():
    with pytest.raises(ValueError) as info:
        ops.LayerNorm.apply(mg.ones(2, 4), mg.ones(3), mg.zeros(3), eps=1e-5)
    _has_all(str(info.value), "layer_norm", "(3,)", "(2, 4)")


def test_dropout_errors():
    with pytest.raises(ValueError, match="dropout"):
        mg.dropout(mg.ones(3), p=1.5)
    with pytest.raises(ValueError, match="dropout"):
        ops.Dropout.apply(mg.ones(3), p=0.5, mask=np.ones(4, dtype=bool))


def test_gelu_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        mg.ones(2).gelu(approximate="fast")


# ----------------------------------------------------------------------------- gradcheck
def test_gradcheck_warns_on_float32():
    x = mg.randn(3, requires_grad=True)
    with pytest.warns(mg.GradcheckWarning, match="float32"):
        mg.gradcheck(lambda t: t * 2, [x], atol=1e-2, rtol=1e-2)


def test_gradcheck_float64_does_not_warn():
    x = mg.randn(3, dtype="float64", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mg.gradcheck(lambda t: t * 2, [x])


def test_gradcheck_fn_must_return_tensor():
    x = mg.randn(3, dtype="float64", requires_grad=True)
    with pytest.raises(TypeError, match="Tensor"):
        mg.gradcheck(lambda t: t.numpy() * 2, [x])
