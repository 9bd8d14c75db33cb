"""The thread pool's compiled half (``_parallel.py``): how threads hand out chunks of a kernel and
wait for each other without the GIL.

A worker thread spends its whole life between kernels here, in compiled code that holds no GIL:

    serve:        poll the job counter; when a new job appears, take its chunks (run_chunks) and
                  poll again; after two milliseconds (POLL_NS) with no job, sleep until the next
                  job wakes it (Linux's futex; elsewhere it returns to Python to sleep)
    run_chunks:   claim the next chunk of the job (compare-and-swap on one counter), call the
                  kernel's compiled entry on it (``_entries.py``), count it done; until none is left
    launch:       (the caller) publish the job, take chunks like any worker, then wait until every
                  chunk taken by another thread is done (wait_done: poll, then sleep)

So handing a chunk to a polling worker costs about as much as one cache line moving between cores,
well under a microsecond: the caller writes four numbers, the worker sees them and starts. Going
through Python instead (a worker taking the GIL to call the kernel) costs about ten microseconds,
and a thread that asks for the GIL while another holds it is put to sleep.

A kernel with no compiled entry (a plain Python function, in the tests) still runs on the pool: its
job is published with entry 0, and ``serve`` returns it to Python to run. That path keeps the GIL
out of the way as well as it can: a worker returns to Python only a few microseconds after the job
appears (``settle``), when the caller has let go of the GIL to run its own first chunk, and it
reports "I finished the last chunk" only from its next compiled poll, once it has let go of it.

Sharing the machine with another busy program. Polling is the fastest way to wait, and the worst
when another program wants the core: Linux shares a core between the threads that want it, so
a poller spends its share polling, and when a job comes it may wait a whole time slice (a
millisecond or more) for its turn, while the caller waits for its chunk. A thread that sleeps
instead keeps its claim: woken, it gets the core at once. So the threads poll long on a quiet
machine and only briefly on a contended one, and what tells them apart is measured:

- a worker compares, before it sleeps, the time since it woke with the time it ran on a core
  (two clocks, ``_now_ns`` and ``_thread_cpu_ns``). If it was kept waiting for its core more than
  LOST_CORE_NS, and more than an eighth of that time, it asks Python (LOST_CORE) whether more
  threads want to run than the machine has cores; if so, the machine counts as contended for
  CONTENDED_NS (the ``CONTENDED`` field);
- the machine also counts as contended on a first start, while the compile-ahead process
  (``_warm.py``) compiles on another core (``_parallel._Pool``);
- while contended, a worker sleeps after SHORT_POLL_NS of polling instead of POLL_NS, and the
  caller waits for the others' chunks SHORT_POLLS polls before it sleeps;
- a worker that finds itself on the caller's own core (``_getcpu``, CALLER_CPU) asks Python to
  move it off (MOVE): there the two would only take turns, with another core free or shared.

Where none of this exists (not Linux) the threads poll as on a quiet machine, offering the core
to any other thread waiting for it (``sched_yield``) every CHECK_EVERY polls, and sleep in Python.
On Linux they do not yield while polling: yielding gives the core away for a whole time slice
when another program waits for it.

The counters array (int64, one field per cache line where threads write):
- ``STARTED``: number of the latest published job. The fields of job j sit at ``_slot(j)``
  (addresses of the entry, the kernel and the arguments; items, chunks, helpers); two sets of fields alternate,
  so a worker that reads job j's fields late never sees job j + 1's half written;
- ``NEXT``: (job << 32) | (chunks taken from the front << 16) | chunks taken from the back.
  Claiming a chunk is one compare-and-swap that checks the job number too: a worker still busy
  with an old job can never take a chunk of the next one;
- ``DONE``: chunks of the current job done; the caller waits until it equals the chunk count;
- ``FAILED``: 0, or 1 + the first chunk of the current job whose kernel raised (the caller then
  raises the kernel's error: ``_parallel.py``);
- ``FINISHED``: the latest Python job whose last chunk a worker finished;
- ``SLEEPERS``, ``WAITING``: workers asleep in the futex on ``STARTED``, callers asleep on ``DONE``
  (whoever changes that field wakes them);
- ``CONTENDED``: until when (``_now_ns``) the machine counts as contended.

Job numbers. They run 1, 2, ..., LAST_JOB = 2^31 - 2, then start again at 1 (``next_job``):
- never 0, the number a new worker has "seen" before any job;
- below 2^31, so that ``job << 32`` stays a positive int64 in ``NEXT`` (it is stored and compared
  masked with JOB_MASK all the same);
- LAST_JOB is even, so that even after the wrap two jobs in a row use the two sets of fields (and
  the two argument blocks of ``_parallel.py``) in turn.
A job counts as *published* from the moment ``publish`` writes its number into ``STARTED``, and
only then: the next job's number is always ``next_job(STARTED)``, so a launch that stops before
``publish`` (an error, Ctrl-C) uses up no number and leaves nothing half-published. ``publish``
and ``launch`` are compiled: Ctrl-C cannot stop them half-way (Python looks at signals only
between its own bytecodes).

A loop that reads ``counters[i]`` and writes nothing would be compiled to read it once: LLVM may
assume no one else changes it. ``_load_acquire`` is an atomic load, which must read the memory
every time and so sees the other threads' writes; the other atomics are LLVM's own instructions.
"""
from ._jit import jit  # first: it sets LLVM options before numba is imported

import platform  # noqa: E402
import sys  # noqa: E402

from llvmlite import ir  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

POLL_NS = 2_000_000  # how long a worker polls for the next job before it sleeps, in ns (see below)
SHORT_POLL_NS = 10_000  # the same on a contended machine
POLLS = 200_000  # how often to look before sleeping, where the count is the budget (wait_until_equal)
SHORT_POLLS = 20_000  # the caller's wait for other threads' chunks on a contended machine: microseconds
CHECK_EVERY = 2_000  # polls (a microsecond or two) between readings of the clock
LOST_CORE_NS = 200_000  # kept off its core this long while awake (and more than 1/LOST_SHARE of
LOST_SHARE = 8  # that time): is another program busy?
CONTENDED_NS = 200_000_000  # how long the machine counts as contended after a yes
SETTLE = 30_000  # polls (a few microseconds) a worker waits before it runs a Python job: see above

STARTED, NEXT, DONE, FINISHED, SLEEPERS, WAITING, CONTENDED, FAILED = 0, 8, 16, 24, 32, 40, 48, 56  # (a cache line each)
FIELDS = 64  # job j's fields at FIELDS + 8 * (j % 2)
ENTRY, KERNEL, BLOCK, N_ITEMS, N_CHUNKS, N_HELPERS, CALLER_CPU = range(7)
PYTHON_JOB, SLEEP, LOST_CORE, MOVE = 0, 1, 2, 3  # what serve asks of Python (MOVE + c: move off CPU c)
SIZE = FIELDS + 16
_JOB_SHIFT, _BACK_BITS = 32, 16  # NEXT = job << 32 | chunks taken from the front << 16 | from the back
_BACK_MASK = (1 << _BACK_BITS) - 1
MAX_CHUNKS = _BACK_MASK
JOB_MASK = (1 << 31) - 1  # job numbers fit in 31 bits: job << 32 keeps the sign bit of NEXT clear
LAST_JOB = JOB_MASK - 1  # then 1 again; even, so that jobs keep alternating between the two slots


def next_job(job):
    """The number of the job after job ``job``: 1, 2, ..., LAST_JOB, 1, ... (see above)."""
    return job % LAST_JOB + 1


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
def _load_in_order(typingctx, counters, index):
    """counters[index], read with an atomic load in order with every other such atomic
    (``seq_cst``). Before a thread sleeps, it writes "I sleep" and then reads whether there is
    work; whoever gives work writes it and then reads "anyone asleep?". Only loads in order with
    the other thread's write make sure that at least one of the two sees the other's write."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_counter(context, builder, signature, args), "seq_cst", 8)

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
def _exchange(typingctx, counters, index, value):
    """counters[index] = value, atomically and in order with every other atomic (seq_cst)."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        builder.atomic_rmw("xchg", _counter(context, builder, signature, args), args[2], "seq_cst")
        return context.get_dummy_value()

    return types.none(counters, types.intp, types.int64), codegen


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
    """Call the C function at address ``entry``: int64 entry(kernel, block, start, stop), all int64;
    it returns 0, or 1 if the kernel raised (``_entries.py``)."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        function = builder.inttoptr(args[0], ir.FunctionType(i64, [i64] * 4).as_pointer())
        return builder.call(function, args[1:])

    return types.int64(*[types.int64] * 5), codegen


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


# Sleeping without Python: Linux's futex ("fast user-space mutex") system call puts a thread to
# sleep until another thread wakes it on the same address, if the 32-bit number there still has the
# value given. Elsewhere a worker sleeps in Python instead (``_parallel._Worker``).
_FUTEX_CALL = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower(), 0)
CAN_SLEEP = sys.platform.startswith("linux") and _FUTEX_CALL != 0
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE


@intrinsic
def _futex(typingctx, counters, index, operation, value):
    """futex(&counters[index], operation, value): wait while its low 32 bits equal value, or wake
    up to ``value`` threads waiting there. Returns -1 at once where there is no futex."""
    if not _int64_vector(counters):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        if not CAN_SLEEP:
            return ir.Constant(i64, -1)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
        address = builder.ptrtoint(_counter(context, builder, signature, args), i64)
        low_bits = builder.and_(args[3], ir.Constant(i64, 0xFFFFFFFF))
        zero = ir.Constant(i64, 0)
        return builder.call(function, [ir.Constant(i64, _FUTEX_CALL), address, args[2], low_bits, zero, zero, zero])

    return types.int64(counters, types.intp, types.int64, types.int64), codegen


def _clock(clock_id):
    """An intrinsic that reads Linux's clock ``clock_id`` (``clock_gettime``) in nanoseconds; 0
    elsewhere."""
    def clock(typingctx):
        def codegen(context, builder, signature, args):
            i32, i64 = ir.IntType(32), ir.IntType(64)
            if not CAN_SLEEP:
                return ir.Constant(i64, 0)
            timespec = cgutils.alloca_once(builder, ir.ArrayType(i64, 2))  # seconds, nanoseconds
            function = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i32, [i32, timespec.type]), "clock_gettime")
            builder.call(function, [ir.Constant(i32, clock_id), timespec])
            seconds, nanoseconds = [builder.load(builder.gep(timespec, [ir.Constant(i32, 0), ir.Constant(i32, i)]))
                                    for i in (0, 1)]
            return builder.add(builder.mul(seconds, ir.Constant(i64, 1_000_000_000)), nanoseconds)

        return types.int64(), codegen

    return intrinsic(clock)


_now_ns = _clock(1)  # CLOCK_MONOTONIC: wall time (read without a system call)
_thread_cpu_ns = _clock(3)  # CLOCK_THREAD_CPUTIME_ID: the time this thread has run on a core


@intrinsic
def _getcpu(typingctx):
    """The CPU this thread runs on at this moment (Linux's ``sched_getcpu``); -1 elsewhere."""
    def codegen(context, builder, signature, args):
        if not CAN_SLEEP:
            return ir.Constant(ir.IntType(64), -1)
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "sched_getcpu")
        return builder.sext(builder.call(function, []), ir.IntType(64))

    return types.int64(), codegen


@jit
def _slot(job):
    return FIELDS + 8 * (job % 2)


@jit
def run_chunks(counters, job, from_back):
    """Take chunks of job ``job`` and run them until none is left (or another job has begun).

    The caller takes chunks from the front, workers from the back: when both keep pace, each
    thread gets the same rows in every launch of the same shape, so a backward kernel reads the
    rows its own thread's forward kernel wrote, still in that core's cache.

    A chunk whose kernel raised counts as done like any other; the first such chunk is noted in
    ``FAILED`` for the caller."""
    fields = _slot(job)
    entry, kernel, block = counters[fields + ENTRY], counters[fields + KERNEL], counters[fields + BLOCK]
    n_items, n_chunks = counters[fields + N_ITEMS], counters[fields + N_CHUNKS]
    while True:
        claim = _load_acquire(counters, NEXT)
        front, back = (claim >> _BACK_BITS) & _BACK_MASK, claim & _BACK_MASK
        if (claim >> _JOB_SHIFT) & JOB_MASK != job & JOB_MASK or front + back >= n_chunks:
            return
        if from_back:
            chunk, taken = n_chunks - 1 - back, claim + 1
        else:
            chunk, taken = front, claim + (1 << _BACK_BITS)
        if _compare_and_swap(counters, NEXT, claim, taken):
            if _call_entry(entry, kernel, block, chunk * n_items // n_chunks, (chunk + 1) * n_items // n_chunks):
                _compare_and_swap(counters, FAILED, 0, chunk + 1)  # (the first failure is kept)
            if _fetch_add(counters, DONE, 1) == n_chunks - 1 and _load_in_order(counters, WAITING) > 0:
                _futex(counters, DONE, _FUTEX_WAKE, 1)  # the last chunk: wake the caller


@jit
def _contended(counters, now):
    """True while the last sign of another program on this machine is recent (``CONTENDED``)."""
    return now < _load_acquire(counters, CONTENDED)


@jit
def serve(counters, worker, seen, report, poll_ns, short_poll_ns, settle, may_move):
    """A worker between jobs: -> (latest job seen, what Python should do: run a PYTHON_JOB,
    SLEEP, check the machine after LOST_CORE, or MOVE + c: move off CPU c).

    Stores FINISHED = report first (if report > 0). Runs the chunks of every compiled job that
    appears. Worker number ``worker`` (0, 1, ...) helps only with jobs whose helper count is above
    it. After ``poll_ns`` nanoseconds with nothing new (``short_poll_ns`` while the machine is
    contended) it sleeps in the futex until ``publish`` wakes it, or, with no futex, returns SLEEP.

    Why a time and not a number of polls: how long a poll takes differs between CPUs by ten times
    and more, and what matters is the time a training step spends in Python and numpy between two
    kernels (often over a tenth of a millisecond). A worker that has fallen asleep by then wakes
    too late to help with the next kernel (on a virtual machine, tens of microseconds), and the
    caller does most of it alone.

    Before it sleeps, it returns LOST_CORE if it was kept off its core for more than LOST_CORE_NS
    since it woke, and more than an eighth of that time (see the module's docstring). ``may_move``: return MOVE + c when it finds
    itself on CPU c, the caller's."""
    if report > 0:
        _store_release(counters, FINISHED, report)
    idle = 0
    awake, working = _now_ns(), _thread_cpu_ns()  # (since it last woke up)
    busy_until = awake  # when it last woke or finished a job
    while True:
        job = _load_acquire(counters, STARTED)
        if job == seen:
            idle += 1
            if idle % CHECK_EVERY != 0:
                continue
            now = _now_ns()
            if now - busy_until < (short_poll_ns if _contended(counters, now) else poll_ns):
                if not CAN_SLEEP:
                    _yield_cpu()  # (where it sleeps in Python, it offers the core meanwhile)
                continue
            lost = (now - awake) - (_thread_cpu_ns() - working)  # kept off its core while awake
            if lost > LOST_CORE_NS and lost * LOST_SHARE > now - awake:
                return seen, LOST_CORE
            if not CAN_SLEEP:
                return seen, SLEEP
            _fetch_add(counters, SLEEPERS, 1)  # nothing new for a while: sleep until publish wakes it
            if _load_in_order(counters, STARTED) == seen:
                _futex(counters, STARTED, _FUTEX_WAIT, seen)
            _fetch_add(counters, SLEEPERS, -1)
            idle = 0
            awake, working = _now_ns(), _thread_cpu_ns()
            busy_until = awake
            continue
        seen, idle = job, 0
        fields = _slot(job)
        if counters[fields + N_HELPERS] <= worker:
            continue
        if counters[fields + ENTRY] == 0:  # a Python job: let the caller get into its chunk first
            for _ in range(settle):
                _load_acquire(counters, STARTED)
            return seen, PYTHON_JOB
        if may_move:
            cpu = _getcpu()
            if cpu >= 0 and cpu == counters[fields + CALLER_CPU]:
                return seen - 1, MOVE + cpu  # (seen - 1: after moving, it serves this job too)
        run_chunks(counters, job, True)
        busy_until = _now_ns()


@jit
def publish(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers):
    """Make job number ``job`` (1 <= job <= LAST_JOB) the current one (entry 0: a Python job).
    The job counts as published once ``STARTED`` holds its number, the last write."""
    fields = _slot(job)
    counters[fields + ENTRY] = entry
    counters[fields + KERNEL] = kernel
    counters[fields + BLOCK] = block
    counters[fields + N_ITEMS] = n_items
    counters[fields + N_CHUNKS] = n_chunks
    counters[fields + N_HELPERS] = n_helpers
    counters[fields + CALLER_CPU] = _getcpu()
    _store_release(counters, DONE, 0)
    _store_release(counters, FAILED, 0)
    _store_release(counters, NEXT, (job & JOB_MASK) << _JOB_SHIFT)
    _exchange(counters, STARTED, job)  # (whoever sees it sees the fields above)
    if _load_in_order(counters, SLEEPERS) > 0:  # (checked after the exchange: see serve)
        _futex(counters, STARTED, _FUTEX_WAKE, 1 << 30)


@jit
def wait_done(counters, n_chunks, polls, short_polls):
    """Wait until all ``n_chunks`` chunks of the current job are done: poll up to ``polls`` times
    (``short_polls`` on a contended machine), then sleep in the futex until the thread that does
    the last chunk wakes this one. With no futex: False if they are not done after the polls.
    On a quiet machine it offers the core every CHECK_EVERY polls (a worker that lost its core
    may be waiting for this one)."""
    contended = _contended(counters, _now_ns())
    budget = short_polls if contended else polls
    for i in range(budget):
        if _load_acquire(counters, DONE) == n_chunks:
            return True
        if not contended and i % CHECK_EVERY == CHECK_EVERY - 1:
            _yield_cpu()
    if not CAN_SLEEP:
        return False
    while True:
        _fetch_add(counters, WAITING, 1)
        done = _load_in_order(counters, DONE)
        if done != n_chunks:
            _futex(counters, DONE, _FUTEX_WAIT, done)
        _fetch_add(counters, WAITING, -1)
        if _load_acquire(counters, DONE) == n_chunks:
            return True


@jit
def launch(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers, polls, short_polls):
    """The caller of a compiled job: publish it, take chunks, then wait for the others'
    (``wait_done``). -> ``FAILED`` (0, or 1 + a chunk whose kernel raised) once every chunk is
    done, or -1 if they are not done yet (no futex: the caller waits in Python)."""
    publish(counters, job, entry, kernel, block, n_items, n_chunks, n_helpers)
    run_chunks(counters, job, False)
    if not wait_done(counters, n_chunks, polls, short_polls):
        return -1
    return _load_acquire(counters, FAILED)


@jit
def wait_until_equal(counters, index, value, polls):
    """Poll counters[index] until it is `value`, at most `polls` times; True if it got there."""
    for _ in range(polls):
        if _load_acquire(counters, index) == value:
            return True
    return False
