"""Building blocks that LLVM can vectorise, shared by the row-wise kernels.

- ``fast_exp(x)``: ``exp`` written out as arithmetic, so that LLVM can run it a whole SIMD
  register at a time;
- ``simd_add(total, value)`` and ``simd_max(best, value)``: one step of a running sum / maximum
  that LLVM is allowed to split into SIMD partial results;
- ``float_from_bits(bits)``: an int32 (int64) reinterpreted as a float32 (float64).

Why they exist: on a CPU without Intel's SVML library, numba turns ``math.exp`` into a call to the
C library, one number at a time (several times slower than numpy's SIMD exp). And LLVM never
vectorises a loop like ``s += a[j]`` on its own, because adding in a different order gives a
(slightly) different float result; it must be told that the order does not matter. We tell it for
those reductions only, not for a whole kernel, so careful expressions such as ``(x - max) - lse``
keep the exact order written.

Nothing here depends on the vector width: LLVM picks it for the CPU (4 floats on NEON and SSE,
8 on AVX2, 16 on AVX-512).
"""

import math

import numpy as np

from ._jit import numba  # noqa: F401  (first: it sets LLVM options before numba is imported)

from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic, overload  # noqa: E402


@intrinsic
def simd_add(typingctx, total, value):
    """``total + value``, marked so that LLVM may regroup a running sum into SIMD partial sums.

    In a loop ``s = simd_add(s, a[j])`` LLVM keeps a SIMD register (or a few) of partial sums and
    adds them up at the end. The order of additions changes, but it is fixed by the code and the row length, so the
    result is the same on every run.
    """
    if not (isinstance(total, types.Float) and total == value):
        return None

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc", "contract"))

    return total(total, value), codegen


@intrinsic
def simd_max(typingctx, best, value):
    """``max(best, value)`` for NaN-free values, in a form LLVM turns into a SIMD running maximum.

    It is LLVM's ``maxnum`` with the promise "no NaN, sign of zero does not matter". With a NaN in
    the row the maximum is unspecified; our kernels still return NaN for such a row, because the NaN
    also reaches the exponentials and sums.
    """
    if not (isinstance(best, types.Float) and best == value):
        return None

    def codegen(context, builder, signature, args):
        float_type = args[0].type
        maxnum = builder.module.declare_intrinsic(
            "llvm.maxnum", [float_type], ir.FunctionType(float_type, [float_type, float_type])
        )
        return builder.call(maxnum, args, fastmath=("nnan", "nsz"))

    return best(best, value), codegen


def _bitcast(same_bits):
    """An intrinsic that reinterprets the bits of a number as another type of the same size, as
    `same_bits` maps them (no conversion happens)."""

    def typer(typingctx, value):
        result = same_bits.get(value)
        if result is None:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(signature.return_type))

        return result(value), codegen

    return intrinsic(typer)


# the bits of a float32 as an int32 (float64 as int64), and back
bits_of_float = _bitcast({types.float32: types.int32, types.float64: types.int64})
float_from_bits = _bitcast({types.int32: types.float32, types.int64: types.float64})


def fast_exp(x):
    """``exp(x)`` for a float32 or float64 scalar, as plain arithmetic that LLVM can vectorise.

    Method: write x = k ln2 + r with k an integer and |r| <= ln2/2, so exp(x) = 2^k exp(r).
    exp(r) is a Taylor polynomial (degree 7 in float32, 13 in float64: both within about one unit
    in the last place), and 2^k is built directly from its exponent bits. ``k ln2`` is subtracted in
    two parts (Cody-Waite): ``LN2_HI`` has few significant bits, so ``k * LN2_HI`` is exact.
    Results that would be subnormal are flushed to 0 (below x = -87 in float32, -708 in float64),
    results above x = 88 (float32) or 709 (float64) are inf, exp(-inf) = 0 and exp(NaN) = NaN.
    Outside numba this is just ``math.exp``.
    """
    return math.exp(x)


LOG2E = 1.4426950408889634  # 1 / ln 2
LN2_HI_32 = np.float32(0.693359375)  # ln 2 rounded to 9 significant bits (355 / 512)
LN2_LO_32 = np.float32(-2.1219444005469057e-04)  # ln 2 - LN2_HI_32
LN2_HI_64 = 0.6931471803691238  # ln 2 rounded to 32 significant bits
LN2_LO_64 = 1.9082149292705877e-10  # ln 2 - LN2_HI_64
# Between MIN and MAX, 2^k is a normal float; outside, the result is 0 or inf.
_EXP_MIN_32, _EXP_MAX_32 = np.float32(-87.0), np.float32(88.0)
_EXP_MIN_64, _EXP_MAX_64 = -708.0, 709.0
# 1/n! for the Taylor series, highest power first (Horner's rule)
TAYLOR_32 = tuple(np.float32(1 / math.factorial(n)) for n in range(7, -1, -1))
TAYLOR_64 = tuple(1 / math.factorial(n) for n in range(13, -1, -1))
F32_ZERO, F32_INF, F32_LOG2E = np.float32(0.0), np.float32(np.inf), np.float32(LOG2E)
# Rounding to an integer without a float -> int conversion (which LLVM does one number at a time
# before AVX-512): adding 1.5 * 2^23 leaves round(y) in the low bits of the float32 sum, so
# bits(y + SHIFTER) - bits(SHIFTER) = round(y), and shifting that into the exponent field gives 2^k.
F32_SHIFTER = np.float32(1.5 * 2**23)
SHIFTER_BITS_MINUS_BIAS = int(np.float32(1.5 * 2**23).view(np.int32)) - 127  # 127: float32's exponent bias


# Out-of-range x gives a meaningless k and 2^k below, but the last three lines replace those
# results, so no input clamping is needed (each line is one SIMD compare-and-select).
def _exp_float32(x):
    """fast_exp for float32 (see ``fast_exp``)."""
    shifted = x * F32_LOG2E + F32_SHIFTER  # k = round(x / ln2), in the low bits (see F32_SHIFTER)
    k = shifted - F32_SHIFTER
    r = (x - k * LN2_HI_32) - k * LN2_LO_32
    poly = TAYLOR_32[0]
    for coefficient in TAYLOR_32[1:]:  # unrolled by numba: the tuple's length is known
        poly = poly * r + coefficient
    two_to_k = float_from_bits(np.int32((bits_of_float(shifted) - SHIFTER_BITS_MINUS_BIAS) << 23))
    result = poly * two_to_k
    result = F32_ZERO if x < _EXP_MIN_32 else result
    result = F32_INF if x > _EXP_MAX_32 else result
    return x if x != x else result  # NaN in, NaN out


def _exp_float64(x):
    """fast_exp for float64 (see ``fast_exp``)."""
    k = np.rint(x * LOG2E)
    r = (x - k * LN2_HI_64) - k * LN2_LO_64
    poly = TAYLOR_64[0]
    for coefficient in TAYLOR_64[1:]:
        poly = poly * r + coefficient
    two_to_k = float_from_bits((np.int64(k) + 1023) << 52)  # float64: 11 exponent bits
    result = poly * two_to_k
    result = 0.0 if x < _EXP_MIN_64 else result
    result = np.inf if x > _EXP_MAX_64 else result
    return x if x != x else result


@overload(fast_exp, jit_options={"fastmath": {"contract"}, "error_model": "numpy"})
def _fast_exp_overload(x):
    """Inside numba, ``fast_exp(x)`` compiles to the version for x's type."""
    if x == types.float32:
        return _exp_float32
    if x == types.float64:
        return _exp_float64
    return None
