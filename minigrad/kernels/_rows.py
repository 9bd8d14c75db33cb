"""Shared checks and thread thresholds of the row-wise kernels (softmax, layer norm, cross-entropy,
GELU, reductions).

A row-wise kernel takes "rows": a C-contiguous 2-D array (R, N) whose last axis is the one the
kernel works along. ``as_rows`` makes any input so, which also fixes the numba type of every
argument: each kernel compiles once per dtype, whatever the caller passed.

Threads: a kernel splits its rows over threads (``_parallel.parallel_for``) only when there is
enough work to pay for waking them; below the thresholds here one thread does it all. float64
kernels always run on one thread: float64 serves to check gradients on small inputs.
"""
import numpy as np

from ._parallel import get_num_threads, parallel_for

# Rows x columns from which a float32 kernel splits its rows over threads: about ten microseconds of
# work on one thread. Below that, handing a part to another thread (a few microseconds, most of
# them Python's, see _parallel.py) costs about as much as it saves. Kernels that compute an
# exponential per entry are heavier, so they gain from fewer entries than the light ones.
PARALLEL_MIN_ELEMENTS = 32 * 1024
PARALLEL_MIN_ELEMENTS_EXP = 8 * 1024


_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


def as_rows(name, x, ndim=2):
    """``x`` as a C-contiguous, writeable float32 or float64 array of ``ndim`` dims (else raise)."""
    if type(x) is np.ndarray and x.ndim == ndim and (x.dtype is _FLOAT32 or x.dtype is _FLOAT64):
        flags = x.flags
        if flags.c_contiguous and flags.writeable:  # already so (the usual case): no checks to run
            return x
    x = np.asarray(x)
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got shape {x.shape}")
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: expected float32 or float64, got {x.dtype}")
    x = np.ascontiguousarray(x)
    if not x.flags.writeable:  # a read-only array is another numba type: copy rather than compile
        x = x.copy()
    return x


def same_rows(name, reference, other):
    """``other`` checked to match ``reference`` in shape and dtype, C-contiguous."""
    other = as_rows(name, other, reference.ndim)
    if other.shape != reference.shape or other.dtype != reference.dtype:
        raise ValueError(
            f"{name}: arrays differ: {reference.shape} {reference.dtype} vs {other.shape} {other.dtype}"
        )
    return other


def use_threads(x, min_elements=PARALLEL_MIN_ELEMENTS):
    """True if a kernel over rows ``x`` should split them over threads (float32, 2 rows or more)."""
    return x.dtype is _FLOAT32 and x.shape[0] >= 2 and x.size >= min_elements and get_num_threads() > 1


def for_rows(kernel, rows, *args, min_elements=PARALLEL_MIN_ELEMENTS):
    """``kernel(*args, start, stop)`` over all the rows of ``rows``: on one thread, or in blocks of
    rows shared by the threads when ``use_threads(rows, min_elements)``. Nothing for an empty array."""
    if rows.size == 0:
        return
    parallel_for(kernel, rows.shape[0], *args, threads=None if use_threads(rows, min_elements) else 1)
