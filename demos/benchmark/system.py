"""The header of every run: the machine and the software the numbers were measured on.

It says which CPU this is, which SIMD instructions LLVM compiles minigrad's kernels for (read from
llvmlite, the way numba sees the host), which register tile the matmul kernel uses, how many threads
minigrad runs on and how it runs them, the versions of Python, numpy, numba and PyTorch, and which
BLAS numpy calls (through threadpoolctl when it is installed).
"""
import os
import platform
import sys
import time

import numpy as np

from .threads import minigrad_parallelism, minigrad_threads, openblas_runtime

# environment variables that change what the benchmark measures
ENVIRONMENT = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS",
               "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR", "MINIGRAD_BACKEND", "MINIGRAD_NUM_THREADS",
               "MINIGRAD_CACHE_DIR")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags():
    """The vector extensions the kernel reports for this CPU (Linux only)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [x for x in ("avx2", "fma", "avx512f") if x in flags]
    except OSError:
        pass
    return []


def simd_target():
    """-> (CPU name, SIMD family) that LLVM compiles numba's code for: the host's, or the one that
    NUMBA_CPU_NAME / NUMBA_CPU_FEATURES choose; the family ("avx512", "avx2", "neon" or "sse") is
    the one minigrad picks its matmul tile by (kernels/_cpu.py)."""
    from minigrad.kernels import _cpu, _jit

    return _jit.target_cpu_name(), _cpu.simd_family()


def kernel_description():
    """``minigrad.kernels.describe()`` (simd, tile, threads, parallel, cache_dir), or None if this
    version of minigrad does not have it."""
    import minigrad

    describe = getattr(minigrad.kernels, "describe", None)
    return None if describe is None else dict(describe())


def matmul_tile(description):
    """The matmul kernel's register tile, "rows x columns" of c (after the kernel's first call), and
    how its loop is written ("6x16 vector", "8x32 loops") when minigrad says."""
    if description and description.get("tile"):
        kernel = description.get("matmul_kernel")
        return str(description["tile"]) + (f" {kernel}" if kernel else "")
    matmul = sys.modules.get("minigrad.kernels.matmul")  # the kernel file, not the function of that name
    rows, cols = getattr(matmul, "MR", None), getattr(matmul, "NR", None)
    return f"{rows}x{cols}" if rows and cols else None


def blas_summary():
    """-> (text, threads) about the BLAS numpy calls."""
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            text = "; ".join(f"{p.get('internal_api')} {p.get('version')} core={p.get('architecture')} "
                             f"threads={p.get('num_threads')}" for p in pools)
            return text, pools[0].get("num_threads")
    except ImportError:
        pass
    parts = []
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        parts.append(f"{blas.get('name')} {blas.get('version')}")
    except Exception:  # older numpy: no mode="dicts"
        pass
    runtime = openblas_runtime() or {}
    if runtime:
        parts.append(f"core={runtime.get('core')} threads={runtime.get('threads')}")
    return ", ".join(parts) or "unknown (pip install threadpoolctl)", runtime.get("threads")


def finish_background_compile():
    """Wait for minigrad's compile-ahead process, if this process started one (an empty cache:
    kernels/_warm.py compiles attention and the thread pool's parts in a second process). Timed
    beside it, every section would measure a busy machine, and the pool would still run kernels
    from Python. -> seconds waited, or None if there was no such process."""
    from minigrad.kernels import _warm

    ahead = _warm._ahead
    if ahead is None:
        return None
    t0 = time.perf_counter()
    ahead.process.wait()
    with ahead.ready:  # (its reader thread marks everything ready once the process has exited)
        ahead.ready.wait_for(lambda: not ahead.pending, timeout=10)
    return time.perf_counter() - t0


def system_info(torch):
    import numba

    import minigrad
    from minigrad.kernels import implementation

    # run one kernel first: it compiles or loads from the cache, and starts minigrad's threads
    square = np.ones((256, 256), dtype=np.float32)
    t0 = time.perf_counter()
    implementation("matmul", "numba")(square, square)
    first_call = time.perf_counter() - t0
    background = finish_background_compile()
    try:
        layer = numba.threading_layer()
    except ValueError:  # numba's parallel threads never started (minigrad runs its own)
        layer = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    description = kernel_description()
    llvm_cpu, simd = simd_target()
    blas, blas_threads = blas_summary()
    return {
        "cpu": cpu_model(), "cpu_flags": cpu_flags(), "cores": os.cpu_count(), "usable_cores": usable,
        "llvm_cpu": llvm_cpu, "simd": simd, "matmul_tile": matmul_tile(description),
        "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
        "torch": torch.__version__ if torch else None, "blas": blas,
        "minigrad_backend": minigrad.get_backend(), "minigrad_threads": minigrad_threads(),
        "minigrad_parallel": minigrad_parallelism(description), "kernels": description,
        "numba_threads": numba.get_num_threads(), "numba_threading_layer": layer, "first_matmul_call_s": first_call,
        "background_compile_wait_s": background,
        "torch_threads": torch.get_num_threads() if torch else None, "blas_threads": blas_threads,
        "environment": {k: os.environ[k] for k in ENVIRONMENT if k in os.environ},
    }


def format_system(info):
    cache = (info.get("kernels") or {}).get("cache_dir")
    lines = [
        f"CPU      {info['cpu']} ({', '.join(info['cpu_flags']) or 'no AVX2'}), "
        f"{info['cores']} cores ({info['usable_cores']} usable)",
        f"kernels  LLVM compiles for {info['llvm_cpu']}: {info['simd']}; matmul tile {info['matmul_tile'] or '?'}"
        + (f"; cache {cache}" if cache else ""),
        f"threads  minigrad {info['minigrad_threads']}: {info['minigrad_parallel']}"
        + (f", torch {info['torch_threads']}" if info["torch_threads"] else "")
        + (f", BLAS {info['blas_threads']}" if info.get("blas_threads") else ""),
        f"versions python {info['python']}, numpy {info['numpy']}, numba {info['numba']}, "
        f"torch {info['torch'] or '(not used in this run)'}",
        f"numpy    BLAS: {info['blas']}",
        f"minigrad backend: {info['minigrad_backend']} (first matmul call in this process: "
        f"{info['first_matmul_call_s']:.2f} s; many seconds mean it was compiled rather than loaded "
        "from the cache)"
        + ("" if info.get("background_compile_wait_s") is None else
           f"; the measurements waited {info['background_compile_wait_s']:.1f} s for its background compile"),
        "env      " + (", ".join(f"{k}={v}" for k, v in info["environment"].items())
                       or "(no OPENBLAS_*, OMP_*, NUMBA_* or MINIGRAD_* setting)"),
    ]
    return "\n".join(lines)
