"""Peak memory of GPT training (part of the `gpt` section, left out by --quick).

Each framework trains each GPT configuration for a few steps in a fresh process
(``python -m demos.benchmark --_child memory ...``), which reports its resident memory after the
imports and its peak. A fresh process is the only fair way: the parent has already allocated for
every other section. For minigrad the child also counts numba compilations: with a stale cache, the
peak includes the compiler's own memory.
"""
import resource
import sys

from .children import child_env, run_child
from .models import GPT_CONFIGS, make_minigrad_trainer, make_torch_trainer
from .report import fmt, format_table, log
from .threads import set_minigrad_threads


def peak_rss_mb():
    """Peak resident memory of this process so far, in MB.

    On Linux this is VmHWM from /proc/self/status: the high-water mark of this program's own
    memory. ``getrusage(RUSAGE_SELF).ru_maxrss`` would be wrong in a subprocess: Linux carries it
    across fork + exec, so a child started by a large parent reports at least the parent's size.
    Elsewhere (no /proc) ru_maxrss is the fallback."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return ru_maxrss_mb()


def ru_maxrss_mb():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def child_memory(framework, config_index, seed, steps, threads=None):
    """Runs in the fresh process: RSS after the imports, then peak RSS after `steps` training steps."""
    name, config, batch_size = GPT_CONFIGS[config_index]
    compiles = None
    if framework == "minigrad":
        from numba.core import event

        import minigrad  # noqa: F401
        import transformer  # noqa: F401

        baseline = peak_rss_mb()
        if threads:
            set_minigrad_threads(threads)
        with event.install_recorder("numba:compile") as recorder:  # fires on cache misses only
            step, _ = make_minigrad_trainer(config, batch_size, seed)
            for _ in range(steps):
                step()
        compiles = sum(1 for _, e in recorder.buffer if e.is_start)
    else:
        import torch

        baseline = peak_rss_mb()
        if threads:
            torch.set_num_threads(threads)
        step, _ = make_torch_trainer(torch, config, batch_size, seed)
        for _ in range(steps):
            step()
    return {"framework": framework, "config": name, "steps": steps, "rss_after_imports_mb": baseline,
            "peak_rss_mb": peak_rss_mb(), "ru_maxrss_mb": ru_maxrss_mb(), "numba_compiles": compiles}


def bench_memory(args, torch):
    frameworks = ["minigrad"] + (["torch"] if torch is not None else [])
    rows = []
    for index, (name, _, _) in enumerate(GPT_CONFIGS):
        for framework in frameworks:
            log(f"  peak memory, {framework}, {name} config (subprocess)")
            command = [sys.executable, "-m", "demos.benchmark", "--_child", "memory", "--framework", framework,
                       "--config", str(index), "--seed", str(args.seed), "--steps", str(args.memory_steps)]
            if args.threads:
                command += ["--threads", str(args.threads)]
            row, _ = run_child(command, "memory", child_env(), timeout=600)
            row["increment_mb"] = row["peak_rss_mb"] - row["rss_after_imports_mb"]
            rows.append(row)
    return rows


def format_memory(rows):
    table = [[f"{r['framework']}, {r['config']}", fmt(r["rss_after_imports_mb"], 0), fmt(r["peak_rss_mb"], 0),
              fmt(r["increment_mb"], 0),
              "-" if r["numba_compiles"] is None else str(r["numba_compiles"])
              + (" (stale cache: includes the compiler)" if r["numba_compiles"] else "")] for r in rows]
    title = (f"peak memory over {rows[0]['steps']} training steps in a fresh process (VmHWM, i.e. ru_maxrss "
             "without what Linux carries over from the parent)") if rows else None
    return format_table(["GPT training, fresh process", "RSS after imports MB", "peak RSS MB", "training +MB",
                         "numba compiles"], table, title)
