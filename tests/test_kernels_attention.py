"""The fused attention kernel (kernels/attention.py) and the op built on it.

- The compiled kernel agrees with its numpy twin, forward and backward, on both dtypes, on strided
  inputs (heads split from the features of a (B, T, d_model) array), on shapes that are not
  multiples of the register tile, with causal, random, broadcast and fully blocked masks, and on
  batches large enough to run on several threads, and on inputs whose last axis is strided.
- The numpy twin agrees with the formula written out with explicit loops.
- The gradients of q, k and v cut from one projection are the same cuts of one array, which
  `Split`'s backward then returns without a copy; inputs that overlap get arrays of their own.
- `F.scaled_dot_product_attention` equals the step-by-step attention of transformer/attention.py,
  passes a float64 gradient check on both backends, and refuses bad input with a clear message.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from minigrad.gradcheck import gradcheck
from minigrad.kernels.attention import (
    attention_backward_numba,
    attention_backward_numpy,
    attention_forward_numba,
    attention_forward_numpy,
)
from minigrad.nn import functional as F
from transformer.attention import causal_mask, scaled_dot_product_attention

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-11, atol=1e-12)}


def heads(rng, B, h, T, d, dtype, strided=True):
    """(B, h, T, d): a view of a (B, T, h, d) array when strided (as a model splits its heads)."""
    if strided:
        return rng.standard_normal((B, T, h, d)).astype(dtype).transpose(0, 2, 1, 3)
    return rng.standard_normal((B, h, T, d)).astype(dtype)


def make_mask(kind, rng, B, h, T_q, T_k):
    if kind == "none":
        return None
    if kind == "causal":
        return np.broadcast_to(np.tril(np.ones((T_q, T_k), dtype=bool)), (B, h, T_q, T_k))
    if kind == "random":
        return rng.random((B, h, T_q, T_k)) < 0.6
    if kind == "padding":  # (B, 1, 1, T_k): the last keys of each sequence are padding
        keep = np.arange(T_k)[None, :] < rng.integers(1, T_k + 1, size=(B, 1))
        return np.broadcast_to(keep[:, None, None, :], (B, h, T_q, T_k))
    raise ValueError(kind)


def assert_close(got, expected, dtype):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32])  # (float64 runs the numpy twin: see the module)
@pytest.mark.parametrize("mask_kind", ["none", "causal", "random", "padding"])
@given(
    B=st.integers(1, 3),
    h=st.integers(1, 3),
    T_q=st.sampled_from([1, 5, 8, 17, 33, 64]),
    T_k=st.sampled_from([1, 7, 16, 32, 40]),
    d_k=st.sampled_from([1, 3, 16, 32, 33]),
    d_v=st.sampled_from([2, 16, 24]),
    strided=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_numba_matches_numpy(dtype, mask_kind, B, h, T_q, T_k, d_k, d_v, strided, seed):
    rng = np.random.default_rng(seed)
    q = heads(rng, B, h, T_q, d_k, dtype, strided)
    k = heads(rng, B, h, T_k, d_k, dtype, strided)
    v = heads(rng, B, h, T_k, d_v, dtype, strided)
    mask = make_mask(mask_kind, rng, B, h, T_q, T_k)
    scale = 1 / math.sqrt(d_k)
    out, weights = attention_forward_numba(q, k, v, mask, scale)
    out_ref, weights_ref = attention_forward_numpy(q, k, v, mask, scale)
    assert_close(weights, weights_ref, dtype)
    assert_close(out, out_ref, dtype)
    g = rng.standard_normal(out.shape).astype(dtype)
    for got, expected in zip(attention_backward_numba(g, q, k, v, weights, mask, scale),
                             attention_backward_numpy(g, q, k, v, weights_ref, mask, scale)):
        assert_close(got, expected, dtype)


@pytest.mark.parametrize("shape", [(12, 4, 64, 32), (16, 4, 32, 16), (3, 5, 70, 20), (2, 2, 300, 20)])
def test_numba_matches_numpy_on_threads(shape):
    """GPT-sized float32 batches, large enough to be shared out among the threads (and a sequence
    longer than one block of k, KC)."""
    B, h, T, d = shape
    rng = np.random.default_rng(0)
    q, k, v = (heads(rng, B, h, T, d, np.float32) for _ in range(3))
    mask = make_mask("causal", rng, B, h, T, T)
    out, weights = attention_forward_numba(q, k, v, mask, 0.3)
    out_ref, weights_ref = attention_forward_numpy(q, k, v, mask, 0.3)
    assert_close(out, out_ref, np.float32)
    g = rng.standard_normal(out.shape).astype(np.float32)
    for got, expected in zip(attention_backward_numba(g, q, k, v, weights, mask, 0.3),
                             attention_backward_numpy(g, q, k, v, weights_ref, mask, 0.3)):
        assert_close(got, expected, np.float32)


def test_inputs_whose_last_axis_is_strided_get_contiguous_outputs():
    """The kernels copy each slice's results into rows of adjacent numbers. q, k and v whose last
    axis is not at unit stride (transposed views) get C-contiguous outputs and gradients, with the
    twin's values (were the kernels to write such rows as if adjacent, other numbers would change)."""
    rng = np.random.default_rng(11)
    B, h, T, d = 3, 2, 20, 16
    q, k, v = (rng.standard_normal((B, h, d, T)).astype(np.float32).transpose(0, 1, 3, 2) for _ in range(3))
    assert q.strides[-1] != q.itemsize
    mask = make_mask("causal", rng, B, h, T, T)
    out, weights = attention_forward_numba(q, k, v, mask, 0.25)
    out_ref, weights_ref = attention_forward_numpy(q, k, v, mask, 0.25)
    assert out.flags.c_contiguous
    assert_close(out, out_ref, np.float32)
    g = rng.standard_normal(out.shape).astype(np.float32)
    for got, expected in zip(attention_backward_numba(g, q, k, v, weights, mask, 0.25),
                             attention_backward_numpy(g, q, k, v, weights_ref, mask, 0.25)):
        assert got.flags.c_contiguous
        assert_close(got, expected, np.float32)


@pytest.mark.parametrize("attention_forward, dtype, tol", [(attention_forward_numba, np.float32, 2e-6),
                                                             (attention_forward_numpy, np.float64, 1e-12)])
def test_kernels_match_explicit_loops(attention_forward, dtype, tol):
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((1, 2, 4, 3)), rng.standard_normal((1, 2, 5, 3)), rng.standard_normal((1, 2, 5, 2))
    q, k, v = (x.astype(dtype).astype(np.float64) for x in (q, k, v))  # the reference sees the same numbers
    mask = rng.random((1, 2, 4, 5)) < 0.7
    mask[0, 1, 2] = False  # a query that may attend to nothing
    out, weights = attention_forward(*(x.astype(dtype) for x in (q, k, v)), mask, 0.5)
    for hh in range(2):
        for i in range(4):
            allowed = [j for j in range(5) if mask[0, hh, i, j]]
            scores = {j: 0.5 * sum(q[0, hh, i, c] * k[0, hh, j, c] for c in range(3)) for j in allowed}
            top = max(scores.values(), default=0.0)
            total = sum(math.exp(s - top) for s in scores.values())
            expected_w = [math.exp(scores[j] - top) / total if j in scores else 0.0 for j in range(5)]
            np.testing.assert_allclose(weights[0, hh, i], expected_w, rtol=tol, atol=tol)
            expected_out = [sum(expected_w[j] * v[0, hh, j, c] for j in range(5)) for c in range(2)]
            np.testing.assert_allclose(out[0, hh, i], expected_out, rtol=tol, atol=tol)
    assert not out[0, 1, 2].any() and not weights[0, 1, 2].any()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_fully_blocked_rows_give_zeros_not_nan(backend):
    rng = np.random.default_rng(1)
    q, k, v = (minigrad.tensor(rng.standard_normal((2, 3, 6, 4)) * 1e3, requires_grad=True) for _ in range(3))
    mask = np.ones((6, 6), dtype=bool)
    mask[2] = False
    with minigrad.use_backend(backend):
        out = F.scaled_dot_product_attention(q, k, v, mask)
        out.sum().backward()
    assert np.isfinite(out.data).all() and not out.data[:, :, 2].any()
    assert not q.grad[:, :, 2].any()
    for t in (q, k, v):
        assert np.isfinite(t.grad).all()


def test_output_keeps_the_layout_of_q():
    """Heads split from features stay so: merging them back is a view, and so are the gradients."""
    rng = np.random.default_rng(2)
    q, k, v = (heads(rng, 2, 4, 8, 16, np.float32) for _ in range(3))
    out, weights = attention_forward_numba(q, k, v, None, 0.25)
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous
    for grad, x in zip(attention_backward_numba(np.ones_like(out), q, k, v, weights, None, 0.25), (q, k, v)):
        assert grad.strides == x.strides



def fused_qkv(rng, B, T, h, d, n_kv=None):
    """q, k, v split from one (B, T, (h + 2 n_kv) d) projection into heads, as nanoGPT's c_attn does."""
    n_kv = h if n_kv is None else n_kv
    qkv = rng.standard_normal((B, T, h + 2 * n_kv, d)).astype(np.float32).transpose(0, 2, 1, 3)
    return qkv, (qkv[:, :h], qkv[:, h:h + n_kv], qkv[:, h + n_kv:])


@pytest.mark.parametrize("n_kv", [3, 1])
def test_gradients_of_a_split_projection_are_parts_of_one_array(n_kv):
    """q, k, v cut from one array: dq, dk, dv are the same cuts of one new array, with the values of
    the numpy twin, so that array is the projection's gradient without a copy."""
    rng = np.random.default_rng(5)
    whole, (q, k, v) = fused_qkv(rng, 2, 7, 3, 8, n_kv)
    k, v = (np.broadcast_to(x.repeat(3 // n_kv, axis=1), q.shape) if n_kv != 3 else x for x in (k, v))
    mask = np.broadcast_to(np.tril(np.ones((7, 7), bool)), (2, 3, 7, 7))
    out, weights = attention_forward_numba(q, k, v, mask, 0.3)
    g = rng.standard_normal(out.shape).astype(np.float32)
    grads = attention_backward_numba(g, q, k, v, weights, mask, 0.3)
    expected = attention_backward_numpy(g, q, k, v, weights, mask, 0.3)
    for grad, x, want in zip(grads, (q, k, v), expected):
        np.testing.assert_allclose(grad, want, **TOL[np.float32])
    one = grads[0].base
    if n_kv == 3:  # the three parts of one array, each where its input sits in the input's array
        assert all(grad.base is one for grad in grads) and one.shape == whole.base.shape
        start, new_start = whole.base.__array_interface__["data"][0], one.__array_interface__["data"][0]
        for grad, x in zip(grads, (q, k, v)):
            assert grad.strides == x.strides
            assert grad.__array_interface__["data"][0] - new_start == x.__array_interface__["data"][0] - start
    else:  # (repeated k and v heads are not parts of one array: separate arrays)
        assert not any(grad.base is not None and grad.base is one for grad in grads[1:])


def test_inputs_that_overlap_or_leave_part_of_their_array_get_arrays_of_their_own():
    """Self-attention on one array (q is k is v), or three parts of an array with a fourth left out:
    each gradient gets an array of its own, so none can overwrite another or hold stale numbers."""
    rng = np.random.default_rng(6)
    _, (q, k, v) = fused_qkv(rng, 2, 5, 2, 4)
    _, (q4, k4, v4) = fused_qkv(rng, 2, 5, 2, 4, n_kv=3)  # (B, 2 + 6 heads): q4, k4 and 2 heads of v4
    for parts in [(q, q, q), (q, k, q), (q, k, k), (q4, k4[:, :2], v4[:, :2])]:
        out, weights = attention_forward_numba(*parts, None, 0.5)
        grads = attention_backward_numba(np.ones_like(out), *parts, weights, None, 0.5)
        for grad, want in zip(grads, attention_backward_numpy(np.ones_like(out), *parts, weights, None, 0.5)):
            np.testing.assert_allclose(grad, want, **TOL[np.float32])
        for i, a in enumerate(grads):
            assert a.base is None or a.base.nbytes == a.nbytes  # an array of its own
            for b in grads[i + 1:]:
                assert not np.shares_memory(a, b)


def test_split_backward_returns_the_gradients_array_when_they_sit_as_the_pieces_do():
    """ops.Split: a projection split into q, k, v, through attention; its gradient is the array the
    kernel wrote (no copy), and equals the one the numpy backend computes by copying."""
    B, T, h, d = 2, 6, 2, 4
    results = {}
    for backend in ("numba", "numpy"):
        with minigrad.use_backend(backend):
            rng = np.random.default_rng(7)
            x = minigrad.tensor(rng.standard_normal((B, T, 3 * h * d)).astype(np.float32), requires_grad=True)
            qkv = (x * 1.0).reshape(B, T, 3 * h, d).transpose(1, 2)
            q, k, v = qkv.split([h, h, h], axis=1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            (out * minigrad.tensor(rng.standard_normal(out.shape).astype(np.float32))).sum().backward()
            results[backend] = x.grad.numpy()
    np.testing.assert_allclose(results["numba"], results["numpy"], rtol=1e-5, atol=1e-6)
    from minigrad import ops

    captured = {}
    original = ops.Split.backward

    def spy(ctx, *grads):
        captured["grads"], captured["result"] = grads, original(ctx, *grads)
        return captured["result"]

    ops.Split.backward = staticmethod(spy)
    try:
        with minigrad.use_backend("numba"):
            q, k, v = (x * 1.0).reshape(B, T, 3 * h, d).transpose(1, 2).split([h, h, h], axis=1)
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    finally:
        ops.Split.backward = staticmethod(original)
    assert captured["result"].base is captured["grads"][0].base  # a view of the kernel's array, not a copy

# ------------------------------------------------------------------------------------- the op
def composite(q, k, v, mask):
    """transformer/attention.py's step-by-step attention: matmul, masked softmax, matmul."""
    return scaled_dot_product_attention(q, k, v, mask)[0]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape, mask_shape",
    [
        ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7), (2, 1, 5, 6)),  # padding-style mask, d_v != d_k
        ((2, 3, 5, 4), (1, 3, 5, 4), (2, 1, 5, 4), (5, 5)),  # keys and values broadcast over the batch
        ((4, 3), (6, 3), (6, 2), None),  # no batch axes at all
        ((2, 2, 2, 3, 4), (2, 2, 2, 5, 4), (2, 2, 2, 5, 4), (3, 5)),  # more than two leading axes
    ],
)
def test_op_matches_composite_and_gradcheck(backend, q_shape, k_shape, v_shape, mask_shape):
    rng = np.random.default_rng(4)
    q, k, v = (minigrad.tensor(rng.standard_normal(s), requires_grad=True) for s in (q_shape, k_shape, v_shape))
    mask = None if mask_shape is None else rng.random(mask_shape) < 0.7
    if mask is not None:
        mask[..., 0] = True  # (a fully blocked row is tested above)
    with minigrad.use_backend(backend):
        fused = F.scaled_dot_product_attention(q, k, v, mask)
        step_by_step = composite(q, k, v, mask)
        np.testing.assert_allclose(fused.data, step_by_step.data, rtol=1e-12, atol=1e-13)
        fused.sum().backward()
        grads = [t.grad.numpy().copy() for t in (q, k, v)]
        for t in (q, k, v):
            t.grad = None
        step_by_step.sum().backward()
        for got, t in zip(grads, (q, k, v)):
            np.testing.assert_allclose(got, t.grad, rtol=1e-10, atol=1e-12)
        assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask), (q, k, v))


def test_scale_defaults_to_one_over_sqrt_d_k():
    rng = np.random.default_rng(5)
    q, k, v = (minigrad.tensor(rng.standard_normal((2, 5, 9))) for _ in range(3))
    default = F.scaled_dot_product_attention(q, k, v)
    explicit = F.scaled_dot_product_attention(q, k, v, scale=1 / 3)
    other = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    np.testing.assert_array_equal(default.data, explicit.data)
    assert not np.allclose(default.data, other.data)


def test_need_weights_false_uses_the_fused_op_and_agrees():
    rng = np.random.default_rng(6)
    q, k, v = (minigrad.tensor(rng.standard_normal((2, 2, 6, 4)).astype(np.float32), requires_grad=True)
               for _ in range(3))
    mask = causal_mask(6)
    fused, none = scaled_dot_product_attention(q, k, v, mask, need_weights=False)
    assert none is None and fused._ctx.name == "ScaledDotProductAttention"
    step_by_step, weights = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(fused.data, step_by_step.data, rtol=1e-5, atol=1e-6)
    # with dropout to apply, the weights are needed after all: the step-by-step path runs
    dropped, _ = scaled_dot_product_attention(q, k, v, mask, dropout_p=0.5, training=True, need_weights=False)
    assert dropped._ctx.name != "ScaledDotProductAttention"


@pytest.mark.parametrize(
    "shapes, mask, error, words",
    [
        (((2, 5, 4), (2, 6, 3), (2, 6, 4)), None, ValueError, ["(2, 5, 4)", "(2, 6, 3)", "d_k"]),
        (((2, 5, 4), (2, 6, 4), (2, 7, 4)), None, ValueError, ["(2, 6, 4)", "(2, 7, 4)", "T_k"]),
        (((2, 5, 4), (3, 6, 4), (3, 6, 4)), None, ValueError, ["leading axes", "(2, 5, 4)", "(3, 6, 4)"]),
        (((5, 4), (6, 4), (6, 4)), np.ones((5, 7), bool), ValueError, ["mask", "(5, 7)", "(5, 6)"]),
        (((5, 4), (6, 4), (6, 4)), np.ones((5, 6)), TypeError, ["mask", "bool", "float64"]),
        (((4,), (6, 4), (6, 4)), None, ValueError, ["q", "(4,)"]),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(shapes, mask, error, words):
    q, k, v = (minigrad.zeros(*s) for s in shapes)
    with pytest.raises(error) as info:
        F.scaled_dot_product_attention(q, k, v, mask)
    for word in words:
        assert word in str(info.value)
    assert "scaled_dot_product_attention" in str(info.value)


def test_mixed_dtypes_are_refused():
    q = minigrad.zeros(5, 4, dtype=minigrad.float64)
    k = v = minigrad.zeros(6, 4)
    with pytest.raises(TypeError, match="float64.*float32"):
        F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_twins_keep_the_dtype_with_a_numpy_scale(dtype):
    """A scale such as 1 / np.sqrt(d_k) is a numpy float64: the outputs keep q's dtype anyway."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(dtype) for _ in range(3))
    scale = 1 / np.sqrt(4)
    for forward, backward in ((attention_forward_numpy, attention_backward_numpy),
                              (attention_forward_numba, attention_backward_numba)):
        out, weights = forward(q, k, v, None, scale)
        grads = backward(np.ones_like(out), q, k, v, weights, None, scale)
        assert {a.dtype for a in (out, weights, *grads)} == {np.dtype(dtype)}, forward.__name__


def test_attention_with_no_keys_gives_zeros_on_both_twins():
    q, k = np.ones((1, 2, 3, 4), np.float32), np.ones((1, 2, 0, 4), np.float32)
    for forward in (attention_forward_numpy, attention_forward_numba):
        out, weights = forward(q, k, k, None, 0.5)
        assert out.shape == (1, 2, 3, 4) and weights.shape == (1, 2, 3, 0)
        assert not out.any()

