"""Column sums of a 2-D array: ``sum_rows(g)[c] = sum_r g[r, c]``.

This is the bias gradient of a Linear layer, y = x W^T + b: each row of the output added b once,
so d loss / d b is the sum of the rows of g = d loss / d y.

``sum_rows_numpy`` is ``g.sum(axis=0)``, on one thread. ``sum_rows_numba`` cuts the rows into one
block per thread; each thread adds its rows into a partial sum (a loop over a whole row at a time,
which LLVM vectorises), and the partial sums are added at the end. The sum is over the rows in
order within a block, in the array's dtype; numpy instead adds pairwise, so the two differ by
rounding (a few units in the last place in float32 for a thousand rows).
"""

import numpy as np

from ._jit import jit, n_threads, prange  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402

PARALLEL_MIN_ELEMENTS = 64 * 1024  # below this, one thread (waking the others costs more)


def sum_rows_numpy(g):
    """g (R, N) -> (N,): the sum of the rows."""
    return g.sum(axis=0)


def _signature(dtype):
    return types.void(types.Array(dtype, 2, "C", readonly=True), types.Array(dtype, 2, "C"), types.intp)


@jit([_signature(t) for t in (types.float32, types.float64)], parallel=True)
def _sum_row_blocks(g, partial, n_blocks):
    """partial[b] = sum of the rows of block b of g, for n_blocks blocks of nearly equal size."""
    n_rows, n_cols = g.shape
    for block in prange(n_blocks):
        acc = np.zeros(n_cols, dtype=g.dtype)  # (its own array: the compiler sees it overlaps nothing)
        for r in range(block * n_rows // n_blocks, (block + 1) * n_rows // n_blocks):
            row = g[r]
            for c in range(n_cols):
                acc[c] += row[c]
        partial[block] = acc


def sum_rows_numba(g):
    """g (R, N) -> (N,): the sum of the rows, float32 or float64, any layout."""
    if g.ndim != 2 or g.dtype not in (np.float32, np.float64):
        raise ValueError(f"sum_rows: need a 2-D float32 or float64 array, got {g.shape} {g.dtype}")
    if not g.flags.c_contiguous or g.shape[0] == 0:  # (numpy does as well on other layouts)
        return g.sum(axis=0)
    n_blocks = min(n_threads(), g.shape[0]) if g.size >= PARALLEL_MIN_ELEMENTS else 1
    partial = np.empty((n_blocks, g.shape[1]), dtype=g.dtype)
    _sum_row_blocks(g, partial, n_blocks)
    return partial[0] if n_blocks == 1 else partial.sum(axis=0)
