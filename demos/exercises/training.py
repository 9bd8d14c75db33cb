"""`train NAME`: a small model trained twice from the same seed on the same batches, once with the
engine's own code and once with the learner's swapped in (`catalogue.swapped`), in float64 so
that a correct backward gives the same losses to many digits.

The models, each built so that the exercise's op really runs in it:
- "mlp": a character-level MLP on the built-in corpus (demos/common.py), spelled out from
  minigrad's ops: embedding, matmul, tanh, an RMS normalisation written with pow, mean and
  division, a learned temperature (exp), then softmax and log (loss "softmax") or cross_entropy
  and log_softmax averaged (loss "cross_entropy"); trained with Adam. The exercises mul, div, pow,
  exp_log_tanh, sum_mean, matmul, softmax, cross_entropy, embedding, backward_walk and adam train
  it; its graph has only ops with one output and no slices, which the learner's walk handles.
- "gpt": transformer.GPT, one block, on the same corpus, with AdamW: layer_norm and attention
  (its LayerNorm and fused ScaledDotProductAttention ops).
- "mlp_bn": the same MLP with batch norm (the BatchNorm op) on its hidden layer: batch_norm.
- "cnn": a tiny LeNet-style CNN (conv, ReLU, max-pool, twice, then a linear layer) on the 8x8
  digits (minigrad.datasets.load_digits, which needs scikit-learn), with Adam: conv2d and
  max_pool2d (the Conv2d and MaxPool2d ops of ops_conv.py).
- "rnn": a character RNN on the same corpus, nn.Embedding, nn.RNN (tanh: its fused step
  ops.RNNTanhCell runs once per character) and nn.Linear, with Adam: rnn_cell.
"""
import math
import time
from dataclasses import dataclass

import numpy as np

import minigrad
from minigrad import optim
from minigrad.nn import functional as F

from ..common import builtin_corpus
from .catalogue import swapped

STEPS = {"mlp": 150, "gpt": 40, "mlp_bn": 150, "cnn": 60, "rnn": 60}
AGREE_RTOL = 1e-6  # float64: a correct backward changes the losses by rounding only


@dataclass
class TrainResult:
    model: str  # what was trained, one line
    builtin: list  # the loss at every step, with the engine's code
    learner: list  # the same with the learner's code
    calls: dict  # how often the learner's code ran: {label: calls}
    seconds: float

    @property
    def agree(self):
        a, b = self.builtin[-1], self.learner[-1]
        return math.isfinite(b) and abs(a - b) <= AGREE_RTOL * abs(a)


# ============================================================================ the data
class _Corpus:
    """The built-in corpus as ids, and random windows of it from a seeded generator."""

    _ids = None

    def __init__(self, seed):
        if _Corpus._ids is None:
            text = builtin_corpus()
            chars = sorted(set(text))
            lookup = {c: i for i, c in enumerate(chars)}
            _Corpus._ids = np.array([lookup[c] for c in text], dtype=np.int64)
        self.ids, self.vocab = _Corpus._ids, int(_Corpus._ids.max()) + 1
        self.rng = np.random.default_rng(seed)

    def windows(self, batch, length):
        """(batch, length + 1) consecutive ids."""
        starts = self.rng.integers(0, len(self.ids) - length - 1, size=batch)
        return np.stack([self.ids[s:s + length + 1] for s in starts])


# ============================================================================ the two models
def _mlp(vocab, rng, context=3, dim=16, hidden=64):
    def param(*shape, scale=1.0):
        return minigrad.tensor(rng.standard_normal(shape) * scale, requires_grad=True)

    return {"E": param(vocab, dim, scale=0.5), "W1": param(context * dim, hidden, scale=(context * dim) ** -0.5),
            "b1": param(hidden, scale=0.0), "gain": minigrad.tensor(np.ones(hidden), requires_grad=True),
            "W2": param(hidden, vocab, scale=hidden ** -0.5), "log_temp": param(scale=0.0)}


def _mlp_loss(p, window, loss):
    """Predict the last id of each window (B, context + 1) from the ones before it."""
    ids, targets = window[:, :-1], window[:, -1]
    onehot = minigrad.tensor(np.eye(p["E"].shape[0])[targets])  # (B, V), no gradient
    e = minigrad.embedding(ids, p["E"]).reshape(len(window), -1)  # (B, context * dim)
    h = (e @ p["W1"] + p["b1"]).tanh()  # (B, hidden)
    h = h / ((h ** 2).mean(axis=-1, keepdims=True) + 1e-5) ** 0.5 * p["gain"]  # RMS normalisation
    logits = (h @ p["W2"]) * p["log_temp"].exp()  # (B, V), a learned temperature
    if loss == "softmax":
        return -((logits.softmax(axis=-1) * onehot).sum(axis=-1)).log().mean()
    # the same cross-entropy computed two ways, averaged: both ops carry the gradient
    return 0.5 * F.cross_entropy(logits, targets) + 0.5 * -(logits.log_softmax(axis=-1) * onehot).sum(axis=-1).mean()


def _run_mlp(exercise, steps, seed):
    corpus = _Corpus(seed)
    p = _mlp(corpus.vocab, np.random.default_rng(seed))
    optimizer = optim.Adam(list(p.values()), lr=0.01)
    losses = []
    for _ in range(steps):
        loss = _mlp_loss(p, corpus.windows(32, 3), exercise.loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _run_gpt(exercise, steps, seed):
    from transformer import GPT, GPTConfig

    corpus = _Corpus(seed)
    minigrad.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=corpus.vocab, block_size=16, n_layer=1, n_head=2, d_model=32, dropout=0.0,
                          bias=True)).double()
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        window = corpus.windows(8, 16)
        _, loss = model(minigrad.tensor(window[:, :-1]), minigrad.tensor(window[:, 1:]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _mlp_bn_loss(p, window):
    """The MLP with batch norm in place of its RMS normalisation: embeddings @ W1 (no bias: batch
    norm's own bias shifts) -> batch norm over the batch -> tanh -> @ W2 -> cross_entropy."""
    ids, targets = window[:, :-1], window[:, -1]
    e = minigrad.embedding(ids, p["E"]).reshape(len(window), -1)  # (B, context * dim)
    h = F.batch_norm(e @ p["W1"], None, None, p["gain"], p["beta"], training=True).tanh()  # (B, hidden)
    return F.cross_entropy(h @ p["W2"], targets)


def _run_mlp_bn(exercise, steps, seed):
    corpus = _Corpus(seed)
    mlp = _mlp(corpus.vocab, np.random.default_rng(seed))
    p = {name: mlp[name] for name in ("E", "W1", "gain", "W2")}
    p["beta"] = minigrad.tensor(np.zeros(p["gain"].shape), requires_grad=True)
    optimizer = optim.Adam(list(p.values()), lr=0.01)
    losses = []
    for _ in range(steps):
        loss = _mlp_bn_loss(p, corpus.windows(32, 3))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _cnn(rng, c1=4, c2=8):
    def param(*shape, fan_in):
        return minigrad.tensor(rng.standard_normal(shape) * fan_in ** -0.5, requires_grad=True)

    return {"conv1": param(c1, 1, 3, 3, fan_in=9), "b1": minigrad.tensor(np.zeros(c1), requires_grad=True),
            "conv2": param(c2, c1, 3, 3, fan_in=9 * c1), "b2": minigrad.tensor(np.zeros(c2), requires_grad=True),
            "W": param(c2 * 2 * 2, 10, fan_in=c2 * 2 * 2)}


def _cnn_loss(p, images, labels):
    """images (B, 1, 8, 8) -> conv 3x3 pad 1, ReLU, max-pool 2 (B, 4, 4, 4) -> the same (B, 8, 2, 2)
    -> flatten @ W -> cross_entropy."""
    h = F.max_pool2d(F.conv2d(images, p["conv1"], p["b1"], padding=1).relu(), 2)
    h = F.max_pool2d(F.conv2d(h, p["conv2"], p["b2"], padding=1).relu(), 2)
    return F.cross_entropy(h.reshape(len(labels), -1) @ p["W"], labels)


def _run_cnn(exercise, steps, seed):
    from minigrad.datasets import load_digits

    digits = load_digits()
    images, labels = digits.images.numpy().astype(np.float64), digits.targets.numpy()
    rng = np.random.default_rng(seed)
    p = _cnn(rng)
    optimizer = optim.Adam(list(p.values()), lr=0.01)
    losses = []
    for _ in range(steps):
        batch = rng.integers(0, len(labels), size=32)
        loss = _cnn_loss(p, minigrad.tensor(images[batch]), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _run_rnn(exercise, steps, seed):
    from minigrad import nn

    corpus = _Corpus(seed)
    minigrad.manual_seed(seed)
    embed = nn.Embedding(corpus.vocab, 16, dtype=np.float64)
    rnn = nn.RNN(16, 32, batch_first=True, dtype=np.float64)  # tanh: one ops.RNNTanhCell per time step
    head = nn.Linear(32, corpus.vocab, dtype=np.float64)
    optimizer = optim.Adam([*embed.parameters(), *rnn.parameters(), *head.parameters()], lr=0.01)
    losses = []
    for _ in range(steps):
        window = corpus.windows(8, 16)
        out, _ = rnn(embed(window[:, :-1]))  # (B, T, 32)
        loss = F.cross_entropy(head(out).reshape(-1, corpus.vocab), window[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


MODELS = {
    "mlp": (_run_mlp, "a character MLP spelled out from minigrad's ops, on the built-in corpus, Adam"),
    "gpt": (_run_gpt, "a one-block GPT (transformer.GPT) on the built-in corpus, AdamW"),
    "mlp_bn": (_run_mlp_bn, "a character MLP with batch norm on its hidden layer, on the built-in corpus, Adam"),
    "cnn": (_run_cnn, "a tiny LeNet-style CNN on the 8x8 digits, Adam"),
    "rnn": (_run_rnn, "a character RNN (nn.RNN, tanh) on the built-in corpus, Adam"),
}


# ============================================================================ train
def train(exercise, ns, steps=None, seed=0):
    """Train exercise.model twice from `seed`: with the engine's code, then with the learner's
    parts from `ns` swapped in. Returns a `TrainResult`."""
    if exercise.model is None:
        raise ValueError(f"train: the exercise {exercise.name!r} has no model to train")
    run, description = MODELS[exercise.model]
    steps = steps or STEPS[exercise.model]
    start = time.perf_counter()
    builtin = run(exercise, steps, seed)
    with swapped(exercise, ns) as calls, np.errstate(all="ignore"):
        learner = run(exercise, steps, seed)
        calls = dict(calls)
    return TrainResult(f"{description}, float64, {steps} steps, seed {seed}", builtin, learner, calls,
                       time.perf_counter() - start)


def format_train(result, exercise):
    mine = ", ".join(f"{label} ran {n} times" for label, n in result.calls.items())
    a, b = result.builtin[-1], result.learner[-1]
    lines = [f"train {exercise.name}: {result.model} ({result.seconds:.1f} s)",
             f"  built-in:  loss {result.builtin[0]:.6f} -> {a:.10f}",
             f"  yours:     loss {result.learner[0]:.6f} -> {b:.10f}   ({mine})"]
    if result.agree:
        lines.append(f"{exercise.name}: the last losses agree (difference {abs(a - b):.1e}, within "
                     f"{AGREE_RTOL:g} relative): the model trained with your code")
    else:
        step = next((i for i, (x, y) in enumerate(zip(result.builtin, result.learner))
                     if not abs(x - y) <= AGREE_RTOL * abs(x)), len(result.builtin) - 1)
        lines.append(f"{exercise.name}: the losses differ from step {step} on: your code does not compute what "
                     f"the built-in does (run `python -m demos.exercises check {exercise.name}`)")
    return "\n".join(lines)


def plot(result, exercise, path):
    """Both loss curves in one PNG; None without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from minigrad import viz

    fig = viz.figure(figsize=(6, 4))  # (no pyplot: a notebook's backend stays as it is)
    ax = fig.subplots()
    ax.plot(result.builtin, label="built-in", linewidth=3, alpha=0.5)
    ax.plot(result.learner, label="yours", linestyle="--")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(f"{exercise.name}: {exercise.model}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path
