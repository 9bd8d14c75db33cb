"""The thread pool's invariants (kernels/_parallel.py, _spin.py) under the accidents of a long run:
job numbers that wrap around after 2^31 - 2 launches, a launch stopped between choosing its job
number and publishing it (Ctrl-C, an argument the block refuses), a compiled kernel that raises,
and nonsense chunk counts. Every launch runs in a thread joined with a timeout, so that a pool
that hangs fails the test instead of stopping the suite."""
import re
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad.kernels import _parallel
from minigrad.kernels._jit import jit

TIMEOUT = 60  # seconds for work that takes well under one on an idle machine


@jit
def _add_ones(out, start, stop):
    for i in range(start, stop):
        out[i] += 1


@jit
def _add_ones_except(out, bad, start, stop):
    """out[i] += 1, but raise on item ``bad``."""
    for i in range(start, stop):
        if i == bad:
            raise ValueError("item is bad")
        out[i] += 1


def _python_add_ones(out, start, stop):
    out[start:stop] += 1


def _within(seconds, work, *args, **kwargs):
    """Run ``work(*args, **kwargs)`` in a daemon thread; fail if it has not returned after ``seconds``."""
    errors = []

    def body():
        try:
            work(*args, **kwargs)
        except BaseException as error:  # (raised below, in the test's thread)
            errors.append(error)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: a launch hangs"
    if errors:
        raise errors[0]


@pytest.fixture
def fresh_pool(monkeypatch):
    """A new pool (its own workers and counters) for one test, with 4 threads; the process's pool
    and thread count come back afterwards, even if this one is left hanging."""
    _parallel.parallel_for(_add_ones, 2, np.zeros(2, dtype=np.int64), threads=2)  # (imports _spin)
    monkeypatch.setattr(_parallel, "_pool", _parallel._Pool())
    before = mg.get_num_threads()
    mg.set_num_threads(4)
    yield _parallel._pool
    mg.set_num_threads(before)


def _many_launches(n_launchers, launches, kernel=_add_ones):
    """``n_launchers`` threads launch ``kernel`` at once, ``launches`` times each, on arrays of
    1..64 items with 1..3 chunks per thread; every item must be counted exactly once."""
    counts = [np.zeros(64, dtype=np.int64) for _ in range(n_launchers)]
    go = threading.Barrier(n_launchers)

    def launcher(out):
        go.wait()
        for launch in range(launches):
            _parallel.parallel_for(kernel, 1 + launch % 64, out, chunks_per_thread=1 + launch % 3)

    threads = [threading.Thread(target=launcher, args=(out,), daemon=True) for out in counts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a launch hangs"
    expected = np.array([sum(1 for launch in range(launches) if i < 1 + launch % 64) for i in range(64)])
    for out in counts:
        np.testing.assert_array_equal(out, expected)


# ------------------------------------------------------------------------------- job numbers wrap
def test_job_numbers_wrap_around_and_every_item_is_counted_once(fresh_pool):
    """Start just below the last job number: the launches cross it (compiled and Python kernels,
    from two threads at once on a pool of four) and every item is counted once."""
    from minigrad.kernels import _spin

    assert _spin.LAST_JOB == 2**31 - 2 and _spin.LAST_JOB % 2 == 0
    assert _spin.next_job(_spin.LAST_JOB) == 1 and _spin.next_job(1) == 2
    fresh_pool.counters[_spin.STARTED] = _spin.LAST_JOB - 40
    _within(TIMEOUT, _many_launches, 2, 200)
    started = int(fresh_pool.counters[_spin.STARTED])
    assert 1 <= started < 400, f"the job numbers did not wrap around (latest: {started})"
    fresh_pool.counters[_spin.STARTED] = _spin.LAST_JOB - 5
    _within(TIMEOUT, _many_launches, 1, 20, _python_add_ones)
    assert 1 <= fresh_pool.counters[_spin.STARTED] < 20


def test_a_job_number_fits_in_next_with_the_sign_bit_clear(fresh_pool):
    """NEXT = job << 32 | chunks taken: at the last job number it is still a positive int64."""
    from minigrad.kernels import _spin

    fresh_pool.counters[_spin.STARTED] = _spin.LAST_JOB - 1
    out = np.zeros(8, dtype=np.int64)
    _within(TIMEOUT, _parallel.parallel_for, _add_ones, 8, out)
    assert fresh_pool.counters[_spin.STARTED] == _spin.LAST_JOB
    assert fresh_pool.counters[_spin.NEXT] > 0 and fresh_pool.counters[_spin.NEXT] >> 32 == _spin.LAST_JOB
    np.testing.assert_array_equal(out, np.ones(8, dtype=np.int64))


# ------------------------------------------------------------------------------- a launch stopped before it is published
@pytest.mark.parametrize("accident", [KeyboardInterrupt, ValueError])
def test_a_launch_stopped_before_it_is_published_uses_up_no_job_number(fresh_pool, monkeypatch, accident):
    """Ctrl-C (or an argument the block refuses) while the arguments are packed, between choosing
    the job's number and publishing the job: the next launches, from two threads at once, still
    count every item exactly once, and none hangs."""
    from minigrad.kernels import _entries, _spin

    _parallel.parallel_for(_add_ones, 8, np.zeros(8, dtype=np.int64))
    started = int(fresh_pool.counters[_spin.STARTED])
    pack = _entries.pack
    calls = []

    def pack_that_fails_once(*args):
        calls.append(args)
        if len(calls) == 1:
            raise accident("while packing the arguments")
        return pack(*args)

    monkeypatch.setattr(_entries, "pack", pack_that_fails_once)
    with pytest.raises(accident):
        _parallel.parallel_for(_add_ones, 8, np.zeros(8, dtype=np.int64))
    assert fresh_pool.counters[_spin.STARTED] == started  # nothing published
    out = np.zeros(8, dtype=np.int64)
    _within(TIMEOUT, _parallel.parallel_for, _add_ones, 8, out)
    # no number used up: the next job takes the other slot, as every job after its predecessor
    # (a skipped number would put it in its predecessor's slot, where a late worker of that one
    # could claim a chunk of it under the old number)
    assert fresh_pool.counters[_spin.STARTED] == _spin.next_job(started)
    np.testing.assert_array_equal(out, np.ones(8, dtype=np.int64))
    _within(TIMEOUT, _many_launches, 2, 300)


def test_launches_between_refused_launches_count_every_item_once(fresh_pool, monkeypatch):
    """Thousands of launches, each followed by one whose arguments the block refuses, on five
    threads: each refused launch would have skipped a job number."""
    from minigrad.kernels import _entries

    mg.set_num_threads(5)
    pack = _entries.pack

    def refuse_four_arguments(block, floats, address, args):
        if len(args) == 4:
            raise OverflowError("an argument the block cannot hold")
        return pack(block, floats, address, args)

    monkeypatch.setattr(_entries, "pack", refuse_four_arguments)
    out = np.zeros(64, dtype=np.int64)

    def launches():
        for launch in range(3000):
            _parallel.parallel_for(_add_ones, 1 + launch % 64, out, chunks_per_thread=1 + launch % 3)
            with pytest.raises(OverflowError):
                _parallel.parallel_for(_add_ones, 8, out, 1, 2, 3)

    _within(TIMEOUT, launches)
    expected = np.array([sum(1 for launch in range(3000) if i < 1 + launch % 64) for i in range(64)])
    np.testing.assert_array_equal(out, expected)


def test_an_integer_too_large_for_the_block_leaves_the_pool_sound(fresh_pool):
    """An int argument beyond int64 cannot be packed: the launch raises, and the next ones are
    complete."""
    @jit
    def add(out, value, start, stop):
        for i in range(start, stop):
            out[i] += value

    with pytest.raises((OverflowError, ValueError, TypeError)):
        _parallel.parallel_for(add, 8, np.zeros(8, dtype=np.int64), 2**70)
    _within(TIMEOUT, _many_launches, 2, 300)


def test_an_interrupted_python_job_starts_no_more_chunks(fresh_pool):
    """Ctrl-C in the caller's own chunk of a Python job: the job stops (the chunks not yet taken
    are never run), the caller gets the KeyboardInterrupt at once, and the next launches are
    complete."""
    calls = []

    def interrupted(out, start, stop):
        calls.append(start)
        if len(calls) == 1:
            raise KeyboardInterrupt
        out[start:stop] += 1

    with pytest.raises(KeyboardInterrupt):
        _within(TIMEOUT, _parallel.parallel_for, interrupted, 1000, np.zeros(1000), chunks_per_thread=16)
    assert len(calls) < 64  # (4 threads x 16 chunks; the others took at most a few meanwhile)
    _within(TIMEOUT, _many_launches, 2, 100, _python_add_ones)


# ------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("n_threads", [2, 4])
def test_a_compiled_kernel_that_raises_raises_in_the_caller(fresh_pool, n_threads):
    """The kernel raises on one item, in whichever thread's chunk it falls: the caller gets the
    kernel's own error, through the compiled entry, and the pool still works afterwards."""
    mg.set_num_threads(n_threads)
    for bad in (0, 37, 99):
        out = np.zeros(100, dtype=np.int64)
        with pytest.raises(ValueError, match="item is bad"):
            _within(TIMEOUT, _parallel.parallel_for, _add_ones_except, 100, out, bad, chunks_per_thread=4)
    assert any(all(found) for found in _parallel._entries_by_kernel[_add_ones_except].values()), \
        "the kernel ran from Python, not through its compiled entry"
    out = np.zeros(100, dtype=np.int64)
    _within(TIMEOUT, _parallel.parallel_for, _add_ones_except, 100, out, -1)
    np.testing.assert_array_equal(out, np.ones(100, dtype=np.int64))


@pytest.mark.parametrize("kernel", [_add_ones, _python_add_ones], ids=["compiled", "python"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_chunks_per_thread_must_be_at_least_one(fresh_pool, kernel, bad):
    with pytest.raises(ValueError, match="parallel_for: chunks_per_thread"):
        _within(TIMEOUT, _parallel.parallel_for, kernel, 10, np.zeros(10, dtype=np.int64), chunks_per_thread=bad)


@pytest.mark.parametrize("bad", [0, -2, 2.0])
def test_threads_must_be_at_least_one(bad):
    with pytest.raises(ValueError, match="parallel_for: threads"):
        _parallel.parallel_for(_add_ones, 10, np.zeros(10, dtype=np.int64), threads=bad)


def test_a_worker_survives_an_exception_and_reports_it(fresh_pool, monkeypatch):
    """An exception in a worker's own loop (not in a kernel) does not end the thread: the next
    launch raises it in the caller, and the worker serves the launches after that."""
    from minigrad.kernels import _spin

    _parallel.parallel_for(_add_ones, 8, np.zeros(8, dtype=np.int64))
    serve, failures = _spin.serve, []

    def serve_that_fails_once(*args):
        if not failures:
            failures.append(True)
            raise RuntimeError("the worker's loop broke")
        return serve(*args)

    monkeypatch.setattr(_spin, "serve", serve_that_fails_once)
    reported = None
    for _ in range(1000):  # Python jobs bring the workers back to Python, and so to serve: one fails
        try:
            _within(TIMEOUT, _parallel.parallel_for, _python_add_ones, 8, np.zeros(8))
            if any(w.error is not None for w in fresh_pool.workers):
                _parallel.parallel_for(_add_ones, 8, np.zeros(8, dtype=np.int64))
        except RuntimeError as error:  # (the launch after the failure reports it)
            reported = error
            break
    assert reported is not None, "no worker's failure was reported"
    assert re.fullmatch(r"parallel_for: worker thread \d of minigrad's pool failed with RuntimeError: the "
                        r"worker's loop broke \(it will try again at the next launch\)", str(reported))
    _within(TIMEOUT, _many_launches, 1, 200, _python_add_ones)
    assert all(w.error is None and w.thread.is_alive() for w in fresh_pool.workers)
