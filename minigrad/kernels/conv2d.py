"""A 2-D convolution and its gradients, one image at a time, a few output rows at a time.

conv.py's ``im2col`` copies every window of the whole batch into one matrix, and one product then
computes the whole batch (``ops_conv.Conv2d`` with groups). That matrix is large: for a
32 x 64 x 32 x 32 input and a 3 x 3 kernel it holds 576 x 32768 numbers, 75 MB, written once and
read again far out of every cache; and the product's (O, N OH OW) result must still be transposed
into (N, O, OH, OW). Here each image is done on its own, a *piece* of output rows at a time, as
Caffe did and oneDNN's "gemm" convolution still does:

    for each piece of the images first <= n < stop (shared out among the threads)   conv2d_images
        cols   (C kh kw, P) = the windows of the piece's output rows       conv.py's piece_cols
        result (O, P)       = W (O, C kh kw) @ cols                        matmul.py's block_product
        y[n, :, oh0:oh1]    = result + bias                                (no transpose)

A piece is the output rows oh0 <= oh < oh1 of one image, as many as keep cols within
``PIECE_BYTES`` so that it is still in the L2 cache when the product reads it; or, when a whole
image's columns are small (LeNet's 10 x 10 maps), several whole images side by side, so that the
product is wide enough to run at speed. The backward walks the same pieces and cuts the columns
out again (cheaper than keeping them):

    for each piece of the images of part p                                  conv2d_grads
        dW_p  += g[piece] @ cols^T     (each part of the batch sums its own dW; the parts are
                                        added up at the end; with few taps, as dot products of
                                        rows: _add_row_dots)
        dcols  = W^T @ g[piece]
        dx[n] += col2im(dcols)                                             conv.py's piece_add

Every product runs whole register tiles only: W is padded with rows of zeros to a multiple of MR,
and each piece's columns are rounded up to a multiple of NR in the buffers (the extra columns
hold zeros or leftovers of an earlier piece: finite numbers whose results nobody reads). The edge tiles
matmul_block would otherwise compute apart and copy cost more than a few rows of zeros at
LeNet's 6 or 16 output channels.

The numpy twins are the batch-wide form: im2col, one product, a transpose. The compiled kernels
are float32; float64 (gradient checks) runs on the twins, as for matmul. The bias gradient, a sum
of g, is the op's (ops_conv.py).
"""
import numpy as np

from ._jit import INLINE, jit, typed_jit  # isort: skip  (first: it sets LLVM options before numba is imported)
from numba import types  # noqa: E402

from ._parallel import get_num_threads, parallel_for  # noqa: E402
from .conv import col2im_numpy, im2col_numpy, piece_add, piece_cols  # noqa: E402
from .matmul import CACHE, MR, NR, SERIAL_FLOPS, block_address, block_product, block_scratch, strided  # noqa: E402

PIECE_BYTES = 512 * 1024  # the columns of one piece of output rows: at most this many bytes (or one row)
# (on a 2 MB L2, 512 KB and 1 MB ran alike and 128-256 KB up to 30% slower at ResNet shapes; 512 KB
# still fits the smallest L2 of the CPUs minigrad targets, Zen 2 and 3's)
PIECE_COLUMNS = 4096  # and at most this many columns (a 1 x 1 kernel on few channels)
DOT_TAPS = 32  # at most this many taps (C kh kw): the backward's dW by dot products (_add_row_dots)
PARTS_PER_THREAD = 2  # the backward's parts of dW per thread (a thread slowed by another program takes fewer)


def _check(name, x, weight, bias=None):
    if x.ndim != 4 or weight.ndim != 4 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"{name}: expected x (N, C, H, W) and weight (O, C, kh, kw), got {x.shape} and "
                         f"{weight.shape}")
    if x.dtype != weight.dtype or x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: need float32 or float64 x and weight of one dtype, got {x.dtype} and "
                        f"{weight.dtype}")
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
        dcols = (weight.reshape(o, -1).T @ g2).reshape(-1, g.shape[0], *g.shape[2:])  # (C kh kw, N, OH, OW)
        dx = col2im_numpy(dcols, x.shape, kernel, stride, padding, dilation)
    if need_dweight:
        cols = im2col_numpy(x, kernel, stride, padding, dilation, g.shape[2:])
        dweight = (g2 @ cols.reshape(cols.shape[0], -1).T).reshape(weight.shape)
    return dx, dweight


# ----------------------------------------------------------------------------- numba kernels
# A piece is the output rows oh0 <= oh < oh1 of the images n0 <= n < n1: a few rows of one image, or
# (when a whole image's columns are small) several whole images side by side, so that the product
# is wide enough to run at speed. `layout` holds the ints that describe the windows and the pieces:
LAYOUT = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "piece_rows", "piece_images", "out_w")


def _array(dtype, ndim, readonly=False):
    return types.Array(dtype, ndim, "C", readonly=readonly)


def _forward_signature(dtype):
    """x (N, C, H, W), w2 (O', C kh kw), bias (O,), out (N, O, OH OW), layout, matmul_at, first, stop."""
    return types.void(_array(dtype, 4, True), _array(dtype, 2, True), _array(dtype, 1, True), _array(dtype, 3),
                      _array(types.intp, 1, True), types.int64, types.intp, types.intp)


def _grads_signature(dtype):
    """g (N, O, OH OW), x (N, C, H, W), w_t (T', O'), dx (N, C, H, W) zeros or empty, dw_parts
    (P, O, C kh kw) zeros or (P, 0, 0), layout, matmul_at (``matmul.block_address``), first, stop."""
    return types.void(_array(dtype, 3, True), _array(dtype, 4, True), _array(dtype, 2, True), _array(dtype, 4),
                      _array(dtype, 3), _array(types.intp, 1, True), types.int64, types.intp, types.intp)


@jit(cache=CACHE, inline=INLINE)
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


@jit(cache=CACHE, inline=INLINE)
def _up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


@jit(fastmath={"reassoc", "contract"})
def _add_row_dots(g, cols, used, dw):
    """dw[o, t] += sum over j < used of g[o, j] cols[t, j], for the rows o < dw.shape[0], t < dw.shape[1].

    dW = g cols^T as a matrix product must read cols^T, a transposed view: packing it gathers one
    number per tap and column, and with LeNet's 25 taps that gather cost most of the product. Here
    both operands are read along their rows, two rows of g at a time (each row of cols loaded once
    for both). The sums may be reordered ("reassoc"): LLVM then adds 16 columns per instruction."""
    n_out, n_taps = dw.shape
    for o in range(0, n_out, 2):
        g0, g1 = g[o], g[min(o + 1, n_out - 1)]
        for t in range(n_taps):
            c = cols[t]
            s0 = s1 = np.float32(0)
            for j in range(np.uintp(used)):
                s0 += g0[j] * c[j]
                s1 += g1[j] * c[j]
            dw[o, t] += s0
            if o + 1 < n_out:
                dw[o + 1, t] += s1


@typed_jit(_forward_signature, cache=CACHE)
def conv2d_images(x, w2, bias, out, layout, matmul_at, first, stop):
    """out[n] for the images first <= n < stop (see the module docstring). w2 has O' >= O rows,
    a whole number of MR (the rows past O are zeros): the product then runs whole tiles only,
    with every piece's columns rounded up to whole strips of NR as well."""
    kh, kw, sh, sw, ph, pw, dh, dw, piece_rows, piece_images, out_w = layout
    n_rows, n_taps = w2.shape
    n_out = out.shape[1]
    most = _up(piece_images * piece_rows * out_w, NR)  # columns in a piece, at most
    cols_buffer = np.zeros(n_taps * most, dtype=out.dtype)
    result_buffer = np.empty(n_rows * most, dtype=out.dtype)
    scratch = block_scratch(out, most)
    w = strided(w2)
    for piece in _pieces(first, stop, out.shape[2] // out_w, piece_rows, piece_images):
        n0, n1, oh0, oh1 = piece[0], piece[1], piece[2], piece[3]
        per_image = (oh1 - oh0) * out_w
        width = _up((n1 - n0) * per_image, NR)  # (the columns past the piece's hold finite leftovers)
        cols = cols_buffer[:n_taps * width].reshape((n_taps, width))
        result = result_buffer[:n_rows * width].reshape((n_rows, width))
        for n in range(n0, n1):
            piece_cols(x, n, oh0, oh1, out_w, cols, (n - n0) * per_image, kh, kw, sh, sw, ph, pw, dh, dw)
        block_product(w, strided(cols), result, scratch, matmul_at)
        for n in range(n0, n1):  # out[n, o, oh0 OW:oh1 OW] = result[o, the image's columns] + bias[o]
            un, src, dst = np.uintp(n), np.uintp((n - n0) * per_image), np.uintp(oh0 * out_w)
            for o in range(n_out):
                b, uo = bias[o], np.uintp(o)
                for j in range(np.uintp(per_image)):
                    out[un, uo, dst + j] = result[uo, src + j] + b


@typed_jit(_grads_signature, cache=CACHE)
def conv2d_grads(g, x, w_t, dx, dw_parts, layout, matmul_at, first, stop):
    """For the parts first <= p < stop: dx of their images, and their sum of dW into dw_parts[p].
    Part p is the images p N / P <= n < (p + 1) N / P, P = dw_parts.shape[0]. w_t is W^T padded with
    zeros to T' x O' (whole tiles of MR x NR as in conv2d_images)."""
    kh, kw, sh, sw, ph, pw, dh, dw, piece_rows, piece_images, out_w = layout
    n_images, n_out, out_h = g.shape[0], g.shape[1], g.shape[2] // out_w
    n_taps, n_parts = x.shape[1] * kh * kw, dw_parts.shape[0]
    taps_up, out_up = w_t.shape  # T' >= n_taps rows, O' >= n_out columns
    need_dx, need_dw = dx.shape[0] > 0, dw_parts.shape[1] > 0
    most = _up(piece_images * piece_rows * out_w, NR)
    cols_buffer = np.zeros(taps_up * most, dtype=g.dtype)
    g_buffer = np.zeros(out_up * most, dtype=g.dtype)
    dw_piece = np.empty((out_up, n_taps), dtype=g.dtype)
    scratch = block_scratch(g, max(most, n_taps))
    w = strided(w_t)
    for p in range(first, stop):
        n_lo, n_hi = p * n_images // n_parts, (p + 1) * n_images // n_parts
        for piece in _pieces(n_lo, n_hi, out_h, piece_rows, piece_images):
            n0, n1, oh0, oh1 = piece[0], piece[1], piece[2], piece[3]
            per_image = (oh1 - oh0) * out_w
            used = (n1 - n0) * per_image
            width = _up(used, NR)
            # g of the piece; its rows past O hold zeros or leftovers, which meet w_t's zero columns
            g_piece = g_buffer[:out_up * width].reshape((out_up, width))
            for n in range(n0, n1):
                un, src, dst = np.uintp(n), np.uintp(oh0 * out_w), np.uintp((n - n0) * per_image)
                for o in range(n_out):
                    uo = np.uintp(o)
                    for j in range(np.uintp(per_image)):
                        g_piece[uo, dst + j] = g[un, uo, src + j]
            if need_dw:  # dW += g cols^T, over the piece's columns only
                cols = cols_buffer[:taps_up * used].reshape((taps_up, used))
                for n in range(n0, n1):
                    piece_cols(x, n, oh0, oh1, out_w, cols, (n - n0) * per_image, kh, kw, sh, sw, ph, pw, dh, dw)
                if n_taps <= DOT_TAPS:  # few taps: dot products of contiguous rows (see _add_row_dots)
                    _add_row_dots(g_piece, cols, used, dw_parts[p])
                else:
                    block_product(strided(g_piece)[:, :used], strided(cols).T[:, :n_taps], dw_piece, scratch, matmul_at)
                    for o in range(n_out):
                        for t in range(n_taps):
                            dw_parts[p, o, t] += dw_piece[o, t]
            if need_dx:  # dcols = W^T g, added back into dx
                cols = cols_buffer[:taps_up * width].reshape((taps_up, width))
                block_product(w, strided(g_piece), cols, scratch, matmul_at)
                for n in range(n0, n1):
                    piece_add(cols, (n - n0) * per_image, dx, n, oh0, oh1, out_w, kh, kw, sh, sw, ph, pw, dh, dw)


def _layout(kernel, stride, padding, dilation, n_taps, out_h, out_w, itemsize):
    """The `layout` ints: the windows, and pieces of as many output rows (or whole images) as keep
    the columns (n_taps x columns numbers) within PIECE_BYTES, and at most PIECE_COLUMNS columns
    (the product packs each strip of NR columns: 32 KB apiece)."""
    image_columns = max(1, min(PIECE_BYTES // (n_taps * itemsize), PIECE_COLUMNS))  # columns that fit
    rows = max(1, min(out_h, image_columns // out_w))
    images = max(1, image_columns // (out_h * out_w)) if rows == out_h else 1
    return np.array([*kernel, *stride, *padding, *dilation, rows, images, out_w], dtype=np.intp)


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
    w2 = np.zeros((-(-o // MR) * MR, c * kh * kw), dtype=x.dtype)  # rows past O: zeros (whole tiles)
    w2[:o] = weight.reshape(o, -1)
    parallel_for(conv2d_images.for_dtype(x.dtype), n, np.ascontiguousarray(x), w2, bias, out.reshape(n, o, -1),
                 layout, block_address(x.dtype), threads=_threads(n, 2 * out.size * c * kh * kw))
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
        w_t = np.zeros((-(-(c * kh * kw) // MR) * MR, -(-o // MR) * MR), dtype=x.dtype)  # W^T, zeros around
        w_t[:c * kh * kw, :o] = weight.reshape(o, -1).T
        parallel_for(conv2d_grads.for_dtype(x.dtype), n_parts, np.ascontiguousarray(g).reshape(n, o, -1),
                     np.ascontiguousarray(x), w_t, dx, dw_parts,
                     _layout((kh, kw), stride, padding, dilation, c * kh * kw, oh, ow, x.itemsize),
                     block_address(x.dtype), chunks_per_thread=PARTS_PER_THREAD, threads=threads)
    dweight = None
    if need_dweight:
        dweight = dw_parts.sum(axis=0).reshape(weight.shape) if n_parts else np.zeros_like(weight)  # (N = 0)
    return (dx if need_dx else None), dweight
