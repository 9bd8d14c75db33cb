"""The one random number generator behind `randn`, `rand`, dropout masks and weight init.

`manual_seed(n)` makes every random number that follows reproducible."""
import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed):
    """Reset minigrad's random generator: the same seed gives the same numbers, run after run."""
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
