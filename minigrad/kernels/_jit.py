"""The one place that imports numba and sets how it compiles.

Two LLVM settings are read when numba is first imported, so they are set here, before the import:
- ``NUMBA_SLP_VECTORIZE=1`` lets LLVM pack scalar accumulators into SIMD registers;
- on CPUs with AVX-512, LLVM prefers 256-bit vectors; adding ``-prefer-256-bit`` to the host's
  feature list lets it use full 512-bit registers (when compiling for the host: with
  ``NUMBA_CPU_NAME=haswell``, say, LLVM compiles for that CPU's features, e.g. AVX2 on any host).
Both are defaults only: a value already in the environment wins.

Every kernel is compiled with ``cache=True``: the second run of a program loads machine code
instead of compiling again. numba keeps it in ``__pycache__`` beside the kernel files when that
folder is writable, else in a per-user folder (``~/.cache/numba`` on Linux), so every install is
warm on its second run. ``MINIGRAD_CACHE_DIR`` (or numba's ``NUMBA_CACHE_DIR``) picks another.

numba checks a cached kernel against its own source file only, not against the helpers it inlines
from other files (``_simd.py``, ``matmul.py``'s tile). So a stamp of all the kernel files is kept
beside the cache; when they change (an upgrade, an edit), the kernels' cache is cleared first
(``_clear_stale_cache``).

Compiling takes seconds, once per CPU and version. When a kernel takes more than a second, one line
on stderr says what is happening (``MINIGRAD_QUIET_COMPILE=1`` silences it).
"""
import os
import sys
import threading
import time


def _configure_environment():
    os.environ.setdefault("NUMBA_SLP_VECTORIZE", "1")
    if os.environ.get("MINIGRAD_CACHE_DIR"):
        os.environ.setdefault("NUMBA_CACHE_DIR", os.environ["MINIGRAD_CACHE_DIR"])
    # NUMBA_CPU_NAME=haswell, say, without NUMBA_CPU_FEATURES: numba would add the *host's* features
    # to that name (AVX-512 code on an AVX-512 host); an empty list makes LLVM use the named CPU's own
    if "NUMBA_CPU_FEATURES" not in os.environ and os.environ.get("NUMBA_CPU_NAME", "host") not in ("", "host"):
        os.environ["NUMBA_CPU_FEATURES"] = ""
    if "NUMBA_CPU_FEATURES" not in os.environ and os.environ.get("NUMBA_CPU_NAME", "host") in ("", "host"):
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

import llvmlite.binding as llvm  # noqa: E402
import numba  # noqa: E402
from numba.core import event  # noqa: E402

FASTMATH = {"contract"}  # fused multiply-add, but no reordering of sums
# How small helpers are compiled (``jit(inline=INLINE)``; matmul.py's docstring says why): copied
# into their callers with LLVM 15 and newer, where that made a first start much faster (LLVM 22,
# numba 0.68: 24-26 -> 15 s of compiling for a GPT step); compiled on their own with LLVM 14 (numba
# 0.58, the floor of setup.cfg), whose optimizer took far longer over the larger callers (a LeNet's
# first step 51 -> 94 s, an LSTM's 60 -> 76 s, attention's backward 8 -> 24 s). (Measured on a
# Zen 3 with LLVM 14 and 22; the versions between, not measured, are counted with the newer.)
INLINE = "always" if llvm.llvm_version_info[0] >= 15 else "never"


def jit(*args, parallel=False, **kwargs):
    """``numba.njit`` with the project's defaults: cached, nogil, fused multiply-add."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    kwargs.setdefault("fastmath", FASTMATH)
    return numba.njit(*args, parallel=parallel, **kwargs)


class typed_jit:
    """Decorator: compile a function for one fixed signature per dtype, when that dtype first comes.

    ``@typed_jit(signature_of)`` where ``signature_of(numba_dtype)`` gives the signature;
    ``f.for_dtype(np.float32)`` is then numba's compiled function for it. One version per dtype,
    whatever the layouts of the arrays passed (numba converts them to the signature's types), and
    none for a dtype never used: importing the kernel file compiles nothing.
    """

    def __init__(self, signature_of, **options):
        self.signature_of, self.options, self.compiled = signature_of, options, {}

    def __call__(self, py_func):
        self.py_func = py_func
        self.__doc__, self.__name__ = py_func.__doc__, py_func.__name__
        return self

    def for_dtype(self, dtype):
        kernel = self.compiled.get(dtype)
        if kernel is None:
            signature = self.signature_of(numba.from_dtype(dtype))
            kernel = self.compiled[dtype] = jit([signature], **self.options)(self.py_func)
        return kernel


def target_cpu_name():
    """The CPU LLVM compiles for (``NUMBA_CPU_NAME``, else the host's), e.g. "znver3"."""
    import llvmlite.binding as llvm

    return os.environ.get("NUMBA_CPU_NAME") or llvm.get_host_cpu_name()


def cache_dir():
    """Where numba keeps the compiled kernels (see the module docstring)."""
    if numba.config.CACHE_DIR:
        return numba.config.CACHE_DIR
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    try:
        os.makedirs(here, exist_ok=True)
        if os.access(here, os.W_OK):
            return here
    except OSError:
        pass
    from numba.misc.appdirs import AppDirs

    return AppDirs("numba", appauthor=False).user_cache_dir


def _probe():
    """A function that lives beside the kernels, to ask numba where it caches them."""
    return 0


def kernel_cache_path():
    """The folder where numba keeps the kernels' cache files (``*.nbi`` indexes), or None."""
    try:
        return numba.njit(cache=True)(_probe)._cache._cache_path  # (creating it compiles nothing)
    except Exception:  # pragma: no cover - numba's private layout changed
        return None


def _clear_stale_cache():
    """Remove the kernels' cache files if any kernel file changed since they were written."""
    import glob
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    sources = sorted(glob.glob(os.path.join(here, "*.py")))
    digest = hashlib.sha1()
    for source in sources:
        with open(source, "rb") as f:
            digest.update(f.read())
    stamp = digest.hexdigest()
    path = kernel_cache_path()
    if path is None:
        return
    stamp_file = os.path.join(path, "minigrad-kernels.stamp")
    try:
        with open(stamp_file) as f:
            if f.read().strip() == stamp:
                return
    except OSError:
        pass
    try:
        for source in sources:
            stem = os.path.splitext(os.path.basename(source))[0]
            for cached in glob.glob(os.path.join(path, f"{stem}.*.nb[ic]")):
                os.remove(cached)
        os.makedirs(path, exist_ok=True)
        with open(stamp_file, "w") as f:
            f.write(stamp + "\n")
    except OSError:  # a read-only cache: numba will not write there either
        pass


class _CompileNotice(event.Listener):
    """Says on stderr, once per kernel, that a compile is under way, if it lasts over a second.

    numba reports each function it compiles, with the functions that one calls nested inside; only
    the outermost is named. The line is printed from a timer while the compile runs, so a learner
    is not left watching a progress bar that seems frozen.
    """

    def __init__(self, delay=1.0):
        self.delay = delay
        self.depth = 0
        self.timer = None
        self.lock = threading.RLock()  # (re-entrant: see _warm._fork_locks)
        self.shown_header = False

    def on_start(self, e):
        with self.lock:
            self.depth += 1
            if self.depth == 1 and not os.environ.get("MINIGRAD_QUIET_COMPILE"):
                name = getattr(getattr(e.data.get("dispatcher"), "py_func", None), "__module__", "") or ""
                self.timer = threading.Timer(self.delay, self._say, (name.rsplit(".", 1)[-1], time.perf_counter()))
                self.timer.daemon = True
                self.timer.start()

    def on_end(self, e):
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def _say(self, kernel_file, started):
        if not self.shown_header:
            self.shown_header = True
            print(f"minigrad: compiling kernels for this CPU ({target_cpu_name()}); once: later runs load "
                  f"them from {cache_dir()}", file=sys.stderr, flush=True)
        print(f"minigrad: compiling {kernel_file} ...", file=sys.stderr, flush=True)


compile_notice = _CompileNotice()
event.register("numba:compile", compile_notice)
_clear_stale_cache()
