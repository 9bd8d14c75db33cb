"""Today's LLM blocks (transformer/modern.py, transformer/rope.py, the GPTConfig switches and the KV
cache): each gradient-checked in float64 with respect to its inputs and parameters, and each
compared with its defining formula written here in numpy (and with PyTorch when installed)."""
import numpy as np
import pytest

import minigrad
from minigrad.nn import functional as F
from transformer import GPT, GPTConfig, KVCache, RMSNorm, RotaryEmbedding, SwiGLU, repeat_kv, swiglu_hidden_size
from transformer.model import CausalSelfAttention

TINY = dict(vocab_size=7, block_size=8, n_layer=2, n_head=4, d_model=8)
LLAMA = dict(norm="rmsnorm", position="rope", mlp="swiglu", n_kv_head=2, bias=False)


def random_input(*shape, seed=0):
    return minigrad.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def ids(*shape, high=7, seed=0):
    return minigrad.tensor(np.random.default_rng(seed).integers(0, high, shape))


def randomize(module, seed=1):
    """Parameters away from their initial 1s and 0s, so the checks see every term."""
    rng = np.random.default_rng(seed)
    with minigrad.no_grad():
        for p in module.parameters():
            p.assign(rng.standard_normal(p.shape) * 0.5 + (1.0 if p.ndim == 1 else 0.0))
    return module


def gradcheck_module(module, fn, inputs):
    """gradcheck w.r.t. the inputs and every parameter of `module` (float64, eval mode)."""
    n = len(inputs)
    return minigrad.gradcheck(lambda *args: fn(*args[:n]), [*inputs, *module.parameters()])


# ------------------------------------------------------------------ RMSNorm
def test_rmsnorm_matches_its_formula_and_gradcheck():
    norm = randomize(RMSNorm(6, eps=1e-6).double())
    x = random_input(2, 3, 6)
    xn, w = x.numpy(), norm.weight.numpy()
    expected = xn / np.sqrt(np.mean(xn ** 2, axis=-1, keepdims=True) + 1e-6) * w  # Eq. (4)
    np.testing.assert_allclose(norm(x).numpy(), expected, rtol=1e-12, atol=1e-12)
    gradcheck_module(norm, norm, [x])


def test_rmsnorm_keeps_the_mean_but_not_the_scale():
    norm = RMSNorm(5).double()
    x = minigrad.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=minigrad.float64)
    y = norm(x).numpy()
    np.testing.assert_allclose(np.sqrt(np.mean(y ** 2)), 1.0, rtol=1e-5)  # unit root mean square
    np.testing.assert_allclose(norm(x * 10.0).numpy(), y, rtol=1e-5)  # a scale is divided out
    assert np.mean(y) > 0.9  # the mean is not removed (LayerNorm's output has mean 0)
    assert not np.allclose(norm(x + 3.0).numpy(), y)  # and a shift passes through


def test_rmsnorm_matches_torch():
    torch = pytest.importorskip("torch")
    if not hasattr(torch.nn.functional, "rms_norm"):
        pytest.skip("torch.nn.functional.rms_norm needs PyTorch 2.4")
    norm = randomize(RMSNorm(6).double())
    x = random_input(3, 6)
    expected = torch.nn.functional.rms_norm(torch.tensor(x.numpy()), (6,), torch.tensor(norm.weight.numpy()), 1e-5)
    np.testing.assert_allclose(norm(x).numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ RoPE
def rope_complex(x, start, base=10000.0):
    """The reference: pairs as complex numbers z_i = x_{2i} + i x_{2i+1}, times e^{i m theta_i}."""
    head_dim, T = x.shape[-1], x.shape[-2]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    theta = base ** (-np.arange(0, head_dim, 2) / head_dim)
    rotated = z * np.exp(1j * np.arange(start, start + T)[:, None] * theta)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = rotated.real, rotated.imag
    return out


@pytest.mark.parametrize("start", [0, 5])
def test_rope_matches_the_complex_form(start):
    rope = RotaryEmbedding(head_dim=8, max_len=16)
    x = random_input(2, 3, 4, 8)
    np.testing.assert_allclose(rope(x, start).numpy(), rope_complex(x.numpy(), start), rtol=1e-12, atol=1e-12)
    # a rotation keeps every pair's length
    np.testing.assert_allclose(np.linalg.norm(rope(x, start).numpy(), axis=-1), np.linalg.norm(x.numpy(), axis=-1))
    # float32 input: float32 output, tables rounded from float64 once
    y32 = rope(x.float(), start)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32.numpy(), rope_complex(x.numpy(), start), rtol=1e-5, atol=1e-5)


def test_rope_gradcheck():
    rope = RotaryEmbedding(head_dim=6, max_len=10)
    minigrad.gradcheck(lambda x: rope(x, 3), [random_input(2, 2, 4, 6)])


def test_rope_score_depends_only_on_the_offset():
    rope = RotaryEmbedding(head_dim=8, max_len=64)
    q, k = random_input(1, 1, 1, 8, seed=1), random_input(1, 1, 1, 8, seed=2)

    def score(m, n):  # q at position m, k at position n
        return float((rope(q, m) * rope(k, n)).sum().item())

    for offset in (0, 3, -2):
        scores = [score(n + offset, n) for n in (2, 10, 30, 50) if n + offset >= 0]
        np.testing.assert_allclose(scores, scores[0], rtol=1e-10)
    assert not np.isclose(score(5, 2), score(5, 3))  # another offset, another score


def test_rope_validation():
    with pytest.raises(ValueError, match="must be even"):
        RotaryEmbedding(head_dim=5, max_len=4)
    with pytest.raises(ValueError, match="past max_len = 4"):
        RotaryEmbedding(head_dim=4, max_len=4)(random_input(1, 1, 2, 4), start=3)


# ------------------------------------------------------------------ SwiGLU
def test_swiglu_matches_its_formula_and_gradcheck():
    ffn = randomize(SwiGLU(4, d_ff=6, bias=True).double())
    x = random_input(2, 3, 4)

    def linear(layer, v):
        return v @ layer.weight.numpy().T + layer.bias.numpy()

    xn = x.numpy()
    gate = linear(ffn.W_1, xn)
    expected = linear(ffn.W_2, gate / (1 + np.exp(-gate)) * linear(ffn.W_3, xn))  # (silu(x W1) * x W3) W2
    np.testing.assert_allclose(ffn(x).numpy(), expected, rtol=1e-12, atol=1e-12)
    gradcheck_module(ffn, ffn, [x])


def test_swiglu_matches_torch():
    torch = pytest.importorskip("torch")
    ffn = randomize(SwiGLU(4, d_ff=6).double())
    x = random_input(3, 4)
    w1, w2, w3 = (torch.tensor(layer.weight.numpy()) for layer in (ffn.W_1, ffn.W_2, ffn.W_3))
    t = torch.tensor(x.numpy())
    expected = (torch.nn.functional.silu(t @ w1.T) * (t @ w3.T)) @ w2.T
    np.testing.assert_allclose(ffn(x).numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_swiglu_hidden_size_keeps_the_parameter_count():
    assert swiglu_hidden_size(8) == 24 and swiglu_hidden_size(128) == 344 and swiglu_hidden_size(4096) == 10928
    for d in (64, 128, 768):
        gelu_mlp, swiglu = 2 * d * 4 * d, 3 * d * swiglu_hidden_size(d)
        assert abs(swiglu / gelu_mlp - 1) < 0.05


# ------------------------------------------------------------------ grouped-query attention
def test_repeat_kv():
    x = random_input(2, 2, 3, 4)
    np.testing.assert_array_equal(repeat_kv(x, 3).numpy(), np.repeat(x.numpy(), 3, axis=1))  # head j reads j // 3
    assert repeat_kv(x, 1) is x
    minigrad.gradcheck(lambda x: repeat_kv(x, 2), [x])


def attention_reference(x, attn, n_kv_head):
    """Causal grouped-query attention written out head by head in numpy."""
    B, T, C = x.shape
    h, d = attn.n_head, C // attn.n_head
    qkv = x @ attn.c_attn.weight.numpy().T + attn.c_attn.bias.numpy()
    q = qkv[..., :C].reshape(B, T, h, d)
    k = qkv[..., C:C + n_kv_head * d].reshape(B, T, n_kv_head, d)
    v = qkv[..., C + n_kv_head * d:].reshape(B, T, n_kv_head, d)
    heads = []
    for j in range(h):
        g = j // (h // n_kv_head)  # the key/value head that query head j reads
        scores = q[:, :, j] @ k[:, :, g].transpose(0, 2, 1) / np.sqrt(d)
        scores = np.where(np.tril(np.ones((T, T), bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append(weights / weights.sum(-1, keepdims=True) @ v[:, :, g])
    return np.concatenate(heads, axis=-1) @ attn.c_proj.weight.numpy().T + attn.c_proj.bias.numpy()


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])  # multi-head, grouped-query, multi-query
def test_grouped_query_attention(n_kv_head):
    config = GPTConfig(**{**TINY, "n_kv_head": n_kv_head})
    attn = randomize(CausalSelfAttention(config).double()).eval()
    assert attn.c_attn.weight.shape == ((4 + 2 * n_kv_head) * 2, 8)  # (h + 2 h_kv) head_dim rows
    x = random_input(2, 3, 8)
    mask = minigrad.ones(3, 3, dtype=minigrad.bool_).tril()
    np.testing.assert_allclose(attn(x, mask).numpy(), attention_reference(x.numpy(), attn, n_kv_head),
                               rtol=1e-10, atol=1e-12)
    gradcheck_module(attn, lambda x: attn(x, mask), [x])


def test_grouped_query_attention_matches_torch():
    torch = pytest.importorskip("torch")
    if tuple(int(n) for n in torch.__version__.split(".")[:2]) < (2, 5):
        pytest.skip("scaled_dot_product_attention(enable_gqa=True) needs PyTorch 2.5")
    q, k, v = random_input(2, 4, 3, 2, seed=1), random_input(2, 2, 3, 2, seed=2), random_input(2, 2, 3, 2, seed=3)
    mask = minigrad.ones(3, 3, dtype=minigrad.bool_).tril()
    ours = F.scaled_dot_product_attention(q, repeat_kv(k, 2), repeat_kv(v, 2), mask)
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(t.numpy()) for t in (q, k, v)), is_causal=True, enable_gqa=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ the GPT switches
SWITCHES = [dict(norm="rmsnorm"), dict(position="rope"), dict(mlp="swiglu"), dict(n_kv_head=1), LLAMA]


@pytest.mark.parametrize("switch", SWITCHES, ids=["rmsnorm", "rope", "swiglu", "mqa", "llama"])
def test_gpt_switch_gradcheck_to_loss(switch):
    minigrad.manual_seed(6)
    model = randomize(GPT(**{**TINY, "n_layer": 1, **switch}).double(), seed=2).eval()
    idx, targets = ids(2, 5), ids(2, 5, seed=1)
    minigrad.gradcheck(lambda *params: model(idx, targets)[1], list(model.parameters()))


def test_gpt_switches_change_the_right_parameters():
    counts = {}
    for name, switch in zip(["rmsnorm", "rope", "swiglu", "mqa", "llama"], SWITCHES):
        model = GPT(**{**TINY, **switch})
        counts[name] = model.num_parameters()
        names = dict(model.named_parameters())
        assert ("wpe.weight" in names) == (model.config.position == "learned")
        assert ("h.0.mlp.W_2.weight" in names) == (model.config.mlp == "swiglu")
    base = GPT(**TINY).num_parameters()
    assert base == 7 * 8 + 8 * 8 + 2 * (2 * 16 + 8 * 24 + 24 + 8 * 8 + 8 + 8 * 32 + 32 + 32 * 8 + 8) + 16
    assert counts["rmsnorm"] == base - 5 * 8  # no LayerNorm biases (2 per block, ln_f)
    assert counts["rope"] == base - 8 * 8  # no position table
    # the 4 d_model GELU MLP gives way to three matrices of width 24, with biases (bias=True here)
    assert counts["swiglu"] == base - 2 * (2 * 8 * 32 + 32 + 8) + 2 * (3 * 8 * 24 + 24 + 24 + 8)
    assert counts["mqa"] == base - 2 * 6 * 2 * (8 + 1)  # 3 of 4 key heads and value heads gone, per layer


def test_gpt_llama_init_and_causality():
    minigrad.manual_seed(7)
    model = GPT(vocab_size=64, block_size=16, n_layer=4, n_head=4, d_model=64, **LLAMA)
    params = dict(model.named_parameters())
    assert np.std(params["h.1.mlp.W_2.weight"].numpy()) == pytest.approx(0.02 / np.sqrt(8), rel=0.1)
    assert np.std(params["h.1.mlp.W_1.weight"].numpy()) == pytest.approx(0.02, rel=0.1)
    assert (params["ln_f.weight"].numpy() == 1).all()
    model.double()
    idx = ids(2, 6, high=64)
    changed = minigrad.tensor(idx.numpy().copy())
    changed.numpy()[:, 3] = (idx.numpy()[:, 3] + 1) % 64
    before, after = model(idx)[0].numpy(), model(changed)[0].numpy()
    np.testing.assert_allclose(after[:, :3], before[:, :3], rtol=1e-12, atol=1e-12)
    assert not np.allclose(after[:, 3:], before[:, 3:])


def test_gpt_config_validation():
    for bad, message in ((dict(norm="batchnorm"), "norm must be one of"), (dict(position="sinusoid"), "position"),
                         (dict(mlp="relu"), "mlp must be"), (dict(n_kv_head=3), "multiple of n_kv_head = 3")):
        with pytest.raises(ValueError, match=message):
            GPTConfig(**{**TINY, **bad})
    with pytest.raises(ValueError, match="head_dim = 1 must be even"):
        GPT(**{**TINY, "n_head": 8, "position": "rope"})


# ------------------------------------------------------------------ the KV cache
@pytest.mark.parametrize("switch", [{}, LLAMA], ids=["gpt2", "llama"])
@pytest.mark.parametrize("dtype, tol", [(minigrad.float32, 1e-5), (minigrad.float64, 1e-10)])
def test_cached_logits_equal_full_forward(switch, dtype, tol):
    minigrad.manual_seed(12)
    model = randomize(GPT(**{**TINY, **switch}), seed=3).to(dtype).eval()
    idx = ids(2, 8, seed=4)
    full = model(idx)[0].numpy()
    cache = KVCache(TINY["n_layer"])
    pieces = [model(idx[:, :3], cache=cache)[0]]  # a prompt of 3, then one token at a time
    pieces += [model(idx[:, t:t + 1], cache=cache)[0] for t in range(3, 8)]
    assert cache.length == 8 and cache.layers[0].k.shape == (2, model.h[0].attn.n_kv_head, 8, 2)
    cached = np.concatenate([p.numpy() for p in pieces], axis=1)
    np.testing.assert_allclose(cached, full, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="sequence length 9 is longer than block_size = 8"):
        model(idx[:, :1], cache=cache)


@pytest.mark.parametrize("switch", [{}, LLAMA], ids=["gpt2", "llama"])
@pytest.mark.parametrize("dtype, tol", [(minigrad.float32, 1e-5), (minigrad.float64, 1e-10)])
@pytest.mark.parametrize("sampling", [dict(top_k=1), dict(temperature=0.8), dict(temperature=1.5, top_k=4)],
                         ids=["greedy", "sampled", "top-k"])
def test_generate_with_cache_gives_the_same_tokens(switch, dtype, tol, sampling):
    minigrad.manual_seed(13)
    model = randomize(GPT(**{**TINY, "vocab_size": 11, "block_size": 16, **switch}), seed=5).to(dtype)
    prompt = ids(3, 2, high=11, seed=6)
    runs = {}
    for use_cache in (False, True):
        minigrad.manual_seed(14)
        runs[use_cache] = model.generate(prompt, 20, use_cache=use_cache, return_logits=True, **sampling)
    (tokens, logits), (cached_tokens, cached_logits) = runs[False], runs[True]
    assert tokens.shape == (3, 22) and logits.shape == (3, 20, 11)
    np.testing.assert_array_equal(cached_tokens.numpy(), tokens.numpy())  # past block_size too: 22 > 16
    np.testing.assert_allclose(cached_logits.numpy(), logits.numpy(), rtol=tol, atol=tol)
    assert model.training  # its mode is given back
