"""The functions that make tensors, as in PyTorch: from data (`tensor`, `as_tensor`), from a shape
(`zeros`, `ones`, `full`, `eye`, `arange`, `linspace`, `randn`, `rand`), like another tensor
(`zeros_like`, `ones_like`, `full_like`), and from other tensors (`matmul`, `cat`, `stack`, `where`,
`dropout`, `embedding`).

    import minigrad as mg
    x = mg.zeros(2, 3)                 # float32, as PyTorch's default
    i = mg.arange(4)                   # int64
    y = mg.cat([x, mg.ones(1, 3)])     # (3, 3)

The Tensor class is in tensor.py; minigrad exports every function here.
"""
import numbers

import numpy as np

from . import ops
from .ops import _axis
from .random import generator
from .tensor import DEFAULT_FLOAT, Tensor, _operands


def as_tensor(x, dtype=None):
    """`x` if it is already a Tensor, otherwise a constant Tensor of it."""
    return x if isinstance(x, Tensor) else Tensor(x, dtype=dtype)


# ---------------------------------------------------------------------- functions on tensors
def matmul(a, b):
    """Matrix product `a @ b`, with numpy's rules (see `Tensor.matmul`)."""
    a, b = _operands(a, b, "matmul")
    return a.matmul(b)


def cat(tensors, axis=0):
    """Join tensors along an existing axis."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("cat: needs at least one tensor")
    return ops.Cat.apply(*tensors, axis=_axis(axis, tensors[0].ndim, "cat", tensors[0].shape))


def stack(tensors, axis=0):
    """Join equal-shaped tensors along a new axis."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    return ops.Stack.apply(*tensors, axis=_axis(axis, tensors[0].ndim + 1, "stack", tensors[0].shape))


def where(condition, a, b):
    """Elementwise `a` where `condition` is True, else `b` (all three broadcast)."""
    condition = np.asarray(getattr(condition, "data", condition), dtype=bool)
    a, b = _operands(a, b, "where")
    return ops.Where.apply(a, b, condition=condition)


def dropout(x, p=0.5, training=True):
    """Inverted dropout; the identity when not training or p == 0."""
    if not training or p == 0.0:
        return x
    return ops.Dropout.apply(x, p=p)


def embedding(ids, weight):
    """Rows of `weight` (num_embeddings, dim) for integer `ids` of any shape: (*ids.shape, dim)."""
    ids = np.asarray(getattr(ids, "data", ids))
    return ops.Embedding.apply(weight, ids=ids)


# ---------------------------------------------------------------------- creation
def tensor(data, dtype=None, requires_grad=False):
    """A new Tensor holding a copy of `data` (Python floats become float32)."""
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else tuple(shape)


def zeros(*shape, dtype=DEFAULT_FLOAT, requires_grad=False):
    return Tensor(np.zeros(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def ones(*shape, dtype=DEFAULT_FLOAT, requires_grad=False):
    return Tensor(np.ones(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def full(shape, value, dtype=DEFAULT_FLOAT, requires_grad=False):
    return Tensor(np.full(_shape((shape,)), value, dtype=dtype), requires_grad=requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    return Tensor(np.zeros_like(getattr(t, "data", t), dtype=dtype), requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return Tensor(np.ones_like(getattr(t, "data", t), dtype=dtype), requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    """A tensor of t's shape (and dtype, unless given) filled with `fill_value`."""
    return Tensor(np.full_like(getattr(t, "data", t), fill_value, dtype=dtype), requires_grad=requires_grad)


def eye(n, m=None, dtype=DEFAULT_FLOAT, requires_grad=False):
    """The (n, m) identity matrix (m = n by default): ones on the diagonal, zeros elsewhere."""
    for name, value in (("n", n), ("m", m)):
        if value is not None and (not isinstance(value, numbers.Integral) or value < 0):
            raise ValueError(f"eye: {name} must be an integer >= 0, got {value!r}")
    return Tensor(np.eye(n, m, dtype=dtype), requires_grad=requires_grad)


def linspace(start, end, steps, dtype=DEFAULT_FLOAT, requires_grad=False):
    """`steps` evenly spaced values from start to end, both included (PyTorch's: steps is required)."""
    if not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"linspace: steps must be an integer >= 0, got {steps!r}")
    return Tensor(np.linspace(start, end, steps).astype(dtype), requires_grad=requires_grad)


def arange(start, stop=None, step=1, dtype=None, requires_grad=False):
    """Like numpy's arange; integer arguments give int64, floats give float32."""
    values = np.arange(start, stop, step) if stop is not None else np.arange(0, start, step)
    return Tensor(values if dtype or values.dtype.kind != "f" else values.astype(DEFAULT_FLOAT),
                  dtype=dtype, requires_grad=requires_grad)


def randn(*shape, dtype=DEFAULT_FLOAT, requires_grad=False):
    """Standard normal samples from minigrad's seeded generator (see `manual_seed`)."""
    return Tensor(generator().standard_normal(_shape(shape)).astype(dtype), requires_grad=requires_grad)


def rand(*shape, dtype=DEFAULT_FLOAT, requires_grad=False):
    """Uniform samples in [0, 1) from minigrad's seeded generator."""
    return Tensor(generator().random(_shape(shape)).astype(dtype), requires_grad=requires_grad)
