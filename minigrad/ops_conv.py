"""The ops of convolutional networks, one `Function` each, as in ops.py: `forward` on numpy arrays,
`rule`, then `backward`. The argument parsing (ints or pairs, 'same', defaults) is in nn/conv.py,
nn/pooling.py, nn/padding.py and nn/sampling.py; here every size is already a pair of ints.

Images are (N, C, H, W): batch, channels, height, width. A convolution and its gradients are three
matrix products on the columns that `kernels.im2col` cuts out of the input (see kernels/conv.py):

    cols (C kh kw, N OH OW) = im2col(x)         every window of x as a column
    y    (O, N OH OW)       = W (O, C kh kw) @ cols

so that, as for a Linear layer, dW = g cols^T and dcols = W^T g, and `col2im` adds each column of
dcols back where its window was read. With `groups` the channels split into groups that never
mix: the product is batched over the groups. Without groups (nearly every layer a course trains)
the same three products run one image at a time, a few output rows at once, so that the
columns stay in cache and y comes out in its own layout (`kernels.conv2d_forward`, kernels/conv2d.py).

Average pooling is im2col and a mean over each column; max pooling has kernels of its own
(kernels/pool.py); adaptive average pooling and interpolation are fixed linear maps along each axis;
adaptive max pooling, whose windows differ in size, loops over its windows.
"""
import numpy as np

from . import kernels
from .autograd import Function
from .ops import _mm


def output_size(size, kernel, stride, pad_before, pad_after, dilation, ceil_mode=False):
    """Positions of a window of `kernel` taps `dilation` apart, moved by `stride`, on an axis of `size`
    padded by (pad_before, pad_after): floor (or ceil) of (size + pads - dilation (kernel - 1) - 1) / stride, + 1.
    With ceil_mode a last window may reach past the end, but must start inside the input or the front
    padding (PyTorch's rule)."""
    span = size + pad_before + pad_after - dilation * (kernel - 1) - 1  # (negative: the window does not fit)
    n = (span + (stride - 1 if ceil_mode else 0)) // stride + 1  # (floor division, also of a negative span)
    if ceil_mode and (n - 1) * stride >= size + pad_before:
        n -= 1
    return max(n, 0)


def _pairs(*values):
    return [tuple(int(v) for v in value) for value in values]


# ============================================================================ convolution
class Conv2d(Function):
    """x (N, C, H, W) * weight (O, C / groups, kh, kw) + bias (O,) -> (N, O, OH, OW).

    y[n, o, i, j] = bias[o] + sum over c, ki, kj of w[o, c, ki, kj] x[n, c', i sh + ki dh - top, j sw + kj dw - left]
    (c' the c-th channel of o's group; x is 0 in the padding). padding = (top, bottom, left, right).
    """

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
        (n, c, h, w), (o, cg, kh, kw) = check_conv("conv2d", x.shape, weight.shape, groups, bias)
        top, bottom, left, right = padding
        oh, ow = conv_output_hw("conv2d", x.shape, (kh, kw), stride, padding, dilation)
        ctx.shapes = (x.shape, weight.shape, (kh, kw), stride, (top, left), dilation, groups)
        # Without groups the kernels take one image at a time, in cache, and cut its windows out again
        # in the backward (kernels/conv2d.py): ctx keeps x and the weight. A backward of the columns
        # (the conv2d exercise's, which replaces this one) gets the columns, as below.
        ctx.per_image = groups == 1 and ctx.fn.backward is _per_image_backward
        if ctx.per_image:
            ctx.save_for_backward(x, weight)
            return kernels.conv2d_forward(x, weight, bias, stride, (top, left), dilation, (oh, ow))
        cols = kernels.im2col(x, (kh, kw), stride, (top, left), dilation, (oh, ow))  # (C kh kw, N, OH, OW)
        cols = cols.reshape(groups, cg * kh * kw, n * oh * ow)
        w2 = weight.reshape(groups, o // groups, cg * kh * kw)
        y = _mm(w2, cols).reshape(o, n, oh, ow).transpose(1, 0, 2, 3)  # one product for the whole batch
        out = np.empty((n, o, oh, ow), dtype=y.dtype)
        if bias is None:
            out[...] = y
        else:
            np.add(y, bias.reshape(o, 1, 1), out=out)
        ctx.save_for_backward(cols if ctx.needs_input_grad[1] else None, w2)
        return out

    rule = "y = W cols(x) + b: dW = g cols^T, dcols = W^T g, dx = col2im(dcols), db = sum of g over n, i, j"

    @staticmethod
    def backward(ctx, g):
        x_shape, w_shape, kernel, stride, top_left, dilation, groups = ctx.shapes
        db = g.sum(axis=(0, 2, 3)) if len(ctx.needs_input_grad) == 3 and ctx.needs_input_grad[2] else None
        if ctx.per_image:
            x, weight = ctx.saved_tensors
            dx, dw = kernels.conv2d_backward(g, x, weight, stride, top_left, dilation, *ctx.needs_input_grad[:2])
            return (dx, dw) if len(ctx.needs_input_grad) == 2 else (dx, dw, db)
        cols, w2 = ctx.saved_tensors
        n, o, oh, ow = g.shape
        g2 = g.transpose(1, 0, 2, 3).reshape(groups, o // groups, n * oh * ow)  # (a copy: O first)
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dcols = _mm(w2.transpose(0, 2, 1), g2)  # (groups, C/groups kh kw, N OH OW)
            dcols = dcols.reshape(x_shape[1] * kernel[0] * kernel[1], n, oh, ow)
            dx = kernels.col2im(dcols, x_shape, kernel, stride, top_left, dilation)
        if ctx.needs_input_grad[1]:
            dw = _mm(g2, cols.transpose(0, 2, 1)).reshape(w_shape)
        return (dx, dw) if len(ctx.needs_input_grad) == 2 else (dx, dw, db)  # (2: called without a bias)


_per_image_backward = Conv2d.backward


class ConvTranspose2d(Function):
    """x (N, Cin, H, W), weight (Cin, Cout / groups, kh, kw), bias (Cout,) -> (N, Cout, OH, OW),
    OH = (H - 1) sh - 2 ph + dh (kh - 1) + output_padding + 1: the gradient of a convolution with
    respect to its input, used as a layer. Each input number scatters weight[c] times itself into
    the output: cols = W^T x, then col2im adds the columns up."""

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                dilation=(1, 1), groups=1):
        name = "conv_transpose2d"
        if x.ndim != 4 or weight.ndim != 4:
            raise ValueError(f"{name}: expected input (N, C_in, H, W) and weight (C_in, C_out/groups, kh, kw), "
                             f"got {x.shape} and {weight.shape}")
        n, cin, h, w = x.shape
        _, og, kh, kw = weight.shape
        if groups < 1 or cin % groups:
            raise ValueError(f"{name}: input channels {cin} (input {x.shape}) do not divide into groups={groups}")
        if weight.shape[0] != cin:
            raise ValueError(f"{name}: input {x.shape} has {cin} channels but the weight {weight.shape} "
                             f"expects {weight.shape[0]} (weight is (C_in, C_out/groups, kh, kw))")
        cout = og * groups
        if bias is not None and bias.shape != (cout,):
            raise ValueError(f"{name}: bias {bias.shape} does not fit {cout} output channels; expected ({cout},)")
        for op_, s, d in zip(output_padding, stride, dilation):
            if not (0 <= op_ < s or 0 <= op_ < d):
                raise ValueError(f"{name}: output_padding {tuple(output_padding)} must be smaller than the stride "
                                 f"{tuple(stride)} or the dilation {tuple(dilation)}")
        oh, ow = [(i - 1) * s - 2 * p + d * (k - 1) + op_ + 1
                  for i, s, p, d, k, op_ in zip((h, w), stride, padding, dilation, (kh, kw), output_padding)]
        if oh <= 0 or ow <= 0:
            raise ValueError(f"{name}: input {x.shape} with weight {weight.shape}, stride {tuple(stride)}, padding "
                             f"{tuple(padding)} gives an empty output ({oh}, {ow})")
        xg = x.transpose(1, 0, 2, 3).reshape(groups, cin // groups, n * h * w)
        w2 = weight.reshape(groups, cin // groups, og * kh * kw)
        cols = _mm(w2.transpose(0, 2, 1), xg)  # (groups, Cout/groups kh kw, N H W)
        y = kernels.col2im(cols.reshape(cout * kh * kw, n, h, w), (n, cout, oh, ow), (kh, kw), stride, padding,
                           dilation)
        if bias is not None:
            y += bias.reshape(cout, 1, 1)
        ctx.save_for_backward(xg if ctx.needs_input_grad[1] else None, w2)
        ctx.shapes = (x.shape, weight.shape, (kh, kw), stride, padding, dilation, groups)
        return y

    rule = "cols = W^T x, y = col2im(cols) + b: dcols = im2col(g), dx = W dcols, dW = x dcols^T, db = sum of g"

    @staticmethod
    def backward(ctx, g):
        xg, w2 = ctx.saved_tensors
        x_shape, w_shape, kernel, stride, padding, dilation, groups = ctx.shapes
        n, cin, h, w = x_shape
        gcols = kernels.im2col(g, kernel, stride, padding, dilation, (h, w))
        gcols = gcols.reshape(groups, gcols.shape[0] // groups, n * h * w)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = np.ascontiguousarray(_mm(w2, gcols).reshape(cin, n, h, w).transpose(1, 0, 2, 3))
        if ctx.needs_input_grad[1]:
            dw = _mm(xg, gcols.transpose(0, 2, 1)).reshape(w_shape)
        if len(ctx.needs_input_grad) == 2:  # (called without a bias)
            return dx, dw
        if ctx.needs_input_grad[2]:
            db = g.sum(axis=(0, 2, 3))
        return dx, dw, db


def check_conv(name, x_shape, w_shape, groups, bias, dims=2):
    """The shapes of a convolution's input and weight, checked: ((N, C, *spatial), (O, C/groups, *kernel))."""
    letters = ("L",) if dims == 1 else ("H", "W")
    kernel = ("k",) if dims == 1 else ("kh", "kw")
    if len(x_shape) != dims + 2 or len(w_shape) != dims + 2:
        raise ValueError(f"{name}: expected input (N, C, {', '.join(letters)}) and weight "
                         f"(C_out, C_in/groups, {', '.join(kernel)}), got {tuple(x_shape)} and {tuple(w_shape)}")
    c, o, cg = x_shape[1], w_shape[0], w_shape[1]
    if groups < 1 or c % groups or o % groups:
        raise ValueError(f"{name}: groups={groups} must divide the input channels ({c}, input {tuple(x_shape)}) and "
                         f"the output channels ({o}, weight {tuple(w_shape)})")
    if cg * groups != c:
        raise ValueError(f"{name}: input {tuple(x_shape)} has {c} channels, but the weight {tuple(w_shape)} with "
                         f"groups={groups} expects {cg * groups} (weight.shape[1] * groups)")
    if bias is not None and tuple(bias.shape) != (o,):
        raise ValueError(f"{name}: bias {tuple(bias.shape)} does not fit {o} output channels; expected ({o},)")
    return tuple(x_shape), tuple(w_shape)


def conv_output_hw(name, x_shape, kernel, stride, padding, dilation):
    """(OH, OW) of a window over (H, W) padded by (top, bottom, left, right); raises if the kernel
    does not fit in the padded input."""
    top, bottom, left, right = padding
    h, w = x_shape[-2:]
    sizes = (output_size(h, kernel[0], stride[0], top, bottom, dilation[0]),
             output_size(w, kernel[1], stride[1], left, right, dilation[1]))
    if min(sizes) <= 0:
        span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        raise ValueError(f"{name}: the kernel {tuple(kernel)} (spanning {span} with dilation {tuple(dilation)}) is "
                         f"larger than the padded input {(h + top + bottom, w + left + right)} (input "
                         f"{tuple(x_shape)}, padding {tuple(padding)})")
    return sizes


# ============================================================================ im2col as an op
class Unfold(Function):
    """x (N, C, H, W) -> (N, C kh kw, L): every window of x as a column, L = OH OW windows."""

    @staticmethod
    def forward(ctx, x, *, kernel_size, dilation, padding, stride):
        if x.ndim != 4:
            raise ValueError(f"unfold: expected a 4-D input (N, C, H, W), got shape {x.shape}")
        padding4 = (padding[0], padding[0], padding[1], padding[1])
        oh, ow = conv_output_hw("unfold", x.shape, kernel_size, stride, padding4, dilation)
        cols = kernels.im2col(x, kernel_size, stride, padding, dilation, (oh, ow))
        ctx.args = (x.shape, kernel_size, stride, padding, dilation, (oh, ow))
        n = x.shape[0]
        return np.ascontiguousarray(cols.reshape(cols.shape[0], n, oh * ow).transpose(1, 0, 2))

    rule = "unfold copies x into columns: dx = fold(g), each column added back where it was read"

    @staticmethod
    def backward(ctx, g):
        x_shape, kernel, stride, padding, dilation, (oh, ow) = ctx.args
        cols = g.transpose(1, 0, 2).reshape(g.shape[1], x_shape[0], oh, ow)
        return kernels.col2im(cols, x_shape, kernel, stride, padding, dilation)


class Fold(Function):
    """cols (N, C kh kw, L) -> (N, C, H, W): each column added into its window (overlaps add up)."""

    @staticmethod
    def forward(ctx, cols, *, output_size, kernel_size, dilation, padding, stride):
        kk = kernel_size[0] * kernel_size[1]
        if cols.ndim != 3 or cols.shape[1] % kk:
            raise ValueError(f"fold: expected input (N, C * {kernel_size[0]} * {kernel_size[1]}, L), got shape "
                             f"{cols.shape}")
        n, c = cols.shape[0], cols.shape[1] // kk
        padding4 = (padding[0], padding[0], padding[1], padding[1])
        oh, ow = conv_output_hw("fold", (n, c) + tuple(output_size), kernel_size, stride, padding4, dilation)
        if oh * ow != cols.shape[2]:
            raise ValueError(f"fold: input {cols.shape} has {cols.shape[2]} columns, but output_size "
                             f"{tuple(output_size)} with kernel {tuple(kernel_size)}, stride {tuple(stride)}, padding "
                             f"{tuple(padding)}, dilation {tuple(dilation)} has {oh} x {ow} = {oh * ow} windows")
        ctx.args = (kernel_size, stride, padding, dilation, (oh, ow))
        c4 = cols.transpose(1, 0, 2).reshape(c * kk, n, oh, ow)
        return kernels.col2im(c4, (n, c) + tuple(output_size), kernel_size, stride, padding, dilation)

    rule = "fold adds columns into place: dcols = unfold(g), each column reads its window of g"

    @staticmethod
    def backward(ctx, g):
        kernel, stride, padding, dilation, (oh, ow) = ctx.args
        cols = kernels.im2col(g, kernel, stride, padding, dilation, (oh, ow))
        return np.ascontiguousarray(cols.reshape(cols.shape[0], g.shape[0], oh * ow).transpose(1, 0, 2))


# ============================================================================ padding
class Pad(Function):
    """x padded by `widths`, one (before, after) per axis (numpy's order): constant (`value`),
    reflect (mirrored without repeating the edge), replicate (the edge repeated) or circular."""

    MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}

    @staticmethod
    def forward(ctx, x, *, widths, mode="constant", value=0.0):
        ctx.widths, ctx.mode, ctx.shape = widths, mode, x.shape
        if mode == "constant":
            return np.pad(x, widths, mode="constant", constant_values=value)
        return np.pad(x, widths, mode=Pad.MODES[mode])

    rule = ("constant: dx = g without its border; reflect/replicate/circular: each border number's g also goes "
            "to the input number it copies")

    @staticmethod
    def backward(ctx, g):
        for axis, (before, after) in enumerate(ctx.widths):
            if before == after == 0:
                continue
            n = ctx.shape[axis]
            at = (slice(None),) * axis
            inner = g[at + (slice(before, before + n),)]
            if ctx.mode != "constant":
                # where each padded position copies from: the pad of 0..n-1 itself
                source = np.pad(np.arange(n), (before, after), mode=Pad.MODES[ctx.mode])
                inner = inner.copy()
                for j in [*range(before), *range(before + n, before + n + after)]:
                    inner[at + (source[j],)] += g[at + (j,)]
            g = inner
        return np.ascontiguousarray(g)


# ============================================================================ pooling
class MaxPool2d(Function):
    """x (N, C, H, W) -> (max of each window (N, C, OH, OW), its position h W + w in x's plane, int64).
    padding = (top, left); taps in the padding are skipped (kernels/pool.py)."""

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation, out_size):
        y, indices = kernels.max_pool2d_forward(x, kernel_size, stride, padding, dilation, out_size)
        ctx.indices, ctx.shape = indices, x.shape
        return y, indices

    rule = "the max of a window passes g to the input it came from; the others get 0"

    @staticmethod
    def backward(ctx, g, g_indices=None):
        return kernels.max_pool2d_backward(g, ctx.indices, ctx.shape)


class AdaptiveMaxPool2d(Function):
    """x (N, C, H, W) -> (the max of each window (N, C, OH, OW), its position h W + w in x's plane, int64),
    for windows of different sizes: window (i, j) covers the rows rows[i] = (start, end) and the columns
    cols[j] (nn/pooling.py works them out: PyTorch's floor(i H / OH) to ceil((i + 1) H / OH)). Neighbours
    may share a row or column, so a loop over the OH OW windows, each one numpy max over all (n, c)."""

    @staticmethod
    def forward(ctx, x, *, rows, cols):
        n, c, h, w = x.shape
        y = np.empty((n, c, len(rows), len(cols)), dtype=x.dtype)
        indices = np.empty(y.shape, dtype=np.int64)
        for i, (h0, h1) in enumerate(rows):
            for j, (w0, w1) in enumerate(cols):
                window = x[:, :, h0:h1, w0:w1].reshape(n, c, -1)  # (N, C, taps), taps row by row
                arg = window.argmax(axis=2)  # the first max (a NaN counts as the largest), as kernels/pool.py
                y[:, :, i, j] = np.take_along_axis(window, arg[..., None], axis=2)[..., 0]
                indices[:, :, i, j] = (h0 + arg // (w1 - w0)) * w + w0 + arg % (w1 - w0)
        ctx.indices, ctx.shape = indices, x.shape
        return y, indices

    rule = "the max of a window passes g to the input it came from (summed where windows share it)"

    @staticmethod
    def backward(ctx, g, g_indices=None):
        return kernels.max_pool2d_backward(g, ctx.indices, ctx.shape)


class AvgPool2d(Function):
    """x (N, C, H, W) -> the mean of each window (N, C, OH, OW): the sum of the window over `divisor`,
    an (OH, OW) array (the window's size, with or without the padding it covers)."""

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, out_size, divisor):
        n, c, h, w = x.shape
        one = (1, 1)
        cols = kernels.im2col(x.reshape(n * c, 1, h, w), kernel_size, stride, padding, one, out_size)
        ctx.args = (x.shape, kernel_size, stride, padding, divisor)
        return (cols.sum(axis=0) / divisor).astype(x.dtype, copy=False).reshape(n, c, *out_size)

    rule = "y = (sum of the window) / divisor: every input of the window gets g / divisor"

    @staticmethod
    def backward(ctx, g):
        (n, c, h, w), kernel, stride, padding, divisor = ctx.args
        share = (g / divisor).astype(g.dtype, copy=False).reshape(1, n * c, *g.shape[2:])
        cols = np.broadcast_to(share, (kernel[0] * kernel[1],) + share.shape[1:])
        return kernels.col2im(cols, (n * c, 1, h, w), kernel, stride, padding, (1, 1)).reshape(n, c, h, w)


# ============================================================================ resampling
class Resample(Function):
    """y = A x B^T over the last two axes (x (..., H, W), A (OH, H), B (OW, W)), or y = x B^T over the
    last axis when A is None: every output a fixed weighted sum of inputs. Adaptive average pooling
    (A, B average windows) and interpolation (A, B pick or blend neighbours) are both of this form."""

    @staticmethod
    def forward(ctx, x, *, rows, cols):
        ctx.rows, ctx.cols = rows, cols
        y = x if rows is None else np.matmul(rows, x)
        return np.matmul(y, cols.T)

    rule = "y = A x B^T is linear in x: dx = A^T g B"

    @staticmethod
    def backward(ctx, g):
        dx = np.matmul(g, ctx.cols)
        return dx if ctx.rows is None else np.matmul(ctx.rows.T, dx)
