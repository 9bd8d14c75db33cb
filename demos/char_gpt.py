"""Train a character-level GPT on a text file, nanoGPT style, on the CPU.

    python -m demos.char_gpt                                # built-in corpus, no download
    python -m demos.char_gpt --data ../shared/data/tinyshakespeare.txt --max-iters 2000
    python -m demos.char_gpt --norm rmsnorm --position rope --mlp swiglu --n-kv-head 2   # LLaMA-style

The first 90% of the characters train, the last 10% validate. AdamW with linear warmup and cosine
decay, gradient clipping, checkpoints in --out (resume with --resume), a text sample at the end.
"""
import argparse
import dataclasses
import math
import os
import sys

import numpy as np

import minigrad
from minigrad import optim
from transformer import GPT, GPTConfig

from .common import Timer, parser, plot_losses, progress, read_text, seed_everything


def build_parser():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data", help="a UTF-8 text file (default: a corpus built from Python's own docstrings)")
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=12)
    p.add_argument("--max-iters", type=int, default=2000)
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--min-lr", type=float, default=1e-4, help="learning rate at the end of the cosine decay")
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decay for matrices (not biases, norms)")
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this (0: off)")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--bias", action=argparse.BooleanOptionalAction, default=False,
                   help="biases in Linear and LayerNorm layers (nanoGPT's default: none)")
    p.add_argument("--norm", choices=("layernorm", "rmsnorm"), default="layernorm", help="the blocks' normalization")
    p.add_argument("--position", choices=("learned", "rope"), default="learned",
                   help="learned position embeddings (GPT-2) or rotary embeddings (LLaMA)")
    p.add_argument("--mlp", choices=("gelu", "swiglu"), default="gelu", help="the feed-forward network")
    p.add_argument("--n-kv-head", type=int, default=None,
                   help="key/value heads for grouped-query attention (default: --n-head)")
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--eval-iters", type=int, default=20)
    p.add_argument("--out", default="out/char_gpt", help="folder for checkpoints and the loss plot")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.npz")
    p.add_argument("--sample-chars", type=int, default=300, help="characters to generate at the end")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


class CharData:
    """Characters -> ids, a 90/10 split, and random (x, y) batches where y is x shifted by one."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = np.array([self.index[c] for c in text], dtype=np.int64)
        n = int(0.9 * len(ids))
        self.splits = {"train": ids[:n], "val": ids[n:]}

    def encode(self, s):
        return [self.index[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)

    def batch(self, split, batch_size, block_size):
        data = self.splits[split]
        starts = minigrad.random.generator().integers(0, len(data) - block_size - 1, size=batch_size)
        x = np.stack([data[s:s + block_size] for s in starts])
        y = np.stack([data[s + 1:s + 1 + block_size] for s in starts])
        return x, y


def param_groups(model, weight_decay):
    """nanoGPT's rule: matrices (dim >= 2: weights, embeddings) decay; biases and norms do not."""
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def estimate_loss(model, data, args):
    model.eval()
    out = {}
    with minigrad.no_grad():
        for split in ("train", "val"):
            losses = [model(*map(minigrad.tensor, data.batch(split, args.batch_size, args.block_size)))[1].item()
                      for _ in range(args.eval_iters)]
            out[split] = float(np.mean(losses))
    model.train()
    return out


def train(args):
    seed_everything(args.seed)
    data = CharData(read_text(args.data))
    config = GPTConfig(vocab_size=len(data.chars), block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, d_model=args.d_model, dropout=args.dropout, bias=args.bias,
                       norm=args.norm, position=args.position, mlp=args.mlp, n_kv_head=args.n_kv_head)
    model = GPT(config)
    optimizer = optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, args.beta2))
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "ckpt.npz")
    start, history, best_val = 0, [], math.inf
    if args.resume:
        ckpt = minigrad.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        minigrad.random.set_state(ckpt["rng"])
        start, best_val = int(ckpt["iter"]), float(ckpt["best_val"])
        history = [tuple(h) for h in ckpt["history"]]
        print(f"resumed from {ckpt_path} at iteration {start}")
    print(f"{model.num_parameters():,} parameters, vocabulary {len(data.chars)}, "
          f"{len(data.splits['train']):,} training characters")

    bar = progress(range(start, args.max_iters), total=args.max_iters - start, desc="training", disable=args.quiet)
    loss = None
    with Timer() as timer:
        for it in bar:
            # a run shorter than the warmup (a smoke test) warms up over the whole run
            warmup = min(args.warmup_iters, args.max_iters)
            lr = optim.cosine_with_warmup(it, args.lr, args.min_lr, warmup, args.max_iters)
            for group in optimizer.param_groups:
                group["lr"] = lr
            if it % args.eval_interval == 0:
                losses = estimate_loss(model, data, args)
                history.append((it, losses["train"], losses["val"]))
                bar.write(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
                best_val = min(best_val, losses["val"])
            x, y = data.batch("train", args.batch_size, args.block_size)
            _, loss = model(minigrad.tensor(x), minigrad.tensor(y))
            optimizer.zero_grad()
            loss.backward()
            if args.grad_clip > 0:
                optim.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if (it + 1) % args.eval_interval == 0 or it + 1 == args.max_iters:
                save_checkpoint(ckpt_path, model, optimizer, config, it + 1, best_val, history, data)
    losses = estimate_loss(model, data, args)
    history.append((args.max_iters, losses["train"], losses["val"]))
    save_checkpoint(ckpt_path, model, optimizer, config, args.max_iters, min(best_val, losses["val"]), history, data)
    plot = plot_losses(history, os.path.join(args.out, "loss.png"), "char GPT")

    context = minigrad.tensor(np.array([data.encode("\n")]))
    sample = model.generate(context, args.sample_chars, temperature=0.8, top_k=None)
    print("-" * 60)
    print(data.decode(sample.data[0].tolist()))
    print("-" * 60)
    print(f"char_gpt: {args.max_iters - start} iterations in {timer.seconds:.1f} s "
          f"({1000 * timer.seconds / max(args.max_iters - start, 1):.1f} ms/iter), "
          f"train loss {losses['train']:.4f}, val loss {losses['val']:.4f}; loss plot {plot}")
    return losses


def save_checkpoint(path, model, optimizer, config, iteration, best_val, history, data):
    minigrad.save({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "config": dataclasses.asdict(config),
        "iter": iteration, "best_val": best_val, "history": [list(h) for h in history],
        "rng": minigrad.random.get_state(), "chars": "".join(data.chars),
    }, path)


def main(argv=None):
    return train(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
