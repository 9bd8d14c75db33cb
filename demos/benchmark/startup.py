"""Section `startup`: how long a newcomer waits, from `python` to the end of the first training step.

Each run is a fresh ``python`` process whose kernel cache (NUMBA_CACHE_DIR and MINIGRAD_CACHE_DIR)
is a new, empty temporary folder. It runs ``import minigrad, transformer`` and then one training
step of nanoGPT's CPU configuration (vocabulary 65, block 64, 4 layers, 4 heads, width 128,
batch 12, AdamW): the cold time, which includes compiling every kernel the step needs. Then a
second process does the same with the cache the first one filled: the warm time. Each time runs
from just before the parent starts the process (so the interpreter's own start-up counts) to the
end of the first step. Cold and warm are the medians of --startup-runs runs each.

On an empty cache minigrad starts a second process that compiles some kernels and the thread
pool's entries (kernels/_warm.py); it finishes its work even if the first process has exited.
The warm run starts once that process has exited, so that it finds the cache the first run
leaves behind, complete; how long it went on after the cold process ended is reported too.
So are the CPU seconds of each process to the end of its step, and how long the cold one waited for
the compile-ahead process: on a machine shared with other programs these move far less than the
wall times (a waiting process uses no CPU, so a longer wait shows there, not in the CPU time).

Smaller marks, for information: the same two kinds of process (one cold, one warm, in another new
cache) that only import minigrad and run a first float32 matmul and a softmax forward + backward.
"""
import os
import shutil
import sys
import tempfile
import time

from .children import child_env, run_child
from .report import fmt, format_table, log
from .timing import median

# argv: the parent's time.time() just before it started the process, and "gpt" or "kernels"
STARTUP_SCRIPT = r"""
import json, sys, time
launch = float(sys.argv[1])
marks = {"python started": time.time() - launch}
import numpy as np
import minigrad
marks["import minigrad"] = time.time() - launch
rng = np.random.default_rng(0)
if sys.argv[2] == "gpt":
    import transformer
    marks["+ import transformer"] = time.time() - launch
    from minigrad import optim
    model = transformer.GPT(transformer.GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128))
    opt = optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    x, y = (minigrad.tensor(rng.integers(0, 65, (12, 64))) for _ in range(2))
    _, loss = model(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    loss.item()
    marks["+ first training step"] = time.time() - launch
else:
    a = minigrad.tensor(rng.standard_normal((64, 64), dtype=np.float32))
    (a @ a).numpy()
    marks["+ float32 matmul"] = time.time() - launch
    x = minigrad.tensor(rng.standard_normal((8, 16), dtype=np.float32), requires_grad=True)
    x.softmax(axis=-1).sum().backward()
    marks["+ softmax fwd/bwd"] = time.time() - launch
from minigrad.kernels import _warm
ahead = _warm._ahead  # the compile-ahead process, if this run started one
print(json.dumps({"marks": marks, "backend": minigrad.get_backend(), "cpu_s": time.process_time(),
                  "ahead_pid": None if ahead is None else ahead.process.pid,
                  "waited_s": 0.0 if ahead is None else ahead.waited}))
"""
HEADLINE = "+ first training step"


def _run(kind, cache):
    """One fresh process with kernel cache `cache`: -> (result with "marks" and "process wall")."""
    env = child_env(NUMBA_CACHE_DIR=cache, MINIGRAD_CACHE_DIR=cache)
    result, wall = run_child([sys.executable, "-c", STARTUP_SCRIPT, repr(time.time()), kind], "start-up", env)
    result["marks"]["process wall"] = wall  # to the end of the process, interpreter shut-down included
    return result


def _wait_for_exit(pid, timeout=120.0):
    """Wait until process `pid` (not our child: the cold run's compile-ahead process) has exited;
    -> the seconds waited."""
    started = time.perf_counter()
    while pid is not None and time.perf_counter() - started < timeout:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            break
        except OSError:  # (Windows: no signal 0)
            break
        time.sleep(0.05)
    return time.perf_counter() - started


def _cold_and_warm(kind):
    """A cold run in a new, empty cache, then (once the cold run's compile-ahead process has
    finished) a warm run in the cache it filled."""
    cache = tempfile.mkdtemp(prefix="minigrad-kernel-cache-")
    try:
        cold = _run(kind, cache)
        cold["ahead_tail_s"] = _wait_for_exit(cold.get("ahead_pid"))
        return cold, _run(kind, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _medians(runs):
    return {mark: median([r["marks"][mark] for r in runs]) for mark in runs[0]["marks"]}


def bench_startup(args):
    result = {"cache_dir": "a new, empty temporary NUMBA_CACHE_DIR and MINIGRAD_CACHE_DIR per cold run"}
    if args.startup_gpt:
        cold, warm = [], []
        for i in range(args.startup_runs):
            log(f"  start-up {i + 1} of {args.startup_runs}: cold cache, then warm (subprocesses)")
            c, w = _cold_and_warm("gpt")
            cold.append(c)
            warm.append(w)
        result.update({
            "backend": cold[0]["backend"], "runs": args.startup_runs,
            "config": "nanoGPT-cpu", "cold": _medians(cold), "warm": _medians(warm),
            "cold_runs_s": [r["marks"][HEADLINE] for r in cold], "warm_runs_s": [r["marks"][HEADLINE] for r in warm],
            "ahead_tail_s": [r["ahead_tail_s"] for r in cold],
            "cold_cpu_s": median([r["cpu_s"] for r in cold]), "warm_cpu_s": median([r["cpu_s"] for r in warm]),
            "cold_waited_s": median([r["waited_s"] for r in cold]),
        })
        result["cold_s"], result["warm_s"] = median(result["cold_runs_s"]), median(result["warm_runs_s"])
    log("  start-up, kernels only: cold cache, then warm (subprocesses)")
    cold, warm = _cold_and_warm("kernels")
    result["backend"] = result.get("backend", cold["backend"])
    result["kernels"] = {"cold": cold["marks"], "warm": warm["marks"]}
    return result


def format_startup(result):
    out = []
    if "cold_s" in result:
        table = [[mark, fmt(result["cold"][mark]), fmt(result["warm"][mark])] for mark in result["cold"]]
        runs = ", ".join(f"{c:.1f}/{w:.1f}" for c, w in zip(result["cold_runs_s"], result["warm_runs_s"]))
        out.append(format_table(
            ["python -> first GPT training step (s)", "cold cache", "warm cache"], table,
            f"start-up, {result['config']} config, fresh process (backend {result['backend']}): cold "
            f"{result['cold_s']:.1f} s, warm {result['warm_s']:.1f} s (medians of {result['runs']}; each run "
            f"cold/warm: {runs}; the compile-ahead process went on "
            f"{median(result['ahead_tail_s']):.1f} s after the cold process, filling the cache). CPU time of the "
            f"process (all its threads) to the end of the step: cold {result['cold_cpu_s']:.2f} s, warm "
            f"{result['warm_cpu_s']:.2f} s; the cold one waited {result['cold_waited_s']:.2f} s for the "
            f"compile-ahead process. On a busy machine the CPU times move less than the wall times"))
    kernels = result["kernels"]
    table = [[mark, fmt(kernels["cold"][mark]), fmt(kernels["warm"].get(mark))] for mark in kernels["cold"]]
    out.append(format_table(["python -> first kernels (s)", "cold cache", "warm cache"], table,
                            "start-up, kernels only (cumulative; 'process wall' includes the interpreter's exit)"))
    return "\n\n".join(out)
