"""Train a character-level GPT on a text file, nanoGPT style, on the CPU.

    python -m demos.char_gpt                                # built-in corpus, no download
    python -m demos.char_gpt --data ../shared/data/tinyshakespeare.txt
    python -m demos.char_gpt --resume                       # continue the run in --out
    python -m demos.sample                                  # text from its best checkpoint
    python -m demos.char_gpt --norm rmsnorm --position rope --mlp swiglu --n-kv-head 2   # LLaMA-style

The defaults are nanoGPT's Shakespeare configuration for a CPU. The first 90% of the characters
train, the last 10% validate. AdamW with linear warmup and cosine decay, gradient clipping.

Every --log-interval steps a line gives the mean training loss of those steps (the loss plot draws
these points); every --eval-interval steps both losses are estimated on --eval-iters batches, and
when the validation loss is the best so far the run is saved to OUT/ckpt.npz, what demos.sample
reads (--always-save: at every evaluation). Ctrl-C finishes the current step, saves OUT/last.npz
and says how to continue; --resume continues from the later of last.npz and ckpt.npz, with the
model's shape, its vocabulary and the run's settings taken from the checkpoint. A NaN or infinite
loss stops the run, and nothing of it is saved.
"""
import dataclasses
import math
import os
import sys

import numpy as np

import minigrad
from minigrad import optim
from transformer import GPT, GPTConfig

from .common import CtrlC, given_flags, parser, plot_losses, progress, read_text, start

PROGRAM = "python -m demos.char_gpt"
OUT = "out/char_gpt"
BEST, LAST = "ckpt.npz", "last.npz"
DEFAULT_CHECKPOINT = os.path.join(OUT, BEST)  # what demos.sample reads by default

# the model's shape: a resumed run takes these from its checkpoint, and refuses flags that differ
MODEL_FLAGS = ("n_layer", "n_head", "d_model", "block_size", "bias", "norm", "position", "mlp", "n_kv_head")
# the run's settings: a resumed run takes these from its checkpoint unless the command line gives them
RUN_FLAGS = ("data", "batch_size", "max_iters", "lr", "min_lr", "warmup_iters", "weight_decay", "beta2", "grad_clip",
             "dropout", "eval_interval", "eval_iters", "log_interval", "always_save", "sample_chars")


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.char_gpt", training=True)
    p.add_argument("--data", help="a UTF-8 text file (default: a corpus built from Python's own docstrings)")
    p.add_argument("--n-layer", type=int, default=4, help="Transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    p.add_argument("--d-model", type=int, default=128, help="model width (nanoGPT: n_embd)")
    p.add_argument("--block-size", type=int, default=64, help="characters of context")
    p.add_argument("--batch-size", type=int, default=12, help="sequences per step")
    p.add_argument("--max-iters", type=int, default=2000, help="training steps in all (a resumed run counts on)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--min-lr", type=float, default=1e-4, help="learning rate at the end of the cosine decay")
    p.add_argument("--warmup-iters", type=int, default=100, help="steps of linear warmup")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decay for matrices (not biases, norms)")
    p.add_argument("--beta2", type=float, default=0.99, help="AdamW's beta2")
    p.add_argument("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this (0: off)")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout probability")
    p.add_argument("--bias", action="store_true",
                   help="biases in the Linear and LayerNorm layers (without the flag none, as in nanoGPT's config)")
    p.add_argument("--norm", choices=("layernorm", "rmsnorm"), default="layernorm", help="the blocks' normalization")
    p.add_argument("--position", choices=("learned", "rope"), default="learned",
                   help="learned position embeddings (GPT-2) or rotary embeddings (LLaMA)")
    p.add_argument("--mlp", choices=("gelu", "swiglu"), default="gelu", help="the feed-forward network")
    p.add_argument("--n-kv-head", type=int, default=None,
                   help="key/value heads for grouped-query attention (default: --n-head)")
    p.add_argument("--log-interval", type=int, default=50,
                   help="print the mean training loss every N steps (the points of the loss plot)")
    p.add_argument("--eval-interval", type=int, default=250, help="estimate both losses every N steps")
    p.add_argument("--eval-iters", type=int, default=20, help="batches per loss estimate")
    p.add_argument("--always-save", action="store_true",
                   help="save at every evaluation (without the flag, only when the validation loss is the best)")
    p.add_argument("--out", default=OUT, help="folder for the checkpoints and the loss plot")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out (its last.npz or ckpt.npz, whichever is later)")
    p.add_argument("--sample-chars", type=int, default=300, help="characters to generate at the end")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--compile", action="store_true",
                   help="replay the training step with minigrad.compile: the same losses, less Python per step")
    return p


class CharData:
    """Characters -> ids, a 90/10 split, and random (x, y) batches where y is x shifted by one.

    chars: the vocabulary, e.g. a trained model's (default: the characters of the text)."""

    def __init__(self, text, chars=None):
        self.chars = sorted(set(text)) if chars is None else list(chars)
        self.index = {c: i for i, c in enumerate(self.chars)}
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"the text has {len(unknown)} characters outside the vocabulary of {len(self.chars)}: "
                             f"{''.join(unknown[:20])!r}{' ...' if len(unknown) > 20 else ''}")
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


# ---------------------------------------------------------------------------- a run and its checkpoints
@dataclasses.dataclass
class Run:
    """Everything a checkpoint holds: the model and its vocabulary, the optimizer, and the run so far."""
    data: CharData
    model: GPT
    optimizer: optim.AdamW
    step: int = 0  # training steps done
    best_val: float = math.inf
    best_step: int = None  # the step of the best validation loss (the one in ckpt.npz)
    history: list = dataclasses.field(default_factory=list)  # [(step, train_loss, val_loss)], one per evaluation
    train_log: list = dataclasses.field(default_factory=list)  # [(step, mean training loss)], every log_interval

    def save(self, path, args):
        minigrad.save({
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "config": dataclasses.asdict(self.model.config), "chars": "".join(self.data.chars),
            "settings": {name: getattr(args, name) for name in RUN_FLAGS},
            "iter": self.step, "best_val": self.best_val, "best_iter": self.best_step,
            "history": [list(h) for h in self.history], "train_log": [list(t) for t in self.train_log],
            "rng": minigrad.random.get_state(),
        }, path)


def load_checkpoint(path, program, missing_hint):
    """The checkpoint at path, or SystemExit with a message (no traceback) if there is none or it
    is not a char_gpt checkpoint."""
    if not os.path.exists(path):
        raise SystemExit(f"{program}: no checkpoint at {path}; {missing_hint}")
    try:
        ckpt = minigrad.load(path)
    except (OSError, minigrad.CheckpointError) as error:
        raise SystemExit(f"{program}: cannot read the checkpoint {path}: {error}") from None
    lacking = [key for key in ("model", "config", "chars") if key not in ckpt]
    if lacking:
        raise SystemExit(f"{program}: {path} is a minigrad checkpoint but not one of demos.char_gpt "
                         f"(it has no {', '.join(lacking)})")
    return ckpt


def model_from_checkpoint(ckpt, dropout=None):
    """GPT with the checkpoint's config and weights, and its vocabulary as a CharData (no text)."""
    config = dict(ckpt["config"])
    if dropout is not None:
        config["dropout"] = dropout
    model = GPT(GPTConfig(**config))
    model.load_state_dict(ckpt["model"])
    return model, CharData("", ckpt["chars"])


def new_run(args):
    data = CharData(read_text(args.data))
    config = GPTConfig(vocab_size=len(data.chars), block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, d_model=args.d_model, dropout=args.dropout, bias=args.bias,
                       norm=args.norm, position=args.position, mlp=args.mlp, n_kv_head=args.n_kv_head)
    model = GPT(config)
    earlier = [name for name in (BEST, LAST) if os.path.exists(os.path.join(args.out, name))]
    if earlier:
        print(f"{args.out} holds the checkpoint of an earlier run ({', '.join(earlier)}): this run replaces it "
              "(--resume would continue it)")
        if LAST in earlier:  # so that a later --resume cannot pick the earlier run's last state
            os.remove(os.path.join(args.out, LAST))
    optimizer = optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, args.beta2))
    return Run(data, model, optimizer)


def resume_run(args, given):
    """The run saved in args.out, with its shape, vocabulary and settings; args takes the settings
    that the command line does not give."""
    paths = [os.path.join(args.out, name) for name in (LAST, BEST) if os.path.exists(os.path.join(args.out, name))]
    if not paths:
        raise SystemExit(f"{PROGRAM} --resume: no checkpoint in {args.out} (neither {LAST} nor {BEST}); "
                         f"leave out --resume to start a run there, or give --out the folder of an earlier run")
    checkpoints = [(load_checkpoint(path, PROGRAM, ""), path) for path in paths]
    ckpt, path = max(checkpoints, key=lambda c: int(c[0].get("iter", 0)))  # the later; on a tie last.npz
    config = ckpt["config"]
    conflicts = [(name, config[name], getattr(args, name)) for name in MODEL_FLAGS
                 if name in given and getattr(args, name) != config[name]]
    if conflicts:
        lines = "\n".join(f"    --{name.replace('_', '-')} {ours} (the checkpoint's model has {name} = {theirs})"
                          for name, theirs, ours in conflicts)
        raise SystemExit(f"{PROGRAM} --resume: a resumed model keeps its shape, but these flags change it:\n{lines}\n"
                         f"leave them out, or train a new model in another --out")
    settings = ckpt.get("settings", {})
    for name in RUN_FLAGS:
        if name not in given and name in settings:
            setattr(args, name, settings[name])
    for name in MODEL_FLAGS:
        setattr(args, name, config[name])
    if args.data and not os.path.exists(args.data):
        raise SystemExit(f"{PROGRAM} --resume: the checkpoint trained on {args.data}, which is not there; "
                         "give the text with --data")
    model, vocabulary = model_from_checkpoint(ckpt, args.dropout)
    try:
        data = CharData(read_text(args.data), vocabulary.chars)
    except ValueError as error:
        raise SystemExit(f"{PROGRAM} --resume: the text of {args.data or 'the built-in corpus'} does not fit the "
                         f"checkpoint's model: {error}") from None
    optimizer = optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, args.beta2))
    optimizer.load_state_dict(ckpt["optimizer"])
    minigrad.random.set_state(ckpt["rng"])
    best_step = ckpt.get("best_iter")
    run = Run(data, model, optimizer, step=int(ckpt["iter"]), best_val=float(ckpt["best_val"]),
              best_step=None if best_step is None else int(best_step),
              history=[tuple(h) for h in ckpt.get("history", [])],
              train_log=[tuple(t) for t in ckpt.get("train_log", [])])
    overridden = sorted(given & set(RUN_FLAGS))
    print(f"resumed from {path} at step {run.step}; the model, vocabulary and settings are the checkpoint's"
          + (f", except {', '.join('--' + n.replace('_', '-') for n in overridden)}" if overridden else ""))
    return run


# ---------------------------------------------------------------------------- training
def evaluate(run, args, bar, best_path):
    """Estimate both losses, keep them in the history, save if the validation loss is the best."""
    with bar.paused():
        losses = estimate_loss(run.model, run.data, args)
        run.history.append((run.step, losses["train"], losses["val"]))
        line = f"step {run.step}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}"
        if not (math.isfinite(losses["train"]) and math.isfinite(losses["val"])):
            bar.write(line)
            stop_on_non_finite("estimated loss", losses["val"], run, args, best_path)
        if run.step > 0:  # the untrained model is not worth a checkpoint
            improved = losses["val"] < run.best_val
            if improved:
                run.best_val, run.best_step = losses["val"], run.step
            if improved or args.always_save:
                run.save(best_path, args)
                line += f"; saved {best_path}" + (" (best val loss so far)" if improved else " (--always-save)")
            else:
                line += f"; not saved (the best val loss is {run.best_val:.4f}, at step {run.best_step})"
        bar.write(line)
    return losses


def stop_on_non_finite(what, value, run, args, best_path):
    kept = f"the best checkpoint, step {run.best_step} (val loss {run.best_val:.4f}), is still in {best_path}" \
        if run.best_step is not None else "no checkpoint was written"
    clipping = "" if args.grad_clip > 0 else ", or gradient clipping is off (--grad-clip 0)"
    raise SystemExit(
        f"{PROGRAM}: the {what} is {value} after {run.step} steps; training stopped and this state was not saved "
        f"({kept}).\n"
        f"Often the learning rate is too high (--lr {args.lr:g}; nanoGPT's is 1e-3){clipping}. To find the first "
        "op that makes a NaN or an infinity, run a step under minigrad.detect_anomaly():\n"
        "    with minigrad.detect_anomaly():\n"
        "        _, loss = model(x, y)\n"
        "        loss.backward()")


def train(args, given=frozenset()):
    """Train (or, with args.resume, continue) a run; returns the last evaluation's losses."""
    start(args, PROGRAM, needs=("tqdm", "matplotlib"))
    os.makedirs(args.out, exist_ok=True)
    best_path, last_path = os.path.join(args.out, BEST), os.path.join(args.out, LAST)
    run = resume_run(args, given) if args.resume else new_run(args)
    if run.step >= args.max_iters:
        raise SystemExit(f"{PROGRAM}: the run is at step {run.step} and --max-iters is {args.max_iters}: nothing to "
                         "train; give a larger --max-iters to train longer")
    print(f"{run.model.num_parameters():,} parameters, vocabulary {len(run.data.chars)}, "
          f"{len(run.data.splits['train']):,} training characters")

    def train_step(x, y):
        """One update: the loss of a batch, its gradients (clipped), AdamW's step. Returns the loss."""
        _, loss = run.model(x, y)
        run.optimizer.zero_grad()
        loss.backward()
        if args.grad_clip > 0:
            optim.clip_grad_norm_(run.model.parameters(), args.grad_clip)
        run.optimizer.step()
        return loss

    train_step = minigrad.compile(train_step) if args.compile else train_step
    first_step = run.step
    bar = progress(total=args.max_iters - first_step, desc="training", disable=args.quiet, every=0)
    updating, interval_losses = False, []
    try:
        with CtrlC() as ctrl_c:
            if run.step == 0:
                evaluate(run, args, bar, best_path)
            while run.step < args.max_iters:
                ctrl_c.check()  # a Ctrl-C during the last step stops here, between two steps
                # a run shorter than the warmup (a smoke test) warms up over the whole run
                warmup = min(args.warmup_iters, args.max_iters)
                lr = optim.cosine_with_warmup(run.step, args.lr, args.min_lr, warmup, args.max_iters)
                for group in run.optimizer.param_groups:
                    group["lr"] = lr
                x, y = run.data.batch("train", args.batch_size, args.block_size)
                updating = True  # an interrupt inside the update would leave some weights updated, some not
                value = train_step(minigrad.tensor(x), minigrad.tensor(y)).item()
                updating = False
                if not math.isfinite(value):  # (this state is not saved: the weights were updated from it)
                    stop_on_non_finite("training loss", value, run, args, best_path)
                run.step += 1
                interval_losses.append(value)
                bar.update(loss=f"{value:.3f}")
                if run.step % args.log_interval == 0 or run.step == args.max_iters:
                    run.train_log.append((run.step, float(np.mean(interval_losses))))
                    bar.write(f"step {run.step}: loss {run.train_log[-1][1]:.4f} (mean of the last "
                              f"{len(interval_losses)} steps), {bar.pace()}")
                    interval_losses = []
                if run.step % args.eval_interval == 0 or run.step == args.max_iters:
                    losses = evaluate(run, args, bar, best_path)
    except KeyboardInterrupt:
        bar.close()
        if updating:
            print(f"\ninterrupted while the weights were being updated, so not saved; the last checkpoint is "
                  f"{best_path if run.best_step is not None else 'none'}", flush=True)
        else:
            run.save(last_path, args)
            print(f"\ninterrupted at step {run.step}: saved {last_path}\n"
                  f"continue with: {PROGRAM} --resume --out {args.out}", flush=True)
        raise SystemExit(130) from None
    finally:
        bar.close()

    if run.best_step != run.step:  # the final state is not the best one: keep it too, to train on from it
        run.save(last_path, args)
        print(f"saved the final state to {last_path} (--resume --max-iters N trains on from it)")
    plot = plot_losses(run.history, os.path.join(args.out, "loss.png"), "char GPT", train=run.train_log)

    start_char = "\n" if "\n" in run.data.index else run.data.chars[0]
    sample = run.model.generate(minigrad.tensor(np.array([run.data.encode(start_char)])), args.sample_chars,
                                temperature=0.8)
    print("-" * 60)
    print(run.data.decode(sample.numpy()[0].tolist()))
    print("-" * 60)
    steps = run.step - first_step
    seconds = bar.active_seconds()
    print(f"char_gpt: {steps} iterations in {seconds:.1f} s ({1000 * seconds / max(steps, 1):.1f} ms/iter, "
          f"evaluations not counted), train loss {losses['train']:.4f}, val loss {losses['val']:.4f}; "
          f"best val loss {run.best_val:.4f} at step {run.best_step} in {best_path}; loss plot {plot}; "
          f"more text: python -m demos.sample --checkpoint {best_path}")
    return {**losses, "best_val": run.best_val, "best_step": run.best_step, "checkpoint": best_path}


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    try:
        return train(args, given_flags(p, argv))
    except KeyboardInterrupt:  # outside the training loop (loading, the plot, the sample): nothing to save
        raise SystemExit(130) from None


if __name__ == "__main__":
    main(sys.argv[1:])
