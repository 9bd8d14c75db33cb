"""Where the time of a small training step goes: `python -m demos.benchmark.overhead`.

A step of a small model is mostly fixed cost, paid once per op whatever the batch size. This tool
splits one training step (forward, backward, optimizer step, zero_grad) of a model into

    ops' forward        time inside `Function.apply` (the engine's recording and the op's forward:
                        its checks, the kernel wrappers, the kernels, numpy)
    model code          the rest of the forward: modules, layers, Tensor methods
    ops' backward       time inside each op's `backward` (as the walk calls it)
    walk                the rest of backward: the topological order, version checks, gradient
                        accumulation, .grad, the links viz keeps
    optimizer           optimizer.step() and zero_grad()

for the GPT "small" config of `python -m demos.benchmark --only gpt`, on a full batch and on a
batch of one token (where almost no arithmetic is left, so what remains is fixed cost), and for a
tiny MLP (2 -> 32 -> 2, 256 points, Adam). Times are CPU time (`time.process_time`), medians over
the steps, on one thread: on a shared machine CPU time is steadier than wall time, and one thread
keeps the workers' polling out of it. The timers around each op add about a microsecond per op,
so the split steps are timed apart from the plain ones, whose median is the "step" column. The
last column is the same step through `minigrad.compile` (recorded once, then replayed: no model
code, no graph, no walk), timed in turns with the plain one.
"""
import argparse
import statistics
import time

import numpy as np

ADAM_LR = 1e-2


def _gpt(batch, block):
    import minigrad
    from minigrad import optim
    from transformer import GPT, GPTConfig

    from .models import ADAMW, GPT_CONFIGS

    _, config, _ = GPT_CONFIGS[0]
    minigrad.manual_seed(0)
    model = GPT(GPTConfig(**config))
    model.train()
    optimizer = optim.AdamW(model.parameters(), **ADAMW)
    rng = np.random.default_rng(0)
    batches = [tuple(minigrad.tensor(rng.integers(0, config["vocab_size"], (batch, block))) for _ in range(2))
               for _ in range(8)]
    counter = [0]

    def next_batch():
        counter[0] += 1
        return batches[counter[0] % len(batches)]

    return (lambda x, y: model(x, y)[1]), next_batch, optimizer


def _mlp():
    import minigrad
    from minigrad import nn, optim

    minigrad.manual_seed(0)
    rng = np.random.default_rng(0)
    x = minigrad.tensor(rng.standard_normal((256, 2)).astype(np.float32))
    y = minigrad.tensor((x.numpy()[:, 0] * x.numpy()[:, 1] > 0).astype(np.int64))
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))
    return (lambda x, y: nn.functional.cross_entropy(model(x), y)), (lambda: (x, y)), optim.Adam(model.parameters(),
                                                                                                 lr=ADAM_LR)


class _OpTimer:
    """While active, adds up the CPU time spent inside Function.apply and inside each backward."""

    def __init__(self):
        from minigrad import autograd

        self.autograd, self.forward, self.backward, self.depth = autograd, 0.0, 0.0, 0

    def __enter__(self):
        autograd, timer = self.autograd, self
        self.apply, self.call_backward = autograd.Function.__dict__["apply"], autograd._call_backward
        plain_apply = self.apply.__func__

        def apply(cls, *inputs, **params):
            timer.depth += 1  # (an op may call others: count the outermost only)
            start = time.process_time()
            try:
                return plain_apply(cls, *inputs, **params)
            finally:
                timer.depth -= 1
                if timer.depth == 0:
                    timer.forward += time.process_time() - start

        def call_backward(*args):
            start = time.process_time()
            try:
                return timer.call_backward(*args)
            finally:
                timer.backward += time.process_time() - start

        autograd.Function.apply, autograd._call_backward = classmethod(apply), call_backward
        return self

    def __exit__(self, *exc):
        self.autograd.Function.apply, self.autograd._call_backward = self.apply, self.call_backward


def measure(loss_fn, next_batch, optimizer, steps, warmup=5):
    """{part: median ms} over `steps` plain steps and as many split ones (see the docstring), and
    the step through minigrad.compile (recorded, then replayed)."""
    import minigrad

    def step(x, y):
        loss = loss_fn(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    compiled = minigrad.compile(step)
    for _ in range(warmup):
        step(*next_batch())
        compiled(*next_batch())
    plain, replayed = [], []
    parts = {k: [] for k in ("ops' forward", "model code", "ops' backward", "walk", "optimizer")}
    for _ in range(steps):
        for fn, times in ((step, plain), (compiled, replayed)):
            batch = next_batch()
            t0 = time.process_time()
            fn(*batch)
            times.append(time.process_time() - t0)
    for _ in range(steps):
        batch = next_batch()
        with _OpTimer() as ops:
            t0 = time.process_time()
            loss = loss_fn(*batch)
            t1 = time.process_time()
            loss.backward()
            t2 = time.process_time()
        optimizer.step()
        optimizer.zero_grad()
        t3 = time.process_time()
        parts["ops' forward"].append(ops.forward)
        parts["model code"].append(t1 - t0 - ops.forward)
        parts["ops' backward"].append(ops.backward)
        parts["walk"].append(t2 - t1 - ops.backward)
        parts["optimizer"].append(t3 - t2)
    return {"step": 1e3 * statistics.median(plain), **{k: 1e3 * statistics.median(v) for k, v in parts.items()},
            "compiled step": 1e3 * statistics.median(replayed)}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m demos.benchmark.overhead", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="steps timed per model (each way)")
    parser.add_argument("--only", choices=("gpt", "mlp"), help="one model only")
    args = parser.parse_args(argv)
    import minigrad

    minigrad.set_num_threads(1)
    models = []
    if args.only in (None, "gpt"):
        models += [("GPT small, batch (16, 32)", lambda: _gpt(16, 32)), ("GPT small, batch (1, 1)", lambda: _gpt(1, 1))]
    if args.only in (None, "mlp"):
        models += [("MLP 2-32-2, 256 points", _mlp)]
    rows = [(name, measure(*make(), args.steps)) for name, make in models]
    columns = list(rows[0][1])
    print(f"CPU ms per training step, medians of {args.steps} steps, one thread ({minigrad.get_backend()} backend)")
    print(f"{'':28s}" + "".join(f"{c:>15s}" for c in columns))  # (compiled step: minigrad.compile, replayed)
    for name, row in rows:
        print(f"{name:28s}" + "".join(f"{row[c]:15.3f}" for c in columns))
    return rows


if __name__ == "__main__":
    main()
