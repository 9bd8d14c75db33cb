"""Waiting without sleeping, for the thread pool (``_parallel.py``).

Waking a sleeping thread costs tens of microseconds (more in a virtual machine, whose idle CPU
must be woken too), as long as a small kernel itself. So between kernels a worker thread first
*polls* a counter for a short while, in compiled code that holds no GIL, and only then sleeps; the
caller likewise polls for its last chunks before it sleeps. OpenMP's threads do the same.

A loop that reads ``counters[i]`` and writes nothing would be compiled to read it once: LLVM may
assume no one else changes it. ``_load_acquire`` is an atomic load, which must read the memory
every time and so sees the other threads' writes.
"""
from ._jit import jit  # first: it sets LLVM options before numba is imported

from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

POLLS = 200_000  # how often to look before sleeping: a fraction of a millisecond
SETTLE = 30_000  # polls (a few microseconds) a worker waits after a job appears: see report_then_wait


@intrinsic
def _load_acquire(typingctx, counters, index):
    """counters[index] of a 1-D int64 array, read from memory with an atomic load."""
    if not (isinstance(counters, types.Array) and counters.dtype == types.int64 and counters.ndim == 1):
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = builder.gep(array.data, [args[1]])
        return builder.load_atomic(pointer, "acquire", 8)

    return types.int64(counters, types.intp), codegen


@intrinsic
def _store_release(typingctx, counters, index, value):
    """counters[index] = value for a 1-D int64 array, as an atomic store (seen by polling threads)."""
    if not (isinstance(counters, types.Array) and counters.dtype == types.int64 and counters.ndim == 1):
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = builder.gep(array.data, [args[1]])
        builder.store_atomic(args[2], pointer, "release", 8)
        return context.get_dummy_value()

    return types.none(counters, types.intp, types.int64), codegen


@jit
def report_then_wait(counters, report_index, report, index, value, polls, settle):
    """A worker between jobs: store counters[report_index] = report (if report > 0), then poll
    counters[index] until it is no longer `value`, at most `polls` times, and return it.

    Both halves keep the GIL out of the way, since a thread that asks for the GIL while another
    holds it is put to sleep, and waking it costs as much as a small kernel:
    - the report ("I finished the last chunk of job n") is stored only once this thread has let go
      of the GIL, so the caller who wakes on it finds the GIL free;
    - once a new job appears, it keeps polling `settle` times more (a few microseconds) before
      returning to Python, which takes the GIL: by then the caller, who set the job going, has
      let go of the GIL to run its own first chunk."""
    if report > 0:
        _store_release(counters, report_index, report)
    for _ in range(polls):
        current = _load_acquire(counters, index)
        if current != value:
            for _ in range(settle):
                _load_acquire(counters, index)
            return current
    return _load_acquire(counters, index)


@jit
def wait_until_equal(counters, index, value, polls):
    """Poll counters[index] until it is `value`, at most `polls` times; True if it got there."""
    for _ in range(polls):
        if _load_acquire(counters, index) == value:
            return True
    return False
