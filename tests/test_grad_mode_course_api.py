"""`set_grad_enabled(mode)` and `inference_mode()`, PyTorch's other switches of graph recording, as a
call, a context manager and a decorator, and per thread like `no_grad` (test_grad_mode_threads.py).
When PyTorch is installed, the same sequence of switches gives the same is_grad_enabled() in both."""
import threading

import pytest

import minigrad as mg

TIMEOUT = 10  # seconds; only reached if a thread died


def records():
    """Whether an op on a tensor that requires grad records the graph now."""
    return (mg.tensor([1.0], requires_grad=True) * 2).requires_grad


def run_in_thread(fn):
    result, errors = {}, []

    def target():
        try:
            result["value"] = fn()
        except BaseException as error:  # noqa: BLE001  (raised in the main thread)
            errors.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    if errors:
        raise errors[0]
    return result["value"]


# ============================================================================ set_grad_enabled
def test_set_grad_enabled_as_a_call_switches_at_once():
    mg.set_grad_enabled(False)
    assert not mg.is_grad_enabled() and not records()
    mg.set_grad_enabled(True)
    assert mg.is_grad_enabled() and records()
    mg.set_grad_enabled(0)  # any truth value, as PyTorch's bool(mode)
    assert not mg.is_grad_enabled()
    mg.set_grad_enabled(True)


@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("outside", [True, False])
def test_set_grad_enabled_as_a_context_manager_restores_the_mode_before_it(mode, outside):
    mg.set_grad_enabled(outside)
    with mg.set_grad_enabled(mode) as switch:
        assert mg.is_grad_enabled() is mode and records() is mode
        with mg.set_grad_enabled(not mode):
            assert mg.is_grad_enabled() is (not mode)
        assert mg.is_grad_enabled() is mode
        with switch:  # the same object entered again inside its own block
            assert mg.is_grad_enabled() is mode
        assert mg.is_grad_enabled() is mode
    assert mg.is_grad_enabled() is outside
    with pytest.raises(KeyError):
        with mg.set_grad_enabled(mode):
            raise KeyError("an error inside the block")
    assert mg.is_grad_enabled() is outside  # restored by an exception too


def test_set_grad_enabled_as_a_decorator_switches_inside_each_call_only():
    @mg.set_grad_enabled(False)
    def evaluate(x):
        return mg.is_grad_enabled(), (x * 2).requires_grad

    assert mg.is_grad_enabled()  # making the decorator left the mode as it was
    x = mg.tensor([1.0], requires_grad=True)
    assert evaluate(x) == (False, False)
    assert mg.is_grad_enabled() and (x * 2).requires_grad
    assert evaluate.__name__ == "evaluate"

    @mg.set_grad_enabled(True)
    def train(x):
        return (x * 2).requires_grad

    with mg.no_grad():
        assert train(x) and not mg.is_grad_enabled()

    @mg.set_grad_enabled(False)
    def countdown(n):  # recursive calls each get their own switch
        return [mg.is_grad_enabled()] if n == 0 else countdown(n - 1) + [mg.is_grad_enabled()]

    assert countdown(3) == [False] * 4 and mg.is_grad_enabled()


def test_set_grad_enabled_belongs_to_the_thread_that_calls_it():
    mg.set_grad_enabled(False)
    assert run_in_thread(lambda: (mg.is_grad_enabled(), records())) == (True, True)  # a new thread starts on

    def other_thread():
        mg.set_grad_enabled(False)
        with mg.set_grad_enabled(True):
            inside = mg.is_grad_enabled()
        return inside, mg.is_grad_enabled()

    mg.set_grad_enabled(True)
    assert run_in_thread(other_thread) == (True, False)
    assert mg.is_grad_enabled() and records()  # that thread's switch did not reach this one


def test_set_grad_enabled_in_two_threads_at_once():
    """Thread a switches off and waits inside; thread b records a graph meanwhile and switches off
    its own; a finds its mode as it left it."""
    a_off, b_done = threading.Event(), threading.Event()
    seen, errors = {}, []

    def a():
        with mg.set_grad_enabled(False):
            a_off.set()
            assert b_done.wait(TIMEOUT)
            seen["a"] = (mg.is_grad_enabled(), records())
        seen["a after"] = mg.is_grad_enabled()

    def b():
        assert a_off.wait(TIMEOUT)
        seen["b"] = (mg.is_grad_enabled(), records())
        mg.set_grad_enabled(False)
        seen["b off"] = mg.is_grad_enabled()
        b_done.set()

    def guarded(fn):
        try:
            fn()
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not errors, errors
    assert seen == {"a": (False, False), "a after": True, "b": (True, True), "b off": False}
    assert mg.is_grad_enabled()


def test_set_grad_enabled_against_torch():
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (mg, torch):
        states = []
        lib.set_grad_enabled(False)
        states.append(lib.is_grad_enabled())
        with lib.set_grad_enabled(True):
            states.append(lib.is_grad_enabled())
        states.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)

        @lib.set_grad_enabled(False)
        def f():
            return lib.is_grad_enabled()

        states += [lib.is_grad_enabled(), f(), lib.is_grad_enabled()]
        with lib.no_grad():
            with lib.set_grad_enabled(True):
                states.append(lib.is_grad_enabled())
            states.append(lib.is_grad_enabled())
        seen[lib.__name__] = states
        lib.set_grad_enabled(True)
    assert seen["minigrad"] == seen["torch"]


# ============================================================================ inference_mode
def test_inference_mode_is_no_grad():
    x = mg.tensor([1.0], requires_grad=True)
    with mg.inference_mode():
        assert not mg.is_grad_enabled() and not (x * 2).requires_grad
    assert mg.is_grad_enabled()

    @mg.inference_mode()
    def predict(t):
        return (t * 2).requires_grad, mg.is_grad_enabled()

    @mg.inference_mode
    def predict_without_parentheses(t):
        return (t * 2).requires_grad, mg.is_grad_enabled()

    assert predict(x) == (False, False) and predict_without_parentheses(x) == (False, False)
    assert predict.__name__ == "predict" and predict_without_parentheses.__name__ == "predict_without_parentheses"
    assert mg.is_grad_enabled()


def test_inference_mode_false_records():
    x = mg.tensor([1.0], requires_grad=True)
    with mg.no_grad():
        with mg.inference_mode(False):
            assert mg.is_grad_enabled() and (x * 2).requires_grad
        assert not mg.is_grad_enabled()
        with mg.inference_mode(mode=True):
            assert not mg.is_grad_enabled()

    @mg.inference_mode(False)
    def train(t):
        return (t * 2).requires_grad

    with mg.no_grad():
        assert train(x)


def test_inference_mode_belongs_to_the_thread():
    with mg.inference_mode():
        assert run_in_thread(records) is True
        assert not records()

    @mg.inference_mode()
    def off():
        return mg.is_grad_enabled()

    assert run_in_thread(off) is False and mg.is_grad_enabled()


def test_inference_mode_against_torch():
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (mg, torch):
        states = []
        with lib.inference_mode():
            states.append(lib.is_grad_enabled())
            with lib.inference_mode(False):
                states.append(lib.is_grad_enabled())
            states.append(lib.is_grad_enabled())
        with lib.no_grad():
            with lib.inference_mode(False):
                states.append(lib.is_grad_enabled())

        @lib.inference_mode
        def f():
            return lib.is_grad_enabled()

        states += [f(), lib.is_grad_enabled()]
        seen[lib.__name__] = states
    assert seen["minigrad"] == seen["torch"]
