"""The thread pool's compiled half (``_parallel.py``): how threads hand out chunks of a kernel and
wait for each other without the GIL.

A worker thread spends its whole life between kernels here, in compiled code that holds no GIL:

    serve:        poll the job counter; when a new job appears, take its chunks (run_chunks) and
                  poll again; after a fraction of a millisecond with no job, return to Python to
                  sleep. Every microsecond or two of polling, offer the core to any other thread
                  waiting for it (``sched_yield``): beside a busy program, polling must not
                  take the core that program, or the caller's own Python code, needs
    run_chunks:   claim the next chunk of the job (compare-and-swap on one counter), call the
                  kernel's compiled entry on it (``_entries.py``), count it done; until none is left
    launch:       (the caller) publish the job, take chunks like any worker, then poll until every
                  chunk taken by another thread is done

So handing a chunk to a polling worker costs about as much as one cache line moving between cores,
well under a microsecond: the caller writes four numbers, the worker sees them and starts. Going
through Python instead (a worker taking the GIL to call the kernel) costs about ten microseconds,
and a thread that asks for the GIL while another holds it is put to sleep.

A kernel with no compiled entry (a plain Python function, in the tests) still runs on the pool: its
job is published with entry 0, and ``serve`` returns it to Python to run. That path keeps the GIL
out of the way as well as it can: a worker returns to Python only a few microseconds after the job
appears (``settle``), when the caller has let go of the GIL to run its own first chunk, and it
reports "I finished the last chunk" only from its next compiled poll, once it has let go of it.

The counters array (int64, one field per cache line where threads write):
- ``STARTED``: number of the latest job (1, 2, ...). The fields of job j sit at ``_slot(j)``
  (addresses of the entry, the kernel and the arguments; items, chunks, helpers); two sets of fields alternate,
  so a worker that reads job j's fields late never sees job j + 1's half written;
- ``NEXT``: (job << 32) | (chunks taken from the front << 16) | chunks taken from the back.
  Claiming a chunk is one compare-and-swap that checks the job number too: a worker still busy
  with an old job can never take a chunk of the next one;
- ``DONE``: chunks of the current job done; the caller waits until it equals the chunk count;
- ``FINISHED``: the latest Python job whose last chunk a worker finished.

A loop that reads ``counters[i]`` and writes nothing would be compiled to read it once: LLVM may
assume no one else changes it. ``_load_acquire`` is an atomic load, which must read the memory
every time and so sees the other threads' writes; the other atomics are LLVM's own instructions.
"""
from ._jit import jit  # first: it sets LLVM options before numba is imported

import sys  # noqa: E402

from llvmlite import ir  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

POLLS = 200_000  # how often to look before sleeping: a fraction of a millisecond
YIELD_EVERY = 2_000  # polls (a microsecond or two) between offers of the core to another thread
SETTLE = 30_000  # polls (a few microseconds) a worker waits before it runs a Python job: see above

STARTED, NEXT, DONE, FINISHED = 0, 8, 16, 24  # (8 int64 = 64 bytes apart: a cache line each)
FIELDS = 32  # job j's fields at FIELDS + 8 * (j % 2): ENTRY, KERNEL, BLOCK, N_ITEMS, N_CHUNKS, N_HELPERS
ENTRY, KERNEL, BLOCK, N_ITEMS, N_CHUNKS, N_HELPERS = range(6)
SIZE = FIELDS + 16
_JOB_SHIFT, _BACK_BITS = 32, 16  # NEXT = job << 32 | chunks taken from the front << 16 | from the back
_BACK_MASK = (1 << _BACK_BITS) - 1
MAX_CHUNKS = _BACK_MASK


def _counter(context, builder, signature, args):
    """Pointer to counters[index] (args[0], args[1]) of a 1-D int64 array."""
    array = context.make_array(signature.args[0])(context, builder, args[0])
    return builder.gep(array.data, [args[1]])


def _int64_vector(counters):
    return isinstance(counters, types.Array) and counters.dtype == types.int64 and counters.ndim == 1


@intrinsic
def _load_acquire(typingctx, counters, index):
    """counters[index] of a 1-D int64 array, read from memory with an atomic load."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_counter(context, builder, signature, args), "acquire", 8)

    return types.int64(counters, types.intp), codegen


@intrinsic
def _store_release(typingctx, counters, index, value):
    """counters[index] = value, as an atomic store: a thread that reads it also sees every write
    this thread made before it."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        builder.store_atomic(args[2], _counter(context, builder, signature, args), "release", 8)
        return context.get_dummy_value()

    return types.none(counters, types.intp, types.int64), codegen


@intrinsic
def _fetch_add(typingctx, counters, index, value):
    """counters[index] += value, atomically; returns the value before."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        return builder.atomic_rmw("add", _counter(context, builder, signature, args), args[2], "seq_cst")

    return types.int64(counters, types.intp, types.int64), codegen


@intrinsic
def _compare_and_swap(typingctx, counters, index, expected, new):
    """If counters[index] == expected, set it to new, atomically; True if it did."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        pair = builder.cmpxchg(_counter(context, builder, signature, args), args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)

    return types.boolean(counters, types.intp, types.int64, types.int64), codegen


@intrinsic
def _call_entry(typingctx, entry, kernel, block, start, stop):
    """Call the C function at address ``entry``: void entry(kernel, block, start, stop), all int64."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        function = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [i64] * 4).as_pointer())
        builder.call(function, args[1:])
        return context.get_dummy_value()

    return types.none(*[types.int64] * 5), codegen


@intrinsic
def _yield_cpu(typingctx):
    """Let another thread that is waiting for this core run now (POSIX ``sched_yield``); when
    none is waiting, it returns at once. Nothing on Windows."""
    def codegen(context, builder, signature, args):
        if not sys.platform.startswith("win"):
            signature = ir.FunctionType(ir.IntType(32), [])
            function = cgutils.get_or_insert_function(builder.module, signature, "sched_yield")
            builder.call(function, [])
        return context.get_dummy_value()

    return types.none(), codegen


@jit
def _slot(job):
    return FIELDS + 8 * (job % 2)


@jit
def run_chunks(counters, job, from_back):
    """Take chunks of job ``job`` and run them until none is left (or another job has begun).

    The caller takes chunks from the front, workers from the back: when both keep pace, each
    thread gets the same rows in every launch of the same shape, so a backward kernel reads the
    rows its own thread's forward kernel wrote, still in that core's cache."""
    fields = _slot(job)
    entry, kernel, block = counters[fields + ENTRY], counters[fields + KERNEL], counters[fields + BLOCK]
    n_items, n_chunks = counters[fields + N_ITEMS], counters[fields + N_CHUNKS]
    while True:
        claim = _load_acquire(counters, NEXT)
        front, back = (claim >> _BACK_BITS) & _BACK_MASK, claim & _BACK_MASK
        if (claim >> _JOB_SHIFT) != job or front + back >= n_chunks:
            return
        if from_back:
            chunk, taken = n_chunks - 1 - back, claim + 1
        else:
            chunk, taken = front, claim + (1 << _BACK_BITS)
        if _compare_and_swap(counters, NEXT, claim, taken):
            _call_entry(entry, kernel, block, chunk * n_items // n_chunks, (chunk + 1) * n_items // n_chunks)
            _fetch_add(counters, DONE, 1)


@jit
def serve(counters, worker, seen, report, polls, settle):
    """A worker between jobs: -> (latest job seen, True if it is a Python job to run).

    Every YIELD_EVERY polls it offers the core to another thread (``_yield_cpu``).

    Stores FINISHED = report first (if report > 0). Runs the chunks of every compiled job that
    appears; returns when a Python job appears, or after ``polls`` polls with nothing new. Worker
    number ``worker`` (0, 1, ...) helps only with jobs whose helper count is above it."""
    if report > 0:
        _store_release(counters, FINISHED, report)
    idle = 0
    while idle < polls:
        job = _load_acquire(counters, STARTED)
        if job == seen:
            idle += 1
            if idle % YIELD_EVERY == 0:
                _yield_cpu()  # (beside a busy program, give it the core rather than spin)
            continue
        seen, idle = job, 0
        fields = _slot(job)
        if counters[fields + N_HELPERS] <= worker:
            continue
        if counters[fields + ENTRY] == 0:  # a Python job: let the caller get into its chunk first
            for _ in range(settle):
                _load_acquire(counters, STARTED)
            return seen, True
        run_chunks(counters, job, True)
    return seen, False


@jit
def publish(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers):
    """Make job number ``job`` the current one (entry 0: a Python job)."""
    fields = _slot(job)
    counters[fields + ENTRY] = entry
    counters[fields + KERNEL] = kernel
    counters[fields + BLOCK] = block
    counters[fields + N_ITEMS] = n_items
    counters[fields + N_CHUNKS] = n_chunks
    counters[fields + N_HELPERS] = n_helpers
    _store_release(counters, DONE, 0)
    _store_release(counters, NEXT, job << _JOB_SHIFT)
    _store_release(counters, STARTED, job)  # (release: whoever sees it sees the fields above)


@jit
def wait_done(counters, n_chunks, polls):
    """Poll until all ``n_chunks`` chunks of the current job are done, at most ``polls`` times,
    offering the core to another thread every YIELD_EVERY polls; True if they are done."""
    for i in range(polls):
        if _load_acquire(counters, DONE) == n_chunks:
            return True
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            _yield_cpu()  # (a worker that lost its core may be waiting for this one)
    return False


@jit
def launch(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers, polls):
    """The caller of a compiled job: publish it, take chunks, then wait for the others' (at most
    ``polls`` polls). True if every chunk is done."""
    publish(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers)
    run_chunks(counters, job, False)
    return wait_done(counters, n_chunks, polls)


@jit
def wait_until_equal(counters, index, value, polls):
    """Poll counters[index] until it is `value`, at most `polls` times; True if it got there."""
    for _ in range(polls):
        if _load_acquire(counters, index) == value:
            return True
    return False
