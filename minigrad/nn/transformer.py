"""PyTorch's own Transformer modules: MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
TransformerDecoderLayer, TransformerDecoder and Transformer, with PyTorch's arguments, defaults,
shapes and parameter names, so that `model.load_state_dict(torch_model.state_dict())` copies a
PyTorch model into minigrad key for key.

Shapes: L = target length (queries), S = source length (keys and values), N = batch,
E = embed_dim = d_model, h = num_heads, d = E / h (one head's width). As in PyTorch, the sequence
axis comes first, (L, N, E), unless batch_first=True, (N, L, E); unbatched inputs are (L, E).

Masks follow PyTorch's convention for these modules, which is the OPPOSITE of minigrad's
F.scaled_dot_product_attention (and of transformer/attention.py):
    bool mask:  True where attention is NOT allowed (a blocked key);
    float mask: added to the scores before the softmax (0 = allowed, -inf = blocked).
attn_mask is (L, S) or (N * h, L, S); key_padding_mask is (N, S), True at padding keys.

The paper's version, with the paper's names (W_Q, W_K, W_V, W_O, d_k, sublayers) and every step
spelled out, is in the `transformer/` package (attention.py, layers.py, model.py): read it to learn
the model; use these classes to run PyTorch course code and to load PyTorch weights.
"""
import copy
import math

import numpy as np

from .. import devices
from ..creation import as_tensor
from ..tensor import Tensor, default_float
from . import functional as F
from . import init
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList, Parameter


# ============================================================================ masks
def _canonical_mask(mask, name, dtype, who):
    """One of PyTorch's masks as (allowed, additive), exactly one of them not None:

    allowed:  bool numpy array, True where attention IS allowed (minigrad's convention, which the
              fused softmax and F.scaled_dot_product_attention take);
    additive: float array (or Tensor) of `dtype`, added to the scaled scores.

    A bool mask (True = blocked) becomes allowed = ~mask. A float mask whose values are all 0 or
    -inf (such as Transformer.generate_square_subsequent_mask) is a bool mask in disguise, and
    becomes allowed = (mask == 0): the same softmax, and the fast fused op can take it. Any other
    float mask (a learned or relative-position bias) stays additive; a Tensor that requires grad
    stays in the graph."""
    if mask is None:
        return None, None
    if isinstance(mask, Tensor) and mask.requires_grad:
        if mask.dtype.kind != "f":
            raise TypeError(f"{who}: {name} requires grad, so it must be float, got {mask.dtype}")
        return None, (mask if mask.dtype == dtype else mask.to(dtype))
    array = np.asarray(mask)
    if array.dtype == np.bool_:
        return ~array, None
    if array.dtype.kind != "f":
        raise TypeError(f"{who}: {name} must be bool (True = NOT allowed) or float (added to the scores), "
                        f"got {array.dtype}")
    if np.all((array == 0) | (array == -np.inf)):
        return array == 0, None
    return None, array.astype(dtype)


def _combine_masks(first, second):
    """Two (allowed, additive) masks, each broadcastable to the scores (N, h, L, S), as one: both
    bool, the keys allowed by both (&); otherwise the sum of their additive forms, where a bool
    mask counts 0 where allowed and -inf where blocked."""
    if first[0] is None and first[1] is None:
        return second
    if second[0] is None and second[1] is None:
        return first
    if first[1] is None and second[1] is None:
        return first[0] & second[0], None
    dtype = (first[1] if first[1] is not None else second[1]).dtype

    def additive(allowed, added):
        return added if added is not None else np.where(allowed, 0.0, -np.inf).astype(dtype)

    a, b = additive(*first), additive(*second)
    if isinstance(b, Tensor) and not isinstance(a, Tensor):  # (a Tensor on the left keeps it in the graph)
        a, b = b, a
    return None, a + b


def _shape(x):
    return tuple(np.shape(x))


# ============================================================================ multi-head attention
class MultiheadAttention(Module):
    """Multi-head attention as torch.nn.MultiheadAttention:

        MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_out^T + b_out
        head_i = softmax((Q W_q,i^T + b_q,i)(K W_k,i^T + b_k,i)^T / sqrt(d) + M) (V W_v,i^T + b_v,i)

    with d = embed_dim / num_heads and M the masks (0 where allowed, -inf where blocked, or a float
    mask's values). Parameters, named as PyTorch's:
        in_proj_weight (3E, E): W_q, W_k, W_v stacked, when kdim = vdim = embed_dim; otherwise
        q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim) (in_proj_weight is None);
        in_proj_bias (3E,): b_q, b_k, b_v stacked (bias=True);
        out_proj: a Linear(E, E) (out_proj.weight, out_proj.bias).
    Initialisation as PyTorch: xavier_uniform_ on the projection weights, the biases at 0,
    out_proj.weight as any Linear's.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
            average_attn_weights=True, is_causal=False) -> (attn_output, attn_weights or None)
        query (L, N, E), key (S, N, kdim), value (S, N, vdim); (N, L, E) etc. with batch_first=True;
            unbatched (L, E), (S, kdim), (S, vdim) (batch_first is then ignored, as PyTorch).
        key_padding_mask (N, S) ((S,) unbatched): bool True at keys to ignore (padding), or float
            added to the scores.
        attn_mask (L, S), shared by the batch, or (N * num_heads, L, S) ((num_heads, L, S) unbatched),
            index n * num_heads + i for batch item n and head i: bool True where query l may NOT
            attend to key s, or float added to the scores.
        is_causal: a hint that attn_mask is the causal mask; as PyTorch, it needs attn_mask too
            (Transformer.generate_square_subsequent_mask(L)). The mask is applied either way.
        attn_output: (L, N, E), (N, L, E) with batch_first, or (L, E) unbatched.
        attn_weights (need_weights=True): the softmax weights (after attention dropout, as PyTorch),
            averaged over the heads (N, L, S), or per head (N, num_heads, L, S) with
            average_attn_weights=False; unbatched (L, S) or (num_heads, L, S).

    need_weights=False, with no attention dropout to apply (eval mode, or dropout=0) and no float
    mask other than 0/-inf: the fast path, minigrad's fused F.scaled_dot_product_attention, which
    never builds the (N, h, L, S) weights. Otherwise the weights are computed step by step.

    A query whose keys are ALL blocked gets zero weights, so its output is out_proj.bias: as
    PyTorch's fused path (need_weights=False); PyTorch's explicit path gives NaN weights and outputs.
    add_bias_kv and add_zero_attn (extra learned or zero keys) are not supported.
    transformer/attention.py is the paper's version (W_Q, W_K, W_V, W_O), step by step."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "MultiheadAttention")
        dtype = default_float() if dtype is None else dtype
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be > 0, got embed_dim={embed_dim}, "
                             f"num_heads={num_heads}")
        if embed_dim % num_heads != 0:
            raise ValueError(f"MultiheadAttention: embed_dim = {embed_dim} is not divisible by num_heads = "
                             f"{num_heads}; each head gets embed_dim / num_heads features")
        if add_bias_kv:
            raise NotImplementedError("MultiheadAttention: add_bias_kv=True (a learned extra key and value, bias_k "
                                      "and bias_v) is not supported in minigrad; use add_bias_kv=False")
        if add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_zero_attn=True (an extra key and value of zeros) is "
                                      "not supported in minigrad; use add_zero_attn=False")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout  # attention dropout, on the weights (a probability, as PyTorch)
        self.batch_first = batch_first
        self.bias_k = self.bias_v = None  # (add_bias_kv's parameters in PyTorch; always None here)
        self.add_zero_attn = False

        def weight(*shape):
            return init.xavier_uniform_(Parameter(np.empty(shape, dtype=dtype)))

        if self._qkv_same_embed_dim:  # W_q, W_k, W_v stacked: one matrix (3E, E)
            self.in_proj_weight = weight(3 * embed_dim, embed_dim)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:  # keys and values of other widths: one matrix each
            self.q_proj_weight = weight(embed_dim, embed_dim)
            self.k_proj_weight = weight(embed_dim, self.kdim)
            self.v_proj_weight = weight(embed_dim, self.vdim)
            self.in_proj_weight = None
        self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, dtype=dtype)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if bias:
            init.zeros_(self.out_proj.bias)

    # ------------------------------------------------------------------ the steps
    def _check_inputs(self, query, key, value):
        """Whether the inputs are batched (3-D) or not (2-D); raise for anything else."""
        who = "MultiheadAttention"
        if query.ndim not in (2, 3):
            raise ValueError(f"{who}: query must be (L, N, E) or (N, L, E) batched, or (L, E) unbatched, "
                             f"got shape {query.shape}")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{who}: query is {query.ndim}-D, so key and value must be {query.ndim}-D too, "
                             f"got key {key.shape} and value {value.shape}")
        for name, x, width in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if x.shape[-1] != width:
                raise ValueError(f"{who}: {name} must have {width} features in its last axis "
                                 f"({'embed_dim' if name == 'query' else name[0] + 'dim'}), got shape {x.shape}")
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"{who}: key {key.shape} and value {value.shape} must have the same sequence and "
                             "batch axes (one value per key)")
        if query.ndim == 3:
            batch_axis = 0 if self.batch_first else 1
            if query.shape[batch_axis] != key.shape[batch_axis]:
                raise ValueError(f"{who}: query {query.shape} and key {key.shape} have different batch sizes "
                                 f"(axis {batch_axis}, batch_first={self.batch_first})")
        return query.ndim == 3

    def _masks(self, key_padding_mask, attn_mask, N, L, S, batched, dtype):
        """Check the masks' shapes and merge them into one (allowed, additive) pair broadcastable to
        the scores (N, h, L, S); see `_canonical_mask`."""
        who, h = "MultiheadAttention", self.num_heads
        if key_padding_mask is not None:
            want = (N, S) if batched else (S,)
            if _shape(key_padding_mask) != want:
                raise ValueError(f"{who}: key_padding_mask must be {'(N, S)' if batched else '(S,)'} = {want} "
                                 f"(True at padding keys), got shape {_shape(key_padding_mask)}")
        if attn_mask is not None:
            wants = [(L, S), (N * h, L, S)] if batched else [(L, S), (h, L, S)]
            if _shape(attn_mask) not in wants:
                names = "(L, S) or (N * num_heads, L, S)" if batched else "(L, S) or (num_heads, L, S)"
                raise ValueError(f"{who}: attn_mask must be {names} = {wants[0]} or {wants[1]}, "
                                 f"got shape {_shape(attn_mask)}")
        padding = _canonical_mask(key_padding_mask, "key_padding_mask", dtype, who)
        attention = _canonical_mask(attn_mask, "attn_mask", dtype, who)
        # (N, S) -> (N, 1, 1, S): the same keys ignored by every head and every query
        padding = tuple(None if m is None else m.reshape(N, 1, 1, S) for m in padding)
        # (L, S) -> (1, 1, L, S), shared; (N * h, L, S) -> (N, h, L, S), item n * h + i is batch n, head i
        shape = (1, 1, L, S) if _shape(attn_mask) == (L, S) else (N, h, L, S)
        attention = tuple(None if m is None else m.reshape(shape) for m in attention)
        return _combine_masks(attention, padding)

    def _project(self, query, key, value):
        """q = query W_q^T + b_q, k = key W_k^T + b_k, v = value W_v^T + b_v, each (N, T, E)."""
        E = self.embed_dim
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        if self._qkv_same_embed_dim:
            if query is key and key is value:  # self-attention: all three in one product, then split
                return F.linear(query, self.in_proj_weight, self.in_proj_bias).split(E, axis=-1)
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _split_heads(self, x):
        """(N, T, E) -> (N, h, T, d): head i gets features i*d .. (i+1)*d - 1."""
        N, T, _ = x.shape
        return x.reshape(N, T, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    # ------------------------------------------------------------------ forward
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        query, key, value = (as_tensor(x) if not isinstance(x, Tensor) else x for x in (query, key, value))
        batched = self._check_inputs(query, key, value)
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that attn_mask is the causal mask, and "
                             "needs that mask (as PyTorch): pass attn_mask=nn.Transformer."
                             "generate_square_subsequent_mask(L) too")
        self_attention = query is key and key is value

        # work batch first: (N, L, E), (N, S, kdim), (N, S, vdim)
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if self_attention:  # (the same tensor three times: _project multiplies once)
            key = value = query
        N, L, S = query.shape[0], query.shape[1], key.shape[1]

        q, k, v = self._project(query, key, value)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)  # (N, h, L or S, d)
        allowed, additive = self._masks(key_padding_mask, attn_mask, N, L, S, batched, q.dtype)
        scale = 1.0 / math.sqrt(self.head_dim)
        dropout_p = self.dropout if self.training else 0.0

        if not need_weights and dropout_p == 0.0 and additive is None:
            # the fast path: softmax(q k^T / sqrt(d), allowed keys only) v in one fused op
            heads, weights = F.scaled_dot_product_attention(q, k, v, allowed, scale=scale), None
        else:
            scores = q @ k.transpose(-2, -1)  # (N, h, L, S): one score per (query, key) pair
            if additive is None:  # softmax(scores / sqrt(d)), blocked keys at weight 0, in one fused op
                weights = scores.softmax(-1, scale=scale, mask=allowed)
            else:  # softmax(scores / sqrt(d) + M), the keys at -inf left out (weight 0; none left: all 0)
                weights = (scores * scale + additive).softmax(-1, mask=np.asarray(additive) != -np.inf)
            weights = F.dropout(weights, dropout_p, True)
            heads = weights @ v  # (N, h, L, d): each head's weighted average of its values

        # Concat(head_1, ..., head_h): (N, h, L, d) -> (N, L, E), then the output projection
        out = self.out_proj(heads.transpose(1, 2).reshape(N, L, self.embed_dim))
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)  # back to (L, N, E)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(axis=1)  # (N, L, S): the heads' average
        return out, (weights if batched else weights.squeeze(0))

    def extra_repr(self):
        dims = "" if self._qkv_same_embed_dim else f", kdim={self.kdim}, vdim={self.vdim}"
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}{dims}, dropout={self.dropout}, "
                f"batch_first={self.batch_first}")


# ============================================================================ encoder and decoder layers
def _activation(activation, who):
    """"relu" -> F.relu, "gelu" -> F.gelu, a callable (a function or a module such as nn.GELU()) as is."""
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise ValueError(f"{who}: activation must be 'relu', 'gelu' or a callable, got {activation!r}")


def _layer_norm(d_model, eps, bias, dtype):
    """LayerNorm(d_model); with bias=False, without the bias parameter (as PyTorch's LayerNorm(bias=False))."""
    norm = LayerNorm(d_model, eps=eps, dtype=dtype)
    if not bias:
        norm.bias = None  # (unregistered: F.layer_norm then adds nothing)
    return norm


def _check_layer_input(x, d_model, who, name):
    if x.ndim not in (2, 3) or x.shape[-1] != d_model:
        raise ValueError(f"{who}: {name} must be (T, N, d_model), (N, T, d_model) with batch_first, or (T, d_model) "
                         f"unbatched, with d_model = {d_model}; got shape {x.shape}")


class TransformerEncoderLayer(Module):
    """One encoder layer, as torch.nn.TransformerEncoderLayer: self-attention, then a feed-forward
    network, each with a residual connection, dropout and a LayerNorm.

        post-norm (norm_first=False, the paper):  x = norm1(x + SA(x));       x = norm2(x + FF(x))
        pre-norm  (norm_first=True):              x = x + SA(norm1(x));       x = x + FF(norm2(x))
        SA(x) = dropout1(self_attn(x, x, x))      FF(x) = dropout2(linear2(dropout(activation(linear1(x)))))

    Sub-modules with PyTorch's names: self_attn (MultiheadAttention(d_model, nhead, dropout)),
    linear1 (d_model -> dim_feedforward), dropout, linear2 (dim_feedforward -> d_model), norm1,
    norm2, dropout1, dropout2. activation: "relu", "gelu" or a callable. bias=False: no bias in any
    Linear, attention or LayerNorm.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False) -> like src:
        src (S, N, E), (N, S, E) with batch_first, or (S, E) unbatched; src_mask (S, S) or
        (N * nhead, S, S) and src_key_padding_mask (N, S), as MultiheadAttention's attn_mask and
        key_padding_mask (bool True = NOT allowed, or float added to the scores).
    transformer/layers.py (EncoderLayer, SublayerConnection) is the paper's version."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "TransformerEncoderLayer")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")

    def _self_attention_block(self, x, attn_mask, key_padding_mask, is_causal):
        out, _ = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)
        return self.dropout1(out)

    def _feed_forward_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        _check_layer_input(src, self.self_attn.embed_dim, "TransformerEncoderLayer", "src")
        x = src
        if self.norm_first:
            x = x + self._self_attention_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward_block(self.norm2(x))
        x = self.norm1(x + self._self_attention_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward_block(x))


class TransformerDecoderLayer(Module):
    """One decoder layer, as torch.nn.TransformerDecoderLayer: masked self-attention over the target,
    attention over the encoder's output (`memory`), then a feed-forward network, each with a
    residual connection, dropout and a LayerNorm.

        post-norm (norm_first=False):  x = norm1(x + SA(x));  x = norm2(x + MHA(x, mem));  x = norm3(x + FF(x))
        pre-norm  (norm_first=True):   x = x + SA(norm1(x));  x = x + MHA(norm2(x), mem);  x = x + FF(norm3(x))
        SA(x) = dropout1(self_attn(x, x, x))     MHA(x, mem) = dropout2(multihead_attn(x, mem, mem))
        FF(x) = dropout3(linear2(dropout(activation(linear1(x)))))

    Sub-modules with PyTorch's names: self_attn, multihead_attn, linear1, dropout, linear2, norm1,
    norm2, norm3, dropout1, dropout2, dropout3.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
            memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False) -> like tgt:
        tgt (L, N, E), memory (S, N, E) ((N, L, E), (N, S, E) with batch_first; (L, E), (S, E)
        unbatched); tgt_mask (L, L), e.g. Transformer.generate_square_subsequent_mask(L), so that
        position l does not see the targets after it; memory_mask (L, S); the key padding masks
        (N, L) and (N, S). Mask conventions as MultiheadAttention's.
    transformer/layers.py (DecoderLayer) is the paper's version."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "TransformerDecoderLayer")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm2 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.norm3 = _layer_norm(d_model, layer_norm_eps, bias, dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def _self_attention_block(self, x, attn_mask, key_padding_mask, is_causal):
        out, _ = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)
        return self.dropout1(out)

    def _cross_attention_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        # queries from the decoder, keys and values from the encoder's output
        out, _ = self.multihead_attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                     need_weights=False, is_causal=is_causal)
        return self.dropout2(out)

    def _feed_forward_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        d_model = self.self_attn.embed_dim
        _check_layer_input(tgt, d_model, "TransformerDecoderLayer", "tgt")
        _check_layer_input(memory, d_model, "TransformerDecoderLayer", "memory")
        x = tgt
        if self.norm_first:
            x = x + self._self_attention_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._cross_attention_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                                memory_is_causal)
            return x + self._feed_forward_block(self.norm3(x))
        x = self.norm1(x + self._self_attention_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._cross_attention_block(x, memory, memory_mask, memory_key_padding_mask,
                                                       memory_is_causal))
        return self.norm3(x + self._feed_forward_block(x))


# ============================================================================ stacks
def _clones(layer, num_layers, who):
    """num_layers independent deep copies of `layer` in a ModuleList (keys layers.0..., layers.1...):
    each copy starts with the layer's weights and then trains on its own."""
    if not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"{who}: num_layers must be a positive integer, got {num_layers!r}")
    return ModuleList(copy.deepcopy(layer) for _ in range(num_layers))


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of `encoder_layer` (each an independent deep copy, with its own
    weights), then `norm` if given, as torch.nn.TransformerEncoder. Keys: layers.0.self_attn.in_proj_weight, ...

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None) -> like src: every layer gets
    the same masks (see TransformerEncoderLayer). enable_nested_tensor and mask_check are accepted
    for PyTorch's signature and do nothing: PyTorch's inference fast path (eval mode, no gradients,
    a key padding mask) gives 0 at padded positions before `norm`, where these keep the values the
    layers computed; neither is meaningful, so ignore the padded positions of the output.
    transformer/layers.py (Encoder) is the paper's version."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    """A stack of `num_layers` copies of `decoder_layer`, then `norm` if given, as
    torch.nn.TransformerDecoder; every layer attends to the same `memory` (the encoder's output).

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
            memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False) -> like tgt.
    transformer/layers.py (Decoder) is the paper's version."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder Transformer, as torch.nn.Transformer: encoder = TransformerEncoder of
    num_encoder_layers TransformerEncoderLayers with a final LayerNorm (encoder.norm), decoder =
    TransformerDecoder of num_decoder_layers TransformerDecoderLayers with a final LayerNorm
    (decoder.norm); custom_encoder / custom_decoder replace them. Every parameter with more than
    one axis is then re-drawn with xavier_uniform_, as PyTorch does. No embeddings, positional
    encoding or output layer: those are the model's around it.

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
            tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
            tgt_is_causal=None, memory_is_causal=False) -> (L, N, E) ((N, L, E) with batch_first):
        src (S, N, E), tgt (L, N, E); src_mask (S, S), tgt_mask (L, L) (usually
        generate_square_subsequent_mask(L)), memory_mask (L, S); key padding masks (N, S), (N, L),
        (N, S). memory = encoder(src, ...); output = decoder(tgt, memory, ...).
    transformer/model.py (Transformer) is the paper's version, with embeddings and the output layer."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "Transformer")
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, dtype=dtype), num_encoder_layers,
                                              _layer_norm(d_model, layer_norm_eps, bias, dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, dtype=dtype), num_decoder_layers,
                                              _layer_norm(d_model, layer_norm_eps, bias, dtype))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_axis] != tgt.shape[batch_axis]):
            raise ValueError(f"Transformer: src {src.shape} and tgt {tgt.shape} must have the same batch size "
                             f"(axis {batch_axis}, batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: src {src.shape} and tgt {tgt.shape} must have d_model = {self.d_model} "
                             "features in their last axis")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask for causal attention: 0 on and below the diagonal, -inf above it, so
        position i attends to positions 0..i only. A float mask, added to the scores (PyTorch's
        convention); the bool mask with the same meaning is its `== -inf` (True = NOT allowed), and
        minigrad's own convention (True = allowed, transformer.causal_mask) is its `== 0`."""
        devices.check_device(device, "generate_square_subsequent_mask")
        dtype = default_float() if dtype is None else dtype
        return Tensor(np.triu(np.full((sz, sz), -np.inf), k=1).astype(dtype))
