"""The default random generator behind `randn`, `rand`, `randint`, `randperm`, `multinomial`,
dropout masks and weight init, and `Generator`, for a stream of one's own (`generator=g`).

`manual_seed(n)` makes every random number that follows reproducible, on every backend and
thread count (the draws are numpy's, never a compiled kernel's). They are not PyTorch's numbers
for the same seed: the bit generator is numpy's PCG64, not PyTorch's Mersenne Twister.

Threads and processes: there is one generator per process, shared by all its threads (unlike
grad mode, which is per thread), as PyTorch's default CPU generator is. `manual_seed` replaces
it for every thread. Threads may draw at the same time (numpy's generator holds a lock while it
draws), but which thread gets which numbers then depends on timing, so a run is reproducible
only while one thread at a time draws. A process started by fork begins with a copy of its
parent's generator, so workers draw the same numbers until each calls, say,
`manual_seed(seed + rank)`; a process started by spawn imports minigrad afresh, with a generator
seeded from the operating system.

A fork while another thread draws: numpy's generator holds a lock while it draws, and a lock held
at a fork stays held for ever in the child (fork copies only the forking thread), so the child's
first draw from that generator would never return. So, just before a fork, the forking thread
takes the lock of every generator itself (the draw under way finishes first), and lets go of them
in the parent and in the child just after (``_hold_generators``, ``os.register_at_fork``)."""
import os
import threading
import weakref

import numpy as np

from .grad_mode import _modes


class Generator:
    """A random generator of its own, as `torch.Generator`: `g = minigrad.Generator().manual_seed(42)`,
    then `minigrad.randn(3, generator=g)` draws from `g` and leaves the default generator alone.
    It wraps a `numpy.random.Generator` (PCG64), replaced whenever the seed is set: the same seed
    gives the same numbers here every time, but not the numbers PyTorch's generator (a Mersenne
    Twister) gives for that seed."""

    def __init__(self, device="cpu"):
        self._rng = np.random.default_rng()
        self._initial_seed = None
        with _registry_lock:
            _generators.add(self)  # (for the fork hooks below)

    def manual_seed(self, seed):
        """Seed it: the same seed gives the same numbers. Returns the generator itself (PyTorch's habit
        `g = torch.Generator().manual_seed(2147483647)`)."""
        seed = int(seed)
        self._rng = np.random.default_rng(seed & (2 ** 64 - 1))
        self._initial_seed = seed
        return self

    def seed(self):
        """Seed it from the operating system's entropy; returns the seed chosen."""
        seed = int(np.random.SeedSequence().entropy % 2 ** 63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The last seed given to `manual_seed` or chosen by `seed` (None if never seeded)."""
        return self._initial_seed

    def get_state(self):
        """The state, a dict that `set_state` restores."""
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    def __repr__(self):
        return f"minigrad.Generator(initial_seed={self._initial_seed})"


_generators = weakref.WeakSet()  # every Generator alive
_registry_lock = threading.Lock()  # around changes to _generators, and held across a fork
_held = []  # the generators' locks the forking thread holds, until just after the fork


def _hold_generators():
    """Before a fork: take every generator's lock, waiting for a draw under way to finish."""
    _registry_lock.acquire()
    for generator in list(_generators):
        lock = generator._rng.bit_generator.lock
        lock.acquire()
        _held.append(lock)


def _release_generators():
    """After a fork, in the parent and in the child: let go of what _hold_generators took."""
    while _held:
        _held.pop().release()
    _registry_lock.release()


if hasattr(os, "register_at_fork"):  # (not on Windows, which has no fork)
    os.register_at_fork(before=_hold_generators, after_in_parent=_release_generators,
                        after_in_child=_release_generators)

default_generator = Generator()  # the one that every draw without generator= uses


def manual_seed(seed):
    """Seed the default generator, for every thread: the same seed gives the same numbers, run after
    run. Returns the default `Generator`."""
    return default_generator.manual_seed(seed)


def rng(generator=None):
    """The `numpy.random.Generator` to draw from: `generator`'s (a `minigrad.Generator`), or the
    default one's."""
    if _modes.recorder is not None:  # (inside an op's forward, as dropout's, the recorder is paused)
        _modes.recorder.refuse("it draws random numbers outside an op (minigrad.randn, rand, randint, ...); "
                               "pass them in as an argument")
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"generator: expected a minigrad.Generator, got {type(generator).__name__}")
    return generator._rng


def generator():
    """The default generator's `numpy.random.Generator` (use it instead of `np.random` to stay seeded)."""
    return default_generator._rng


def get_state():
    """The default generator's state, a dict that `set_state` restores (checkpoints save it)."""
    return default_generator.get_state()


def set_state(state):
    default_generator.set_state(state)


def seed():
    """Seed the default generator from the operating system's randomness; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


get_rng_state, set_rng_state = get_state, set_state  # PyTorch's names (the state is a dict here, not bytes)
