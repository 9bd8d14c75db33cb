"""Embedding backward: the gradient of a table lookup is a scatter-add of rows.

The forward picks rows, ``out[n] = weight[ids[n]]``. Each row of the table gets the sum of the
output gradients of every position that used it:

    dweight[r] = sum of g[n] over all n with ids[n] == r

``embedding_backward_numpy`` is ``np.add.at``, numpy's unbuffered scatter-add (a plain
``dw[ids] += g`` would count a repeated id only once). It is correct but slow: it handles one
element at a time through a generic loop. The numba twin is the same loop written out, with the
inner loop over a whole row of D numbers, which LLVM vectorises.
"""

import numpy as np

from ._jit import typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402


def embedding_backward_numpy(ids, g, num_embeddings):
    """ids (N,) integers in [0, num_embeddings), g (N, D) -> dweight (num_embeddings, D)."""
    dweight = np.zeros((num_embeddings, g.shape[1]), dtype=g.dtype)
    np.add.at(dweight, ids, g)
    return dweight


def _signature(dtype):
    """ids int64 (N,), g (N, D) any strides, dweight (rows, D) C-contiguous."""
    return types.void(types.int64[::1], types.Array(dtype, 2, "A", readonly=True), dtype[:, ::1])


@typed_jit(_signature)
def _scatter_add_rows(ids, g, dweight):
    for n in range(ids.shape[0]):
        row = dweight[ids[n]]
        for c in range(g.shape[1]):
            row[c] += g[n, c]


def embedding_backward_numba(ids, g, num_embeddings):
    """ids (N,) integers in [0, num_embeddings), g (N, D) -> dweight (num_embeddings, D)."""
    if g.ndim != 2 or ids.shape != g.shape[:1] or g.dtype not in (np.float32, np.float64):
        raise ValueError(f"embedding_backward: need ids (N,) and a float gradient (N, D), got {ids.shape} "
                         f"and {g.shape} {g.dtype}")
    dweight = np.zeros((num_embeddings, g.shape[1]), dtype=g.dtype)
    _scatter_add_rows.for_dtype(g.dtype)(np.ascontiguousarray(ids, dtype=np.int64), g, dweight)
    return dweight
