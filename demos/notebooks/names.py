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
# # Names: from counting pairs to a Transformer
#
# 32,033 names, the most common US baby names of 2018 (from the Social Security Administration, as
# distributed with Karpathy's makemore, MIT licence: `demos/data/NAMES_LICENSE`). Each model
# here reads a name one character at a time and predicts the next one; we score it by the mean
# negative log-likelihood of the next characters of names it never saw (nats; lower is better).
#
# 1. bigram counts, 2. an MLP (Bengio et al. 2003), and a look inside it while it trains: how
# saturated its tanh units are, and how large each update is against the weights it changes,
# 3. an RNN, a GRU and a GPT. `python -m demos.names` runs the same comparison with more steps.
# The notebook runs top to bottom in one to two minutes on two cores.

# %%
import time
import numpy as np
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from demos import names as lesson

mg.manual_seed(2147483647)
words = lesson.load_names()
data = lesson.Names(words, seed=42)  # one shuffle, then 80% train, 10% dev, 10% test
print({split: len(ws) for split, ws in data.splits.items()}, "vocabulary:", "".join(data.chars))
print(words[:8])

# %% [markdown]
# ## 1. Bigram counts
#
# Count how often each character follows each other one in the training names ("." marks the
# start and the end), add one to every count so that nothing is impossible, and normalise each
# row: P(next | previous). There is nothing to train, and it is already far better than guessing
# uniformly (ln 27 = 3.30 nats).

# %%
x_seq = {split: data.sequences(split) for split in data.splits}
bigram = lesson.Bigram(data.vocab).fit(*x_seq["train"])
bigram_test = lesson.split_loss(bigram, *x_seq["test"])
print(f"bigram test loss {bigram_test:.4f} nats")
assert bigram_test < 2.5

fig, ax = plt.subplots(figsize=(6, 6))
ax.imshow(bigram.counts, cmap="Blues")
ax.set_xticks(range(data.vocab), data.chars)
ax.set_yticks(range(data.vocab), data.chars)
ax.set_xlabel("next")
ax.set_ylabel("previous")
ax.set_title("how often each pair occurs")
plt.show()
print("bigram samples:", lesson.sample(bigram, data, 8))

# %% [markdown]
# ## 2. An MLP, and what to watch while it trains
#
# Bengio et al. (2003): embed each of the last three characters in a small vector, concatenate,
# and read the next character off a neural network. Ours is made deep on purpose, four tanh layers
# of 100 units, trained with plain SGD, so that the two statistics a practitioner looks at have
# something to show:
#
# - **tanh saturation.** Where |tanh(a)| is near 1 its gradient 1 - tanh^2 is near 0: a unit that
#   is saturated on most examples barely learns. We plot each layer's histogram of tanh outputs and
#   the share above 0.97.
# - **the update-to-data ratio** of each weight matrix, log10(std(lr * grad) / std(weights)): how
#   much one SGD step changes a layer, relative to its size. Around -3 (a thousandth per step) is
#   the usual healthy value; far below, a layer learns too slowly; far above, it thrashes.

# %%
class DeepMLP(nn.Module):
    def __init__(self, vocab, context=3, n_embd=10, n_hidden=100, layers=4):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(vocab, n_embd)
        sizes = [context * n_embd] + [n_hidden] * layers
        self.hidden = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
        self.out = nn.Linear(n_hidden, vocab)
        self.activations = []  # the tanh outputs of the last forward, one per hidden layer

    def forward(self, x):
        e = self.embed(x)
        h = e.reshape(e.shape[0], -1)
        self.activations = []
        for layer in self.hidden:
            h = layer(h).tanh()
            self.activations.append(h)
        return self.out(h)

    next_logits = lesson.MLP.next_logits  # the logits after a prefix of names: for sampling


x_win = {split: data.windows(split) for split in data.splits}
model = DeepMLP(data.vocab)
print(f"{model.num_parameters():,} parameters")


def tanh_histograms(model, title):
    x = mg.tensor(x_win["train"][0][:1000])
    logits = model(x)
    loss = F.cross_entropy(logits, x_win["train"][1][:1000])
    for h in model.activations:
        h.retain_grad()
    loss.backward()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 3.5))
    for i, h in enumerate(model.activations):
        t, g = h.numpy(), np.asarray(h.grad)
        saturated = (np.abs(t) > 0.97).mean()
        counts, edges = np.histogram(t, bins=50, range=(-1, 1))
        ax1.plot(edges[:-1], counts, label=f"layer {i}: mean {t.mean():+.2f}, std {t.std():.2f}, "
                                            f"saturated {100 * saturated:.1f}%")
        counts, edges = np.histogram(g, bins=50)
        ax2.plot(edges[:-1], counts, label=f"layer {i}: std {g.std():.1e}")
    ax1.set_title(f"tanh outputs, {title}")
    ax2.set_title(f"their gradients, {title}")
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    plt.show()
    model.zero_grad()
    return [float((np.abs(h.numpy()) > 0.97).mean()) for h in model.activations]


saturation_at_start = tanh_histograms(model, "at initialisation")
assert max(saturation_at_start) < 0.01

# %% [markdown]
# `nn.Linear` starts its weights from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default: each
# layer's pre-activations have a smaller spread than its inputs, so the tanh outputs stay near 0,
# far from saturation, and shrink layer by layer (see the std in the legend). Now train with SGD,
# recording every weight matrix's update-to-data ratio at every step.

# %%
steps, batch = 10000, 32
weights = [(name, p) for name, p in model.named_parameters() if p.ndim == 2 and not name.startswith("embed")]
ratios = {name: [] for name, _ in weights}
x_train, y_train = x_win["train"]
rng = mg.random.rng()
start = time.perf_counter()
for step in range(steps):
    rows = rng.integers(0, len(x_train), size=batch)
    loss = F.cross_entropy(model(mg.tensor(x_train[rows])), y_train[rows])
    model.zero_grad()
    loss.backward()
    lr = 0.1 if step < 0.75 * steps else 0.01
    for name, p in weights:  # before the update: the step it is about to take
        ratios[name].append(np.log10((lr * np.asarray(p.grad)).std() / p.numpy().std()))
    with mg.no_grad():
        for p in model.parameters():
            p -= lr * mg.tensor(np.asarray(p.grad))
mlp_test = lesson.split_loss(model, *x_win["test"])
print(f"{steps} steps in {time.perf_counter() - start:.1f} s; MLP test loss {mlp_test:.4f} nats")
assert mlp_test < bigram_test

drop = int(0.75 * steps)  # where lr goes from 0.1 to 0.01
before = {name: np.mean(v[drop // 2:drop]) for name, v in ratios.items()}
after = {name: np.mean(v[drop:]) for name, v in ratios.items()}
print("log10 update/data, before and after the drop:",
      {name: f"{before[name]:.2f} -> {after[name]:.2f}" for name in ratios})
assert all(0.7 < before[name] - after[name] < 1.3 for name in ratios)  # lr / 10: one decade lower
assert max(before, key=before.get) == "out.weight"

fig, ax = plt.subplots(figsize=(8, 3.5))
for name, values in ratios.items():
    ax.plot(values, label=name, linewidth=0.8)
ax.axhline(-3, color="k", linestyle="--", linewidth=1, label="1e-3")
ax.set_xlabel("step")
ax.set_ylabel("log10 update / data")
ax.set_title("update-to-data ratio of each weight matrix")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# At lr = 0.1 every layer moves by about a hundredth of its size per step, on the fast side of
# the usual 1e-3; the drop to lr = 0.01 at three quarters of the run shows as one decade lower in
# every curve, close to 1e-3. The output layer (`out.weight`) has the largest ratio: it starts from
# the smallest weights (U(+-1/sqrt(100))) and its gradient is the largest. And after training, the
# tanh units: spread over the whole range, with a few saturated ones.

# %%
saturation_after = tanh_histograms(model, "after training")
print("saturated share per layer, at start:", [f"{s:.1%}" for s in saturation_at_start],
      "after:", [f"{s:.1%}" for s in saturation_after])

# %% [markdown]
# ## 3. Models that read the whole name: RNN, GRU, GPT
#
# The MLP sees three characters. A recurrent network (`nn.RNN`: h_t = tanh(x_t W_ih^T + b_ih +
# h_{t-1} W_hh^T + b_hh)) carries a state through the whole name; a GRU gates that state so that
# it is easier to keep; a GPT attends to every earlier character at once. All three are trained
# here for a short while only (`python -m demos.names` trains longer): their losses say more about
# how fast they learn than about how good they become.

# %%
results = {"bigram": bigram_test, "mlp (deep, SGD)": mlp_test}
samples = {"bigram": lesson.sample(bigram, data, 6), "mlp (deep, SGD)": lesson.sample(model, data, 6)}
for name, build, steps, lr in [
    ("rnn", lambda: lesson.RecurrentLM(data.vocab, "rnn", 32, 64), 1500, 5e-3),
    ("gru", lambda: lesson.RecurrentLM(data.vocab, "gru", 32, 64), 1000, 5e-3),
    ("gpt", lambda: lesson.NamesGPT(data.vocab, data.block, n_layer=2, n_head=4, d_model=32), 800, 5e-3),
]:
    start = time.perf_counter()
    net = build()
    lesson.train(net, *x_seq["train"], lesson.Plan(None, steps, 32, lr), quiet=True)
    results[name] = lesson.split_loss(net, *x_seq["test"])
    samples[name] = lesson.sample(net, data, 6)
    print(f"{name}: {net.num_parameters():,} parameters, {steps} steps in {time.perf_counter() - start:.1f} s, "
          f"test loss {results[name]:.4f}")
assert all(loss < 2.6 for loss in results.values())

# %%
print(f"{'model':<16}{'test loss':>10}")
for name, loss in results.items():
    print(f"{name:<16}{loss:>10.4f}")
print(f"(makemore's Transformer: about {lesson.REFERENCE_GPT} after a long run)")
for name, names in samples.items():
    print(f"{name:>16}: {' '.join(names)}")
