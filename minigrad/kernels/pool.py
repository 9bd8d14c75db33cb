"""Max pooling: the largest number of each window, and where it was; its gradient goes back there.

    y[n, c, i, j]       = max of x[n, c, i sh + ki dh - ph, j sw + kj dw - pw] over the window's taps inside x
    indices[n, c, i, j] = h W + w of that max in its (H, W) plane (the first, on a tie; a NaN wins)
    dx[n, c].flat[indices[n, c, i, j]] += g[n, c, i, j]

Taps in the padding are skipped (PyTorch's rule: the padding holds -inf), so the index points
into x even when every number in the window is -inf. A window whose taps all fall in the padding
(possible with dilation) gives -inf and the index -1, and no gradient.

``max_pool2d_forward_numpy`` cuts the windows out with ``im2col`` (padding as -inf) and takes
``argmax`` over each; ``max_pool2d_backward_numpy`` adds the gradients up with ``np.bincount`` (two
windows that overlap may share their max). The numba kernels walk each window once, keeping the
running max and its index, and share out the planes (n, c) over threads: a plane's windows read
and write only that plane.
"""
import numpy as np

from ._jit import typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from ._parallel import parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS  # noqa: E402
from .conv import im2col_numpy  # noqa: E402


def _check(name, x):
    if x.ndim != 4 or x.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name}: expected a 4-D float32 or float64 array (N, C, H, W), got {x.shape} {x.dtype}")


def max_pool2d_forward_numpy(x, kernel_size, stride, padding, dilation, out_size):
    """x (N, C, H, W) -> (y (N, C, OH, OW), indices int64 (N, C, OH, OW)); padding = (top, left)."""
    _check("max_pool2d_forward", x)
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel_size, stride, padding, dilation, out_size
    cols = im2col_numpy(x.reshape(n * c, 1, h, w), kernel_size, stride, padding, dilation, out_size, -np.inf)
    ki, kj = np.divmod(np.arange(kh * kw), kw)  # the window's taps, in order
    rows = (np.arange(oh) * sh)[None, :, None] + (ki * dh - ph)[:, None, None]  # (taps, OH, 1)
    columns = (np.arange(ow) * sw)[None, None, :] + (kj * dw - pw)[:, None, None]  # (taps, 1, OW)
    inside = (rows >= 0) & (rows < h) & (columns >= 0) & (columns < w)  # (taps, OH, OW)
    arg = cols.argmax(axis=0)  # (N C, OH, OW): the first max; NaN counts as the largest
    # a window of -inf only: argmax may pick a tap in the padding; take its first tap inside x instead
    arg = np.where(inside[arg, np.arange(oh)[:, None], np.arange(ow)], arg, inside.argmax(axis=0))
    y = np.take_along_axis(cols, arg[None], axis=0)[0]
    index = np.where(inside, rows * w + columns, -1)  # (taps, OH, OW); -1: a tap in the padding
    indices = index[arg, np.arange(oh)[:, None], np.arange(ow)]
    return y.reshape(n, c, oh, ow), indices.reshape(n, c, oh, ow).astype(np.int64, copy=False)


def max_pool2d_backward_numpy(g, indices, input_shape):
    """g, indices (N, C, OH, OW) -> dx (N, C, H, W): each g added at its window's max."""
    n, c, h, w = input_shape
    planes = np.arange(n * c).reshape(n, c, 1, 1) * (h * w)
    into_x = indices >= 0  # (-1: a window with no tap inside x)
    dx = np.bincount((planes + indices)[into_x], weights=g[into_x], minlength=n * c * h * w)
    return dx.astype(g.dtype, copy=False).reshape(input_shape)


def _forward_signature(dtype):
    """x (N, C, H, W), y (N, C, OH, OW), indices int64 (N, C, OH, OW), all C-contiguous; 8 ints; first, stop."""
    return types.void(types.Array(dtype, 4, "C", readonly=True), types.Array(dtype, 4, "C"),
                      types.Array(types.int64, 4, "C"), *[types.intp] * 8, types.intp, types.intp)


def _backward_signature(dtype):
    """g (N, C, OH, OW), indices int64, dx (N, C, H, W) zeros, all C-contiguous; first, stop."""
    return types.void(types.Array(dtype, 4, "C", readonly=True), types.Array(types.int64, 4, "C", readonly=True),
                      types.Array(dtype, 4, "C"), types.intp, types.intp)


@typed_jit(_forward_signature)
def _max_pool_planes(x, y, indices, kh, kw, sh, sw, ph, pw, dh, dw, first, stop):
    """The planes first <= p < stop (p = n C + c) of y and indices. Only the taps inside x are
    visited, with unsigned indices (see kernels/conv.py)."""
    n_channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = y.shape[2], y.shape[3]
    # the taps of each window row i (and column j) inside x: ki_lo[i] <= ki < ki_hi[i], worked out
    # once (integer divisions are slow next to a comparison)
    ki_lo, ki_hi = np.empty(out_h, np.intp), np.empty(out_h, np.intp)
    for i in range(out_h):
        h0 = i * sh - ph
        ki_lo[i] = max(0, (-h0 + dh - 1) // dh)
        ki_hi[i] = max(ki_lo[i], min(kh, (height - 1 - h0) // dh + 1))
    kj_lo, kj_hi = np.empty(out_w, np.intp), np.empty(out_w, np.intp)
    for j in range(out_w):
        w0 = j * sw - pw
        kj_lo[j] = max(0, (-w0 + dw - 1) // dw)
        kj_hi[j] = max(kj_lo[j], min(kw, (width - 1 - w0) // dw + 1))
    uwidth = np.uintp(width)  # (unsigned with unsigned: numba makes a float of int64 * uint64)
    for p in range(first, stop):
        n, c = divmod(p, n_channels)
        un, uc = np.uintp(n), np.uintp(c)
        for i in range(out_h):
            h0 = i * sh - ph
            for j in range(out_w):
                w0 = j * sw - pw
                if ki_lo[i] == ki_hi[i] or kj_lo[j] == kj_hi[j]:  # every tap in the padding
                    y[un, uc, np.uintp(i), np.uintp(j)] = -np.inf
                    indices[un, uc, np.uintp(i), np.uintp(j)] = -1
                    continue
                # start from the first tap inside x, then take any larger one; a NaN (v != v) wins, and
                # stays. (Selects, not branches: on random data a branch here is mispredicted half the time.)
                best_h, best_w = np.uintp(h0 + ki_lo[i] * dh), np.uintp(w0 + kj_lo[j] * dw)
                best = x[un, uc, best_h, best_w]
                best_index = best_h * uwidth + best_w
                for ki in range(ki_lo[i], ki_hi[i]):
                    uh = np.uintp(h0 + ki * dh)
                    for kj in range(kj_lo[j], kj_hi[j]):
                        uw = np.uintp(w0 + kj * dw)
                        v = x[un, uc, uh, uw]
                        better = (v > best) | ((v != v) & (best == best))
                        best = v if better else best
                        best_index = uh * uwidth + uw if better else best_index
                y[un, uc, np.uintp(i), np.uintp(j)] = best
                indices[un, uc, np.uintp(i), np.uintp(j)] = best_index


@typed_jit(_backward_signature)
def _max_pool_backward_planes(g, indices, dx, first, stop):
    n_channels, width = dx.shape[1], dx.shape[3]
    out_h, out_w = g.shape[2], g.shape[3]
    for p in range(first, stop):
        n, c = divmod(p, n_channels)
        un, uc = np.uintp(n), np.uintp(c)
        for i in range(np.uintp(out_h)):
            for j in range(np.uintp(out_w)):
                index = indices[un, uc, i, j]
                if index >= 0:
                    h, w = divmod(np.uintp(index), np.uintp(width))
                    dx[un, uc, h, w] += g[un, uc, i, j]


def _threads(n_elements):
    return None if n_elements >= PARALLEL_MIN_ELEMENTS else 1


def max_pool2d_forward_numba(x, kernel_size, stride, padding, dilation, out_size):
    """x (N, C, H, W) -> (y (N, C, OH, OW), indices int64 (N, C, OH, OW)); padding = (top, left)."""
    _check("max_pool2d_forward", x)
    n, c = x.shape[:2]
    y = np.empty((n, c, *out_size), dtype=x.dtype)
    indices = np.empty(y.shape, dtype=np.int64)
    if y.size:
        parallel_for(_max_pool_planes.for_dtype(x.dtype), n * c, np.ascontiguousarray(x), y, indices,
                     *kernel_size, *stride, *padding, *dilation, threads=_threads(x.size))
    return y, indices


def max_pool2d_backward_numba(g, indices, input_shape):
    """g, indices (N, C, OH, OW) -> dx (N, C, H, W): each g added at its window's max."""
    _check("max_pool2d_backward", g)
    dx = np.zeros(tuple(input_shape), dtype=g.dtype)
    if g.size:
        parallel_for(_max_pool_backward_planes.for_dtype(g.dtype), g.shape[0] * g.shape[1], np.ascontiguousarray(g),
                     np.ascontiguousarray(indices, dtype=np.int64), dx, threads=_threads(dx.size))
    return dx
