"""transformer: the models of "Attention Is All You Need" (Vaswani et al., 2017) and GPT, built on minigrad.

    attention.py   scaled_dot_product_attention (Eq. 1), MultiHeadAttention (3.2.2), masks
    positional.py  sinusoidal positional encoding (3.5) and learned positions
    layers.py      feed-forward network (Eq. 2), residual + LayerNorm, encoder and decoder layers and stacks
    model.py       Transformer (encoder-decoder), GPT (decoder-only; GPTConfig switches to a LLaMA-style block)
    rope.py        rotary position embeddings (RoFormer)
    modern.py      RMSNorm, SwiGLU, grouped-query attention's repeat_kv, the KV cache for generation
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
from .modern import KVCache, RMSNorm, SwiGLU, repeat_kv, swiglu_hidden_size
from .positional import LearnedPositionalEmbedding, PositionalEncoding, sinusoidal_positional_encoding
from .rope import RotaryEmbedding, apply_rotary, rope_angles

__all__ = [
    "scaled_dot_product_attention", "MultiHeadAttention", "causal_mask", "padding_mask",
    "sinusoidal_positional_encoding", "PositionalEncoding", "LearnedPositionalEmbedding",
    "PositionwiseFeedForward", "SublayerConnection", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder",
    "Transformer", "GPT", "GPTConfig",
    "RMSNorm", "SwiGLU", "swiglu_hidden_size", "repeat_kv", "KVCache", "RotaryEmbedding", "apply_rotary", "rope_angles",
]
