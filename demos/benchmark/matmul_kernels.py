"""Two ways to write matmul's register tile, raced in one process, and what LLVM made of each.

    python -m demos.benchmark.matmul_kernels                  # this CPU's tile, loops against vector
    python -m demos.benchmark.matmul_kernels 4x16:loops 6x16:vector 4x16:vector
    NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=<a Haswell list> python -m demos.benchmark.matmul_kernels

Figures: the median GF/s of each, and the median over rounds of the ratio of two candidates'
times in the same round (paired: less sensitive to other programs than a ratio of medians).
Each variant is ``TILE:KERNEL``: a tile (``MINIGRAD_MATMUL_TILE``) and how its k loop is written
(``MINIGRAD_MATMUL_KERNEL``: ``loops``, scalar loops that LLVM vectorises, or ``vector``, the
explicit vector code of ``_fma_tile``). Every variant is a separate copy of ``kernels/matmul.py``,
loaded with its own settings, so that all of them and numpy take turns in one process on the same
arrays (``timing.race``): machine noise then hits them alike. Single thread for all, numpy included
(set before numpy is imported), unless ``--threads`` says otherwise.

Then, per variant, the inner loops of the compiled tile kernel (``tile_loops``): how many fused
multiply-adds each loop runs on which registers, and how many of its instructions touch the stack.
A tile that fits the registers has no stack access inside those loops.
"""
import argparse
import importlib.util
import os
import re
import sys
import time


def tile_loops(asm):
    """The innermost loops of x86 assembly that contain FMAs, as dicts:
    label, fmas (count), registers ({"ymm", ...}), stack (instructions reading or writing the stack).

    A loop is a label that a later jump goes back to; innermost: no other loop inside it. A stack
    access is a memory operand based on %rsp, or on %rbp when the loop's function keeps a frame
    pointer in it (otherwise %rbp is one more general register)."""
    lines = asm.splitlines()
    # where each function starts (a label that is not local, .L...), and whether it sets up %rbp
    starts = [i for i, line in enumerate(lines) if re.match(r"^(?!\.?L(?:BB|tmp|func))[\w.$]+:", line)] + [len(lines)]
    frame_pointer = {lo: any(re.search(r"movq\s+%rsp,\s*%rbp", line) for line in lines[lo:hi])
                     for lo, hi in zip(starts, starts[1:])}
    labels, loops = {}, []
    for i, line in enumerate(lines):
        label = re.match(r"^(\.?L\w+):", line)
        if label:
            labels[label.group(1)] = i
        jump = re.match(r"^\s+j\w+\s+(\.?L\w+)", line)
        if jump and labels.get(jump.group(1), i) < i:
            loops.append((labels[jump.group(1)], i, jump.group(1)))
    found = []
    for lo, hi, label in loops:
        if any(lo <= lo2 and hi2 <= hi and (lo2, hi2) != (lo, hi) for lo2, hi2, _ in loops):
            continue  # not innermost
        function = max([start for start in starts if start <= lo], default=None)
        stack = re.compile(r"\(%rsp|\(%rbp[,)]" if frame_pointer.get(function, True) else r"\(%rsp")
        body = lines[lo:hi + 1]
        fmas = [line for line in body if "vfmadd" in line]
        if fmas:
            found.append({"label": label, "fmas": len(fmas),
                          "registers": sorted(set(re.findall(r"%([xyz]mm)\d", " ".join(fmas)))),
                          "stack": [line.strip() for line in body if stack.search(line)]})
    return found


def load_variant(tile, kernel):
    """A fresh copy of minigrad.kernels.matmul compiled for `tile` with the `kernel` way of writing it."""
    import minigrad.kernels.matmul  # noqa: F401  (the package and its helpers, loaded once)

    os.environ["MINIGRAD_MATMUL_TILE"], os.environ["MINIGRAD_MATMUL_KERNEL"] = tile, kernel
    try:
        path = sys.modules["minigrad.kernels.matmul"].__file__
        name = f"minigrad.kernels.matmul_{tile}_{kernel}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        del os.environ["MINIGRAD_MATMUL_TILE"], os.environ["MINIGRAD_MATMUL_KERNEL"]
    return module


def paired_samples(candidates, rounds, sample_seconds=0.01):
    """{name: [seconds per call in round r]}: in every round each candidate, in an order that
    rotates, waits for other threads to go idle, warms up, then takes one timed sample of enough
    calls to last about sample_seconds (see timing.py)."""
    from .timing import settle, time_steps, warm_up

    names = list(candidates)
    inner = {}
    for name, f in candidates.items():
        f()
        inner[name] = max(1, int(sample_seconds / max(min(time_steps(f, 3)), 1e-9)))
    samples = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            settle()
            warm_up(candidates[name])
            start = time.perf_counter()
            for _ in range(inner[name]):
                candidates[name]()
            samples[name].append((time.perf_counter() - start) / inner[name])
    return samples


def cases():
    """(label, make(rng) -> (a, b)): the 2-D products of a GPT step, and two squares."""
    from .matmul import matmul_cases

    chosen = [(label, make) for label, kind, make in matmul_cases() if kind in ("gpt2d", "extra")]
    return chosen + [(label, make) for label, kind, make in matmul_cases() if label.startswith(("512x", "1024x"))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", help="TILE:KERNEL, e.g. 6x16:vector (default: this CPU's tile, both kernels)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15, help="timed samples per candidate and case")
    args = parser.parse_args(argv)
    blas_threads = {name: str(args.threads) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if any(os.environ.get(name) != value for name, value in blas_threads.items()):
        # numpy's BLAS reads its thread count when numpy is first imported (already done by the
        # package around this file): start again with it set
        argv = sys.argv[1:] if argv is None else list(argv)
        os.execve(sys.executable, [sys.executable, "-m", __spec__.name, *argv], {**os.environ, **blas_threads})
    import numpy as np

    import minigrad
    from minigrad.kernels import _cpu, _jit

    minigrad.set_num_threads(args.threads)
    family = _cpu.simd_family()
    tile = "x".join(map(str, _cpu.TILES[family]))
    variants = args.variants or [f"{tile}:loops", f"{tile}:vector"]
    modules = {}
    for variant in variants:
        tile, kernel = variant.split(":")
        module = load_variant(tile, kernel)
        start = time.perf_counter()
        module.matmul_compiled(np.ones((9, 9), np.float32), np.ones((9, 9), np.float32))
        print(f"{variant}: compiled in {time.perf_counter() - start:.1f} s")
        modules[variant] = module
    print(f"CPU compiled for: {_jit.target_cpu_name()} ({family}); numpy: its own BLAS; threads: {args.threads}")

    rng = np.random.default_rng(0)
    first = variants[0]
    header = (["case"] + [f"{v} GF/s" for v in variants] + ["numpy GF/s"] + [f"{v}/numpy" for v in variants]
              + [f"{v}/{first}" for v in variants[1:]])
    print(" | ".join(header))
    for label, make in cases():
        a, b = make(rng)
        reference = a.astype(np.float64) @ b
        candidates = {"numpy": lambda a=a, b=b: np.matmul(a, b)}
        for variant, module in modules.items():
            got = module.matmul_compiled(a, b)
            if not np.allclose(got, reference, rtol=1e-3, atol=1e-3 * np.sqrt(a.shape[-1])):
                raise AssertionError(f"{variant} disagrees with numpy on {label}")
            candidates[variant] = lambda a=a, b=b, f=module.matmul_compiled: f(a, b)
        samples = paired_samples(candidates, args.rounds)
        flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        gflops = {name: flops / np.median(s) / 1e9 for name, s in samples.items()}
        # ratios within each round (the candidates ran one after the other), then their median
        def paired(x, y):
            return np.median(np.asarray(samples[y]) / np.asarray(samples[x]))

        row = [label] + [f"{gflops[v]:.1f}" for v in variants] + [f"{gflops['numpy']:.1f}"]
        row += [f"{paired(v, 'numpy'):.2f}" for v in variants] + [f"{paired(v, first):.2f}" for v in variants[1:]]
        print(" | ".join(row), flush=True)

    for variant, module in modules.items():
        signature = module._tile_kernel.signatures[0]
        for loop in tile_loops(module._tile_kernel.inspect_asm(signature)):
            print(f"{variant}: loop {loop['label']}: {loop['fmas']} FMAs on {','.join(loop['registers'])}, "
                  f"{len(loop['stack'])} stack accesses")


if __name__ == "__main__":
    main()
