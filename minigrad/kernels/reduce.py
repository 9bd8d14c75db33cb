"""Two sums: column sums of a 2-D array, and the sum of squares of a 1-D array.

``sum_rows(g)[c] = sum_r g[r, c]``

This is the bias gradient of a Linear layer, y = x W^T + b: each row of the output added b once,
so d loss / d b is the sum of the rows of g = d loss / d y.

``sum_rows_numpy`` is ``g.sum(axis=0)``, on one thread. ``sum_rows_numba`` (float32; float64 takes
the numpy path) cuts the rows into one block per thread; each thread adds its rows into a partial
sum (a loop over a whole row at a time, which LLVM vectorises), and the partial sums are added at
the end. The sum is over the rows in order within a block, in the array's dtype; numpy instead adds
pairwise, so the two differ by rounding (a few units in the last place in float32 for a thousand
rows).

``sum_squares(x) = sum_i x[i]^2``, accumulated in float64 whatever the dtype of x (the squares of
float32 numbers above 1e19 overflow float32). Gradient clipping adds these up over all gradients.
The numpy twin is ``np.einsum`` with ``dtype=float64``, which converts the array in pieces first;
the compiled loop widens each number as it goes, 8 float64 lanes at a time.
"""

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported

from ._parallel import get_num_threads, parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS  # noqa: E402
from ._simd import simd_add  # noqa: E402


# Up to this many rows numpy's sum is quicker than the call into compiled code, and it adds the rows
# in the same order (row after row, per column): the same bits.
NUMPY_ROWS = 32


def sum_rows_numpy(g):
    """g (R, N) -> (N,): the sum of the rows."""
    return g.sum(axis=0)


@jit(error_model="numpy")
def _sum_row_blocks(g, partial, first, last):
    """partial[b] = sum of the rows of block b of g, for the blocks first <= b < last of
    partial.shape[0] blocks of nearly equal size."""
    n_rows, n_cols = g.shape
    n_blocks = partial.shape[0]
    for block in range(first, last):
        acc = np.zeros(n_cols, dtype=g.dtype)  # (its own array: the compiler sees it overlaps nothing)
        for r in range(block * n_rows // n_blocks, (block + 1) * n_rows // n_blocks):
            row = g[r]
            for c in range(n_cols):
                acc[c] += row[c]
        for c in range(n_cols):  # (a loop: slice assignment would compile a shape check)
            partial[block, c] = acc[c]


def sum_rows_numba(g):
    """g (R, N) -> (N,): the sum of the rows, float32 or float64, any layout."""
    if g.ndim != 2 or g.dtype not in (np.float32, np.float64):
        raise ValueError(f"sum_rows: need a 2-D float32 or float64 array, got {g.shape} {g.dtype}")
    if g.shape[0] <= NUMPY_ROWS or g.dtype != np.float32 or not g.flags.c_contiguous:
        return g.sum(axis=0)  # few rows, float64 (gradient checks), other layouts: numpy does as well
    # one block per thread: the blocks, and so the order of the sums, depend on the thread count
    n_blocks = min(get_num_threads(), g.shape[0]) if g.size >= PARALLEL_MIN_ELEMENTS else 1
    partial = np.empty((n_blocks, g.shape[1]), dtype=g.dtype)
    parallel_for(_sum_row_blocks, n_blocks, g, partial)
    return partial[0] if n_blocks == 1 else partial.sum(axis=0)


def sum_squares_numpy(x):
    """x (N,) float -> sum of x[i]^2 as a Python float, summed in float64."""
    return float(np.einsum("i,i->", x, x, dtype=np.float64))


@jit
def _sum_squares(x):
    total = 0.0
    for i in range(x.shape[0]):
        value = np.float64(x[i])
        total = simd_add(total, value * value)
    return total


def sum_squares_numba(x):
    """x (N,) float -> sum of x[i]^2 as a Python float, summed in float64."""
    if x.ndim != 1 or x.dtype not in (np.float32, np.float64):
        raise ValueError(f"sum_squares: need a 1-D float32 or float64 array, got {x.shape} {x.dtype}")
    return _sum_squares(np.ascontiguousarray(x))
