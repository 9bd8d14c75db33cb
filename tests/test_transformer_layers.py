"""Positional encodings, feed-forward network, residual + LayerNorm, encoder and decoder layers and stacks."""
import math

import numpy as np
import pytest

import minigrad
from transformer import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    LearnedPositionalEmbedding,
    PositionalEncoding,
    PositionwiseFeedForward,
    SublayerConnection,
    causal_mask,
    padding_mask,
    sinusoidal_positional_encoding,
)

D, H, D_FF = 4, 2, 6  # tiny sizes keep every gradcheck fast


def t64(values, requires_grad=False):
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def random_input(*shape, seed=0):
    return t64(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def gradcheck_module(module, fn, inputs):
    """gradcheck w.r.t. the inputs and every parameter of `module` (already float64, eval mode)."""
    n = len(inputs)
    return minigrad.gradcheck(lambda *args: fn(*args[:n]), [*inputs, *module.parameters()])


# ------------------------------------------------------------------ positional encoding
def test_sinusoidal_encoding_worked_example():
    pe = sinusoidal_positional_encoding(2, 6, dtype=minigrad.float64).numpy()
    assert pe.shape == (2, 6)
    for pos in (0, 1):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-15)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-15)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1])


def test_sinusoidal_encoding_table():
    pe = sinusoidal_positional_encoding(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == np.float32
    pos, two_i = np.arange(50)[:, None], np.arange(0, 16, 2)
    angle = pos / 10000 ** (two_i / 16)
    np.testing.assert_allclose(pe.numpy()[:, 0::2], np.sin(angle), atol=1e-6)
    np.testing.assert_allclose(pe.numpy()[:, 1::2], np.cos(angle), atol=1e-6)


def test_sinusoidal_encoding_odd_d_model():
    with pytest.raises(ValueError, match="d_model = 5 must be even.*sin, cos"):
        sinusoidal_positional_encoding(10, 5)


def test_positional_encoding_module():
    pe = PositionalEncoding(D, max_len=8).double()
    assert pe.pe.dtype == np.float64  # a buffer: follows .double()
    assert list(pe.parameters()) == []
    x = random_input(2, 5, D)
    np.testing.assert_allclose(pe(x).numpy(), x.numpy() + sinusoidal_positional_encoding(8, D).numpy()[:5], rtol=1e-6)
    gradcheck_module(pe, pe, [x])
    with pytest.raises(ValueError, match="sequence length 9 is longer than max_len = 8"):
        pe(t64(np.zeros((1, 9, D))))


def test_learned_positional_embedding():
    minigrad.manual_seed(0)
    pe = LearnedPositionalEmbedding(6, D).double()
    assert pe.weight.shape == (6, D)
    x = random_input(2, 3, D)
    np.testing.assert_allclose(pe(x).numpy(), x.numpy() + pe.weight.numpy()[:3])
    gradcheck_module(pe, pe, [x])
    with pytest.raises(ValueError, match="sequence length 7 is longer than max_len = 6"):
        pe(t64(np.zeros((1, 7, D))))


def test_positional_dropout():
    pe = PositionalEncoding(D, max_len=8, dropout=0.5)
    x = minigrad.ones(2, 3, D)
    minigrad.manual_seed(0)
    assert (pe(x).numpy() == 0).any()
    pe.eval()
    np.testing.assert_allclose(pe(x).numpy(), np.broadcast_to(1 + pe.pe.numpy()[:3], (2, 3, D)))


# ------------------------------------------------------------------ feed-forward network
def test_feed_forward_matches_equation_2():
    minigrad.manual_seed(0)
    ffn = PositionwiseFeedForward(D, D_FF).double()
    x = random_input(2, 3, D)
    hidden = np.maximum(0, x.numpy() @ ffn.W_1.weight.numpy().T + ffn.W_1.bias.numpy())
    np.testing.assert_allclose(ffn(x).numpy(), hidden @ ffn.W_2.weight.numpy().T + ffn.W_2.bias.numpy(), rtol=1e-12)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_gradcheck(activation):
    minigrad.manual_seed(1)
    ffn = PositionwiseFeedForward(D, D_FF, activation).double()
    gradcheck_module(ffn, ffn, [random_input(2, 3, D)])


def test_feed_forward_bad_activation():
    with pytest.raises(ValueError, match="activation"):
        PositionwiseFeedForward(D, D_FF, "tanh")


# ------------------------------------------------------------------ residual + LayerNorm
@pytest.mark.parametrize("norm_first", [False, True])
def test_sublayer_connection(norm_first):
    minigrad.manual_seed(2)
    block = SublayerConnection(D, dropout=0.0, norm_first=norm_first).double()
    ffn = PositionwiseFeedForward(D, D_FF).double()
    with minigrad.no_grad():  # LayerNorm's weight and bias away from 1 and 0
        block.norm.weight.assign(np.random.default_rng(0).uniform(0.5, 1.5, D))
        block.norm.bias.assign(np.random.default_rng(1).uniform(-0.5, 0.5, D))
    x = random_input(2, 3, D)

    def layer_norm(a):
        mean, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
        return (a - mean) / np.sqrt(var + 1e-5) * block.norm.weight.numpy() + block.norm.bias.numpy()

    def sublayer(a):
        return ffn(t64(a)).numpy()

    expected = x.numpy() + sublayer(layer_norm(x.numpy())) if norm_first else layer_norm(x.numpy() + sublayer(x.numpy()))
    np.testing.assert_allclose(block(x, ffn).numpy(), expected, rtol=1e-10, atol=1e-12)
    minigrad.gradcheck(lambda x, *p: block(x, ffn), [x, *block.parameters(), *ffn.parameters()])


# ------------------------------------------------------------------ encoder and decoder layers
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer(norm_first):
    minigrad.manual_seed(3)
    layer = EncoderLayer(D, H, D_FF, dropout=0.1, norm_first=norm_first).double().eval()
    x = random_input(2, 3, D)
    src_mask = padding_mask(minigrad.tensor([[1, 1, 1], [1, 1, 0]]), 0)
    out = layer(x, src_mask)
    assert out.shape == (2, 3, D)
    assert layer.attn_weights.shape == (2, H, 3, 3) and not layer.attn_weights.requires_grad
    np.testing.assert_array_equal(layer.attn_weights.numpy()[1, :, :, 2], 0.0)  # the padding is ignored
    gradcheck_module(layer, lambda x: layer(x, src_mask), [x])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer(norm_first):
    minigrad.manual_seed(4)
    layer = DecoderLayer(D, H, D_FF, dropout=0.1, norm_first=norm_first, activation="gelu").double().eval()
    x, memory = random_input(2, 3, D, seed=1), random_input(2, 2, D, seed=2)
    src_mask = padding_mask(minigrad.tensor([[1, 1], [1, 0]]), 0)
    out = layer(x, memory, src_mask, causal_mask(3))
    assert out.shape == (2, 3, D)
    assert layer.self_attn_weights.shape == (2, H, 3, 3)
    assert layer.cross_attn_weights.shape == (2, H, 3, 2)
    np.testing.assert_array_equal(np.triu(layer.self_attn_weights.numpy(), 1), 0.0)  # no look-ahead
    gradcheck_module(layer, lambda x, m: layer(x, m, src_mask, causal_mask(3)), [x, memory])


def test_encoder_stack_post_ln():
    minigrad.manual_seed(5)
    encoder = Encoder(D, H, D_FF, num_layers=2, dropout=0.0).double()
    assert len(encoder.layers) == 2 and encoder.norm is None
    x = random_input(1, 3, D)
    assert encoder(x).shape == (1, 3, D)
    gradcheck_module(encoder, encoder, [x])


def test_decoder_stack_pre_ln_has_final_norm():
    minigrad.manual_seed(6)
    decoder = Decoder(D, H, D_FF, num_layers=2, dropout=0.0, norm_first=True).double()
    assert len(decoder.layers) == 2 and decoder.norm is not None
    x, memory = random_input(1, 3, D, seed=3), random_input(1, 2, D, seed=4)
    out = decoder(x, memory, None, causal_mask(3))
    assert out.shape == (1, 3, D)
    np.testing.assert_allclose(out.numpy().mean(-1), 0.0, atol=1e-12)  # ends with LayerNorm (weight 1, bias 0)
    gradcheck_module(decoder, lambda x, m: decoder(x, m, None, causal_mask(3)), [x, memory])


def test_dropout_is_off_in_eval_mode():
    minigrad.manual_seed(7)
    layer = EncoderLayer(D, H, D_FF, dropout=0.5).double()
    x = random_input(2, 3, D)
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), layer(x).numpy(), rtol=1e-12)
    layer.train()
    assert not np.array_equal(layer(x).numpy(), layer(x).numpy())
