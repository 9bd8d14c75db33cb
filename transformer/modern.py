"""The pieces that turn the 2017 block into today's LLM block (LLaMA, Mistral, ...), besides RoPE
(rope.py). Each is built from minigrad ops only.

Shapes: B = batch, T = sequence length, d_model = model width, h = query heads,
h_kv = key/value heads, head_dim = d_model / h.
"""
from minigrad import nn
from minigrad import Tensor, cat, ones


class RMSNorm(nn.Module):
    """Root mean square layer normalization, "Root Mean Square Layer Normalization" (Zhang and
    Sennrich, 2019), Eq. (4):

        y = x / RMS(x) * weight,    RMS(x) = sqrt(mean_i(x_i^2) + eps)

    LayerNorm without the re-centring: no mean is subtracted and there is no bias. It still makes
    the output independent of the input's scale (RMSNorm(a x) = RMSNorm(x) for a > 0), but a shift
    of the input passes through. One reduction instead of two; the paper finds re-scaling is what
    matters. weight (d_model,) starts at 1.  x (..., d_model) -> (..., d_model)."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(ones(d_model))

    def forward(self, x):
        if x.shape[-1] != self.d_model:
            raise ValueError(f"RMSNorm: expected (..., d_model = {self.d_model}), got shape {x.shape}")
        rms = ((x * x).mean(axis=-1, keepdims=True) + self.eps).sqrt()  # (..., 1)
        return x / rms * self.weight

    def extra_repr(self):
        return f"{self.d_model}, eps={self.eps}"


def swiglu_hidden_size(d_model, multiple_of=8):
    """LLaMA's hidden width: 2/3 of 4 d_model, rounded up to a multiple of `multiple_of`. Three
    matrices of that width hold about as many numbers as the two of the 4 d_model GELU MLP."""
    hidden = (2 * 4 * d_model) // 3
    return multiple_of * -(-hidden // multiple_of)


class SwiGLU(nn.Module):
    """The gated feed-forward network of "GLU Variants Improve Transformer" (Shazeer, 2020), Eq. (6):

        FFN_SwiGLU(x) = (silu(x W_1) * (x W_3)) W_2,    silu(z) = z sigmoid(z)

    The gate silu(x W_1) decides, feature by feature, how much of the linear path x W_3 goes
    through. W_1, W_3 (d_model -> d_ff), W_2 (d_ff -> d_model); d_ff defaults to
    `swiglu_hidden_size(d_model)`. bias=False as in LLaMA.  x (..., d_model) -> (..., d_model)."""

    def __init__(self, d_model, d_ff=None, bias=False, dropout=0.0):
        super().__init__()
        self.d_ff = swiglu_hidden_size(d_model) if d_ff is None else d_ff
        self.W_1 = nn.Linear(d_model, self.d_ff, bias=bias)  # the gate
        self.W_3 = nn.Linear(d_model, self.d_ff, bias=bias)  # the gated values
        self.W_2 = nn.Linear(self.d_ff, d_model, bias=bias)  # back to d_model
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        gate = self.W_1(x)
        silu = gate * gate.sigmoid()  # silu(x W_1) = x W_1 sigmoid(x W_1)
        return self.dropout(self.W_2(silu * self.W_3(x)))

    def extra_repr(self):
        return f"d_ff={self.d_ff}"


def repeat_kv(x, n_rep):
    """Grouped-query attention, "GQA" (Ainslie et al., 2023): h_kv key/value heads, each shared by
    n_rep = h / h_kv query heads (h_kv = 1 is multi-query attention, Shazeer 2019).

    x (B, h_kv, T, head_dim) -> (B, h_kv * n_rep, T, head_dim), where head j is x's head j // n_rep:
    query heads j = g n_rep .. (g + 1) n_rep - 1 all read key/value head g. The gradient of a
    shared head is the sum over the query heads that read it (expand's backward)."""
    if n_rep == 1:
        return x
    B, h_kv, T, head_dim = x.shape
    return x.unsqueeze(2).expand(B, h_kv, n_rep, T, head_dim).reshape(B, h_kv * n_rep, T, head_dim)


class KVCache:
    """The keys and values of every position seen so far, one pair per layer, for generation.

    Without a cache, each new token runs the model over the whole text again, although the keys
    and values of the earlier positions cannot change (attention is causal). With it, each step
    feeds only the new token: its query attends to the stored keys, and its own key and value are
    appended. Per layer: k, v (B, h_kv, T_past, head_dim); after RoPE, before `repeat_kv` (so
    grouped-query attention shrinks the cache by h / h_kv)."""

    def __init__(self, n_layer):
        self.layers = [LayerCache() for _ in range(n_layer)]

    @property
    def length(self):
        """How many positions are stored."""
        return self.layers[0].length

    def nbytes(self):
        return sum(c.nbytes() for c in self.layers)


class LayerCache:
    """One layer's keys and values: k, v (B, h_kv, T_past, head_dim), or None before the first step."""

    def __init__(self):
        self.k = self.v = None

    @property
    def length(self):
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k, v):
        """Store the new keys and values k, v (B, h_kv, T_new, head_dim); return all of them,
        (B, h_kv, T_past + T_new, head_dim) each."""
        k, v = _constant(k), _constant(v)
        self.k = k if self.k is None else cat([self.k, k], axis=2)
        self.v = v if self.v is None else cat([self.v, v], axis=2)
        return self.k, self.v

    def nbytes(self):
        return 0 if self.k is None else self.k.numpy().nbytes + self.v.numpy().nbytes


def _constant(x):
    """The cache is for inference: keep the numbers, not the graph that made them."""
    return x.detach() if isinstance(x, Tensor) and x.requires_grad else x
