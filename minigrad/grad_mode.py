"""Grad mode and anomaly mode: two switches that every op reads, each per thread.

    with minigrad.no_grad():           # ops record no graph (inference, optimizer steps)
        ...                            # (also: set_grad_enabled(mode), inference_mode())
    with minigrad.detect_anomaly():    # the first op that makes NaN or Inf raises AnomalyError
        ...

`Function.apply` (autograd.py) reads `_modes` on every call; autograd.py re-exports everything here.
"""
import functools
import threading


# ----------------------------------------------------------------------------- modes, per thread
class _ThreadModes(threading.local):
    """The modes of the thread that reads them. Each thread has its own (as in PyTorch): a new
    thread starts with the values below, not with those of the thread that started it."""

    grad_enabled = True  # ops record the graph that backward walks
    anomaly_enabled = False  # ops check their results for NaN and Inf
    recorder = None  # while minigrad.compile records a step: what writes it down (compile.py)


_modes = _ThreadModes()


class _ModeSwitch:
    """Context manager and decorator: inside, this thread's mode `mode` (an attribute of
    `_modes`) is `on`; at the exit, even by an exception, it is back to what it was."""

    mode = None

    def __init__(self, on):
        self.on = on
        self.previous = []  # a stack: the same object may be entered again inside its own block

    def __enter__(self):
        self.previous.append(getattr(_modes, self.mode))
        setattr(_modes, self.mode, self.on)
        return self

    def __exit__(self, *exc):
        setattr(_modes, self.mode, self.previous.pop())

    def __call__(self, fn):
        """As a decorator: each call of `fn` runs inside a switch of its own, so calls from
        several threads at once, or recursive ones, never share `previous`."""

        @functools.wraps(fn)
        def switched(*args, **kwargs):
            with type(self)(self.on):
                return fn(*args, **kwargs)

        return switched


# ----------------------------------------------------------------------------- grad mode
class _GradMode(_ModeSwitch):
    mode = "grad_enabled"


def is_grad_enabled():
    """Whether ops record a graph in the current thread (True unless inside `no_grad`)."""
    return _modes.grad_enabled


def no_grad():
    """Context manager and decorator: ops inside record no graph (inference, optimizer steps).

    It applies to the current thread only: another thread keeps recording, and a thread started
    inside the block starts with gradients on (as in PyTorch)."""
    return _GradMode(False)


def enable_grad():
    """Context manager and decorator: turn graph recording back on inside a `no_grad` block
    (of the current thread only, as `no_grad`)."""
    return _GradMode(True)


class set_grad_enabled(_GradMode):
    """Turn graph recording on (mode=True) or off for the current thread, as PyTorch's:

        minigrad.set_grad_enabled(False)       # a call: off from here on (until switched back)
        with minigrad.set_grad_enabled(False):  # a block: off inside, back to what it was after
            ...
        @minigrad.set_grad_enabled(False)      # a decorator: off inside each call of the function
        def evaluate(...): ...

    The call switches at once (so the plain call works); a `with` block then restores the mode
    from before the call, and a decorator restores it at once (the switch belongs to the calls)."""

    def __init__(self, mode):
        super().__init__(bool(mode))
        self.before = _modes.grad_enabled  # what the call switched away from, given back once
        _modes.grad_enabled = self.on

    def __enter__(self):
        before, self.before = self.before, None
        self.previous.append(_modes.grad_enabled if before is None else before)
        _modes.grad_enabled = self.on
        return self

    def __call__(self, fn):
        if self.before is not None:  # a decorator: undo the switch of the call that made it
            _modes.grad_enabled, self.before = self.before, None
        return super().__call__(fn)


class inference_mode(_GradMode):
    """`with minigrad.inference_mode():` (or as a decorator, with or without the parentheses) is
    `no_grad()` here: PyTorch's inference mode also skips the bookkeeping of the tensors made
    inside, which minigrad does not have. inference_mode(False) turns graph recording on (as it
    does in PyTorch, even inside no_grad)."""

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode, without parentheses
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not mode)

    def __call__(self, fn):
        mode = not self.on

        @functools.wraps(fn)
        def switched(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return switched


# ----------------------------------------------------------------------------- anomaly mode
class AnomalyError(FloatingPointError):
    """Raised under `detect_anomaly()` by the first op that produces NaN or Inf."""


class detect_anomaly(_ModeSwitch):
    """Inside this context (or a function it decorates), the first op whose forward or backward
    makes NaN or Inf raises `AnomalyError`, naming the op, the shapes of its inputs and the line
    that called it. It applies to the current thread only, as `no_grad`.

    It slows every op down (a finiteness check and a stack look-up), so use it to hunt a NaN,
    not for training."""

    mode = "anomaly_enabled"

    def __init__(self, on=True):
        super().__init__(on)


def is_anomaly_enabled():
    """Whether the current thread is inside `detect_anomaly`."""
    return _modes.anomaly_enabled
