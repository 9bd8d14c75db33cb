"""Character-level models of names, from counting to a Transformer, compared on one split.

    python -m demos.names                       # bigram, MLP, RNN, GRU and GPT: a few minutes on 2 cores
    python -m demos.names --quick               # tiny models, a few steps: seconds
    python -m demos.names --models mlp,gru --steps 3000

The 32,033 names of demos/data/names.txt (the most common US baby names of 2018, from the Social
Security Administration, as distributed with Karpathy's makemore; MIT licence, see
demos/data/NAMES_LICENSE) are shuffled once (--seed) and split 80/10/10 into train, dev and test.
Every model reads a name one character at a time, from "." (the start) to "." (the end), and is
scored by its test loss: the mean negative log-likelihood of each next character, the end
included, in nats (guessing uniformly among the 27 characters scores ln 27 = 3.30).

- bigram: counts of each pair of characters, plus one: P(next | previous). Nothing to train.
- mlp: Bengio et al. 2003: the embeddings of the last 3 characters, concatenated, a tanh layer,
  a softmax over the next character.
- rnn: an Elman RNN (nn.RNN, tanh) reads the whole name so far; gru: the same with nn.GRU.
- gpt: a Transformer decoder (transformer.GPT): causal self-attention over the name so far.

makemore's Transformer reaches about 1.92 nats on this list after a long run; the default steps
here are a few minutes in all, so the trained models stop short of their best. Every trained
model uses AdamW with a cosine decay of the learning rate and gradient clipping at norm 1.
demos/notebooks/names.py is the same in a notebook, with the statistics of the activations and
of the updates during training.
"""
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import minigrad
from minigrad import nn, optim
from minigrad.nn import functional as F
from transformer import GPT, GPTConfig

from .common import parser, progress, start

PROGRAM = "python -m demos.names"
DATA = Path(__file__).resolve().parent / "data" / "names.txt"
REFERENCE_GPT = 1.92  # makemore's Transformer on this list (its README)
MODELS = ("bigram", "mlp", "rnn", "gru", "gpt")
IGNORE = -100  # target of a padding position: F.cross_entropy's ignore_index


# ============================================================================ the data
def load_names(path=DATA):
    """The names of a file, one a line (blank lines skipped), lowercased."""
    with open(path, encoding="utf-8") as f:
        return [line.strip().lower() for line in f if line.strip()]


class Names:
    """The vocabulary ("." then the letters, "." is id 0), and the names split 80/10/10 into
    train, dev and test after one shuffle from `seed`.

    block = the longest name + 1: a model reads at most that many characters ("." and the letters)."""

    def __init__(self, words, seed=0):
        self.chars = ["."] + sorted(set("".join(words)))
        self.index = {c: i for i, c in enumerate(self.chars)}
        order = minigrad.random.rng(minigrad.Generator().manual_seed(seed)).permutation(len(words))
        n_train, n_dev = int(0.8 * len(words)), int(0.9 * len(words))
        self.splits = {"train": [words[i] for i in order[:n_train]], "dev": [words[i] for i in order[n_train:n_dev]],
                       "test": [words[i] for i in order[n_dev:]]}
        self.block = max(len(w) for w in words) + 1
        self.vocab = len(self.chars)

    def encode(self, word):
        return [self.index[c] for c in word]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)

    def sequences(self, split):
        """Whole names for the sequence models: x (W, block) = "." and the letters, then "."s as
        padding; y (W, block) = the letters and the end ".", then IGNORE (no loss on padding)."""
        words = self.splits[split]
        x = np.zeros((len(words), self.block), dtype=np.int64)
        y = np.full((len(words), self.block), IGNORE, dtype=np.int64)
        for row, word in enumerate(words):
            ids = self.encode(word)
            x[row, 1:len(ids) + 1] = ids
            y[row, :len(ids) + 1] = ids + [0]
        return x, y

    def windows(self, split, context=3):
        """Every next character of every name with the `context` characters before it ("." before
        the start), for the MLP: x (E, context), y (E,)."""
        xs, ys = [], []
        for word in self.splits[split]:
            window = [0] * context
            for i in self.encode(word) + [0]:
                xs.append(window)
                ys.append(i)
                window = window[1:] + [i]
        return np.array(xs, dtype=np.int64), np.array(ys, dtype=np.int64)


# ============================================================================ the models
class Bigram:
    """P(next | previous) from counts of each pair in the training names, each count plus one
    (so that no pair has probability 0). `fit` is the whole of training."""

    def __init__(self, vocab):
        self.counts = np.zeros((vocab, vocab), dtype=np.int64)

    def fit(self, x, y):
        keep = y != IGNORE
        np.add.at(self.counts, (x[keep], y[keep]), 1)
        smoothed = self.counts + 1
        self.log_probs = np.log(smoothed / smoothed.sum(axis=1, keepdims=True))  # (V, V): row = previous
        return self

    def num_parameters(self):
        return self.counts.size

    def __call__(self, x):
        """x (B, T) -> the log-probabilities of the next character (B, T, V): logits already normalized."""
        return minigrad.tensor(self.log_probs[x.numpy() if isinstance(x, minigrad.Tensor) else np.asarray(x)])

    def next_logits(self, prefix):
        return self.log_probs[prefix[:, -1]]

    def eval(self):
        return self


class MLP(nn.Module):
    """Bengio et al. 2003: the embeddings of the last `context` characters, concatenated, a tanh
    layer, the logits of the next character.   x (B, context) -> logits (B, V)"""

    def __init__(self, vocab, context=3, n_embd=10, n_hidden=200):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(vocab, n_embd)
        self.hidden = nn.Linear(context * n_embd, n_hidden)
        self.out = nn.Linear(n_hidden, vocab)

    def forward(self, x):
        e = self.embed(x)  # (B, context, n_embd)
        return self.out(self.hidden(e.reshape(e.shape[0], -1)).tanh())

    def next_logits(self, prefix):
        window = np.concatenate([np.zeros((len(prefix), self.context), dtype=np.int64), prefix], axis=1)
        return self(window[:, -self.context:]).numpy()


class RecurrentLM(nn.Module):
    """Embeddings, a recurrent layer (nn.RNN or nn.GRU) over the name so far, the logits of the
    next character at every step.   x (B, T) -> logits (B, T, V)"""

    def __init__(self, vocab, cell="rnn", n_embd=32, n_hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, n_embd)
        self.rnn = (nn.RNN if cell == "rnn" else nn.GRU)(n_embd, n_hidden, batch_first=True)
        self.out = nn.Linear(n_hidden, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.embed(x))  # (B, T, n_hidden)
        return self.out(h)

    def next_logits(self, prefix):
        return self(prefix).numpy()[:, -1]


class NamesGPT(nn.Module):
    """transformer.GPT, returning only the logits.   x (B, T) -> logits (B, T, V)"""

    def __init__(self, vocab, block, n_layer=4, n_head=4, d_model=64):
        super().__init__()
        self.gpt = GPT(GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=n_head, d_model=d_model))

    def forward(self, x):
        return self.gpt(x)[0]

    def next_logits(self, prefix):
        return self(prefix).numpy()[:, -1]


@dataclass
class Plan:
    """How one model is built and trained."""

    build: object  # (Names) -> model
    steps: int
    batch: int
    lr: float
    windows: bool = False  # the MLP trains on windows, the others on whole names


def plans(quick=False):
    """The default runs (a few minutes on 2 cores in all), or tiny ones that take seconds."""
    if quick:
        return {
            "mlp": Plan(lambda d: MLP(d.vocab, n_embd=4, n_hidden=16), 20, 32, 1e-2, windows=True),
            "rnn": Plan(lambda d: RecurrentLM(d.vocab, "rnn", 8, 16), 20, 16, 1e-2),
            "gru": Plan(lambda d: RecurrentLM(d.vocab, "gru", 8, 16), 20, 16, 1e-2),
            "gpt": Plan(lambda d: NamesGPT(d.vocab, d.block, n_layer=1, n_head=2, d_model=16), 20, 16, 1e-2),
        }
    return {
        "mlp": Plan(lambda d: MLP(d.vocab, n_embd=10, n_hidden=200), 30000, 64, 1e-2, windows=True),
        "rnn": Plan(lambda d: RecurrentLM(d.vocab, "rnn", 32, 128), 5000, 32, 5e-3),
        "gru": Plan(lambda d: RecurrentLM(d.vocab, "gru", 32, 128), 3000, 32, 5e-3),
        "gpt": Plan(lambda d: NamesGPT(d.vocab, d.block, n_layer=2, n_head=4, d_model=64), 5000, 32, 3e-3),
    }


# ============================================================================ training and scoring
def loss_of(model, x, y):
    """The mean cross-entropy of the next characters y (-100: none) given x."""
    logits = model(minigrad.tensor(x))
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=IGNORE)


def split_loss(model, x, y, rows=2048):
    """The mean loss per predicted character over a whole split, in nats."""
    total, count = 0.0, int((y != IGNORE).sum())
    model.eval()
    with minigrad.no_grad():
        for i in range(0, len(x), rows):
            logits = model(minigrad.tensor(x[i:i + rows]))
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y[i:i + rows].reshape(-1),
                                     ignore_index=IGNORE, reduction="sum").item()
    return total / count


def train(model, x, y, plan, quiet=False, desc="training"):
    """AdamW on plan.steps random batches of (x, y), the learning rate decayed from plan.lr to
    plan.lr / 10 along a cosine, the gradient clipped at norm 1. Returns the loss of every step."""
    optimizer = optim.AdamW(model.parameters(), lr=plan.lr, weight_decay=0.01)
    schedule = optim.WarmupCosineLR(optimizer, warmup_steps=0, decay_steps=plan.steps, min_lr=plan.lr / 10)
    generator = minigrad.random.rng()
    model.train()
    losses = []
    bar = progress(range(plan.steps), desc=desc, disable=quiet)
    for step in bar:
        rows = generator.integers(0, len(x), size=plan.batch)
        loss = loss_of(model, x[rows], y[rows])
        optimizer.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 100 == 0:
            bar.set_postfix(loss=f"{np.mean(losses[-100:]):.3f}")
    bar.close()
    return losses


def sample(model, data, n=5, generator=None, max_len=None):
    """n names drawn one character at a time from the model's next-character distribution."""
    rng = minigrad.random.rng(generator)
    max_len = max_len or data.block
    prefix = np.zeros((n, 1), dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    model.eval()
    with minigrad.no_grad():
        for _ in range(max_len):
            logits = np.asarray(model.next_logits(prefix), dtype=np.float64)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            nxt = np.array([rng.choice(data.vocab, p=row) for row in p])
            nxt[done] = 0
            done |= nxt == 0
            prefix = np.concatenate([prefix, nxt[:, None]], axis=1)
            if done.all():
                break
    names = []
    for row in prefix[:, 1:]:  # after the start: the letters up to the first end "."
        ends = np.flatnonzero(row == 0)
        names.append(data.decode(row[:ends[0]] if len(ends) else row))
    return names


# ============================================================================ the command
def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.names", training=True)
    p.add_argument("--models", default=",".join(MODELS), help=f"which models, comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--steps", type=int, default=None,
                   help="training steps of every trained model (default: each model's own, 3000 to 30000)")
    p.add_argument("--quick", action="store_true", help="tiny models and 20 steps each: a smoke test in seconds")
    p.add_argument("--samples", type=int, default=5, help="names to sample from each model")
    p.add_argument("--data", default=None, help="a file of names, one a line (default: demos/data/names.txt)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def run(args):
    chosen = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in MODELS]
    if unknown or not chosen:
        raise SystemExit(f"{PROGRAM}: unknown model {', '.join(unknown) or '(none given)'}; choose from "
                         f"{', '.join(MODELS)}")
    start(args, PROGRAM)
    data = Names(load_names(args.data or DATA), seed=args.seed)
    sizes = ", ".join(f"{k} {len(v):,}" for k, v in data.splits.items())
    print(f"{len(sum(data.splits.values(), [])):,} names ({sizes}), {data.vocab} characters, "
          f"at most {data.block - 1} letters")
    seq = {split: data.sequences(split) for split in data.splits}
    win = {split: data.windows(split) for split in data.splits}
    results, samples = {}, {}
    began = time.perf_counter()
    for name in chosen:
        clock = time.perf_counter()
        if name == "bigram":
            model, steps, final = Bigram(data.vocab).fit(*seq["train"]), 0, None
            sets = seq
        else:
            plan = plans(args.quick)[name]
            if args.steps is not None:
                plan.steps = args.steps
            model, steps = plan.build(data), plan.steps
            sets = win if plan.windows else seq
            losses = train(model, *sets["train"], plan, quiet=args.quiet, desc=name)
            final = float(np.mean(losses[-max(1, min(100, len(losses) // 5)):]))
        results[name] = {"parameters": model.num_parameters(), "steps": steps, "train": final,
                         "dev": split_loss(model, *sets["dev"]), "test": split_loss(model, *sets["test"]),
                         "seconds": time.perf_counter() - clock}
        samples[name] = sample(model, data, args.samples)
        print(f"{name}: test loss {results[name]['test']:.4f} ({results[name]['seconds']:.1f} s)", flush=True)
    print()
    print(table(results))
    print(f"(makemore's Transformer reaches about {REFERENCE_GPT} on this list after a long run; "
          f"uniform guessing: ln {data.vocab} = {math.log(data.vocab):.2f})")
    print()
    for name, names in samples.items():
        print(f"{name:>6}: {' '.join(names)}")
    best = min(results, key=lambda m: results[m]["test"])
    seconds = time.perf_counter() - began
    print(f"names: {len(results)} models in {seconds:.1f} s; best test loss {results[best]['test']:.4f} ({best}), "
          f"{len(data.splits['test']):,} test names")
    return {"results": results, "samples": samples, "seconds": seconds}


def table(results):
    """The results as a text table, one row per model."""
    lines = [f"{'model':<8}{'parameters':>11}{'steps':>7}{'seconds':>9}{'train':>8}{'dev':>8}{'test':>8}"]
    for name, r in results.items():
        train_loss = "-" if r["train"] is None else f"{r['train']:.4f}"
        lines.append(f"{name:<8}{r['parameters']:>11,}{r['steps'] or '-':>7}{r['seconds']:>9.1f}{train_loss:>8}"
                     f"{r['dev']:>8.4f}{r['test']:>8.4f}")
    return "\n".join(lines)


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main(sys.argv[1:])
