"""Teach an encoder-decoder Transformer to copy (or reverse) a sequence of symbols.

The Annotated Transformer's synthetic task: a vocabulary of 11 (0 is padding, 1 starts every
sequence, 2..10 are data), sequences of 10, N = 2 layers. After training, greedy decoding of
sequences the model never saw should reproduce them exactly.

    python -m demos.copy_task                      # copy
    python -m demos.copy_task --task reverse --noam --label-smoothing 0.1
"""
import sys

import numpy as np

import minigrad
from minigrad import optim
from minigrad.nn import functional as F
from transformer import Transformer

from .common import Timer, parser, progress, seed_everything, start

START = 1

# a small model that learns the copy task quickly: one encoder and one decoder layer (the tour
# and the pictures train it). With these settings held-out exact match reaches 100% within about
# 400 steps; SMALL_STEPS leaves a margin.
SMALL_SETTINGS = ["--num-layers", "1", "--d-model", "32", "--num-heads", "2", "--d-ff", "64",
                  "--batch-size", "64", "--lr", "5e-3", "--warmup", "20", "--eval-size", "500"]
SMALL_STEPS = 500


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.copy_task", training=True)
    p.add_argument("--task", choices=("copy", "reverse"), default="copy", help="what the target is")
    p.add_argument("--vocab", type=int, default=11, help="vocabulary size (0: padding, 1: start, 2..: symbols)")
    p.add_argument("--seq-len", type=int, default=10, help="tokens per sequence, the start token included")
    p.add_argument("--num-layers", type=int, default=2, help="encoder layers, and as many decoder layers")
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--num-heads", type=int, default=4, help="attention heads")
    p.add_argument("--d-ff", type=int, default=128, help="inner width of the feed-forward networks")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout probability")
    p.add_argument("--steps", type=int, default=600, help="training steps (batches)")
    p.add_argument("--batch-size", type=int, default=64, help="sequences per batch")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (ignored with --noam)")
    p.add_argument("--noam", action="store_true", help="the paper's schedule: d_model^-0.5 min(t^-0.5, t warmup^-1.5)")
    p.add_argument("--noam-factor", type=float, default=1.0, help="multiplies the --noam schedule")
    p.add_argument("--warmup", type=int, default=100, help="warmup steps")
    p.add_argument("--label-smoothing", type=float, default=0.0, help="the paper uses 0.1")
    p.add_argument("--eval-size", type=int, default=200, help="held-out sequences for exact match")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def make_batch(rng, batch_size, seq_len, vocab, task):
    """src (B, seq_len) starting with START; tgt is src (copy) or START + reversed data."""
    src = rng.integers(2, vocab, size=(batch_size, seq_len))
    src[:, 0] = START
    tgt = src.copy() if task == "copy" else np.concatenate([src[:, :1], src[:, :0:-1]], axis=1)
    return src, tgt


def exact_match(model, src, tgt):
    """Fraction of sequences that greedy decoding reproduces in full."""
    out = model.greedy_decode(minigrad.tensor(src), max_len=tgt.shape[1], start_id=START).numpy()
    return float(np.mean(np.all(out[:, : tgt.shape[1]] == tgt, axis=1))), out


def token_label(t):
    return "<s>" if t == START else str(t)


def train(args, eval_every=None):
    """Train an encoder-decoder Transformer on the task that `args` (from build_parser) describes.

    Every `eval_every` steps, and at the last, the history records (step, train_loss, val_loss),
    val_loss on the held-out sequences. Returns {"model", "loss" (the last step's), "exact_match"
    and "decoded" (greedy decoding of the held-out sequences training never saw), "src" (those
    sequences), "held_out" (how many), "history", "seconds"}."""
    seed_everything(args.seed)
    rng = minigrad.random.generator()
    model = Transformer(args.vocab, args.vocab, d_model=args.d_model, num_heads=args.num_heads,
                        num_layers=args.num_layers, d_ff=args.d_ff, dropout=args.dropout, max_len=64)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    if args.noam:
        schedule = optim.NoamLR(optimizer, args.d_model, args.warmup, args.noam_factor)
    else:
        # min(): a run shorter than the warmup (a smoke test) warms up over the whole run
        schedule = optim.WarmupCosineLR(optimizer, min(args.warmup, args.steps), args.steps, min_lr=args.lr / 10)
    # held-out sequences from their own random stream (9^9 possible sequences: a repeat is unlikely,
    # and exact match below drops any that training happened to see)
    held_src, held_tgt = make_batch(np.random.default_rng(args.seed + 1), args.eval_size,
                                    args.seq_len, args.vocab, args.task)

    def loss_on(src, tgt):  # teacher forcing: the decoder reads tgt[:, :-1] and predicts tgt[:, 1:]
        logits = model(minigrad.tensor(src), minigrad.tensor(tgt[:, :-1]))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),  # (rows, vocab)
                               label_smoothing=args.label_smoothing)

    def validation_loss():
        model.eval()
        with minigrad.no_grad():
            value = loss_on(held_src, held_tgt).item()
        model.train()
        return value

    history, seen = [], set()
    with Timer() as timer:
        bar = progress(range(1, args.steps + 1), desc=f"{args.task} task", disable=args.quiet)
        for step in bar:
            src, tgt = make_batch(rng, args.batch_size, args.seq_len, args.vocab, args.task)
            seen.update(map(bytes, src.astype(np.uint8)))
            loss = loss_on(src, tgt)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if eval_every and (step % eval_every == 0 or step == args.steps):
                history.append((step, loss.item(), validation_loss()))
    unseen = np.array([bytes(s) not in seen for s in held_src.astype(np.uint8)])
    accuracy, decoded = exact_match(model, held_src[unseen], held_tgt[unseen])
    return {"model": model, "loss": loss.item(), "exact_match": accuracy, "decoded": decoded,
            "src": held_src[unseen], "held_out": int(unseen.sum()), "history": history, "seconds": timer.seconds}


def train_small(steps, seed, quiet=False, eval_every=25):
    """`train` with SMALL_SETTINGS, keeping a loss history; a run under 100 steps (a quick look)
    evaluates on 50 held-out sequences instead of 500."""
    args = build_parser().parse_args(SMALL_SETTINGS + ["--steps", str(steps), "--seed", str(seed)])
    args.quiet = quiet
    if steps < 100:
        args.eval_size = 50
    return train(args, eval_every)


def attention_example(result):
    """The first held-out sequence of a `train` result as (src, decoder input, src labels, decoder
    input labels): what the pictures run through the model to draw its attention."""
    src = result["src"][0]
    labels = [token_label(t) for t in src]
    return src, src[:-1], labels, labels[:-1]  # the decoder reads the target without its last token


def main(argv=None):
    args = build_parser().parse_args(argv)
    start(args, "python -m demos.copy_task")
    result = train(args)
    for src, out in zip(result["src"][:3], result["decoded"][:3]):
        print(f"  source {src.tolist()}  ->  decoded {out.tolist()}")
    print(f"copy_task ({args.task}): {args.steps} steps in {result['seconds']:.1f} s, final loss {result['loss']:.4f}, "
          f"exact match {100 * result['exact_match']:.1f}% on {result['held_out']} held-out sequences")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
