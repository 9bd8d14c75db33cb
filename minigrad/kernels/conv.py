"""im2col and col2im: a convolution turned into one matrix product, and its gradient turned back.

A 2-D convolution slides a (C, kh, kw) kernel over the input. ``im2col`` copies every window the
kernel sees into a column, so that all the windows of the batch sit side by side in one matrix:

    cols[c, ki, kj, n, oh, ow] = x[n, c, oh * sh + ki * dh - ph, ow * sw + kj * dw - pw]

(``fill``, 0 for a convolution and -inf for max pooling, where the index falls outside x.) Viewed
as a matrix (C * kh * kw, N * OH * OW), one product ``W (O, C*kh*kw) @ cols`` computes every
output of the batch at once; the rows are in the order of ``W.reshape(O, -1)``.

``col2im`` is its adjoint: every number of ``cols`` is added back to the place of x it was copied
from (a place seen by several windows gets the sum), which is the gradient of ``im2col``:

    dx[n, c, h, w] = sum of cols[c, ki, kj, n, oh, ow] over all (ki, kj, oh, ow) that read (h, w)

Only the top and left padding (ph, pw) are arguments: the output size (OH, OW) fixes how far the
windows reach, so asymmetric padding ('same' with an even kernel) and pooling's ``ceil_mode`` need
nothing more.

The numpy twins pad x once and take kh * kw strided slices of it (one per kernel offset). The
numba kernels walk the same loops with the padding handled by index arithmetic instead of a
padded copy; ``im2col`` shares out the rows of cols (one per channel and offset), ``col2im`` the
planes (n, c) of dx, so no two threads write the same number. They read C-contiguous arrays
(another layout is copied first), so that a row of a window with stride 1 is a contiguous copy.
"""
import numpy as np

from ._jit import INLINE, jit, typed_jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from ._parallel import parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS  # noqa: E402


def _check(name, x, ndim):
    if x.ndim != ndim or x.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name}: expected a {ndim}-D float32 or float64 array, got shape {x.shape} {x.dtype}")


# ----------------------------------------------------------------------------- numpy twins
def _padded_for(shape_hw, kernel, stride, padding, dilation, out_hw):
    """(pad_bottom, pad_right) so that the padded input holds every window, and the slice of each
    kernel offset: offset k reads rows k*d, k*d + s, ..., (OH - 1) s + k d of the padded input."""
    return tuple(max(0, (o - 1) * s + (k - 1) * d + 1 - n - p)
                 for n, k, s, p, d, o in zip(shape_hw, kernel, stride, padding, dilation, out_hw))


def im2col_numpy(x, kernel_size, stride, padding, dilation, out_size, fill=0.0):
    """x (N, C, H, W) -> cols (C * kh * kw, N, OH, OW), see the module docstring.

    kernel_size, stride, padding (top, left), dilation and out_size (OH, OW): pairs of ints."""
    _check("im2col", x, 4)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel_size, stride, padding, dilation, out_size
    n, c = x.shape[:2]
    bottom, right = _padded_for(x.shape[2:], kernel_size, stride, padding, dilation, out_size)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, bottom), (pw, right)), constant_values=fill)
    cols = np.empty((c, kh, kw, n, oh, ow), dtype=x.dtype)
    for ki in range(kh):
        for kj in range(kw):
            window = xp[:, :, ki * dh: ki * dh + (oh - 1) * sh + 1: sh, kj * dw: kj * dw + (ow - 1) * sw + 1: sw]
            cols[:, ki, kj] = window.transpose(1, 0, 2, 3)
    return cols.reshape(c * kh * kw, n, oh, ow)


def col2im_numpy(cols, input_shape, kernel_size, stride, padding, dilation):
    """cols (C * kh * kw, N, OH, OW) -> dx of input_shape (N, C, H, W): the adjoint of im2col."""
    _check("col2im", cols, 4)
    n, c, h, w = input_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    oh, ow = cols.shape[2:]
    bottom, right = _padded_for((h, w), kernel_size, stride, padding, dilation, (oh, ow))
    dxp = np.zeros((n, c, h + ph + bottom, w + pw + right), dtype=cols.dtype)
    cols6 = cols.reshape(c, kh, kw, n, oh, ow)
    for ki in range(kh):
        for kj in range(kw):
            dxp[:, :, ki * dh: ki * dh + (oh - 1) * sh + 1: sh, kj * dw: kj * dw + (ow - 1) * sw + 1: sw] += \
                cols6[:, ki, kj].transpose(1, 0, 2, 3)
    return np.ascontiguousarray(dxp[:, :, ph: ph + h, pw: pw + w])


# ----------------------------------------------------------------------------- numba kernels
def _im2col_signature(dtype):
    """x (N, C, H, W) and cols (C*kh*kw, N, OH, OW) C-contiguous, 8 ints, fill, first, stop."""
    return types.void(types.Array(dtype, 4, "C", readonly=True), types.Array(dtype, 4, "C"),
                      *[types.intp] * 8, dtype, types.intp, types.intp)


def _col2im_signature(dtype):
    """cols (C*kh*kw, N, OH, OW) and dx (N, C, H, W) C-contiguous (dx zeros), 8 ints, first, stop."""
    return types.void(types.Array(dtype, 4, "C", readonly=True), types.Array(dtype, 4, "C"),
                      *[types.intp] * 8, types.intp, types.intp)


@jit(inline=INLINE)
def _inside(out_w, width, offset, sw):
    """The outputs lo <= ow < hi whose input column ow sw + offset lies inside 0 <= w < width."""
    lo = min(out_w, max(0, (-offset + sw - 1) // sw))
    hi = max(lo, min(out_w, (width - 1 - offset) // sw + 1)) if width - 1 - offset >= 0 else lo
    return lo, hi


@jit(inline=INLINE)
def _tap(r, out_w, width, kh, kw, sw, pw, dw):
    """Row r of cols: channel c and kernel offset (ki, kj), the outputs lo <= ow < hi whose tap
    falls inside x, and the column of x that output lo reads, as (c, ki, lo, hi, w_lo)."""
    c, k = divmod(r, kh * kw)
    ki, kj = divmod(k, kw)
    offset = kj * dw - pw
    lo, hi = _inside(out_w, width, offset, sw)
    return c, ki, lo, hi, lo * sw + offset


@typed_jit(_im2col_signature)
def _im2col_rows(x, cols, kh, kw, sh, sw, ph, pw, dh, dw, fill, first, stop):
    """The rows first <= r < stop of cols: channel c = r // (kh kw), kernel offset (ki, kj).
    Every access names all four indices, unsigned once known to be inside (``u*``): a row view
    sliced out each time, or numba's handling of negative indices, would cost more than the copy."""
    n_batch, height, width = x.shape[0], x.shape[2], x.shape[3]
    out_h, out_w = cols.shape[2], cols.shape[3]
    for r in range(first, stop):
        c, ki, lo, hi, column = _tap(r, out_w, width, kh, kw, sw, pw, dw)
        ur, uc, ulo, u_inside, usw = np.uintp(r), np.uintp(c), np.uintp(lo), np.uintp(hi - lo), np.uintp(sw)
        w_lo = np.uintp(column)  # the column of x that output lo reads
        for n in range(n_batch):
            un = np.uintp(n)
            for oh in range(out_h):
                uoh = np.uintp(oh)
                h = oh * sh + ki * dh - ph
                if h < 0 or h >= height:
                    for ow in range(np.uintp(out_w)):
                        cols[ur, un, uoh, ow] = fill
                    continue
                uh = np.uintp(h)
                for ow in range(ulo):
                    cols[ur, un, uoh, ow] = fill
                if sw == 1:  # (a contiguous copy, which LLVM vectorises)
                    for i in range(u_inside):
                        cols[ur, un, uoh, ulo + i] = x[un, uc, uh, w_lo + i]
                else:
                    for i in range(u_inside):
                        cols[ur, un, uoh, ulo + i] = x[un, uc, uh, w_lo + i * usw]
                for ow in range(np.uintp(hi), np.uintp(out_w)):
                    cols[ur, un, uoh, ow] = fill


@typed_jit(_col2im_signature)
def _col2im_planes(cols, dx, kh, kw, sh, sw, ph, pw, dh, dw, first, stop):
    """The planes first <= p < stop of dx, p = n C + c: each adds up what its windows read
    (unsigned indices, as in _im2col_rows)."""
    n_channels, height, width = dx.shape[1], dx.shape[2], dx.shape[3]
    out_h, out_w = cols.shape[2], cols.shape[3]
    for p in range(first, stop):
        n, c = divmod(p, n_channels)
        un, uc = np.uintp(n), np.uintp(c)
        for ki in range(kh):
            for kj in range(kw):
                ur = np.uintp((c * kh + ki) * kw + kj)
                offset = kj * dw - pw
                lo, hi = _inside(out_w, width, offset, sw)
                ulo, u_inside, usw = np.uintp(lo), np.uintp(hi - lo), np.uintp(sw)
                w_lo = np.uintp(lo * sw + offset)
                for oh in range(out_h):
                    h = oh * sh + ki * dh - ph
                    if h < 0 or h >= height:
                        continue
                    uh, uoh = np.uintp(h), np.uintp(oh)
                    if sw == 1:
                        for i in range(u_inside):
                            dx[un, uc, uh, w_lo + i] += cols[ur, un, uoh, ulo + i]
                    else:
                        for i in range(u_inside):
                            dx[un, uc, uh, w_lo + i * usw] += cols[ur, un, uoh, ulo + i]


@jit(inline=INLINE)
def piece_cols(x, n, oh0, oh1, out_w, cols, col0, kh, kw, sh, sw, ph, pw, dh, dw):
    """im2col of output rows oh0 <= oh < oh1 of image n (for conv2d.py), into the columns from col0 on
    of cols (>= C kh kw, >= col0 + (oh1 - oh0) out_w), C-contiguous like x (N, C, H, W):

        cols[r, col0 + (oh - oh0) out_w + ow] = x[n, c, oh sh + ki dh - ph, ow sw + kj dw - pw]  (0 outside x)

    with r = (c kh + ki) kw + kj."""
    height, width = x.shape[2], x.shape[3]
    un = np.uintp(n)
    for r in range(x.shape[1] * kh * kw):
        c, ki, lo, hi, column = _tap(r, out_w, width, kh, kw, sw, pw, dw)
        ur, uc, u_inside, usw, w_lo = np.uintp(r), np.uintp(c), np.uintp(hi - lo), np.uintp(sw), np.uintp(column)
        for oh in range(oh0, oh1):
            start = np.uintp(col0 + (oh - oh0) * out_w)  # where this output row's windows start in cols
            h = oh * sh + ki * dh - ph
            if h < 0 or h >= height:
                for ow in range(np.uintp(out_w)):
                    cols[ur, start + ow] = 0
                continue
            uh, row = np.uintp(h), start + np.uintp(lo)
            for ow in range(np.uintp(lo)):
                cols[ur, start + ow] = 0
            if sw == 1:
                for i in range(u_inside):
                    cols[ur, row + i] = x[un, uc, uh, w_lo + i]
            else:
                for i in range(u_inside):
                    cols[ur, row + i] = x[un, uc, uh, w_lo + i * usw]
            for ow in range(np.uintp(hi), np.uintp(out_w)):
                cols[ur, start + ow] = 0


@jit(inline=INLINE)
def piece_add(cols, col0, dx, n, oh0, oh1, out_w, kh, kw, sh, sw, ph, pw, dh, dw):
    """The adjoint of ``piece_cols``: each number of cols added back into dx[n] where it was read."""
    height, width = dx.shape[2], dx.shape[3]
    un = np.uintp(n)
    for r in range(dx.shape[1] * kh * kw):
        c, ki, lo, hi, column = _tap(r, out_w, width, kh, kw, sw, pw, dw)
        ur, uc, u_inside, usw, w_lo = np.uintp(r), np.uintp(c), np.uintp(hi - lo), np.uintp(sw), np.uintp(column)
        for oh in range(oh0, oh1):
            h = oh * sh + ki * dh - ph
            if h < 0 or h >= height:
                continue
            uh, row = np.uintp(h), np.uintp(col0 + (oh - oh0) * out_w + lo)
            if sw == 1:
                for i in range(u_inside):
                    dx[un, uc, uh, w_lo + i] += cols[ur, row + i]
            else:
                for i in range(u_inside):
                    dx[un, uc, uh, w_lo + i * usw] += cols[ur, row + i]


def _threads(n_elements):
    return None if n_elements >= PARALLEL_MIN_ELEMENTS else 1


def im2col_numba(x, kernel_size, stride, padding, dilation, out_size, fill=0.0):
    """x (N, C, H, W) -> cols (C * kh * kw, N, OH, OW), see the module docstring."""
    _check("im2col", x, 4)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel_size, stride, padding, dilation, out_size
    n, c = x.shape[:2]
    cols = np.empty((c * kh * kw, n, oh, ow), dtype=x.dtype)
    if cols.size:
        parallel_for(_im2col_rows.for_dtype(x.dtype), c * kh * kw, np.ascontiguousarray(x), cols,
                     kh, kw, sh, sw, ph, pw, dh, dw, x.dtype.type(fill), threads=_threads(cols.size))
    return cols


def col2im_numba(cols, input_shape, kernel_size, stride, padding, dilation):
    """cols (C * kh * kw, N, OH, OW) -> dx of input_shape (N, C, H, W): the adjoint of im2col."""
    _check("col2im", cols, 4)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    dx = np.zeros(tuple(input_shape), dtype=cols.dtype)
    if dx.size and cols.size:
        parallel_for(_col2im_planes.for_dtype(cols.dtype), dx.shape[0] * dx.shape[1], np.ascontiguousarray(cols), dx,
                     kh, kw, sh, sw, ph, pw, dh, dw, threads=_threads(cols.size))
    return dx
