"""A 2-D convolution and its gradients, one image at a time, a few output rows at a time.

conv.py's ``im2col`` copies every window of the whole batch into one matrix, and one product then
computes the whole batch (``ops_conv.Conv2d`` with groups). That matrix is large: for a
32 x 64 x 32 x 32 input and a 3 x 3 kernel it holds 576 x 32768 numbers, 75 MB, written once and
read again far out of every cache; and the product's (O, N OH OW) result must still be transposed
into (N, O, OH, OW). Here each image is done on its own, a *piece* of output rows at a time, as
Caffe did and oneDNN's "gemm" convolution still does:

    for each image n (the images are shared out among the threads)           conv2d_images
        for each piece of output rows oh0 <= oh < oh1 (P = (oh1 - oh0) OW columns)
            cols   (C kh kw, P) = the windows of those rows                 conv.py's piece_cols
            result (O, P)       = W (O, C kh kw) @ cols                     matmul.py's block_product
            y[n, :, oh0:oh1]    = result + bias                             (y's own layout: no transpose)

A piece has as many rows as keep cols within ``PIECE_BYTES``, so that it is still in the L2 cache
when the product reads it. The backward walks the same pieces and cuts the columns out again
(cheaper than keeping them), with g[n] read in place as (O, OH OW):

    dW    += g[n, :, piece] @ cols^T      into the part of dW of this thread's images; the parts
                                          are summed at the end                  conv2d_grads
    dcols  = W^T @ g[n, :, piece]
    dx[n] += col2im(dcols)                                                      conv.py's piece_add

The numpy twins are the batch-wide form: im2col, one product, a transpose. The compiled kernels
are float32; float64 (gradient checks) runs on the twins, as for matmul. The bias gradient, a sum
of g, is the op's (ops_conv.py).
"""
import numpy as np

from ._jit import jit, typed_jit  # isort: skip  (first: it sets LLVM options before numba is imported)
from numba import types  # noqa: E402

from ._parallel import get_num_threads, parallel_for  # noqa: E402
from .conv import col2im_numpy, im2col_numpy, piece_add, piece_cols  # noqa: E402
from .matmul import CACHE, SERIAL_FLOPS, block_product, block_scratch, strided  # noqa: E402

PIECE_BYTES = 512 * 1024  # the columns of one piece of output rows: at most this many bytes (or one row)
PIECE_COLUMNS = 4096  # and at most this many columns (a 1 x 1 kernel on few channels)
PARTS_PER_THREAD = 2  # the backward's parts of dW per thread (a thread slowed by another program takes fewer)


def _check(name, x, weight, bias=None):
    if x.ndim != 4 or weight.ndim != 4 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"{name}: expected x (N, C, H, W) and weight (O, C, kh, kw), got {x.shape} and "
                         f"{weight.shape}")
    if x.dtype != weight.dtype or x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: need float32 or float64 x and weight of one dtype, got {x.dtype} and {weight.dtype}")
    if bias is not None and (bias.shape != (weight.shape[0],) or bias.dtype != x.dtype):
        raise ValueError(f"{name}: bias {bias.shape} {bias.dtype} does not fit {weight.shape[0]} output channels")


# ----------------------------------------------------------------------------- numpy twins
def conv2d_forward_numpy(x, weight, bias, stride, padding, dilation, out_size):
    """x (N, C, H, W), weight (O, C, kh, kw), bias (O,) or None -> y (N, O, OH, OW).

    stride, padding (top, left), dilation and out_size (OH, OW): pairs of ints."""
    _check("conv2d_forward", x, weight, bias)
    n, o, (oh, ow) = x.shape[0], weight.shape[0], out_size
    cols = im2col_numpy(x, weight.shape[2:], stride, padding, dilation, out_size)  # (C kh kw, N, OH, OW)
    y = weight.reshape(o, -1) @ cols.reshape(cols.shape[0], -1)  # (O, N OH OW)
    y = np.ascontiguousarray(y.reshape(o, n, oh, ow).transpose(1, 0, 2, 3))
    if bias is not None:
        y += bias.reshape(o, 1, 1)
    return y


def conv2d_backward_numpy(g, x, weight, stride, padding, dilation, need_dx=True, need_dweight=True):
    """g (N, O, OH, OW) -> (dx (N, C, H, W), dweight (O, C, kh, kw)); None for one not needed."""
    _check("conv2d_backward", x, weight)
    o, kernel = weight.shape[0], weight.shape[2:]
    g2 = g.transpose(1, 0, 2, 3).reshape(o, -1)  # (O, N OH OW)
    dx = dweight = None
    if need_dx:
        dcols = (weight.reshape(o, -1).T @ g2).reshape(-1, *g.shape[:1], *g.shape[2:])  # (C kh kw, N, OH, OW)
        dx = col2im_numpy(dcols, x.shape, kernel, stride, padding, dilation)
    if need_dweight:
        cols = im2col_numpy(x, kernel, stride, padding, dilation, g.shape[2:])
        dweight = (g2 @ cols.reshape(cols.shape[0], -1).T).reshape(weight.shape)
    return dx, dweight


# ----------------------------------------------------------------------------- numba kernels
# A piece is the output rows oh0 <= oh < oh1 of the images n0 <= n < n1: a few rows of one image, or
# (when a whole image's columns are small) several whole images side by side, so that the product
# is wide enough to run at speed. `layout` holds the ints that describe the windows and the pieces:
LAYOUT = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "piece_rows", "piece_images")


def _array(dtype, ndim, readonly=False):
    return types.Array(dtype, ndim, "C", readonly=readonly)


def _forward_signature(dtype):
    """x (N, C, H, W), w2 (O, C kh kw), bias (O,), out (N, O, OH, OW), layout, first, stop."""
    return types.void(_array(dtype, 4, True), _array(dtype, 2, True), _array(dtype, 1, True), _array(dtype, 4),
                      _array(types.intp, 1, True), types.intp, types.intp)


def _grads_signature(dtype):
    """g (N, O, OH, OW), x, w2 (O, C kh kw), dx (N, C, H, W) zeros or empty, dw_parts (P, O, C kh kw)
    zeros or (P, 0, 0), layout, first, stop."""
    return types.void(_array(dtype, 4, True), _array(dtype, 4, True), _array(dtype, 2, True), _array(dtype, 4),
                      _array(dtype, 3), _array(types.intp, 1, True), types.intp, types.intp)


@jit(cache=CACHE)
def _pieces(n0, n_stop, out_h, piece_rows, piece_images):
    """The pieces of the images n0 <= n < n_stop, in order: an array of (n0, n1, oh0, oh1)."""
    n_row_pieces = (out_h + piece_rows - 1) // piece_rows
    n_pieces = ((n_stop - n0 + piece_images - 1) // piece_images) * n_row_pieces
    pieces = np.empty((n_pieces, 4), dtype=np.intp)
    i = 0
    for first in range(n0, n_stop, piece_images):
        for oh0 in range(0, out_h, piece_rows):
            pieces[i, 0], pieces[i, 1] = first, min(first + piece_images, n_stop)
            pieces[i, 2], pieces[i, 3] = oh0, min(oh0 + piece_rows, out_h)
            i += 1
    return pieces


@typed_jit(_forward_signature, cache=CACHE)
def conv2d_images(x, w2, bias, out, layout, first, stop):
    """out[n] for the images first <= n < stop (see the module docstring)."""
    kh, kw, sh, sw, ph, pw, dh, dw, piece_rows, piece_images = layout
    n_out, n_taps = w2.shape
    out_h, out_w = out.shape[2], out.shape[3]
    most = piece_images * piece_rows * out_w  # columns in a piece
    cols_buffer = np.empty(n_taps * most, dtype=out.dtype)
    result_buffer = np.empty(n_out * most, dtype=out.dtype)
    scratch = block_scratch(out, most)
    w = strided(w2)
    for piece in _pieces(first, stop, out_h, piece_rows, piece_images):
        n0, n1, oh0, oh1 = piece[0], piece[1], piece[2], piece[3]
        per_image = (oh1 - oh0) * out_w
        width = (n1 - n0) * per_image
        cols = cols_buffer[:n_taps * width].reshape((n_taps, width))
        result = result_buffer[:n_out * width].reshape((n_out, width))
        for n in range(n0, n1):
            piece_cols(x, n, oh0, oh1, out_w, cols, (n - n0) * per_image, kh, kw, sh, sw, ph, pw, dh, dw)
        block_product(w, strided(cols), result, scratch)
        for n in range(n0, n1):
            un = np.uintp(n)
            for o in range(n_out):
                b, uo = bias[o], np.uintp(o)
                for oh in range(oh0, oh1):
                    start = np.uintp((n - n0) * per_image + (oh - oh0) * out_w)
                    for ow in range(np.uintp(out_w)):
                        out[un, uo, np.uintp(oh), ow] = result[uo, start + ow] + b


@typed_jit(_grads_signature, cache=CACHE)
def conv2d_grads(g, x, w2, dx, dw_parts, layout, first, stop):
    """For the parts first <= p < stop: dx of their images, and their sum of dW into dw_parts[p].
    Part p is the images p N / P <= n < (p + 1) N / P, P = dw_parts.shape[0]."""
    kh, kw, sh, sw, ph, pw, dh, dw, piece_rows, piece_images = layout
    n_images, n_out, out_h, out_w = g.shape
    n_parts, n_taps = dw_parts.shape[0], w2.shape[1]
    need_dx, need_dw = dx.shape[0] > 0, dw_parts.shape[1] > 0
    most = piece_images * piece_rows * out_w
    cols_buffer = np.empty(n_taps * most, dtype=g.dtype)
    g_buffer = np.empty(n_out * most, dtype=g.dtype)
    dw_piece = np.empty((n_out, n_taps), dtype=g.dtype)
    scratch = block_scratch(g, max(most, n_taps))
    w_t = strided(w2).T  # (C kh kw, O)
    for p in range(first, stop):
        n_lo, n_hi = p * n_images // n_parts, (p + 1) * n_images // n_parts
        for piece in _pieces(n_lo, n_hi, out_h, piece_rows, piece_images):
            n0, n1, oh0, oh1 = piece[0], piece[1], piece[2], piece[3]
            per_image = (oh1 - oh0) * out_w
            width = (n1 - n0) * per_image
            cols = cols_buffer[:n_taps * width].reshape((n_taps, width))
            g_piece = g_buffer[:n_out * width].reshape((n_out, width))  # g of the piece, (O, columns)
            for n in range(n0, n1):
                for o in range(n_out):
                    for oh in range(oh0, oh1):
                        start = (n - n0) * per_image + (oh - oh0) * out_w
                        for ow in range(out_w):
                            g_piece[o, start + ow] = g[n, o, oh, ow]
            if need_dw:  # dW += g cols^T
                for n in range(n0, n1):
                    piece_cols(x, n, oh0, oh1, out_w, cols, (n - n0) * per_image, kh, kw, sh, sw, ph, pw, dh, dw)
                block_product(strided(g_piece), strided(cols).T, dw_piece, scratch)
                for o in range(n_out):
                    for t in range(n_taps):
                        dw_parts[p, o, t] += dw_piece[o, t]
            if need_dx:  # dcols = W^T g, added back into dx
                block_product(w_t, strided(g_piece), cols, scratch)
                for n in range(n0, n1):
                    piece_add(cols, (n - n0) * per_image, dx, n, oh0, oh1, out_w, kh, kw, sh, sw, ph, pw, dh, dw)


def _layout(kernel, stride, padding, dilation, n_taps, out_h, out_w, itemsize):
    """The `layout` ints: the windows, and pieces of as many output rows (or whole images) as keep
    the columns (n_taps x columns numbers) within PIECE_BYTES, and at most PIECE_COLUMNS columns
    (the product packs each strip of NR columns: 32 KB apiece)."""
    image_columns = max(1, min(PIECE_BYTES // (n_taps * itemsize), PIECE_COLUMNS))  # columns that fit
    rows = max(1, min(out_h, image_columns // out_w))
    images = max(1, image_columns // (out_h * out_w)) if rows == out_h else 1
    return np.array([*kernel, *stride, *padding, *dilation, rows, images], dtype=np.intp)


def _threads(n, flops):
    return 1 if flops < SERIAL_FLOPS else min(n, get_num_threads())


def conv2d_forward_numba(x, weight, bias, stride, padding, dilation, out_size):
    """x (N, C, H, W), weight (O, C, kh, kw), bias (O,) or None -> y (N, O, OH, OW), float32 compiled."""
    _check("conv2d_forward", x, weight, bias)
    if x.dtype == np.float64:
        return conv2d_forward_numpy(x, weight, bias, stride, padding, dilation, out_size)
    (n, _, _, _), (o, c, kh, kw), (oh, ow) = x.shape, weight.shape, out_size
    out = np.empty((n, o, oh, ow), dtype=x.dtype)
    if out.size == 0:
        return out
    bias = np.zeros(o, x.dtype) if bias is None else np.ascontiguousarray(bias)
    layout = _layout((kh, kw), stride, padding, dilation, c * kh * kw, oh, ow, x.itemsize)
    parallel_for(conv2d_images.for_dtype(x.dtype), n, np.ascontiguousarray(x),
                 np.ascontiguousarray(weight).reshape(o, -1), bias, out, layout,
                 threads=_threads(n, 2 * out.size * c * kh * kw))
    return out


def conv2d_backward_numba(g, x, weight, stride, padding, dilation, need_dx=True, need_dweight=True):
    """g (N, O, OH, OW) -> (dx (N, C, H, W), dweight (O, C, kh, kw)); None for one not needed."""
    _check("conv2d_backward", x, weight)
    if x.dtype == np.float64:
        return conv2d_backward_numpy(g, x, weight, stride, padding, dilation, need_dx, need_dweight)
    (n, o, oh, ow), (_, c, kh, kw) = g.shape, weight.shape
    threads = _threads(n, 2 * g.size * c * kh * kw * (need_dx + need_dweight))
    n_parts = min(n, threads * PARTS_PER_THREAD)
    dx = np.zeros(x.shape if need_dx else (0, 0, 0, 0), dtype=x.dtype)
    dw_parts = np.zeros((n_parts, o, c * kh * kw) if need_dweight else (n_parts, 0, 0), dtype=x.dtype)
    if g.size and (need_dx or need_dweight):
        parallel_for(conv2d_grads.for_dtype(x.dtype), n_parts, np.ascontiguousarray(g), np.ascontiguousarray(x),
                     np.ascontiguousarray(weight).reshape(o, -1), dx, dw_parts,
                     _layout((kh, kw), stride, padding, dilation, c * kh * kw, oh, ow, x.itemsize),
                     chunks_per_thread=PARTS_PER_THREAD, threads=threads)
    dweight = None
    if need_dweight:
        dweight = dw_parts.sum(axis=0).reshape(weight.shape) if n_parts else np.zeros_like(weight)  # (N = 0)
    return (dx if need_dx else None), dweight
