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


@jit
def wait_while_equal(counters, index, value, polls):
    """Poll counters[index] until it is no longer `value`, at most `polls` times; return it."""
    for _ in range(polls):
        current = _load_acquire(counters, index)
        if current != value:
            return current
    return _load_acquire(counters, index)


@jit
def wait_until_equal(counters, index, value, polls):
    """Poll counters[index] until it is `value`, at most `polls` times; True if it got there."""
    for _ in range(polls):
        if _load_acquire(counters, index) == value:
            return True
    return False
