# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The Transformer of "Attention Is All You Need", by experiment
#
# The lesson's worked examples with their numbers, the pictures, the paper's parameter count, and an
# encoder-decoder Transformer that learns to copy. Every layer used here is in `transformer/`, built
# only from minigrad ops, and each number the lesson gives is checked by an `assert` in the cell
# that shows it: a notebook that runs is a notebook that is right.

# %%
import math
import numpy as np
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad.nn import functional as F
from transformer import Transformer, scaled_dot_product_attention, sinusoidal_positional_encoding

np.set_printoptions(precision=4, suppress=True)
mg.manual_seed(0);

# %% [markdown]
# ## 1. Positional encoding (section 3.5)
#
# Attention treats its input as a set; the model learns word order only from what is added to each
# embedding. The paper adds a fixed table of sines and cosines:
#
# $$PE_{(pos, 2i)} = \sin(pos / 10000^{2i/d_{model}}), \qquad PE_{(pos, 2i+1)} = \cos(pos / 10000^{2i/d_{model}})$$
#
# For $d_{model} = 6$ the three frequencies are $1$, $10000^{-2/6} = 1/21.54$ and $10000^{-4/6} = 1/464.2$.

# %%
table = sinusoidal_positional_encoding(4, 6, dtype=mg.float64).numpy()
print("pos   sin i=0   cos i=0   sin i=1   cos i=1   sin i=2   cos i=2")
for pos, row in enumerate(table):
    print(f"{pos:3d}", "".join(f"{x:10.4f}" for x in row))

assert np.allclose(table[0], [0, 1, 0, 1, 0, 1])
assert np.allclose(table[1], [0.841, 0.540, 0.046, 0.999, 0.002, 1.000], atol=5e-4)  # PE(1), 3 decimals

# %% [markdown]
# Over 100 positions and 64 features: the left columns turn fast (wavelength $2\pi$), the right
# ones so slowly that they barely change. Each position gets a different pattern, and a fixed
# offset $k$ is the same rotation of every sine/cosine pair wherever it starts, so $PE(p) \cdot PE(p + k)$
# depends on $k$ only.

# %%
pe = sinusoidal_positional_encoding(100, 64).numpy()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
image = ax1.imshow(pe, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
ax1.set_xlabel("feature (even: sin, odd: cos)"); ax1.set_ylabel("position"); fig.colorbar(image, ax=ax1)
ax1.set_title("PE, 100 positions x 64 features")
offsets = np.arange(50)
for p in (0, 20, 40):
    ax2.plot(offsets, [pe[p] @ pe[p + k] for k in offsets], label=f"p = {p}")
ax2.set_xlabel("offset k"); ax2.set_ylabel("PE(p) . PE(p + k)"); ax2.legend(); ax2.set_title("similarity by offset")
plt.show()
assert np.allclose([pe[0] @ pe[k] for k in offsets], [pe[40] @ pe[40 + k] for k in offsets], atol=1e-4)

# %% [markdown]
# ## 2. Scaled dot-product attention, Eq. (1)
#
# $$\text{Attention}(Q, K, V) = \text{softmax}\left(\frac{Q K^T}{\sqrt{d_k}}\right) V$$
#
# Three tokens with $d_k = 4$ and $d_v = 3$. Row $i$ of the weights says how much query $i$ takes
# from each value; each row sums to 1.

# %%
Q = mg.tensor([[1., 0, 2, 1], [0, 2, 1, 0], [1, 1, 0, 2]], dtype=mg.float64, requires_grad=True)
K = mg.tensor([[0., 1, 1, 0], [2, 0, 0, 1], [1, 2, 1, 0]], dtype=mg.float64, requires_grad=True)
V = mg.tensor([[1., 0, 1], [1, 1, 0], [0, 1, 1]], dtype=mg.float64, requires_grad=True)

output, weights = scaled_dot_product_attention(Q, K, V)
print("scores = Q K^T / sqrt(4)\n", (Q @ K.transpose()).numpy() / 2)
print("weights\n", weights.numpy())
print("output\n", output.numpy())

# the same by hand, in numpy
s = Q.numpy() @ K.numpy().T / 2
w = np.exp(s - s.max(1, keepdims=True)); w /= w.sum(1, keepdims=True)
assert np.allclose(weights.numpy(), w) and np.allclose(output.numpy(), w @ V.numpy())
assert np.allclose(weights.numpy().sum(axis=1), 1)

# %% [markdown]
# The lesson's practice question: one query $q = [1, 0]$ over three keys $[1, 0], [0, 1], [1, 1]$
# with values $1, 0, 1$. Keys 1 and 3 match $q$ equally (score $1/\sqrt{2}$), key 2 not at all.

# %%
q = mg.tensor([[1., 0]], dtype=mg.float64)
k = mg.tensor([[1., 0], [0, 1], [1, 1]], dtype=mg.float64)
v = mg.tensor([[1.], [0], [1]], dtype=mg.float64)
out, w = scaled_dot_product_attention(q, k, v)
print("weights", w.numpy()[0], " output", out.item())
e = math.exp(1 / math.sqrt(2))
assert np.allclose(w.numpy()[0], [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)])
assert abs(out.item() - 2 * e / (2 * e + 1)) < 1e-12
assert np.allclose(np.round(w.numpy()[0], 3), [0.401, 0.198, 0.401]) and round(out.item(), 3) == 0.802  # the lesson's numbers

# %% [markdown]
# ## 3. The base model's size (Table 3)
#
# The paper's base model: $d_{model} = 512$, 8 heads, 6 encoder and 6 decoder layers, $d_{ff} = 2048$,
# with one 37,000-token vocabulary whose embedding is shared by the encoder, the decoder and the
# output projection. Table 3 rounds it to 65M; counted exactly it is 63.1M: 18.9M for the
# embedding, 3.1M per encoder layer and 4.2M per decoder layer (a second attention block).

# %%
base = Transformer(src_vocab_size=37000, tgt_vocab_size=37000, share_embeddings=True)
n_total = base.num_parameters()
n_embedding = base.src_embed.weight.numpy().size
n_encoder_layer = sum(p.numpy().size for p in base.encoder.layers[0].parameters())
n_decoder_layer = sum(p.numpy().size for p in base.decoder.layers[0].parameters())
print(f"total {n_total:,}; embedding {n_embedding:,}; encoder layer {n_encoder_layer:,}; decoder layer {n_decoder_layer:,}")

d, d_ff = 512, 2048
attention = 4 * (d * d + d)            # W^Q, W^K, W^V, W^O with biases
ffn = d * d_ff + d_ff + d_ff * d + d   # two Linears
norm = 2 * d                           # LayerNorm gain and bias
assert n_embedding == 37000 * d
assert n_encoder_layer == attention + ffn + 2 * norm
assert n_decoder_layer == 2 * attention + ffn + 3 * norm
assert n_total == 63_082_496
del base

# %% [markdown]
# ## 4. An encoder-decoder Transformer learns to copy
#
# A sequence of 9 symbols from 2..10 after a start token; the target is the source itself. A one-layer
# model with $d_{model} = 32$ learns it in 500 steps (a few seconds), and then copies sequences it has
# never seen: the held-out *exact match* is the fraction that greedy decoding reproduces in full.

# %%
from demos import copy_task

result = copy_task.train_small(500, seed=0, eval_every=25)  # progress: a few whole lines in a notebook
steps, train_loss, val_loss = zip(*result["history"])
print(f"{result['seconds']:.1f} s, final loss {result['loss']:.4f}, exact match "
      f"{100 * result['exact_match']:.1f}% of {result['held_out']} held-out sequences")
for src, out in zip(result["src"][:3], result["decoded"][:3]):
    print("source", src, " -> decoded", out)

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.semilogy(steps, train_loss, label="train"); ax.semilogy(steps, val_loss, label="held out")
ax.set_xlabel("step"); ax.set_ylabel("cross-entropy"); ax.legend(); ax.set_title("copy task")
plt.show()
assert result["exact_match"] == 1.0

# %% [markdown]
# ### What the trained model attends to
#
# The decoder position that has just read token $i$ must write token $i+1$, so its
# encoder-decoder (cross) attention should sit on a shifted diagonal: it looks at the source
# position it is about to copy. The decoder's self-attention is a lower triangle: the causal mask
# lets no position see the future.

# %%
model = result["model"]
src, tgt_in, src_labels, tgt_labels = copy_task.attention_example(result)
model.eval()
with mg.no_grad():
    model(mg.tensor(src[None]), mg.tensor(tgt_in[None]))
layer = model.decoder.layers[0]
cross = layer.cross_attn_weights.numpy()[0]   # (heads, T_tgt, T_src)
self_w = layer.self_attn_weights.numpy()[0]

fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
panels = [(cross[0], "cross-attention, head 1", src_labels), (cross[1], "cross-attention, head 2", src_labels),
          (self_w[0], "masked self-attention, head 1", tgt_labels)]
for ax, (w, title, keys) in zip(axes, panels):
    ax.imshow(w, vmin=0, vmax=1)
    ax.set_xticks(range(len(keys)), keys, fontsize=7); ax.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
    ax.set_xlabel("key"); ax.set_title(title, fontsize=10)
axes[0].set_ylabel("query (decoder position)")
plt.show()

assert np.allclose(np.triu(self_w, k=1), 0)   # no weight on the future
best = cross.max(axis=0).argmax(axis=-1)        # the source position each decoder position looks at most
print("decoder position -> most attended source position:", best)
assert list(best) == list(range(1, len(best) + 1))  # the shifted diagonal

# %% [markdown]
# ## 5. The lesson's practice questions, answered by experiment
#
# `demos.lesson` answers the lesson's questions with measurements on the engine (`python -m demos.lesson`
# prints them all). Three of them here, each with the property it shows asserted.
#
# **Q3. Why divide by $\sqrt{d_k}$?** With $d_k = 1024$, random scores $q \cdot k$ have a standard
# deviation of 32. Unscaled, the softmax is nearly one-hot and almost no gradient gets through it.

# %%
from demos import lesson

q3 = lesson.scaling(d_k=1024)
assert q3["ratio"] > 10 and q3["unscaled"]["max_weight"] > 0.9

# %% [markdown]
# **Q6. Masking with $-\infty$.** Adding $-\infty$ to the masked scores before the softmax gives the
# same weights, and the same gradients, as a softmax over the allowed keys only: to the last bit.

# %%
q6 = lesson.masks()
assert q6["same_weights"] and q6["same_grads"]

# %% [markdown]
# **Q10. Why residual connections?** The gradient that reaches the first of a stack of sublayers
# $\tanh(xW + b)$, for stacks of 2 to 24, with and without a residual path and LayerNorm.

# %%
q10 = lesson.residuals()
fig, ax = plt.subplots(figsize=(6, 3.5))
for kind, norms in q10["norms"].items():
    ax.semilogy(q10["depths"], norms, "o-", label=kind)
ax.set_xlabel("sublayers"); ax.set_ylabel("|grad| of the first weight"); ax.legend(fontsize=7)
plt.show()
plain, residual = q10["norms"]["plain"], q10["norms"]["residual"]
assert residual[-1] > 10 * plain[-1]
