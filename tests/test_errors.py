"""Mistakes give clear errors, at the call: the right exception type, and a message that names the
op or layer, the shapes, dtypes, axes or ids involved, and what was expected: tensor ops and
autograd, then layers, losses and models, then gradcheck."""
import re
import warnings

import numpy as np
import pytest

import minigrad as mg
from helpers import BACKENDS, has_all, tiny_gpt, token_ids
from minigrad import nn, ops
from minigrad.nn import functional as F
from transformer import MultiHeadAttention, Transformer


def _refuse(fn, exception, *parts):
    """`fn()` raises `exception`, with a message that contains every one of `parts`."""
    with pytest.raises(exception) as info:
        fn()
    has_all(str(info.value), *parts)


# ----------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("shape_a, shape_b", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (2,)), ((5, 2, 3), (4, 2)),
                                              ((4,), (2, 3, 5))])
def test_matmul_inner_dims(shape_a, shape_b):
    with pytest.raises(ValueError) as info:
        mg.ones(*shape_a) @ mg.ones(*shape_b)
    has_all(str(info.value), "matmul", str(shape_a), str(shape_b))


def test_matmul_batch_dims():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3, 4) @ mg.ones(3, 4, 5)
    has_all(str(info.value), "matmul", "(2, 3, 4)", "(3, 4, 5)")


def test_matmul_scalar_operand():
    with pytest.raises(ValueError, match="matmul"):
        mg.tensor(2.0) @ mg.ones(2)


def test_matmul_mixed_float_dtypes():
    with pytest.raises(TypeError) as info:
        mg.ones(2, 2) @ mg.ones(2, 2, dtype="float64")
    has_all(str(info.value), "float32", "float64")


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
    has_all(message, name, "(2, 3)", "(4,)")
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no numpy traceback attached


# (elementwise ops, comparisons, where, cat and stack promote float32 with float64, as PyTorch
# does: tests/test_pytorch_rules.py)
@pytest.mark.parametrize("name, fn", [
    ("matmul", lambda a, b: a @ b.T), ("linear", lambda a, b: F.linear(a, b)),
    ("layer_norm", lambda a, b: F.layer_norm(a, (3,), b[0])),
    ("scaled_dot_product_attention", lambda a, b: F.scaled_dot_product_attention(a, b, b)),
])
def test_float32_with_float64_where_pytorch_refuses_too(name, fn):
    a = mg.ones(2, 3)
    b = mg.ones(2, 3, dtype="float64")
    with pytest.raises(TypeError) as info:
        fn(a, b)
    has_all(str(info.value), name, "float32", "float64", ".float() or .double()")


def test_where_shapes():
    with pytest.raises(ValueError, match="where"):
        mg.where(np.ones(3, dtype=bool), mg.ones(2), mg.ones(2))


def test_where_values_that_do_not_broadcast():
    _refuse(lambda: mg.where(np.ones((2, 3), bool), mg.ones(2, 3), mg.ones(4)), ValueError, "where", "(2, 3)", "(4,)")


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
    has_all(str(info.value), "requires_grad", str(np.asarray(data).dtype))
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
    has_all(str(info.value), "Bad.backward", "(5,)", "(3,)")


# ----------------------------------------------------------------------------- shapes and axes
def test_reshape_to_different_size():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).reshape(4, 2)
    has_all(str(info.value), "reshape", "(2, 3)", "6", "(4, 2)", "8")


def test_reshape_with_inferred_axis_that_cannot_fit():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).reshape(4, -1)
    has_all(str(info.value), "reshape", "(2, 3)", "6", "(4, -1)")


def test_permute_errors():
    with pytest.raises(ValueError, match="permute"):
        mg.ones(2, 3).permute(0, 1, 2)
    with pytest.raises(ValueError, match="permute"):
        mg.ones(2, 3).permute(0, 0)


def test_squeeze_of_axis_that_is_not_1_leaves_it_as_pytorch_does():
    x = mg.ones(2, 1, 3)
    assert x.squeeze(0).shape == (2, 1, 3) and x.squeeze((0, 1)).shape == (2, 3) and x.squeeze(dim=1).shape == (2, 3)


def test_expand_to_incompatible_shape():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).expand(4, 3)
    has_all(str(info.value), "expand", "(2, 3)", "(4, 3)")


def test_split_errors():
    with pytest.raises(ValueError, match="add up to 4"):
        mg.ones(5).split([1, 3])
    with pytest.raises(ValueError, match="positive"):
        mg.ones(5).split(0)


def test_cat_and_stack_shape_mismatch():
    with pytest.raises(ValueError) as info:
        mg.cat([mg.ones(2, 3), mg.ones(3, 2)], axis=0)
    has_all(str(info.value), "cat", "(2, 3)", "(3, 2)")
    with pytest.raises(ValueError) as info:
        mg.stack([mg.ones(2), mg.ones(3)])
    has_all(str(info.value), "stack", "(2,)", "(3,)")


def test_tril_needs_two_dims():
    with pytest.raises(ValueError, match="tril"):
        mg.ones(3).tril()


def test_reduction_axis_out_of_range():
    with pytest.raises(mg.AxisError, match="sum"):
        mg.ones(2, 3).sum(axis=-3)
    with pytest.raises(mg.AxisError, match="max"):
        mg.ones(2, 3).max(axis=(0, 5))


@pytest.mark.parametrize("op, axis", [("mean", 2), ("var", -3)])
def test_mean_and_var_axis_out_of_range(op, axis):
    _refuse(lambda: getattr(mg.ones(2, 3), op)(axis=axis), mg.AxisError, op, f"axis {axis}", "2 dims")


def test_max_of_empty_tensor():
    with pytest.raises(ValueError, match="max"):
        mg.zeros(0).max()


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_axis_out_of_range(op):
    _refuse(lambda: getattr(mg.ones(2, 3), op)(axis=2), (ValueError, IndexError), op, "axis 2", "(2, 3)")


def test_argmax_axis_out_of_range():
    _refuse(lambda: mg.ones(2, 3).argmax(axis=2), (ValueError, IndexError), "argmax", "axis 2", "(2, 3)")


def test_sum_repeated_axis():
    _refuse(lambda: mg.ones(2, 3).sum(axis=(0, 0)), ValueError, "sum", "(0, 0)", "(2, 3)")


def test_cat_axis_out_of_range():
    _refuse(lambda: mg.cat([mg.ones(2, 3), mg.ones(2, 3)], axis=2), (ValueError, IndexError),
            "cat", "axis 2", "(2, 3)")


def test_stack_axis_out_of_range():
    _refuse(lambda: mg.stack([mg.ones(2, 3), mg.ones(2, 3)], axis=4), (ValueError, IndexError),
            "stack", "axis 4", "(2, 3)")


def test_split_axis_out_of_range():
    _refuse(lambda: mg.ones(5, 2).split(2, axis=3), (ValueError, IndexError), "split", "axis 3", "(5, 2)")


def test_split_negative_size():
    _refuse(lambda: mg.ones(5).split([6, -1]), ValueError, "split", "-1")


def test_chunk_zero():
    _refuse(lambda: mg.ones(4).chunk(0), ValueError, "chunk", "0")


def test_transpose_axis_out_of_range():
    _refuse(lambda: mg.ones(2, 3).transpose(0, 5), (ValueError, IndexError), "transpose", "5", "(2, 3)")


def test_unsqueeze_axis_out_of_range():
    _refuse(lambda: mg.ones(2, 3).unsqueeze(7), (ValueError, IndexError), "unsqueeze", "7", "(2, 3)")


def test_squeeze_axis_out_of_range():
    _refuse(lambda: mg.ones(2, 3).squeeze(5), (ValueError, IndexError), "squeeze", "axis 5", "(2, 3)")


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
    has_all(str(info.value), "embedding", str(bad_id), "10")


def test_embedding_float_ids():
    with pytest.raises(TypeError, match="embedding"):
        mg.embedding(np.array([1.0]), mg.ones(3, 2))


def test_masked_fill_mask_that_does_not_broadcast():
    with pytest.raises(ValueError) as info:
        mg.ones(2, 3).masked_fill(np.ones((3, 2), dtype=bool), 0.0)
    has_all(str(info.value), "masked_fill", "(3, 2)", "(2, 3)")
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
    has_all(str(info.value), "cross_entropy", "(4, 5)", "(4,)")
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
    has_all(str(info.value), "layer_norm", "(3,)", "(2, 4)")


def test_dropout_errors():
    with pytest.raises(ValueError, match="dropout"):
        mg.dropout(mg.ones(3), p=1.5)
    with pytest.raises(ValueError, match="dropout"):
        ops.Dropout.apply(mg.ones(3), p=0.5, mask=np.ones(4, dtype=bool))


def test_gelu_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        mg.ones(2).gelu(approximate="fast")


# ----------------------------------------------------------------------------- layers and models
# (id, call, exception, substrings the message must contain). Embedding and cross_entropy ids, float
# targets and mse_loss shapes are checked in test_nn_layers.py and test_nn_losses.py; GPT block_size,
# the positional table length and the Transformer vocabularies in test_models.py and
# test_transformer_layers.py.
REFUSED = [
    ("Linear-in_features", lambda: nn.Linear(4, 3)(mg.ones(2, 5)), ValueError,
     ["linear", "(2, 5)", "5 features", "expects 4"]),
    ("LayerNorm-last-dim", lambda: nn.LayerNorm(4)(mg.ones(2, 5)), ValueError,
     ["layer_norm", "(2, 5)", "(4,)"]),
    ("cross_entropy-flattened-targets", lambda: F.cross_entropy(mg.ones(2, 3, 5), token_ids(6, high=5)), ValueError,
     ["cross_entropy", "(6,)", "(2, 3, 5)", "(2, 3)"]),
    ("MHA-d_model", lambda: MultiHeadAttention(8, 2)(mg.ones(1, 3, 6), mg.ones(1, 3, 6), mg.ones(1, 3, 6)),
     ValueError, ["MultiHeadAttention", "query", "d_model = 8", "(1, 3, 6)"]),
    ("MHA-no-batch-axis", lambda: MultiHeadAttention(8, 2)(mg.ones(3, 8), mg.ones(3, 8), mg.ones(3, 8)),
     ValueError, ["MultiHeadAttention", "(B, T, d_model = 8)", "(3, 8)"]),
    ("MHA-mask-shape", lambda: MultiHeadAttention(8, 2)(mg.ones(2, 3, 8), mg.ones(2, 5, 8), mg.ones(2, 5, 8),
                                                        mask=mg.ones(3, 3, dtype=mg.bool_)),
     ValueError, ["mask", "(3, 3)", "(2, 2, 3, 5)"]),
    ("GPT-id-outside-vocab", lambda: tiny_gpt()(mg.tensor([[1, 2, 16]])), IndexError,
     ["embedding", "id 16", "16 rows"]),
    ("GPT-targets-shape", lambda: tiny_gpt()(token_ids(2, 4), token_ids(8)), ValueError,
     ["cross_entropy", "(8,)", "(2, 4)"]),
    ("GPT-target-ge-V", lambda: tiny_gpt()(token_ids(1, 3), mg.tensor([[1, 2, 20]])), IndexError,
     ["cross_entropy", "target 20", "16 classes"]),
    ("Transformer-src-id", lambda: Transformer(7, 7, d_model=8, num_heads=2, num_layers=1, d_ff=16)(
        mg.tensor([[1, 9]]), token_ids(1, 3, high=7)), IndexError, ["embedding", "id 9", "7 rows"]),
]


@pytest.mark.parametrize("fn, exception, parts", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_refused_at_the_call(fn, exception, parts):
    _refuse(fn, exception, *parts)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_entropy_target_out_of_range_on_each_backend(backend):
    with mg.use_backend(backend):
        logits = mg.zeros(2, 3, 5, requires_grad=True)
        _refuse(lambda: F.cross_entropy(logits, mg.tensor([[0, 1, 2], [3, 5, 4]])), IndexError,
                "cross_entropy", "target 5", "5 classes")


@pytest.mark.parametrize("make, x", [
    (lambda: nn.Linear(4, 3), mg.ones(2, 4, dtype=mg.float64)),
    (lambda: nn.Linear(4, 3), np.ones((2, 4))),  # a numpy array: float64 by default
    (lambda: nn.LayerNorm(4), mg.ones(2, 4, dtype=mg.float64)),
    (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)), mg.ones(2, 4, dtype=mg.float64)),
], ids=["Linear", "Linear-numpy-input", "LayerNorm", "Sequential"])
def test_float64_input_into_float32_model(make, x):
    with pytest.raises(TypeError) as info:
        make()(x)
    has_all(str(info.value), "float64", "float32")


def test_float64_input_into_float32_attention():
    mha = MultiHeadAttention(8, 2)
    x = mg.ones(1, 3, 8, dtype=mg.float64)
    with pytest.raises(TypeError) as info:
        mha(x, x, x)
    has_all(str(info.value), "float64", "float32")


def test_linear_of_a_scalar():
    _refuse(lambda: nn.Linear(4, 3)(mg.tensor(1.0)), (ValueError, IndexError), "linear", "()")


def test_gpt_ids_without_batch_axis():
    _refuse(lambda: tiny_gpt()(mg.tensor([1, 2, 3])), ValueError, "GPT", "(B, T)", "(3,)")


def test_transformer_tgt_mask_of_wrong_shape():
    model = Transformer(7, 7, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    _refuse(lambda: model(token_ids(1, 3, high=7), token_ids(1, 5, high=7), tgt_mask=mg.ones(4, 4, dtype=mg.bool_)),
            ValueError, "tgt_mask", "(4, 4)", "(5, 5)")


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
