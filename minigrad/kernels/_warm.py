"""Compiling on two cores: a second process compiles some kernels while this one compiles the rest.

numba compiles a kernel the first time it is called, in the calling process, one after the other,
and holds the GIL while it does (a thread would not help). On a fresh machine that is most of the
first training step. So, the first time a compiled kernel is needed and numba's cache holds none of
the kernels below, this process starts ``python -m minigrad.kernels._warm FILE ...`` for the
kernel files in ``AHEAD``: that process compiles them into the cache, the one shared by every
process. Meanwhile this process compiles, on first use, everything else. When it reaches a file
that the other process has not finished, it first compiles its own kernels that a training step
will need (``OWN``), then waits, and loads the other's machine code from the cache.
The attention kernels it compiles without running them: their products call matmul_block at its
address (``matmul.call_block``), which this process compiles for matmul meanwhile, so neither
process compiles matmul_block twice. The two then take about equal time: attention and GELU there,
matmul, layer norm and the rest here.
A convolutional network (its first kernel file is conv2d) needs no attention: for it the other
process compiles ``LATER``'s kernels instead, those its step reaches last, and nothing waits for them.
A recurrent network is told by its layers (``expect``), and likewise gets ``LATER_RECURRENT``.

Then the other process compiles the thread pool's own compiled parts (``warm_pool``: its polling
loops and the argument packing, ``_spin.py`` and ``_entries.py``), and, last, runs each kernel
file's warm-up once more with every kernel launched on the pool, which compiles the kernels'
entries (``_entries.py``). Until each is ready, this process does without it (see ``pending``)
instead of compiling it too: kernels run on one thread, then on the pool from Python. The other
process finishes its work even if this one has exited meanwhile, for the next run's sake.

The result is the same machine code, compiled by the same numba for the same CPU; only the
wall-clock time changes. ``MINIGRAD_COMPILE_AHEAD=0`` turns this off.

This file also keeps the first use safe from two accidents:

- Ctrl-C during the first kernel calls. numba is imported on first use (``load``), and an
  interrupt can land half-way through its import: Python then forgets the module it was running
  but keeps the ones it had finished, and the next ``import numba`` builds a new ``numba`` module
  that lacks them (``module 'numba' has no attribute 'core'``). So ``load`` forgets every module
  that the interrupted import added (numba's, llvmlite's, the kernel files, and any left half
  initialised), and the next call imports them afresh. If numba still cannot recover (an interrupt
  in the middle of its first compile can leave its own tables half filled), the next kernel call
  says in one line to restart the process (``RESTART``) instead of failing with an error about
  numba's insides.
- A fork while another thread makes the first kernel calls. ``os.fork`` copies only the forking
  thread; a lock that another thread held at that moment stays held for ever in the child. So,
  just before a fork, the forking thread takes the locks of the first use itself, and releases
  them in the parent and in the child just after (``_before_fork``; the order is in ``_fork_locks``).
  The fork waits for an import or a compile in progress to end, and the child gets every lock free.
  Python's own import locks are among them: a module that another thread was importing at the
  fork can never be imported in the child. Hence ``loading``, held through everything of the first
  use that imports (numba imports parts of itself and of numpy lazily, in a kernel's first call).
"""
import contextlib
import glob
import importlib
import logging  # noqa: F401  (before the fork hooks below: see _fork_locks)
import os
import subprocess
import sys
import threading
import time

import numpy as np

AHEAD = ("attention", "gelu")  # the kernel files the second process compiles, in this order
POOL_FIRST, POOL_LAST = "pool", "pool-entries"  # what it does before and after them (see above)
OWN = ("matmul", "layernorm", "cross_entropy", "embedding", "reduce", "adam")
# The first kernel file a process needs tells what kind of model it trains. A convolutional
# network's is conv2d: its step never needs attention, and what it needs last (the backward kernels,
# the products of its classifier) the second process can compile while this one compiles the forward
# pass. So for it the second process compiles LATER's list ("FILE:backward": only that file's
# backward kernels; the pooling file goes by "pool:backward" only, as plain "pool" is POOL_FIRST),
# and nothing waits for them: this process loads each one from the cache if the other has put it
# there by the time it is needed, and compiles it itself otherwise.
LATER = {"conv2d": ("conv2d:backward", "cross_entropy", "pool:backward", "relu", "reduce", "batchnorm:backward",
                    "matmul")}
# A recurrent network's first kernel file is matmul (the input's part of every gate), as an MLP's and
# the paper's Transformer's: its layers say what it is instead, when they are made (``expect``:
# "rnn:lstm", "rnn:gru", "rnn:rnn"). Its step needs no attention either: while this process compiles
# matmul and then the layers' forward kernels, the second one compiles their backward kernels
# ("rnn:lstm:backward") and then LATER_RECURRENT, all of which the step reaches after those.
LATER_RECURRENT = ("cross_entropy", "reduce", "embedding", "adam")
WAIT_SECONDS = 300  # give up waiting (and compile here) if the other process takes longer


def expect(kind):
    """A layer that is made says which kernels its training step will need ("rnn:lstm"): on a first
    start, the second process then compiles those (``before_import``). No numba is imported here."""
    _expected[kind] = None


def _later(file):
    """The list the second process compiles when the first kernel file needed is `file`, for a model
    whose step needs no attention; () for any other (AHEAD, awaited)."""
    if file in LATER:
        return LATER[file]
    recurrent = tuple(kind for kind in _expected if kind.startswith("rnn:"))
    return (*(f"{kind}:backward" for kind in recurrent), *LATER_RECURRENT) if recurrent else ()


def warm_up(file):
    """Compile (or load) the float32 kernels of one kernel file, as a training step calls them."""
    with loading:  # (first use: see the module docstring)
        _warm_up(file)


def _warm_up(file):
    file, _, part = file.partition(":")  # ("conv2d:backward": only the backward kernels)
    module = load(file)
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    w = np.ones(6, np.float32)
    # Enough rows for the compiled path and for two blocks of rows (so that, within
    # every_launch_on_the_pool, the launch is split and the kernel's entry compiled): a few rows go
    # to numpy (matmul's BLAS_BELOW, sum_rows' NUMPY_ROWS) or run as one block (layer_norm's
    # backward, ROWS_PER_BLOCK rows a block), and compile nothing that a training step runs.
    rows = np.linspace(-1, 1, 130 * 6, dtype=np.float32).reshape(130, 6)
    if file == "matmul":
        module.matmul_compiled(rows, x.T.copy(), w[:4])
        module.matmul_pair_numba(rows, x.T, rows.T, rows, rows)  # (a layer's backward: on the pool only)
    elif file == "layernorm":
        y, mean, rstd = module.layer_norm_forward_numba(rows, w, w)
        module.layer_norm_backward_numba(rows, rows, w, mean, rstd)
    elif file == "gelu":
        module.gelu_backward_numba(x, module.gelu_forward_numba(x))
    elif file == "cross_entropy":
        targets = np.arange(4) % 6
        _, lse = module.cross_entropy_forward_numba(x, targets)
        module.cross_entropy_backward_numba(x, targets, lse, np.ones(4, np.float32))
    elif file == "reduce":
        module.sum_rows_numba(rows)
        module.sum_squares_numba(w)
    elif file == "adam":
        m, v = np.zeros_like(w), np.zeros_like(w)
        module.adam_update_numba(w.copy(), w, m, v, 1e-3, 0.9, 0.99, 1e-8, 0.1, True, 1)
    elif file == "embedding":
        module.embedding_backward_numba(np.arange(4), x, 6)
    elif file == "attention" and part == "compile":  # (compile only: see __main__ below)
        module.forward_slices.for_dtype(np.float32)
        module.backward_slices.for_dtype(np.float32)
    elif file == "attention":
        q = x.reshape(1, 2, 2, 6)
        out, weights = module.attention_forward_numba(q, q, q, None, 0.5)
        module.attention_backward_numba(out, q, q, q, weights, None, 0.5)
    elif file == "conv2d":
        images = np.linspace(-1, 1, 2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
        weight = np.ones((4, 3, 3, 3), np.float32)
        if part != "backward":
            module.conv2d_forward_numba(images, weight, None, (1, 1), (1, 1), (1, 1), (6, 6))
        module.conv2d_backward_numba(np.ones((2, 4, 6, 6), np.float32), images, weight, (1, 1), (1, 1), (1, 1))
    elif file == "rnn":  # part: "lstm", "gru" or "rnn" (that layer's kernels), or "lstm:backward"
        kind, _, only = part.partition(":")
        gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
        gi = np.linspace(-1, 1, 2 * 4 * gates * 3, dtype=np.float32).reshape(2, 4, gates * 3)
        h0, w_hh = np.zeros((4, 3), np.float32), np.full((gates * 3, 3), 0.1, np.float32)
        # (for the backward alone, the forward's outputs come from its numpy twin: nothing compiles)
        forward = getattr(module, f"{kind}_layer_forward_{'numpy' if only == 'backward' else 'numba'}")
        backward = getattr(module, f"{kind}_layer_backward_numba")
        if kind == "lstm":
            hs, cs, tanh_cs, acts = forward(gi, h0, h0, w_hh)
            backward(hs, cs[-1], h0, h0, w_hh, hs, cs, tanh_cs, acts)
        elif kind == "gru":
            hs, acts, ghs = forward(gi, h0, w_hh)
            backward(hs, h0, w_hh, hs, acts, ghs)
        else:
            hs = forward(gi, h0, w_hh)
            backward(hs, h0, w_hh, hs)
    elif file == "relu":
        module.relu_backward_numba(rows, module.relu_forward_numba(rows))
    elif file == "pool":
        images = rows.reshape(2, 3, 10, 13)
        y, indices = module.max_pool2d_forward_numba(images, (2, 2), (2, 2), (0, 0), (1, 1), (5, 6))
        module.max_pool2d_backward_numba(y, indices, images.shape)
    elif file == "batchnorm":
        for shape in ((2, 3, 10, 13), (130, 6)):  # after a convolution, after a linear layer
            z = rows.reshape(shape)
            if part != "backward":
                module.batch_norm_forward_numba(z, w[:shape[1]], w[:shape[1]], 1e-5)
            module.batch_norm_backward_numba(z, z, w[:shape[1]], w[:shape[1]] * 0.5)
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
    float32_rows = lambda x, min_elements=0: x.dtype == np.float32  # noqa: E731  (threads for any size)
    overrides = [(modules["matmul"], "SERIAL_FLOPS", 0), (modules["attention"], "SERIAL_FLOPS", 0),
                 (modules["gelu"], "PARALLEL_MIN_ELEMENTS_EXP", 0), (modules["reduce"], "PARALLEL_MIN_ELEMENTS", 0),
                 (_rows, "use_threads", float32_rows), (modules["layernorm"], "use_threads", float32_rows)]
    rnn = sys.modules.get(f"{__package__}.rnn")  # (only if a warm-up imported it)
    overrides += [(rnn, "ROWS_PER_THREAD", 1)] if rnn is not None else []
    saved = [(module, name, getattr(module, name)) for module, name, _ in overrides]
    threads = _parallel.get_num_threads()
    try:
        for module, name, value in overrides:
            setattr(module, name, value)
        _parallel.set_num_threads(2)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        _parallel.set_num_threads(threads)


class _Ahead:
    """The second process, and which of its files are ready."""

    def __init__(self, files, awaited):
        self.pending = {POOL_FIRST, *files, POOL_LAST}
        self.awaited = awaited  # the files this process waits for (before_import); the others it may compile too
        self.waited = 0.0  # seconds this process spent waiting for it (wait_for)
        self.ready = threading.Condition()
        env = dict(os.environ, MINIGRAD_COMPILE_AHEAD="0", MINIGRAD_QUIET_COMPILE="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, *files, POOL_FIRST, POOL_LAST],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, env=env, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        with self.process.stdout as lines:  # (closed at the end: no ResourceWarning at exit)
            for line in lines:  # "ready FILE" once each file is in the cache
                with self.ready:
                    self.pending.discard(line.split()[-1])
                    self.ready.notify_all()
        self.process.wait()
        with self.ready:  # finished or died: nothing more to wait for
            self.pending.clear()
            self.ready.notify_all()
        parallel = sys.modules.get(f"{__package__}._parallel")
        pool = getattr(parallel, "_pool", None)
        if pool is not None:
            pool.ahead_finished()

    def wait_for(self, file):
        started = time.monotonic()
        with self.ready:
            self.ready.wait_for(lambda: file not in self.pending, timeout=WAIT_SECONDS)
            self.waited += time.monotonic() - started


_ahead = None
_started = False
_expected = {}  # what the layers made so far said their step needs (expect), in that order
_lock = threading.RLock()  # (re-entrant, as every lock of _fork_locks)
# held during the first use: the imports of numba and of the kernel files (load), each kernel's
# first call (first_call), the pool's first launch and the compiles of its entries (_parallel.py)
loading = threading.RLock()
_interrupted = False  # True once a first use was interrupted (see restart_error)
RESTART = ("minigrad: the first kernel calls of this process were interrupted (Ctrl-C) while numba was loading, "
           "and numba cannot recover from that here: restart the Python process (in a notebook: restart the kernel)")


def pending(name):
    """True while the other process is still at ``name`` (a kernel file, POOL_FIRST or POOL_LAST):
    the thread pool runs kernels on one thread until POOL_FIRST is ready, and from Python until
    POOL_LAST is, rather than compile here what the other process is compiling."""
    ahead = _ahead
    return ahead is not None and name in ahead.pending


def ahead_running():
    """True while this process's compile-ahead process is still at work (on another core)."""
    ahead = _ahead
    return ahead is not None and bool(ahead.pending)


def _cache_is_cold(files):
    path = load("_jit").kernel_cache_path()
    return path is not None and not any(glob.glob(os.path.join(path, f"{file}.*.nbi")) for file in files)


def load(file):
    """The kernel module ``file`` ("softmax", "_spin", ...), imported under ``loading`` if it is
    not yet. If the import fails or is interrupted, every module it added that could break the next
    import is forgotten (``_forget``), so that the next call imports them afresh."""
    name = f"{__package__}.{file}"
    with loading:
        before = set(sys.modules)
        try:
            return importlib.import_module(name)
        except BaseException as error:
            _forget(before, error)
            replacement = restart_error(error)
            if replacement is None:
                raise
            raise replacement from error


def _forget(before, error):
    """After an import that raised ``error``: take out of ``sys.modules`` (and off their parent
    packages) the modules that appeared since ``before`` and would be found broken later: numba's
    and llvmlite's if numba itself was among them, the kernel files, any module still marked as
    initialising, and any module whose parent package is gone (so, its children too)."""
    global _interrupted
    if not isinstance(error, Exception):  # KeyboardInterrupt (or SystemExit)
        _interrupted = True
    fresh_numba = "numba" not in before
    for name in sorted(set(sys.modules) - before, key=lambda name: name.count(".")):  # parents first
        module = sys.modules.get(name)
        parent, _, child = name.rpartition(".")
        if ((fresh_numba and name.partition(".")[0] in ("numba", "llvmlite"))
                or name.startswith(f"{__package__}.")
                or getattr(getattr(module, "__spec__", None), "_initializing", False)
                or (parent and parent not in sys.modules)):
            sys.modules.pop(name, None)
            if parent and getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)


def restart_error(error):
    """``RuntimeError(RESTART)`` if ``error`` looks like numba broken by an interrupted first use
    in this process, else None: after an interrupt, an error about a missing attribute or module,
    a registry entry made twice (numba's half-imported modules imported again: "duplicate
    registration"), or one of numba's own, raised from inside numba, llvmlite or the import
    machinery (a learner's own mistake, raised in minigrad's checks, stays as it is)."""
    if not _interrupted or not isinstance(error, Exception):
        return None
    kind = isinstance(error, (AttributeError, ImportError, NameError, KeyError)) or \
        type(error).__module__.startswith("numba")
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    where = last.tb_frame.f_code.co_filename if last is not None else ""
    inside = any(f"{os.sep}{package}{os.sep}" in where for package in ("numba", "llvmlite")) or "importlib" in where
    return RuntimeError(RESTART) if kind and (inside or "numba" in str(error)) else None


def first_call(kernel, args, kwargs):
    """``kernel(*args, **kwargs)``, the first call of a kernel in this process (which compiles it,
    or loads it from the cache, and imports what numba and numpy import lazily), under ``loading``:
    an interrupt is remembered, and an error of numba broken by an earlier interrupt becomes the
    one line ``RESTART``."""
    global _interrupted
    try:
        with loading:
            return kernel(*args, **kwargs)
    except BaseException as error:
        if not isinstance(error, Exception):
            _interrupted = True
        replacement = restart_error(error)
        if replacement is not None:
            raise replacement from error
        raise


def before_import(file):
    """Called before a kernel file is first imported on the numba backend (see __init__.py)."""
    global _ahead, _started
    with loading, _lock:
        if not _started:
            _started = True
            later = _later(file)  # (a kind of model whose step needs no attention)
            if os.environ.get("MINIGRAD_COMPILE_AHEAD", "1") != "0" and _cache_is_cold((file,) if later else AHEAD):
                try:
                    _ahead = _Ahead(later or AHEAD, awaited=() if later else AHEAD)
                except OSError:  # no second process to be had: compile everything here
                    _ahead = None
        ahead = _ahead
    if ahead is None or file not in ahead.awaited:
        return
    with ahead.ready:
        busy = file in ahead.pending
    if busy:
        for own in OWN:  # useful work first: this process's own kernels of a training step
            warm_up(own)
        ahead.wait_for(file)


def _fork_locks():
    """The locks that a fork must not split, as (owner, attribute name), in the order in which
    every thread that takes several of them takes them:

    1. ``loading`` (this file): around the first use (the imports of numba and of the kernel
       files, each kernel's first call, the pool's first launch: everything that imports);
    2. ``_lock`` (this file): around the start of the second process, taken inside ``loading``;
    3. numba's global compiler lock (``numba.core.compiler_lock.global_compiler_lock``): around
       every compile and every load from the cache; an import under ``loading`` may compile;
    4. llvmlite's LLVM lock (``llvmlite.binding.ffi.lib._lock``): around every call into LLVM,
       which numba makes while it holds its compiler lock;
    5. the lock of the compile notice (``_jit._CompileNotice``), taken inside a compile.

    numba's and llvmlite's are private attributes: the ones of numba 0.58 to 0.6x and llvmlite
    0.41 to 0.5x. A lock that is not there (numba not imported yet, or another version) is left
    out. All of them are re-entrant (RLock): the forking thread may hold some already.

    Other modules' fork hooks run too, in the reverse order of their registration, and some take
    a lock of their own before the fork: ``logging`` does, and numba's import needs that lock. So
    ``logging`` is imported before this file registers its hooks: ours run first, and the forking
    thread never holds logging's lock while it waits for a thread that is importing numba. For a
    hook that this cannot foresee, the wait is bounded (FORK_WAIT_SECONDS, longer than the first
    call of any kernel takes on a busy machine): after that, the fork goes ahead without the locks
    it could not get, and the child gets new ones in their place."""
    owners = [(sys.modules[__name__], "loading"), (sys.modules[__name__], "_lock")]
    compiler = getattr(sys.modules.get("numba.core.compiler_lock"), "global_compiler_lock", None)
    owners.append((compiler, "_lock"))
    ffi = sys.modules.get("llvmlite.binding.ffi")
    owners.append((getattr(getattr(ffi, "lib", None), "_lock", None), "_lock"))
    jit = sys.modules.get(f"{__package__}._jit")
    owners.append((getattr(jit, "compile_notice", None), "lock"))
    return [(owner, name) for owner, name in owners
            if owner is not None and hasattr(getattr(owner, name, None), "_is_owned")]


FORK_WAIT_SECONDS = 60
_held_at_fork = {}  # forking thread -> [(owner, name, lock or None)] from _before_fork, for after the fork


def _before_fork():
    """Take the locks of ``_fork_locks`` in their order, so that no other thread holds one at
    the moment of the fork. A lock that this thread holds already is taken again (re-entrant).
    If this thread holds a lock late in the order (it forks from inside a compile, say), another
    thread may hold an earlier one while it waits for that one: then the earlier one is only
    tried, not waited for (else both would wait for ever); in the child it is replaced by a new
    lock (``_after_fork_in_child``)."""
    locks = [(owner, name, getattr(owner, name)) for owner, name in _fork_locks()]
    owned = [lock._is_owned() for _, _, lock in locks]
    held = []
    deadline = time.monotonic() + FORK_WAIT_SECONDS
    for i, (owner, name, lock) in enumerate(locks):
        if any(owned[i + 1:]):
            taken = lock.acquire(blocking=False)
        else:
            taken = lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        held.append((owner, name, lock if taken else None))
    _held_at_fork[threading.get_ident()] = held


def _after_fork_in_parent():
    for owner, name, lock in reversed(_held_at_fork.pop(threading.get_ident(), [])):
        if lock is not None:
            lock.release()


def _after_fork_in_child():
    global _ahead
    _ahead = None  # a forked child does not own the parent's second process or its reader thread
    held = _held_at_fork.pop(threading.get_ident(), [])  # (the forking thread keeps its id in the child)
    _held_at_fork.clear()
    for owner, name, lock in reversed(held):
        if lock is not None:
            lock.release()
        else:
            setattr(owner, name, threading.RLock())  # held by a thread that the child does not have


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        if name == POOL_FIRST:
            warm_pool()
        elif name == POOL_LAST:
            # every kernel of the files named (forward kernels too: the first process has put them
            # in the cache by now), each launch on the pool, which compiles the launch's entry
            kernels = [name.removesuffix(":backward") for name in sys.argv[1:] if name not in (POOL_FIRST, POOL_LAST)]
            with every_launch_on_the_pool():
                for file in dict.fromkeys((*kernels, *OWN)):
                    warm_up(file)
        elif name == "attention":
            warm_up("attention:compile")  # (running them needs matmul_block: see the module docstring)
        else:
            warm_up(name)
        try:
            print("ready", name, flush=True)
        except OSError:  # the first process has exited: compile the rest for the next run all the same
            sys.stdout = open(os.devnull, "w")
