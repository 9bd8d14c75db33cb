"""Section `gpt`: one whole training step (forward, backward, AdamW, zero_grad) of each framework.

The candidates are minigrad at its default thread count (the number the ratio uses), minigrad on one
thread (for information), the same minigrad step through `minigrad.compile` (recorded once, then
replayed: its own ratio), and PyTorch on 1 and 2 threads (the ratio takes the faster). They train
the models of `models.py`; a first estimate of each step's cost sets how many steps fit the time
budget, and the steps are then timed in blocks, the frameworks taking turns block by block so that
machine noise hits all of them. The result is the median step time.
"""
from .models import GPT_CONFIGS, NANOGPT_CPU, make_minigrad_trainer, make_torch_trainer
from .report import fmt, fmt_ratio, format_table, log, ratio
from .threads import using_threads
from .timing import median, settle, time_steps, warm_up

TORCH_THREADS = (1, 2)


def make_candidates(config, batch_size, seed, torch, compiled=True):
    """-> ({name: (framework, step, threads)}, number of parameters, {framework: first loss}).

    threads None means the framework's default. The first step of each model runs here (it compiles
    minigrad's kernels, or loads them from the cache)."""
    step_mg, n_mg = make_minigrad_trainer(config, batch_size, seed)
    candidates = {"minigrad": ("minigrad", step_mg, None), "minigrad-1t": ("minigrad", step_mg, 1)}
    first_loss = {"minigrad": float(step_mg().item())}
    if compiled:  # (compiled=False: without the minigrad.compile candidate)
        step_compiled, _ = make_minigrad_trainer(config, batch_size, seed, compiled=True)
        candidates["compiled"] = ("minigrad", step_compiled, None)
        first_loss["compiled"] = float(step_compiled().item())
        step_compiled()  # (the second call records the tape: from here on, every call replays it)
    if torch is not None:
        step_t, n_t = make_torch_trainer(torch, config, batch_size, seed)
        if n_t != n_mg:
            raise AssertionError(f"GPT {config}: PyTorch model has {n_t} parameters, minigrad's {n_mg}")
        first_loss["torch"] = float(step_t().item())
        for threads in TORCH_THREADS:
            candidates[f"torch-{threads}t"] = ("torch", step_t, threads)
    return candidates, n_mg, first_loss


def time_candidate(candidate, n, torch, warmup_steps=0):
    """Seconds of each of n steps of candidate (framework, step, threads), after `warmup_steps`
    untimed steps and `warm_up` (which wakes the cores and warms the caches the last one used)."""
    framework, step, threads = candidate
    with using_threads(framework, threads, torch):
        settle()
        for _ in range(warmup_steps):
            step()
        warm_up(step)
        return time_steps(step, n)


def bench_gpt(args, torch):
    results = []
    for name, config, batch_size in GPT_CONFIGS:
        log(f"  GPT step, {name} config")
        candidates, parameters, first_loss = make_candidates(config, batch_size, args.seed, torch)
        if args.repeats or args.quick:
            total = args.repeats or args.gpt_min_steps
        else:  # warm-up, and a first estimate of each step's cost
            estimate = {c: min(time_candidate(candidates[c], args.gpt_warmup, torch)) for c in candidates}
            total = max(args.gpt_min_steps, min(int(args.gpt_budget / max(estimate.values())), 200))
        n_blocks = max(1, min(args.gpt_blocks, total))
        per_block = -(-total // n_blocks)
        times = {c: [] for c in candidates}
        names = list(candidates)
        for block in range(n_blocks):  # take turns so that machine noise hits every candidate
            for c in names[block % len(names):] + names[:block % len(names)]:
                times[c] += time_candidate(candidates[c], per_block, torch)
        ms = {c: 1e3 * median(t) for c, t in times.items()}
        torch_ms = {c: v for c, v in ms.items() if candidates[c][0] == "torch"}
        best = min(torch_ms, key=torch_ms.get) if torch_ms else None
        results.append({
            "config": name, **config, "batch_size": batch_size, "parameters": parameters,
            "steps_timed": {c: len(t) for c, t in times.items()}, "ms_per_step": ms,
            "ms_min": {c: 1e3 * min(t) for c, t in times.items()},
            "torch_best": best, "first_loss": first_loss,
            "ratio": {"torch/minigrad": ratio(torch_ms.get(best), ms["minigrad"]),
                      "torch/compiled": ratio(torch_ms.get(best), ms["compiled"])},
        })
    return results


def format_gpt(rows):
    table = []
    for r in rows:
        ms = r["ms_per_step"]
        table.append([f"{r['config']} (L{r['n_layer']} d{r['d_model']} T{r['block_size']} B{r['batch_size']})",
                      f"{r['parameters']:,}", fmt(ms["minigrad"], 1), fmt(ms.get("minigrad-1t"), 1),
                      fmt(ms.get("compiled"), 1), fmt(ms.get("torch-1t"), 1), fmt(ms.get("torch-2t"), 1),
                      r["torch_best"] or "-", fmt_ratio(r["ratio"]["torch/minigrad"]),
                      fmt_ratio(r["ratio"].get("torch/compiled"))])
    return format_table(["GPT training step", "params", "minigrad ms", "minigrad 1T ms", "compiled ms", "torch 1T ms",
                         "torch 2T ms", "best torch", "torch/minigrad", "torch/compiled"], table,
                        "GPT training step (forward, backward, AdamW, zero_grad): median ms/step; "
                        "ratio = best torch ms / minigrad ms (minigrad's default threads; the 1T column is "
                        "for information; 'compiled' is the same step through minigrad.compile, replayed)")


def profile_gpt_step(args):
    """cProfile of minigrad GPT steps at nanoGPT's CPU configuration: the top functions by own time."""
    import cProfile
    import io
    import pstats

    name, config, batch_size = GPT_CONFIGS[NANOGPT_CPU]
    step, _ = make_minigrad_trainer(config, batch_size, args.seed)
    for _ in range(3):
        step()
    profiler = cProfile.Profile()
    n = 5 if args.quick else 20
    profiler.enable()
    for _ in range(n):
        step()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
    return f"cProfile of {n} minigrad GPT steps ({name} config), top {args.profile} by own time:\n" + out.getvalue()
