"""Softmax and log-softmax over the last axis of a batch of rows, forward and backward.

Every function takes "rows": a 2-D array (R, N) whose last axis is the one being normalised (the
engine moves the softmax axis last before calling). Each kernel exists twice:

- ``*_numpy``: the reference, a few lines of textbook numpy;
- ``*_numba``: a thin Python wrapper that checks the input, makes it C-contiguous and calls a
  compiled loop over a range of rows, on several threads (``_parallel.py``) when the batch
  is large enough to pay for waking them.

The compiled loops use ``fast_exp``, ``simd_add`` and ``simd_max`` from ``_simd.py``.

All compiled kernels use ``error_model="numpy"``: a division by zero gives inf or NaN, as in numpy,
instead of raising ZeroDivisionError (whose check inside a loop would also stop vectorisation).

Masked rows: a row whose entries are all ``-inf`` (a fully masked attention row) has no finite
maximum. Softmax then gives all zeros (zero attention weights, instead of 0/0 = NaN), log-softmax
gives all ``-inf``, and both backwards give finite gradients. ``+inf`` entries are not supported.

Attention: ``masked_softmax_forward(x, mask, scale)`` = softmax(where(mask, scale * x, -inf)) in one
kernel, instead of three passes over the scores (multiply, masked fill, softmax); row r of x uses
mask row r % Rm, so a (T, T) causal mask serves all rows (B*h*T, T). Its backward is
scale * y * (g - sum(g * y)).
"""

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported
from ._rows import PARALLEL_MIN_ELEMENTS_EXP, as_rows, for_rows, same_rows  # noqa: E402
from ._simd import fast_exp, simd_add, simd_max  # noqa: E402


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------


def _safe_row_max(x):
    """Row maxima (R, 1), with 0 in place of -inf so that an all -inf row does not give NaN."""
    row_max = x.max(axis=-1, keepdims=True, initial=-np.inf)  # (initial: rows may be empty)
    return np.where(np.isneginf(row_max), 0, row_max)


def softmax_forward_numpy(x):
    """y (R, N) = exp(x - max) / sum(exp(x - max)) along each row of x (R, N)."""
    e = np.exp(x - _safe_row_max(x))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)  # an all -inf row: 0 / 1 = 0


def softmax_backward_numpy(y, g):
    """dx (R, N) from y = softmax(x) (R, N) and the upstream gradient g (R, N)."""
    # softmax: dy_i/dx_j = y_i (delta_ij - y_j)  =>  dx = y * (g - sum(g * y))
    return y * (g - (g * y).sum(axis=-1, keepdims=True))


def log_softmax_forward_numpy(x):
    """y (R, N) = x - max - log(sum(exp(x - max))) along each row of x (R, N)."""
    shifted = x - _safe_row_max(x)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    return shifted - np.log(np.where(total == 0, 1, total))  # an all -inf row stays -inf


def log_softmax_backward_numpy(y, g):
    """dx (R, N) from y = log_softmax(x) (R, N) and the upstream gradient g (R, N)."""
    # log_softmax: dy_i/dx_j = delta_ij - softmax_j  =>  dx = g - exp(y) * sum(g)
    return g - np.exp(y) * g.sum(axis=-1, keepdims=True)


def masked_softmax_forward_numpy(x, mask, scale):
    """y (R, N) = softmax(where(mask[r % Rm], scale * x[r], -inf)) for each row r of x (R, N).

    ``mask`` is None (every entry allowed) or a bool array (Rm, N), R a multiple of Rm: row r of x
    uses mask row r % Rm (a (T, T) causal mask for rows (B*h*T, T)). A row with no allowed entry
    gives all zeros.
    """
    z = x.dtype.type(scale) * x
    if mask is not None:
        n_mask_rows, n = mask.shape
        n_tiles = x.shape[0] // n_mask_rows if n_mask_rows else 0
        z = np.where(mask, z.reshape(n_tiles, n_mask_rows, n), -np.inf).reshape(x.shape)
    return softmax_forward_numpy(z)


def masked_softmax_backward_numpy(y, g, scale):
    """dx (R, N) from y = masked_softmax_forward(x, mask, scale) (R, N) and the upstream gradient g."""
    # y = softmax(z), z = scale * x (masked z_j constant)  =>  dx = scale * y * (g - sum(g * y));
    # masked entries have y_j = 0, hence dx_j = 0
    return y.dtype.type(scale) * y * (g - (g * y).sum(axis=-1, keepdims=True))


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba)
#
# Each kernel is a function over a range of rows [start, stop), with the row loop written out in
# full (calling a helper per row that takes arrays would cost two atomic reference-count updates
# per row). The wrapper calls it once for all rows, or, for a large batch, through
# ``for_rows``, which shares blocks of rows out among the threads.
# ---------------------------------------------------------------------------------------------------


# Rows shorter than this take their exponentials in one pass over the whole block of rows. LLVM's
# vector loop handles four SIMD registers per turn (64 floats with AVX-512), so a 32-float row never
# enters it: it runs in a narrower leftover loop at half speed or less. One flat pass over
# (stop - start) * N entries has no such leftovers; it costs two more light passes over the rows.
SHORT_ROW = 128


@jit(error_model="numpy")
def _softmax_forward_rows(x, y, start, stop):
    """y[r] = softmax(x[r]) for rows start <= r < stop of x, y (R, N), N >= 1."""
    n = x.shape[1]
    if n < SHORT_ROW:
        for r in range(start, stop):  # y = x - max (an all -inf row: -inf, whose exp is 0)
            shift = x[r, 0]
            for j in range(n):
                shift = simd_max(shift, x[r, j])
            if shift == -np.inf:
                shift = x.dtype.type(0)
            for j in range(n):
                y[r, j] = x[r, j] - shift
        # (a view indexed from 0: indexing y from start * n, numba would check for negative indices,
        # and that check keeps LLVM from vectorising the loop)
        block = y.reshape(-1)[start * n:stop * n]
        for k in range(block.shape[0]):
            block[k] = fast_exp(block[k])
        for r in range(start, stop):
            total = x.dtype.type(0)
            for j in range(n):
                total = simd_add(total, y[r, j])
            scale = x.dtype.type(1) / total if total != 0 else x.dtype.type(0)  # (all -inf: zeros)
            for j in range(n):
                y[r, j] *= scale
        return
    for r in range(start, stop):
        shift = x[r, 0]
        for j in range(n):
            shift = simd_max(shift, x[r, j])
        if shift == -np.inf:  # every entry is -inf (fully masked): zero weights
            for j in range(n):
                y[r, j] = 0
            continue
        total = x.dtype.type(0)
        for j in range(n):  # one pass: exponentials and their sum
            e = fast_exp(x[r, j] - shift)
            y[r, j] = e
            total = simd_add(total, e)
        scale = x.dtype.type(1) / total
        for j in range(n):
            y[r, j] *= scale


@jit(error_model="numpy")
def _softmax_backward_rows(y, g, dx, start, stop):
    """dx[r] from y[r] = softmax(x[r]) and g[r], rows start <= r < stop of (R, N) arrays."""
    # softmax: dx = y * (g - sum(g * y))
    n = y.shape[1]
    for r in range(start, stop):
        dot = y.dtype.type(0)
        for j in range(n):
            dot = simd_add(dot, g[r, j] * y[r, j])
        for j in range(n):
            dx[r, j] = y[r, j] * (g[r, j] - dot)


@jit(error_model="numpy")
def _log_softmax_forward_rows(x, y, start, stop):
    """y[r] = log_softmax(x[r]) for rows start <= r < stop of x, y (R, N), N >= 1."""
    n = x.shape[1]
    for r in range(start, stop):
        shift = x[r, 0]
        for j in range(n):
            shift = simd_max(shift, x[r, j])
        if shift == -np.inf:  # every entry is -inf: the log of zero weights
            for j in range(n):
                y[r, j] = -np.inf
            continue
        total = x.dtype.type(0)
        for j in range(n):
            total = simd_add(total, fast_exp(x[r, j] - shift))
        log_total = np.log(total)
        for j in range(n):
            y[r, j] = (x[r, j] - shift) - log_total


@jit(error_model="numpy")
def _log_softmax_backward_rows(y, g, dx, start, stop):
    """dx[r] from y[r] = log_softmax(x[r]) and g[r], rows start <= r < stop of (R, N) arrays."""
    # log_softmax: dx = g - exp(y) * sum(g)
    n = y.shape[1]
    for r in range(start, stop):
        g_sum = g.dtype.type(0)
        for j in range(n):
            g_sum = simd_add(g_sum, g[r, j])
        for j in range(n):
            dx[r, j] = g[r, j] - fast_exp(y[r, j]) * g_sum


# The masked kernel takes a mask in every case (the wrapper passes one all-True row for mask=None):
# one compiled version per dtype; reading the mask costs a little, with or without a real mask.
# It is compiled without "contract": ``scale * x`` is rounded
# before ``- shift`` (no fused multiply-add), exactly as in the numpy twin and the unfused steps.
@jit(error_model="numpy", fastmath=False)
def _masked_softmax_forward_rows(x, mask, scale, y, start, stop):
    """y[r] = softmax(where(mask[r % Rm], scale * x[r], -inf)) for rows start <= r < stop."""
    n = x.shape[1]
    n_mask_rows = mask.shape[0]
    s = x.dtype.type(scale)
    minus_inf = x.dtype.type(-np.inf)
    for r in range(start, stop):
        m = r % n_mask_rows
        shift = minus_inf
        for j in range(n):
            shift = simd_max(shift, s * x[r, j] if mask[m, j] else minus_inf)
        if shift == -np.inf:  # no allowed entry: zero weights
            for j in range(n):
                y[r, j] = 0
            continue
        total = x.dtype.type(0)
        for j in range(n):  # (recomputing scale * x: a little faster than storing it in y above)
            e = fast_exp((s * x[r, j] if mask[m, j] else minus_inf) - shift)
            y[r, j] = e
            total = simd_add(total, e)
        inverse = x.dtype.type(1) / total
        for j in range(n):
            y[r, j] *= inverse


@jit(error_model="numpy")
def _masked_softmax_backward_rows(y, g, scale, dx, start, stop):
    """dx[r] = scale * y[r] * (g[r] - sum(g[r] * y[r])) for rows start <= r < stop."""
    n = y.shape[1]
    s = y.dtype.type(scale)
    for r in range(start, stop):
        dot = y.dtype.type(0)
        for j in range(n):
            dot = simd_add(dot, g[r, j] * y[r, j])
        for j in range(n):
            dx[r, j] = s * y[r, j] * (g[r, j] - dot)


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def softmax_forward_numba(x):
    """y (R, N) = softmax of each row of x (R, N); float32 or float64 in, same dtype out."""
    x = as_rows("softmax_forward", x)
    y = np.empty_like(x)
    for_rows(_softmax_forward_rows, x, x, y, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return y


def softmax_backward_numba(y, g):
    """dx (R, N) = y * (g - sum(g * y)) for y = softmax(x) (R, N) and upstream gradient g (R, N)."""
    y = as_rows("softmax_backward", y)
    g = same_rows("softmax_backward", y, g)
    dx = np.empty_like(y)
    for_rows(_softmax_backward_rows, y, y, g, dx)
    return dx


def log_softmax_forward_numba(x):
    """y (R, N) = log_softmax of each row of x (R, N); float32 or float64 in, same dtype out."""
    x = as_rows("log_softmax_forward", x)
    y = np.empty_like(x)
    for_rows(_log_softmax_forward_rows, x, x, y, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return y


def log_softmax_backward_numba(y, g):
    """dx (R, N) = g - exp(y) * sum(g) for y = log_softmax(x) (R, N) and upstream gradient g."""
    y = as_rows("log_softmax_backward", y)
    g = same_rows("log_softmax_backward", y, g)
    dx = np.empty_like(y)
    for_rows(_log_softmax_backward_rows, y, y, g, dx, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return dx


def _mask_rows(name, mask, x):
    """``mask`` (Rm, N) as a C-contiguous, writeable bool array whose rows tile those of x (R, N).

    None gives one all-True row.
    """
    if mask is None:
        return np.ones((1, x.shape[1]), dtype=np.bool_)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"{name}: mask must be bool, got {mask.dtype}")
    n_mask_rows = mask.shape[0] if mask.ndim == 2 else 0
    tiles = x.shape[0] % n_mask_rows == 0 if n_mask_rows else x.shape[0] == 0
    if mask.ndim != 2 or mask.shape[1] != x.shape[1] or not tiles:
        raise ValueError(f"{name}: mask of shape {mask.shape} does not tile rows of shape {x.shape}")
    mask = np.ascontiguousarray(mask)
    if not mask.flags.writeable:  # (another numba type: copy rather than compile)
        mask = mask.copy()
    return mask


def masked_softmax_forward_numba(x, mask, scale):
    """y (R, N) = softmax(where(mask[r % Rm], scale * x[r], -inf)) per row; mask None or bool (Rm, N)."""
    x = as_rows("masked_softmax_forward", x)
    mask = _mask_rows("masked_softmax_forward", mask, x)
    y = np.empty_like(x)
    for_rows(_masked_softmax_forward_rows, x, x, mask, float(scale), y, min_elements=PARALLEL_MIN_ELEMENTS_EXP)
    return y


def masked_softmax_backward_numba(y, g, scale):
    """dx (R, N) = scale * y * (g - sum(g * y)) for y = masked_softmax_forward(x, mask, scale)."""
    y = as_rows("masked_softmax_backward", y)
    g = same_rows("masked_softmax_backward", y, g)
    dx = np.empty_like(y)
    for_rows(_masked_softmax_backward_rows, y, y, g, float(scale), dx)
    return dx
