"""Grad mode and anomaly mode belong to a thread, as in PyTorch: `no_grad()` in one thread does not
stop another from recording its graph, and a new thread starts with gradients on and anomaly
detection off, whatever the thread that started it is doing.

The threads here take turns at fixed points, handing over with threading.Event (no sleeps), so
every run interleaves them in exactly the same order. The random generator, by contrast, is one per
process, shared by its threads; a process forked while one of them draws can draw too."""
import os
import threading
import time
import warnings

import numpy as np
import pytest

import minigrad as mg

TIMEOUT = 10  # seconds; only reached if a thread died (its error is raised by `run_threads`)


def run_threads(*targets):
    """Run each target in its own thread, wait for all, and raise the first error one of them hit."""
    errors = []

    def guarded(target):
        try:
            target()
        except BaseException as error:  # noqa: BLE001  (reported in the main thread)
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a thread is stuck waiting for its turn"
    if errors:
        raise errors[0]


def wait(event):
    assert event.wait(TIMEOUT), "the other thread never got there"


def test_a_thread_inside_no_grad_does_not_stop_another_from_recording():
    a_inside, b_done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.no_grad():
            a_inside.set()
            wait(b_done)
            seen["a still off"] = not mg.is_grad_enabled()
            seen["a records"] = (mg.tensor([1.0], requires_grad=True) * 2).requires_grad

    def b():
        wait(a_inside)
        x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = (x * x).sum()
        loss.backward()
        seen["b on"] = mg.is_grad_enabled()
        seen["b grad"] = x.grad
        b_done.set()

    run_threads(a, b)
    assert seen["b on"]
    np.testing.assert_array_equal(seen["b grad"], [2.0, 4.0, 6.0])
    assert seen["a still off"] and not seen["a records"]
    assert mg.is_grad_enabled()


def test_interleaved_no_grad_blocks_leave_grad_mode_on_everywhere():
    # A enters, B enters, A exits, B exits. With one mode for the whole process, B's exit would
    # restore the "off" that it found when A was inside, and leave gradients off for everyone.
    a_entered, b_entered, a_exited = threading.Event(), threading.Event(), threading.Event()
    after = {}

    def a():
        with mg.no_grad():
            a_entered.set()
            wait(b_entered)
        after["a"] = mg.is_grad_enabled()
        a_exited.set()

    def b():
        wait(a_entered)
        with mg.no_grad():
            b_entered.set()
            wait(a_exited)
        after["b"] = mg.is_grad_enabled()

    run_threads(a, b)
    assert after == {"a": True, "b": True}
    assert mg.is_grad_enabled()
    x = mg.tensor([1.0], requires_grad=True)
    assert (x * 3).requires_grad


def test_a_new_thread_starts_with_grad_on_even_from_inside_no_grad():
    seen = {}

    def child():
        x = mg.tensor([2.0], requires_grad=True)
        (x * x).sum().backward()
        seen["on"], seen["grad"] = mg.is_grad_enabled(), x.grad

    with mg.no_grad():
        run_threads(child)
        assert not mg.is_grad_enabled()
    assert seen["on"]
    np.testing.assert_array_equal(seen["grad"], [4.0])


def test_enable_grad_inside_no_grad_is_per_thread_too():
    a_inside, b_inside, a_checked = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.no_grad(), mg.enable_grad():
            a_inside.set()
            wait(b_inside)
            seen["a"] = mg.is_grad_enabled()
            a_checked.set()

    def b():
        wait(a_inside)
        with mg.no_grad():
            b_inside.set()
            seen["b"] = mg.is_grad_enabled()
            wait(a_checked)

    run_threads(a, b)
    assert seen == {"a": True, "b": False}


def test_a_no_grad_decorated_function_called_from_two_threads_at_once():
    # the decorator's bookkeeping is per call: two calls in flight at once do not share it
    a_inside, b_inside, a_returned = threading.Event(), threading.Event(), threading.Event()

    @mg.no_grad()
    def inference(entered, go_on):
        entered.set()
        wait(go_on)
        return mg.is_grad_enabled()

    seen = {}

    def a():
        seen["a inside"] = inference(a_inside, b_inside)
        seen["a after"] = mg.is_grad_enabled()
        a_returned.set()

    def b():
        wait(a_inside)
        seen["b inside"] = inference(b_inside, a_returned)
        seen["b after"] = mg.is_grad_enabled()

    run_threads(a, b)
    assert seen == {"a inside": False, "b inside": False, "a after": True, "b after": True}


def test_detect_anomaly_is_per_thread():
    a_inside, b_done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.detect_anomaly():
            a_inside.set()
            wait(b_done)
            seen["a on"] = mg.is_anomaly_enabled()
            with pytest.raises(mg.AnomalyError, match="Log"), np.errstate(all="ignore"):
                mg.tensor([-1.0]).log()

    def b():
        wait(a_inside)
        seen["b on"] = mg.is_anomaly_enabled()
        with np.errstate(all="ignore"):
            seen["b value"] = mg.tensor([-1.0]).log().item()  # NaN, and no error outside detect_anomaly
        b_done.set()

    run_threads(a, b)
    assert seen["a on"] and not seen["b on"] and np.isnan(seen["b value"])
    assert not mg.is_anomaly_enabled()


def test_modes_restore_after_an_error_inside_the_block():
    with pytest.raises(ZeroDivisionError):
        with mg.no_grad(), mg.detect_anomaly():
            1 / 0
    assert mg.is_grad_enabled() and not mg.is_anomaly_enabled()


def test_the_random_generator_is_shared_by_all_threads():
    # unlike the modes: manual_seed in one thread reseeds the numbers every thread draws
    mg.manual_seed(5)
    expected = mg.randn(3).numpy()
    mg.manual_seed(99)
    run_threads(lambda: mg.manual_seed(5))
    np.testing.assert_array_equal(mg.randn(3).numpy(), expected)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("own_generator", [False, True], ids=["default generator", "a Generator of its own"])
def test_a_fork_while_another_thread_draws_gives_a_child_that_can_draw(own_generator):
    """numpy's generator holds a lock while it draws. Forked while another thread draws, the child
    gets the lock free (the fork waits for the draw to end) and draws as well. Before, the child's
    first draw waited for ever for a lock held by a thread it does not have."""
    generator = mg.Generator().manual_seed(1) if own_generator else None
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            mg.randn(20_000, generator=generator)

    thread = threading.Thread(target=draw)
    thread.start()
    results = []
    try:
        for _ in range(20):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # (Python 3.12: fork of a threaded process)
                pid = os.fork()
            if pid == 0:  # the child: one draw, then out (never back into pytest)
                code = 1
                try:
                    code = 0 if mg.randn(3, generator=generator).shape == (3,) else 2
                finally:
                    os._exit(code)
            deadline = time.monotonic() + TIMEOUT
            done, status = os.waitpid(pid, os.WNOHANG)
            while not done and time.monotonic() < deadline:
                time.sleep(0.005)
                done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            results.append(os.waitstatus_to_exitcode(status) if done else "hung")
            if results[-1] != 0:
                break
    finally:
        stop.set()
        thread.join()
    assert results == [0] * 20  # every child drew and exited
