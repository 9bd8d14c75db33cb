"""Running one compiled kernel on several threads: minigrad's own small thread pool.

Every parallel kernel in minigrad is a compiled function over a range of work items,
``kernel(*args, start, stop)``, that releases the GIL while it runs (numba's ``nogil``). To run it
in parallel, ``parallel_for(kernel, n_items, *args)`` cuts ``range(n_items)`` into chunks, and the
calling thread and the pool's worker threads take chunks one after the other until none is left:

    thread 0 (the caller):  chunk 0, chunk 2, chunk 3, ...
    thread 1 (a worker):    chunk 1, chunk 4, ...

Why not numba's own ``prange``:
- Compile time. Lowering a ``parallel=True`` function takes numba seconds each, and they were most
  of the first start. Here every kernel is plain serial code; the parallel part is this file.
- Robustness. numba's OpenMP threads cannot survive ``fork`` (a ``multiprocessing`` pool after
  training dies), and its fallback "workqueue" layer aborts the process when two threads launch
  kernels at once. This pool is rebuilt in a forked child, and a kernel launched while the pool is
  busy with another thread's kernel simply runs on its caller's thread.
- A busy machine. ``prange`` gives each thread a fixed share: if another program holds one core,
  the whole kernel waits for the slow share. Here a late thread just takes fewer chunks.

Handing a chunk to a worker costs about ten microseconds, most of it the GIL: a worker needs the
GIL to call the kernel, and a thread that asks for the GIL while another holds it is put to sleep
(waking it costs tens of microseconds, more in a virtual machine). So a worker never asks while the
caller is likely to hold it: it polls for the next job in compiled code without the GIL, then polls
a few microseconds more, while the caller starts its own first chunk (``_spin.report_then_wait``).
That sets the smallest kernel worth sharing (the thresholds in matmul.py, attention.py, _rows.py).

The thread count is ``minigrad.set_num_threads(n)`` / ``get_num_threads()``, read at start from
``MINIGRAD_NUM_THREADS`` (or numba's ``NUMBA_NUM_THREADS``), else the cores this process may use.
"""
import itertools
import numbers
import os
import threading

import numpy as np


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
    """One kernel launch: the chunks of range(n_items) that the threads share out.

    Chunks are handed out, and counted when finished, by ``itertools.count``, whose ``next`` is
    atomic under the GIL. The caller waits only for chunks that some thread has taken: a worker that
    wakes late (its core busy with another program) finds nothing left and holds nobody up.
    """

    def __init__(self, kernel, args, n_items, n_chunks):
        self.kernel, self.args, self.n_items, self.n_chunks = kernel, args, n_items, n_chunks
        self.next_chunk = itertools.count().__next__
        self.count_finished = itertools.count(1).__next__
        self.finished = threading.Event()  # set by whoever finishes the last chunk
        self.error = None
        self.pool = self.number = None  # set by the pool that runs it

    def work(self, report=True):
        """Take chunks until none is left (called by every thread of the launch); True if this
        thread finished the last chunk. report=False: a worker, which reports that in its next
        poll instead (``_spin.report_then_wait``), once it has let go of the GIL."""
        n_items, n_chunks = self.n_items, self.n_chunks
        while True:
            c = self.next_chunk()
            if c >= n_chunks:
                return False
            try:
                self.kernel(*self.args, c * n_items // n_chunks, (c + 1) * n_items // n_chunks)
            except BaseException as error:  # re-raised in the caller's thread
                self.error = error
            if self.count_finished() == n_chunks:
                if self.pool is not None and report:
                    self.pool.counters[_FINISHED] = self.number  # for the caller polling it
                self.finished.set()
                return True


_STARTED, _FINISHED = 0, 1  # the pool's counters: number of the latest job; of the latest finished


class _Worker:
    """A daemon thread that helps with each job of the pool. Between jobs it polls the pool's job
    counter for a moment (``_spin``), then sleeps until woken."""

    def __init__(self, pool):
        self.wake = threading.Event()
        self.pool = pool
        threading.Thread(target=self._loop, name="minigrad-worker", daemon=True).start()

    def _loop(self):
        seen = finished = 0
        counters = self.pool.counters
        while True:
            number = _spin.report_then_wait(counters, _FINISHED, finished, _STARTED, seen, _spin.POLLS, _spin.SETTLE)
            finished = 0
            if number == seen:  # no job came while polling: sleep
                self.wake.wait()
                self.wake.clear()
                number = int(counters[_STARTED])
            seen = number
            job = self.pool.job
            if job is not None and job.work(report=False):
                finished = job.number  # it finished the last chunk: the next report_then_wait says so


class _Pool:
    """Worker threads shared by all kernels of the process; one launch uses them at a time."""

    def __init__(self):
        self.workers = []
        self.busy = threading.Lock()
        self.job = None
        self.counters = np.zeros(2, dtype=np.int64)  # _STARTED, _FINISHED: polled by the threads

    def run(self, job, n_threads):
        if not self.busy.acquire(blocking=False):
            job.work()  # another thread's kernel has the workers: run this one on its caller
            return
        try:
            while len(self.workers) < n_threads - 1:
                self.workers.append(_Worker(self))
            job.pool, job.number = self, int(self.counters[_STARTED]) + 1
            self.job = job
            self.counters[_STARTED] = job.number  # polling workers start now,
            for worker in self.workers[: n_threads - 1]:
                worker.wake.set()  # sleeping ones when woken
            if not job.work():  # chunks may still run on other threads: poll, then sleep
                if not _spin.wait_until_equal(self.counters, _FINISHED, job.number, _spin.POLLS):
                    job.finished.wait()
            self.job = None
        finally:
            self.busy.release()


_pool = None
_pool_lock = threading.Lock()
_spin = None  # the module _spin, imported with the first pool


def _forget_pool():
    """In a forked child: the parent's worker threads do not exist there; start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def parallel_for(kernel, n_items, *args, chunks_per_thread=2, threads=None):
    """``kernel(*args, start, stop)`` over ``range(n_items)``, in chunks shared by the threads.

    With one thread (or one item) it is the single call ``kernel(*args, 0, n_items)``.
    ``chunks_per_thread`` > 1 cuts finer, so that a thread slowed by another program on its core
    leaves more of the work to the others. ``threads`` caps the thread count for this launch.
    """
    global _pool
    n_threads = min(_n_threads if threads is None else threads, n_items)
    if n_threads <= 1:
        if n_items > 0:
            kernel(*args, 0, n_items)
        return
    job = _Job(kernel, args, n_items, min(n_items, n_threads * chunks_per_thread))
    pool = _pool
    if pool is None:
        global _spin
        from . import _spin  # (numba: only compiled kernels run in parallel)

        with _pool_lock:
            pool = _pool = _pool or _Pool()
    pool.run(job, n_threads)
    if job.error is not None:
        raise job.error
