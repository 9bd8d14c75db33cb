"""Tensor: a numpy array, its gradient, and the op that made it.

    x = minigrad.tensor([[1.0, 2.0]], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad            # array([[2., 4.]], dtype=float32)

Every method that computes something calls an op from `ops.py` through `Function.apply`. This
file holds the class itself (attributes, autograd, in-place updates, dtypes, the operators and the
dtype rules for their operands); it inherits the elementwise functions and reductions from
tensor_math.py, and the shape methods from tensor_shape.py. The functions that make tensors
(zeros, arange, cat, where, ...) are in creation.py.
"""
import numbers

import numpy as np

from . import autograd, ops
from .tensor_math import TensorMath
from .tensor_shape import TensorShape

DEFAULT_FLOAT = np.float32


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


class Tensor(TensorMath, TensorShape):
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

    The elementwise functions and reductions (exp, tanh, sum, softmax, ...) are inherited from
    `TensorMath` (tensor_math.py), the shape methods (reshape, permute, split, ...) from
    `TensorShape` (tensor_shape.py).
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

    def __floordiv__(self, other):
        return ops.FloorDivide.apply(*_operands(self, other, "floor_divide"))

    def __rfloordiv__(self, other):
        return ops.FloorDivide.apply(*_operands(other, self, "floor_divide"))

    def __mod__(self, other):
        return ops.Remainder.apply(*_operands(self, other, "remainder"))

    def __rmod__(self, other):
        return ops.Remainder.apply(*_operands(other, self, "remainder"))

    # PyTorch's method names for the operators: x.add(y) is x + y, x.remainder(y) is x % y, ...
    add, sub, mul, div, pow, neg = __add__, __sub__, __mul__, __truediv__, __pow__, __neg__
    floor_divide, remainder = __floordiv__, __mod__

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return _operands(other, self, "matmul")[0].matmul(self)

    def matmul(self, other):
        """Matrix product with numpy's rules: 1-D operands are promoted to a row (self) or a column
        (other) and the added axis is removed from the result; leading batch axes broadcast."""
        a, b = _operands(self, other, "matmul")
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

    def maximum(self, other):
        return ops.Maximum.apply(*_operands(self, other, "maximum"))

    def minimum(self, other):
        return ops.Minimum.apply(*_operands(self, other, "minimum"))

    def clip(self, min=None, max=None):
        return ops.Clip.apply(_meeting_number(_meeting_number(self, min), max), low=min, high=max)

    # ------------------------------------------------------------------ indexing (other shape methods: tensor_shape.py)
    def __getitem__(self, index):
        return ops.GetItem.apply(self, index=_index_items(index))

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


# ---------------------------------------------------------------------- operands of binary ops
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


# ---------------------------------------------------------------------- names that moved
_IN_CREATION = frozenset(
    "as_tensor matmul cat stack where dropout embedding tensor zeros ones full zeros_like ones_like arange "
    "randn rand".split()
)


def __getattr__(name):
    """`from minigrad.tensor import zeros` (and the other functions now in creation.py) still works.
    The import is late, at the first such use: creation.py imports this module, so this module
    cannot import creation.py at its top."""
    if name in _IN_CREATION:
        from . import creation

        return getattr(creation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
