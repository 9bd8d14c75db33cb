"""transformer: the models of "Attention Is All You Need" (Vaswani et al., 2017) and GPT, built on minigrad.

    attention.py   scaled_dot_product_attention (Eq. 1), MultiHeadAttention (3.2.2), masks
    positional.py  sinusoidal positional encoding (3.5) and learned positions
    layers.py      feed-forward network (Eq. 2), residual + LayerNorm, encoder and decoder layers and stacks
    model.py       Transformer (encoder-decoder), GPT (decoder-only)
"""
from .attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from .layers import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
    SublayerConnection,
)
from .model import GPT, GPTConfig, Transformer
from .positional import LearnedPositionalEmbedding, PositionalEncoding, sinusoidal_positional_encoding

__all__ = [
    "scaled_dot_product_attention", "MultiHeadAttention", "causal_mask", "padding_mask",
    "sinusoidal_positional_encoding", "PositionalEncoding", "LearnedPositionalEmbedding",
    "PositionwiseFeedForward", "SublayerConnection", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder",
    "Transformer", "GPT", "GPTConfig",
]
