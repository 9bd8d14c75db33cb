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

from .common import Timer, parser, progress, seed_everything

START = 1


def build_parser():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--task", choices=("copy", "reverse"), default="copy")
    p.add_argument("--vocab", type=int, default=11)
    p.add_argument("--seq-len", type=int, default=10)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--num-heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (ignored with --noam)")
    p.add_argument("--noam", action="store_true", help="the paper's schedule: d_model^-0.5 min(t^-0.5, t warmup^-1.5)")
    p.add_argument("--noam-factor", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--label-smoothing", type=float, default=0.0, help="the paper uses 0.1")
    p.add_argument("--eval-size", type=int, default=200, help="held-out sequences for exact match")
    p.add_argument("--quiet", action="store_true")
    return p


def make_batch(rng, batch_size, seq_len, vocab, task):
    """src (B, seq_len) starting with START; tgt is src (copy) or START + reversed data."""
    src = rng.integers(2, vocab, size=(batch_size, seq_len))
    src[:, 0] = START
    tgt = src.copy() if task == "copy" else np.concatenate([src[:, :1], src[:, :0:-1]], axis=1)
    return src, tgt


def exact_match(model, src, tgt):
    """Fraction of sequences that greedy decoding reproduces in full."""
    out = model.greedy_decode(minigrad.tensor(src), max_len=tgt.shape[1], start_id=START).data
    return float(np.mean(np.all(out[:, : tgt.shape[1]] == tgt, axis=1))), out


def train(args):
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

    held_out_src, held_out_tgt = make_batch(np.random.default_rng(args.seed + 1), args.eval_size,
                                            args.seq_len, args.vocab, args.task)
    seen = set()
    with Timer() as timer:
        bar = progress(range(args.steps), desc=f"{args.task} task", disable=args.quiet)
        for _ in bar:
            src, tgt = make_batch(rng, args.batch_size, args.seq_len, args.vocab, args.task)
            seen.update(map(bytes, src.astype(np.uint8)))
            # teacher forcing: the decoder reads tgt[:, :-1] and predicts tgt[:, 1:]
            logits = model(minigrad.tensor(src), minigrad.tensor(tgt[:, :-1]))
            loss = F.cross_entropy(logits, tgt[:, 1:], label_smoothing=args.label_smoothing)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    unseen = np.array([bytes(s) not in seen for s in held_out_src.astype(np.uint8)])
    accuracy, decoded = exact_match(model, held_out_src[unseen], held_out_tgt[unseen])
    for s, d in zip(held_out_src[:3], decoded[:3]):
        print(f"  source {s.tolist()}  ->  decoded {d.tolist()}")
    print(f"copy_task ({args.task}): {args.steps} steps in {timer.seconds:.1f} s, final loss {loss.item():.4f}, "
          f"exact match {100 * accuracy:.1f}% on {int(unseen.sum())} held-out sequences")
    return {"loss": loss.item(), "exact_match": accuracy, "seconds": timer.seconds, "model": model}


def main(argv=None):
    return train(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
