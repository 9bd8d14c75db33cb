"""The functions that make tensors, as in PyTorch: from data (`tensor`, `as_tensor`), from a shape
(`zeros`, `ones`, `full`, `eye`, `arange`, `linspace`, `randn`, `rand`), like another tensor
(`zeros_like`, `ones_like`, `full_like`), from a numpy array without a copy (`from_numpy`), and from
other tensors (`matmul`, `cat`, `stack`, `where`, `dropout`, `embedding`).

Each creation function takes PyTorch's `device=` too; the only device is the CPU (see devices.py).

    import minigrad as mg
    x = mg.zeros(2, 3)                 # float32, as PyTorch's default
    i = mg.arange(4)                   # int64
    y = mg.cat([x, mg.ones(1, 3)])     # (3, 3)

The Tensor class is in tensor.py; minigrad exports every function here.
"""
import numbers

import numpy as np

from . import ops
from .devices import check_device
from .ops import _axis
from .random import generator
from .tensor import DEFAULT_FLOAT, Tensor, _operands
from .tensor_math import _pytorch_names


def as_tensor(x, dtype=None, device=None):
    """`x` if it is already a Tensor (converted, if another dtype is asked for), otherwise a constant
    Tensor of it."""
    if device is not None:
        check_device(device, "as_tensor")
    if isinstance(x, Tensor):
        return x if dtype is None else x.to(dtype)
    return Tensor(x, dtype=dtype)


def from_numpy(array):
    """A tensor on `array`'s own memory, in its dtype (float64 stays float64): a change to one shows
    in the other, as in PyTorch."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy array, got {type(array).__name__}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"from_numpy: the array's dtype {array.dtype} is not a number type (bool, int, float)")
    return Tensor._from_op(array, False)


# ---------------------------------------------------------------------- functions on tensors
def matmul(a, b):
    """Matrix product `a @ b`, with numpy's rules (see `Tensor.matmul`)."""
    a, b = _operands(a, b, "matmul")
    return a.matmul(b)


def cat(tensors, axis=None, *, dim=None):
    """Join tensors along an existing axis (axis= or dim=, 0 by default)."""
    if dim is not None:
        axis = _pytorch_names("cat", axis, False, dim, None)[0]
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("cat: needs at least one tensor")
    return ops.Cat.apply(*tensors, axis=_axis(axis or 0, tensors[0].ndim, "cat", tensors[0].shape))


def stack(tensors, axis=None, *, dim=None):
    """Join equal-shaped tensors along a new axis (axis= or dim=, 0 by default)."""
    if dim is not None:
        axis = _pytorch_names("stack", axis, False, dim, None)[0]
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    return ops.Stack.apply(*tensors, axis=_axis(axis or 0, tensors[0].ndim + 1, "stack", tensors[0].shape))


def where(condition, a, b):
    """Elementwise `a` where `condition` is True, else `b` (all three broadcast)."""
    condition = np.asarray(condition, dtype=bool)
    a, b = _operands(a, b, "where")
    return ops.Where.apply(a, b, condition=condition)


def dropout(x, p=0.5, training=True):
    """Inverted dropout; the identity when not training or p == 0."""
    if not training or p == 0.0:
        return x
    return ops.Dropout.apply(x, p=p)


def embedding(ids, weight):
    """Rows of `weight` (num_embeddings, dim) for integer `ids` of any shape: (*ids.shape, dim)."""
    ids = np.asarray(ids)
    return ops.Embedding.apply(weight, ids=ids)


# ---------------------------------------------------------------------- creation
def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new Tensor holding a copy of `data` (Python floats become float32)."""
    check_device(device, "tensor")
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else tuple(shape)


def zeros(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    check_device(device, "zeros")
    return Tensor(np.zeros(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def ones(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    check_device(device, "ones")
    return Tensor(np.ones(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def full(shape, value, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    check_device(device, "full")
    return Tensor(np.full(_shape((shape,)), value, dtype=dtype), requires_grad=requires_grad)


def zeros_like(t, dtype=None, requires_grad=False, device=None):
    check_device(device, "zeros_like")
    return Tensor(np.zeros_like(np.asarray(t), dtype=dtype), requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False, device=None):
    check_device(device, "ones_like")
    return Tensor(np.ones_like(np.asarray(t), dtype=dtype), requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of t's shape (and dtype, unless given) filled with `fill_value`."""
    check_device(device, "full_like")
    return Tensor(np.full_like(np.asarray(t), fill_value, dtype=dtype), requires_grad=requires_grad)


def eye(n, m=None, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """The (n, m) identity matrix (m = n by default): ones on the diagonal, zeros elsewhere."""
    check_device(device, "eye")
    for name, value in (("n", n), ("m", m)):
        if value is not None and (not isinstance(value, numbers.Integral) or value < 0):
            raise ValueError(f"eye: {name} must be an integer >= 0, got {value!r}")
    return Tensor(np.eye(n, m, dtype=dtype), requires_grad=requires_grad)


def linspace(start, end, steps, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """`steps` evenly spaced values from start to end, both included (PyTorch's: steps is required)."""
    check_device(device, "linspace")
    if not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"linspace: steps must be an integer >= 0, got {steps!r}")
    return Tensor(np.linspace(start, end, steps).astype(dtype), requires_grad=requires_grad)


def arange(start, stop=None, step=1, dtype=None, requires_grad=False, device=None):
    """Like numpy's arange; integer arguments give int64, floats give float32."""
    check_device(device, "arange")
    values = np.arange(start, stop, step) if stop is not None else np.arange(0, start, step)
    return Tensor(values if dtype or values.dtype.kind != "f" else values.astype(DEFAULT_FLOAT),
                  dtype=dtype, requires_grad=requires_grad)


def randn(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Standard normal samples from minigrad's seeded generator (see `manual_seed`)."""
    check_device(device, "randn")
    return Tensor(generator().standard_normal(_shape(shape)).astype(dtype), requires_grad=requires_grad)


def rand(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Uniform samples in [0, 1) from minigrad's seeded generator."""
    check_device(device, "rand")
    return Tensor(generator().random(_shape(shape)).astype(dtype), requires_grad=requires_grad)
