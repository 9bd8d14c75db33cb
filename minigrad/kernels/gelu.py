"""GELU, elementwise on an array of any shape, forward and backward, exact or tanh-approximated.

    exact:        gelu(x) = x * Phi(x),  Phi(x) = 0.5 * (1 + erf(x / sqrt(2))) = 0.5 * erfc(-x / sqrt(2))
    approximate:  gelu(x) = 0.5 * x * (1 + tanh(u)),  u = sqrt(2 / pi) * (x + 0.044715 x^3)

The compiled tanh form uses 0.5 * (1 + tanh(u)) = sigmoid(2u), computed from exp(-2|u|) so that
it keeps full relative precision for x far below 0 (where 1 + tanh(u) would cancel).

Phi is the standard normal distribution function and phi(x) = exp(-x^2 / 2) / sqrt(2 pi) its density.
We compute Phi as 0.5 * erfc(-x / sqrt(2)), not 0.5 * (1 + erf(...)): for x far below 0 the sum
1 + erf cancels to 0, while erfc keeps the tiny tail (so the result has full relative precision).

numpy has no erf or erfc, so the numpy twin applies ``math.erfc`` number by number (readable, slow),
in float64 for both dtypes. In the compiled kernels, float64 uses ``math.erfc`` too (exact to ~1e-16,
for gradient checks); float32, the type used for training, computes Phi(x) and exp(-x^2 / 2)
together in ``_cdf_and_gauss_float32`` below: plain arithmetic that LLVM runs a whole SIMD
register at a time (about ten times faster than the float64 kernels, which call scalar
``math.erfc``), with a relative error below 4 units of float32 epsilon (3.2 measured) for every x,
the far negative tail included.
"""

import math

import numpy as np

from ._jit import jit  # first: it sets LLVM options before numba is imported

from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic, overload  # noqa: E402

from ._parallel import parallel_for  # noqa: E402
from ._rows import PARALLEL_MIN_ELEMENTS_EXP  # noqa: E402
from ._simd import F32_LOG2E, F32_SHIFTER, LN2_HI_32, LN2_LO_32, SHIFTER_BITS_MINUS_BIAS, TAYLOR_32  # noqa: E402
from ._simd import bits_of_float, fast_exp, float_from_bits  # noqa: E402

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
    """Phi(x) = 0.5 * erfc(-x / sqrt(2)) for a float64 array x."""
    return 0.5 * np.asarray(_erfc_elementwise(-x * _SQRT_HALF), dtype=np.float64)  # (from objects)


# The twins compute in float64 and round once to x's dtype: in float32 they are then a reference
# (within one rounding of the exact value) for the compiled kernels.


def gelu_forward_numpy(x, approximate=False):
    """gelu(x), same shape and dtype as x (any shape); ``approximate`` selects the tanh form."""
    x = np.asarray(x)
    x64 = x.astype(np.float64)
    if approximate:
        u = _TANH_SCALE * (x64 + _TANH_CUBIC * x64**3)
        y = 0.5 * x64 * (1 + np.tanh(u))
    else:
        y = x64 * _normal_cdf_numpy(x64)
    return np.asarray(y, dtype=x.dtype)


def gelu_backward_numpy(x, g, approximate=False):
    """dx = g * gelu'(x) for x and the upstream gradient g of the same shape."""
    x = np.asarray(x)
    x64, g64 = x.astype(np.float64), np.asarray(g, dtype=np.float64)
    if approximate:
        # tanh form: d/dx [0.5 x (1 + tanh u)] = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
        # du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        t = np.tanh(_TANH_SCALE * (x64 + _TANH_CUBIC * x64**3))
        du_dx = _TANH_SCALE * (1 + 3 * _TANH_CUBIC * x64 * x64)
        dx = g64 * (0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * du_dx)
    else:
        # exact: d/dx [x Phi(x)] = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        dx = g64 * (_normal_cdf_numpy(x64) + x64 * np.exp(-0.5 * x64 * x64) * _INV_SQRT_2PI)
    return np.asarray(dx, dtype=x.dtype)


# ---------------------------------------------------------------------------------------------------
# Building blocks for the compiled kernels
#
# float32 (training) computes Phi(x) and exp(-x^2 / 2) together, with plain arithmetic that LLVM runs
# a whole SIMD register at a time: no branch, no call, one division. float64 (gradient checks) keeps numba's
# scalar ``math.erfc``, exact to about 1e-16.
# ---------------------------------------------------------------------------------------------------


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: one instruction on a CPU with FMA)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        float_type = args[0].type
        fma = builder.module.declare_intrinsic(
            "llvm.fma", [float_type], ir.FunctionType(float_type, [float_type] * 3)
        )
        return builder.call(fma, args)

    return a(a, b, c), codegen


_F32 = np.float32
_F32_ZERO, _F32_ONE, _F32_MINUS_HALF = _F32(0), _F32(1), _F32(-0.5)
_EXP_FLUSH_32 = _F32(-87.0)  # below it exp is subnormal: 0, as in fast_exp

# Phi(-a) = F(a) exp(-a^2 / 2) for a = |x|, where F(a) = Phi(-a) exp(a^2 / 2) = erfcx(a / sqrt(2)) / 2
# is smooth and slowly varying: 0.5 at a = 0, about 1 / (a sqrt(2 pi)) for large a. As in the classic
# erfc approximations (Abramowitz & Stegun 7.1.26, Numerical Recipes' erfcc), we substitute
# t = 1 / (1 + c a), which maps a in [0, inf) onto (0, 1], and write F as a polynomial in t:
#     F(a) ~ sum_k C_k t^k,   c = 0.4,   degree 10.
# The coefficients were fitted here (not taken from a table): weighted least squares for a small
# *relative* error at 4000 Chebyshev points of t in [1 / (1 + 0.4 * 13.5), 1], against
# scipy.special.erfcx, in the Chebyshev basis, then converted to powers of t. Fit error 2e-9;
# evaluated in float32 (Horner), the error is below 2.3 units of float32 epsilon for every a (most
# of it from the rounding of t). Only a <= 13.5 matters: beyond a = 13.2, exp(-a^2 / 2) is below
# the float32 normal range and Phi(-a) is taken as 0.
_CDF_T_SCALE = _F32(0.4)
_CDF_A_MAX = _F32(13.5)
_CDF_TAIL_32 = tuple(  # C_10, ..., C_0 (highest power first)
    _F32(c)
    for c in (
        0.028612468,
        -0.1565162,
        0.33243257,
        -0.3038746,
        0.057114273,
        0.009657229,
        0.07714904,
        0.13674426,
        0.15905608,
        0.15962683,
        -1.9363022e-06,
    )
)


@jit(inline="always", error_model="numpy")
def _exp_hi_lo_float32(hi, lo):
    """exp(hi + lo) for float32 hi in [-100, 0] (not NaN) and |lo| < 1e-5; 0 for hi < -87 (inlined).

    The method of ``fast_exp`` (_simd.py): hi + lo = k ln2 + r, exp = 2^k exp(r), with the small
    ``lo`` added to r, where it is not lost to rounding. GELU needs this: with hi + lo = -x^2 / 2
    exactly (x^2 split in two floats by an fma), a single float32 argument would be rounded by up to
    4e-6 at x = -13, an error of 4e-6 in exp (about 30 units of float32 epsilon).
    """
    shifted = hi * F32_LOG2E + F32_SHIFTER  # k = round(hi / ln2), as in fast_exp
    k = shifted - F32_SHIFTER
    r = (hi - k * LN2_HI_32) - k * LN2_LO_32 + lo  # (hi - k * LN2_HI_32 is exact)
    poly = TAYLOR_32[0]
    for coefficient in TAYLOR_32[1:]:
        poly = poly * r + coefficient
    two_to_k = float_from_bits(np.int32((bits_of_float(shifted) - SHIFTER_BITS_MINUS_BIAS) << 23))
    result = poly * two_to_k
    return _F32_ZERO if hi < _EXP_FLUSH_32 else result


def cdf_and_gauss(x):
    """(Phi(x), exp(-x^2 / 2)) for a float scalar x; phi(x) = exp(-x^2 / 2) / sqrt(2 pi).

    In Python this is the plain formula; inside numba it compiles to the version for x's type.
    """
    return 0.5 * math.erfc(-x * _SQRT_HALF), math.exp(-0.5 * x * x)


def _cdf_and_gauss_float32(x):
    """cdf_and_gauss for float32: branch-free and vectorisable, within a few float32 ulp.

    Phi(x) = Phi(-|x|) for x < 0 and 1 - Phi(-|x|) for x >= 0 (both computed, one selected), with
    Phi(-|x|) = F(|x|) exp(-x^2 / 2): a small relative error even far in the negative tail, where
    1 + erf(x / sqrt(2)) would cancel to 0. The exponential is shared with the density.
    NaN: the results are not NaN, but the kernels multiply them by x, which is.
    """
    a = abs(x)
    a = a if a < _CDF_A_MAX else _CDF_A_MAX  # (NaN also becomes _CDF_A_MAX)
    t = _F32_ONE / (_F32_ONE + _CDF_T_SCALE * a)
    f = _CDF_TAIL_32[0]
    for coefficient in _CDF_TAIL_32[1:]:  # unrolled by numba: the tuple's length is known
        f = f * t + coefficient
    square = a * a
    gauss = _exp_hi_lo_float32(_F32_MINUS_HALF * square, _F32_MINUS_HALF * _fma(a, a, -square))
    tail = f * gauss  # Phi(-|x|)
    return (tail if x < _F32_ZERO else _F32_ONE - tail), gauss


def _cdf_and_gauss_float64(x):
    """cdf_and_gauss for float64, with numba's scalar math.erfc (exact, but not vectorised)."""
    return 0.5 * math.erfc(-x * _SQRT_HALF), fast_exp(-0.5 * x * x)


@overload(cdf_and_gauss, jit_options={"fastmath": {"contract"}, "error_model": "numpy"}, inline="always")
def _cdf_and_gauss_overload(x):
    """Inside numba, ``cdf_and_gauss(x)`` compiles to the version for x's type."""
    if x == types.float32:
        return _cdf_and_gauss_float32
    if x == types.float64:
        return _cdf_and_gauss_float64
    return None


# ---------------------------------------------------------------------------------------------------
# Compiled kernels (numba), over a range [start, stop) of the flattened array
# ---------------------------------------------------------------------------------------------------


@jit(error_model="numpy")
def _gelu_forward_range(x, y, approximate, start, stop):
    """y[i] = gelu(x[i]) for start <= i < stop of the 1-D arrays x, y."""
    # Loops run over views from index 0: LLVM then knows that no index is negative (numba wraps
    # negative indices around), and loads 16 consecutive numbers instead of gathering them.
    x, y = x[start:stop], y[start:stop]
    one, two = x.dtype.type(1), x.dtype.type(2)
    scale, cubic = x.dtype.type(_TANH_SCALE), x.dtype.type(_TANH_CUBIC)
    if approximate:
        for i in range(x.shape[0]):
            v = x[i]
            u = scale * (v + cubic * v * v * v)
            e = fast_exp(-two * abs(u))  # <= 1: no overflow
            # 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + e) for u >= 0, e / (1 + e) for u < 0
            sigmoid = (one if u >= 0 else e) / (one + e)
            y[i] = v * sigmoid
    else:
        for i in range(x.shape[0]):
            v = x[i]
            cdf, _ = cdf_and_gauss(v)
            y[i] = v * cdf


@jit(error_model="numpy")
def _gelu_backward_range(x, g, dx, approximate, start, stop):
    """dx[i] = g[i] * gelu'(x[i]) for start <= i < stop of the 1-D arrays x, g, dx."""
    x, g, dx = x[start:stop], g[start:stop], dx[start:stop]  # (from index 0: see the forward)
    one, two, three = x.dtype.type(1), x.dtype.type(2), x.dtype.type(3)
    scale, cubic = x.dtype.type(_TANH_SCALE), x.dtype.type(_TANH_CUBIC)
    inv_sqrt_2pi = x.dtype.type(_INV_SQRT_2PI)
    if approximate:
        # tanh form: gelu = x s with s = 0.5 (1 + tanh u) = sigmoid(2u), ds/du = 2 s (1 - s), so
        # gelu' = s + 2 x s (1 - s) du/dx with du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        for i in range(x.shape[0]):
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
        for i in range(x.shape[0]):
            v = x[i]
            cdf, gauss = cdf_and_gauss(v)
            dx[i] = g[i] * (cdf + v * gauss * inv_sqrt_2pi)


def _threads(flat):
    """How many threads may share ``flat``: several for a large float32 array, else 1."""
    return None if flat.dtype == np.float32 and flat.size >= PARALLEL_MIN_ELEMENTS_EXP else 1


# ---------------------------------------------------------------------------------------------------
# Wrappers (numba)
# ---------------------------------------------------------------------------------------------------


def gelu_forward_numba(x, approximate=False):
    """gelu(x), same shape and dtype as x (any shape); ``approximate`` selects the tanh form."""
    x, x_flat = _flat("gelu_forward", x)
    y = np.empty_like(x)
    y_flat = y.reshape(-1)
    parallel_for(_gelu_forward_range, x_flat.size, x_flat, y_flat, bool(approximate), threads=_threads(x_flat))
    return y


def gelu_backward_numba(x, g, approximate=False):
    """dx = g * gelu'(x) for x and the upstream gradient g of the same shape."""
    x, x_flat = _flat("gelu_backward", x)
    g, g_flat = _flat("gelu_backward", g)
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ValueError(f"gelu_backward: g {g.shape} {g.dtype} does not match x {x.shape} {x.dtype}")
    dx = np.empty_like(x)
    dx_flat = dx.reshape(-1)
    parallel_for(_gelu_backward_range, x_flat.size, x_flat, g_flat, dx_flat, bool(approximate), threads=_threads(x_flat))
    return dx
