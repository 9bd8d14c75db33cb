"""The command line: options, time budgets, the order of the sections, and the report.

Tables go to stdout (to stderr with --json, and stdout then carries exactly one JSON document).
`--_child` runs one measurement inside a fresh process (see memory.py); it is handled before the
normal parser, which would import minigrad, and a PyTorch child must not load minigrad.
"""
import argparse
import json
import sys
import time

from .busy import bench_busy, format_busy
from .conv import bench_conv, format_conv
from .rnn import bench_rnn, format_rnn
from .gpt import bench_gpt, format_gpt, profile_gpt_step
from .matmul import bench_matmul, format_matmul
from .memory import bench_memory, child_memory, format_memory
from .report import log
from .softmax import bench_softmax, format_softmax
from .startup import bench_startup, format_startup
from .system import format_system, system_info
from .targets import evaluate_targets, format_targets
from .threads import set_threads
from .timing import settle_seconds
from .train import bench_train, format_train

SECTIONS = ("matmul", "softmax", "gpt", "busy", "startup", "train", "conv", "rnn")
TORCH_MISSING = "PyTorch not installed (pip install -e '.[bench]')"


def build_parser():
    from ..common import parser

    p = parser("Benchmark minigrad against numpy and PyTorch, side by side in one run.")
    p.add_argument("--json", action="store_true",
                   help="print a JSON document on stdout (the tables then go to stderr)")
    p.add_argument("--quick", action="store_true",
                   help="a fast smoke run: short timings, no peak-memory subprocesses, no start-up section "
                        "(unless --only startup)")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="timed samples per candidate (GPT: timed steps per framework); default: adapt to each "
                        "operation's duration")
    p.add_argument("--only", action="append", default=None, metavar="SECTION",
                   help=f"run only these sections, repeatable or comma-separated: {', '.join(SECTIONS)}")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads for minigrad, PyTorch and numpy's BLAS alike (default: each library's own "
                        "default); the gpt and busy sections still also time 1 thread, and PyTorch at 1 and 2")
    p.add_argument("--no-torch", action="store_true", help="do not compare with PyTorch even if it is installed")
    p.add_argument("--busy-steps", type=int, default=None, metavar="N",
                   help="busy section: timed steps per candidate, quiet and busy each (default: 20, with --quick 3)")
    p.add_argument("--startup-runs", type=int, default=None, metavar="N",
                   help="start-up section: fresh processes per cache state; the median is reported (default: 3, "
                        "with --quick 1)")
    p.add_argument("--no-startup-gpt", dest="startup_gpt", action="store_false",
                   help="start-up section: time import + matmul + softmax only, without a GPT step")
    p.add_argument("--train-iters", type=int, default=None, metavar="N",
                   help="train section: iterations of the char_gpt run (default: 2000, with --quick 20)")
    p.add_argument("--train-data", metavar="FILE",
                   help="train section: a text file (default: nanoGPT's Shakespeare, "
                        "../shared/data/tinyshakespeare.txt next to the repository; without it the section is "
                        "skipped)")
    p.add_argument("--profile", type=int, nargs="?", const=15, default=0, metavar="N",
                   help="also print a cProfile summary (top N functions) of minigrad's GPT step")
    p.add_argument("--_child", help=argparse.SUPPRESS)  # internal: a measurement subprocess
    return p


def parse_only(values, quick):
    if not values:
        return [s for s in SECTIONS if not (quick and s == "startup")]
    chosen = []
    for value in values:
        for item in value.split(","):
            item = item.strip().lower()
            if not item:
                continue
            if item not in SECTIONS:
                raise SystemExit(f"benchmark: unknown section {item!r} for --only; choose from {', '.join(SECTIONS)}")
            if item not in chosen:
                chosen.append(item)
    return chosen


def apply_settings(args):
    """Time budgets: normal runs aim at a fraction of a second per candidate per shape; --quick at a few ms."""
    if args.quick:
        args.budget, args.min_samples, args.sample_seconds = 0.02, 3, 0.003
        args.gpt_budget, args.gpt_min_steps, args.gpt_blocks, args.gpt_warmup = 0.0, 3, 1, 0
    else:
        # (at least 21 rounds: on a noisy 2-core VM, the ratio of two medians of 7 rounds ranged
        # over 0.91-1.29x for one softmax shape, of 21 rounds over 1.00-1.02x)
        args.budget, args.min_samples, args.sample_seconds = 0.3, 21, 0.01
        args.gpt_budget, args.gpt_min_steps, args.gpt_blocks, args.gpt_warmup = 5.0, 10, 5, 3
    args.memory_steps = 5
    args.busy_warmup = 0 if args.quick else 3  # untimed steps, besides warm_up()
    defaults = {"train_iters": (2000, 20), "busy_steps": (20, 3), "startup_runs": (3, 1)}
    for name, (normal, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else normal)


def _child_main(argv):
    p = argparse.ArgumentParser(prog="demos.benchmark --_child")
    p.add_argument("--_child", required=True, choices=["memory"])
    p.add_argument("--framework", choices=["minigrad", "torch"], required=True)
    p.add_argument("--config", type=int, required=True)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    print(json.dumps(child_memory(a.framework, a.config, a.seed, a.steps, a.threads)))


def _import_torch(args):
    if args.no_torch:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a == "--_child" or a.startswith("--_child=") for a in argv):
        return _child_main(argv)
    args = build_parser().parse_args(argv)
    sections = parse_only(args.only, args.quick)
    apply_settings(args)
    out = sys.stderr if args.json else sys.stdout

    def show(text):
        print(text + "\n", file=out, flush=True)

    torch = _import_torch(args)
    if args.threads:
        set_threads(args.threads, torch)
    info = system_info(torch)
    results = {"settings": {"quick": args.quick, "repeats": args.repeats, "seed": args.seed, "sections": sections,
                            "threads": args.threads, "torch": torch is not None},
               "system": info}
    torch_missing = None if torch else ("PyTorch comparison off (--no-torch)" if args.no_torch else TORCH_MISSING)
    if torch_missing:
        show(torch_missing)

    start = time.perf_counter()
    show("minigrad benchmark" + (" (--quick)" if args.quick else "") + "\n" + format_system(info))
    steps = {  # section -> [(result key, measure, format)]
        "matmul": [("matmul", lambda: bench_matmul(args, torch), format_matmul)],
        "softmax": [("softmax", lambda: bench_softmax(args, torch), format_softmax)],
        "gpt": [("gpt", lambda: bench_gpt(args, torch), format_gpt)]
        + ([] if args.quick else [("memory", lambda: bench_memory(args, torch), format_memory)]),
        "busy": [("busy", lambda: bench_busy(args, torch), format_busy)],
        "startup": [("startup", lambda: bench_startup(args), format_startup)],
        "train": [("train", lambda: bench_train(args, torch), format_train)],
        "conv": [("conv", lambda: bench_conv(args, torch), format_conv)],
        "rnn": [("rnn", lambda: bench_rnn(args, torch), format_rnn)],
    }
    results["section_seconds"] = {}
    for section in sections:
        for key, measure, fmt in steps[section]:
            log(f"{key} ...")
            t0 = time.perf_counter()
            results[key] = measure()
            results["section_seconds"][key] = time.perf_counter() - t0
            show(fmt(results[key]))
    if args.profile:
        show(profile_gpt_step(args))
    results["targets"] = evaluate_targets(results, torch_missing)
    results["elapsed_s"] = time.perf_counter() - start
    results["settle_s"] = settle_seconds()
    show(format_targets(results["targets"]) + f"\n\n(benchmark took {results['elapsed_s']:.0f} s)")
    if args.json:
        print(json.dumps(results, indent=2))
    return results
