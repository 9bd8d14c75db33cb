"""Section `matmul`: float32 GFLOP/s of minigrad's numba kernel, np.matmul and torch.matmul.

The cases are square sizes and the shapes a GPT training step multiplies: 2-D products of the
Linear layers (forward, and the transposed reads of the weight gradient) and batched attention
products. Every input is checked against a float64 numpy product before it is timed; the three
libraries then `race` on the same arrays (PyTorch sees the same memory and strides).
"""
import math

import numpy as np

from .report import fmt, fmt_ratio, format_table, log, ratio
from .timing import race


def randn(rng, shape):
    return rng.standard_normal(shape, dtype=np.float32)


def matmul_cases():
    """(label, kind, make) where make(rng) -> (a, b) float32; kind groups the cases for targets."""

    def plain(shape_a, shape_b):
        return lambda rng: (randn(rng, shape_a), randn(rng, shape_b))

    def linear_forward(m, k, n):  # x @ W.T, W (n, k): how minigrad's Linear calls it
        return lambda rng: (randn(rng, (m, k)), randn(rng, (n, k)).T)

    def weight_grad(m, k, n):  # a.T @ g with a (m, k) stored, g (m, n)
        return lambda rng: (randn(rng, (m, k)).T, randn(rng, (m, n)))

    def q_kt(b, t, d):  # q @ k^T with k (b, t, d) stored
        return lambda rng: (randn(rng, (b, t, d)), randn(rng, (b, t, d)).transpose(0, 2, 1))

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


def bench_matmul(args, torch):
    from minigrad.kernels import implementation

    numba_mm = implementation("matmul", "numba")
    rng = np.random.default_rng(args.seed)
    rows = []
    for label, kind, make in matmul_cases():
        log(f"  matmul {label}")
        a, b = make(rng)
        flops = 2.0 * np.prod(a.shape[:-1]) * a.shape[-1] * b.shape[-1]
        reference = np.matmul(a.astype(np.float64), b.astype(np.float64))
        if not np.allclose(numba_mm(a, b), reference, rtol=1e-3, atol=1e-3 * math.sqrt(a.shape[-1])):
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
            "ratio": {"numba/numpy": ratio(gflops["numba"], gflops["numpy"]),
                      "numba/torch": ratio(gflops["numba"], gflops.get("torch"))},
        })
    return rows


def format_matmul(rows):
    table = [[r["case"], r["kind"], f"{r['gflop'] * 1e3:.1f}", fmt(r["gflops"]["numba"], 1),
              fmt(r["gflops"]["numpy"], 1), fmt(r["gflops"].get("torch"), 1),
              fmt_ratio(r["ratio"]["numba/numpy"]), fmt_ratio(r["ratio"]["numba/torch"])] for r in rows]
    return format_table(["float32 matmul", "kind", "MFLOP", "numba GF/s", "numpy GF/s", "torch GF/s",
                         "numba/numpy", "numba/torch"], table,
                        "matmul: GFLOP/s (higher is better); ratio = numba GFLOP/s / other GFLOP/s")
