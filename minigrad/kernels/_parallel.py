"""Running one compiled kernel on several threads: minigrad's own small thread pool.

Every parallel kernel in minigrad is a compiled function over a range of work items,
``kernel(*args, start, stop)``, that releases the GIL while it runs (numba's ``nogil``). To run it
in parallel, ``parallel_for(kernel, n_items, *args)`` cuts ``range(n_items)`` into chunks, and the
calling thread takes chunks from the front and the pool's worker threads from the back, until
none is left:

    thread 0 (the caller):  chunk 0, chunk 1, ...
    thread 1 (a worker):    chunk 3, chunk 2, ...

(When both keep pace, a thread gets the same rows in every launch of the same shape: a backward
kernel then reads the rows its own thread's forward kernel wrote, still in that core's cache.)

Why not numba's own ``prange``:
- Compile time. Lowering a ``parallel=True`` function takes numba seconds each, and they were most
  of the first start. Here every kernel is plain serial code; the parallel part is this file.
- Robustness. numba's OpenMP threads cannot survive ``fork`` (a ``multiprocessing`` pool after
  training dies), and its fallback "workqueue" layer aborts the process when two threads launch
  kernels at once. This pool is rebuilt in a forked child, and a kernel launched while the pool is
  busy with another thread's kernel simply runs on its caller's thread.
- A busy machine. ``prange`` gives each thread a fixed share: if another program holds one core,
  the whole kernel waits for the slow share. Here a late thread just takes fewer chunks, and when
  the threads see that another program wants the cores, they wait for work asleep rather than
  polling, so that the kernel gets its cores back the moment it needs them (``_spin.py``).

Handing out chunks happens in compiled code, without the GIL (``_spin.py``): between kernels a
worker polls a counter for two milliseconds, and when the caller publishes a job, the
worker starts on a chunk within a microsecond, calling the kernel through a compiled entry
(``_entries.py``), with no Python in between. A launch costs about three microseconds in all,
most of it Python's (writing the arguments into a block of numbers, waking the workers). A
worker that has polled long enough with nothing to do sleeps until the next launch wakes it (tens
of microseconds). That sets the smallest kernel worth sharing (the thresholds in matmul.py,
attention.py, _rows.py). A kernel with no compiled entry (a Python function) runs on the pool from
Python, as ``_Job`` below.

The thread count is ``minigrad.set_num_threads(n)`` / ``get_num_threads()``, read at start from
``MINIGRAD_NUM_THREADS`` (or numba's ``NUMBA_NUM_THREADS``), else the cores this process may use.

What the pool promises (its invariants):
- Every item of a launch is computed exactly once, whichever threads take its chunks, however
  late they wake, and whatever happened to earlier launches (when no kernel raises: see below).
- Job numbers run 1, 2, ..., 2^31 - 2 and then start again at 1 (``_spin.next_job``); a launch
  takes the number after the last *published* job, and a job is published when the compiled
  ``_spin.publish`` writes its number into the ``STARTED`` counter. Nothing before that point
  (starting workers, packing the arguments, compiling an entry) uses up a number or changes a
  counter that another thread reads.
- An error raised in a kernel, on any thread, is raised in the caller's thread: a Python
  kernel's own exception; for a compiled kernel, the entry reports the failed chunk, and the
  caller runs that chunk again from Python, where numba raises the kernel's error.
- What an interrupt (Ctrl-C) leaves behind. Before ``publish``: nothing. During a compiled
  launch: nothing either; the caller does not return until every chunk taken is done (where it
  waits in Python, the KeyboardInterrupt is held back until then). During a Python job: the
  interrupt stops the job, no thread starts another of its chunks, and a chunk that a worker has
  already started finishes on that worker; the next launch is a new job. A worker thread survives
  any exception (it is reported to the next caller) and keeps serving.
- A forked child starts with no pool (the parent's threads do not exist there) and builds its own.
"""
import itertools
import numbers
import os
import threading
import time

import numpy as np

from . import _warm  # (no numba: it imports numba and the pool's compiled parts on first use)


def _default_threads():
    for name in ("MINIGRAD_NUM_THREADS", "NUMBA_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                n = int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r}: expected a whole number of threads") from None
            if n < 1:
                raise ValueError(f"{name}={value!r}: expected at least 1 thread")
            return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


_n_threads = _default_threads()


def get_num_threads():
    """How many threads a parallel kernel uses (the caller's own thread included)."""
    return _n_threads


def set_num_threads(n):
    """Use ``n`` threads (>= 1) in every parallel kernel from now on, in the whole process."""
    global _n_threads
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"set_num_threads: expected a whole number >= 1, got {n!r}")
    _n_threads = int(n)


class _Job:
    """A launch of a kernel that has no compiled entry (a Python function): the threads share its
    chunks from Python.

    Chunks are handed out, and counted when finished, by ``itertools.count``, whose ``next`` is
    atomic under the GIL. The caller waits only for chunks that some thread has taken: a worker that
    wakes late (its core busy with another program) finds nothing left and holds nobody up.

    A KeyboardInterrupt (in a chunk, or in the caller while it waits) stops the job: no thread
    starts another of its chunks, and the caller raises it without waiting for the chunks that
    other threads are still running.
    """

    def __init__(self, kernel, args, n_items, n_chunks):
        self.kernel, self.args, self.n_items, self.n_chunks = kernel, args, n_items, n_chunks
        self.next_chunk = itertools.count().__next__
        self.count_finished = itertools.count(1).__next__
        self.finished = threading.Event()  # set by whoever finishes the last chunk
        self.error = None
        self.stopped = False  # set by a KeyboardInterrupt: start no more chunks
        self.pool = self.number = None  # set by the pool that runs it

    def work(self, report=True):
        """Take chunks until none is left (called by every thread of the launch); True if this
        thread finished the last chunk. report=False: a worker, which reports that in its next
        poll instead (``_spin.serve``), once it has let go of the GIL."""
        n_items, n_chunks = self.n_items, self.n_chunks
        while True:
            c = self.next_chunk()
            if c >= n_chunks or self.stopped:
                return False
            try:
                self.kernel(*self.args, c * n_items // n_chunks, (c + 1) * n_items // n_chunks)
            except BaseException as error:  # re-raised in the caller's thread
                self.error = error
                if not isinstance(error, Exception):  # KeyboardInterrupt: stop the whole job
                    self.stopped = True
            if self.count_finished() == n_chunks:
                if self.pool is not None and report:
                    self.pool.counters[_spin.FINISHED] = self.number  # for the caller polling it
                self.finished.set()
                return True


class _Worker:
    """A daemon thread that helps with each job of the pool. Between jobs it polls the pool's job
    counter (``_spin.serve``, which also runs compiled jobs), then sleeps until woken: in compiled
    code on Linux, here in Python elsewhere. It comes back to Python for what compiled code cannot
    do: run a Python job, sleep (not Linux), read how busy the machine is, move to another CPU."""

    def __init__(self, pool, number):
        self.wake = threading.Event()
        self.sleeping = False  # (set under the GIL: the caller wakes only a sleeping worker)
        self.error = None  # an exception that stopped its loop, for the next caller to raise
        self.pool, self.number = pool, number
        self.thread = threading.Thread(target=self._live, name=f"minigrad-worker-{number + 1}", daemon=True)
        self.thread.start()

    def _live(self):
        """Serve jobs for ever. An exception (say, numba failing to compile ``serve`` in a process
        whose first kernel calls were interrupted) does not end the thread: it is kept for the
        next caller to raise, and the worker waits for the next launch to wake it and tries again."""
        while True:
            try:
                self._loop()
            except BaseException as error:
                self.error = error
                self.pool.worker_failed = True
                self.sleeping = True
                self.wake.wait()
                self.sleeping = False
                self.wake.clear()

    def _loop(self):
        seen = finished = 0
        counters = self.pool.counters
        cpus = os.sched_getaffinity(0) if _spin.CAN_SLEEP else set()  # (this thread's: the caller's at its start)
        while True:
            seen, action = _spin.serve(counters, self.number, seen, finished, _spin.POLL_NS,
                                       _spin.SHORT_POLL_NS, _spin.SETTLE, len(cpus) > 1)
            finished = 0
            if action == _spin.PYTHON_JOB:
                job = self.pool.job
                if job is not None and job.work(report=False):
                    finished = job.number  # it finished the last chunk: the next serve says so
            elif action == _spin.SLEEP:  # (no futex here) nothing new for a while: sleep until the next launch
                self.sleeping = True
                if counters[_spin.STARTED] == seen:  # (else a job came meanwhile: serve it)
                    self.wake.wait()
                self.sleeping = False
                self.wake.clear()
            elif action == _spin.LOST_CORE:  # it waited for its core: is another program busy?
                if _oversubscribed():
                    counters[_spin.CONTENDED] = time.monotonic_ns() + _spin.CONTENDED_NS
            else:  # it runs on the caller's CPU, where the two would only take turns: move off it
                try:
                    os.sched_setaffinity(0, cpus - {action - _spin.MOVE})
                except OSError:  # (CPUs taken away from the process meanwhile: stay, and stop moving)
                    cpus = set()


def _oversubscribed():
    """True if more threads want to run on this machine right now than it has CPUs (Linux)."""
    try:
        with open("/proc/loadavg") as f:  # e.g. "0.52 0.61 0.58 3/412 12345": 3 runnable now
            return int(f.read().split()[3].split("/")[0]) > (os.cpu_count() or 1)
    except (OSError, IndexError, ValueError):
        return False


class _Pool:
    """Worker threads shared by all kernels of the process; one launch uses them at a time.

    The number of the latest published job is ``counters[STARTED]`` (see the module docstring):
    the pool keeps no other count of its jobs, so there is nothing to roll back when a launch
    stops before it publishes."""

    def __init__(self):
        self.workers = []
        self.busy = threading.Lock()
        self.job = None  # the current Python job
        self.worker_failed = False  # set by a worker whose loop raised (see _Worker._live)
        self.counters = np.zeros(_spin.SIZE, dtype=np.int64)  # polled by the threads (_spin.py)
        # where the arguments of a job go: two blocks, used by odd and even jobs (see _spin.py)
        self.blocks = np.zeros((2, _entries.BLOCK_SIZE), dtype=np.int64)
        self.block_of = [(block, block.view(np.float64), block.ctypes.data) for block in self.blocks]
        if _warm.ahead_running():  # a second process compiles on another core (first start, _warm.py):
            self.counters[_spin.CONTENDED] = _UNTIL_AHEAD_ENDS  # poll briefly, as on any busy machine

    def ahead_finished(self):
        """The compile-ahead process has ended: the machine is no longer counted as contended on its
        account (called from _warm.py)."""
        if self.counters[_spin.CONTENDED] == _UNTIL_AHEAD_ENDS:
            self.counters[_spin.CONTENDED] = 0

    def run(self, kernel, args, n_items, n_chunks, n_threads):
        """Run ``kernel(*args, start, stop)`` over the chunks; a Python job if it is returned."""
        if not self.busy.acquire(blocking=False):
            kernel(*args, 0, n_items)  # another thread's kernel has the workers: run on this one
            return None
        failed = 0
        try:
            while len(self.workers) < n_threads - 1:
                self.workers.append(_Worker(self, len(self.workers)))
            if self.worker_failed:
                self._raise_worker_error()
            counters = self.counters
            number = counters.item(_spin.STARTED) % _spin.LAST_JOB + 1  # _spin.next_job; taken for good only by publish
            block = self.block_of[number % 2]
            entry, machine_code = _entry_of(kernel, args, block)
            for worker in self.workers[: n_threads - 1]:
                if worker.sleeping:  # (a polling worker sees the job by itself)
                    worker.wake.set()
            if entry:
                failed = -1
                try:  # (-1: not all done yet; else FAILED)
                    failed = _spin.launch(counters, number, entry, machine_code, block[2], n_items, n_chunks,
                                          n_threads - 1, _WAIT_POLLS, _spin.SHORT_POLLS)
                finally:
                    if failed < 0 and counters.item(_spin.STARTED) == number:  # published: wait for its chunks
                        _wait_for_chunks(counters, n_chunks)
                        failed = counters.item(_spin.FAILED)
                job = None
            else:
                job = self._run_python_job(kernel, args, n_items, n_chunks, n_threads, number)
        finally:
            self.busy.release()
        if failed:
            _raise_failed_chunk(kernel, args, (failed - 1) * n_items // n_chunks, failed * n_items // n_chunks)
        return job

    def _raise_worker_error(self):
        self.worker_failed = False
        for worker in self.workers:
            error, worker.error = worker.error, None
            if error is not None:
                raise _warm.restart_error(error) or RuntimeError(
                    f"parallel_for: worker thread {worker.number + 1} of minigrad's pool failed with "
                    f"{type(error).__name__}: {error} (it will try again at the next launch)") from error

    def _run_python_job(self, kernel, args, n_items, n_chunks, n_threads, number):
        job = _Job(kernel, args, n_items, n_chunks)
        job.pool, job.number = self, number
        self.job = job
        try:
            _spin.publish(self.counters, number, 0, 0, 0, n_items, n_chunks, n_threads - 1)
            if not job.work() and not job.stopped:  # chunks may still run on other threads: poll, then sleep
                if not _spin.wait_until_equal(self.counters, _spin.FINISHED, number, _spin.POLLS):
                    job.finished.wait()
        finally:
            job.stopped = True  # (after an interrupt: the workers start no more of its chunks)
            self.job = None
        return job


def _wait_for_chunks(counters, n_chunks):
    """Wait until every chunk of the published compiled job is done (``_spin.wait_done``: poll,
    then sleep in Python where there is no futex). A KeyboardInterrupt meanwhile is held back and
    raised once they are: a chunk still running on another thread would otherwise be counted in
    the next job's ``DONE``."""
    interrupted = None
    while True:
        try:
            while not _spin.wait_done(counters, n_chunks, _WAIT_POLLS, _spin.SHORT_POLLS):
                time.sleep(_SLEEP)  # a chunk is slow (or its thread is not running): let it have the core
            break
        except BaseException as error:  # (KeyboardInterrupt, from the sleep)
            interrupted = error
    if interrupted is not None:
        raise interrupted


def _raise_failed_chunk(kernel, args, start, stop):
    """A compiled kernel raised on items [start, stop) on some thread of the pool: numba keeps the
    exception where only its own call from Python can turn it into one, so call the kernel again
    on those items, from Python, on this thread. It raises the same error (with its message). (The
    items of that chunk run twice: after an error, the output is not to be used anyway.)"""
    kernel(*args, start, stop)
    name = getattr(kernel, "__name__", repr(kernel))
    raise RuntimeError(f"parallel_for: the compiled kernel {name} raised an exception on items {start} to "
                       f"{stop - 1} on one of minigrad's threads, but not when called again on them from Python")


_UNTIL_AHEAD_ENDS = 2**62  # a CONTENDED time that never comes (cleared by ahead_finished)
_WAIT_POLLS = 2_000_000  # the caller's wait for other threads' chunks: a millisecond or two, yielding
_SLEEP = 20e-6
_entries_by_kernel = {}  # numba kernel -> {pack key: (entry, machine code) addresses}
_NO_ENTRY = (0, 0)


def _entry_of(kernel, args, block):
    """Pack ``args`` into ``block`` (array, float64 view, address); -> the addresses (entry,
    kernel's machine code) for them, or (0, 0) if the kernel runs from Python."""
    entries = _entries_by_kernel.get(kernel, ())
    if not _entries.is_kernel(kernel):
        return _NO_ENTRY
    key = _entries.pack(*block, args)
    if key is None:  # an argument of a kind the block cannot hold: run the kernel from Python
        return _NO_ENTRY
    found = entries.get(key) if entries else None
    if found is None:
        if _warm.pending(_warm.POOL_LAST):  # another process is compiling the entries: not here too
            return _NO_ENTRY
        with _warm.loading:  # (compiles or loads it: first use, see _warm.py)
            found = _entries.entry_of(kernel, args, key) or _NO_ENTRY
        _entries_by_kernel.setdefault(kernel, {})[key] = found
    return found


_pool = None
_pool_lock = threading.Lock()
_spin = _entries = None  # modules imported with the first pool (they import numba)


def _forget_pool():
    """In a forked child: the parent's worker threads do not exist there; start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _whole(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"parallel_for: {name} must be a whole number >= 1, got {value!r}")
    return int(value)


def parallel_for(kernel, n_items, *args, chunks_per_thread=2, threads=None):
    """``kernel(*args, start, stop)`` over ``range(n_items)``, in chunks shared by the threads.

    With one thread (or one item) it is the single call ``kernel(*args, 0, n_items)``.
    ``chunks_per_thread`` (>= 1) > 1 cuts finer, so that a thread slowed by another program on its
    core leaves more of the work to the others. ``threads`` (>= 1) caps the thread count for this
    launch. An exception raised by the kernel on any thread is raised here.
    """
    if type(chunks_per_thread) is not int or chunks_per_thread < 1:  # (the common case costs one check)
        chunks_per_thread = _whole("chunks_per_thread", chunks_per_thread)
    if threads is None:
        threads = _n_threads
    elif type(threads) is not int or threads < 1:
        threads = _whole("threads", threads)
    n_threads = min(threads, n_items)
    if n_threads <= 1:
        if n_items > 0:
            kernel(*args, 0, n_items)
        return
    pool = _pool
    if pool is None:
        if _warm.pending(_warm.POOL_FIRST):  # (a fresh machine: another process is compiling the pool)
            kernel(*args, 0, n_items)
            return
        with _warm.loading:  # the first launch imports and compiles (or loads) the pool: first use, see _warm.py
            _first_pool()
            return parallel_for(kernel, n_items, *args, chunks_per_thread=chunks_per_thread, threads=threads)
    n_chunks = min(n_items, n_threads * chunks_per_thread, _spin.MAX_CHUNKS)
    job = pool.run(kernel, args, n_items, n_chunks, n_threads)
    if job is not None and job.error is not None:
        raise job.error


def _first_pool():
    """Import the pool's compiled parts (and numba) and make the process's pool."""
    global _pool, _spin, _entries
    _entries, _spin = _warm.load("_entries"), _warm.load("_spin")  # (numba: only compiled kernels run in parallel)
    with _pool_lock:
        _pool = _pool or _Pool()
