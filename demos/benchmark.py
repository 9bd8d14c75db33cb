"""Benchmark minigrad against numpy and PyTorch, side by side in one run.

    python -m demos.benchmark                   # everything, about 2-4 minutes
    python -m demos.benchmark --quick           # a smoke run, well under 30 s (no memory, no start-up)
    python -m demos.benchmark --only matmul,softmax --json > bench.json

Five sections (choose with --only):

- matmul:  float32 GFLOP/s of minigrad's numba kernel, np.matmul and torch.matmul, at square
           sizes and at the shapes a GPT training step multiplies (2-D and batched attention).
- softmax: forward + backward over rows, numba kernel vs its numpy twin vs PyTorch.
- gpt:     a whole training step (forward, backward, AdamW, zero_grad) of minigrad's GPT and of
           the same model written in PyTorch below, plus each one's peak memory (in subprocesses).
- startup: numba's cold compile time and warm-cache start-up time, in subprocesses with a fresh
           NUMBA_CACHE_DIR.
- train:   demos.char_gpt's whole training run (nanoGPT's CPU configuration, 2000 iterations with
           its evaluations) in minigrad and the same run in PyTorch: wall time of each. The two
           take turns, one evaluation interval at a time, so that machine noise hits both.

Every ratio is arranged so that > 1 means minigrad is faster. Candidates are timed round-robin
(the order rotates every round) so that machine noise hits all of them; before each timed sample
the benchmark waits until the previous candidate's worker threads stop spinning (see `settle`) and
runs the candidate untimed for 30 ms, which gets idle cores going again and warms the caches (see
`warm_up`); the reported number is the median over samples.
On a machine shared with other work, multi-threaded timings can be far off: compare with
--threads 1, which gives every library one thread.
"""
import argparse
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ("matmul", "softmax", "gpt", "startup", "train")
TORCH_MISSING = "PyTorch not installed (pip install -e '.[bench]')"

# the two GPT configurations: (name, model settings, batch size)
GPT_CONFIGS = [
    ("small", dict(vocab_size=65, block_size=32, n_layer=2, n_head=4, d_model=64), 16),
    ("nanoGPT-cpu", dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128), 12),
]
ADAMW = dict(lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
TORCH_THREADS = (1, 2)
POOL_BATCHES = 16  # random batches in the fixed, seeded pool both frameworks train on

SOFTMAX_SHAPES = [(3072, 64), (768, 65), (2048, 32)]


# ================================================================================ small helpers
def _log(message, args):
    """Progress, on stderr (stdout carries the tables, or the JSON document with --json)."""
    print(message, file=sys.stderr, flush=True)


def _import_torch(args):
    if args.no_torch:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch


def _median(values):
    return float(np.median(np.asarray(values, dtype=np.float64)))


def _ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _fmt(value, digits=2, width=None):
    text = "-" if value is None else f"{value:.{digits}f}"
    return text if width is None else text.rjust(width)


def _fmt_ratio(value):
    return "-" if value is None else f"{value:.2f}x"


def format_table(headers, rows, title=None):
    """Fixed-width text table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    out = [] if title is None else [title]
    out += [line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]]
    return "\n".join(out)


def _peak_rss_mb():
    """Peak resident memory of this process so far, in MB.

    On Linux this is VmHWM from /proc/self/status: the high-water mark of this program's own
    memory. ``getrusage(RUSAGE_SELF).ru_maxrss`` would be wrong in a subprocess: Linux carries it
    across fork + exec, so a child started by a 500 MB parent reports at least 500 MB. Elsewhere
    (no /proc) ru_maxrss is the fallback."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _ru_maxrss_mb():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _child_env(**changes):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(changes)
    return env


# ================================================================================ timing
def settle(quantum=0.004, limit=0.3):
    """Wait until no thread of this process burns CPU any more (at most `limit` seconds).

    After a call, a library's worker threads keep spinning for a while, waiting for more work:
    OpenBLAS's for up to ~0.1 s, OpenMP's (numba, PyTorch) for a few ms. Whatever runs next would
    share the cores with them, so a candidate timed right after numpy would pay for numpy's
    spinning threads. The main thread sleeps in short quanta until a quantum passes in which the
    whole process used less than a tenth of it in CPU time."""
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < limit:
            cpu = time.process_time()
            time.sleep(quantum)
            if time.process_time() - cpu < 0.1 * quantum:
                return
    finally:
        _settle_seconds[0] += time.perf_counter() - start


_settle_seconds = [0.0]  # total time spent in settle(), reported in the JSON document

# After the process has been idle (as settle() makes it), the first few milliseconds of a parallel
# library run several times slower on this kind of machine, a virtual machine whose idle virtual
# CPUs take a while to get going again: measured here, 5 ms of continuous work before a timed
# sample still left about a third of the samples 3-10x slow, 20 ms left none.
WARM_SECONDS = 0.03


def warm_up(f):
    """Call f repeatedly for WARM_SECONDS (at least once): the cores are running when timing starts."""
    start = time.perf_counter()
    f()
    while time.perf_counter() - start < WARM_SECONDS:
        f()


def race(candidates, budget, repeats=None, min_samples=5, sample_seconds=0.01):
    """Time zero-argument callables against each other; -> ({name: median seconds per call}, rounds).

    After a warm-up call each, every candidate is calibrated: a sample is `inner` calls in a row,
    enough to last `sample_seconds`. Then rounds run until the slowest candidate has had about
    `budget` seconds (at least `min_samples` rounds; exactly `repeats` rounds if given). In each
    round every candidate, in turn, waits for the other libraries' threads to go idle (`settle`),
    runs untimed for WARM_SECONDS (which wakes the cores and its threads and warms the caches the
    others evicted, see `warm_up`), and then one timed sample; the order rotates every round so no candidate always follows the same
    one. The result is the median over rounds of (sample time / inner).
    """
    names = list(candidates)
    for f in candidates.values():
        f()  # warm-up: compilation, first-touch allocations
    inner, cost = {}, {}
    for name, f in candidates.items():
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t0)
        inner[name] = max(1, min(10_000, int(sample_seconds / max(best, 1e-9))))
        cost[name] = inner[name] * best + max(best, WARM_SECONDS)  # a timed sample and its warm-up
    if repeats:
        rounds = repeats
    else:
        rounds = int(budget / max(cost.values()))
        rounds = max(min_samples, min(rounds, 500))
    samples = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            f, n = candidates[name], inner[name]
            settle()
            warm_up(f)
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: _median(s) for name, s in samples.items()}, rounds


# ================================================================================ system info
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "fma", "avx512f") if x in flags]
    except OSError:
        pass
    return []


def _openblas_function(stem):
    """A function of the OpenBLAS that numpy loaded (``openblas_<stem>``, or the prefixed and
    suffixed names of the scipy-openblas builds), via ctypes; None if there is none."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("openblas_", "scipy_openblas_"):
            for suffix in ("", "64_", "_64_"):
                fn = getattr(lib, prefix + stem + suffix, None)
                if fn is not None:
                    return fn
    return None


def _openblas_runtime():
    """What the OpenBLAS loaded by numpy says about itself (core type, threads)."""
    import ctypes

    info = {}
    for key, stem, restype in (("config", "get_config", ctypes.c_char_p), ("core", "get_corename", ctypes.c_char_p),
                               ("threads", "get_num_threads", ctypes.c_int)):
        fn = _openblas_function(stem)
        if fn is not None:
            fn.restype = restype
            value = fn()
            info[key] = value.decode() if isinstance(value, bytes) else value
    return info or None


def set_threads(n, torch):
    """Use n threads in numba, PyTorch and numpy's OpenBLAS (--threads)."""
    import ctypes

    import numba

    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if torch is not None:
        torch.set_num_threads(n)
    fn = _openblas_function("set_num_threads")
    if fn is not None:
        fn.argtypes = [ctypes.c_int]
        fn.restype = None
        fn(n)


def _blas_summary():
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            return "; ".join(f"{p.get('internal_api')} {p.get('version')} core={p.get('architecture')} "
                             f"threads={p.get('num_threads')}" for p in pools)
    except ImportError:
        pass
    parts = []
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        parts.append(f"{blas.get('name')} {blas.get('version')}")
    except Exception:  # older numpy: no mode="dicts"
        pass
    runtime = _openblas_runtime()
    if runtime:
        parts.append(f"core={runtime.get('core')} threads={runtime.get('threads')}")
    return ", ".join(parts) or "unknown"


def system_info(args, torch):
    import numba

    import minigrad

    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
                                      "OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MINIGRAD_BACKEND")
           if k in os.environ}
    # run one parallel kernel first: numba picks its threading layer then (and compiles if needed)
    from minigrad.kernels import implementation

    square = np.ones((256, 256), dtype=np.float32)
    t0 = time.perf_counter()
    implementation("matmul", "numba")(square, square)
    first_call = time.perf_counter() - t0
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(), "cpu_flags": _cpu_flags(), "cores": os.cpu_count(), "usable_cores": usable,
        "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
        "torch": torch.__version__ if torch else None, "blas": _blas_summary(),
        "minigrad_backend": minigrad.get_backend(), "numba_threads": numba.get_num_threads(),
        "numba_threading_layer": layer, "first_matmul_call_s": first_call,
        "torch_threads": torch.get_num_threads() if torch else None,
        "blas_threads": (_openblas_runtime() or {}).get("threads"), "environment": env,
    }


def format_system(info):
    lines = [
        f"CPU      {info['cpu']} ({', '.join(info['cpu_flags']) or 'no AVX2'}), "
        f"{info['cores']} cores ({info['usable_cores']} usable)",
        f"versions python {info['python']}, numpy {info['numpy']}, numba {info['numba']}, "
        f"torch {info['torch'] or '(not installed)'}",
        f"numpy    BLAS: {info['blas']}",
        f"threads  numba {info['numba_threads']}"
        + (f" (layer {info['numba_threading_layer']})" if info.get("numba_threading_layer") else "")
        + (f", torch {info['torch_threads']}" if info["torch_threads"] else "")
        + (f", OpenBLAS {info['blas_threads']}" if info.get("blas_threads") else ""),
        f"minigrad backend: {info['minigrad_backend']} (first numba matmul call in this process: "
        f"{info['first_matmul_call_s']:.2f} s; more than ~1 s means numba compiled instead of loading its cache)",
        "env      " + (", ".join(f"{k}={v}" for k, v in info["environment"].items()) or "(none of "
                       "OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, OMP/NUMBA_NUM_THREADS set)"),
    ]
    return "\n".join(lines)


# ================================================================================ 1. matmul
def matmul_cases():
    """(label, kind, make) where make(rng) -> (a, b) float32; kind groups the cases for targets."""

    def plain(shape_a, shape_b):
        return lambda rng: (_randn(rng, shape_a), _randn(rng, shape_b))

    def linear_forward(m, k, n):  # x @ W.T, W (n, k): how minigrad's Linear calls it
        return lambda rng: (_randn(rng, (m, k)), _randn(rng, (n, k)).T)

    def weight_grad(m, k, n):  # a.T @ g with a (m, k) stored, g (m, n)
        return lambda rng: (_randn(rng, (m, k)).T, _randn(rng, (m, n)))

    def q_kt(b, t, d):  # q @ k^T with k (b, t, d) stored
        return lambda rng: (_randn(rng, (b, t, d)), _randn(rng, (b, t, d)).transpose(0, 2, 1))

    cases = [(f"{n}x{n} @ {n}x{n}", "square", plain((n, n), (n, n))) for n in (128, 256, 512, 1024)]
    cases += [
        ("(768x128) @ (128x384)", "gpt2d", plain((768, 128), (128, 384))),
        ("(768x512) @ (512x128)", "gpt2d", plain((768, 512), (512, 128))),
        ("(768,128).T @ (768x512)", "gpt2d", weight_grad(768, 128, 512)),
        ("(768x128) @ (384,128).T  [Linear fwd]", "extra", linear_forward(768, 128, 384)),
        ("(48,64,32) @ (48,32,64)", "batched", plain((48, 64, 32), (48, 32, 64))),
        ("(48,64,64) @ (48,64,32)", "batched", plain((48, 64, 64), (48, 64, 32))),
        ("(48,64,32) @ (48,64,32).T  [q k^T]", "batched", q_kt(48, 64, 32)),
    ]
    return cases


def _randn(rng, shape):
    return rng.standard_normal(shape, dtype=np.float32)


def bench_matmul(args, torch):
    from minigrad.kernels import implementation

    numba_mm = implementation("matmul", "numba")
    rng = np.random.default_rng(args.seed)
    rows = []
    for label, kind, make in matmul_cases():
        _log(f"  matmul {label}", args)
        a, b = make(rng)
        flops = 2.0 * np.prod(a.shape[:-1]) * a.shape[-1] * b.shape[-1]
        reference = np.matmul(a.astype(np.float64), b.astype(np.float64))
        got = numba_mm(a, b)
        if not np.allclose(got, reference, rtol=1e-3, atol=1e-3 * math.sqrt(a.shape[-1])):
            raise AssertionError(f"matmul {label}: the numba kernel disagrees with numpy")
        candidates = {"numba": lambda a=a, b=b: numba_mm(a, b), "numpy": lambda a=a, b=b: np.matmul(a, b)}
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)  # same memory, same strides
            candidates["torch"] = lambda ta=ta, tb=tb: torch.matmul(ta, tb)
        seconds, rounds = race(candidates, args.budget, args.repeats, args.min_samples, args.sample_seconds)
        gflops = {name: flops / s / 1e9 for name, s in seconds.items()}
        rows.append({
            "case": label, "kind": kind, "a_shape": list(a.shape), "b_shape": list(b.shape),
            "a_strides": list(a.strides), "b_strides": list(b.strides), "gflop": flops / 1e9,
            "seconds": seconds, "gflops": gflops, "samples": rounds,
            "ratio": {"numba/numpy": _ratio(gflops["numba"], gflops["numpy"]),
                      "numba/torch": _ratio(gflops["numba"], gflops.get("torch"))},
        })
    return rows


def format_matmul(rows):
    table = [[r["case"], r["kind"], f"{r['gflop'] * 1e3:.1f}", _fmt(r["gflops"]["numba"], 1),
              _fmt(r["gflops"]["numpy"], 1), _fmt(r["gflops"].get("torch"), 1),
              _fmt_ratio(r["ratio"]["numba/numpy"]), _fmt_ratio(r["ratio"]["numba/torch"])] for r in rows]
    return format_table(["float32 matmul", "kind", "MFLOP", "numba GF/s", "numpy GF/s", "torch GF/s",
                         "numba/numpy", "numba/torch"], table,
                        "matmul: GFLOP/s (higher is better); ratio = numba GFLOP/s / other GFLOP/s")


# ================================================================================ 2. softmax
def bench_softmax(args, torch):
    from minigrad.kernels import implementation

    fwd = {b: implementation("softmax_forward", b) for b in ("numba", "numpy")}
    bwd = {b: implementation("softmax_backward", b) for b in ("numba", "numpy")}
    torch_backward = getattr(torch, "_softmax_backward_data", None) if torch else None
    rng = np.random.default_rng(args.seed + 1)
    rows = []
    for shape in SOFTMAX_SHAPES:
        _log(f"  softmax {shape}", args)
        x, g = _randn(rng, shape), _randn(rng, shape)
        y_ref = fwd["numpy"](x)
        dx_ref = bwd["numpy"](y_ref, g)
        if not (np.allclose(fwd["numba"](x), y_ref, atol=1e-6)
                and np.allclose(bwd["numba"](y_ref, g), dx_ref, atol=1e-5)):
            raise AssertionError(f"softmax {shape}: the numba kernel disagrees with the numpy twin")

        def make(backend):
            f, b = fwd[backend], bwd[backend]
            return lambda: b(f(x), g)

        candidates = {"numba": make("numba"), "numpy": make("numpy")}
        torch_method = None
        if torch is not None:
            tx, tg = torch.from_numpy(x), torch.from_numpy(g)
            if torch_backward is not None:
                torch_method = "torch.softmax + torch._softmax_backward_data"

                def torch_fb():
                    y = torch.softmax(tx, -1)
                    return torch_backward(tg, y, -1, tx.dtype)
            else:  # the private API went away: autograd (adds its bookkeeping to torch's time)
                torch_method = "torch.softmax + autograd"
                leaf = tx.clone().requires_grad_(True)

                def torch_fb():
                    leaf.grad = None
                    torch.softmax(leaf, -1).backward(tg)
                    return leaf.grad
            if not np.allclose(torch_fb().numpy(), dx_ref, atol=1e-5):
                raise AssertionError(f"softmax {shape}: PyTorch's gradient disagrees with the numpy twin")
            candidates["torch"] = torch_fb
        seconds, rounds = race(candidates, args.budget, args.repeats, args.min_samples, args.sample_seconds)
        rows.append({
            "shape": list(shape), "seconds": seconds, "samples": rounds, "torch_method": torch_method,
            "ratio": {"numpy/numba": _ratio(seconds["numpy"], seconds["numba"]),
                      "torch/numba": _ratio(seconds.get("torch"), seconds["numba"])},
        })
    return rows


def format_softmax(rows):
    table = [[f"{r['shape'][0]} x {r['shape'][1]}", _fmt(r["seconds"]["numba"] * 1e6, 1),
              _fmt(r["seconds"]["numpy"] * 1e6, 1), _fmt(_us(r["seconds"].get("torch")), 1),
              _fmt_ratio(r["ratio"]["numpy/numba"]), _fmt_ratio(r["ratio"]["torch/numba"])] for r in rows]
    return format_table(["softmax fwd+bwd (rows x cols)", "numba us", "numpy us", "torch us",
                         "numpy/numba", "torch/numba"], table,
                        "softmax forward + backward, float32: microseconds (lower is better); "
                        "ratio = other time / numba time")


def _us(seconds):
    return None if seconds is None else seconds * 1e6


# ================================================================================ 3. GPT step
def build_torch_gpt(torch, vocab_size, block_size, n_layer, n_head, d_model, bias=True):
    """The GPT of transformer/model.py in PyTorch: learned positions, pre-LN blocks, fused qkv,
    causal scaled_dot_product_attention, 4x MLP with exact GELU, final LayerNorm, tied head."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
            self.c_proj = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, x):
            B, T, C = x.shape
            qkv = self.c_attn(x).view(B, T, 3, n_head, C // n_head).permute(2, 0, 3, 1, 4)
            heads = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
            return self.c_proj(heads.transpose(1, 2).reshape(B, T, C))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(d_model, 4 * d_model, bias=bias)
            self.c_proj = nn.Linear(4 * d_model, d_model, bias=bias)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))  # exact (erf) GELU, as minigrad's

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(d_model, bias=bias), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(d_model, bias=bias), FeedForward()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class TorchGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, d_model)
            self.wpe = nn.Embedding(block_size, d_model)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(d_model, bias=bias)
            for name, p in self.named_parameters():  # the same initialisation as minigrad's GPT
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))
                elif p.dim() > 1:
                    nn.init.normal_(p, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe.weight[:T]
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # head tied to the token embedding
            return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return TorchGPT()


def _batch_pool(seed, vocab_size, block_size, batch_size):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, vocab_size, (batch_size, block_size), dtype=np.int64),
             rng.integers(0, vocab_size, (batch_size, block_size), dtype=np.int64))
            for _ in range(POOL_BATCHES)]


def make_minigrad_trainer(config, batch_size, seed):
    """-> (step() -> loss value, number of parameters)"""
    import minigrad
    from minigrad import optim
    from transformer import GPT, GPTConfig

    minigrad.manual_seed(seed)
    model = GPT(GPTConfig(**config))
    model.train()
    optimizer = optim.AdamW(model.parameters(), **ADAMW)
    pool = _batch_pool(seed, config["vocab_size"], config["block_size"], batch_size)
    counter = [0]

    def step():
        x, y = pool[counter[0] % len(pool)]
        counter[0] += 1
        _, loss = model(minigrad.tensor(x), minigrad.tensor(y))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step, model.num_parameters()


def make_torch_trainer(torch, config, batch_size, seed):
    torch.manual_seed(seed)
    model = build_torch_gpt(torch, **config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), **ADAMW)  # foreach: PyTorch's default
    pool = [(torch.from_numpy(x), torch.from_numpy(y))
            for x, y in _batch_pool(seed, config["vocab_size"], config["block_size"], batch_size)]
    counter = [0]

    def step():
        x, y = pool[counter[0] % len(pool)]
        counter[0] += 1
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step, sum(p.numel() for p in model.parameters())


def _time_steps(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def bench_gpt(args, torch):
    import numba

    results = []
    for name, config, batch_size in GPT_CONFIGS:
        _log(f"  GPT step, {name} config", args)
        step_mg, n_mg = make_minigrad_trainer(config, batch_size, args.seed)
        # (framework, step, threads): minigrad with numba's default threads (the ratio's number) and,
        # for information, with one thread; PyTorch with 1 and 2 threads (the ratio takes the better)
        candidates = {"minigrad": ("minigrad", step_mg, None), "minigrad-1t": ("minigrad", step_mg, 1)}
        first_loss = {"minigrad": float(step_mg().item())}
        if torch is not None:
            step_t, n_t = make_torch_trainer(torch, config, batch_size, args.seed)
            if n_t != n_mg:
                raise AssertionError(f"GPT {name}: PyTorch model has {n_t} parameters, minigrad's {n_mg}")
            first_loss["torch"] = float(step_t().item())
            for threads in TORCH_THREADS:
                candidates[f"torch-{threads}t"] = ("torch", step_t, threads)

        def run(candidate, n):
            framework, step, threads = candidates[candidate]
            if framework == "torch":
                get, put = torch.get_num_threads, torch.set_num_threads
            else:
                get, put = numba.get_num_threads, numba.set_num_threads
            default = get()
            if threads is not None:
                put(threads)
            try:
                settle()
                warm_up(step)  # untimed: wakes the cores and threads, warms the caches the other one used
                return _time_steps(step, n)
            finally:
                put(default)

        if args.repeats or args.quick:
            total = args.repeats or args.gpt_min_steps
        else:  # warm-up, and a first estimate of each step's cost
            estimate = {c: min(run(c, args.gpt_warmup)) for c in candidates}
            total = int(args.gpt_budget / max(estimate.values()))
            total = max(args.gpt_min_steps, min(total, 200))
        n_blocks = max(1, min(args.gpt_blocks, total))
        per_block = -(-total // n_blocks)
        times = {c: [] for c in candidates}
        names = list(candidates)
        for block in range(n_blocks):  # alternate frameworks so machine noise hits all of them
            for c in names[block % len(names):] + names[:block % len(names)]:
                times[c] += run(c, per_block)
        ms = {c: 1e3 * _median(t) for c, t in times.items()}
        torch_ms = {c: v for c, v in ms.items() if candidates[c][0] == "torch"}
        best = min(torch_ms, key=torch_ms.get) if torch_ms else None
        results.append({
            "config": name, **config, "batch_size": batch_size, "parameters": n_mg,
            "steps_timed": {c: len(t) for c, t in times.items()}, "ms_per_step": ms,
            "ms_min": {c: 1e3 * min(t) for c, t in times.items()},
            "torch_best": best, "first_loss": first_loss,
            "ratio": {"torch/minigrad": _ratio(torch_ms.get(best), ms["minigrad"])},
        })
    return results


def format_gpt(rows):
    table = []
    for r in rows:
        ms = r["ms_per_step"]
        table.append([f"{r['config']} (L{r['n_layer']} d{r['d_model']} T{r['block_size']} B{r['batch_size']})",
                      f"{r['parameters']:,}", _fmt(ms["minigrad"], 1), _fmt(ms.get("minigrad-1t"), 1),
                      _fmt(ms.get("torch-1t"), 1), _fmt(ms.get("torch-2t"), 1), r["torch_best"] or "-",
                      _fmt_ratio(r["ratio"]["torch/minigrad"])])
    return format_table(["GPT training step", "params", "minigrad ms", "minigrad 1T ms", "torch 1T ms", "torch 2T ms",
                         "best torch", "torch/minigrad"], table,
                        "GPT training step (forward, backward, AdamW, zero_grad): median ms/step; "
                        "ratio = best torch ms / minigrad ms (numba's default threads; the 1T column is "
                        "for information)")


# ------------------------------------------------------------------------- a whole training run
def _train_runs(args, torch):
    """demos.char_gpt's training loop for minigrad, and the same loop for PyTorch: both read the
    same batches (drawn here in advance), follow the same schedule and evaluate at the same steps.

    -> (data, {framework: run(first, stop) -> None}, {framework: evaluate() -> val loss}).
    """
    import minigrad
    from minigrad import optim

    from . import char_gpt

    c = char_gpt.build_parser().parse_args(["--max-iters", str(args.train_iters), "--seed", str(args.seed)]
                                           + (["--data", args.train_data] if args.train_data else []))
    if args.train_data:
        with open(args.train_data, encoding="utf-8") as f:
            text = f.read()
    else:
        text = char_gpt.builtin_corpus()
    data = char_gpt.CharData(text)
    config = dict(vocab_size=len(data.chars), block_size=c.block_size, n_layer=c.n_layer, n_head=c.n_head,
                  d_model=c.d_model)
    minigrad.manual_seed(c.seed)
    batches = {"train": [data.batch("train", c.batch_size, c.block_size) for _ in range(c.max_iters)]}
    for split in ("train", "val"):
        batches["eval_" + split] = [data.batch(split, c.batch_size, c.block_size) for _ in range(c.eval_iters)]

    def loop(param_groups, evaluate, step):
        """The run's iterations [first, stop): schedule, evaluation every eval_interval, one step."""
        def run(first, stop):
            for it in range(first, stop):
                for group in param_groups:
                    group["lr"] = optim.cosine_with_warmup(it, c.lr, c.min_lr, min(c.warmup_iters, c.max_iters),
                                                           c.max_iters)
                if it % c.eval_interval == 0:
                    evaluate()
                step(*batches["train"][it])
        return run

    # minigrad: the demo's model, parameter groups and loop body
    model = char_gpt.GPT(char_gpt.GPTConfig(**config, dropout=c.dropout, bias=c.bias))
    opt = optim.AdamW(char_gpt.param_groups(model, c.weight_decay), lr=c.lr, betas=(0.9, c.beta2))

    def evaluate_minigrad():
        model.eval()
        with minigrad.no_grad():
            losses = {s: float(np.mean([model(minigrad.tensor(x), minigrad.tensor(y))[1].item()
                                        for x, y in batches["eval_" + s]])) for s in ("train", "val")}
        model.train()
        return losses["val"]

    def step_minigrad(x, y):
        _, loss = model(minigrad.tensor(x), minigrad.tensor(y))
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), c.grad_clip)
        opt.step()
        loss.item()

    runs = {"minigrad": loop(opt.param_groups, evaluate_minigrad, step_minigrad)}
    evaluations = {"minigrad": evaluate_minigrad}
    if torch is not None:
        torch.manual_seed(c.seed)
        t_model = build_torch_gpt(torch, **config, bias=c.bias)
        params = list(t_model.parameters())
        t_opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": c.weight_decay},
                                   {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                                  lr=c.lr, betas=(0.9, c.beta2))
        t_eval = {k: [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches[k]]
                  for k in ("eval_train", "eval_val")}

        def evaluate_torch():
            t_model.eval()
            with torch.no_grad():
                losses = {s: float(np.mean([t_model(x, y)[1].item() for x, y in t_eval["eval_" + s]]))
                          for s in ("train", "val")}
            t_model.train()
            return losses["val"]

        def step_torch(x, y):
            _, loss = t_model(torch.from_numpy(x), torch.from_numpy(y))
            t_opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(t_model.parameters(), c.grad_clip)
            t_opt.step()
            loss.item()

        runs["torch"] = loop(t_opt.param_groups, evaluate_torch, step_torch)
        evaluations["torch"] = evaluate_torch
    return c, len(data.chars), runs, evaluations


def bench_train(args, torch):
    """Wall time of the whole char_gpt training run in each framework, taking turns by interval."""
    c, vocab, runs, evaluations = _train_runs(args, torch)
    seconds = {name: 0.0 for name in runs}
    names = list(runs)
    for k, first in enumerate(range(0, c.max_iters, c.eval_interval)):
        stop = min(first + c.eval_interval, c.max_iters)
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
    return {"iterations": c.max_iters, "data": args.train_data or "built-in corpus", "vocab_size": vocab,
            "config": {"n_layer": c.n_layer, "n_head": c.n_head, "d_model": c.d_model, "block_size": c.block_size,
                       "batch_size": c.batch_size, "bias": c.bias, "eval_interval": c.eval_interval,
                       "eval_iters": c.eval_iters},
            "seconds": seconds, "val_loss": val, "ratio": {"torch/minigrad": _ratio(seconds.get("torch"),
                                                                                     seconds["minigrad"])}}


def format_train(result):
    cfg = result["config"]
    rows = [[name, _fmt(sec, 1), _fmt(1e3 * sec / result["iterations"], 1), _fmt(result["val_loss"][name], 4)]
            for name, sec in result["seconds"].items()]
    title = (f"char_gpt training run: {result['iterations']} iterations on {result['data']} (L{cfg['n_layer']} "
             f"d{cfg['d_model']} T{cfg['block_size']} B{cfg['batch_size']}, evaluation every {cfg['eval_interval']} "
             f"iterations); ratio torch/minigrad = {_fmt_ratio(result['ratio']['torch/minigrad'])}")
    return format_table(["framework", "wall s", "ms/iter", "final val loss"], rows, title)


# ------------------------------------------------------------------------- peak memory (subprocess)
def child_memory(framework, config_index, seed, steps, threads=None):
    """Runs in a fresh process: RSS after the imports, then peak RSS after `steps` training steps.
    For minigrad it also counts numba compilations: with a stale cache, the peak includes the
    compiler's memory."""
    name, config, batch_size = GPT_CONFIGS[config_index]
    compiles = None
    if framework == "minigrad":
        import numba
        from numba.core import event

        import minigrad  # noqa: F401
        import transformer  # noqa: F401

        baseline = _peak_rss_mb()
        if threads:
            numba.set_num_threads(threads)
        with event.install_recorder("numba:compile") as recorder:  # fires on cache misses only
            step, _ = make_minigrad_trainer(config, batch_size, seed)
            for _ in range(steps):
                step()
        compiles = sum(1 for _, e in recorder.buffer if e.is_start)
    else:
        import torch

        baseline = _peak_rss_mb()
        if threads:
            torch.set_num_threads(threads)
        step, _ = make_torch_trainer(torch, config, batch_size, seed)
        for _ in range(steps):
            step()
    return {"framework": framework, "config": name, "steps": steps, "rss_after_imports_mb": baseline,
            "peak_rss_mb": _peak_rss_mb(), "ru_maxrss_mb": _ru_maxrss_mb(), "numba_compiles": compiles}


def bench_memory(args, torch):
    frameworks = ["minigrad"] + (["torch"] if torch is not None else [])
    rows = []
    for index, (name, _, _) in enumerate(GPT_CONFIGS):
        for framework in frameworks:
            _log(f"  peak memory, {framework}, {name} config (subprocess)", args)
            command = [sys.executable, "-m", "demos.benchmark", "--_child", "memory", "--framework", framework,
                       "--config", str(index), "--seed", str(args.seed), "--steps", str(args.memory_steps)]
            if args.threads:
                command += ["--threads", str(args.threads)]
            done = subprocess.run(command, cwd=REPO, env=_child_env(), capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"memory subprocess failed:\n{done.stderr[-2000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["increment_mb"] = row["peak_rss_mb"] - row["rss_after_imports_mb"]
            rows.append(row)
    return rows


def format_memory(rows):
    table = [[f"{r['framework']}, {r['config']}", _fmt(r["rss_after_imports_mb"], 0), _fmt(r["peak_rss_mb"], 0),
              _fmt(r["increment_mb"], 0),
              "-" if r["numba_compiles"] is None else str(r["numba_compiles"])
              + (" (stale cache: includes the compiler)" if r["numba_compiles"] else "")] for r in rows]
    return format_table(["GPT training, fresh process", "RSS after imports MB", "peak RSS MB", "training +MB",
                         "numba compiles"], table, f"peak memory over {rows[0]['steps']} training steps in a fresh process (VmHWM, i.e. ru_maxrss "
                        "without what Linux carries over from the parent)" if rows else None)


# ================================================================================ 4. start-up
_STARTUP_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
marks = {}
import numpy as np
import minigrad
marks["import minigrad"] = time.perf_counter() - t0
rng = np.random.default_rng(0)
a = minigrad.tensor(rng.standard_normal((64, 64), dtype=np.float32))
(a @ a).data
marks["+ float32 matmul"] = time.perf_counter() - t0
x = minigrad.tensor(rng.standard_normal((8, 16), dtype=np.float32), requires_grad=True)
x.softmax(axis=-1).sum().backward()
marks["+ softmax fwd/bwd"] = time.perf_counter() - t0
if sys.argv[1] == "gpt":
    from minigrad import optim
    from transformer import GPT, GPTConfig
    model = GPT(GPTConfig(vocab_size=65, block_size=16, n_layer=1, n_head=2, d_model=32))
    opt = optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    ids = minigrad.tensor(rng.integers(0, 65, (2, 16)))
    _, loss = model(ids, ids)
    loss.backward()
    opt.step()
    opt.zero_grad()
    marks["+ GPT training step"] = time.perf_counter() - t0
print(json.dumps({"marks": marks, "backend": minigrad.get_backend()}))
"""


def bench_startup(args):
    cache = tempfile.mkdtemp(prefix="minigrad-numba-cache-")
    runs = {}
    try:
        for phase in ("cold", "warm"):
            _log(f"  start-up, {phase} numba cache (subprocess)", args)
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", _STARTUP_SCRIPT, "gpt" if args.startup_gpt else "-"],
                                  cwd=REPO, env=_child_env(NUMBA_CACHE_DIR=cache), capture_output=True, text=True,
                                  timeout=900)
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(f"start-up subprocess failed:\n{done.stderr[-2000:]}")
            run = json.loads(done.stdout.strip().splitlines()[-1])
            run["process_wall_s"] = wall
            runs[phase] = run
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"cache_dir": "fresh temporary NUMBA_CACHE_DIR", "backend": runs["cold"]["backend"],
            "cold": {**runs["cold"]["marks"], "process wall": runs["cold"]["process_wall_s"]},
            "warm": {**runs["warm"]["marks"], "process wall": runs["warm"]["process_wall_s"]}}


def format_startup(result):
    phases = list(result["cold"])
    table = [[p, _fmt(result["cold"][p], 2), _fmt(result["warm"].get(p), 2)] for p in phases]
    return format_table(["start-up (cumulative, s)", "cold cache", "warm cache"], table,
                        f"numba compile and start-up, in a fresh process (backend {result['backend']}); "
                        "'process wall' includes the interpreter")


# ================================================================================ targets
def evaluate_targets(results, torch_missing=None):
    """torch_missing: None if PyTorch took part, else why not."""
    targets = []

    def add(text, ratio, threshold, detail, needs_torch=False):
        if ratio is None:
            why = torch_missing if needs_torch and torch_missing else "not measured"
            targets.append({"target": text, "ratio": None, "threshold": threshold, "met": None, "detail": why})
        else:
            targets.append({"target": text, "ratio": ratio, "threshold": threshold, "met": bool(ratio >= threshold),
                            "detail": detail})

    matmul = results.get("matmul")
    for kind, threshold, text in (("gpt2d", 0.8, "numba matmul >= 0.8x numpy GFLOP/s, 2-D GPT shapes"),
                                  ("batched", 1.0, "numba matmul >= 1.0x numpy GFLOP/s, batched attention")):
        rows = [r for r in matmul or [] if r["kind"] == kind]
        worst = min(rows, key=lambda r: r["ratio"]["numba/numpy"]) if rows else None
        add(text, worst and worst["ratio"]["numba/numpy"], threshold, worst and f"worst: {worst['case']}")

    softmax = [r for r in results.get("softmax") or [] if r["ratio"]["torch/numba"] is not None]
    worst = min(softmax, key=lambda r: r["ratio"]["torch/numba"]) if softmax else None
    add("softmax fwd+bwd no slower than PyTorch", worst and worst["ratio"]["torch/numba"], 1.0,
        worst and f"worst: {worst['shape'][0]} x {worst['shape'][1]}", needs_torch=True)

    train = results.get("train")
    add("char_gpt training run no slower than PyTorch", train and train["ratio"]["torch/minigrad"], 1.0,
        train and "torch" in train["seconds"] and f"minigrad {train['seconds']['minigrad']:.1f} s vs torch "
                                                  f"{train['seconds']['torch']:.1f} s ({train['iterations']} iterations)",
        needs_torch=True)

    gpt = {r["config"]: r for r in results.get("gpt") or []}
    for name, _, _ in GPT_CONFIGS:
        row = gpt.get(name)
        add(f"GPT training step no slower than PyTorch ({name})", row and row["ratio"]["torch/minigrad"], 1.0,
            row and f"minigrad {row['ms_per_step']['minigrad']:.1f} ms vs {row['torch_best']} "
                    f"{row['ms_per_step'][row['torch_best']]:.1f} ms" if row and row["torch_best"] else None,
            needs_torch=True)
    return targets


def format_targets(targets):
    table = [[t["target"], _fmt_ratio(t["ratio"]), f">= {t['threshold']:.1f}x",
              "-" if t["met"] is None else ("met" if t["met"] else "NOT met"), t["detail"] or ""] for t in targets]
    return format_table(["target", "measured", "needs", "status", "detail"], table,
                        "targets (ratios > 1: minigrad faster; noisy machines blur results within ~10%)")


# ================================================================================ profile (optional)
def profile_gpt_step(args):
    """cProfile of minigrad GPT steps at nanoGPT's CPU configuration: the top functions by own time."""
    import cProfile
    import io
    import pstats

    name, config, batch_size = GPT_CONFIGS[1]
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


# ================================================================================ command line
def build_parser():
    from .common import parser

    p = parser(__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true",
                   help="print a JSON document on stdout (the tables then go to stderr)")
    p.add_argument("--quick", action="store_true",
                   help="a fast smoke run: short timings, no peak-memory subprocesses, no start-up section "
                        "(unless --only startup)")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="timed samples per candidate (GPT: timed steps per framework); default: adapt to each "
                        "operation's duration (~0.3 s per candidate per shape)")
    p.add_argument("--only", action="append", default=None, metavar="SECTION",
                   help=f"run only these sections, repeatable or comma-separated: {', '.join(SECTIONS)}")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads for numba, PyTorch and numpy's OpenBLAS alike (default: each library's own "
                        "default); the GPT section still also times PyTorch at 1 and 2 threads")
    p.add_argument("--no-torch", action="store_true", help="do not compare with PyTorch even if it is installed")
    p.add_argument("--no-startup-gpt", dest="startup_gpt", action="store_false",
                   help="start-up section: time import + matmul + softmax only, without a GPT step")
    p.add_argument("--train-iters", type=int, default=None, metavar="N",
                   help="train section: iterations of the char_gpt run (default: 2000, with --quick 20)")
    p.add_argument("--train-data", metavar="FILE",
                   help="train section: a text file (default: char_gpt's built-in corpus); nanoGPT's "
                        "Shakespeare is ../shared/data/tinyshakespeare.txt in this project's workspace")
    p.add_argument("--profile", type=int, nargs="?", const=15, default=0, metavar="N",
                   help="also print a cProfile summary (top N functions) of minigrad's GPT step")
    p.add_argument("--_child", help=argparse.SUPPRESS)  # internal: a measurement subprocess
    return p


def _parse_only(values, quick):
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


def _settings(args):
    """Time budgets: normal runs aim at ~0.3 s per candidate per shape; --quick at a few ms."""
    if args.quick:
        args.budget, args.min_samples, args.sample_seconds = 0.02, 3, 0.003
        args.gpt_budget, args.gpt_min_steps, args.gpt_blocks, args.gpt_warmup = 0.0, 3, 1, 0
    else:
        args.budget, args.min_samples, args.sample_seconds = 0.3, 7, 0.01
        args.gpt_budget, args.gpt_min_steps, args.gpt_blocks, args.gpt_warmup = 5.0, 10, 5, 3
    args.memory_steps = 5
    if args.train_iters is None:
        args.train_iters = 20 if args.quick else 2000


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


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a == "--_child" or a.startswith("--_child=") for a in argv):
        # before the normal parser: that one imports minigrad, which a PyTorch child must not load
        return _child_main(argv)
    args = build_parser().parse_args(argv)
    sections = _parse_only(args.only, args.quick)
    _settings(args)
    out = sys.stderr if args.json else sys.stdout

    def show(text):
        print(text + "\n", file=out, flush=True)

    torch = _import_torch(args)
    if args.threads:
        set_threads(args.threads, torch)
    info = system_info(args, torch)
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
        "startup": [("startup", lambda: bench_startup(args), format_startup)],
        "train": [("train", lambda: bench_train(args, torch), format_train)],
    }
    results["section_seconds"] = {}
    for section in sections:
        for key, measure, fmt in steps[section]:
            _log(f"{key} ...", args)
            t0 = time.perf_counter()
            results[key] = measure()
            results["section_seconds"][key] = time.perf_counter() - t0
            show(fmt(results[key]))
    if args.profile:
        show(profile_gpt_step(args))
    results["targets"] = evaluate_targets(results, torch_missing)
    results["elapsed_s"] = time.perf_counter() - start
    results["settle_s"] = _settle_seconds[0]
    show(format_targets(results["targets"]) + f"\n\n(benchmark took {results['elapsed_s']:.0f} s)")
    if args.json:
        print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
