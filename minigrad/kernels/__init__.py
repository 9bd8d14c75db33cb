"""Kernels: the hot loops, each as a numba kernel with a plain-numpy reference twin.

The engine never calls numba or a ``*_numpy`` twin directly: it calls the functions below, which
pick the twin of the current backend. ``softmax_forward`` runs ``softmax.softmax_forward_numba``
or ``softmax.softmax_forward_numpy``, and so on: every function here names its file.

- ``"numba"`` (default): compiled kernels from ``matmul.py``, ``softmax.py``, ...; large ones run
  on minigrad's threads (``_parallel.py``).
- ``"numpy"``: the reference twins, short numpy code that is easy to read and to debug. This
  backend imports no numba and compiles nothing.

Choose with the environment variable ``MINIGRAD_BACKEND=numpy`` before import, or at run time
with ``minigrad.set_backend("numpy")``; ``minigrad.get_backend()`` tells which is in use.
A kernel file (and numba with it) is imported when one of its kernels is first called; an
interrupt (Ctrl-C) during that first call leaves nothing half-imported (``_warm.py``).
"""
import importlib
import os
import sys

from . import _warm
from ._parallel import get_num_threads, set_num_threads

BACKENDS = ("numba", "numpy")
_backend = os.environ.get("MINIGRAD_BACKEND", "numba").strip().lower() or "numba"
if _backend not in BACKENDS:
    raise ValueError(f"MINIGRAD_BACKEND={_backend!r}: expected one of {BACKENDS}")

_chosen = {}  # kernel name -> the function that computes it on the current backend


def get_backend():
    """The backend in use: ``"numba"`` or ``"numpy"``."""
    return _backend


def set_backend(name):
    """Run every kernel on ``"numba"`` (compiled) or ``"numpy"`` (reference) from now on."""
    global _backend
    name = str(name).lower()
    if name not in BACKENDS:
        raise ValueError(f"set_backend: unknown backend {name!r}; expected one of {BACKENDS}")
    _backend = name
    _chosen.clear()


class use_backend:
    """Context manager: ``with use_backend("numpy"): ...`` runs the block on that backend."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.previous = get_backend()
        set_backend(self.name)

    def __exit__(self, *exc):
        set_backend(self.previous)


def implementation(name, backend=None, file=None):
    """The function that computes kernel `name` on `backend` (default: the current one):
    ``<name>_<backend>`` from the kernel file (by default the one that :data:`FILES` names)."""
    file = file or FILES[name]
    backend = backend or _backend
    if backend == "numba" and f"{__name__}.{file}" not in sys.modules:
        _warm.before_import(file)  # on a fresh machine, compile on both cores (see _warm.py)
        module = _warm.load(file)
    else:
        module = importlib.import_module(f"{__name__}.{file}")
    return getattr(module, f"{name}_{backend}")


def _run(name, *args, **kwargs):
    fn = _chosen.get(name)
    if fn is None:
        fn = implementation(name)
        if _backend == "numba":  # the first call compiles (or loads) it: see _warm.first_call
            result = _warm.first_call(fn, args, kwargs)
            _chosen[name] = fn
            return result
        _chosen[name] = fn
    return fn(*args, **kwargs)


# kernel name -> the file that defines ``<name>_numba`` and ``<name>_numpy``
FILES = {}


def _kernel(file, name=None):
    """Mark a function below as the dispatcher of kernel `name` (default: its own name) in `file`."""

    def register(fn):
        FILES[name or fn.__name__] = file
        return fn

    return register


@_kernel("matmul", "matmul")
def gemm(a, b, bias=None):
    """a (*batch, M, K) @ b (*batch, K, N) (+ bias (N,)): ``matmul.matmul_numba`` / ``_numpy``.

    (BLAS's name, "general matrix multiply"; the name ``matmul`` is the kernel file's.)"""
    return _run("matmul", a, b, bias)


@_kernel("matmul", "matmul_pair")
def gemm_pair(a1, b1, a2, b2, rows=None):
    """(a1 @ b1, a2 @ b2, the sum of the rows of `rows` or None) for 2-D operands: a layer's two
    backward products and its bias gradient, side by side on two threads when they are worth it:
    ``matmul.matmul_pair_numba`` / ``_numpy``."""
    return _run("matmul_pair", a1, b1, a2, b2, rows)


@_kernel("softmax")
def softmax_forward(x):
    """y (R, N) = softmax of each row of x (R, N)."""
    return _run("softmax_forward", x)


@_kernel("softmax")
def softmax_backward(y, g):
    """dx (R, N) = y * (g - sum(g * y)) per row."""
    return _run("softmax_backward", y, g)


@_kernel("softmax")
def log_softmax_forward(x):
    """y (R, N) = log_softmax of each row of x (R, N)."""
    return _run("log_softmax_forward", x)


@_kernel("softmax")
def log_softmax_backward(y, g):
    """dx (R, N) = g - exp(y) * sum(g) per row."""
    return _run("log_softmax_backward", y, g)


@_kernel("softmax")
def masked_softmax_forward(x, mask, scale):
    """y (R, N) = softmax(where(mask, scale * x, -inf)) per row."""
    return _run("masked_softmax_forward", x, mask, scale)


@_kernel("softmax")
def masked_softmax_backward(y, g, scale):
    """dx (R, N) = scale * y * (g - sum(g * y)) per row."""
    return _run("masked_softmax_backward", y, g, scale)


@_kernel("layernorm")
def layer_norm_forward(x, weight, bias, eps=1e-5):
    """(y (R, D), mean (R,), rstd (R,)) of layer norm over each row of x (R, D)."""
    return _run("layer_norm_forward", x, weight, bias, eps)


@_kernel("layernorm")
def layer_norm_backward(g, x, weight, mean, rstd):
    """(dx (R, D), dweight (D,), dbias (D,)) of layer norm."""
    return _run("layer_norm_backward", g, x, weight, mean, rstd)


@_kernel("batchnorm")
def batch_norm_forward(x, weight, bias, eps=1e-5):
    """(y, xhat shaped like x (N, C, *), rstd (1, C, 1, ...)) of batch norm over each channel."""
    return _run("batch_norm_forward", x, weight, bias, eps)


@_kernel("batchnorm")
def batch_norm_backward(g, xhat, weight, rstd):
    """(dx, dweight (C,), dbias (C,)) of batch norm."""
    return _run("batch_norm_backward", g, xhat, weight, rstd)


@_kernel("batchnorm")
def channel_statistics(x):
    """(mean, var) (C,) in float64 of each channel of x (N, C, *), var divided by n."""
    return _run("channel_statistics", x)


@_kernel("gelu")
def gelu_forward(x, approximate=False):
    """gelu(x), elementwise, exact or tanh-approximated."""
    return _run("gelu_forward", x, approximate)


@_kernel("gelu")
def gelu_backward(x, g, approximate=False):
    """dx = g * gelu'(x), elementwise."""
    return _run("gelu_backward", x, g, approximate)


@_kernel("relu")
def relu_forward(x):
    """max(x, 0), elementwise."""
    return _run("relu_forward", x)


@_kernel("relu")
def relu_backward(x, g):
    """dx = g where x > 0, else 0."""
    return _run("relu_backward", x, g)


@_kernel("rnn")
def rnn_layer_forward(gi, h0, w_hh, b_hh=None, relu=False, reverse=False):
    """One Elman RNN layer over every step: gi (L, N, H), h0 (N, H) -> hs (L, N, H)."""
    return _run("rnn_layer_forward", gi, h0, w_hh, b_hh, relu, reverse)


@_kernel("rnn")
def rnn_layer_backward(g_hs, h0, w_hh, hs, relu=False, reverse=False):
    """Its backward through time: -> (dpre (L, N, H), dh0)."""
    return _run("rnn_layer_backward", g_hs, h0, w_hh, hs, relu, reverse)


@_kernel("rnn")
def lstm_layer_forward(gi, h0, c0, w_hh, b_hh=None, reverse=False):
    """One LSTM layer over every step: gi (L, N, 4H), h0, c0 (N, H) -> (hs, cs, tanh_cs, acts)."""
    return _run("lstm_layer_forward", gi, h0, c0, w_hh, b_hh, reverse)


@_kernel("rnn")
def lstm_layer_backward(g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse=False):
    """Its backward through time: -> (dgates (L, N, 4H), dh0, dc0)."""
    return _run("lstm_layer_backward", g_hs, g_c, h0, c0, w_hh, hs, cs, tanh_cs, acts, reverse)


@_kernel("rnn")
def gru_layer_forward(gi, h0, w_hh, b_hh=None, reverse=False):
    """One GRU layer over every step: gi (L, N, 3H), h0 (N, H) -> (hs, acts, ghs)."""
    return _run("gru_layer_forward", gi, h0, w_hh, b_hh, reverse)


@_kernel("rnn")
def gru_layer_backward(g_hs, h0, w_hh, hs, acts, ghs, reverse=False):
    """Its backward through time: -> (dgi, dgh (L, N, 3H), dh0)."""
    return _run("gru_layer_backward", g_hs, h0, w_hh, hs, acts, ghs, reverse)


@_kernel("cross_entropy")
def cross_entropy_forward(logits, targets, ignore_index=-100, label_smoothing=0.0):
    """(losses (R,), lse (R,)) of logits (R, V) against integer targets (R,)."""
    return _run("cross_entropy_forward", logits, targets, ignore_index, label_smoothing)


@_kernel("cross_entropy")
def cross_entropy_backward(logits, targets, lse, grad_losses, ignore_index=-100, label_smoothing=0.0):
    """dlogits (R, V) from the forward's logits, targets and lse and the gradient of the losses."""
    return _run("cross_entropy_backward", logits, targets, lse, grad_losses, ignore_index, label_smoothing)


@_kernel("attention")
def attention_forward(q, k, v, mask, scale):
    """(out, weights) of softmax(scale * q k^T, masked) v, for 4-D (B, h, T, d) arrays."""
    return _run("attention_forward", q, k, v, mask, scale)


@_kernel("attention")
def attention_backward(g, q, k, v, weights, mask, scale):
    """(dq, dk, dv) of scaled dot-product attention."""
    return _run("attention_backward", g, q, k, v, weights, mask, scale)


@_kernel("adam")
def adam_update(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    """One Adam / AdamW step for one parameter, in place."""
    return _run("adam_update", param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                decoupled, step)


@_kernel("embedding")
def embedding_backward(ids, g, num_embeddings):
    """dweight (num_embeddings, D): the rows of g (N, D) added up by id."""
    return _run("embedding_backward", ids, g, num_embeddings)


@_kernel("reduce")
def sum_rows(g):
    """g (R, N) -> (N,): the sum of the rows (a Linear layer's bias gradient)."""
    return _run("sum_rows", g)


@_kernel("reduce")
def sum_squares(x):
    """x (N,) -> sum of x[i]^2 as a Python float, summed in float64."""
    return _run("sum_squares", x)


@_kernel("conv")
def im2col(x, kernel_size, stride, padding, dilation, out_size, fill=0.0):
    """x (N, C, H, W) -> cols (C * kh * kw, N, OH, OW): every window of a convolution as a column
    (``fill`` outside x; padding = (top, left), out_size = (OH, OW))."""
    return _run("im2col", x, kernel_size, stride, padding, dilation, out_size, fill)


@_kernel("conv")
def col2im(cols, input_shape, kernel_size, stride, padding, dilation):
    """cols (C * kh * kw, N, OH, OW) -> dx (N, C, H, W): each column added back where im2col read it."""
    return _run("col2im", cols, input_shape, kernel_size, stride, padding, dilation)


@_kernel("conv2d")
def conv2d_forward(x, weight, bias, stride, padding, dilation, out_size):
    """x (N, C, H, W) * weight (O, C, kh, kw) + bias (O,) or None -> y (N, O, OH, OW), one image at a
    time (padding = (top, left), out_size = (OH, OW))."""
    return _run("conv2d_forward", x, weight, bias, stride, padding, dilation, out_size)


@_kernel("conv2d")
def conv2d_backward(g, x, weight, stride, padding, dilation, need_dx=True, need_dweight=True):
    """g (N, O, OH, OW) -> (dx (N, C, H, W), dweight (O, C, kh, kw)) of conv2d_forward (None if not needed)."""
    return _run("conv2d_backward", g, x, weight, stride, padding, dilation, need_dx, need_dweight)


@_kernel("pool")
def max_pool2d_forward(x, kernel_size, stride, padding, dilation, out_size):
    """x (N, C, H, W) -> (y, indices) (N, C, OH, OW): each window's max and its place h W + w in x's plane."""
    return _run("max_pool2d_forward", x, kernel_size, stride, padding, dilation, out_size)


@_kernel("pool")
def max_pool2d_backward(g, indices, input_shape):
    """g (N, C, OH, OW) -> dx (N, C, H, W): each window's g added where its max was."""
    return _run("max_pool2d_backward", g, indices, input_shape)


def describe():
    """What the compiled kernels run on: a dict for benchmarks and bug reports. Imports numba."""
    _cpu, _jit = _warm.load("_cpu"), _warm.load("_jit")
    rows, cols, forced = _cpu.choose_tile()
    return {
        "backend": _backend,
        "simd": _cpu.simd_family(),
        "cpu": _jit.target_cpu_name(),
        "tile": f"{rows}x{cols}" + (" (forced by MINIGRAD_MATMUL_TILE)" if forced else ""),
        "matmul_kernel": ("vector" if _cpu.vector_tile() else "loops")
        + (" (forced by MINIGRAD_MATMUL_KERNEL)" if _cpu.kernel_forced() else ""),
        "threads": get_num_threads(),
        "parallel": "minigrad thread pool (kernels/_parallel.py)",
        "cache_dir": _jit.cache_dir(),
    }

