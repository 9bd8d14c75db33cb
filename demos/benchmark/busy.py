"""Section `busy`: the training step on a quiet machine, and with one busy process beside it.

A laptop or a shared server rarely has every core free. A kernel that splits its work into one part
per thread waits for the slowest part, so one core taken by another program can make every parallel
kernel wait. This section times nanoGPT's CPU configuration (median over `--busy-steps` steps after
a warm-up) for each candidate of the `gpt` section: first quietly, then while another Python process
spins (``while True: pass``) on one core. That process is started before and killed after the
candidate's busy steps, always. The number to watch is busy time / quiet time.
"""
import subprocess
import sys
from contextlib import contextmanager

from .gpt import make_candidates, time_candidate
from .models import GPT_CONFIGS, NANOGPT_CPU
from .report import fmt, fmt_ratio, format_table, log, ratio
from .threads import minigrad_threads
from .timing import median

SPIN = "print('spinning', flush=True)\nwhile True:\n    pass\n"
TARGET = 1.5  # busy / quiet, at most (minigrad at its default threads)


@contextmanager
def busy_process():
    """Run the block while another Python process spins on one core."""
    spinner = subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        spinner.stdout.readline()  # it has started and is about to spin
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()
        spinner.stdout.close()


def bench_busy(args, torch):
    name, config, batch_size = GPT_CONFIGS[NANOGPT_CPU]
    candidates, parameters, _ = make_candidates(config, batch_size, args.seed, torch, compiled=False)
    rows = []
    for label, candidate in candidates.items():
        framework, _, threads = candidate
        if threads is None:
            threads = minigrad_threads() if framework == "minigrad" else torch.get_num_threads()
        log(f"  {label}: {args.busy_steps} steps quiet, then {args.busy_steps} beside a busy process")
        quiet = time_candidate(candidate, args.busy_steps, torch, args.busy_warmup)
        with busy_process():
            busy = time_candidate(candidate, args.busy_steps, torch, args.busy_warmup)
        quiet_ms, busy_ms = 1e3 * median(quiet), 1e3 * median(busy)
        rows.append({"candidate": label, "framework": framework, "threads": threads, "quiet_ms": quiet_ms,
                     "busy_ms": busy_ms, "ratio": {"busy/quiet": ratio(busy_ms, quiet_ms)}})
    return {"config": name, **config, "batch_size": batch_size, "parameters": parameters,
            "steps": args.busy_steps, "warmup_steps": args.busy_warmup, "busy_process": "python -c 'while True: pass'",
            "rows": rows}


def format_busy(result):
    table = [[r["candidate"], str(r["threads"]), fmt(r["quiet_ms"], 1), fmt(r["busy_ms"], 1),
              fmt_ratio(r["ratio"]["busy/quiet"])] for r in result["rows"]]
    return format_table(["GPT step beside a busy process", "threads", "quiet ms", "busy ms", "busy/quiet"], table,
                        f"GPT training step ({result['config']} config) with one busy process beside it: median "
                        f"ms over {result['steps']} steps; busy/quiet near 1 means it shares the machine well")
