"""The encoder and decoder stacks, section 3.1 and Figure 1.

Shapes: B = batch, S = source length, T = target length, d_model = model width, d_ff = inner width
of the feed-forward network. Every layer maps (B, T, d_model) -> (B, T, d_model).
"""
from minigrad import nn

from .attention import MultiHeadAttention


class PositionwiseFeedForward(nn.Module):
    """Position-wise feed-forward network, Eq. (2), applied to every position separately:

        FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

    x (..., d_model) -> (..., d_model), through d_ff hidden units. activation="gelu" swaps
    max(0, .) for GELU (as GPT does). `dropout` acts on the hidden units while training."""

    def __init__(self, d_model, d_ff, activation="relu", dropout=0.0):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"PositionwiseFeedForward: activation must be 'relu' or 'gelu', got {activation!r}")
        self.activation = activation
        self.W_1 = nn.Linear(d_model, d_ff)  # x W_1 + b_1
        self.W_2 = nn.Linear(d_ff, d_model)  # ... W_2 + b_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        hidden = self.W_1(x)
        hidden = hidden.relu() if self.activation == "relu" else hidden.gelu()  # max(0, .) or GELU
        return self.W_2(self.dropout(hidden))

    def extra_repr(self):
        return f"activation={self.activation!r}"


class SublayerConnection(nn.Module):
    """The residual connection and layer norm around every sub-layer (sections 3.1 and 5.4).

    post-LN (the paper, norm_first=False):  LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN  (norm_first=True):              x + Dropout(Sublayer(LayerNorm(x)))

    Pre-LN keeps an unnormalised path from input to output and trains deep stacks without warm-up;
    its stacks need a final LayerNorm (see `Encoder`, `Decoder`).
    forward(x (B, T, d_model), sublayer: a function (B, T, d_model) -> (B, T, d_model))."""

    def __init__(self, d_model, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))

    def extra_repr(self):
        return f"norm_first={self.norm_first}"


class EncoderLayer(nn.Module):
    """One encoder layer (section 3.1): self-attention, then the feed-forward network, each inside a
    `SublayerConnection`. forward(x (B, S, d_model), src_mask=None) -> (B, S, d_model).

    src_mask: bool, True where a key may be attended to, e.g. `padding_mask(src, pad_id)` (B, 1, 1, S).
    The attention weights (B, h, S, S) of the last call are kept in `self.attn_weights`."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=False, activation="relu"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, activation, dropout)
        self.sublayer1 = SublayerConnection(d_model, dropout, norm_first)
        self.sublayer2 = SublayerConnection(d_model, dropout, norm_first)
        self.attn_weights = None

    def forward(self, x, src_mask=None):
        def self_attention(y):  # every position attends to every (unmasked) position of the source
            out, weights = self.self_attn(y, y, y, src_mask)
            self.attn_weights = weights.detach()
            return out

        x = self.sublayer1(x, self_attention)
        return self.sublayer2(x, self.feed_forward)


class DecoderLayer(nn.Module):
    """One decoder layer (section 3.1): masked self-attention, attention over the encoder output
    ("encoder-decoder attention", section 3.2.3), then the feed-forward network.

    forward(x (B, T, d_model), memory (B, S, d_model), src_mask=None, tgt_mask=None) -> (B, T, d_model)
    tgt_mask: (T, T) or (B, 1, T, T), True where allowed; pass a causal one (`causal_mask(T)`) so
    position i cannot see the targets after it. src_mask: as for the encoder, e.g. (B, 1, 1, S).
    Kept for visualisation: `self.self_attn_weights` (B, h, T, T), `self.cross_attn_weights` (B, h, T, S)."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1, norm_first=False, activation="relu"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, activation, dropout)
        self.sublayer1 = SublayerConnection(d_model, dropout, norm_first)
        self.sublayer2 = SublayerConnection(d_model, dropout, norm_first)
        self.sublayer3 = SublayerConnection(d_model, dropout, norm_first)
        self.self_attn_weights = self.cross_attn_weights = None

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        def self_attention(y):  # queries, keys and values: the target so far
            out, weights = self.self_attn(y, y, y, tgt_mask)
            self.self_attn_weights = weights.detach()
            return out

        def cross_attention(y):  # queries from the decoder, keys and values from the encoder output
            out, weights = self.cross_attn(y, memory, memory, src_mask)
            self.cross_attn_weights = weights.detach()
            return out

        x = self.sublayer1(x, self_attention)
        x = self.sublayer2(x, cross_attention)
        return self.sublayer3(x, self.feed_forward)


class Encoder(nn.Module):
    """N identical `EncoderLayer`s (N = num_layers = 6 in the paper); with pre-LN a final LayerNorm.
    forward(x (B, S, d_model), src_mask=None) -> memory (B, S, d_model)."""

    def __init__(self, d_model, num_heads, d_ff, num_layers=6, dropout=0.1, norm_first=False, activation="relu"):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, activation) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x, src_mask=None):
        for layer in self.layers:
            x = layer(x, src_mask)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """N identical `DecoderLayer`s; with pre-LN a final LayerNorm.
    forward(x (B, T, d_model), memory (B, S, d_model), src_mask=None, tgt_mask=None) -> (B, T, d_model)."""

    def __init__(self, d_model, num_heads, d_ff, num_layers=6, dropout=0.1, norm_first=False, activation="relu"):
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first, activation) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return x if self.norm is None else self.norm(x)
