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
# # A tiny GPT, trained on your CPU
#
# This notebook trains a character-level GPT (the decoder-only Transformer of `transformer/model.py`,
# built only from minigrad ops) on text that ships with Python, draws its loss curve and samples
# from it. It runs top to bottom in about a minute on two cores.
#
# The steps are nanoGPT's: read a text, turn characters into ids, cut random windows of `block_size`
# characters, train the model to predict each next character, then sample.

# %%
import time
import numpy as np
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad import optim
from transformer import GPT, GPTConfig
from demos.common import builtin_corpus

mg.manual_seed(1337)          # one seed for the weights, dropout and sampling
rng = np.random.default_rng(1337)  # and one for the batches
print("minigrad threads:", mg.get_num_threads())

# %% [markdown]
# ## 1. The text and its characters
#
# `builtin_corpus()` is English prose from the docstrings of Python's standard library, so nothing
# needs downloading. To train on a text of your own, set `TEXT_PATH` in the next cell to its path
# (nanoGPT's `tinyshakespeare.txt`, say); larger texts want more steps.

# %%
TEXT_PATH = None  # e.g. "input.txt"

text = open(TEXT_PATH, encoding="utf-8").read() if TEXT_PATH else builtin_corpus()
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
encode = lambda s: np.array([stoi[c] for c in s], dtype=np.int64)
decode = lambda ids: "".join(chars[int(i)] for i in ids)

data = encode(text)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]
print(f"{len(text):,} characters, vocabulary of {len(chars)}")
print(repr(text[:200]))
assert decode(encode(text[:1000])) == text[:1000]

# %% [markdown]
# ## 2. Batches: the model predicts every next character at once
#
# A batch is `batch_size` random windows `x` of `block_size` ids, and `y`, the same windows moved one
# character on. Position `t` of the model's output is trained to predict `y[:, t]` having read only
# `x[:, :t+1]` (the causal mask sees to that).

# %%
block_size, batch_size = 64, 16

def get_batch(split):
    source = train_data if split == "train" else val_data
    starts = rng.integers(0, len(source) - block_size - 1, size=batch_size)
    x = np.stack([source[s:s + block_size] for s in starts])
    y = np.stack([source[s + 1:s + block_size + 1] for s in starts])
    return mg.tensor(x), mg.tensor(y)

x, y = get_batch("train")
print("x", x.shape, repr(decode(x.numpy()[0, :40])))
print("y", y.shape, repr(decode(y.numpy()[0, :40])))
assert (x.numpy()[:, 1:] == y.numpy()[:, :-1]).all()

# %% [markdown]
# ## 3. The model
#
# Three blocks of masked multi-head self-attention and a GELU MLP, each inside a pre-LayerNorm
# residual, as in GPT-2 and nanoGPT. Before training, the loss should be near `ln(vocabulary)`:
# the model guesses every character with equal probability.

# %%
config = GPTConfig(vocab_size=len(chars), block_size=block_size, n_layer=3, n_head=4, d_model=96, dropout=0.0)
model = GPT(config)
n_params = sum(p.numel() for p in model.parameters())
print(config)
print(f"{n_params:,} parameters")

with mg.no_grad():
    _, loss = model(*get_batch("val"))
print(f"loss before training {loss.item():.3f}, ln({len(chars)}) = {np.log(len(chars)):.3f}")
assert abs(loss.item() - np.log(len(chars))) < 0.3

# %% [markdown]
# ## 4. Training
#
# AdamW with a short warm-up and a cosine decay, as nanoGPT does. The loop is the whole of training:
# forward, `zero_grad`, `backward`, `step`. It prints one line every 200 steps.

# %%
max_steps, eval_every = 1200, 200
optimizer = optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
schedule = optim.WarmupCosineLR(optimizer, warmup_steps=50, decay_steps=max_steps, min_lr=3e-4)

def estimate_loss(split, batches=10):
    model.eval()
    with mg.no_grad():
        losses = [model(*get_batch(split))[1].item() for _ in range(batches)]
    model.train()
    return float(np.mean(losses))

train_curve, val_curve = [], []
start = time.perf_counter()
for step in range(1, max_steps + 1):
    logits, loss = model(*get_batch("train"))
    optimizer.zero_grad()
    loss.backward()
    optim.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    train_curve.append((step, loss.item()))
    if step % eval_every == 0:
        val_curve.append((step, estimate_loss("val")))
        print(f"step {step:5d}  train {loss.item():.3f}  val {val_curve[-1][1]:.3f}  "
              f"({time.perf_counter() - start:.0f} s)")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(*zip(*train_curve), linewidth=0.8, label="train (each step)")
ax.plot(*zip(*val_curve), "o-", label="validation")
ax.set_xlabel("step"); ax.set_ylabel("cross-entropy loss"); ax.legend(); ax.set_title("character GPT")
plt.show()
assert val_curve[-1][1] < 0.7 * np.log(len(chars)), "the model should have learned something"

# %% [markdown]
# ## 5. Sampling
#
# `generate` reads the prompt, then repeatedly samples the next character from the softmax of the
# last position's logits (divided by `temperature`, keeping the `top_k` most likely), feeding each
# choice back in. A lower temperature gives safer, more repetitive text.

# %%
prompt = mg.tensor(encode("The ")[None, :])
for temperature in (0.8, 1.0):
    out = model.generate(prompt, max_new_tokens=300, temperature=temperature, top_k=20)
    print(f"--- temperature {temperature}\n{decode(out.numpy()[0])}\n")

# %% [markdown]
# ## Where next
#
# - `python -m demos.char_gpt --data input.txt` trains the same model from the command line, with
#   checkpoints; `python -m demos.sample` samples from a checkpoint.
# - `transformer/model.py` is the whole GPT in one file; `GPTConfig(norm="rmsnorm", position="rope",
#   mlp="swiglu")` turns it into a LLaMA-style block (see the transformer notebook and
#   `python -m demos.modern_blocks`).
