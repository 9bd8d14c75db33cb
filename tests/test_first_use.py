"""The first kernel calls of a process (kernels/_warm.py): numba is imported and the kernels compiled
then, and two accidents there must not break the process. Ctrl-C half-way through (a learner
interrupting the first cell of a notebook): the next calls work, and the pool's threads survive.
A fork while another thread makes those calls (a DataLoader's workers, a server's): every child
finishes and computes the right numbers.

The end-to-end tests run a fresh interpreter on an empty numba cache (a temporary NUMBA_CACHE_DIR),
so that the first calls really import and compile. Only a few interrupt delays run by default; set
MINIGRAD_STRESS=1 for many more."""
import json
import os
import subprocess
import sys
import threading
import time
import warnings

import pytest

from minigrad.kernels import _warm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRESS = os.environ.get("MINIGRAD_STRESS", "") not in ("", "0")
CHILD_SECONDS = 240  # a generous bound for a few cold compiles on a busy machine: only a hang exceeds it

_needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "register_at_fork"),
                                 reason="fork: POSIX only")

# The kernels of the first calls, and their expected numbers: a sum of squares (one small compiled
# kernel) and a column sum big enough to run on the thread pool (the pool's compiled parts too).
_KERNELS = """
import numpy as np
import minigrad.kernels as K

K.set_num_threads(2)
x = np.linspace(-1, 1, 256 * 256, dtype=np.float32).reshape(256, 256)
expected_squares = float((x[0].astype(np.float64) ** 2).sum())
expected_rows = x.astype(np.float64).sum(axis=0)


def right():
    # float32 sums of 256 terms of size <= 1: rounding errors below 256 * 2^-24 * 256 ~ 4e-3 at the
    # very worst, far below the tolerances; a chunk computed twice or not at all is off by ~1
    squares, rows = K.sum_squares(x[0]), K.sum_rows(x)
    return abs(squares - expected_squares) <= 1e-4 * expected_squares and np.allclose(rows, expected_rows, atol=1e-2)
"""

_INTERRUPTED = _KERNELS + """
import json, os, signal, sys, threading, time
from minigrad.kernels import _parallel

timer = threading.Timer(float(sys.argv[1]), os.kill, (os.getpid(), signal.SIGINT))
timer.start()
first = "none"  # (an interrupt that lands in a callback from LLVM is only printed there)
try:
    right()
    timer.join()
    time.sleep(1)  # (if the calls were quicker, the interrupt comes here)
except BaseException as error:  # KeyboardInterrupt; or, after one printed in a callback from LLVM,
    first = type(error).__name__  # numba's error about the compile it left half done
try:
    results, restart = [bool(right()), bool(right())], None
except RuntimeError as error:  # numba itself could not recover: the one line that says to restart
    results, restart = None, str(error)
workers = _parallel._pool.workers if _parallel._pool is not None else []
print(json.dumps({"first": first, "right": results, "restart": restart, "workers": len(workers),
                  "workers alive": all(w.thread.is_alive() and w.error is None for w in workers)}))
"""


def _fresh_interpreter(code, cache, *args):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "MINIGRAD_COMPILE_AHEAD": "0", "MINIGRAD_QUIET_COMPILE": "1"}
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_an_interrupt_during_the_first_kernel_calls_leaves_the_kernels_working(tmp_path):
    """SIGINT at several delays after the first kernel call, on an empty cache: within numba's
    import, within the first compiles. The program catches the KeyboardInterrupt and calls the
    kernels again: they give the right numbers, and the pool's worker threads are alive; or, where
    the interrupt broke numba's own first compile, the call raises one line that says to restart
    the process (never for an interrupt within numba's import, the earliest delay). (Before,
    an interrupt within numba's import left every later call failing with "module 'numba' has no
    attribute 'core'", and killed the pool's workers.) The interpreters run side by side."""
    delays = (0.05, 0.2, 0.4) + ((0.1, 0.15, 0.25, 0.3, 0.35, 0.6, 0.8, 1.2, 2.0, 3.0) if STRESS else ())
    runs = [(delay, _fresh_interpreter(_INTERRUPTED, tmp_path / f"cache-{delay}", delay)) for delay in delays]
    restarts = []
    for delay, run in runs:
        try:
            out, err = run.communicate(timeout=CHILD_SECONDS)
        except subprocess.TimeoutExpired:
            run.kill()
            out, err = run.communicate()
            pytest.fail(f"interrupted at {delay} s: the program hangs\n{err[-3000:]}")
        assert run.returncode == 0, f"interrupted at {delay} s:\n{err[-3000:]}"
        result = json.loads(out.strip().splitlines()[-1])
        assert result["first"] in ("KeyboardInterrupt", "RuntimeError", "none"), result
        if result["restart"] is not None:  # an interrupt inside numba's own first compile can break
            # numba itself (its typing tables half built): then, and only then, one line says to restart
            assert "\n" not in result["restart"] and "restart the Python process" in result["restart"], result
            restarts.append(delay)
            continue
        assert result["right"] == [True, True], (delay, result)
        assert result["workers"] >= 1 and result["workers alive"], (delay, result)
    # an interrupt within numba's import (the earliest delay) must never need a restart
    assert len(restarts) < len(delays) and delays[0] not in restarts, restarts


def test_an_error_of_numba_broken_by_an_interrupt_says_to_restart(monkeypatch):
    """If the kernels cannot recover after an interrupted first use, the error is one line that
    says what happened and what to do, raised from numba's own."""
    monkeypatch.setattr(_warm, "_interrupted", False)

    def broken():
        raise AttributeError("module 'numba' has no attribute 'core'")

    def mistake():
        return [1.0, 2.0].dtype  # (a list where an array was expected: AttributeError, not numba's)

    with pytest.raises(AttributeError):  # no interrupt before: numba's error as it is
        _warm.first_call(broken, (), {})

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _warm.first_call(interrupted, (), {})
    assert _warm._interrupted
    with pytest.raises(RuntimeError, match=r"^minigrad: the first kernel calls .* restart the Python process") as info:
        _warm.first_call(broken, (), {})
    assert "\n" not in str(info.value) and isinstance(info.value.__cause__, AttributeError)

    def registered_twice():  # (numba's half-imported registries imported again, seen after a Ctrl-C)
        raise KeyError("duplicate registration for <class 'numba.core.types.misc.UnicodeType'>")

    with pytest.raises(RuntimeError, match="restart the Python process"):
        _warm.first_call(registered_twice, (), {})
    # a learner's own mistake stays as it is
    with pytest.raises(AttributeError, match="'list' object has no attribute 'dtype'"):
        _warm.first_call(mistake, (), {})
    with pytest.raises(KeyError, match="'learning_rate'"):
        _warm.first_call(lambda: {}["learning_rate"], (), {})


def test_an_interrupted_import_forgets_what_it_half_imported(tmp_path, monkeypatch):
    """A package whose import is interrupted after it imported a submodule: Python forgets the
    package but keeps the submodule, so that the next import builds a package without it (as numba
    without ``numba.core``). ``_forget`` takes the submodule out too, and the next import finds the
    package whole."""
    import importlib

    package = tmp_path / "half_imported"
    package.mkdir()
    (package / "__init__.py").write_text("from . import done\nraise KeyboardInterrupt\n")
    (package / "done.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_warm, "_interrupted", False)
    try:
        before = set(sys.modules)
        with pytest.raises(KeyboardInterrupt) as info:
            importlib.import_module("half_imported")
        assert "half_imported" not in sys.modules and "half_imported.done" in sys.modules  # (Python's doing)
        _warm._forget(before, info.value)
        assert "half_imported.done" not in sys.modules and _warm._interrupted
        (package / "__init__.py").write_text("from . import done\n")
        assert importlib.import_module("half_imported").done.VALUE == 1
    finally:
        for name in ("half_imported", "half_imported.done"):
            sys.modules.pop(name, None)


# ------------------------------------------------------------------------------- fork
_FORKS = _KERNELS + """
import json, os, sys, threading, time

loader = threading.Thread(target=right)  # the first kernel calls, in another thread
started = time.monotonic()
loader.start()
children = []
for at in [float(a) for a in sys.argv[1].split(",")]:
    time.sleep(max(0.0, started + at - time.monotonic()))
    pid = os.fork()
    if pid == 0:
        os._exit(0 if right() else 3)
    children.append(pid)
loader.join()
deadline = time.monotonic() + float(sys.argv[2])
results = []
for pid in children:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            results.append(os.waitstatus_to_exitcode(status))
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            results.append("hung")
            break
        time.sleep(0.02)
print(json.dumps(results))
"""


@_needs_fork
def test_forks_during_another_threads_first_kernel_calls_all_finish(tmp_path):
    """Five forks spread over another thread's first kernel calls on an empty cache (numba's import,
    the compiles, the pool's first launch). Every child computes the right numbers, on its own
    pool, and exits. (Before, each child hung on a lock that the other thread held at the fork.)"""
    run = _fresh_interpreter(_FORKS, tmp_path / "cache", "0.05,0.2,0.45,0.7,1.5", CHILD_SECONDS)
    try:
        out, err = run.communicate(timeout=2 * CHILD_SECONDS)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
        pytest.fail(f"the parent hangs\n{err[-3000:]}")
    assert run.returncode == 0, err[-3000:]
    assert json.loads(out.strip().splitlines()[-1]) == [0] * 5


def _fork_and_check(locks, seconds=30):
    """Fork; the child exits 0 if it can take every lock that ``locks()`` returns (there) within a
    few seconds. -> the child's exit code (or "hung")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (Python 3.12: fork of a threaded process)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if all(lock.acquire(timeout=5) for lock in locks()) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


@_needs_fork
def test_a_fork_waits_until_another_thread_lets_go_of_each_first_use_lock():
    """Each lock of the first use in turn (ours, numba's compiler lock, llvmlite's LLVM lock): a
    thread holds it for a moment; a fork meanwhile waits for it, and the child can take it."""
    from minigrad.kernels import _jit  # noqa: F401  (imports numba, so that its locks are there)

    locks = _warm._fork_locks()
    names = [name for _, name in locks]
    assert names[:2] == ["loading", "_lock"] and len(locks) == 5, names  # + compiler, LLVM, compile notice
    for owner, name in locks:
        lock = getattr(owner, name)
        held, release = threading.Event(), threading.Event()

        def hold():
            with lock:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        threading.Timer(0.2, release.set).start()
        started = time.monotonic()
        code = _fork_and_check(lambda: [getattr(o, n) for o, n in locks])
        waited = time.monotonic() - started
        holder.join(10)
        assert code == 0, f"{type(owner).__name__}.{name}: the child {code}"
        assert waited >= 0.1, f"{type(owner).__name__}.{name}: the fork did not wait for it"


@_needs_fork
def test_a_fork_from_inside_a_compile_does_not_deadlock():
    """The forking thread holds numba's compiler lock (a fork from inside a compile) while another
    thread holds ``loading`` and waits for the compiler lock: the fork must not wait for
    ``loading`` (both would wait for ever). It goes ahead; the child gets a new ``loading``."""
    from minigrad.kernels import _jit  # noqa: F401  (imports numba)

    compiler = sys.modules["numba.core.compiler_lock"].global_compiler_lock
    got_loading, finished = threading.Event(), threading.Event()

    def first_use():
        with _warm.loading:
            got_loading.set()
            with compiler:
                finished.set()

    with compiler:
        other = threading.Thread(target=first_use)
        other.start()
        got_loading.wait(10)
        started = time.monotonic()
        code = _fork_and_check(lambda: [_warm.loading, compiler._lock])
        assert time.monotonic() - started < _warm.FORK_WAIT_SECONDS / 2
    other.join(10)
    assert code == 0 and finished.is_set()
