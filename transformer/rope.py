"""Rotary position embeddings (RoPE): "RoFormer: Enhanced Transformer with Rotary Position
Embedding" (Su et al., 2021), section 3.4; used by LLaMA, Mistral, Qwen, ...

Instead of adding a position vector to the word embedding (section 3.5 of "Attention Is All You
Need"), RoPE rotates every query and key by an angle proportional to its position. Split a head's
vector into pairs (x_{2i}, x_{2i+1}), i = 0 .. head_dim/2 - 1, and rotate pair i at position m by
m theta_i (Eq. 34 of RoFormer):

    [y_{2i}  ]   [cos m theta_i   -sin m theta_i] [x_{2i}  ]
    [y_{2i+1}] = [sin m theta_i    cos m theta_i] [x_{2i+1}],    theta_i = base^(-2i / head_dim)

Read as complex numbers z_i = x_{2i} + i x_{2i+1}, this is z_i e^{i m theta_i}. A rotation keeps
lengths, and the dot product of a query rotated to m with a key rotated to n is

    Re sum_i q_i conj(k_i) e^{i (m - n) theta_i}

so the score depends on the positions only through m - n: relative positions, for free, in every
layer, with no parameters. Shapes: q, k (B, h, T, head_dim); the values are not rotated.
"""
import math

import minigrad
from minigrad import nn


def rope_angles(max_len, head_dim, base=10000.0):
    """The angles m theta_i, (max_len, head_dim / 2), in float64: row m is position m."""
    if head_dim % 2 != 0:
        raise ValueError(f"RoPE: head_dim = {head_dim} must be even: features are rotated in pairs")
    position = minigrad.arange(max_len, dtype=minigrad.float64).reshape(max_len, 1)  # m
    two_i = minigrad.arange(0, head_dim, 2, dtype=minigrad.float64)  # 2i = 0, 2, 4, ...
    theta = (two_i * (-math.log(base) / head_dim)).exp()  # base^(-2i / head_dim)
    return position * theta


def apply_rotary(x, cos, sin):
    """Rotate the pairs (x_{2i}, x_{2i+1}) of x (..., T, head_dim) by the angles whose cosines and
    sines are cos, sin (T, head_dim / 2). Only minigrad ops: the gradient is the inverse rotation."""
    *lead, T, head_dim = x.shape
    even, odd = x.reshape(*lead, T, head_dim // 2, 2).unbind(-1)  # x_{2i}, x_{2i+1}: (..., T, head_dim/2)
    rotated = minigrad.stack([even * cos - odd * sin,  # y_{2i}   = x_{2i} cos - x_{2i+1} sin
                              even * sin + odd * cos],  # y_{2i+1} = x_{2i} sin + x_{2i+1} cos
                             axis=-1)
    return rotated.reshape(*lead, T, head_dim)  # interleave the pairs again


class RotaryEmbedding(nn.Module):
    """RoPE for positions 0 .. max_len - 1; no parameters. The angle table is computed once in
    float64 and its cosines and sines are rounded to the input's dtype on first use (one pair of
    tables per dtype), so `model.float()` then `model.double()` never leaves them rounded.

    forward(x (B, h, T, head_dim), start=0) -> (B, h, T, head_dim): x[..., t, :] rotated to
    position start + t (start > 0 for new tokens after a KV cache of `start` positions)."""

    def __init__(self, head_dim, max_len, base=10000.0):
        super().__init__()
        self.head_dim, self.max_len, self.base = head_dim, max_len, base
        self.angles = rope_angles(max_len, head_dim, base)  # (max_len, head_dim / 2), float64
        self._tables = {}  # dtype -> (cos, sin)

    def tables(self, dtype):
        """(cos, sin) of the angles, each (max_len, head_dim / 2), in `dtype`."""
        key = str(dtype)
        if key not in self._tables:
            self._tables[key] = (self.angles.cos().to(dtype), self.angles.sin().to(dtype))
        return self._tables[key]

    def forward(self, x, start=0):
        T = x.shape[-2]
        if x.shape[-1] != self.head_dim:
            raise ValueError(f"RotaryEmbedding: expected (..., T, head_dim = {self.head_dim}), got shape {x.shape}")
        if start + T > self.max_len:
            raise ValueError(f"RotaryEmbedding: positions {start} .. {start + T - 1} go past max_len = {self.max_len}")
        cos, sin = self.tables(x.dtype)
        return apply_rotary(x, cos[start:start + T], sin[start:start + T])

    def extra_repr(self):
        return f"head_dim={self.head_dim}, max_len={self.max_len}, base={self.base:g}"
