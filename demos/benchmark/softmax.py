"""Section `softmax`: softmax forward + backward over rows, timed as one unit.

Three candidates race on the same float32 arrays: minigrad's numba kernels, their numpy twins, and
PyTorch's softmax with its backward (the private ``torch._softmax_backward_data`` when it exists,
else autograd, whose bookkeeping then counts against PyTorch). All three are checked against the
numpy twin before they are timed.
"""
import numpy as np

from .matmul import randn
from .report import fmt, fmt_ratio, format_table, log, ratio
from .timing import race

SOFTMAX_SHAPES = [(3072, 64), (768, 65), (2048, 32)]


def _torch_softmax_fwd_bwd(torch, x, g):
    """-> (method, f() -> dx) for PyTorch."""
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    backward = getattr(torch, "_softmax_backward_data", None)
    if backward is not None:
        def fwd_bwd():
            return backward(tg, torch.softmax(tx, -1), -1, tx.dtype)

        return "torch.softmax + torch._softmax_backward_data", fwd_bwd
    leaf = tx.clone().requires_grad_(True)

    def fwd_bwd_autograd():
        leaf.grad = None
        torch.softmax(leaf, -1).backward(tg)
        return leaf.grad

    return "torch.softmax + autograd", fwd_bwd_autograd


def bench_softmax(args, torch):
    from minigrad.kernels import implementation

    fwd = {b: implementation("softmax_forward", b) for b in ("numba", "numpy")}
    bwd = {b: implementation("softmax_backward", b) for b in ("numba", "numpy")}
    rng = np.random.default_rng(args.seed + 1)
    rows = []
    for shape in SOFTMAX_SHAPES:
        log(f"  softmax {shape}")
        x, g = randn(rng, shape), randn(rng, shape)
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
            torch_method, candidates["torch"] = _torch_softmax_fwd_bwd(torch, x, g)
            if not np.allclose(candidates["torch"]().numpy(), dx_ref, atol=1e-5):
                raise AssertionError(f"softmax {shape}: PyTorch's gradient disagrees with the numpy twin")
        seconds, rounds = race(candidates, args.budget, args.repeats, args.min_samples, args.sample_seconds)
        rows.append({
            "shape": list(shape), "seconds": seconds, "samples": rounds, "torch_method": torch_method,
            "ratio": {"numpy/numba": ratio(seconds["numpy"], seconds["numba"]),
                      "torch/numba": ratio(seconds.get("torch"), seconds["numba"])},
        })
    return rows


def _us(seconds):
    return None if seconds is None else seconds * 1e6


def format_softmax(rows):
    table = [[f"{r['shape'][0]} x {r['shape'][1]}", fmt(_us(r["seconds"]["numba"]), 1),
              fmt(_us(r["seconds"]["numpy"]), 1), fmt(_us(r["seconds"].get("torch")), 1),
              fmt_ratio(r["ratio"]["numpy/numba"]), fmt_ratio(r["ratio"]["torch/numba"])] for r in rows]
    return format_table(["softmax fwd+bwd (rows x cols)", "numba us", "numpy us", "torch us",
                         "numpy/numba", "torch/numba"], table,
                        "softmax forward + backward, float32: microseconds (lower is better); "
                        "ratio = other time / numba time")
