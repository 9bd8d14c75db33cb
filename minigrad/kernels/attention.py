"""Scaled dot-product attention in one kernel, forward and backward.

    weights = softmax(scale * Q K^T, with blocked keys at -inf),   out = weights V

Shapes (4-D, batch and heads first): q (B, h, T_q, d_k), k (B, h, T_k, d_k), v (B, h, T_k, d_v),
mask bool (B, h, T_q, T_k), True where query i may attend to key j (any strides: a broadcast
(T_q, T_k) mask has zero strides on its first two axes). A query with no allowed key gets zero
weights and a zero output.

``attention_*_numpy`` are the reference: the formula in a few lines of numpy.

``attention_*_numba`` do the same work one (batch, head) slice at a time, in parallel over the
slices, with matmul.py's blocked kernel (``matmul_block``) for every product:

- forward: S = Q K^T, written straight into the weights array; the masked softmax of scale * S,
  row by row; out = W V;
- backward, with g = d loss / d out:
      dW = g V^T
      dS = scale * W * (dW - rowsum(dW * W))      (softmax backward, times the scale)
      dQ = dS K,   dK = dS^T Q,   dV = W^T g

Keys past the last allowed one of a row are skipped: the products S and dW compute, for each block
of MR rows, only the strips of NR columns its rows need, and the softmax loops stop at each row's
end (rounded up to whole SIMD vectors; in the forward, to a multiple of SOFTMAX_RUN). A causal
mask so saves about a quarter of those products at T = 64. (The backward reads the rows' ends
from the same mask: past the last allowed key the weights are zero, and so is every term. A mask
shared by all the slices, like a causal one, is read once per call.) K^T and V^T are copied
once per slice into small contiguous arrays, so that the products read rows. The inputs may be
strided views (heads split from the features of a (B, T, d_model) array). Each slice's results are
computed in small C-contiguous arrays and copied into the outputs a SIMD register at a time
(``_copy_out``); the outputs keep the memory layout of q, k and v as long as their last axis is at
unit stride (else they are C-contiguous: ``_unit_stride``). When q, k and v are the three parts of
one projection, dq, dk and dv are the same parts of one new array, which is then that projection's
gradient as it is (``empty_like_parts``).

The products call matmul_block at its address (``matmul.call_block``; the Python wrappers pass
``matmul.block_address``) instead of holding a copy of it: numba would otherwise compile matmul_block
again into these kernels, and LLVM optimize it once more in each, over half their compile time. On a
first start the other process compiles these kernels while this one compiles matmul (``_warm.py``).

The compiled kernels are float32 only. float64 serves gradient checks on small inputs, where the
numpy twin is quick, and compiling a float64 version would add seconds to numba's first start.
"""

import numpy as np

from ._jit import INLINE, jit, typed_jit  # isort: skip
from numba import types  # noqa: E402
from numba.core.imputils import impl_ret_borrowed  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from ._parallel import parallel_for  # noqa: E402
from ._simd import fast_exp, simd_add, simd_max  # noqa: E402
from .matmul import CACHE, MR, NR, block_address, block_scratch, call_block, strided  # noqa: E402

VECTOR = 16  # row ends are rounded up to this many floats: whole SIMD registers on every CPU
# The forward's softmax loops run further, to a multiple of SOFTMAX_RUN (or the row's end): LLVM
# compiles each into a loop over 64 floats a turn (four SIMD registers) and a much slower loop for
# what is left, so a row of 48 took longer than a row of 64. Past `end` every key is blocked: the
# extra entries read scores never computed, and the select makes them -inf and then 0 weights.
SOFTMAX_RUN = 64
SERIAL_FLOPS = 500_000  # below this many multiply-adds, one thread does the whole batch


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------


def attention_forward_numpy(q, k, v, mask, scale):
    """-> (out (B, h, T_q, d_v), weights (B, h, T_q, T_k)); mask None or bool (B, h, T_q, T_k)."""
    scale = q.dtype.type(scale)  # (a numpy float64 scale would make float32 scores float64)
    scores = scale * (q @ np.swapaxes(k, -1, -2))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True, initial=-np.inf)  # (initial: there may be no keys)
    e = np.exp(scores - np.where(np.isneginf(row_max), 0, row_max))  # a fully blocked row: e = 0
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total == 0, 1, total)
    return weights @ v, weights


def attention_backward_numpy(g, q, k, v, weights, mask, scale):
    """-> (dq, dk, dv) from g = d loss / d out (B, h, T_q, d_v) and the forward's weights (and its
    mask, which this twin does not need: the weights are zero where it blocks)."""
    scale = q.dtype.type(scale)
    dv = np.swapaxes(weights, -1, -2) @ g  # out = W V  =>  dV = W^T g
    dp = g @ np.swapaxes(v, -1, -2)  # dW = g V^T
    ds = scale * weights * (dp - (dp * weights).sum(axis=-1, keepdims=True))  # softmax backward
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv  # S = scale Q K^T  =>  dQ = dS K, dK = dS^T Q


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba)
# ---------------------------------------------------------------------------------------------------


@jit(cache=CACHE, inline=INLINE)  # (these helpers are copied into the kernels: see _jit.INLINE)
def _product(a, b, c, ends, scratch, matmul_at):
    """c = a @ b with matmul.py's blocked kernel, for a (M, K), b (K, N) strided, c (M, N) C.

    ends: None, or for each row i of c the number of leading columns needed (the rest of the row
    may be left unwritten): then each block of MR rows computes only the column strips its rows
    need. Consecutive blocks that need as many strips go to matmul_block in one call (one call
    for all of them at T = 32 with a causal mask), as each call has its own fixed cost.
    scratch: matmul.py's ``block_scratch``. matmul_at: ``matmul.block_address``, where matmul_block is called.
    """
    packed_a, packed_b, edge, no_bias = scratch
    n_rows, n_cols = c.shape
    n_blocks, n_strips = (n_rows + MR - 1) // MR, (n_cols + NR - 1) // NR
    zero = np.intp(0)
    if ends is None:
        call_block(matmul_at, a, b, c, no_bias, zero, np.intp(n_strips), zero, np.intp(n_blocks), packed_a, packed_b, edge)
        return
    first, strips = 0, -1  # the run of blocks first..block-1 needs `strips` strips
    for block in range(n_blocks + 1):
        needed = -1  # (past the last block: ends the last run)
        if block < n_blocks:
            need = 0
            for i in range(block * MR, min(block * MR + MR, n_rows)):
                need = max(need, ends[i])
            needed = (need + NR - 1) // NR
        if needed != strips:
            if strips > 0:
                call_block(matmul_at, a, b, c, no_bias, zero, np.intp(strips), np.intp(first), np.intp(block),
                           packed_a, packed_b, edge)
            first, strips = block, needed


@intrinsic
def _contiguous(typingctx, row):
    """The same 1-D array, typed as contiguous (numba layout 'C'), so that LLVM copies it a SIMD
    register at a time: a change of type only, as matmul.py's ``read_only``. Only for a row whose
    numbers are adjacent (stride = the size of one), as the Python wrappers make sure of for the
    outputs (``_unit_stride``)."""
    if not isinstance(row, types.Array) or row.ndim != 1:
        return None
    result = row.copy(layout="C")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, result, args[0])

    return result(row), codegen


@jit(cache=CACHE)  # (not copied into each caller: one compiled copy serves every call, for less compile time)
def _copy_out(src, dst):
    """dst[i, c] = src[i, c]: a slice's C-contiguous result into its part of an output, whose rows
    are contiguous (``_unit_stride``) but d_model numbers apart."""
    for i in range(src.shape[0]):
        row, out = src[i], _contiguous(dst[i])
        for c in range(src.shape[1]):
            out[c] = row[c]


@jit(cache=CACHE, inline=INLINE)
def _transpose_into(src, dst):
    """dst[c, i] = src[i, c]: once per slice, so that the products read rows, not columns."""
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[c, i] = src[i, c]


@jit(cache=CACHE, inline=INLINE)
def _zero(row, start):
    """row[start:] = 0, as a loop: numba's slice assignment compiles a shape check and its error
    message, seconds of compile time for nothing here."""
    for j in range(start, row.shape[0]):
        row[j] = 0


@jit(cache=CACHE, inline=INLINE)
def _row_end(row, n):
    """How much of row[:n] the loops visit: up to its last nonzero (True) entry, rounded up to a
    multiple of 16 (whole SIMD vectors: the extra entries are zero or blocked and change nothing);
    0 if there is no such entry."""
    for j in range(n - 1, -1, -1):
        if row[j]:
            return min((j + VECTOR) // VECTOR * VECTOR, n)
    return 0


# Explicit signatures: each kernel compiles once (or loads from the cache) the first time it runs,
# whatever the strides of its arrays.
def _array(dtype, layout="A", readonly=False, ndim=4):
    return types.Array(dtype, ndim, layout, readonly=readonly)


def _forward_signature(dtype):
    inputs = [_array(dtype, readonly=True)] * 3 + [_array(types.boolean, readonly=True), types.float64, types.int64]
    return types.void(*inputs, _array(dtype), _array(dtype, "C"), *[types.intp] * 2)


def _backward_signature(dtype):
    inputs = [_array(dtype, readonly=True)] * 4 + [_array(dtype, "C", readonly=True),
                                                    _array(types.boolean, readonly=True), types.float64, types.int64]
    return types.void(*inputs, *[_array(dtype)] * 3, *[types.intp] * 2)


@typed_jit(_forward_signature, error_model="numpy", cache=CACHE)
def forward_slices(q, k, v, mask, scale, matmul_at, out, weights, first, stop):
    """out and weights of the slices first <= s < stop, slice s = (s // h, s % h)."""
    n_heads, n_queries, n_keys, d_v = q.shape[1], q.shape[2], k.shape[2], v.shape[3]
    dtype = q.dtype
    scratch = block_scratch(q, max(k.shape[2], q.shape[3], v.shape[3]))  # (the widest product's columns)
    out_rows = np.empty((n_queries, d_v), dtype=dtype)
    k_t = np.empty((q.shape[3], n_keys), dtype=dtype)
    ends = np.empty(n_queries, dtype=np.intp)
    s = dtype.type(scale)
    minus_inf = dtype.type(-np.inf)
    shared_mask = mask.strides[0] == 0 and mask.strides[1] == 0  # one (T_q, T_k) mask for all slices
    for slice_ in range(first, stop):
        b, h = slice_ // n_heads, slice_ % n_heads
        w = weights[b, h]
        if slice_ == first or not shared_mask:
            for i in range(n_queries):  # keys past the last allowed one are not visited
                ends[i] = _row_end(mask[b, h, i], n_keys)
        _transpose_into(k[b, h], k_t)
        _product(q[b, h], strided(k_t), w, ends, scratch, matmul_at)  # scores Q K^T (only the columns needed)
        for i in range(n_queries):  # masked softmax of scale * scores, row by row
            allowed, row = mask[b, h, i], w[i]
            end = min((ends[i] + SOFTMAX_RUN - 1) // SOFTMAX_RUN * SOFTMAX_RUN, n_keys)
            shift = minus_inf
            for j in range(end):
                shift = simd_max(shift, s * row[j] if allowed[j] else minus_inf)
            if shift == minus_inf:  # nothing allowed: zero weights (end = 0 also lands here)
                _zero(row, 0)
                continue
            total = dtype.type(0)
            for j in range(end):
                e = fast_exp(s * row[j] - shift) if allowed[j] else dtype.type(0)
                row[j] = e
                total = simd_add(total, e)
            inverse = dtype.type(1) / total
            for j in range(end):
                row[j] *= inverse
            _zero(row, end)
        _product(strided(w), v[b, h], out_rows, None, scratch, matmul_at)  # out = W V
        _copy_out(out_rows, out[b, h])


@typed_jit(_backward_signature, error_model="numpy", cache=CACHE)
def backward_slices(g, q, k, v, weights, mask, scale, matmul_at, dq, dk, dv, first, stop):
    """dq, dk and dv of the slices first <= s < stop, slice s = (s // h, s % h)."""
    n_heads, n_queries, n_keys, d_k, d_v = q.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    dtype = q.dtype
    scratch = block_scratch(q, max(k.shape[2], q.shape[3], v.shape[3]))  # (the widest product's columns)
    ds = np.empty((n_queries, n_keys), dtype=dtype)
    dq_rows = np.empty((n_queries, d_k), dtype=dtype)
    dk_rows = np.empty((n_keys, d_k), dtype=dtype)
    dv_rows = np.empty((n_keys, d_v), dtype=dtype)
    v_t = np.empty((d_v, n_keys), dtype=dtype)
    ends = np.empty(n_queries, dtype=np.intp)
    s = dtype.type(scale)
    shared_mask = mask.strides[0] == 0 and mask.strides[1] == 0  # one (T_q, T_k) mask for all slices
    for slice_ in range(first, stop):
        b, h = slice_ // n_heads, slice_ % n_heads
        w = weights[b, h]
        if slice_ == first or not shared_mask:
            for i in range(n_queries):  # past the last allowed key the weights are 0, and so is every term
                ends[i] = _row_end(mask[b, h, i], n_keys)
        _transpose_into(v[b, h], v_t)
        _product(g[b, h], strided(v_t), ds, ends, scratch, matmul_at)  # dW = g V^T
        for i in range(n_queries):  # dS = scale * W * (dW - rowsum(dW * W)), zero past the end
            row, w_row, end = ds[i], w[i], ends[i]
            dot = dtype.type(0)
            for j in range(end):
                dot = simd_add(dot, w_row[j] * row[j])
            for j in range(end):
                row[j] = s * w_row[j] * (row[j] - dot)
            _zero(row, end)
        ds_ = strided(ds)
        _product(ds_, k[b, h], dq_rows, None, scratch, matmul_at)  # dQ = dS K
        _product(ds_.T, q[b, h], dk_rows, None, scratch, matmul_at)  # dK = dS^T Q
        _product(strided(w).T, g[b, h], dv_rows, None, scratch, matmul_at)  # dV = W^T g
        _copy_out(dq_rows, dq[b, h])
        _copy_out(dk_rows, dk[b, h])
        _copy_out(dv_rows, dv[b, h])


def _threads(n_slices, work):
    """How many threads may share the slices: 1 (this thread) for small work, else all."""
    return 1 if work < SERIAL_FLOPS or n_slices < 2 else None


def _check(name, q, k, v):
    for what, x in (("q", q), ("k", k), ("v", v)):
        if x.ndim != 4 or x.dtype not in (np.float32, np.float64) or x.dtype != q.dtype:
            raise ValueError(f"{name}: {what} must be a 4-D float32 or float64 array like q, "
                             f"got {x.shape} {x.dtype} (q: {q.shape} {q.dtype})")
    B, h, T_q, d_k = q.shape
    if k.shape[:2] != (B, h) or v.shape[:3] != k.shape[:3] or k.shape[3] != d_k:
        raise ValueError(f"{name}: shapes do not fit: q {q.shape}, k {k.shape}, v {v.shape}")


def attention_forward_numba(q, k, v, mask, scale):
    """-> (out (B, h, T_q, d_v), weights (B, h, T_q, T_k)); out has the memory layout of q (see the module).
    (float64: the numpy twin.)"""
    _check("attention_forward", q, k, v)
    if q.dtype != np.float32:
        return attention_forward_numpy(q, k, v, mask, scale)
    (B, h, T_q, d_k), T_k, d_v = q.shape, k.shape[2], v.shape[3]
    if mask is None:
        mask = np.ones((1, 1, 1, 1), dtype=np.bool_)
    if mask.shape != (B, h, T_q, T_k):
        mask = np.broadcast_to(mask, (B, h, T_q, T_k))  # (zero strides, no copy)
    if mask.dtype != np.bool_:
        raise TypeError(f"attention_forward: mask must be bool, got {mask.dtype}")
    out = _unit_stride(np.empty_like(q, shape=(B, h, T_q, d_v)))  # (same layout as q: heads split from features stay so)
    weights = np.empty((B, h, T_q, T_k), dtype=q.dtype)
    if out.size == 0 or weights.size == 0:
        out.fill(0)
        weights.fill(0)
        return out, weights
    parallel_for(forward_slices.for_dtype(q.dtype), B * h, q, k, v, mask, float(scale), block_address(q.dtype), out, weights,
                 threads=_threads(B * h, B * h * T_q * T_k * (d_k + d_v)))
    return out, weights


def empty_like_parts(*parts):
    """New arrays laid out as ``parts`` (q, k, v). When the parts are together exactly one array,
    without overlap (one projection to 3 d_model features, split into q, k and v and into heads),
    the new arrays are the same parts of one new array: their sum, that array's gradient, then
    needs no copy (``ops.Split.backward`` returns it as it is)."""
    whole = parts[0].base
    one_array = (isinstance(whole, np.ndarray) and whole.flags.c_contiguous
                 and all(p.base is whole and p.dtype == whole.dtype for p in parts)
                 and sum(p.nbytes for p in parts) == whole.nbytes
                 and not any(np.shares_memory(a, b) for i, a in enumerate(parts) for b in parts[i + 1:]))
    if not one_array:
        return tuple(np.empty_like(p) for p in parts)
    new = np.empty_like(whole)
    return tuple(np.ndarray(p.shape, p.dtype, buffer=new, offset=_address(p) - _address(whole), strides=p.strides)
                 for p in parts)


def _unit_stride(out):
    """out, or a new C-contiguous array like it if its last axis is not at unit stride (q given as
    a transposed view, say): the kernels write their results in rows of adjacent numbers."""
    return out if out.shape[-1] <= 1 or out.strides[-1] == out.itemsize else np.empty(out.shape, out.dtype)


def _address(array):
    return array.__array_interface__["data"][0]


def attention_backward_numba(g, q, k, v, weights, mask, scale):
    """-> (dq, dk, dv), each with the shape and memory layout of q, k, v (see the module). (float64: the
    numpy twin.)"""
    _check("attention_backward", q, k, v)
    if q.dtype != np.float32:
        return attention_backward_numpy(g, q, k, v, weights, mask, scale)
    if g.shape != q.shape[:3] + v.shape[3:] or weights.shape != q.shape[:3] + k.shape[2:3]:
        raise ValueError(f"attention_backward: g {g.shape} or weights {weights.shape} do not fit "
                         f"q {q.shape}, k {k.shape}, v {v.shape}")
    weights = np.ascontiguousarray(weights)
    if mask is None or mask.shape != weights.shape:
        mask = np.broadcast_to(np.ones((1, 1, 1, 1), dtype=np.bool_) if mask is None else mask, weights.shape)
    dq, dk, dv = map(_unit_stride, empty_like_parts(q, k, v))
    if dq.size == 0 or dk.size == 0 or dv.size == 0:
        for d in (dq, dk, dv):
            d.fill(0)
        return dq, dk, dv
    B, h, T_q, T_k = weights.shape
    parallel_for(backward_slices.for_dtype(q.dtype), B * h, g, q, k, v, weights, mask, float(scale), block_address(q.dtype), dq, dk, dv,
                 threads=_threads(B * h, 2 * B * h * T_q * T_k * (q.shape[3] + v.shape[3])))
    return dq, dk, dv
