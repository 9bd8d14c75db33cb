"""The one random number generator behind `randn`, `rand`, dropout masks and weight init.

`manual_seed(n)` makes every random number that follows reproducible.

Threads and processes: there is one generator per process, shared by all its threads (unlike
grad mode, which is per thread), as PyTorch's default CPU generator is. `manual_seed` replaces
it for every thread. Threads may draw at the same time (numpy's generator holds a lock while it
draws), but which thread gets which numbers then depends on timing, so a run is reproducible
only while one thread at a time draws. A process started by fork begins with a copy of its
parent's generator, so workers draw the same numbers until each calls, say,
`manual_seed(seed + rank)`; a process started by spawn imports minigrad afresh, with a generator
seeded from the operating system."""
import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed):
    """Replace minigrad's random generator, for every thread, with a new one seeded with `seed`:
    the same seed gives the same numbers, run after run. Returns the new `numpy.random.Generator`."""
    global _generator
    _generator = np.random.default_rng(seed)
    return _generator


def generator():
    """The current `numpy.random.Generator` (use it instead of `np.random` to stay seeded)."""
    return _generator


def get_state():
    """The generator's state, a dict that `set_state` restores (checkpoints save it)."""
    return _generator.bit_generator.state


def set_state(state):
    _generator.bit_generator.state = state
