"""Section `train`: demos.char_gpt's whole training run, in minigrad and in PyTorch, wall time of each.

The run is nanoGPT's CPU configuration on Shakespeare (``../shared/data/tinyshakespeare.txt`` next
to the repository, or --train-data): char_gpt's defaults, 2000 iterations (--train-iters), with an
evaluation every 250 iterations and one at the end (with --quick, on 2 batches instead of 20).
Both frameworks really run every iteration (minigrad twice: eager, and through `minigrad.compile`
as `char_gpt --compile` runs it): the same model (PyTorch starts from minigrad's initial weights), the same batches (drawn once, in advance), the same learning-rate schedule, gradient
clipping and evaluations. Only char_gpt's checkpoints and text sample are left out. The two take
turns, one evaluation interval at a time, so that machine noise hits both; each framework's wall
time is the sum of its own intervals. Without the data file the section is skipped with a message.
"""
import os
import time

import numpy as np

from .children import REPO
from .models import build_torch_gpt, copy_weights
from .report import fmt, fmt_ratio, format_table, log, ratio
from .threads import minigrad_threads
from .timing import settle

DATA_NAME = "tinyshakespeare.txt"


def shakespeare_path():
    """``../shared/data/tinyshakespeare.txt`` next to the repository, or None if it is not there."""
    path = os.path.normpath(os.path.join(REPO, "..", "shared", "data", DATA_NAME))
    return path if os.path.exists(path) else None


def train_data(args):
    """-> (path of the text to train on, None) or (None, why the section is skipped)."""
    if args.train_data:
        if not os.path.exists(args.train_data):
            raise SystemExit(f"benchmark: --train-data {args.train_data}: no such file")
        return args.train_data, None
    path = shakespeare_path()
    if path is None:
        return None, (f"train section skipped: ../shared/data/{DATA_NAME} (next to the repository) is missing; "
                      "give a text file with --train-data FILE")
    return path, None


def _loop(c, batches, param_groups, evaluate, step):
    """The run's iterations [first, stop) as char_gpt runs them: schedule, evaluation, one step."""
    from minigrad import optim

    def run(first, stop):
        for it in range(first, stop):
            for group in param_groups:
                warmup = min(c.warmup_iters, c.max_iters)  # as char_gpt: a short run warms up throughout
                group["lr"] = optim.cosine_with_warmup(it, c.lr, c.min_lr, warmup, c.max_iters)
            if it % c.eval_interval == 0:
                evaluate()
            step(*batches["train"][it])

    return run


def _minigrad_run(c, config, batches, compiled=False):
    """-> (model, run(first, stop), evaluate() -> val loss): char_gpt's model, groups and loop body
    (compiled=True: the step through minigrad.compile, as `char_gpt --compile` runs it)."""
    import minigrad
    from minigrad import optim

    from .. import char_gpt

    model = char_gpt.GPT(char_gpt.GPTConfig(**config, dropout=c.dropout, bias=c.bias))
    opt = optim.AdamW(char_gpt.param_groups(model, c.weight_decay), lr=c.lr, betas=(0.9, c.beta2))

    def evaluate():
        model.eval()
        with minigrad.no_grad():
            losses = {s: float(np.mean([model(minigrad.tensor(x), minigrad.tensor(y))[1].item()
                                        for x, y in batches["eval_" + s]])) for s in ("train", "val")}
        model.train()
        return losses["val"]

    def train_step(x, y):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        if c.grad_clip > 0:
            optim.clip_grad_norm_(model.parameters(), c.grad_clip)
        opt.step()
        return loss

    train_step = minigrad.compile(train_step) if compiled else train_step

    def step(x, y):
        train_step(minigrad.tensor(x), minigrad.tensor(y)).item()

    return model, _loop(c, batches, opt.param_groups, evaluate, step), evaluate


def _torch_run(torch, c, config, batches, minigrad_model):
    """-> (run(first, stop), evaluate() -> val loss): the same run in PyTorch."""
    model = build_torch_gpt(torch, **config, bias=c.bias)
    copy_weights(minigrad_model, model, torch)
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": c.weight_decay},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=c.lr, betas=(0.9, c.beta2))
    evals = {k: [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches[k]] for k in ("eval_train", "eval_val")}

    def evaluate():
        model.eval()
        with torch.no_grad():
            losses = {s: float(np.mean([model(x, y)[1].item() for x, y in evals["eval_" + s]]))
                      for s in ("train", "val")}
        model.train()
        return losses["val"]

    def step(x, y):
        _, loss = model(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if c.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
        opt.step()
        loss.item()

    return _loop(c, batches, opt.param_groups, evaluate, step), evaluate


def bench_train(args, torch):
    """Wall time of the whole char_gpt training run in each framework, taking turns by interval."""
    import minigrad

    from .. import char_gpt

    path, skipped = train_data(args)
    if skipped:
        log("  " + skipped)
        return {"skipped": skipped, "iterations": args.train_iters}
    options = ["--max-iters", str(args.train_iters), "--seed", str(args.seed), "--data", path]
    if args.quick:  # a smoke run: evaluations on 2 batches instead of char_gpt's 20
        options += ["--eval-iters", "2"]
    c = char_gpt.build_parser().parse_args(options)
    with open(path, encoding="utf-8") as f:
        data = char_gpt.CharData(f.read())
    config = dict(vocab_size=len(data.chars), block_size=c.block_size, n_layer=c.n_layer, n_head=c.n_head,
                  d_model=c.d_model)
    minigrad.manual_seed(c.seed)
    batches = {"train": [data.batch("train", c.batch_size, c.block_size) for _ in range(c.max_iters)]}
    for split in ("train", "val"):
        batches["eval_" + split] = [data.batch(split, c.batch_size, c.block_size) for _ in range(c.eval_iters)]

    state = minigrad.default_generator.get_state()
    model, run, evaluate = _minigrad_run(c, config, batches)
    minigrad.default_generator.set_state(state)  # (the same initial weights as the eager run)
    _, run_compiled, evaluate_compiled = _minigrad_run(c, config, batches, compiled=True)
    runs, evaluations = {"minigrad": run, "compiled": run_compiled}, {"minigrad": evaluate, "compiled": evaluate_compiled}
    threads = {"minigrad": minigrad_threads(), "compiled": minigrad_threads()}
    if torch is not None:  # built before minigrad trains: it copies the initial weights
        runs["torch"], evaluations["torch"] = _torch_run(torch, c, config, batches, model)
        threads["torch"] = torch.get_num_threads()

    seconds = {name: 0.0 for name in runs}
    names = list(runs)
    for k, first in enumerate(range(0, c.max_iters, c.eval_interval)):
        stop = min(first + c.eval_interval, c.max_iters)
        log(f"  iterations {first}-{stop - 1} of {c.max_iters}")
        for name in names[k % len(names):] + names[:k % len(names)]:
            settle()
            t0 = time.perf_counter()
            runs[name](first, stop)
            seconds[name] += time.perf_counter() - t0
    val = {}
    for name in names:  # the final evaluation, as the demo does after its last iteration
        t0 = time.perf_counter()
        val[name] = evaluations[name]()
        seconds[name] += time.perf_counter() - t0
    return {"iterations": c.max_iters, "data": path, "vocab_size": len(data.chars),
            "config": {"n_layer": c.n_layer, "n_head": c.n_head, "d_model": c.d_model, "block_size": c.block_size,
                       "batch_size": c.batch_size, "bias": c.bias, "eval_interval": c.eval_interval,
                       "eval_iters": c.eval_iters},
            "threads": threads, "same_initial_weights": torch is not None,
            "seconds": seconds, "val_loss": val,
            "ratio": {"torch/minigrad": ratio(seconds.get("torch"), seconds["minigrad"]),
                      "torch/compiled": ratio(seconds.get("torch"), seconds["compiled"])}}


def format_train(result):
    if "skipped" in result:
        return result["skipped"]
    cfg = result["config"]
    rows = [[name, str(result["threads"][name]), fmt(sec, 1), fmt(1e3 * sec / result["iterations"], 1),
             fmt(result["val_loss"][name], 4)] for name, sec in result["seconds"].items()]
    title = (f"char_gpt training run: {result['iterations']} iterations on {os.path.basename(result['data'])} "
             f"(L{cfg['n_layer']} d{cfg['d_model']} T{cfg['block_size']} B{cfg['batch_size']}, evaluation every "
             f"{cfg['eval_interval']} iterations); measured wall time; ratio torch/minigrad = "
             f"{fmt_ratio(result['ratio']['torch/minigrad'])}, torch/compiled (minigrad.compile) = "
             f"{fmt_ratio(result['ratio'].get('torch/compiled'))}")
    return format_table(["framework", "threads", "wall s", "ms/iter", "final val loss"], rows, title)
