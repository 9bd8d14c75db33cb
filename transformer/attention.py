"""Attention, section 3.2 of "Attention Is All You Need" (Vaswani et al., 2017).

Shapes: B = batch, h = num_heads, T_q = number of queries, T_k = number of keys (= values),
d_k = size of a query/key vector, d_v = size of a value vector, d_model = model width.

Masks are boolean and True where attention is ALLOWED (a query may look at that key).
"""
import math

import minigrad
from minigrad import nn


def _broadcast_shape(a, b):
    """numpy's broadcasting rule for two shapes, or None if they do not broadcast."""
    result = []
    for i in range(1, max(len(a), len(b)) + 1):
        m = a[-i] if i <= len(a) else 1
        n = b[-i] if i <= len(b) else 1
        if m != n and 1 not in (m, n):
            return None
        result.append(max(m, n))
    return tuple(reversed(result))


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0, training=True, need_weights=True):
    """Scaled dot-product attention, Eq. (1):

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)  ->  (output (..., T_q, d_v),
    weights (..., T_q, T_k)); the leading axes (B, h, ...) broadcast.

    mask: bool, broadcastable to (..., T_q, T_k), True where query i may attend to key j.
    It is the additive mask of the usual formula in disguise,

        softmax(Q K^T / sqrt(d_k) + M) V,   M = 0 where allowed, -inf where not,

    since e^-inf = 0 gives a blocked key zero weight. A query with no allowed key at all gets zero
    weights and a zero output (not 0/0 = NaN), and its gradient is 0.
    dropout_p: dropout on the weights while `training` (section 5.4, "Residual Dropout").
    need_weights=False: return (output, None) and, when there is no dropout to apply, compute the
    same thing with minigrad's fused op `F.scaled_dot_product_attention` (faster, less memory).
    """
    d_k = q.shape[-1]
    if k.shape[-1] != d_k:
        raise ValueError(f"attention: queries have d_k = {d_k} features but keys have {k.shape[-1]} "
                         f"(q {q.shape}, k {k.shape}); Q K^T needs them equal")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: {k.shape[-2]} keys but {v.shape[-2]} values (k {k.shape}, v {v.shape}); "
                         "each key needs exactly one value")

    scores_shape = _broadcast_shape(q.shape[:-1], k.shape[:-1])
    scores_shape = scores_shape and scores_shape[:-1] + (q.shape[-2], k.shape[-2])  # (..., T_q, T_k)
    if mask is not None:
        mask = minigrad.as_tensor(mask)
        if mask.dtype != minigrad.bool_:
            raise TypeError(f"attention: mask must be bool (True = may attend), got {mask.dtype}")
        if scores_shape is not None and _broadcast_shape(mask.shape, scores_shape) != scores_shape:
            raise ValueError(f"attention: mask of shape {mask.shape} does not broadcast to the "
                             f"scores' shape {scores_shape} (..., T_q, T_k)")
    if not need_weights and (dropout_p == 0 or not training):
        return nn.functional.scaled_dot_product_attention(q, k, v, mask, scale=1.0 / math.sqrt(d_k)), None

    # Q K^T: one score per (query, key) pair, (..., T_q, T_k)
    scores = q @ k.transpose(-2, -1)

    # softmax(Q K^T / sqrt(d_k) + M) as one fused op: scale the scores, give the blocked keys
    # weight 0 (e^-inf), normalise each row. A row with no allowed key gets zero weights.
    weights = scores.softmax(axis=-1, scale=1.0 / math.sqrt(d_k), mask=mask)

    weights = minigrad.dropout(weights, dropout_p, training)
    return weights @ v, weights  # the weighted average of the values, (..., T_q, d_v)


def causal_mask(T):
    """(T, T) bool, True on and below the diagonal: position i may attend to positions 0..i only,
    so a decoder cannot look at the words it has to predict (section 3.2.3)."""
    return minigrad.ones(T, T, dtype=minigrad.bool_).tril()


def padding_mask(ids, pad_id):
    """ids (B, T) -> (B, 1, 1, T) bool, True where ids != pad_id: no query attends to padding.
    The two 1-axes broadcast over the heads and the queries of (B, h, T_q, T)."""
    ids = minigrad.as_tensor(ids)
    B, T = ids.shape
    return (ids != pad_id).reshape(B, 1, 1, T)


class MultiHeadAttention(nn.Module):
    """Multi-head attention, section 3.2.2:

        MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

    with d_k = d_v = d_model / h. The h matrices W_i^Q (d_model, d_k) are stored side by side as one
    Linear W_Q (d_model -> d_model), and likewise W_K, W_V; so all heads are projected in one
    product and then split: (B, T, d_model) -> (B, h, T, d_k).

    forward(query (B, T_q, d_model), key (B, T_k, d_model), value (B, T_k, d_model), mask=None)
    -> (output (B, T_q, d_model), weights (B, h, T_q, T_k)). Self-attention: query = key = value.
    """

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"MultiHeadAttention: d_model = {d_model} is not divisible by num_heads = "
                             f"{num_heads}; each head gets d_model / num_heads features")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = self.d_v = d_model // num_heads
        self.dropout = dropout
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x):
        """(B, T, d_model) -> (B, h, T, d_k)"""
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, self.d_k).transpose(1, 2).contiguous()

    def forward(self, query, key, value, mask=None):
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.ndim != 3 or x.shape[-1] != self.d_model:
                raise ValueError(f"MultiHeadAttention: {name} must be (B, T, d_model = {self.d_model}), "
                                 f"got shape {x.shape}")
        B, T_q, _ = query.shape
        # project, then split into h heads: Q W_i^Q, K W_i^K, V W_i^V for every i at once
        q = self._split_heads(self.W_Q(query))  # (B, h, T_q, d_k)
        k = self._split_heads(self.W_K(key))  # (B, h, T_k, d_k)
        v = self._split_heads(self.W_V(value))  # (B, h, T_k, d_v)
        # head_i = Attention(...), all heads in parallel
        heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training)
        # Concat(head_1, ..., head_h): (B, h, T_q, d_v) -> (B, T_q, h * d_v)
        concat = heads.transpose(1, 2).reshape(B, T_q, self.d_model)
        return self.W_O(concat), weights  # ... W^O

    def extra_repr(self):
        return f"d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k}, dropout={self.dropout}"
