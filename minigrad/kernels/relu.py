"""ReLU, elementwise on an array of any shape, forward and backward:

    y  = max(x, 0)                      (NaN stays NaN, as in PyTorch)
    dx = g where x > 0, else 0

The numpy twins are those two lines. They are slower than they look: ``np.maximum`` checks every
number for NaN, and ``g * (x > 0)`` makes a boolean array and then converts it to float, so a
LeNet's ReLUs took 0.2 ms of a 5 ms training step. The compiled kernels make one pass each, a whole
SIMD register at a time, on all threads for large arrays. They serve float32 (training); other
dtypes run on the twins, which keep the integer dtypes a ReLU of integers has.
"""
import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported

from ._parallel import parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS  # noqa: E402


def relu_forward_numpy(x):
    """max(x, 0), same shape and dtype as x."""
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def relu_backward_numpy(x, g):
    """g where x > 0, else 0 (x the forward's input, g the gradient of its output)."""
    return (g * (x > 0)).astype(g.dtype, copy=False)


@jit
def _forward_range(x, y, first, stop):
    for i in range(np.uintp(first), np.uintp(stop)):
        v = x[i]
        y[i] = v if not v <= 0 else np.float32(0)  # (NaN <= 0 is false: NaN passes through)


@jit
def _backward_range(x, g, dx, first, stop):
    for i in range(np.uintp(first), np.uintp(stop)):
        dx[i] = g[i] if x[i] > 0 else np.float32(0)


def _threads(n):
    return None if n >= PARALLEL_MIN_ELEMENTS else 1


def _compiled(*arrays):
    """Do these arrays go to the kernels: float32, C-contiguous and writable (others: the twins)."""
    return all(a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable for a in arrays)


def relu_forward_numba(x):
    """max(x, 0), same shape and dtype as x."""
    if not _compiled(x):
        return relu_forward_numpy(x)
    y = np.empty_like(x)
    parallel_for(_forward_range, x.size, x.reshape(-1), y.reshape(-1), threads=_threads(x.size))
    return y


def relu_backward_numba(x, g):
    """g where x > 0, else 0."""
    if x.shape != g.shape:
        raise ValueError(f"relu_backward: g {g.shape} does not match x {x.shape}")
    if not _compiled(x, g):
        return relu_backward_numpy(x, g)
    dx = np.empty_like(g)
    parallel_for(_backward_range, x.size, x.reshape(-1), g.reshape(-1), dx.reshape(-1), threads=_threads(x.size))
    return dx
