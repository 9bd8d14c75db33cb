"""Positional encodings, section 3.5: attention itself ignores word order, so each position adds
its own vector to the word's embedding.

x (B, T, d_model) -> x + P[:T] (B, T, d_model), then dropout (section 5.4).
"""
import math

import minigrad
from minigrad import nn


def sinusoidal_positional_encoding(max_len, d_model, dtype=minigrad.float32):
    """The fixed table P (max_len, d_model) of section 3.5:

        PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

    Each pair of columns (2i, 2i+1) is a sine and a cosine of one frequency; the wavelengths grow
    geometrically from 2 pi to 10000 * 2 pi. Computed in float64, returned as `dtype`.
    """
    if d_model % 2 != 0:
        raise ValueError(f"sinusoidal_positional_encoding: d_model = {d_model} must be even: the columns "
                         "come in (sin, cos) pairs, one pair per frequency")
    pos = minigrad.arange(max_len, dtype=minigrad.float64).reshape(max_len, 1)  # (max_len, 1)
    two_i = minigrad.arange(0, d_model, 2, dtype=minigrad.float64)  # (d_model / 2,): 0, 2, 4, ...
    # 1 / 10000^(2i / d_model), written as exp(-(2i / d_model) ln 10000)
    inv_freq = (two_i * (-math.log(10000.0) / d_model)).exp()
    angle = pos * inv_freq  # (max_len, d_model / 2): pos / 10000^(2i / d_model)
    # interleave: column 2i is the sine, column 2i+1 the cosine of the same angle
    table = minigrad.stack([angle.sin(), angle.cos()], axis=-1).reshape(max_len, d_model)
    return table.to(dtype)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table (a buffer: not trained, follows `.to(dtype)`), then dropout.

    forward(x (B, T, d_model)) -> (B, T, d_model); T may not exceed max_len."""

    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x):
        T = _check_length(x, self.max_len, self.d_model, "PositionalEncoding")
        return self.dropout(x + self.pe[:T])

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(nn.Module):
    """A trained vector per position instead of the sinusoids: Table 3, row (E), of the paper
    ("nearly identical results"); GPT uses these.

    weight (max_len, d_model), initialised N(0, 0.02^2). forward(x (B, T, d_model)) -> x + weight[:T]."""

    def __init__(self, max_len, d_model, dropout=0.0):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.weight = nn.Parameter(minigrad.zeros(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        T = _check_length(x, self.max_len, self.d_model, "LearnedPositionalEmbedding")
        return self.dropout(x + self.weight[:T])

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}"


def _check_length(x, max_len, d_model, who):
    if x.ndim < 2 or x.shape[-1] != d_model:
        raise ValueError(f"{who}: input must be (B, T, d_model = {d_model}), got shape {x.shape}")
    T = x.shape[-2]
    if T > max_len:
        raise ValueError(f"{who}: sequence length {T} is longer than max_len = {max_len}")
    return T
