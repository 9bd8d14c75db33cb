"""Thread counts of every library the benchmark runs: minigrad, PyTorch and numpy's BLAS.

minigrad's own API is ``minigrad.get_num_threads()`` / ``minigrad.set_num_threads(n)`` and
``minigrad.kernels.describe()``. Older versions of minigrad ran their kernels on numba's parallel
threads and had none of these, so every function here falls back to numba's when they are missing.
"""
import ctypes
from contextlib import contextmanager


def _minigrad_function(name):
    """minigrad.<name>, else minigrad.kernels.<name>, else None."""
    import minigrad

    return getattr(minigrad, name, None) or getattr(minigrad.kernels, name, None)


def minigrad_threads():
    """How many threads minigrad's kernels use."""
    get = _minigrad_function("get_num_threads")
    if get is None:
        import numba

        return numba.get_num_threads()
    return get()


def set_minigrad_threads(n):
    """Let minigrad's kernels use n threads."""
    put = _minigrad_function("set_num_threads")
    if put is None:
        import numba

        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    else:
        put(n)


def minigrad_parallelism(description=None):
    """How minigrad runs a kernel on several threads: the "parallel" entry of
    ``minigrad.kernels.describe()``, else numba's threading layer."""
    if description and description.get("parallel"):
        return description["parallel"]
    import numba

    try:
        return f"numba parallel ({numba.threading_layer()} threading layer)"
    except ValueError:  # no parallel kernel has run yet
        return "numba parallel"


@contextmanager
def using_threads(framework, n, torch=None):
    """Run the block with n threads in `framework` ("minigrad" or "torch"); n None: as they are."""
    if framework == "torch":
        get, put = torch.get_num_threads, torch.set_num_threads
    else:
        get, put = minigrad_threads, set_minigrad_threads
    before = get()
    if n is not None:
        put(n)
    try:
        yield
    finally:
        put(before)


def set_threads(n, torch):
    """Use n threads in minigrad, PyTorch and numpy's BLAS (--threads)."""
    set_minigrad_threads(n)
    if torch is not None:
        torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n, user_api="blas")  # stays in force: the object is not used as a context
        return
    except ImportError:
        pass
    fn = openblas_function("set_num_threads")
    if fn is not None:
        fn.argtypes = [ctypes.c_int]
        fn.restype = None
        fn(n)


def openblas_function(stem):
    """A function of the OpenBLAS that numpy loaded (``openblas_<stem>``, or the prefixed and
    suffixed names of the scipy-openblas builds), via ctypes; None if there is none.
    Used only when threadpoolctl is not installed."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("openblas_", "scipy_openblas_"):
            for suffix in ("", "64_", "_64_"):
                fn = getattr(lib, prefix + stem + suffix, None)
                if fn is not None:
                    return fn
    return None


def openblas_runtime():
    """What the OpenBLAS loaded by numpy says about itself (config, core type, threads), or None."""
    info = {}
    for key, stem, restype in (("config", "get_config", ctypes.c_char_p), ("core", "get_corename", ctypes.c_char_p),
                               ("threads", "get_num_threads", ctypes.c_int)):
        fn = openblas_function(stem)
        if fn is not None:
            fn.restype = restype
            value = fn()
            info[key] = value.decode() if isinstance(value, bytes) else value
    return info or None
