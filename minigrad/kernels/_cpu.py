"""What the CPU offers the compiled kernels, and the matmul register tile chosen for it.

The matmul kernel keeps an ``MR x NR`` tile of the output in SIMD registers while it runs over
``k`` (see matmul.py). The tile must fit the register file, or LLVM spills it to memory on every
step. Per step of ``k``, the loop holds at the same time:

    MR * NR / W   accumulators          (W = floats per SIMD register)
    NR / W        vectors of b
    MR or 1       broadcast numbers of a: MR when the loop is written as scalar loops ("loops":
                  LLVM's vectorizer loads all of them before the multiply-adds), 1 when it is
                  written as explicit vector code ("vector": one broadcast, used, then the next)

and that sum must not exceed the number of registers. So, per family of CPU:

    family    registers x floats   tile     kernel   registers used
    AVX-512   32 x 16              8 x 32   loops    16 + 2 + 8 = 26
    AVX2      16 x 8               6 x 16   vector   12 + 2 + 1 = 15
    NEON      32 x 4               8 x 8    loops    16 + 2 + 8 = 26
    SSE       16 x 4               4 x 8    loops     8 + 2 + 4 = 14

On AVX2 (two FMA units, 4 cycles from an FMA to its result) at least 8 independent accumulators
are needed to keep both units busy, and 12 leave room; as scalar loops 6 x 16 would need 20
registers, so there AVX2 took 4 x 16 (8 accumulators) until the vector kernel.

The family is read from the features LLVM compiles for: numba's ``NUMBA_CPU_NAME`` /
``NUMBA_CPU_FEATURES`` when set, else the host's. ``MINIGRAD_MATMUL_TILE=MRxNR`` (e.g. ``6x16``)
forces a tile and ``MINIGRAD_MATMUL_KERNEL=vector`` or ``loops`` a kernel, for tests and experiments;
numba's cache does not know which tile or kernel its machine code was built for, so a forced one is
compiled afresh in every process instead of cached.
"""
import os
import platform

TILES = {"avx512": (8, 32), "avx2": (6, 16), "neon": (8, 8), "sse": (4, 8)}
KERNEL_OF = {"avx512": "loops", "avx2": "vector", "neon": "loops", "sse": "loops"}  # how the tile is written


# x86 CPU names LLVM knows, by the widest SIMD family their default features include: what
# ``NUMBA_CPU_NAME=haswell`` (say) compiles for when ``NUMBA_CPU_FEATURES`` is not given.
_AVX512_NAMES = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake", "tigerlake",
                 "rocketlake", "sapphirerapids", "graniterapids", "emeraldrapids", "diamondrapids",
                 "knl", "knm", "znver4", "znver5", "x86-64-v4")
_AVX2_NAMES = ("haswell", "broadwell", "skylake", "kabylake", "coffeelake", "cometlake", "alderlake",
               "raptorlake", "meteorlake", "arrowlake", "lunarlake", "pantherlake", "gracemont",
               "znver1", "znver2", "znver3", "bdver4", "x86-64-v3")


def _features_of_cpu_name(name):
    """The SIMD features a named CPU implies, for ``NUMBA_CPU_NAME`` without ``NUMBA_CPU_FEATURES``."""
    name = name.lower()
    if name.startswith(_AVX512_NAMES):
        return {"avx512f", "avx2", "fma"}
    if name.startswith(_AVX2_NAMES):
        return {"avx2", "fma"}
    if name.startswith(("apple", "cortex", "neoverse", "generic-arm", "armv8", "aarch64")):
        return {"neon"}
    return {"sse2"}


def target_features():
    """The CPU features LLVM compiles for, as a set of names ("avx2", "fma", ...)."""
    listed = os.environ.get("NUMBA_CPU_FEATURES", "")
    if listed.strip():
        return {f[1:] for f in listed.split(",") if f.startswith("+")}
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    if name and name != "host":  # numba then compiles for that CPU's own default features
        return _features_of_cpu_name(name)
    try:
        import llvmlite.binding as llvm

        return {name for name, on in llvm.get_host_cpu_features().items() if on}
    except Exception:  # pragma: no cover - a platform where llvmlite cannot read the features
        return set()


def simd_family(features=None, machine=None):
    """"avx512", "avx2", "neon" or "sse": the widest SIMD family the compiled code may use."""
    features = target_features() if features is None else features
    machine = (machine or platform.machine()).lower()
    if machine in ("arm64", "aarch64") or "neon" in features:
        return "neon"
    if "avx512f" in features:
        return "avx512"
    if "avx2" in features and "fma" in features:
        return "avx2"
    return "sse"


def parse_tile(text):
    """"4x16" -> (4, 16), checked: rows 1..8 (matmul.py writes 8 out), columns a multiple of 4 up to 64."""
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"MINIGRAD_MATMUL_TILE={text!r}: expected ROWSxCOLUMNS, e.g. 4x16") from None
    if not (1 <= rows <= 8 and 4 <= cols <= 64 and cols % 4 == 0):
        raise ValueError(f"MINIGRAD_MATMUL_TILE={text!r}: rows must be 1-8, columns a multiple of 4 up to 64")
    return rows, cols


VECTOR_BYTES = {"avx512": 64, "avx2": 32, "neon": 16, "sse": 16}  # bytes in one SIMD register
KERNELS = ("vector", "loops")  # how the tile's k loop is written (matmul.py: _fma_tile, or scalar loops)


def vector_bytes():
    """Bytes in one SIMD register of the CPU compiled for: the width of the tile's vectors."""
    return VECTOR_BYTES[simd_family()]


def vector_tile():
    """True: the tile's k loop is explicit vector code; False: scalar loops that LLVM vectorises.
    ``MINIGRAD_MATMUL_KERNEL=vector`` or ``=loops`` forces one (not cached, like a forced tile)."""
    forced = os.environ.get("MINIGRAD_MATMUL_KERNEL", "").strip().lower()
    if forced and forced not in KERNELS:
        raise ValueError(f"MINIGRAD_MATMUL_KERNEL={forced!r}: expected one of {', '.join(KERNELS)}")
    return (forced or KERNEL_OF[simd_family()]) == "vector"


def kernel_forced():
    """True if MINIGRAD_MATMUL_KERNEL chose the kernel (then numba must not cache it)."""
    return bool(os.environ.get("MINIGRAD_MATMUL_KERNEL", "").strip())


def choose_tile():
    """(MR, NR, forced): the tile for this CPU, or the one MINIGRAD_MATMUL_TILE asks for."""
    forced = os.environ.get("MINIGRAD_MATMUL_TILE", "").strip()
    if forced:
        return (*parse_tile(forced), True)
    return (*TILES[simd_family()], False)
