"""Compiling on two cores: a second process compiles some kernels while this one compiles the rest.

numba compiles a kernel the first time it is called, in the calling process, one after the other,
and holds the GIL while it does (a thread would not help). On a fresh machine that is most of the
first training step. So, the first time a compiled kernel is needed and numba's cache holds none of
the kernels below, this process starts ``python -m minigrad.kernels._warm FILE ...`` for the
kernel files in ``AHEAD``: that process compiles them into the cache, the one shared by every
process. Meanwhile this process compiles, on first use, everything else. When it reaches a file
that the other process has not finished, it first compiles its own kernels that a training step
will need (``OWN``), then waits, and loads the other's machine code from the cache.

Then the other process compiles the thread pool's own compiled parts (``warm_pool``: its polling
loops and the argument packing, ``_spin.py`` and ``_entries.py``), and, last, runs each kernel
file's warm-up once more with every kernel launched on the pool, which compiles the kernels'
entries (``_entries.py``). Until each is ready, this process does without it (see ``pending``)
instead of compiling it too: kernels run on one thread, then on the pool from Python. The other
process finishes its work even if this one has exited meanwhile, for the next run's sake.

The result is the same machine code, compiled by the same numba for the same CPU; only the
wall-clock time changes. ``MINIGRAD_COMPILE_AHEAD=0`` turns this off.
"""
import contextlib
import glob
import os
import subprocess
import sys
import threading

import numpy as np

AHEAD = ("attention",)  # the kernel files the second process compiles (the largest first)
POOL_FIRST, POOL_LAST = "pool", "pool-entries"  # what it does before and after them (see above)
OWN = ("matmul", "layernorm", "gelu", "cross_entropy", "embedding", "reduce", "adam")
WAIT_SECONDS = 300  # give up waiting (and compile here) if the other process takes longer


def warm_up(file):
    """Compile (or load) the float32 kernels of one kernel file, as a training step calls them."""
    import importlib

    module = importlib.import_module(f"{__package__}.{file}")
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    w = np.ones(6, np.float32)
    if file == "matmul":
        module.matmul_numba(x, x.T.copy())
    elif file == "layernorm":
        y, mean, rstd = module.layer_norm_forward_numba(x, w, w)
        module.layer_norm_backward_numba(x, x, w, mean, rstd)
    elif file == "gelu":
        module.gelu_backward_numba(x, module.gelu_forward_numba(x))
    elif file == "cross_entropy":
        targets = np.arange(4) % 6
        _, lse = module.cross_entropy_forward_numba(x, targets)
        module.cross_entropy_backward_numba(x, targets, lse, np.ones(4, np.float32))
    elif file == "reduce":
        module.sum_rows_numba(x)
        module.sum_squares_numba(w)
    elif file == "adam":
        m, v = np.zeros_like(w), np.zeros_like(w)
        module.adam_update_numba(w.copy(), w, m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, True, 1)
    elif file == "embedding":
        module.embedding_backward_numba(np.arange(4), x, 6)
    elif file == "attention":
        q = x.reshape(1, 2, 2, 6)
        out, weights = module.attention_forward_numba(q, q, q, None, 0.5)
        module.attention_backward_numba(out, q, q, q, weights, None, 0.5)
    elif file == "softmax":
        for kernel in ("softmax", "log_softmax"):
            y = getattr(module, f"{kernel}_forward_numba")(x)
            getattr(module, f"{kernel}_backward_numba")(y, x)
        y = module.masked_softmax_forward_numba(x, None, 0.5)
        module.masked_softmax_backward_numba(y, x, 0.5)


def _array_kinds():
    """One small array of each kind the kernels are launched with on the pool."""
    x = np.zeros((2, 2, 2, 2), dtype=np.float32)
    readonly = np.broadcast_to(x[:1], x.shape)  # (a read-only view, zero strides: numba's 'A' layout)
    return [x[0, 0], x[0, 0, 0], x[0], x, np.asfortranarray(x[0]), x[:, :, :, ::2], readonly,
            np.broadcast_to(np.ones((1, 1, 1, 2), dtype=np.bool_), x.shape), np.zeros(2, dtype=np.int64)]


def warm_pool():
    """Compile (or load) the thread pool's compiled parts: no kernel runs."""
    from . import _entries, _spin

    counters = np.zeros(_spin.SIZE, dtype=np.int64)
    _spin.publish(counters, 1, 0, 0, 0, 0, 0, 1)  # (a Python job: serve returns at once)
    _spin.serve(counters, 0, 0, 0, 1, 1, 0, False)
    _spin.launch(counters, 2, 0, 0, 0, 0, 0, 0, 1, 1)  # (no chunks to run)
    _spin.wait_done(counters, 0, 1, 1)
    _spin.wait_until_equal(counters, 0, 0, 1)
    block = np.zeros(_entries.BLOCK_SIZE, dtype=np.int64)
    for array in _array_kinds():
        _entries.pack_array(block.ctypes.data, 0, array)


@contextlib.contextmanager
def every_launch_on_the_pool():
    """Within: every kernel, however small its input, runs on the thread pool (2 threads)."""
    import importlib

    from . import _parallel, _rows

    modules = {name: importlib.import_module(f"{__package__}.{name}")
               for name in ("matmul", "attention", "gelu", "reduce", "layernorm")}
    saved = [(modules["matmul"], "SERIAL_FLOPS"), (modules["attention"], "SERIAL_FLOPS"),
             (modules["gelu"], "PARALLEL_MIN_ELEMENTS_EXP"), (modules["reduce"], "PARALLEL_MIN_ELEMENTS"),
             (_rows, "use_threads"), (modules["layernorm"], "use_threads")]
    saved = [(module, name, getattr(module, name)) for module, name in saved]
    threads = _parallel.get_num_threads()
    try:
        for module, name, _ in saved:
            setattr(module, name, 0)
        _rows.use_threads = modules["layernorm"].use_threads = lambda x, min_elements=0: x.dtype == np.float32
        _parallel.set_num_threads(2)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        _parallel.set_num_threads(threads)


class _Ahead:
    """The second process, and which of its files are ready."""

    def __init__(self, files):
        self.pending = {POOL_FIRST, *files, POOL_LAST}
        self.ready = threading.Condition()
        env = dict(os.environ, MINIGRAD_COMPILE_AHEAD="0", MINIGRAD_QUIET_COMPILE="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, *files, POOL_FIRST, POOL_LAST],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, env=env, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:  # "ready FILE" once each file is in the cache
            with self.ready:
                self.pending.discard(line.split()[-1])
                self.ready.notify_all()
        self.process.wait()
        with self.ready:  # finished or died: nothing more to wait for
            self.pending.clear()
            self.ready.notify_all()

    def wait_for(self, file):
        with self.ready:
            self.ready.wait_for(lambda: file not in self.pending, timeout=WAIT_SECONDS)


_ahead = None
_started = False
_lock = threading.Lock()


def pending(name):
    """True while the other process is still at ``name`` (a kernel file, POOL_FIRST or POOL_LAST):
    the thread pool runs kernels on one thread until POOL_FIRST is ready, and from Python until
    POOL_LAST is, rather than compile here what the other process is compiling."""
    ahead = _ahead
    return ahead is not None and name in ahead.pending


def _cache_is_cold(files):
    from ._jit import kernel_cache_path

    path = kernel_cache_path()
    return path is not None and not any(glob.glob(os.path.join(path, f"{file}.*.nbi")) for file in files)


def before_import(file):
    """Called before a kernel file is first imported on the numba backend (see __init__.py)."""
    global _ahead, _started
    with _lock:
        if not _started:
            _started = True
            if os.environ.get("MINIGRAD_COMPILE_AHEAD", "1") != "0" and _cache_is_cold(AHEAD):
                try:
                    _ahead = _Ahead(AHEAD)
                except OSError:  # no second process to be had: compile everything here
                    _ahead = None
        ahead = _ahead
    if ahead is None or file not in AHEAD:
        return
    with ahead.ready:
        busy = file in ahead.pending
    if busy:
        for own in OWN:  # useful work first: this process's own kernels of a training step
            warm_up(own)
        ahead.wait_for(file)


def _forget_after_fork():
    global _ahead
    _ahead = None  # a forked child does not own the parent's second process or its reader thread


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        if name == POOL_FIRST:
            warm_pool()
        elif name == POOL_LAST:
            with every_launch_on_the_pool():
                for file in (*AHEAD, *OWN):
                    warm_up(file)
        else:
            warm_up(name)
        try:
            print("ready", name, flush=True)
        except OSError:  # the first process has exited: compile the rest for the next run all the same
            sys.stdout = open(os.devnull, "w")
