"""minigrad's thread pool (kernels/_parallel.py), the per-CPU matmul tile (kernels/_cpu.py), and the
behaviour they promise: every item computed once, errors raised in the caller, safe launches from
several threads, a fork after training, and a numpy backend that compiles nothing."""
import json
import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad.kernels import _cpu, _parallel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    """Run `code` in a fresh interpreter from the repository, with extra environment variables."""
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)


@pytest.fixture
def threads():
    """Set the thread count for one test, and put it back afterwards."""
    before = mg.get_num_threads()
    yield mg.set_num_threads
    mg.set_num_threads(before)


# ------------------------------------------------------------------------------- parallel_for
@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
@pytest.mark.parametrize("n_items", [0, 1, 2, 7, 100])
@pytest.mark.parametrize("chunks_per_thread", [1, 4])
def test_parallel_for_covers_every_item_once(threads, n_threads, n_items, chunks_per_thread):
    threads(n_threads)
    seen = np.zeros(n_items, dtype=np.int64)
    calls = []

    def kernel(out, start, stop):
        calls.append((start, stop))
        out[start:stop] += 1

    _parallel.parallel_for(kernel, n_items, seen, chunks_per_thread=chunks_per_thread)
    np.testing.assert_array_equal(seen, np.ones(n_items, dtype=np.int64))
    assert all(start < stop for start, stop in calls)  # no empty chunks
    assert len(calls) <= max(1, min(n_items, n_threads * chunks_per_thread))


def test_parallel_for_raises_the_kernels_error_in_the_caller(threads):
    threads(2)

    def kernel(start, stop):
        if start > 0:
            raise ValueError(f"bad chunk {start}")

    with pytest.raises(ValueError, match="bad chunk"):
        _parallel.parallel_for(kernel, 10)
    _parallel.parallel_for(lambda start, stop: None, 10)  # the pool still works afterwards


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_refuses_nonsense(bad):
    with pytest.raises(ValueError, match="set_num_threads"):
        mg.set_num_threads(bad)


def test_thread_count_from_the_environment():
    result = _python("import minigrad as mg; print(mg.get_num_threads())", MINIGRAD_NUM_THREADS="3")
    assert result.stdout.split() == ["3"], result.stderr
    result = _python("import minigrad", MINIGRAD_NUM_THREADS="zero")
    assert result.returncode != 0 and "MINIGRAD_NUM_THREADS" in result.stderr


def test_launches_from_two_threads_at_once_both_finish_correctly(threads):
    """Two threads launch kernels at the same moment (released together by an Event): one gets the
    pool, the other runs its kernel on its own thread; both results are complete."""
    threads(2)
    go = threading.Event()
    results, errors = {}, []

    def launch(name):
        try:
            go.wait()
            for _ in range(50):
                out = np.zeros(1000)

                def kernel(o, start, stop):
                    o[start:stop] += np.arange(start, stop)

                _parallel.parallel_for(kernel, 1000, out)
                results[name] = out
                assert out.sum() == 999 * 1000 / 2
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    workers = [threading.Thread(target=launch, args=(name,)) for name in "ab"]
    for w in workers:
        w.start()
    go.set()
    for w in workers:
        w.join(60)
    assert not errors, errors
    assert set(results) == {"a", "b"}


# ------------------------------------------------------------------------------- compiled kernels on the pool
from minigrad.kernels._jit import jit  # noqa: E402


@jit
def _add_ones(out, start, stop):
    for i in range(start, stop):
        out[i] += 1


@jit
def _mixed(x, mask, scale, offset, negate, out, start, stop):
    """out[r] = (-1 if negate else 1) * scale * x[r] + offset where mask[r], else 0 (x: any layout)."""
    sign = -1.0 if negate else 1.0
    for r in range(start, stop):
        for j in range(x.shape[1]):
            out[r, j] = sign * scale * x[r, j] + offset if mask[r % mask.shape[0], j] else 0.0


def _entry_address(kernel):
    entries = _parallel._entries_by_kernel.get(kernel) or {}
    return [found for found in entries.values() if all(found)]


@pytest.mark.parametrize("n_threads", [2, 3, 8])
@pytest.mark.parametrize("chunks_per_thread", [1, 4])
def test_a_compiled_kernel_runs_through_its_entry_and_covers_every_item_once(threads, n_threads, chunks_per_thread):
    threads(n_threads)
    for n_items in (2, 3, 7, 100, 1001):
        seen = np.zeros(n_items, dtype=np.int64)
        _parallel.parallel_for(_add_ones, n_items, seen, chunks_per_thread=chunks_per_thread)
        np.testing.assert_array_equal(seen, np.ones(n_items, dtype=np.int64))
    assert _entry_address(_add_ones), "the kernel ran from Python, not through a compiled entry"


def test_many_launches_in_a_row_lose_no_chunk(threads):
    """Thousands of tiny launches, one after the other: a worker still finishing one job must never
    take (or miss) a chunk of the next."""
    threads(3)
    out = np.zeros(64, dtype=np.int64)
    for launch in range(3000):
        _parallel.parallel_for(_add_ones, 1 + launch % 64, out, chunks_per_thread=1 + launch % 3)
    expected = np.array([sum(1 for launch in range(3000) if i < 1 + launch % 64) for i in range(64)])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_entry_unpacks_arrays_of_any_layout_floats_ints_and_bools(threads, dtype):
    """Arguments of every kind the entry block holds: a strided view, a bool mask, a float, an int, a
    bool; the result must equal the same kernel called directly."""
    threads(2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 14)).astype(dtype)[::2, 1::3]  # (30, 5), neither C nor F order
    mask = rng.random((3, 5)) > 0.3
    for negate in (False, True):
        expected = np.empty(x.shape, dtype)
        _mixed(x, mask, 0.5, 3, negate, expected, 0, x.shape[0])
        got = np.full(x.shape, np.nan, dtype)
        _parallel.parallel_for(_mixed, x.shape[0], x, mask, 0.5, 3, negate, got, chunks_per_thread=4)
        np.testing.assert_array_equal(got, expected)
    assert _entry_address(_mixed)


def test_a_kernel_whose_arguments_the_block_cannot_hold_runs_from_python(threads):
    threads(2)

    @jit
    def with_tuple(out, pair, start, stop):
        for i in range(start, stop):
            out[i] = pair[0] + pair[1]

    out = np.zeros(10)
    _parallel.parallel_for(with_tuple, 10, out, (1.0, 2.0))
    np.testing.assert_array_equal(out, np.full(10, 3.0))
    assert not _entry_address(with_tuple)


def test_a_kernel_that_returns_a_value_runs_from_python(threads):
    """An entry calls kernels that return nothing; one that returns a value gets no entry."""
    threads(2)

    @jit
    def returns(out, start, stop):
        for i in range(start, stop):
            out[i] = 7
        return stop - start

    out = np.zeros(10)
    _parallel.parallel_for(returns, 10, out)
    np.testing.assert_array_equal(out, np.full(10, 7.0))
    assert not _entry_address(returns)


def test_compiled_launches_from_two_threads_at_once_both_finish_correctly(threads):
    threads(2)
    go = threading.Event()
    errors = []

    def launch():
        try:
            go.wait()
            for n in range(1, 400):
                out = np.zeros(n, dtype=np.int64)
                _parallel.parallel_for(_add_ones, n, out)
                assert (out == 1).all()
        except BaseException as error:
            errors.append(error)

    launchers = [threading.Thread(target=launch) for _ in range(2)]
    for t in launchers:
        t.start()
    go.set()
    for t in launchers:
        t.join(60)
    assert not errors, errors


@jit
def _slow_add_ones(out, start, stop):
    for i in range(start, stop):
        total = 0.0
        for k in range(20_000):  # (about ten microseconds per item: long enough for a worker to join)
            total += k * 1e-9
        out[i] += 1 + total * 0


def test_a_sleeping_worker_is_woken_and_helps(threads, monkeypatch):
    """Workers that poll only briefly fall asleep between launches; every launch must still be
    complete, and the woken worker must take chunks (it takes them from the back)."""
    import time

    from minigrad.kernels import _spin

    threads(2)
    monkeypatch.setattr(_spin, "POLL_NS", 20_000)  # (read by a new worker: it sleeps after 20 us)
    monkeypatch.setattr(_parallel, "_pool", None)
    helped = 0
    for _ in range(40):
        time.sleep(0.002)  # the worker is asleep by now
        out = np.zeros(8, dtype=np.int64)
        _parallel.parallel_for(_slow_add_ones, 8, out, chunks_per_thread=4)
        np.testing.assert_array_equal(out, np.ones(8, dtype=np.int64))
        helped += int(_parallel._pool.counters[_spin.NEXT]) & 0xFFFF  # chunks taken from the back
    assert helped > 0, "no worker ever joined a launch"


def test_a_worker_polls_for_a_time_not_a_number_of_polls(threads, monkeypatch):
    """Between kernels a worker polls for POLL_NS of wall time, then sleeps. (A budget counted in
    polls ran out after under a tenth of a millisecond on a fast CPU: a training step's Python
    between two kernels is often longer, and the woken worker came too late to help.)"""
    import time

    from minigrad.kernels import _spin

    threads(2)
    monkeypatch.setattr(_spin, "POLL_NS", 300_000_000)
    monkeypatch.setattr(_parallel, "_pool", None)
    _parallel.parallel_for(_add_ones, 8, np.zeros(8, dtype=np.int64))  # (a new pool reads it)
    pool = _parallel._pool

    def asleep():
        return pool.counters[_spin.SLEEPERS] > 0 or pool.workers[0].sleeping

    time.sleep(0.05)  # hundreds of thousands of polls, but a sixth of POLL_NS
    slept_early = asleep()
    if pool.counters[_spin.CONTENDED] > time.monotonic_ns():
        pytest.skip("another program keeps the cores busy: then the workers poll briefly, by design")
    assert not slept_early, "the worker slept long before POLL_NS had passed"
    deadline = time.monotonic() + 5
    while not asleep() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert asleep(), "the worker kept polling long after POLL_NS"


def test_a_pool_made_while_the_compile_ahead_process_runs_polls_briefly(threads, monkeypatch):
    """On a first start a second process compiles on the other core: meanwhile the workers must
    not spin for POLL_NS after every kernel (they would take that core from the compiler), so the
    machine counts as contended until that process ends, and no longer."""
    import types

    from minigrad.kernels import _spin, _warm

    threads(2)
    monkeypatch.setattr(_warm, "_ahead", types.SimpleNamespace(pending={_warm.POOL_LAST}))
    monkeypatch.setattr(_parallel, "_pool", None)
    out = np.zeros(8, dtype=np.int64)
    _parallel.parallel_for(_add_ones, 8, out)  # (makes the pool)
    pool = _parallel._pool
    assert pool.counters[_spin.CONTENDED] == _parallel._UNTIL_AHEAD_ENDS, "not counted as contended"
    pool.ahead_finished()
    assert pool.counters[_spin.CONTENDED] == 0
    _parallel.parallel_for(_add_ones, 8, out)
    np.testing.assert_array_equal(out, np.full(8, 2))


def test_launches_on_a_contended_machine_lose_no_chunk(threads, monkeypatch):
    """While the machine counts as contended, workers and caller poll only briefly and then sleep
    (in the futex on Linux): every launch must still be complete, whoever sleeps or wakes late."""
    import time

    from minigrad.kernels import _spin

    threads(3)
    monkeypatch.setattr(_parallel, "_pool", None)
    _parallel.parallel_for(_add_ones, 4, np.zeros(4, dtype=np.int64))  # (creates the pool)
    _parallel._pool.counters[_spin.CONTENDED] = time.monotonic_ns() + 10**12
    out = np.zeros(16, dtype=np.int64)
    for launch in range(300):
        if launch % 50 == 0:
            time.sleep(0.002)  # (the workers are asleep by now)
        kernel = _slow_add_ones if launch % 3 == 0 else _add_ones
        _parallel.parallel_for(kernel, 16, out, chunks_per_thread=1 + launch % 4)
    np.testing.assert_array_equal(out, np.full(16, 300))


def _pool_worker_thread():
    """The thread of the first worker of the pool (a fresh pool: see the tests below)."""
    return _parallel._pool.workers[0].thread


_LINUX_TWO_CPUS = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2),
    reason="moving threads between CPUs: Linux with at least 2 CPUs")


@_LINUX_TWO_CPUS
def test_a_worker_on_the_callers_cpu_moves_off_it(threads, monkeypatch):
    """Two threads of one kernel on one CPU only take turns: a worker that finds itself on the
    caller's CPU moves to the others (and then helps)."""
    import time

    cpus = os.sched_getaffinity(0)
    mine = min(cpus)
    threads(2)
    monkeypatch.setattr(_parallel, "_pool", None)
    _parallel.parallel_for(_add_ones, 4, np.zeros(4, dtype=np.int64))
    worker = _pool_worker_thread().native_id
    try:
        os.sched_setaffinity(0, {mine})  # the caller, and the worker too: both on one CPU
        os.sched_setaffinity(worker, {mine})
        out = np.zeros(8, dtype=np.int64)
        deadline, launches = time.monotonic() + 20, 0
        while os.sched_getaffinity(worker) == {mine} and time.monotonic() < deadline:  # (until it runs)
            _parallel.parallel_for(_slow_add_ones, 8, out, chunks_per_thread=4)
            launches += 1
        np.testing.assert_array_equal(out, np.full(8, launches))
        assert os.sched_getaffinity(worker) == cpus - {mine}
    finally:
        os.sched_setaffinity(0, cpus)


@_LINUX_TWO_CPUS
def test_a_worker_kept_off_its_core_marks_the_machine_contended(threads, monkeypatch):
    """A worker that shares its CPU with a busy process waits for its core while awake; it notices
    it, asks whether the machine is oversubscribed (here: yes), and the pool counts as contended."""
    import time

    from minigrad.kernels import _spin

    cpus = os.sched_getaffinity(0)
    mine, its = sorted(cpus)[:2]
    threads(2)
    monkeypatch.setattr(_parallel, "_oversubscribed", lambda: True)
    monkeypatch.setattr(_parallel, "_pool", None)
    _parallel.parallel_for(_add_ones, 4, np.zeros(4, dtype=np.int64))
    counters = _parallel._pool.counters
    assert counters[_spin.CONTENDED] == 0
    spinner = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{its}}})\n"
                                "print('spinning', flush=True)\nwhile True: pass"], stdout=subprocess.PIPE)
    try:
        spinner.stdout.readline()
        os.sched_setaffinity(0, {mine})
        os.sched_setaffinity(_pool_worker_thread().native_id, {its})
        out = np.zeros(8, dtype=np.int64)
        deadline = time.monotonic() + 20
        while counters[_spin.CONTENDED] < time.monotonic_ns() and time.monotonic() < deadline:
            _parallel.parallel_for(_slow_add_ones, 8, out, chunks_per_thread=4)
        assert counters[_spin.CONTENDED] > time.monotonic_ns(), "the worker never noticed it waited for its core"
    finally:
        os.sched_setaffinity(0, cpus)
        spinner.kill()
        spinner.wait()
        spinner.stdout.close()


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="Linux's /proc/loadavg")
def test_oversubscribed_compares_runnable_threads_with_the_cpus(monkeypatch):
    spinner = subprocess.Popen([sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"],
                               stdout=subprocess.PIPE)
    try:
        spinner.stdout.readline()
        monkeypatch.setattr(os, "cpu_count", lambda: 1)  # this test and the spinner: 2 runnable
        assert _parallel._oversubscribed() is True
        monkeypatch.setattr(os, "cpu_count", lambda: 10**6)
        assert _parallel._oversubscribed() is False
    finally:
        spinner.kill()
        spinner.wait()
        spinner.stdout.close()


def test_the_compile_ahead_process_can_put_every_kernel_on_the_pool(threads):
    """What the second process of a first start does to compile the pool's entries (_warm.py):
    within every_launch_on_the_pool a tiny softmax runs through a compiled entry; afterwards the
    thresholds and the thread count are as before, and the same softmax runs on one thread."""
    from minigrad.kernels import _rows, _warm, matmul, softmax

    threads(1)
    before = (_rows.use_threads, matmul.SERIAL_FLOPS)
    _warm.warm_pool()
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    with _warm.every_launch_on_the_pool():
        assert mg.get_num_threads() == 2 and _rows.use_threads(x)
        y = softmax.softmax_forward_numba(x)
    np.testing.assert_allclose(y, softmax.softmax_forward_numpy(x), rtol=1e-6)
    assert _entry_address(softmax._softmax_forward_rows)
    assert (_rows.use_threads, matmul.SERIAL_FLOPS) == before and mg.get_num_threads() == 1
    assert not _rows.use_threads(x)


def test_the_compile_ahead_warm_up_reaches_the_pool_kernels_of_a_training_step(threads):
    """The warm-up of the second process (_warm.py) launches on the pool, and so compiles the
    entries of, the kernels that a training step runs there in blocks of rows: matmul's tasks,
    layer_norm's backward and sum_rows. Inputs of a few rows would not (numpy takes small products
    and short sums, and one block of rows runs on the calling thread): the next process would compile
    those entries itself, in its first step."""
    from minigrad.kernels import _warm, layernorm, matmul, reduce

    threads(1)
    _warm.warm_pool()
    with _warm.every_launch_on_the_pool():
        for file in ("matmul", "layernorm", "reduce"):
            _warm.warm_up(file)
    for kernel in (matmul._run_tasks.for_dtype(np.dtype(np.float32)), layernorm._layer_norm_backward_blocks,
                   reduce._sum_row_blocks):
        assert _entry_address(kernel), kernel


class _RecordedAhead:
    """Stands in for _warm._Ahead: records what the second process was asked to compile."""

    def __init__(self, files, awaited):
        self.files, self.awaited, self.pending = files, awaited, set(files)
        self.ready = threading.Condition()

    def wait_for(self, file):
        raise AssertionError(f"waited for {file}")


@pytest.mark.parametrize("first", ["conv2d", "layernorm", "matmul"])
def test_the_first_kernel_file_chooses_what_the_second_process_compiles(monkeypatch, first):
    """A convolutional network's first kernel is conv2d: the second process compiles the kernels its
    step needs later (the backward ones first), and this process waits for none of them. Any other
    start (a GPT's is layernorm) has the attention kernels compiled ahead, and waits for them."""
    from minigrad.kernels import _warm

    monkeypatch.setattr(_warm, "_started", False)
    monkeypatch.setattr(_warm, "_ahead", None)
    monkeypatch.setattr(_warm, "_expected", {})  # (no layer has said what it needs)
    monkeypatch.setattr(_warm, "_Ahead", _RecordedAhead)
    monkeypatch.setattr(_warm, "_cache_is_cold", lambda files: True)
    monkeypatch.setattr(_warm, "warm_up", lambda file: None)  # (this process's own kernels, before a wait)
    monkeypatch.delenv("MINIGRAD_COMPILE_AHEAD", raising=False)
    _warm.before_import(first)
    ahead = _warm._ahead
    if first == "conv2d":
        assert ahead.files == _warm.LATER["conv2d"] and ahead.awaited == ()
        assert ahead.files[0] == "conv2d:backward"
        for file in ("matmul", "cross_entropy", "relu"):
            _warm.before_import(file)  # pending in the other process, and not waited for
    else:
        assert ahead.files == ahead.awaited == _warm.AHEAD
        with pytest.raises(AssertionError, match="waited for attention"):
            _warm.before_import("attention")


@pytest.mark.parametrize("layers", [["LSTM"], ["GRU", "RNN"]])
def test_recurrent_layers_say_what_the_second_process_compiles(monkeypatch, layers):
    """A recurrent network starts with a product, as a Transformer does, so its layers say what they
    are when they are made: the second process then compiles their backward kernels and the rest of
    the step (no attention), and this process waits for none of them."""
    from minigrad import nn
    from minigrad.kernels import _warm

    monkeypatch.setattr(_warm, "_started", False)
    monkeypatch.setattr(_warm, "_ahead", None)
    monkeypatch.setattr(_warm, "_expected", {})
    monkeypatch.setattr(_warm, "_Ahead", _RecordedAhead)
    monkeypatch.setattr(_warm, "_cache_is_cold", lambda files: True)
    monkeypatch.delenv("MINIGRAD_COMPILE_AHEAD", raising=False)
    nn.Linear(3, 4)  # (says nothing)
    for layer in layers:
        getattr(nn, layer)(3, 4)
    _warm.before_import("matmul")
    ahead = _warm._ahead
    kinds = tuple(f"rnn:{layer.lower()}:backward" for layer in layers)
    assert ahead.files == (*kinds, *_warm.LATER_RECURRENT) and ahead.awaited == ()
    for file in ("matmul", "rnn", "cross_entropy", "attention"):
        _warm.before_import(file)  # (attention too: compiled here if ever needed, not waited for)


def test_the_recurrent_warm_ups_compile_their_layers_kernels_and_entries(threads, monkeypatch):
    """Each "rnn:KIND" warm-up compiles that layer's forward and backward kernels and no other
    layer's, "rnn:KIND:backward" its backward kernel alone; within every_launch_on_the_pool it
    launches them on the pool, which compiles their entries."""
    from minigrad.kernels import _warm, rnn

    threads(1)
    rows_per_thread = rnn.ROWS_PER_THREAD
    f32 = np.dtype(np.float32)
    kernels = {"lstm": (rnn._lstm_rows, rnn._lstm_rows_backward), "gru": (rnn._gru_rows, rnn._gru_rows_backward),
               "rnn": (rnn._rnn_rows, rnn._rnn_rows_backward)}
    launched = []
    original = rnn.parallel_for
    monkeypatch.setattr(rnn, "parallel_for", lambda kernel, *a, threads=None, **k: (
        launched.append((kernel, threads)), original(kernel, *a, threads=threads, **k)))
    for kind, pair in kernels.items():
        _warm.warm_up(f"rnn:{kind}:backward")
        assert [kernel for kernel, _ in launched] == [pair[1].for_dtype(f32)]
        launched.clear()
        _warm.warm_up(f"rnn:{kind}")
        assert [kernel for kernel, _ in launched] == [kernel.for_dtype(f32) for kernel in pair]
        assert all(kernel.for_dtype(f32).signatures for kernel in pair)
        assert all(n == 1 for _, n in launched)  # (the second process's own warm-up: one thread)
        launched.clear()
    with _warm.every_launch_on_the_pool():
        _warm.warm_up("rnn:lstm")
    assert [n for _, n in launched] == [2, 2] and rnn.ROWS_PER_THREAD == rows_per_thread  # (restored after)


def test_the_later_kernels_of_a_convolutional_step_are_compiled_by_their_warm_ups(threads, monkeypatch):
    """Each name the second process gets for a convolutional start runs that file's kernels (only
    the backward ones for FILE:backward: the forward is what the first process is compiling)."""
    from minigrad.kernels import _warm, batchnorm, conv2d, pool, relu

    threads(1)

    def forward_not_here(*args, **kwargs):
        raise AssertionError("a :backward warm-up ran a forward kernel")

    monkeypatch.setattr(conv2d, "conv2d_forward_numba", forward_not_here)
    monkeypatch.setattr(batchnorm, "batch_norm_forward_numba", forward_not_here)
    for name in _warm.LATER["conv2d"]:
        _warm.warm_up(name)
    f32 = np.dtype(np.float32)
    assert conv2d.conv2d_grads.for_dtype(f32).signatures
    for kernel in (pool._max_pool_backward_planes.for_dtype(f32), relu._backward_range, relu._forward_range,
                   batchnorm._backward_channels.for_dtype(f32)):
        assert kernel.signatures, kernel


def test_while_another_process_compiles_the_pool_kernels_run_here_without_it(threads, monkeypatch):
    from minigrad.kernels import _warm

    threads(2)
    monkeypatch.setattr(_parallel, "_pool", None)
    monkeypatch.setattr(_warm, "pending", lambda name: name == _warm.POOL_FIRST)
    calls = []
    _parallel.parallel_for(lambda start, stop: calls.append((start, stop)), 10)
    assert calls == [(0, 10)] and _parallel._pool is None  # one call, on this thread


# ------------------------------------------------------------------------------- training from threads and processes
_TRAIN = """
import threading
import numpy as np
import minigrad as mg
from minigrad import optim
from transformer import GPT, GPTConfig

def train(seed, out):
    mg.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=32))
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    ids = mg.tensor(np.random.default_rng(seed).integers(0, 11, (64, 8)))
    for _ in range(3):
        _, loss = model(ids, ids)
        loss.backward()
        opt.step()
        opt.zero_grad()
    out.append(loss.item())
"""


@pytest.mark.parametrize("layer", ["workqueue", "omp", "tbb"])
def test_two_threads_train_at_once_under_every_numba_threading_layer(layer):
    """numba's 'workqueue' threading layer aborts the process when two threads launch parallel
    regions at once, and its OpenMP layer cannot survive a fork; minigrad's kernels launch no numba
    parallel region, so the layer numba would pick does not matter. Each layer numba can load here
    is forced in turn."""
    probe = _python("import numba, numpy as np\n"
                    "f = numba.njit(parallel=True)(lambda x: [x[i] for i in numba.prange(4)])\n"
                    "f(np.ones(4)); print(numba.threading_layer())", NUMBA_THREADING_LAYER=layer)
    if probe.returncode != 0:
        pytest.skip(f"numba cannot load its {layer} threading layer here")
    code = _TRAIN + """
out = []
threads = [threading.Thread(target=train, args=(s, out)) for s in (1, 2)]
for t in threads: t.start()
for t in threads: t.join()
print(len(out), all(np.isfinite(out)))
"""
    result = _python(code, NUMBA_THREADING_LAYER=layer)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-2:] == ["2", "True"]


def test_a_fork_pool_after_training_completes():
    """Train, then map over a 'fork' multiprocessing pool: the children train too, and return."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    code = _TRAIN + """
import json
import multiprocessing
train(0, [])
def child(seed):
    out = []
    train(seed, out)
    return out[0]
with multiprocessing.get_context("fork").Pool(2) as pool:
    losses = pool.map_async(child, [1, 2]).get(timeout=300)
print(len(losses), all(np.isfinite(losses)))
"""
    result = _python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-2:] == ["2", "True"]


def test_the_numpy_backend_compiles_nothing():
    """A training step on the numpy backend, with numba's compile events recorded: there are none."""
    code = _TRAIN + """
from numba.core import event
out = []
with event.install_recorder("numba:compile") as compiles:
    train(0, out)
print(len(compiles.buffer), np.isfinite(out[0]))
"""
    result = _python(code, MINIGRAD_BACKEND="numpy")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-2:] == ["0", "True"]


# ------------------------------------------------------------------------------- the matmul tile
@pytest.mark.parametrize(
    "features, machine, family",
    [
        ({"avx512f", "avx2", "fma"}, "x86_64", "avx512"),
        ({"avx2", "fma", "avx"}, "x86_64", "avx2"),
        ({"avx"}, "x86_64", "sse"),
        ({"sse2"}, "x86_64", "sse"),
        ({"neon"}, "arm64", "neon"),
        (set(), "aarch64", "neon"),
    ],
)
def test_simd_family_from_the_features(features, machine, family):
    assert _cpu.simd_family(features, machine) == family


@pytest.mark.parametrize("family", sorted(_cpu.TILES))
def test_each_tile_fits_the_register_file(family):
    """accumulators + vectors of b + broadcasts of a <= registers (see _cpu.py's table): all MR
    broadcasts at once in the scalar loops, one at a time in the vector kernel."""
    registers, width = {"avx512": (32, 16), "avx2": (16, 8), "neon": (32, 4), "sse": (16, 4)}[family]
    rows, cols = _cpu.TILES[family]
    broadcasts = 1 if _cpu.KERNEL_OF[family] == "vector" else rows
    assert rows * cols // width + cols // width + broadcasts <= registers


@pytest.mark.parametrize("text", ["4", "0x16", "9x16", "4x6", "4x128", "axb"])
def test_a_forced_tile_is_checked(text):
    with pytest.raises(ValueError, match="MINIGRAD_MATMUL_TILE"):
        _cpu.parse_tile(text)


_TILE_CHECK = """
import numpy as np
from minigrad.kernels import matmul as M
rng = np.random.default_rng(0)
worst = 0.0
for dtype in (np.float32,):
    for m, k, n in [(1, 1, 1), (M.MR, 3, M.NR), (M.MR + 1, 33, M.NR + 1), (37, 300, 3 * M.NR - 5),
                    (130, 70, 50)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        bias = rng.standard_normal(n).astype(dtype)
        for x, y in ((a, b), (np.asfortranarray(a), b.T.copy().T)):
            got = M.matmul_compiled(x, y, bias)
            err = np.abs(got - (x.astype(np.float64) @ y + bias))
            # the classic bound of a sum of k products and a bias: (k + 1) eps (|x| @ |y| + |bias|)
            bound = (k + 1) * np.finfo(dtype).eps * (np.abs(x).astype(np.float64) @ np.abs(y) + np.abs(bias))
            worst = max(worst, (err / bound).max())
print(M.MR, M.NR, worst)
"""


@pytest.mark.parametrize("tile", ["8x32", "4x16", "8x8", "6x16", "1x4"])
def test_every_tile_computes_the_right_product(tile):
    """numba compiles any tile on any CPU: each one gives the product, within the rounding error
    bound of its sums, at edges and with transposed operands too."""
    result = _python(_TILE_CHECK, MINIGRAD_MATMUL_TILE=tile, MINIGRAD_COMPILE_AHEAD="0")
    assert result.returncode == 0, result.stderr[-2000:]
    rows, cols, worst = result.stdout.split()
    assert f"{rows}x{cols}" == tile
    assert float(worst) <= 1.0


@pytest.mark.parametrize("name, family", [("haswell", "avx2"), ("znver3", "avx2"), ("skylake-avx512", "avx512"),
                                          ("znver4", "avx512"), ("x86-64-v3", "avx2"), ("nehalem", "sse")])
def test_simd_family_of_a_named_cpu(name, family):
    assert _cpu.simd_family(_cpu._features_of_cpu_name(name), "x86_64") == family


def test_a_named_cpu_compiles_for_its_own_features():
    """NUMBA_CPU_NAME=haswell on any x86 host: LLVM gets no host feature list (which would add the
    host's AVX-512 to a Haswell), and the tile is the AVX2 one."""
    code = ("import json, numba, minigrad.kernels as K; "
            "print(json.dumps([numba.config.CPU_FEATURES, K.describe()['simd'], K.describe()['tile']]))")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES", "MINIGRAD_MATMUL_TILE")}
    env["NUMBA_CPU_NAME"] = "haswell"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    features, simd, tile = json.loads(out.stdout.strip().splitlines()[-1])
    assert not features and simd == "avx2" and tile == "x".join(map(str, _cpu.TILES["avx2"]))


def test_the_second_process_compiles_attention_without_running_it(monkeypatch):
    """"attention:compile" (the second process's first pass over attention) compiles both kernels
    and runs neither: running them needs matmul_block, which the first process is compiling."""
    from minigrad.kernels import _warm, attention

    def not_here(*args, **kwargs):
        raise AssertionError("the compile-only warm-up ran an attention kernel")

    monkeypatch.setattr(attention, "attention_forward_numba", not_here)
    monkeypatch.setattr(attention, "attention_backward_numba", not_here)
    _warm.warm_up("attention:compile")
    f32 = np.dtype(np.float32)
    assert attention.forward_slices.for_dtype(f32).signatures and attention.backward_slices.for_dtype(f32).signatures
