"""GELU, elementwise on an array of any shape, forward and backward, exact or tanh-approximated.

    exact:        gelu(x) = x * Phi(x),  Phi(x) = 0.5 * (1 + erf(x / sqrt(2))) = 0.5 * erfc(-x / sqrt(2))
    approximate:  gelu(x) = 0.5 * x * (1 + tanh(u)),  u = sqrt(2 / pi) * (x + 0.044715 x^3)

The compiled tanh form uses 0.5 * (1 + tanh(u)) = sigmoid(2u), computed from exp(-2|u|) so that
it keeps full relative precision for x far below 0 (where 1 + tanh(u) would cancel).

Phi is the standard normal distribution function and phi(x) = exp(-x^2 / 2) / sqrt(2 pi) its density.
We compute Phi as 0.5 * erfc(-x / sqrt(2)), not 0.5 * (1 + erf(...)): for x far below 0 the sum
1 + erf cancels to 0, while erfc keeps the tiny tail (so the result has full relative precision).

numpy has no erf or erfc, so the numpy twin applies ``math.erfc`` number by number (readable, slow).
In the compiled kernels, float64 uses ``math.erfc`` too (exact to ~1e-16, for gradient checks);
float32, the type used for training, uses ``_erfc_float32`` below: plain arithmetic that LLVM can
vectorise (about 100x faster than numba's scalar ``math.erfc``), accurate to a few units in the
last place.
"""

import math

import numpy as np

from ._jit import jit, prange  # first: it sets LLVM options before numba is imported

import numba  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import overload  # noqa: E402

from .softmax import PARALLEL_MIN_ELEMENTS_EXP, fast_exp, row_block  # noqa: E402

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TANH_SCALE = math.sqrt(2 / math.pi)  # sqrt(2/pi), the tanh form's constant
_TANH_CUBIC = 0.044715


def _flat(name, x):
    """x as a C-contiguous float32/float64 array (copied if read-only), and its 1-D view."""
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: expected float32 or float64, got {x.dtype}")
    x = np.asarray(x, order="C")  # (not ascontiguousarray, which turns a 0-d array into 1-d)
    if not x.flags.writeable:  # a read-only array is another numba type: copy rather than compile
        x = x.copy()
    return x, x.reshape(-1)


# ---------------------------------------------------------------------------------------------------
# Reference twins (numpy)
# ---------------------------------------------------------------------------------------------------

_erfc_elementwise = np.frompyfunc(math.erfc, 1, 1)  # math.erfc applied to each element (slow)


def _normal_cdf_numpy(x):
    """Phi(x) = 0.5 * erfc(-x / sqrt(2)), same shape and dtype as x."""
    erfc = np.asarray(_erfc_elementwise(-x * _SQRT_HALF), dtype=np.float64)  # (an object array)
    return (0.5 * erfc).astype(x.dtype)


def gelu_forward_numpy(x, approximate=False):
    """gelu(x), same shape and dtype as x (any shape); ``approximate`` selects the tanh form."""
    if approximate:
        u = _TANH_SCALE * (x + _TANH_CUBIC * x**3)
        return 0.5 * x * (1 + np.tanh(u))
    return x * _normal_cdf_numpy(x)


def gelu_backward_numpy(x, g, approximate=False):
    """dx = g * gelu'(x) for x and the upstream gradient g of the same shape."""
    if approximate:
        # tanh form: d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
        # du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        t = np.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x**3))
        du_dx = _TANH_SCALE * (1 + 3 * _TANH_CUBIC * x * x)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx)
    # exact: d/dx [x Phi(x)] = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    return g * (_normal_cdf_numpy(x) + x * np.exp(-0.5 * x * x) * _INV_SQRT_2PI)


# ---------------------------------------------------------------------------------------------------
# Building blocks for the compiled kernels
# ---------------------------------------------------------------------------------------------------

# erf(a) = 2/sqrt(pi) * sum_n (-1)^n a^(2n+1) / (n! (2n+1)): Taylor coefficients in a^2, highest
# first. Used for |a| <= 1, where the alternating series' first dropped term is below 2e-8.
_ERF_TAYLOR_32 = tuple(
    np.float32(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)))
    for n in range(9, -1, -1)
)
# For a >= 1: erfc(a) = exp(-a^2) / (sqrt(pi) a) * S(a), with S smooth and close to 1. S is a
# degree-12 polynomial in v = 2.2222 / a - 1.2222 (which maps a in [1, 10] onto [-1, 1]), fitted by
# least squares to math.erfc at 600 Chebyshev points; relative error about 6e-8 in float32.
# (Beyond a = 9.3, exp(-a^2) is below the float32 range and erfc(a) is 0.)
_ERFC_TAIL_32 = (
    -1.8073040337185375e-05,
    3.256143827456981e-05,
    2.4997478249133565e-05,
    -0.0001292949600610882,
    0.0002544388407841325,
    -0.0003994593280367553,
    0.00017328366811852902,
    0.001630043494515121,
    -0.007051187567412853,
    0.015886370092630386,
    -0.0073090470395982265,
    -0.13562074303627014,
    0.8903982639312744,
)
_ERFC_TAIL_32 = tuple(np.float32(c) for c in _ERFC_TAIL_32)
_F32 = np.float32
_F32_ONE, _F32_TWO, _INV_TEN = _F32(1), _F32(2), _F32(0.1)
_V_SCALE, _V_SHIFT = _F32(2 / 0.9), _F32(1.1 / 0.9)
_F32_INV_SQRT_PI = _F32(1 / math.sqrt(math.pi))


@jit(inline="always", error_model="numpy")
def _erfc_float32(z):
    """erfc(z) for a float32 z, branch-free: both pieces are computed, then one is selected."""
    a = abs(z)
    # |z| <= 1: erfc = 1 - erf(a)
    a2 = a * a
    series = _ERF_TAYLOR_32[0]
    for coefficient in _ERF_TAYLOR_32[1:]:
        series = series * a2 + coefficient
    near = _F32_ONE - a * series
    # |z| >= 1: erfc = exp(-a^2) / (sqrt(pi) a) * S(v)
    inv_a = _F32_ONE / (a if a > _F32_ONE else _F32_ONE)  # (a below 1 is not used here)
    v = (inv_a if inv_a > _INV_TEN else _INV_TEN) * _V_SCALE - _V_SHIFT  # a above 10: erfc is 0 anyway
    s = _ERFC_TAIL_32[0]
    for coefficient in _ERFC_TAIL_32[1:]:
        s = s * v + coefficient
    far = fast_exp(-a2) * (_F32_INV_SQRT_PI * inv_a) * s
    tail = near if a < _F32_ONE else far  # erfc(|z|)
    return tail if z >= 0 else _F32_TWO - tail  # erfc(-a) = 2 - erfc(a)


def normal_cdf(x):
    """Phi(x) = 0.5 * erfc(-x / sqrt(2)), the standard normal distribution function (float scalar)."""
    return 0.5 * math.erfc(-x * _SQRT_HALF)


def _normal_cdf_float32(x):
    """Phi(x) for float32 x, vectorisable (see ``_erfc_float32``)."""
    return _F32(0.5) * _erfc_float32(-x * _F32(_SQRT_HALF))


def _normal_cdf_float64(x):
    """Phi(x) for float64 x, with numba's scalar math.erfc (exact, but not vectorised)."""
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@overload(normal_cdf, jit_options={"fastmath": {"contract"}, "error_model": "numpy"}, inline="always")
def _normal_cdf_overload(x):
    """Inside numba, ``normal_cdf(x)`` compiles to the version for x's type."""
    if x == types.float32:
        return _normal_cdf_float32
    if x == types.float64:
        return _normal_cdf_float64
    return None


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba), over a range [start, stop) of the flattened array
# ---------------------------------------------------------------------------------------------------


@jit(error_model="numpy")
def _gelu_forward_range(x, y, approximate, start, stop):
    """y[i] = gelu(x[i]) for start <= i < stop of the 1-D arrays x, y."""
    one, two = x.dtype.type(1), x.dtype.type(2)
    scale, cubic = x.dtype.type(_TANH_SCALE), x.dtype.type(_TANH_CUBIC)
    if approximate:
        for i in range(start, stop):
            v = x[i]
            u = scale * (v + cubic * v * v * v)
            e = fast_exp(-two * abs(u))  # <= 1: no overflow
            # 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + e) for u >= 0, e / (1 + e) for u < 0
            sigmoid = (one if u >= 0 else e) / (one + e)
            y[i] = v * sigmoid
    else:
        for i in range(start, stop):
            y[i] = x[i] * normal_cdf(x[i])


@jit(parallel=True)
def _gelu_forward_parallel(x, y, approximate, n_blocks):
    """_gelu_forward_range over the whole array, one block per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, x.shape[0])
        _gelu_forward_range(x, y, approximate, start, stop)


@jit(error_model="numpy")
def _gelu_backward_range(x, g, dx, approximate, start, stop):
    """dx[i] = g[i] * gelu'(x[i]) for start <= i < stop of the 1-D arrays x, g, dx."""
    half, one, two, three = x.dtype.type(0.5), x.dtype.type(1), x.dtype.type(2), x.dtype.type(3)
    scale, cubic = x.dtype.type(_TANH_SCALE), x.dtype.type(_TANH_CUBIC)
    inv_sqrt_2pi = x.dtype.type(_INV_SQRT_2PI)
    if approximate:
        # tanh form: gelu = x s with s = 0.5 (1 + tanh u) = sigmoid(2u), ds/du = 2 s (1 - s), so
        # gelu' = s + 2 x s (1 - s) du/dx with du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        for i in range(start, stop):
            v = x[i]
            u = scale * (v + cubic * v * v * v)
            e = fast_exp(-two * abs(u))
            inv = one / (one + e)
            sigmoid = inv if u >= 0 else e * inv
            s_times_1_minus_s = e * inv * inv  # the same for both signs of u
            du_dx = scale * (one + three * cubic * v * v)
            dx[i] = g[i] * (sigmoid + two * v * s_times_1_minus_s * du_dx)
    else:
        # exact: gelu' = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        for i in range(start, stop):
            v = x[i]
            dx[i] = g[i] * (normal_cdf(v) + v * fast_exp(-half * v * v) * inv_sqrt_2pi)


@jit(parallel=True)
def _gelu_backward_parallel(x, g, dx, approximate, n_blocks):
    """_gelu_backward_range over the whole array, one block per thread."""
    for block in prange(n_blocks):
        start, stop = row_block(block, n_blocks, x.shape[0])
        _gelu_backward_range(x, g, dx, approximate, start, stop)


def _use_threads(flat):
    """True if the kernel should split ``flat`` over threads (float32 only, as in softmax.py)."""
    return flat.dtype == np.float32 and flat.size >= PARALLEL_MIN_ELEMENTS_EXP and numba.get_num_threads() > 1


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def gelu_forward_numba(x, approximate=False):
    """gelu(x), same shape and dtype as x (any shape); ``approximate`` selects the tanh form."""
    x, x_flat = _flat("gelu_forward", x)
    y = np.empty_like(x)
    y_flat = y.reshape(-1)
    if _use_threads(x_flat):
        _gelu_forward_parallel(x_flat, y_flat, bool(approximate), numba.get_num_threads())
    else:
        _gelu_forward_range(x_flat, y_flat, bool(approximate), 0, x_flat.size)
    return y


def gelu_backward_numba(x, g, approximate=False):
    """dx = g * gelu'(x) for x and the upstream gradient g of the same shape."""
    x, x_flat = _flat("gelu_backward", x)
    g, g_flat = _flat("gelu_backward", g)
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ValueError(f"gelu_backward: g {g.shape} {g.dtype} does not match x {x.shape} {x.dtype}")
    dx = np.empty_like(x)
    dx_flat = dx.reshape(-1)
    if _use_threads(x_flat):
        _gelu_backward_parallel(x_flat, g_flat, dx_flat, bool(approximate), numba.get_num_threads())
    else:
        _gelu_backward_range(x_flat, g_flat, dx_flat, bool(approximate), 0, x_flat.size)
    return dx
