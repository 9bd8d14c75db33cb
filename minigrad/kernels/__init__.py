"""Kernels: the hot loops, each as a numba kernel with a plain-numpy reference twin.

The engine never calls numba or a ``*_numpy`` twin directly: it calls the functions below, which
dispatch on the current backend.

- ``"numba"`` (default): compiled, parallel kernels from ``matmul.py``, ``softmax.py``, ...
- ``"numpy"``: the reference twins, short numpy code that is easy to read and to debug.

Choose with the environment variable ``MINIGRAD_BACKEND=numpy`` before import, or at run time
with ``minigrad.set_backend("numpy")``; ``minigrad.get_backend()`` tells which is in use.
The kernel modules (and numba with them) are imported when a kernel is first called.
"""
import importlib
import os

BACKENDS = ("numba", "numpy")
_backend = os.environ.get("MINIGRAD_BACKEND", "numba").strip().lower() or "numba"
if _backend not in BACKENDS:
    raise ValueError(f"MINIGRAD_BACKEND={_backend!r}: expected one of {BACKENDS}")

# name the engine calls -> module that defines `<name>_numpy` and `<name>_numba`
_KERNELS = {
    "matmul": "matmul",
    "softmax_forward": "softmax",
    "softmax_backward": "softmax",
    "log_softmax_forward": "softmax",
    "log_softmax_backward": "softmax",
    "masked_softmax_forward": "softmax",
    "masked_softmax_backward": "softmax",
    "layer_norm_forward": "layernorm",
    "layer_norm_backward": "layernorm",
    "gelu_forward": "gelu",
    "gelu_backward": "gelu",
    "cross_entropy_forward": "cross_entropy",
    "cross_entropy_backward": "cross_entropy",
    "adam_update": "adam",
    "attention_forward": "attention",
    "attention_backward": "attention",
    "embedding_backward": "embedding",
    "sum_rows": "reduce",
    "sum_squares": "reduce",
}
_table = {}


def get_backend():
    """The backend in use: ``"numba"`` or ``"numpy"``."""
    return _backend


def set_backend(name):
    """Run every kernel on ``"numba"`` (compiled) or ``"numpy"`` (reference) from now on."""
    global _backend
    name = str(name).lower()
    if name not in BACKENDS:
        raise ValueError(f"set_backend: unknown backend {name!r}; expected one of {BACKENDS}")
    _backend = name
    _table.clear()


class use_backend:
    """Context manager: ``with use_backend("numpy"): ...`` runs the block on that backend."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.previous = get_backend()
        set_backend(self.name)

    def __exit__(self, *exc):
        set_backend(self.previous)


def implementation(name, backend=None):
    """The function that computes kernel `name` on `backend` (default: the current one)."""
    backend = backend or _backend
    module = importlib.import_module(f"{__name__}.{_KERNELS[name]}")
    # importing submodule `matmul` sets the package attribute `matmul` to that module; put the
    # dispatcher back (the engine itself binds the dispatchers at import, see ops.py)
    globals()[name] = _dispatchers[name]
    return getattr(module, f"{name}_{backend}")


def _dispatcher(name):
    def call(*args, **kwargs):
        fn = _table.get(name)
        if fn is None:
            fn = _table[name] = implementation(name)
        return fn(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"Compute `{name}` on the current backend (see `{_KERNELS[name]}.py`)."
    return call


_dispatchers = {name: _dispatcher(name) for name in _KERNELS}
globals().update(_dispatchers)
