"""Two complete models:

- `Transformer`: the encoder-decoder of "Attention Is All You Need" (Figure 1), for translation.
- `GPT`: a decoder-only language model (GPT-2 style, after nanoGPT's model.py), whose config
  switches turn its block, one piece at a time, into a LLaMA-style block (modern.py, rope.py).

Shapes: B = batch, S = source length, T = target (or text) length, V = vocabulary size.
Ids are int64 tensors.
"""
import math
from dataclasses import dataclass

import minigrad
from minigrad import nn
from minigrad.nn import functional as F

from .attention import causal_mask, scaled_dot_product_attention
from .layers import Decoder, Encoder
from .modern import KVCache, RMSNorm, SwiGLU, repeat_kv
from .positional import LearnedPositionalEmbedding, PositionalEncoding
from .rope import RotaryEmbedding


# ====================================================================================== Transformer
class Transformer(nn.Module):
    """The encoder-decoder Transformer (section 3, Figure 1).

    encode(src (B, S), src_mask=None) -> memory (B, S, d_model)
    decode(tgt (B, T), memory, src_mask=None, tgt_mask=None) -> logits (B, T, tgt_vocab_size)
    forward(src, tgt, src_mask=None, tgt_mask=None) -> logits (B, T, tgt_vocab_size)

    Masks are bool and True where attention is allowed: src_mask e.g. `padding_mask(src, pad_id)`
    (B, 1, 1, S); tgt_mask e.g. `padding_mask(tgt, pad_id)`. The decoder's self-attention is always
    causal: a given tgt_mask is combined (and) with `causal_mask(T)`.

    Embeddings (section 3.4) are multiplied by sqrt(d_model); positions are the sinusoids of
    section 3.5. share_embeddings=True ties the source embedding, the target embedding and the
    pre-softmax projection (one matrix, as in the paper; needs one shared vocabulary). Otherwise
    the pre-softmax projection is its own bias-free Linear `output_projection`.

    Initialisation (the paper does not give one): every matrix, embeddings included, is
    Xavier-uniform; every bias is zero; LayerNorms start as the identity.
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000, share_embeddings=False, norm_first=False):
        super().__init__()
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(f"Transformer: share_embeddings=True needs one vocabulary, but src_vocab_size = "
                             f"{src_vocab_size} and tgt_vocab_size = {tgt_vocab_size}")
        self.d_model, self.share_embeddings = d_model, share_embeddings
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = self.src_embed if share_embeddings else nn.Embedding(tgt_vocab_size, d_model)
        self.positional = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout, norm_first)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout, norm_first)
        # pre-softmax projection: tied to the embedding matrix, or its own
        self.output_projection = None if share_embeddings else nn.Linear(d_model, tgt_vocab_size, bias=False)
        self._causal_masks = {}  # T -> causal_mask(T), built once per length

        for name, p in self.named_parameters():
            if p.ndim > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def _embed(self, embedding, ids):
        # section 3.4: "we multiply those weights by sqrt(d_model)"; then add the positions (3.5)
        return self.positional(embedding(ids) * math.sqrt(self.d_model))

    def encode(self, src, src_mask=None):
        """src (B, S) -> memory (B, S, d_model)"""
        return self.encoder(self._embed(self.src_embed, src), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        """tgt (B, T), memory (B, S, d_model) -> logits (B, T, tgt_vocab_size)"""
        T = tgt.shape[1]
        if T not in self._causal_masks:
            self._causal_masks[T] = causal_mask(T)
        causal = self._causal_masks[T]
        if tgt_mask is not None and tuple(tgt_mask.shape[-2:]) not in ((T, T), (1, T)):
            raise ValueError(f"Transformer: tgt_mask of shape {tuple(tgt_mask.shape)} must end in ({T}, {T}) "
                             f"or (1, {T}) for a target of length {T}, i.e. broadcast to ({T}, {T})")
        self_mask = causal if tgt_mask is None else causal & tgt_mask  # never look ahead
        x = self.decoder(self._embed(self.tgt_embed, tgt), memory, src_mask, self_mask)
        if self.output_projection is None:
            return F.linear(x, self.tgt_embed.weight)  # logits = x E^T with the shared embedding E
        return self.output_projection(x)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        """src (B, S), tgt (B, T) -> logits (B, T, tgt_vocab_size); position t predicts tgt token t+1."""
        return self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask)

    def greedy_decode(self, src, max_len, start_id, end_id=None, src_mask=None):
        """Translate by always taking the most likely next token (eval mode, no gradients).

        src (B, S) -> ids (B, <= max_len), starting with start_id. With end_id, decoding stops once
        every sequence has produced it; a finished sequence is padded with end_id."""
        was_training = self.training
        self.eval()
        try:
            with minigrad.no_grad():
                memory = self.encode(src, src_mask)
                B = memory.shape[0]
                ys = minigrad.full((B, 1), start_id, dtype=minigrad.int64)
                finished = minigrad.zeros(B, 1, dtype=minigrad.bool_)
                for _ in range(max_len - 1):
                    logits = self.decode(ys, memory, src_mask)[:, -1, :]  # (B, V): the next token
                    next_id = logits.argmax(axis=-1, keepdims=True)  # (B, 1)
                    if end_id is not None:
                        next_id = minigrad.where(finished, end_id, next_id)
                        finished = finished | (next_id == end_id)
                    ys = minigrad.cat([ys, next_id], axis=1)
                    if end_id is not None and finished.all():
                        break
        finally:
            self.train(was_training)
        return ys


# ====================================================================================== GPT
@dataclass
class GPTConfig:
    """The defaults are nanoGPT's GPT-2 block; norm="rmsnorm", position="rope", mlp="swiglu" and
    n_kv_head < n_head together make a LLaMA-style block (bias=False too, for LLaMA's exactly)."""
    vocab_size: int  # V: number of token ids
    block_size: int  # longest context the model reads (the number of learned positions)
    n_layer: int  # number of blocks
    n_head: int  # attention heads per block
    d_model: int  # model width (nanoGPT: n_embd)
    dropout: float = 0.0
    bias: bool = True  # biases in the Linears and LayerNorms
    norm: str = "layernorm"  # "layernorm" (GPT-2) or "rmsnorm" (LLaMA): modern.RMSNorm
    position: str = "learned"  # "learned" positions added to the input (GPT-2) or "rope" (LLaMA): rope.py
    mlp: str = "gelu"  # "gelu": 4 d_model GELU MLP (GPT-2), or "swiglu" (LLaMA): modern.SwiGLU
    n_kv_head: int = None  # key/value heads (grouped-query attention); None: n_head (multi-head)

    def __post_init__(self):
        for name, allowed in (("norm", ("layernorm", "rmsnorm")), ("position", ("learned", "rope")),
                              ("mlp", ("gelu", "swiglu"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"GPTConfig: {name} must be one of {allowed}, got {getattr(self, name)!r}")
        n_kv_head = self.n_head if self.n_kv_head is None else self.n_kv_head
        if n_kv_head < 1 or self.n_head % n_kv_head != 0:
            raise ValueError(f"GPTConfig: n_head = {self.n_head} is not a multiple of n_kv_head = {n_kv_head}; "
                             "each key/value head is shared by n_head / n_kv_head query heads")


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention. Its query, key and value projections W_Q, W_K, W_V are
    stored stacked in one Linear, c_attn, as in GPT-2 and nanoGPT: one product projects all three,
    then the result is split into q, k and v, and each into heads.

    Grouped-query attention: n_kv_head key/value heads, each read by n_head / n_kv_head query
    heads (`repeat_kv`), so c_attn maps d_model -> (n_head + 2 n_kv_head) head_dim; with
    n_kv_head = n_head (the default) that is 3 d_model, multi-head attention as in the paper.
    position="rope" rotates q and k (`RotaryEmbedding`) instead of adding positions to the input.

    forward(x (B, T, d_model), mask (T, T_past + T), cache=None) -> (B, T, d_model). With a
    `LayerCache` holding T_past positions, x holds the next T positions: their keys and values are
    appended to the cache and their queries attend to all T_past + T."""

    def __init__(self, config):
        super().__init__()
        if config.d_model % config.n_head != 0:
            raise ValueError(f"GPT: d_model = {config.d_model} is not divisible by n_head = {config.n_head}; "
                             "each head gets d_model / n_head features")
        self.n_head, self.d_model, self.dropout = config.n_head, config.d_model, config.dropout
        self.n_kv_head = config.n_head if config.n_kv_head is None else config.n_kv_head
        self.head_dim = config.d_model // config.n_head
        qkv_size = (self.n_head + 2 * self.n_kv_head) * self.head_dim
        self.c_attn = nn.Linear(config.d_model, qkv_size, bias=config.bias)  # W_Q, W_K, W_V
        self.c_proj = nn.Linear(config.d_model, config.d_model, bias=config.bias)  # W_O
        self.resid_dropout = nn.Dropout(config.dropout)
        self.rope = RotaryEmbedding(self.head_dim, config.block_size) if config.position == "rope" else None

    def forward(self, x, mask, cache=None):
        B, T, C = x.shape
        h, h_kv, head_dim = self.n_head, self.n_kv_head, self.head_dim
        # one product for all three, then split into heads and into q, k, v:
        # (B, T, (h + 2 h_kv) head_dim) -> (B, h + 2 h_kv, T, head_dim) -> h, h_kv and h_kv heads
        qkv = self.c_attn(x).reshape(B, T, h + 2 * h_kv, head_dim).transpose(1, 2)
        q, k, v = qkv.split([h, h_kv, h_kv], axis=1)  # (B, h, T, hd), (B, h_kv, T, hd), (B, h_kv, T, hd)
        if self.rope is not None:  # rotate queries and keys to their positions past the cache
            start = 0 if cache is None else cache.length
            q, k = self.rope(q, start), self.rope(k, start)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, h_kv, T_past + T, hd): every key and value so far
        k, v = repeat_kv(k, h // h_kv), repeat_kv(v, h // h_kv)  # (B, h, T_past + T, hd)
        # (B, h, T, hd); without the weights, the fused op (while there is no dropout to apply)
        y, _ = scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training, need_weights=False)
        y = y.transpose(1, 2).reshape(B, T, C)  # concatenate the heads
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """The feed-forward network of Eq. (2) with GELU and d_ff = 4 d_model."""

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.d_model, 4 * config.d_model, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.d_model, config.d_model, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.c_fc(x).gelu()))


def _layer_norm(d_model, bias):
    ln = nn.LayerNorm(d_model)
    if not bias:
        ln.bias = None  # F.layer_norm then shifts by nothing
    return ln


def _norm(config):
    """config.norm: LayerNorm (with a bias if config.bias) or RMSNorm (never a bias)."""
    return RMSNorm(config.d_model) if config.norm == "rmsnorm" else _layer_norm(config.d_model, config.bias)


class Block(nn.Module):
    """A pre-LN decoder block without cross-attention: x + attn(LN(x)), then x + mlp(LN(x)).
    LN is config.norm and mlp is config.mlp (`MLP` or `SwiGLU`).
    forward(x (B, T, d_model), mask, cache=None) -> (B, T, d_model); see `CausalSelfAttention`."""

    def __init__(self, config):
        super().__init__()
        self.ln_1 = _norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = _norm(config)
        self.mlp = SwiGLU(config.d_model, bias=config.bias, dropout=config.dropout) if config.mlp == "swiglu" \
            else MLP(config)

    def forward(self, x, mask, cache=None):
        x = x + self.attn(self.ln_1(x), mask, cache)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A decoder-only Transformer language model: GPT(config) or GPT(vocab_size=..., block_size=...,
    n_layer=..., n_head=..., d_model=..., dropout=0.0, bias=True, norm=..., position=..., mlp=...,
    n_kv_head=...); see `GPTConfig`.

    forward(idx (B, T), targets=None, cache=None) -> (logits (B, T, V), loss), as in nanoGPT: loss
    is the mean cross-entropy of predicting targets[b, t] from idx[b, :t+1] when targets (B, T) are
    given, else None (`logits, _ = model(idx)`). With a `KVCache` of P positions, idx holds
    positions P .. P + T - 1.

    Token embedding wte (V, d_model) + learned positions wpe (block_size, d_model) (none with
    position="rope"), n_layer `Block`s, a final norm ln_f, and the language-model head tied to
    wte: logits = x wte^T (section 3.4's weight sharing).

    Initialisation (GPT-2's): N(0, 0.02^2) for every Linear and embedding weight, zero biases, and
    std 0.02 / sqrt(2 n_layer) for the projections that end a residual branch (attn.c_proj,
    mlp.c_proj, or SwiGLU's W_2), so the residual stream's variance does not grow with depth.
    """

    def __init__(self, config=None, **kwargs):
        super().__init__()
        if config is None:
            config = GPTConfig(**kwargs)
        elif kwargs:
            raise TypeError(f"GPT: pass a GPTConfig or keyword arguments, not both (got {sorted(kwargs)})")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        self.wpe = LearnedPositionalEmbedding(config.block_size, config.d_model, config.dropout) \
            if config.position == "learned" else None
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = _norm(config)
        self.register_buffer("causal", causal_mask(config.block_size), persistent=False)  # sliced to (T, T) per call

        for name, p in self.named_parameters():
            if name.endswith(("c_proj.weight", "W_2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.n_layer))
            elif p.ndim > 1:  # Linear weights, wte, wpe
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def hidden_states(self, idx, cache=None):
        """idx (B, T) -> the final layer's output after ln_f, (B, T, d_model). With a `KVCache`
        holding P positions, idx is positions P .. P + T - 1 and their keys and values are added."""
        idx = minigrad.as_tensor(idx)  # a list or numpy array of ids works too
        if idx.ndim != 2:
            raise ValueError(f"GPT: idx must be token ids of shape (B, T), got shape {idx.shape}; "
                             "for one sequence use idx.unsqueeze(0)")
        B, T = idx.shape
        start = 0 if cache is None else cache.length  # the position of idx[:, 0]
        if start + T > self.config.block_size:
            raise ValueError(f"GPT: sequence length {start + T} is longer than block_size = {self.config.block_size}")
        x = self.wte(idx)
        if self.wpe is None:  # RoPE: positions enter inside attention
            x = minigrad.dropout(x, self.config.dropout, self.training)
        elif start == 0:  # token embedding + position embedding, then dropout
            x = self.wpe(x)
        else:
            x = self.wpe.dropout(x + self.wpe.weight[start:start + T])
        mask = self.causal[start:start + T, :start + T]  # the new queries against every key so far
        for i, block in enumerate(self.h):
            x = block(x, mask, None if cache is None else cache.layers[i])
        return self.ln_f(x)

    def forward(self, idx, targets=None, cache=None):
        logits = F.linear(self.hidden_states(idx, cache), self.wte.weight)  # (B, T, V), head tied to wte
        if targets is None:
            return logits, None
        if tuple(targets.shape) != logits.shape[:-1]:
            raise ValueError(f"GPT: cross_entropy's targets have shape {tuple(targets.shape)}, expected the ids' "
                             f"shape {logits.shape[:-1]} (B, T): one next token per position")
        # as rows (B*T, V): the class axis of (B, T, V) could be mistaken for PyTorch's dim 1 if T = V
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, return_logits=False):
        """Continue idx (B, T) by max_new_tokens sampled tokens -> (B, T + max_new_tokens).

        Each step reads at most the last block_size tokens, divides the last position's logits by
        `temperature`, keeps only the top_k largest (if given), and samples from the softmax using
        minigrad's seeded generator (`minigrad.manual_seed` makes it reproducible).

        use_cache=True keeps every layer's keys and values in a `KVCache`: the first step reads
        the whole prompt, each later step only the newest token. Same tokens and logits (to float
        rounding) as use_cache=False, which reruns the model over the whole text at each step.
        Once the text is longer than block_size the window slides, every position moves, and each
        step reruns the whole window either way. return_logits=True also returns each step's
        logits (before temperature and top_k), (B, max_new_tokens, V)."""
        idx = minigrad.as_tensor(idx)
        was_training = self.training
        self.eval()
        block_size, cache, steps = self.config.block_size, None, []
        try:
            with minigrad.no_grad():
                for _ in range(max_new_tokens):
                    if idx.shape[1] > block_size:  # slide the window: recompute it all
                        cache, x = None, self.hidden_states(idx[:, -block_size:])
                    elif not use_cache:
                        x = self.hidden_states(idx)
                    elif cache is None:  # the prompt: fill the cache
                        cache = KVCache(self.config.n_layer)
                        x = self.hidden_states(idx, cache)
                    else:  # only the newest token; its keys and values join the cache
                        x = self.hidden_states(idx[:, -1:], cache)
                    logits = F.linear(x[:, -1, :], self.wte.weight)  # (B, V): only the last position
                    if return_logits:
                        steps.append(logits)
                    logits = logits / temperature
                    if top_k is not None:
                        logits = _keep_top_k(logits, top_k)
                    idx = minigrad.cat([idx, _sample(logits)], axis=1)
        finally:
            self.train(was_training)
        if return_logits:
            return idx, minigrad.stack(steps, axis=1) if steps else None
        return idx


def _keep_top_k(logits, k):
    """logits (B, V) with everything below each row's k-th largest value set to -inf (ties kept)."""
    V = logits.shape[-1]
    if k >= V:
        return logits
    columns = minigrad.arange(V)
    rest = logits
    for _ in range(k - 1):  # remove the current maximum k-1 times; the k-th largest is then the max
        rest = rest.masked_fill(columns == rest.argmax(axis=-1, keepdims=True), float("-inf"))
    kth = rest.max(axis=-1, keepdims=True)
    return logits.masked_fill(logits < kth, float("-inf"))


def _sample(logits):
    """One id per row of logits (B, V), drawn with probabilities softmax(logits): (B, 1) int64.

    The Gumbel-max trick: argmax(logits + g) with g = -log(-log(u)), u ~ U(0, 1), is distributed
    exactly as softmax(logits), and needs neither a cumulative sum nor a V x V matrix."""
    u = minigrad.rand(*logits.shape, dtype=minigrad.float64)
    gumbel = -(-u.log()).log()
    return (logits.to(minigrad.float64) + gumbel).argmax(axis=-1, keepdims=True)
