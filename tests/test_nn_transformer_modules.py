"""PyTorch's Transformer modules (minigrad/nn/transformer.py): MultiheadAttention,
TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer, TransformerDecoder, Transformer.

Always: float64 gradient checks of every element (attention, one encoder layer, one decoder
layer), shapes, PyTorch's parameter names, the encoder's layers as independent copies, the mask
conventions and the errors. With PyTorch installed: the same modules built in both libraries, the
torch weights loaded key for key into minigrad's, and the outputs, attention weights and the
gradients of the inputs and of every parameter compared in float32 and float64, in eval mode.

Tolerances (course_compare.tolerance): a few ulps times the number of terms summed along the way,
counted per module below (`*_terms`), at the magnitude of the values compared."""
import copy
import math
import warnings

import numpy as np
import pytest

import minigrad
from course_compare import DTYPES, assert_close, assert_same_as_torch, magnitude
from helpers import gradcheck_module, has_all
from minigrad import nn
from minigrad.nn.transformer import (
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from strategies import TIGHT, leaf

E, H, FF = 8, 2, 12  # embed_dim (d_model), heads, dim_feedforward of the small models
N, L, S = 3, 4, 5  # batch, target length, source length


def rng(seed):
    return np.random.default_rng(seed)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class OurNN:
    """minigrad.nn with this file's classes (until minigrad.nn exports them): `make(OURS)` builds
    the same model as `make(torch.nn)`."""

    def __getattr__(self, name):
        return getattr(minigrad.nn.transformer, name, None) or getattr(nn, name)


OURS = OurNN()


def bool_mask(shape, seed, p=0.3):
    """A random bool mask, True (= NOT allowed) with probability p, with at least one False per row
    (every query keeps a key: PyTorch's explicit path gives NaN for a fully blocked row)."""
    mask = rng(seed).random(shape) < p
    mask[..., 0] = False
    return mask


def float_mask(shape, seed):
    """A float mask that is not 0 / -inf only: values added to the scores, some keys at -inf."""
    mask = rng(seed).uniform(-2, 2, shape)
    blocked = bool_mask(shape, seed + 1, p=0.2)
    mask[blocked] = -np.inf
    return mask


# ============================================================================ the PyTorch comparison
def twins(make, dtype):
    """`make(nn)` in PyTorch and in minigrad, in `dtype` and eval mode (no dropout), with PyTorch's
    weights loaded into minigrad's: the state_dict keys must be the same, in the same order, with the
    same shapes; and minigrad's state_dict loads back into PyTorch's model."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    with warnings.catch_warnings():  # (PyTorch's enable_nested_tensor warning)
        warnings.simplefilter("ignore")
        theirs = make(torch.nn).to(getattr(torch, np.dtype(dtype).name)).eval()
    ours = make(OURS).to(dtype).eval()
    their_state, our_state = theirs.state_dict(), ours.state_dict()
    assert list(our_state) == list(their_state)
    assert {k: tuple(v.shape) for k, v in our_state.items()} == {k: tuple(v.shape) for k, v in their_state.items()}
    ours.load_state_dict(their_state)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})  # (and back: strict)
    return torch, ours, theirs


def compare(make, inputs, masks, call, dtype, terms, grad_terms, seed=0):
    """Run `call(module, *inputs, *masks)` (it returns a tensor or a tuple of tensors / None) in
    both libraries on the same numpy arrays: `inputs` as leaves that require grad (the same array
    twice is the same tensor twice: self-attention), `masks` as constant tensors (bool, or float in
    the inputs' dtype). Compare the outputs, then back-propagate the same random upstream gradients
    through all of them and compare the gradients of the inputs and of every parameter."""
    torch, ours, theirs = twins(make, dtype)
    ours_in, their_in = {}, {}
    for x in inputs:
        if id(x) not in ours_in:
            ours_in[id(x)] = minigrad.tensor(x.astype(dtype), requires_grad=True)
            their_in[id(x)] = torch.tensor(x.astype(dtype), requires_grad=True)

    def constant(m):
        return m if m.dtype == np.bool_ else m.astype(dtype)

    ours_out = call(ours, *(ours_in[id(x)] for x in inputs), *(minigrad.tensor(constant(m)) for m in masks))
    with warnings.catch_warnings():  # (PyTorch's warning for a bool key padding mask with a float attn_mask)
        warnings.simplefilter("ignore")
        their_out = call(theirs, *(their_in[id(x)] for x in inputs), *(torch.tensor(constant(m)) for m in masks))
    ours_out = ours_out if isinstance(ours_out, tuple) else (ours_out,)
    their_out = their_out if isinstance(their_out, tuple) else (their_out,)
    assert len(ours_out) == len(their_out)
    ours_loss = their_loss = None
    for k, (a, b) in enumerate(zip(ours_out, their_out)):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert_same_as_torch(a, b, dtype, magnitude(b.detach().numpy()), terms)
        upstream = rng(100 + seed + k).standard_normal(tuple(b.shape)).astype(dtype)
        a, b = (a * minigrad.tensor(upstream)).sum(), (b * torch.tensor(upstream)).sum()
        ours_loss, their_loss = (a, b) if ours_loss is None else (ours_loss + a, their_loss + b)
    ours_loss.backward()
    their_loss.backward()
    pairs = [(f"input {i}", ours_in[id(x)], their_in[id(x)]) for i, x in enumerate(inputs)]
    their_params = dict(theirs.named_parameters())
    pairs += [(name, p, their_params[name]) for name, p in ours.named_parameters()]
    assert len(list(ours.parameters())) == len(their_params)
    for name, a, b in pairs:
        assert b.grad is not None, name
        try:
            assert_same_as_torch(a.grad, b.grad, dtype, magnitude(b.grad.numpy()), grad_terms)
        except AssertionError as error:
            raise AssertionError(f"gradient of {name}: {error}") from None
    return ours, theirs


def attention_terms(E_in, S):
    """The sums one attention output is made of: the in-projection (E_in), the scores (d), the
    softmax's normaliser (S), the weighted average of the values (S), the out-projection (E)."""
    return E_in + E // H + 2 * S + E


def attention_grad_terms(E_in, L, S, batch=N):
    """The forward's sums, the backward's through the same steps, and a parameter's sum over the
    batch and the positions."""
    return 2 * attention_terms(E_in, S) + batch * max(L, S)


def layer_terms(S, cross=False):
    """One encoder (or decoder, with cross=True) layer: its attention(s), the LayerNorms' mean and
    variance (2 E each), the feed-forward network (E, then FF)."""
    attention = attention_terms(E, S) * (2 if cross else 1)
    norms = 2 * E * (3 if cross else 2)
    return attention + norms + E + FF


def layer_grad_terms(S, L, layers=1, cross=False):
    return 2 * layers * layer_terms(S, cross) + N * max(L, S)


# ============================================================================ MultiheadAttention vs PyTorch
def data(*shape, seed):
    return rng(seed).standard_normal(shape)


SEQ = dict(q=data(L, N, E, seed=1), k=data(S, N, E, seed=2), v=data(S, N, E, seed=3))
BATCH = dict(q=data(N, L, E, seed=4), k=data(N, S, E, seed=5), v=data(N, S, E, seed=6))
X_SEQ, X_BATCH, X_UNBATCHED = data(L, N, E, seed=7), data(N, L, E, seed=8), data(L, E, seed=9)
CAUSAL = np.triu(np.full((L, L), -np.inf), 1)

# name: (constructor kwargs, inputs (q, k, v), forward kwargs); masks are numpy arrays, passed as tensors
MHA_CASES = {
    "self_attention": (dict(), (X_SEQ, X_SEQ, X_SEQ), dict()),
    "cross_attention": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict()),
    "batch_first": (dict(batch_first=True), (BATCH["q"], BATCH["k"], BATCH["v"]), dict()),
    "batch_first_self": (dict(batch_first=True), (X_BATCH, X_BATCH, X_BATCH), dict()),
    "unbatched": (dict(), (X_UNBATCHED, SEQ["k"][:, 0], SEQ["v"][:, 0]), dict()),
    "unbatched_batch_first_masks": (dict(batch_first=True), (X_UNBATCHED, SEQ["k"][:, 0], SEQ["v"][:, 0]),
                                    dict(attn_mask=bool_mask((H, L, S), 10), key_padding_mask=bool_mask((S,), 11))),
    "bool_attn_mask": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(attn_mask=bool_mask((L, S), 12))),
    "bool_attn_mask_3d": (dict(batch_first=True), (BATCH["q"], BATCH["k"], BATCH["v"]),
                          dict(attn_mask=bool_mask((N * H, L, S), 13))),
    "float_attn_mask": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(attn_mask=float_mask((L, S), 14))),
    "float_attn_mask_3d": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(attn_mask=float_mask((N * H, L, S), 16))),
    "key_padding_mask": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(key_padding_mask=bool_mask((N, S), 18))),
    "float_key_padding_mask": (dict(batch_first=True), (BATCH["q"], BATCH["k"], BATCH["v"]),
                               dict(key_padding_mask=float_mask((N, S), 19))),
    "both_masks": (dict(batch_first=True), (BATCH["q"], BATCH["k"], BATCH["v"]),
                   dict(attn_mask=bool_mask((L, S), 21), key_padding_mask=bool_mask((N, S), 22))),
    "both_float_masks": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]),
                         dict(attn_mask=float_mask((L, S), 23), key_padding_mask=float_mask((N, S), 25))),
    "is_causal": (dict(), (X_SEQ, X_SEQ, X_SEQ), dict(attn_mask=CAUSAL, is_causal=True)),
    "is_causal_no_weights": (dict(batch_first=True), (X_BATCH, X_BATCH, X_BATCH),
                             dict(attn_mask=CAUSAL, is_causal=True, need_weights=False)),
    "need_weights_false": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(need_weights=False)),
    "need_weights_false_masks": (dict(batch_first=True), (BATCH["q"], BATCH["k"], BATCH["v"]),
                                 dict(need_weights=False, attn_mask=bool_mask((N * H, L, S), 27),
                                      key_padding_mask=bool_mask((N, S), 28))),
    "need_weights_false_float_mask": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]),
                                      dict(need_weights=False, attn_mask=float_mask((L, S), 29))),
    "per_head_weights": (dict(), (SEQ["q"], SEQ["k"], SEQ["v"]),
                         dict(average_attn_weights=False, key_padding_mask=bool_mask((N, S), 31))),
    "per_head_weights_unbatched": (dict(), (X_UNBATCHED, X_UNBATCHED, X_UNBATCHED),
                                   dict(average_attn_weights=False)),
    "kdim_vdim": (dict(kdim=5, vdim=3), (SEQ["q"], data(S, N, 5, seed=32), data(S, N, 3, seed=33)),
                  dict(key_padding_mask=bool_mask((N, S), 34))),
    "kdim_vdim_batch_first_no_weights": (dict(kdim=6, vdim=7, batch_first=True),
                                         (BATCH["q"], data(N, S, 6, seed=35), data(N, S, 7, seed=36)),
                                         dict(need_weights=False)),
    "no_bias": (dict(bias=False), (SEQ["q"], SEQ["k"], SEQ["v"]), dict(attn_mask=bool_mask((L, S), 37))),
    "one_head": (dict(num_heads=1), (SEQ["q"], SEQ["k"], SEQ["v"]), dict()),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MHA_CASES))
def test_multihead_attention_matches_torch(name, dtype):
    kwargs, (q, k, v), forward_kwargs = MHA_CASES[name]
    kwargs = dict(dict(embed_dim=E, num_heads=H), **kwargs)
    masks = {key: value for key, value in forward_kwargs.items() if isinstance(value, np.ndarray)}
    flags = {key: value for key, value in forward_kwargs.items() if key not in masks}
    names = list(masks)

    def call(module, q, k, v, *mask_values):
        lib_masks = dict(zip(names, mask_values))
        return module(q, k, v, **lib_masks, **flags)

    e_in = max(E, kwargs.get("kdim", E), kwargs.get("vdim", E))
    S_ = k.shape[1] if k.ndim == 3 and kwargs.get("batch_first") else k.shape[0]
    compare(lambda nn: nn.MultiheadAttention(**kwargs), [q, k, v], list(masks.values()), call, dtype,
            attention_terms(e_in, S_), attention_grad_terms(e_in, L, S_))


# ============================================================================ encoder and decoder vs PyTorch
ENCODER_CASES = {  # name: (constructor kwargs, src, forward kwargs)
    "post_norm": (dict(), X_SEQ, dict()),
    "norm_first": (dict(norm_first=True), X_SEQ, dict(src_key_padding_mask=bool_mask((N, L), 40))),
    "gelu": (dict(activation="gelu"), X_SEQ, dict(src_mask=bool_mask((L, L), 41))),
    "gelu_callable_batch_first": (dict(activation=lambda nn: nn.functional.gelu, batch_first=True), X_BATCH,
                                  dict(src_mask=float_mask((N * H, L, L), 42))),
    "causal_and_padding": (dict(batch_first=True), X_BATCH,
                           dict(src_mask=CAUSAL, is_causal=True, src_key_padding_mask=bool_mask((N, L), 44))),
    "unbatched": (dict(norm_first=True), X_UNBATCHED, dict(src_mask=CAUSAL)),
    "no_bias": (dict(bias=False, layer_norm_eps=1e-3), X_SEQ, dict()),
}


def build(kwargs, nn):
    """The constructor kwargs in `nn`'s library (an activation given as a function of nn is resolved)."""
    return {k: (v(nn) if callable(v) and k == "activation" else v) for k, v in kwargs.items()}


def split_masks(forward_kwargs):
    masks = {key: value for key, value in forward_kwargs.items() if isinstance(value, np.ndarray)}
    return masks, {key: value for key, value in forward_kwargs.items() if key not in masks}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ENCODER_CASES))
def test_encoder_layer_matches_torch(name, dtype):
    kwargs, src, forward_kwargs = ENCODER_CASES[name]
    masks, flags = split_masks(forward_kwargs)

    def call(module, src, *mask_values):
        return module(src, **dict(zip(masks, mask_values)), **flags)

    compare(lambda nn: nn.TransformerEncoderLayer(E, H, FF, **build(kwargs, nn)), [src], list(masks.values()), call,
            dtype, layer_terms(L), layer_grad_terms(L, L))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_matches_torch(norm_first, dtype):
    def make(nn):
        layer = nn.TransformerEncoderLayer(E, H, FF, norm_first=norm_first, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(E))

    def call(module, src, mask, padding):
        return module(src, mask=mask, src_key_padding_mask=padding)

    _, theirs = compare(make, [X_BATCH], [CAUSAL, bool_mask((N, L), 45)], call, dtype,
                        2 * layer_terms(L) + 2 * E, layer_grad_terms(L, L, layers=2))
    assert [n for n, _ in theirs.named_parameters()][:2] == ["layers.0.self_attn.in_proj_weight",
                                                             "layers.0.self_attn.in_proj_bias"]


DECODER_CASES = {  # name: (constructor kwargs, tgt, memory, forward kwargs)
    "post_norm": (dict(), X_SEQ, SEQ["k"], dict(tgt_mask=CAUSAL)),
    "norm_first_gelu": (dict(norm_first=True, activation="gelu"), X_SEQ, SEQ["k"],
                        dict(tgt_mask=CAUSAL, tgt_is_causal=True, memory_key_padding_mask=bool_mask((N, S), 50))),
    "batch_first_masks": (dict(batch_first=True), X_BATCH, BATCH["k"],
                          dict(tgt_mask=bool_mask((L, L), 51), memory_mask=float_mask((L, S), 52),
                               tgt_key_padding_mask=bool_mask((N, L), 54))),
    "unbatched": (dict(), X_UNBATCHED, SEQ["k"][:, 1], dict(tgt_mask=CAUSAL, memory_mask=bool_mask((L, S), 55))),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(DECODER_CASES))
def test_decoder_layer_matches_torch(name, dtype):
    kwargs, tgt, memory, forward_kwargs = DECODER_CASES[name]
    masks, flags = split_masks(forward_kwargs)

    def call(module, tgt, memory, *mask_values):
        return module(tgt, memory, **dict(zip(masks, mask_values)), **flags)

    compare(lambda nn: nn.TransformerDecoderLayer(E, H, FF, **kwargs), [tgt, memory], list(masks.values()), call, dtype,
            layer_terms(S, cross=True), layer_grad_terms(S, L, cross=True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_decoder_stack_matches_torch(dtype):
    def make(nn):
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), num_layers=2, norm=nn.LayerNorm(E))

    def call(module, tgt, memory, tgt_mask, padding):
        return module(tgt, memory, tgt_mask=tgt_mask, memory_key_padding_mask=padding)

    compare(make, [X_SEQ, SEQ["k"]], [CAUSAL, bool_mask((N, S), 56)], call, dtype,
            2 * layer_terms(S, cross=True) + 2 * E, layer_grad_terms(S, L, layers=2, cross=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first, norm_first", [(False, False), (True, True)])
def test_full_transformer_matches_torch(batch_first, norm_first, dtype):
    torch = pytest.importorskip("torch")

    def make(nn):
        return nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF,
                              batch_first=batch_first, norm_first=norm_first)

    np.testing.assert_array_equal(Transformer.generate_square_subsequent_mask(L).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(L).numpy())
    tgt_mask = Transformer.generate_square_subsequent_mask(L).numpy()
    src, tgt = (SEQ["k"], X_SEQ) if not batch_first else (BATCH["k"], X_BATCH)
    padding = bool_mask((N, S), 57)

    def call(module, src, tgt, tgt_mask, src_padding, memory_padding):
        return module(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_padding,
                      memory_key_padding_mask=memory_padding)

    terms = 2 * layer_terms(S) + 2 * E + 2 * layer_terms(S, cross=True) + 2 * E
    compare(make, [src, tgt], [tgt_mask, padding, padding], call, dtype, terms, 2 * terms + N * S)


def test_eval_without_gradients_agrees_with_torchs_fast_path_at_the_real_positions():
    """PyTorch's inference fast path (eval, no_grad, batch_first, a padding mask) packs the batch
    into nested tensors and gives 0 at the padded positions; elsewhere it must agree with ours."""
    def make(nn):
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, batch_first=True), num_layers=2)

    torch, ours, theirs = twins(make, np.float32)
    padding = np.zeros((N, L), dtype=bool)
    padding[0, 2:] = padding[1, 3:] = True  # left-aligned padding, as the fast path needs
    x = X_BATCH.astype(np.float32)
    with torch.no_grad(), warnings.catch_warnings():  # (PyTorch's "nested tensors are a prototype" warning)
        warnings.simplefilter("ignore")
        ref = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(padding)).numpy()
    with minigrad.no_grad():
        out = ours(minigrad.tensor(x), src_key_padding_mask=minigrad.tensor(padding)).numpy()
    real = ~padding
    assert_close(out[real], ref[real], np.float32, magnitude(ref), 2 * layer_terms(L))
    assert (ref[padding] == 0).all() and (out[padding] != 0).all()  # (the documented difference)


# ============================================================================ gradient checks (no PyTorch)
def mha64(**kwargs):
    return MultiheadAttention(E, H, **kwargs).double().eval()


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_gradcheck(need_weights):
    """Every element of query, key, value and every parameter; masks of both kinds; the fast path
    (need_weights=False) and the explicit one."""
    mha = mha64()
    q, k, v = leaf(data(L, N, E, seed=60)), leaf(data(S, N, E, seed=61)), leaf(data(S, N, E, seed=62))
    attn_mask, padding = bool_mask((L, S), 63), bool_mask((N, S), 64)

    def fn(q, k, v):
        out, weights = mha(q, k, v, key_padding_mask=padding, attn_mask=attn_mask, need_weights=need_weights)
        return out if weights is None else out.sum(-1)[..., None] + 3 * weights.transpose(0, 1)

    report = gradcheck_module(mha, fn, [q, k, v])
    assert all(r.checked == r.size for r in report.inputs)


def test_multihead_attention_gradcheck_per_head_weights_float_mask_kdim_vdim():
    mha = MultiheadAttention(E, H, kdim=3, vdim=5, batch_first=True).double().eval()
    q, k, v = leaf(data(N, L, E, seed=65)), leaf(data(N, S, 3, seed=66)), leaf(data(N, S, 5, seed=67))
    mask = float_mask((N * H, L, S), 68)

    def fn(q, k, v):
        out, weights = mha(q, k, v, attn_mask=mask, average_attn_weights=False)
        return out.sum(-1)[:, None, :, None] + weights

    report = gradcheck_module(mha, fn, [q, k, v])
    assert all(r.checked == r.size for r in report.inputs)
    assert len(report.inputs) == 3 + len(list(mha.parameters())) == 3 + 6


def test_a_learned_float_mask_gets_its_gradient():
    """A float attn_mask that requires grad (a learned bias on the scores) stays in the graph."""
    mha = mha64()
    x = leaf(data(L, N, E, seed=69))
    bias = leaf(rng(70).uniform(-1, 1, (L, L)))
    report = minigrad.gradcheck(lambda x, bias: mha(x, x, x, attn_mask=bias)[0], [x, bias], **TIGHT)
    assert all(r.checked == r.size for r in report.inputs)


def test_encoder_layer_gradcheck():
    layer = TransformerEncoderLayer(E, H, FF, dropout=0.0).double().eval()
    src = leaf(data(L, N, E, seed=71))
    padding = bool_mask((N, L), 72)
    report = gradcheck_module(layer, lambda src: layer(src, src_mask=CAUSAL, src_key_padding_mask=padding), [src])
    assert all(r.checked == r.size for r in report.inputs)


def test_decoder_layer_gradcheck():
    layer = TransformerDecoderLayer(E, H, FF, norm_first=True, activation="gelu", batch_first=True).double().eval()
    tgt, memory = leaf(data(N, L, E, seed=73)), leaf(data(N, S, E, seed=74))
    padding = bool_mask((N, S), 75)

    def fn(tgt, memory):
        return layer(tgt, memory, tgt_mask=Transformer.generate_square_subsequent_mask(L),
                     memory_key_padding_mask=padding)

    report = gradcheck_module(layer, fn, [tgt, memory])
    assert all(r.checked == r.size for r in report.inputs)


# ============================================================================ names, shapes, copies
MHA_KEYS = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
ENCODER_LAYER_KEYS = ([f"self_attn.{k}" for k in MHA_KEYS] +
                      [f"{m}.{p}" for m in ("linear1", "linear2", "norm1", "norm2") for p in ("weight", "bias")])
DECODER_LAYER_KEYS = ([f"self_attn.{k}" for k in MHA_KEYS] + [f"multihead_attn.{k}" for k in MHA_KEYS] +
                      [f"{m}.{p}" for m in ("linear1", "linear2", "norm1", "norm2", "norm3")
                       for p in ("weight", "bias")])


def test_parameter_names_and_shapes_are_pytorchs():
    mha = MultiheadAttention(E, H)
    assert list(mha.state_dict()) == MHA_KEYS
    assert {n: p.shape for n, p in mha.named_parameters()} == {
        "in_proj_weight": (3 * E, E), "in_proj_bias": (3 * E,), "out_proj.weight": (E, E), "out_proj.bias": (E,)}
    other = MultiheadAttention(E, H, kdim=3, vdim=5)
    assert {n: p.shape for n, p in other.named_parameters()} == {
        "q_proj_weight": (E, E), "k_proj_weight": (E, 3), "v_proj_weight": (E, 5), "in_proj_bias": (3 * E,),
        "out_proj.weight": (E, E), "out_proj.bias": (E,)}
    assert other.in_proj_weight is None and mha.q_proj_weight is None
    assert list(MultiheadAttention(E, H, bias=False).state_dict()) == ["in_proj_weight", "out_proj.weight"]
    assert list(TransformerEncoderLayer(E, H, FF).state_dict()) == ENCODER_LAYER_KEYS
    assert list(TransformerDecoderLayer(E, H, FF).state_dict()) == DECODER_LAYER_KEYS
    no_bias = TransformerEncoderLayer(E, H, FF, bias=False)
    assert [k for k in no_bias.state_dict() if k.endswith("bias")] == []
    model = Transformer(E, H, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=FF)
    expected = ([f"encoder.layers.{i}.{k}" for i in range(2) for k in ENCODER_LAYER_KEYS] +
                ["encoder.norm.weight", "encoder.norm.bias"] +
                [f"decoder.layers.{i}.{k}" for i in range(3) for k in DECODER_LAYER_KEYS] +
                ["decoder.norm.weight", "decoder.norm.bias"])
    assert list(model.state_dict()) == expected
    layer = TransformerEncoderLayer(E, H, FF)
    for name in ("self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"):
        assert isinstance(getattr(layer, name), nn.Module), name
    assert layer.linear1.weight.shape == (FF, E) and layer.linear2.weight.shape == (E, FF)


def test_initialisation_is_pytorchs():
    """xavier_uniform_ on in_proj_weight (bound sqrt(6 / (E + 3E))), biases at 0; nn.Transformer
    re-draws every matrix with xavier_uniform_."""
    mha = MultiheadAttention(64, 4)
    w = mha.in_proj_weight.numpy()
    bound = np.sqrt(6 / (64 + 3 * 64))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound and abs(w.std() - bound / np.sqrt(3)) < 0.01
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    assert np.abs(mha.out_proj.weight.numpy()).max() <= 1 / np.sqrt(64)
    assert mha.in_proj_weight.dtype == np.float32
    model = Transformer(32, 4, 1, 1, dim_feedforward=96)
    w = model.encoder.layers[0].linear1.weight.numpy()  # (96, 32): xavier's bound, not Linear's 1/sqrt(32)
    assert np.abs(w).max() > 1 / np.sqrt(32) and np.abs(w).max() <= np.sqrt(6 / (96 + 32))


@pytest.mark.parametrize("batch_first", [False, True])
def test_shapes(batch_first):
    mha = MultiheadAttention(E, H, batch_first=batch_first, kdim=3, vdim=5)

    def seq(T, width):
        return minigrad.randn(N, T, width) if batch_first else minigrad.randn(T, N, width)

    out, weights = mha(seq(L, E), seq(S, 3), seq(S, 5))
    assert out.shape == ((N, L, E) if batch_first else (L, N, E)) and weights.shape == (N, L, S)
    out, weights = mha(seq(L, E), seq(S, 3), seq(S, 5), average_attn_weights=False)
    assert weights.shape == (N, H, L, S)
    out, weights = mha(minigrad.randn(L, E), minigrad.randn(S, 3), minigrad.randn(S, 5), average_attn_weights=False)
    assert out.shape == (L, E) and weights.shape == (H, L, S)  # (unbatched: batch_first ignored)
    out, weights = mha(minigrad.randn(L, E), minigrad.randn(S, 3), minigrad.randn(S, 5), need_weights=False)
    assert out.shape == (L, E) and weights is None
    assert_close(mha(seq(L, E), seq(S, 3), seq(S, 5))[1].numpy().sum(-1), np.ones((N, L)), np.float32, 1.0, S)
    model = Transformer(E, H, 1, 1, FF, batch_first=batch_first)
    src, tgt = seq(S, E), seq(L, E)
    assert model(src, tgt, tgt_mask=Transformer.generate_square_subsequent_mask(L)).shape == tgt.shape
    assert model(minigrad.randn(S, E), minigrad.randn(L, E)).shape == (L, E)
    assert model.encoder(src).shape == src.shape and model.decoder(tgt, src).shape == tgt.shape


def test_encoder_layers_are_independent_copies():
    layer = TransformerEncoderLayer(E, H, FF)
    encoder = TransformerEncoder(layer, num_layers=3)
    assert len(encoder.layers) == 3 and encoder.num_layers == 3 and encoder.norm is None
    assert all(copy_ is not layer for copy_ in encoder.layers)
    first = [p.numpy().copy() for p in encoder.layers[0].parameters()]
    for other in encoder.layers[1:]:  # copies: the prototype's values, in parameters of their own
        for p, q, r in zip(encoder.layers[0].parameters(), other.parameters(), layer.parameters()):
            assert p is not q and np.shares_memory(p.numpy(), q.numpy()) is False
            np.testing.assert_array_equal(q.numpy(), r.numpy())
    encoder.layers[0].self_attn.in_proj_weight.numpy()[...] = 7.0
    encoder.layers[0].linear1.weight.data = np.zeros((FF, E), dtype=np.float32)
    for other in (*encoder.layers[1:], layer):
        np.testing.assert_array_equal(other.self_attn.in_proj_weight.numpy(), first[0])
        assert other.linear1.weight.numpy().any()
    # and they train apart: a gradient step on the stack moves each layer by its own gradient
    decoder = TransformerDecoder(TransformerDecoderLayer(E, H, FF, dropout=0.0), num_layers=2)
    decoder(minigrad.randn(L, N, E), minigrad.randn(S, N, E)).square().sum().backward()
    g0, g1 = (lay.linear1.weight.grad.numpy() for lay in decoder.layers)
    assert not np.allclose(g0, g1)


def test_masks_as_pytorch():
    """bool True = NOT allowed (the opposite of F.scaled_dot_product_attention's mask), and the
    float mask of -inf / 0 means the same; a padded key gets weight 0; a key padding mask is the
    same as an attn_mask that blocks that key for every query."""
    mha = mha64()
    x = minigrad.tensor(data(L, N, E, seed=80))
    blocked = bool_mask((L, L), 81, p=0.5)
    _, w_bool = mha(x, x, x, attn_mask=minigrad.tensor(blocked), average_attn_weights=False)
    assert (w_bool.numpy()[:, :, blocked] == 0).all() and (w_bool.numpy()[:, :, ~blocked] > 0).all()
    out_float, w_float = mha(x, x, x, attn_mask=np.where(blocked, -np.inf, 0.0), average_attn_weights=False)
    np.testing.assert_array_equal(w_float.numpy(), w_bool.numpy())
    # the same with minigrad's own convention: F.scaled_dot_product_attention takes True = allowed
    xb = x.transpose(0, 1)  # (N, L, E)
    heads = [(xb @ w.transpose(0, 1) + b).reshape(N, L, H, E // H).transpose(1, 2)  # (N, H, L, d)
             for w, b in zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3))]
    ref = nn.functional.scaled_dot_product_attention(*heads, mask=~blocked)
    ref = mha.out_proj(ref.transpose(1, 2).reshape(N, L, E)).transpose(0, 1)
    assert_close(out_float, ref.numpy(), np.float64, magnitude(ref.numpy()), attention_terms(E, L))
    padding = bool_mask((N, L), 82, p=0.4)
    _, w_pad = mha(x, x, x, key_padding_mask=padding)
    assert (w_pad.numpy().transpose(0, 2, 1)[padding] == 0).all()
    as_attn = np.repeat(np.broadcast_to(padding[:, None, :], (N, L, L)), H, axis=0)  # (N * H, L, S)
    ref = mha(x, x, x, key_padding_mask=padding)[0].numpy()
    assert_close(mha(x, x, x, attn_mask=as_attn)[0], ref, np.float64, magnitude(ref), attention_terms(E, L))


def test_fast_path_and_explicit_path_agree():
    mha = mha64(batch_first=True)
    x = minigrad.tensor(data(N, L, E, seed=83))
    for masks in (dict(), dict(attn_mask=Transformer.generate_square_subsequent_mask(L)),
                  dict(key_padding_mask=bool_mask((N, L), 84), attn_mask=bool_mask((N * H, L, L), 85))):
        fast, none = mha(x, x, x, need_weights=False, **masks)
        slow, _ = mha(x, x, x, **masks)
        assert none is None
        assert_close(fast, slow.numpy(), np.float64, magnitude(slow.numpy()), attention_terms(E, L))


def test_a_query_with_every_key_blocked_gets_zero_weights():
    """Its output is out_proj.bias, with a bool, 0/-inf or other float mask, with or without the
    weights. (PyTorch's fused path, need_weights=False, gives the same; its explicit path NaN.)"""
    mha = mha64()
    mha.out_proj.bias.numpy()[...] = rng(88).standard_normal(E)
    x = minigrad.tensor(data(L, N, E, seed=86))
    blocked = np.zeros((L, L), dtype=bool)
    blocked[1] = True
    general = float_mask((L, L), 89)
    general[1] = -np.inf
    for mask in (blocked, np.where(blocked, -np.inf, 0.0), general):
        for need_weights in (True, False):
            out, weights = mha(x, x, x, attn_mask=mask, need_weights=need_weights)
            assert np.isfinite(out.numpy()).all()
            np.testing.assert_array_equal(out.numpy()[1], np.broadcast_to(mha.out_proj.bias.numpy(), (N, E)))
            assert weights is None or (weights.numpy()[:, 1] == 0).all()
    x = leaf(data(L, N, E, seed=90))
    report = minigrad.gradcheck(lambda x: mha(x, x, x, attn_mask=general)[0], [x], **TIGHT)
    assert report.inputs[0].checked == x.numel()
    if (torch := _torch()) is not None:  # PyTorch's fused path: the same
        theirs = torch.nn.MultiheadAttention(E, H).double().eval()
        theirs.load_state_dict({k: torch.tensor(v) for k, v in mha.state_dict().items()})
        tx = torch.tensor(x.numpy())
        for mask in (blocked, general):
            ref, _ = theirs(tx, tx, tx, attn_mask=torch.tensor(mask), need_weights=False)
            assert_same_as_torch(mha(x, x, x, attn_mask=mask)[0], ref, np.float64, magnitude(ref.detach().numpy()),
                                 attention_terms(E, L))


@pytest.mark.parametrize("training, kwargs, fast", [
    (False, dict(), True),
    (False, dict(attn_mask=bool_mask((L, L), 91), key_padding_mask=bool_mask((N, L), 92)), True),
    (False, dict(attn_mask=CAUSAL), True),  # (a 0/-inf float mask is a bool mask in disguise)
    (False, dict(attn_mask=float_mask((L, L), 93)), False),  # (a general float mask: added to the scores)
    (True, dict(), False),  # (dropout on the weights)
])
def test_the_fused_fast_path_is_taken_when_it_can_be(training, kwargs, fast, monkeypatch):
    fused = []
    original = nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(nn.functional, "scaled_dot_product_attention", lambda *a, **k: fused.append(1) or
                        original(*a, **k))
    mha = MultiheadAttention(E, H, dropout=0.1).train(training)
    x = minigrad.randn(L, N, E)
    mha(x, x, x, need_weights=False, **kwargs)
    assert fused == ([1] if fast else [])
    mha(x, x, x, **kwargs)  # the weights asked for: never
    assert fused == ([1] if fast else [])


def test_dropout_acts_in_training_only():
    mha = MultiheadAttention(E, H, dropout=0.5).double()
    x = minigrad.tensor(data(L, N, E, seed=87))
    _, weights = mha(x, x, x, average_attn_weights=False)
    assert 0.25 < (weights.numpy() == 0).mean() < 0.75  # about half the weights dropped
    out_train, _ = mha(x, x, x, need_weights=False)  # (dropout: the explicit path, weights not returned)
    mha.eval()
    out_eval, w_eval = mha(x, x, x)
    assert not (w_eval.numpy() == 0).any()
    assert_close(w_eval.numpy().sum(-1), np.ones((N, L)), np.float64, 1.0, L)
    assert not np.allclose(out_train.numpy(), out_eval.numpy())
    layer = TransformerEncoderLayer(E, H, FF).double()  # dropout 0.1 by default
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


def test_state_dict_round_trip_and_to_dtype():
    model = Transformer(E, H, 1, 2, FF)
    other = Transformer(E, H, 1, 2, FF)
    other.load_state_dict(model.state_dict())
    model.eval(), other.eval()
    src, tgt = minigrad.randn(S, N, E), minigrad.randn(L, N, E)
    np.testing.assert_array_equal(model(src, tgt).numpy(), other(src, tgt).numpy())
    model.double()
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert model(src.double(), tgt.double()).dtype == np.float64
    assert MultiheadAttention(E, H, dtype=np.float64).in_proj_weight.dtype == np.float64


def test_generate_square_subsequent_mask():
    mask = Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == np.float32 and mask.shape == (4, 4)
    expected = np.where(np.arange(4)[None, :] > np.arange(4)[:, None], -np.inf, 0.0)  # -inf where j > i
    np.testing.assert_array_equal(mask.numpy(), expected)
    assert Transformer.generate_square_subsequent_mask(3, dtype=np.float64).dtype == np.float64
    # minigrad's own causal mask (True = allowed) is its == 0
    from transformer import causal_mask
    np.testing.assert_array_equal(causal_mask(4).numpy(), mask.numpy() == 0)


def test_a_tutorial_style_model_trains():
    """PyTorch's "language modeling with nn.Transformer" pattern: an embedding, a TransformerEncoder
    with a causal float mask, a Linear head; a few Adam steps on one batch lower the loss."""
    class Model(nn.Module):
        def __init__(self, vocab=11):
            super().__init__()
            self.embedding = nn.Embedding(vocab, E)
            self.encoder = TransformerEncoder(TransformerEncoderLayer(E, H, FF, dropout=0.1), 2)
            self.head = nn.Linear(E, vocab)

        def forward(self, src, mask):
            return self.head(self.encoder(self.embedding(src) * math.sqrt(E), mask))

    model = Model()
    ids = rng(90).integers(0, 11, (6, N))  # (T, N)
    src, targets = ids[:-1], ids[1:]
    mask = Transformer.generate_square_subsequent_mask(len(src))
    opt = minigrad.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(src, mask).reshape(-1, 11), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# ============================================================================ errors
def test_errors_are_clear():
    with pytest.raises(ValueError) as info:
        MultiheadAttention(10, 3)
    has_all(str(info.value), "MultiheadAttention", "embed_dim = 10", "not divisible", "num_heads = 3")
    with pytest.raises(ValueError, match="not divisible"):
        TransformerEncoderLayer(10, 4)
    with pytest.raises(NotImplementedError, match="add_bias_kv=True.*not supported"):
        MultiheadAttention(E, H, add_bias_kv=True)
    with pytest.raises(NotImplementedError, match="add_zero_attn=True.*not supported"):
        MultiheadAttention(E, H, 0.0, True, False, True)  # (PyTorch's order: dropout, bias, add_bias_kv, add_zero_attn)
    with pytest.raises(ValueError, match="activation must be 'relu', 'gelu' or a callable, got 'tanh'"):
        TransformerEncoderLayer(E, H, activation="tanh")
    with pytest.raises(ValueError, match="num_layers must be a positive integer"):
        TransformerEncoder(TransformerEncoderLayer(E, H), 0)

    mha = MultiheadAttention(E, H)
    q, kv = minigrad.randn(L, N, E), minigrad.randn(S, N, E)
    with pytest.raises(ValueError) as info:
        mha(q, kv, kv, attn_mask=np.zeros((S, L), dtype=bool))
    has_all(str(info.value), "attn_mask", "(L, S) or (N * num_heads, L, S)", f"({L}, {S})", f"({N * H}, {L}, {S})",
            f"got shape ({S}, {L})")
    with pytest.raises(ValueError, match=r"attn_mask must be .* got shape \(3, 4, 5\)"):
        mha(q, kv, kv, attn_mask=np.zeros((N, L, S), dtype=bool))  # (one per batch item, not per head)
    with pytest.raises(ValueError) as info:
        mha(q, kv, kv, key_padding_mask=np.zeros((S, N), dtype=bool))
    has_all(str(info.value), "key_padding_mask", "(N, S)", f"({N}, {S})", f"got shape ({S}, {N})")
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(S,\)"):
        mha(minigrad.randn(L, E), minigrad.randn(S, E), minigrad.randn(S, E), key_padding_mask=np.zeros((1, S), bool))
    with pytest.raises(ValueError, match=r"attn_mask must be \(L, S\) or \(num_heads, L, S\)"):
        mha(minigrad.randn(L, E), minigrad.randn(S, E), minigrad.randn(S, E), attn_mask=np.zeros((N * H, L, S), bool))
    with pytest.raises(TypeError, match="attn_mask must be bool .* or float .* got int64"):
        mha(q, kv, kv, attn_mask=np.zeros((L, S), dtype=np.int64))
    with pytest.raises(ValueError, match="is_causal=True .* needs that mask"):
        mha(q, q, q, is_causal=True)
    with pytest.raises(ValueError, match="query must have 8 features"):
        mha(minigrad.randn(L, N, 6), kv, kv)
    with pytest.raises(ValueError, match="key must have 8 features .*kdim"):
        mha(q, minigrad.randn(S, N, 3), kv)
    with pytest.raises(ValueError, match="different batch sizes"):
        mha(q, minigrad.randn(S, N + 1, E), minigrad.randn(S, N + 1, E))
    with pytest.raises(ValueError, match="key and value must be 3-D"):
        mha(q, minigrad.randn(S, E), minigrad.randn(S, E))
    with pytest.raises(ValueError, match="same sequence and batch axes"):
        mha(q, kv, minigrad.randn(S + 1, N, E))
    with pytest.raises(ValueError, match="query must be"):
        mha(minigrad.randn(E), minigrad.randn(E), minigrad.randn(E))
    with pytest.raises(ValueError, match="TransformerEncoderLayer: src must be"):
        TransformerEncoderLayer(E, H)(minigrad.randn(L, N, E + 1))
    with pytest.raises(ValueError, match="TransformerDecoderLayer: memory must be"):
        TransformerDecoderLayer(E, H)(q, minigrad.randn(S, N, 2))
    model = Transformer(E, H, 1, 1, FF)
    with pytest.raises(ValueError, match="src .* and tgt .* must have the same batch size"):
        model(minigrad.randn(S, N, E), minigrad.randn(L, N + 1, E))
    with pytest.raises(ValueError, match="d_model = 8"):
        model(minigrad.randn(S, N, E), minigrad.randn(L, N, 4))


def test_the_nn_names_are_the_modules_of_this_file():
    """(When minigrad.nn exports them, they are these classes.)"""
    for name in ("MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
                 "TransformerDecoder", "Transformer"):
        if hasattr(nn, name):
            assert getattr(nn, name) is getattr(minigrad.nn.transformer, name)
    assert copy.deepcopy(MultiheadAttention(E, H)).in_proj_weight.shape == (3 * E, E)
