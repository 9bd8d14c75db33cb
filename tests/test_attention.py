"""Scaled dot-product attention, masks and multi-head attention (transformer/attention.py)."""
import math

import numpy as np
import pytest

import minigrad
from transformer import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention


def t64(values, requires_grad=False):
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def reference_attention(q, k, v, allowed=None):
    """softmax(Q K^T / sqrt(d_k) + M) V in numpy, M = 0 where allowed, -inf elsewhere."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


# ------------------------------------------------------------------ the lesson's worked examples
def test_worked_example_3x3():
    Q = np.array([[1, 0, 2, 1], [0, 2, 1, 0], [1, 1, 0, 2]], dtype=np.float64)
    K = np.array([[0, 1, 1, 0], [2, 0, 0, 1], [1, 2, 1, 0]], dtype=np.float64)
    V = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]], dtype=np.float64)
    scores = Q @ K.T / 2.0  # d_k = 4: scale 1 / sqrt(4) = 1/2
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    out, w = scaled_dot_product_attention(t64(Q), t64(K), t64(V))
    np.testing.assert_allclose(w.numpy(), weights, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), weights @ V, rtol=1e-12)
    np.testing.assert_allclose(w.numpy().sum(axis=1), 1.0)
    # first query: scores [1.5, 1.5, 1.0] / ... the two equal scores get equal weight
    assert w.numpy()[0, 1] == pytest.approx(w.numpy()[0, 2])


def test_worked_example_one_query_two_dims():
    Q, K, V = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([[1.0], [0.0], [1.0]])
    s = np.array([1.0, 0.0, 1.0]) / math.sqrt(2)
    weights = np.exp(s) / np.exp(s).sum()
    out, w = scaled_dot_product_attention(t64(Q), t64(K), t64(V))
    np.testing.assert_allclose(w.numpy()[0], weights, rtol=1e-12)
    np.testing.assert_allclose(out.numpy()[0, 0], weights[0] + weights[2], rtol=1e-12)


def test_single_token_gets_weight_one_and_returns_its_value():
    out, w = scaled_dot_product_attention(t64([[0.3, -2.0]]), t64([[5.0, 1.0]]), t64([[7.0, 8.0, 9.0]]))
    np.testing.assert_allclose(w.numpy(), [[1.0]])
    np.testing.assert_allclose(out.numpy(), [[7.0, 8.0, 9.0]])


def test_identical_keys_give_uniform_weights():
    x = np.random.default_rng(0).standard_normal((1, 4))
    keys = np.repeat(x, 4, axis=0)  # every score equal
    out, w = scaled_dot_product_attention(t64(np.repeat(x, 3, axis=0)), t64(keys), t64(np.eye(4)))
    np.testing.assert_allclose(w.numpy(), np.full((3, 4), 0.25))
    np.testing.assert_allclose(out.numpy(), np.full((3, 4), 0.25))


def test_memory_of_an_attention_matrix():
    weights = minigrad.zeros(1, 8, 1000, 1000, dtype=minigrad.float32)  # (B, h, T, T)
    assert weights.numpy().nbytes == 32_000_000 == int(np.prod(weights.shape)) * 4


# ------------------------------------------------------------------ masks
def test_causal_mask():
    m = causal_mask(4)
    assert m.shape == (4, 4) and m.dtype == np.bool_
    np.testing.assert_array_equal(m.numpy(), np.tril(np.ones((4, 4), dtype=bool)))


def test_padding_mask():
    m = padding_mask(minigrad.tensor([[5, 3, 0, 0], [1, 2, 3, 0]]), pad_id=0)
    assert m.shape == (2, 1, 1, 4) and m.dtype == np.bool_
    np.testing.assert_array_equal(m.numpy()[:, 0, 0], [[True, True, False, False], [True, True, True, False]])


def test_masked_attention_matches_additive_mask():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 2))
    allowed = rng.random((2, 3, 5)) < 0.6
    allowed[:, :, 0] = True  # no empty row here
    out, w = scaled_dot_product_attention(t64(q), t64(k), t64(v), minigrad.tensor(allowed))
    ref_out, ref_w = reference_attention(q, k, v, allowed)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-15)
    assert (w.numpy()[~allowed] == 0).all()


def test_causal_attention_matches_reference():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 2, 4, 3)) for _ in range(3))
    out, w = scaled_dot_product_attention(t64(q), t64(k), t64(v), causal_mask(4))
    ref_out, ref_w = reference_attention(q, k, v, np.tril(np.ones((4, 4), dtype=bool)))
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-15)


def test_fully_masked_row_gives_zeros_and_finite_gradients():
    rng = np.random.default_rng(3)
    q, k, v = (t64(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(3))
    allowed = minigrad.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out, w = scaled_dot_product_attention(q, k, v, allowed)
    assert np.isfinite(out.numpy()).all() and np.isfinite(w.numpy()).all()
    np.testing.assert_array_equal(w.numpy()[1], 0.0)
    np.testing.assert_array_equal(out.numpy()[1], 0.0)
    (out * t64(rng.standard_normal((3, 4)))).sum().backward()
    for x in (q, k, v):
        assert np.isfinite(x.grad).all()
    np.testing.assert_array_equal(q.grad[1], 0.0)  # the empty row's query has no effect
    q.grad = k.grad = v.grad = None
    minigrad.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, allowed)[0], [q, k, v])


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("masked", [False, True])
def test_attention_gradcheck(masked):
    rng = np.random.default_rng(4)
    q = t64(rng.standard_normal((2, 3, 4)), requires_grad=True)
    k = t64(rng.standard_normal((2, 5, 4)), requires_grad=True)
    v = t64(rng.standard_normal((2, 5, 2)), requires_grad=True)
    mask = padding_mask(minigrad.tensor([[1, 2, 0, 3, 0], [1, 1, 1, 1, 0]]), 0)[:, 0] if masked else None  # (2, 1, 5)

    def output_and_weights(q, k, v):
        out, w = scaled_dot_product_attention(q, k, v, mask)
        return minigrad.cat([out, w], axis=-1)  # check both outputs at once

    minigrad.gradcheck(output_and_weights, [q, k, v])


# ------------------------------------------------------------------ validation
def test_attention_validation():
    q, k, v = t64(np.ones((3, 4))), t64(np.ones((5, 4))), t64(np.ones((5, 2)))
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(q, t64(np.ones((5, 3))), v)
    with pytest.raises(ValueError, match="5 keys but 6 values"):
        scaled_dot_product_attention(q, k, t64(np.ones((6, 2))))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\).*\(3, 5\)"):
        scaled_dot_product_attention(q, k, v, causal_mask(3))
    with pytest.raises(TypeError, match="bool"):
        scaled_dot_product_attention(q, k, v, minigrad.ones(3, 5))


def test_attention_dropout_only_while_training():
    rng = np.random.default_rng(5)
    q, k, v = (t64(rng.standard_normal((4, 4))) for _ in range(3))
    out_eval, w_eval = scaled_dot_product_attention(q, k, v, dropout_p=0.5, training=False)
    _, w_plain = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w_eval.numpy(), w_plain.numpy(), rtol=1e-12)
    minigrad.manual_seed(0)
    _, w_train = scaled_dot_product_attention(q, k, v, dropout_p=0.5, training=True)
    kept = w_train.numpy() != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(w_train.numpy()[kept], 2 * w_plain.numpy()[kept], rtol=1e-12)


# ------------------------------------------------------------------ multi-head attention
def test_multi_head_shapes_of_the_paper():
    mha = MultiHeadAttention(512, 8)
    assert mha.d_k == mha.d_v == 64
    assert mha.W_Q.weight.shape == (512, 512)
    # W_Q stores the 8 matrices W_i^Q (d_model x d_k = 512 x 64) side by side
    per_head = mha.W_Q.weight.numpy().reshape(8, 64, 512).transpose(0, 2, 1)
    assert per_head.shape == (8, 512, 64)
    x = np.random.default_rng(0).standard_normal((1, 512)).astype(np.float32)
    q_all = mha.W_Q(minigrad.tensor(x)).numpy()
    np.testing.assert_allclose(q_all[0, 64 * 3: 64 * 4], x[0] @ per_head[3] + mha.W_Q.bias.numpy()[192:256], rtol=1e-4,
                               atol=1e-5)


def test_multi_head_matches_explicit_heads():
    minigrad.manual_seed(0)
    mha = MultiHeadAttention(6, 3).double()
    rng = np.random.default_rng(6)
    xq, xkv = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 5, 6))
    out, w = mha(t64(xq), t64(xkv), t64(xkv))
    assert out.shape == (2, 4, 6) and w.shape == (2, 3, 4, 5)

    def project(lin, x):
        return x @ lin.weight.numpy().T + lin.bias.numpy()

    Q, K, V = project(mha.W_Q, xq), project(mha.W_K, xkv), project(mha.W_V, xkv)
    heads = [reference_attention(Q[..., 2 * i: 2 * i + 2], K[..., 2 * i: 2 * i + 2], V[..., 2 * i: 2 * i + 2])
             for i in range(3)]
    expected = project(mha.W_O, np.concatenate([h[0] for h in heads], axis=-1))  # Concat(head_1..h) W^O
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), np.stack([h[1] for h in heads], axis=1), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_gradcheck(cross):
    minigrad.manual_seed(1)
    mha = MultiHeadAttention(4, 2).double()
    rng = np.random.default_rng(7)
    x = t64(rng.standard_normal((2, 3, 4)), requires_grad=True)
    memory = t64(rng.standard_normal((2, 2, 4)), requires_grad=True)  # T_k = 2 != T_q = 3
    if cross:
        mask = padding_mask(minigrad.tensor([[1, 1], [1, 0]]), 0)
        minigrad.gradcheck(lambda x, m, *p: mha(x, m, m, mask)[0], [x, memory, *mha.parameters()])
    else:
        minigrad.gradcheck(lambda x, *p: mha(x, x, x, causal_mask(3))[0], [x, *mha.parameters()])


def test_multi_head_validation():
    with pytest.raises(ValueError, match=r"d_model = 10 .* num_heads = 4.*d_model / num_heads"):
        MultiHeadAttention(10, 4)
    mha = MultiHeadAttention(8, 2)
    x = minigrad.zeros(1, 3, 8)
    with pytest.raises(ValueError, match=r"key must be \(B, T, d_model = 8\), got shape \(1, 3, 6\)"):
        mha(x, minigrad.zeros(1, 3, 6), x)
