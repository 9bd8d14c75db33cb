"""Tensor: a numpy array, its gradient, and the op that made it.

    x = minigrad.tensor([[1.0, 2.0]], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad            # array([[2., 4.]], dtype=float32)

Every method that computes something calls an op from `ops.py` through `Function.apply`.
"""
import numbers

import numpy as np

from . import autograd, ops
from .random import generator

DEFAULT_FLOAT = np.float32


def _axis(axis, ndim, op, shape):
    """Check one axis (negatives count from the end) and return it as 0..ndim-1."""
    if not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise ops.AxisError(f"{op}: axis {axis} is out of range for a tensor of shape {shape} ({len(shape)} dims)")
    return int(axis) % ndim


def _to_array(data, dtype=None):
    """numpy arrays keep their dtype; Python floats (and lists of them) become float32."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, (np.ndarray, np.generic)):
        return np.array(data, dtype=dtype)
    arr = np.array(data, dtype=dtype)
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype(DEFAULT_FLOAT)
    return arr


class Tensor:
    """An n-dimensional array of numbers (`.data`, a numpy array), with the gradient that backward
    leaves in `.grad` and, for the output of an op, the record of that op (`grad_fn`).

    dtypes, as in PyTorch:
    - Python floats become float32 (the default float dtype); numpy arrays keep their dtype.
    - An op whose result is a real number whatever its inputs are (/, exp, log, sqrt, sin, cos,
      tanh, sigmoid, gelu, softmax, mean, var, ...) computes integer and bool tensors in float32:
      `mg.arange(4) / 4` is float32, not numpy's float64. (Function.apply does this, for every op
      that sets `promotes_int_to_float`.) Sums, products, max, relu, ... of integers stay integers.
    - An integer tensor meeting a float tensor or a Python float becomes float: `mg.arange(4) * 0.5`
      and `mg.arange(4) ** 0.5` are float32.
    - Two different float dtypes are never mixed silently (float32 + float64 raises): convert one
      with `.float()` or `.double()`.
    """

    __slots__ = ("data", "grad", "_requires_grad", "_ctx", "_version", "_base", "_retains_grad", "__weakref__",
                 "__dict__")
    __array_priority__ = 1000  # numpy_array * tensor calls Tensor.__rmul__

    def __init__(self, data, dtype=None, requires_grad=False):
        self.data = _to_array(data, dtype)
        self.grad = None
        self._ctx = None
        self._version = 0  # counts in-place changes (see autograd._check_versions)
        self._base = None  # the tensor whose memory this one views, if any: they share one version count
        self._retains_grad = False
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _from_op(cls, data, requires_grad):
        t = object.__new__(Tensor)
        t.data, t.grad, t._ctx, t._version, t._base, t._retains_grad = data, None, None, 0, None, False
        t._requires_grad = requires_grad
        return t

    # ------------------------------------------------------------------ attributes
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and self.data.dtype.kind not in "fc":
            raise TypeError(
                f"requires_grad: only floating-point tensors can require grad, this one is {self.data.dtype} "
                "(integer tensors hold indices, which have no gradient)"
            )
        self._requires_grad = bool(value)

    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    size = property(lambda self: self.data.size)
    is_leaf = property(lambda self: self._ctx is None)
    grad_fn = property(lambda self: None if self._ctx is None else self._ctx.fn.__name__)

    def __len__(self):
        return len(self.data)

    def numpy(self):
        """The underlying numpy array (shared, not copied)."""
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item: only a tensor with one element converts to a Python number, shape is {self.shape}")
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def __repr__(self):
        body = np.array2string(self.data, separator=", ", prefix="tensor(", precision=4)
        extra = f", grad_fn={self.grad_fn}" if self._ctx is not None else (
            ", requires_grad=True" if self.requires_grad else "")
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype}{extra})"

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self.data.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.data)

    # ------------------------------------------------------------------ autograd
    def backward(self, grad=None, retain_graph=False):
        """Backpropagate from this tensor; leaves that require grad get `.grad` (accumulated)."""
        autograd.backward(self, grad, retain_graph)

    def detach(self):
        """The same values (shared memory), cut from the graph."""
        t = Tensor._from_op(self.data, False)
        t._base = self if self._base is None else self._base
        return t

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        """Keep `.grad` on this intermediate tensor too after backward (leaves keep it always)."""
        self._retains_grad = True
        return self

    # ------------------------------------------------------------------ in-place updates
    def _bump(self):
        """Count one in-place change of this tensor's values (see autograd._check_versions). The
        count lives on the tensor that owns the memory, so a view and its base see each other's
        changes. Optimizer steps, weight init and load_state_dict call this after writing `.data`."""
        (self if self._base is None else self._base)._version += 1

    def _inplace(self, op):
        """Before the in-place method `op` changes this tensor: refuse a leaf that requires grad
        while gradients are recorded (its graph would silently go wrong), then count the change."""
        if self.requires_grad and self._ctx is None and autograd.is_grad_enabled():
            raise RuntimeError(
                f"{op}: a leaf tensor that requires grad cannot be changed in place while gradients are "
                "recorded; wrap the update in `with minigrad.no_grad():`"
            )
        self._bump()

    def assign(self, values):
        """Replace the values in place (same shape and dtype): `p.assign(new)`. Counts as a change
        for autograd's check that saved tensors were not modified."""
        values = np.asarray(getattr(values, "data", values))
        if values.shape != self.shape:
            raise ValueError(f"assign: got shape {values.shape}, expected {self.shape}")
        self._inplace("assign")
        self.data[...] = values
        return self

    def zero_(self):
        self._inplace("zero_")
        self.data[...] = 0
        return self

    def fill_(self, value):
        self._inplace("fill_")
        self.data[...] = value
        return self

    def add_(self, other, alpha=1.0):
        self._inplace("add_")
        self.data += alpha * np.asarray(getattr(other, "data", other), dtype=self.dtype)
        return self

    def mul_(self, other):
        self._inplace("mul_")
        self.data *= np.asarray(getattr(other, "data", other), dtype=self.dtype)
        return self

    # ------------------------------------------------------------------ dtype
    def to(self, dtype):
        dtype = np.dtype(dtype)
        return self if dtype == self.dtype else ops.Cast.apply(self, dtype=dtype)

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def long(self):
        return Tensor(self.data.astype(np.int64))

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other):
        return ops.Add.apply(*_operands(self, other, "add"))

    def __radd__(self, other):
        return ops.Add.apply(*_operands(other, self, "add"))

    def __sub__(self, other):
        return ops.Sub.apply(*_operands(self, other, "sub"))

    def __rsub__(self, other):
        return ops.Sub.apply(*_operands(other, self, "sub"))

    def __mul__(self, other):
        return ops.Mul.apply(*_operands(self, other, "mul"))

    def __rmul__(self, other):
        return ops.Mul.apply(*_operands(other, self, "mul"))

    def __truediv__(self, other):
        return ops.Div.apply(*_operands(self, other, "div"))

    def __rtruediv__(self, other):
        return ops.Div.apply(*_operands(other, self, "div"))

    def __neg__(self):
        return ops.Neg.apply(self)

    def __pow__(self, exponent):
        if isinstance(exponent, numbers.Number):
            return ops.PowScalar.apply(_meeting_number(self, exponent), exponent=exponent)
        return ops.Pow.apply(*_operands(self, exponent, "pow"))

    def __rpow__(self, base):
        return ops.Pow.apply(*_operands(base, self, "pow"))

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def maximum(self, other):
        return ops.Maximum.apply(*_operands(self, other, "maximum"))

    def minimum(self, other):
        return ops.Minimum.apply(*_operands(self, other, "minimum"))

    # comparisons give bool tensors, outside the graph (they have no gradient)
    def _compare(self, other, fn):
        a, b = _operands(self, other, fn.__name__)
        return Tensor._from_op(fn(a.data, b.data), False)

    __lt__ = lambda self, other: self._compare(other, np.less)  # noqa: E731
    __le__ = lambda self, other: self._compare(other, np.less_equal)  # noqa: E731
    __gt__ = lambda self, other: self._compare(other, np.greater)  # noqa: E731
    __ge__ = lambda self, other: self._compare(other, np.greater_equal)  # noqa: E731
    __eq__ = lambda self, other: self._compare(other, np.equal)  # noqa: E731
    __ne__ = lambda self, other: self._compare(other, np.not_equal)  # noqa: E731

    def __invert__(self):
        if self.dtype != np.bool_:
            raise TypeError(f"~ (logical not) needs a bool tensor, got {self.dtype}")
        return Tensor._from_op(~self.data, False)

    def __and__(self, other):
        return Tensor._from_op(self.data & np.asarray(getattr(other, "data", other)), False)

    def __or__(self, other):
        return Tensor._from_op(self.data | np.asarray(getattr(other, "data", other)), False)

    def any(self):
        return bool(self.data.any())

    def all(self):
        return bool(self.data.all())

    # ------------------------------------------------------------------ elementwise functions
    def exp(self):
        return ops.Exp.apply(self)

    def log(self):
        return ops.Log.apply(self)

    def sqrt(self):
        return ops.Sqrt.apply(self)

    def abs(self):
        return ops.Abs.apply(self)

    def sin(self):
        return ops.Sin.apply(self)

    def cos(self):
        return ops.Cos.apply(self)

    def tanh(self):
        return ops.Tanh.apply(self)

    def sigmoid(self):
        return ops.Sigmoid.apply(self)

    def relu(self):
        return ops.ReLU.apply(self)

    def gelu(self, approximate="none"):
        """GELU(x) = x * Phi(x); approximate="tanh" uses the tanh formula (GPT-2's)."""
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return ops.GELU.apply(self, approximate=approximate == "tanh")

    def clip(self, min=None, max=None):
        return ops.Clip.apply(_meeting_number(_meeting_number(self, min), max), low=min, high=max)

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False):
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return ops.Var.apply(self, axis=axis, keepdims=keepdims, ddof=ddof)

    def max(self, axis=None, keepdims=False):
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=True)

    def min(self, axis=None, keepdims=False):
        return ops.Max.apply(self, axis=axis, keepdims=keepdims, largest=False)

    def argmax(self, axis=None, keepdims=False):
        if axis is not None:
            _axis(axis, self.ndim, "argmax", self.shape)
        return Tensor._from_op(np.argmax(self.data, axis=axis, keepdims=keepdims), False)

    def argmin(self, axis=None, keepdims=False):
        if axis is not None:
            _axis(axis, self.ndim, "argmin", self.shape)
        return Tensor._from_op(np.argmin(self.data, axis=axis, keepdims=keepdims), False)

    def softmax(self, axis=-1, scale=None, mask=None):
        """softmax along `axis`. With `scale` and/or a bool `mask` (over the last axis only):
        softmax(scale * x) counting only the entries where mask is True, in one fused op; a row
        with nothing allowed gives zeros."""
        axis = _axis(axis, self.ndim, "softmax", self.shape)
        if scale is None and mask is None:
            return ops.Softmax.apply(self, axis=axis)
        if axis != self.ndim - 1:
            raise ValueError(f"softmax: scale and mask work over the last axis only, got axis {axis}")
        if mask is not None:
            mask = np.asarray(getattr(mask, "data", mask))
            if mask.dtype != np.bool_:
                raise TypeError(f"softmax: mask must be bool (True = keep), got {mask.dtype}")
        return ops.MaskedSoftmax.apply(self, mask=mask, scale=1.0 if scale is None else float(scale))

    def log_softmax(self, axis=-1):
        return ops.LogSoftmax.apply(self, axis=_axis(axis, self.ndim, "log_softmax", self.shape))

    # ------------------------------------------------------------------ shape
    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self if shape == self.shape else ops.Reshape.apply(self, shape=shape)

    view = reshape

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        start, end = start_dim % self.ndim, end_dim % self.ndim
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def permute(self, *axes):
        axes = tuple(axes[0]) if len(axes) == 1 and not isinstance(axes[0], numbers.Integral) else axes
        if len(axes) != self.ndim:
            raise ValueError(f"permute: got {len(axes)} axes {axes} for a tensor of shape {self.shape}")
        return ops.Permute.apply(self, axes=axes)

    def transpose(self, axis0=-2, axis1=-1):
        """Swap two axes (the last two by default)."""
        if self.ndim < 2:
            return self
        axis0, axis1 = (_axis(a, self.ndim, "transpose", self.shape) for a in (axis0, axis1))
        axes = list(range(self.ndim))
        axes[axis0], axes[axis1] = axes[axis1], axes[axis0]
        return ops.Permute.apply(self, axes=tuple(axes))

    @property
    def T(self):
        """All axes reversed (numpy's .T)."""
        return self if self.ndim < 2 else ops.Permute.apply(self, axes=tuple(reversed(range(self.ndim))))

    def contiguous(self):
        """A row-major copy (or this tensor, if it already is): after a transpose, it saves the
        ops that follow from reading scattered memory, or from copying it again each time."""
        return self if self.data.flags.c_contiguous else ops.Contiguous.apply(self)

    def unsqueeze(self, axis):
        axis = _axis(axis, self.ndim + 1, "unsqueeze", self.shape)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis=None):
        if axis is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = {_axis(a, self.ndim, "squeeze", self.shape)
                for a in ((axis,) if isinstance(axis, numbers.Integral) else axis)}
        for a in axes:
            if self.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {self.shape[a]}, not 1 (shape {self.shape})")
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def expand(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self if shape == self.shape else ops.Expand.apply(self, shape=shape)

    def broadcast_to(self, shape):
        return self.expand(tuple(shape))

    def __getitem__(self, index):
        return ops.GetItem.apply(self, index=_index_items(index))

    def split(self, split_size_or_sections, axis=0):
        """Pieces of `split_size` along `axis` (the last may be smaller), or of the listed sizes."""
        axis = _axis(axis, self.ndim, "split", self.shape)
        n = self.shape[axis]
        if isinstance(split_size_or_sections, numbers.Integral):
            size = int(split_size_or_sections)
            if size <= 0:
                raise ValueError(f"split: split size must be positive, got {size}")
            sizes = [min(size, n - start) for start in range(0, n, size)]
        else:
            sizes = list(split_size_or_sections)
            if any(size < 0 for size in sizes):
                raise ValueError(f"split: sizes must not be negative, got {sizes}")
            if sum(sizes) != n:
                raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, but axis {axis} has size {n}")
        if not sizes:  # an empty axis cut into pieces of some size: no pieces
            return ()
        return ops.Split.apply(self, sizes=sizes, axis=axis)

    def unbind(self, axis=0):
        """The slices along `axis`, each without that axis: x.unbind(0) is (x[0], x[1], ...)."""
        axis = _axis(axis, self.ndim, "unbind", self.shape)
        return ops.Unbind.apply(self, axis=axis)

    def chunk(self, chunks, axis=0):
        """`chunks` pieces of (nearly) equal size along `axis`."""
        if not isinstance(chunks, numbers.Integral) or chunks <= 0:
            raise ValueError(f"chunk: the number of chunks must be a positive integer, got {chunks}")
        axis = _axis(axis, self.ndim, "chunk", self.shape)
        return self.split(-(-self.shape[axis] // chunks), axis=axis)

    def masked_fill(self, mask, value):
        """A copy with `value` where `mask` (bool, broadcastable to this shape) is True."""
        mask = np.asarray(getattr(mask, "data", mask))
        return ops.MaskedFill.apply(self, mask=mask, value=value)

    def tril(self, k=0):
        return ops.Triangle.apply(self, k=k, lower=True)

    def triu(self, k=0):
        return ops.Triangle.apply(self, k=k, lower=False)

    def matmul(self, other):
        return matmul(self, other)


# ---------------------------------------------------------------------- operands of binary ops
def as_tensor(x, dtype=None):
    """`x` if it is already a Tensor, otherwise a constant Tensor of it."""
    return x if isinstance(x, Tensor) else Tensor(x, dtype=dtype)


def _operands(a, b, op):
    """Make both operands Tensors of one dtype.

    A Python number or an integer/bool tensor takes the float operand's dtype. Two float tensors
    of different precision are refused: mixing float32 and float64 silently is a common bug
    (a float64 input to a float32 model), and the message says how to convert."""
    a_is, b_is = isinstance(a, Tensor), isinstance(b, Tensor)
    if a_is and b_is:
        da, db = a.data.dtype, b.data.dtype
        if da == db:
            return a, b
    a = a if a_is else _constant_like(a, b)
    b = b if b_is else _constant_like(b, a)
    da, db = a.data.dtype, b.data.dtype
    if da != db:
        fa, fb = da.kind == "f", db.kind == "f"
        if fa and fb:
            raise TypeError(
                f"{op}: dtypes differ: {da} and {db} (shapes {a.shape} and {b.shape}); convert one with "
                ".float() or .double() (for a model: model.to(dtype))"
            )
        if fa:
            b = Tensor._from_op(b.data.astype(da), False)
        elif fb:
            a = Tensor._from_op(a.data.astype(db), False)
    return a, b


def _meeting_number(x, number):
    """Tensor x, about to meet a Python number in an op (an exponent, a clip bound): an integer
    tensor meeting a float becomes the default float dtype, as in `_operands` (x ** 0.5 as x * 0.5)."""
    if number is None or isinstance(number, numbers.Integral) or x.data.dtype.kind in "fc":
        return x
    return x.to(DEFAULT_FLOAT)


def _constant_like(x, other):
    if isinstance(x, (numbers.Number, np.generic)) and isinstance(other, Tensor) and other.data.dtype.kind == "f":
        return Tensor._from_op(np.asarray(x, dtype=other.data.dtype), False)
    return Tensor(x)


# ---------------------------------------------------------------------- indexing
def _index_items(index):
    """An index for `x[index]` as the tuple of numpy index items that GetItem takes: tensors
    become their arrays, lists become index arrays."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(x.data if isinstance(x, Tensor) else x for x in items)
    return tuple(_index_array(x) if isinstance(x, list) else x for x in items)


def _index_array(positions):
    """A list of positions as an index array; an empty list picks nothing, as an integer index
    (numpy would read [] as an empty float array, which is no index)."""
    array = np.asarray(positions)
    return array.astype(np.intp) if array.size == 0 else array



# ---------------------------------------------------------------------- functions on tensors
def matmul(a, b):
    """Matrix product with numpy's rules: 1-D operands are promoted to a row (a) or a column (b)
    and the added axis is removed from the result; leading batch axes broadcast."""
    a, b = _operands(a, b, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least 1 dim, got shapes {a.shape} and {b.shape}")
    if a.dtype.kind == "f" and b.dtype.kind == "f" and a.dtype != b.dtype:
        raise TypeError(f"matmul: dtypes differ: {a.dtype} and {b.dtype}")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(
            f"matmul: inner dimensions differ: {a.shape} @ {b.shape} ({a2.shape[-1]} != {b2.shape[-2]})"
        )
    out = ops.MatMul.apply(a2, b2)
    if a.ndim == 1:
        out = out.reshape(out.shape[:-2] + out.shape[-1:])
    if b.ndim == 1:
        out = out.reshape(out.shape[:-1])
    return out


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

