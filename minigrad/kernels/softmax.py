"""Softmax and log-softmax over the last axis of a batch of rows, forward and backward.

Every function takes "rows": a 2-D array (R, N) whose last axis is the one being normalised (the
engine moves the softmax axis last before calling). Each kernel exists twice:

- ``*_numpy``: the reference, a few lines of textbook numpy;
- ``*_numba``: a thin Python wrapper that checks the input, makes it C-contiguous and calls a
  compiled loop over rows (in parallel when the batch is large enough to pay for the threads).

The first half of this file also holds three small building blocks that the other row-wise kernels
(``cross_entropy.py``, ``layernorm.py``, ``gelu.py``) import:

- ``fast_exp(x)``: ``exp`` written out as arithmetic, so that LLVM can run it 16 lanes at a time;
- ``simd_add(total, value)`` and ``simd_max(best, value)``: one step of a running sum / maximum
  that LLVM is allowed to split into SIMD partial results.

Why they exist: on a CPU without Intel's SVML library, numba turns ``math.exp`` into a call to the
C library, one number at a time (about 2.5 ns each here, 10x slower than numpy's SIMD exp). And LLVM
never vectorises a loop like ``s += a[j]`` on its own, because adding in a different order gives a
(slightly) different float result; it must be told that the order does not matter. We tell it for
those reductions only, not for a whole kernel, so careful expressions such as ``(x - max) - lse``
keep the exact order written.

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

import math

import numpy as np

from ._jit import jit, n_threads, prange  # first: it sets LLVM options before numba is imported

from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic, overload  # noqa: E402

# Rows x columns from which a float32 kernel splits its rows over threads: below it, waking the
# threads (about 2 us) costs more than it saves. Measured on 2 cores: kernels that compute an
# exponential per entry gain from about 8K entries, the lighter ones from about 32K.
# float64 kernels always run on one thread: float64 serves to check gradients on small inputs, and
# skipping its parallel versions halves the time numba spends compiling.
PARALLEL_MIN_ELEMENTS = 32 * 1024
PARALLEL_MIN_ELEMENTS_EXP = 8 * 1024


# ---------------------------------------------------------------------------------------------------
# Building blocks that LLVM can vectorise
# ---------------------------------------------------------------------------------------------------


@intrinsic
def simd_add(typingctx, total, value):
    """``total + value``, marked so that LLVM may regroup a running sum into SIMD partial sums.

    In a loop ``s = simd_add(s, a[j])`` LLVM keeps 16 (or 8) partial sums and adds them up at the
    end. The order of additions changes, but it is fixed by the code and the row length, so the
    result is the same on every run.
    """
    if not (isinstance(total, types.Float) and total == value):
        return None

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc", "contract"))

    return total(total, value), codegen


@intrinsic
def simd_max(typingctx, best, value):
    """``max(best, value)`` for NaN-free values, in a form LLVM turns into a SIMD running maximum.

    It is LLVM's ``maxnum`` with the promise "no NaN, sign of zero does not matter". With a NaN in
    the row the maximum is unspecified; our kernels still return NaN for such a row, because the NaN
    also reaches the exponentials and sums.
    """
    if not (isinstance(best, types.Float) and best == value):
        return None

    def codegen(context, builder, signature, args):
        float_type = args[0].type
        maxnum = builder.module.declare_intrinsic(
            "llvm.maxnum", [float_type], ir.FunctionType(float_type, [float_type, float_type])
        )
        return builder.call(maxnum, args, fastmath=("nnan", "nsz"))

    return best(best, value), codegen


@intrinsic
def _float_from_bits(typingctx, bits):
    """Reinterpret the bits of an int32 as a float32 (int64 as float64); no conversion happens."""
    if bits == types.int32:
        result = types.float32
    elif bits == types.int64:
        result = types.float64
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(signature.return_type))

    return result(bits), codegen


def fast_exp(x):
    """``exp(x)`` for a float32 or float64 scalar, as plain arithmetic that LLVM can vectorise.

    Method: write x = k ln2 + r with k an integer and |r| <= ln2/2, so exp(x) = 2^k exp(r).
    exp(r) is a Taylor polynomial (degree 7 in float32, 13 in float64: both within about one unit
    in the last place), and 2^k is built directly from its exponent bits. ``k ln2`` is subtracted in
    two parts (Cody-Waite): ``LN2_HI`` has few significant bits, so ``k * LN2_HI`` is exact.
    Results that would be subnormal are flushed to 0 (below x = -87 in float32, -708 in float64),
    results above x = 88 (float32) or 709 (float64) are inf, exp(-inf) = 0 and exp(NaN) = NaN.
    Outside numba this is just ``math.exp``.
    """
    return math.exp(x)


_LOG2E = 1.4426950408889634  # 1 / ln 2
_LN2_HI_32 = np.float32(0.693359375)  # ln 2 rounded to 9 significant bits (355 / 512)
_LN2_LO_32 = np.float32(-2.1219444005469057e-04)  # ln 2 - _LN2_HI_32
_LN2_HI_64 = 0.6931471803691238  # ln 2 rounded to 32 significant bits
_LN2_LO_64 = 1.9082149292705877e-10  # ln 2 - _LN2_HI_64
# Between MIN and MAX, 2^k is a normal float; outside, the result is 0 or inf.
_EXP_MIN_32, _EXP_MAX_32 = np.float32(-87.0), np.float32(88.0)
_EXP_MIN_64, _EXP_MAX_64 = -708.0, 709.0
# 1/n! for the Taylor series, highest power first (Horner's rule)
_TAYLOR_32 = tuple(np.float32(1 / math.factorial(n)) for n in range(7, -1, -1))
_TAYLOR_64 = tuple(1 / math.factorial(n) for n in range(13, -1, -1))
_F32_ZERO, _F32_INF, _F32_LOG2E = np.float32(0.0), np.float32(np.inf), np.float32(_LOG2E)


# Out-of-range x gives a meaningless k and 2^k below, but the last three lines replace those
# results, so no input clamping is needed (each line is one SIMD compare-and-select).
def _exp_float32(x):
    """fast_exp for float32 (see ``fast_exp``)."""
    k = np.rint(x * _F32_LOG2E)
    r = (x - k * _LN2_HI_32) - k * _LN2_LO_32
    poly = _TAYLOR_32[0]
    for coefficient in _TAYLOR_32[1:]:  # unrolled by numba: the tuple's length is known
        poly = poly * r + coefficient
    two_to_k = _float_from_bits(np.int32((np.int32(k) + 127) << 23))  # float32: 8 exponent bits
    result = poly * two_to_k
    result = _F32_ZERO if x < _EXP_MIN_32 else result
    result = _F32_INF if x > _EXP_MAX_32 else result
    return x if x != x else result  # NaN in, NaN out


def _exp_float64(x):
    """fast_exp for float64 (see ``fast_exp``)."""
    k = np.rint(x * _LOG2E)
    r = (x - k * _LN2_HI_64) - k * _LN2_LO_64
    poly = _TAYLOR_64[0]
    for coefficient in _TAYLOR_64[1:]:
        poly = poly * r + coefficient
    two_to_k = _float_from_bits((np.int64(k) + 1023) << 52)  # float64: 11 exponent bits
    result = poly * two_to_k
    result = 0.0 if x < _EXP_MIN_64 else result
    result = np.inf if x > _EXP_MAX_64 else result
    return x if x != x else result


@overload(fast_exp, jit_options={"fastmath": {"contract"}, "error_model": "numpy"})
def _fast_exp_overload(x):
    """Inside numba, ``fast_exp(x)`` compiles to the version for x's type."""
    if x == types.float32:
        return _exp_float32
    if x == types.float64:
        return _exp_float64
    return None


# ---------------------------------------------------------------------------------------------------
# Shared checks
# ---------------------------------------------------------------------------------------------------


def as_rows(name, x, ndim=2):
    """``x`` as a C-contiguous, writeable float32 or float64 array of ``ndim`` dims (else raise).

    Together these fix the numba type of every argument, so each kernel compiles exactly twice:
    once for float32 and once for float64.
    """
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
    return (
        x.dtype == np.float32 and x.shape[0] >= 2 and x.size >= min_elements and n_threads() > 1
    )


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
        z = np.where(mask, z.reshape(-1, n_mask_rows, n), -np.inf).reshape(x.shape)
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
# per row). The wrapper calls it once for all rows, or, for a large batch, through a small
# parallel driver that gives each thread its own block of rows.
# ---------------------------------------------------------------------------------------------------


@jit(error_model="numpy")
def row_block(block, n_blocks, n_rows):
    """Rows [start, stop) of block number ``block`` when ``n_rows`` rows are cut in ``n_blocks``."""
    return n_rows * block // n_blocks, n_rows * (block + 1) // n_blocks


@jit(error_model="numpy")
def _softmax_forward_rows(x, y, start, stop):
    """y[r] = softmax(x[r]) for rows start <= r < stop of x, y (R, N), N >= 1."""
    n = x.shape[1]
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


@jit(parallel=True)
def _softmax_forward_parallel(x, y, n_blocks):
    """_softmax_forward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, x.shape[0])
        _softmax_forward_rows(x, y, start, stop)


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


@jit(parallel=True)
def _softmax_backward_parallel(y, g, dx, n_blocks):
    """_softmax_backward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, y.shape[0])
        _softmax_backward_rows(y, g, dx, start, stop)


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


@jit(parallel=True)
def _log_softmax_forward_parallel(x, y, n_blocks):
    """_log_softmax_forward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, x.shape[0])
        _log_softmax_forward_rows(x, y, start, stop)


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


@jit(parallel=True)
def _log_softmax_backward_parallel(y, g, dx, n_blocks):
    """_log_softmax_backward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, y.shape[0])
        _log_softmax_backward_rows(y, g, dx, start, stop)


# The masked kernel takes a mask in every case (the wrapper passes one all-True row for mask=None):
# one compiled version per dtype. Loading the mask costs 10-15% over the plain softmax kernel, the
# same with mask=None (measured). It is compiled without "contract": ``scale * x`` is rounded
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


@jit(parallel=True)
def _masked_softmax_forward_parallel(x, mask, scale, y, n_blocks):
    """_masked_softmax_forward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, x.shape[0])
        _masked_softmax_forward_rows(x, mask, scale, y, start, stop)


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


@jit(parallel=True)
def _masked_softmax_backward_parallel(y, g, scale, dx, n_blocks):
    """_masked_softmax_backward_rows over all rows, one block of rows per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, y.shape[0])
        _masked_softmax_backward_rows(y, g, scale, dx, start, stop)


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def softmax_forward_numba(x):
    """y (R, N) = softmax of each row of x (R, N); float32 or float64 in, same dtype out."""
    x = as_rows("softmax_forward", x)
    y = np.empty_like(x)
    if use_threads(x, PARALLEL_MIN_ELEMENTS_EXP):
        _softmax_forward_parallel(x, y, n_threads())
    elif x.size:
        _softmax_forward_rows(x, y, 0, x.shape[0])
    return y


def softmax_backward_numba(y, g):
    """dx (R, N) = y * (g - sum(g * y)) for y = softmax(x) (R, N) and upstream gradient g (R, N)."""
    y = as_rows("softmax_backward", y)
    g = same_rows("softmax_backward", y, g)
    dx = np.empty_like(y)
    if use_threads(y):
        _softmax_backward_parallel(y, g, dx, n_threads())
    elif y.size:
        _softmax_backward_rows(y, g, dx, 0, y.shape[0])
    return dx


def log_softmax_forward_numba(x):
    """y (R, N) = log_softmax of each row of x (R, N); float32 or float64 in, same dtype out."""
    x = as_rows("log_softmax_forward", x)
    y = np.empty_like(x)
    if use_threads(x, PARALLEL_MIN_ELEMENTS_EXP):
        _log_softmax_forward_parallel(x, y, n_threads())
    elif x.size:
        _log_softmax_forward_rows(x, y, 0, x.shape[0])
    return y


def log_softmax_backward_numba(y, g):
    """dx (R, N) = g - exp(y) * sum(g) for y = log_softmax(x) (R, N) and upstream gradient g."""
    y = as_rows("log_softmax_backward", y)
    g = same_rows("log_softmax_backward", y, g)
    dx = np.empty_like(y)
    if use_threads(y, PARALLEL_MIN_ELEMENTS_EXP):
        _log_softmax_backward_parallel(y, g, dx, n_threads())
    elif y.size:
        _log_softmax_backward_rows(y, g, dx, 0, y.shape[0])
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
    if mask.ndim != 2 or mask.shape[1] != x.shape[1] or mask.shape[0] == 0 or x.shape[0] % mask.shape[0]:
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
    if use_threads(x, PARALLEL_MIN_ELEMENTS_EXP):
        _masked_softmax_forward_parallel(x, mask, float(scale), y, n_threads())
    elif x.size:
        _masked_softmax_forward_rows(x, mask, float(scale), y, 0, x.shape[0])
    return y


def masked_softmax_backward_numba(y, g, scale):
    """dx (R, N) = scale * y * (g - sum(g * y)) for y = masked_softmax_forward(x, mask, scale)."""
    y = as_rows("masked_softmax_backward", y)
    g = same_rows("masked_softmax_backward", y, g)
    dx = np.empty_like(y)
    if use_threads(y):
        _masked_softmax_backward_parallel(y, g, float(scale), dx, n_threads())
    elif y.size:
        _masked_softmax_backward_rows(y, g, float(scale), dx, 0, y.shape[0])
    return dx
