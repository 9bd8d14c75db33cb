"""The encoder-decoder Transformer and GPT (transformer/model.py)."""
import time

import numpy as np
import pytest

import minigrad
from minigrad.nn import functional as F
from transformer import GPT, GPTConfig, Transformer, padding_mask
from transformer.model import _keep_top_k


def ids(*shape, high, seed=0):
    return minigrad.tensor(np.random.default_rng(seed).integers(0, high, shape))


def tiny_transformer(**kwargs):
    settings = dict(d_model=4, num_heads=2, num_layers=1, d_ff=6, dropout=0.1, max_len=16)
    settings.update(kwargs)
    return Transformer(7, 6, **settings)


TINY_GPT = dict(vocab_size=7, block_size=5, n_layer=2, n_head=2, d_model=8)


# ------------------------------------------------------------------ Transformer
def test_transformer_forward_shapes():
    minigrad.manual_seed(0)
    model = Transformer(11, 13, d_model=8, num_heads=2, num_layers=2, d_ff=16, max_len=32)
    src, tgt = ids(3, 5, high=11), ids(3, 4, high=13, seed=1)
    memory = model.encode(src)
    assert memory.shape == (3, 5, 8)
    assert model.decode(tgt, memory).shape == (3, 4, 13)
    logits = model(src, tgt, padding_mask(src, 0), padding_mask(tgt, 0))
    assert logits.shape == (3, 4, 13) and np.isfinite(logits.numpy()).all()


@pytest.mark.parametrize("share, norm_first", [(False, False), (True, True)])
def test_transformer_gradcheck_to_loss(share, norm_first):
    minigrad.manual_seed(1)
    model = (Transformer(6, 6, d_model=4, num_heads=2, num_layers=1, d_ff=6, max_len=8, share_embeddings=True,
                         norm_first=norm_first) if share else tiny_transformer(norm_first=norm_first))
    model.double().eval()
    src, tgt, target = ids(2, 3, high=6), ids(2, 3, high=6, seed=1), ids(2, 3, high=6, seed=2)
    src_mask = padding_mask(minigrad.tensor([[1, 2, 3], [1, 2, 0]]), 0)

    def loss(*params):
        return F.cross_entropy(model(src, tgt, src_mask), target)

    minigrad.gradcheck(loss, list(model.parameters()))


def test_decoder_is_causal():
    minigrad.manual_seed(2)
    model = Transformer(9, 9, d_model=8, num_heads=2, num_layers=2, d_ff=16, max_len=16).double().eval()
    src, tgt = ids(2, 5, high=9), ids(2, 6, high=9, seed=1)
    changed = minigrad.tensor(tgt.numpy().copy())
    changed.numpy()[:, 3] = (tgt.numpy()[:, 3] + 1) % 9  # change the 4th target token
    before, after = model(src, tgt).numpy(), model(src, changed).numpy()
    np.testing.assert_allclose(after[:, :3], before[:, :3], rtol=1e-12, atol=1e-12)  # positions 0..2 unchanged
    assert not np.allclose(after[:, 3:], before[:, 3:])
    # a padding tgt_mask is combined with the causal mask, never replaces it
    no_pad = padding_mask(minigrad.ones(2, 6, dtype=minigrad.int64), 0)
    np.testing.assert_allclose(model(src, changed, tgt_mask=no_pad).numpy(), after, rtol=1e-12)


def test_share_embeddings():
    model = tiny_transformer(share_embeddings=False)
    assert model.output_projection is not None and model.output_projection.bias is None
    shared = Transformer(7, 7, d_model=4, num_heads=2, num_layers=1, d_ff=6, share_embeddings=True)
    assert shared.src_embed is shared.tgt_embed and shared.output_projection is None
    names = [n for n, _ in shared.named_parameters()]
    assert sum("embed" in n for n in names) == 1  # one matrix for both embeddings and the output
    with pytest.raises(ValueError, match="src_vocab_size = 7 and tgt_vocab_size = 6"):
        Transformer(7, 6, d_model=4, num_heads=2, num_layers=1, d_ff=6, share_embeddings=True)


def test_greedy_decode():
    minigrad.manual_seed(3)
    model = tiny_transformer().double()
    src = ids(2, 4, high=7)
    out = model.greedy_decode(src, max_len=6, start_id=1)
    assert out.shape == (2, 6) and out.dtype == np.int64
    assert (out.numpy()[:, 0] == 1).all() and (0 <= out.numpy()).all() and (out.numpy() < 6).all()
    assert model.training  # its training mode is given back
    # each step is the argmax of decode() on the prefix
    model.eval()
    logits = model(src, out[:, :-1]).numpy()
    np.testing.assert_array_equal(logits.argmax(-1), out.numpy()[:, 1:])
    # with end_id: stops once every row has produced it, pads finished rows with it
    end = int(out.numpy()[0, 1])
    stopped = model.greedy_decode(src, max_len=6, start_id=1, end_id=end).numpy()
    assert stopped.shape[1] <= 6 and (stopped[:, -1] == end).all()
    for row in stopped:
        first = list(row[1:]).index(end) + 1
        assert (row[first:] == end).all()


def test_paper_parameter_counts():
    start = time.perf_counter()
    base = Transformer(37000, 37000, d_model=512, num_heads=8, num_layers=6, d_ff=2048, share_embeddings=True)
    n_base = base.num_parameters()
    del base
    big = Transformer(37000, 37000, d_model=1024, num_heads=16, num_layers=6, d_ff=4096, share_embeddings=True)
    n_big = big.num_parameters()
    del big
    print(f"\nbase: {n_base:,} parameters (Table 3: 65M); big: {n_big:,} (Table 3: 213M); "
          f"built in {time.perf_counter() - start:.1f} s")
    assert n_base == 63_082_496 and abs(n_base / 65e6 - 1) < 0.05
    assert n_big == 214_245_376 and abs(n_big / 213e6 - 1) < 0.05


# ------------------------------------------------------------------ GPT
def test_gpt_config_and_keywords_agree():
    minigrad.manual_seed(4)
    a = GPT(GPTConfig(**TINY_GPT))
    minigrad.manual_seed(4)
    b = GPT(**TINY_GPT)
    assert a.config == b.config
    for (name_a, p_a), (name_b, p_b) in zip(a.named_parameters(), b.named_parameters()):
        assert name_a == name_b
        np.testing.assert_array_equal(p_a.numpy(), p_b.numpy())
    with pytest.raises(TypeError):
        GPT(GPTConfig(**TINY_GPT), dropout=0.1)


def test_gpt_forward_and_loss():
    minigrad.manual_seed(5)
    model = GPT(**TINY_GPT)
    idx, targets = ids(3, 5, high=7), ids(3, 5, high=7, seed=1)
    logits, no_loss = model(idx)  # nanoGPT's convention: (logits, None) without targets
    assert logits.shape == (3, 5, 7) and no_loss is None
    logits2, loss = model(idx, targets)
    np.testing.assert_allclose(logits.numpy(), logits2.numpy(), rtol=1e-6)
    assert loss.shape == () and loss.item() == pytest.approx(np.log(7), rel=0.05)  # small init: near uniform
    # token ids as a nested list or a numpy array work as a Tensor does
    logits3, loss3 = model(idx.numpy().tolist(), targets.numpy())
    np.testing.assert_array_equal(logits3.numpy(), logits2.numpy())
    assert loss3.item() == loss.item()
    assert model.generate(idx.numpy()[:1].tolist(), max_new_tokens=2).shape == (1, 7)
    # the lm head is tied to the token embedding
    assert "lm_head" not in dict(model.named_parameters())
    assert model.num_parameters() == sum(p.size for p in model.parameters())


@pytest.mark.parametrize("n_layer, bias", [(1, True), (2, False)])
def test_gpt_gradcheck_to_loss(n_layer, bias):
    minigrad.manual_seed(6)
    model = GPT(**{**TINY_GPT, "n_layer": n_layer, "bias": bias}).double().eval()
    idx, targets = ids(2, 5, high=7), ids(2, 5, high=7, seed=1)
    minigrad.gradcheck(lambda *params: model(idx, targets)[1], list(model.parameters()))


def test_gpt_init():
    minigrad.manual_seed(7)
    model = GPT(vocab_size=64, block_size=16, n_layer=4, n_head=4, d_model=64)
    params = dict(model.named_parameters())
    assert np.std(params["wte.weight"].numpy()) == pytest.approx(0.02, rel=0.1)
    assert np.std(params["h.0.attn.c_attn.weight"].numpy()) == pytest.approx(0.02, rel=0.1)
    for name in ("h.1.attn.c_proj.weight", "h.1.mlp.c_proj.weight"):
        assert np.std(params[name].numpy()) == pytest.approx(0.02 / np.sqrt(8), rel=0.1)
    assert (params["h.0.mlp.c_fc.bias"].numpy() == 0).all()
    assert (params["ln_f.weight"].numpy() == 1).all()


def test_gpt_is_causal():
    minigrad.manual_seed(8)
    model = GPT(**TINY_GPT).double()
    idx = ids(2, 5, high=7)
    changed = minigrad.tensor(idx.numpy().copy())
    changed.numpy()[:, 2] = (idx.numpy()[:, 2] + 1) % 7
    before, after = model(idx)[0].numpy(), model(changed)[0].numpy()
    np.testing.assert_allclose(after[:, :2], before[:, :2], rtol=1e-12, atol=1e-12)
    assert not np.allclose(after[:, 2:], before[:, 2:])


def test_gpt_generate():
    minigrad.manual_seed(9)
    model = GPT(**{**TINY_GPT, "dropout": 0.1}).double()
    idx = ids(2, 3, high=7)
    minigrad.manual_seed(10)
    a = model.generate(idx, max_new_tokens=8, temperature=0.8, top_k=3)  # longer than block_size: cropped
    minigrad.manual_seed(10)
    b = model.generate(idx, max_new_tokens=8, temperature=0.8, top_k=3)
    assert a.shape == (2, 11) and a.dtype == np.int64
    assert ((0 <= a.numpy()) & (a.numpy() < 7)).all()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy()[:, :3], idx.numpy())
    assert model.training
    # top_k=1 is greedy decoding
    greedy = model.generate(idx, max_new_tokens=2, top_k=1)
    model.eval()
    first = model(idx)[0].numpy()[:, -1].argmax(-1)
    np.testing.assert_array_equal(greedy.numpy()[:, 3], first)


def test_sampling_follows_the_softmax():
    minigrad.manual_seed(11)
    model = GPT(vocab_size=3, block_size=2, n_layer=1, n_head=1, d_model=4)
    with minigrad.no_grad():
        model.wte.weight.assign(np.zeros((3, 4)))  # every logit 0: uniform over the 3 tokens
    out = model.generate(minigrad.zeros(3000, 1, dtype=minigrad.int64), max_new_tokens=1).numpy()[:, 1]
    np.testing.assert_allclose(np.bincount(out, minlength=3) / 3000, [1 / 3] * 3, atol=0.03)


def test_keep_top_k():
    logits = minigrad.tensor([[1.0, 5.0, 3.0, 2.0], [4.0, 4.0, 0.0, 4.0]])
    kept = _keep_top_k(logits, 2).numpy()
    np.testing.assert_array_equal(np.isfinite(kept), [[False, True, True, False], [True, True, False, True]])  # ties kept


def test_gpt_validation():
    model = GPT(**TINY_GPT)
    with pytest.raises(ValueError, match="sequence length 6 is longer than block_size = 5"):
        model(ids(1, 6, high=7))
    with pytest.raises(IndexError, match="out of range"):
        model(minigrad.tensor([[1, 7]]))
    with pytest.raises(ValueError, match="d_model = 8 is not divisible by n_head = 3"):
        GPT(**{**TINY_GPT, "n_head": 3})
