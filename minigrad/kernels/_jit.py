"""The one place that imports numba and sets how it compiles.

Two LLVM settings are read when numba is first imported, so they are set here, before the import:
- ``NUMBA_SLP_VECTORIZE=1`` lets LLVM pack scalar accumulators into SIMD registers;
- on CPUs with AVX-512, LLVM prefers 256-bit vectors; adding ``-prefer-256-bit`` to the host's
  feature list lets it use full 512-bit registers.
Both are defaults only: a value already in the environment wins.

Every kernel is compiled with ``cache=True`` so the second run of a program loads machine code from
``__pycache__`` instead of compiling again.
"""
import os
import sys


def _configure_environment():
    os.environ.setdefault("NUMBA_SLP_VECTORIZE", "1")
    if "NUMBA_CPU_FEATURES" not in os.environ:
        try:
            import llvmlite.binding as llvm

            features = llvm.get_host_cpu_features().flatten()
        except Exception:  # pragma: no cover - depends on the llvmlite build
            features = ""
        if "+avx512f" in features.split(","):
            os.environ["NUMBA_CPU_FEATURES"] = features + ",-prefer-256-bit"
    if "numba" in sys.modules:
        # numba was imported first (by the program or another library): have it read the settings
        # again. They apply as long as numba has not compiled anything for the CPU yet.
        from numba.core import config

        config.reload_config()


_configure_environment()

import numba  # noqa: E402
from numba import prange  # noqa: E402,F401

FASTMATH = {"contract"}  # fused multiply-add, but no reordering of sums


def jit(*args, parallel=False, **kwargs):
    """``numba.njit`` with the project's defaults: cached, nogil, fused multiply-add."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    kwargs.setdefault("fastmath", FASTMATH)
    return numba.njit(*args, parallel=parallel, **kwargs)


def n_threads():
    """How many parts a parallel kernel cuts its work into: numba's thread count.

    This reads the configured count rather than calling ``numba.get_num_threads()``, which costs
    about 1.5 us per call here (it also makes the next parallel region slower to start): a tenth of
    a small softmax. After ``numba.set_num_threads(1)`` the parts simply run one after the other.
    """
    return numba.config.NUMBA_NUM_THREADS
