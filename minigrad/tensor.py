"""Tensor: a numpy array, its gradient, and the op that made it.

    x = minigrad.tensor([[1.0, 2.0]], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad            # tensor([[2., 4.]], shape=(1, 2), dtype=float32), a Tensor as in PyTorch
    x.data            # a Tensor of x's values (the same memory), outside the graph
    x.numpy()         # the numpy array itself

The array lives in `_data`; library code reads it there (or with `.numpy()`), with no Tensor made.

Every method that computes something calls an op from `ops.py` through `Function.apply`. This
file holds the class itself (attributes, autograd, in-place updates, dtype and device, the operators and the
dtype rules for their operands); it inherits the elementwise functions and reductions from
tensor_math.py, and the shape methods from tensor_shape.py. The functions that make tensors
(zeros, arange, cat, where, ...) are in creation.py.
"""
import math
import numbers
import weakref

import numpy as np

from . import autograd, ops
from . import devices
from .grad_mode import _modes
from .tensor_math import TensorMath
from .tensor_shape import TensorShape

# The default float dtype: of Python floats made into tensors, of float factories (zeros, randn, ...)
# and of layers' parameters. float32, as PyTorch's; set_default_dtype changes it for the whole
# process (as PyTorch's does: it is not per thread).
_default_float = np.dtype(np.float32)


def get_default_dtype():
    """The default float dtype, "float32" unless set_default_dtype changed it (torch.get_default_dtype)."""
    return _default_float.name


def set_default_dtype(dtype):
    """Make `dtype` (minigrad.float32 or minigrad.float64) the default float dtype of the process:
    `minigrad.tensor([1.5])`, `zeros`, `randn`, ... and new layers' parameters take it. Tensors made
    before keep theirs. (A course that checks gradients numerically starts with
    `set_default_dtype(minigrad.float64)`.)"""
    global _default_float
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"set_default_dtype: expected a dtype such as minigrad.float64, got {dtype!r}") from None
    if d not in (np.float32, np.float64):
        raise TypeError(f"set_default_dtype: the default dtype must be float32 or float64, got {d.name} (minigrad's "
                        "kernels compute in those two)")
    _default_float = d


def default_float():
    """The default float dtype as a numpy dtype (for the code of factories and layers)."""
    return _default_float


# How tensors print (set_printoptions): digits after the point, how many elements before "...", ...
PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 75, "sci_mode": None}
_PRINT_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=75),
                   "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=75),
                   "full": dict(precision=4, threshold=2**63 - 1, edgeitems=3, linewidth=75)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as PyTorch's `torch.set_printoptions`: `precision` digits after the point,
    at most `threshold` elements before the middle is cut to "..." (keeping `edgeitems` at each
    end), lines of `linewidth` characters; `profile` "default", "short" or "full" sets them all;
    `sci_mode` True or False forces scientific notation on or off (None: chosen per tensor). For
    the whole process, as PyTorch's."""
    if profile is not None:
        if profile not in _PRINT_PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PRINT_PROFILES)}, got {profile!r}")
        PRINT_OPTIONS.update(_PRINT_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"set_printoptions: {name} must be an integer >= 0, got {value!r}")
            PRINT_OPTIONS[name] = value
    PRINT_OPTIONS["sci_mode"] = sci_mode

_TENSOR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                      "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}  # (x.type()'s names)


def _to_array(data, dtype=None):
    """numpy arrays keep their dtype; Python floats (and lists of them) become float32."""
    if isinstance(data, Tensor):
        data = data._data
    if isinstance(data, (np.ndarray, np.generic)):
        return np.array(data, dtype=dtype)
    arr = np.array(data, dtype=dtype)
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype(_default_float)
    return arr


class Tensor(TensorMath, TensorShape):
    """An n-dimensional array of numbers (a numpy array: `.numpy()`), with the gradient that backward
    leaves in `.grad` (a Tensor that does not require grad) and, for the output of an op, the record
    of that op (`grad_fn`). `.data` is a Tensor of the same values in the same memory, outside the
    graph, as in PyTorch.

    dtypes, as in PyTorch:
    - Python floats become float32 (the default float dtype); numpy arrays keep their dtype.
    - An op whose result is a real number whatever its inputs are (/, exp, log, sqrt, sin, cos,
      tanh, sigmoid, gelu, softmax, mean, var, ...) computes integer and bool tensors in float32:
      `mg.arange(4) / 4` is float32, not numpy's float64. (Function.apply does this, for every op
      that sets `promotes_int_to_float`.) Sums, products, max, relu, ... of integers stay integers.
    - An integer tensor meeting a float tensor or a Python float becomes float: `mg.arange(4) * 0.5`
      and `mg.arange(4) ** 0.5` are float32.
    - float32 meeting float64 gives float64 in elementwise ops, comparisons, where, cat and stack
      (numpy's result_type, as PyTorch promotes), and each input's gradient comes back in that
      input's own dtype (a float32 weight keeps a float32 .grad). matmul, linear, layer_norm and
      fused attention refuse the mix, as PyTorch's do: there a float64 input to a float32 model
      is nearly always an unconverted numpy array, and a silent float64 copy of the weights would
      cost twice the memory; the message says to write `.float()` or `.double()`. (The rule, once:
      ops.same_float_dtype.)

    The elementwise functions and reductions (exp, tanh, sum, softmax, ...) are inherited from
    `TensorMath` (tensor_math.py), the shape methods (reshape, permute, split, ...) from
    `TensorShape` (tensor_shape.py).
    """

    __slots__ = ("_data", "_grad", "_requires_grad", "_ctx", "_version", "_base", "_retains_grad", "_changed_by",
                 "__weakref__", "__dict__")
    __array_priority__ = 1000  # numpy_array * tensor calls Tensor.__rmul__

    def __init__(self, data, dtype=None, requires_grad=False):
        if isinstance(dtype, numbers.Integral) and not isinstance(dtype, bool):
            raise TypeError(f"Tensor{(data, dtype)}: Tensor(...) takes values, not sizes; for a tensor of shape "
                            f"{(data, dtype)} write minigrad.zeros(...) (or PyTorch's old FloatTensor(...))")
        self._data = _to_array(data, dtype)
        self._grad = None
        self._ctx = None
        self._version = 0  # counts in-place changes (see autograd._check_versions)
        self._base = None  # the tensor whose memory this one views, if any: they share one version count
        self._retains_grad = False
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _from_op(cls, data, requires_grad):
        t = object.__new__(Tensor)
        t._data, t._grad, t._ctx, t._version, t._base, t._retains_grad = data, None, None, 0, None, False
        t._requires_grad = requires_grad
        return t

    # ------------------------------------------------------------------ attributes
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and self._data.dtype.kind not in "fc":
            raise TypeError(
                f"requires_grad: only floating-point tensors can require grad, this one is {self._data.dtype} "
                "(integer tensors hold indices, which have no gradient)"
            )
        self._requires_grad = bool(value)

    @property
    def data(self):
        """The values as a Tensor outside the graph (no grad_fn, requires_grad False), sharing this
        tensor's memory: in-place ops on it (`p.data += step`, `p.data.mul_(0.5)`, `p.data[0] = 1`,
        `p.data.copy_(src)`) write into this tensor, are not recorded by autograd and do not count
        as a change of this tensor's version (PyTorch's rules)."""
        return Tensor._from_op(self._data, False)

    @data.setter
    def data(self, value):
        """`p.data = t` makes p hold t's values (its memory; t's shape and dtype, as PyTorch allows),
        without autograd seeing it. `p.data += x` ends by assigning back the view it wrote into:
        nothing to do then."""
        array = value._data if isinstance(value, Tensor) else value
        if array is self._data:
            return
        if _modes.recorder is not None:
            _modes.recorder.refuse("it replaces a tensor's array (t.data = ...), which a replay would not redo")
        if not isinstance(array, np.ndarray):
            array = _to_array(array)
        if self._requires_grad and array.dtype.kind not in "fc":
            raise TypeError(f"data: a tensor that requires grad must hold floating-point values, got {array.dtype}")
        self._data = array

    @property
    def grad(self):
        """The gradient that backward left (a Tensor that does not require grad), or None. Backward
        adds into it; `optimizer.zero_grad()` sets it back to None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        """`p.grad = None`, or a Tensor (kept as it is: backward adds into it) or a numpy array (copied
        into a Tensor), shaped like p. (Its dtype may differ from p's: the optimizers compute in p's
        dtype. Its shape is not checked here, so that the exercises' checker can name an input whose
        gradient came out wrongly shaped.)"""
        if value is not None and not isinstance(value, Tensor):
            value = Tensor._from_op(np.array(value), False)
        if _modes.recorder is not None:
            _modes.recorder.record_grad_set(self, value)
        self._grad = value

    shape = property(lambda self: self._data.shape)
    ndim = property(lambda self: self._data.ndim)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: ElementCount(self._data.size, self._data.shape),
                    doc="The number of elements, an int (numpy's x.size); x.size() is the shape, x.size(d) "
                        "its length along d (PyTorch's)")
    is_leaf = property(lambda self: self._ctx is None)
    grad_fn = property(lambda self: None if self._ctx is None else GradFn(self._ctx),
                       doc="The op that made this tensor (None for a leaf): equal to its name (\"Mul\"), with "
                           "PyTorch's next_functions and name()")

    def __len__(self):
        return len(self._data)

    def numel(self):
        """The number of elements."""
        return self._data.size

    def dim(self):
        """The number of dims (x.ndim)."""
        return self._data.ndim

    def numpy(self):
        """The underlying numpy array (shared, not copied)."""
        if _modes.recorder is not None:
            _modes.recorder.record_read(self, self._data, "array")
        return self._data

    def _read(self, what):
        """A value of this tensor is read into Python: minigrad.compile must know (compile.py)."""
        if _modes.recorder is not None:
            _modes.recorder.record_read(self, None, what)

    def item(self):
        self._read("t.item()")
        if self._data.size != 1:
            raise ValueError(f"item: only a tensor with one element converts to a Python number, shape is {self.shape}")
        return self._data.item()

    def __float__(self):
        self._read("float(t)")
        if self._data.size != 1:
            raise ValueError(f"float(): only a tensor with one element converts to a Python float, shape is "
                             f"{self.shape}")
        return float(self._data.item())

    def __int__(self):
        self._read("int(t)")
        if self._data.size != 1:
            raise ValueError(f"int(): only a tensor with one element converts to a Python int, shape is {self.shape}")
        return int(self._data.item())

    def data_ptr(self):
        """The address of this tensor's first element in memory."""
        return self._data.__array_interface__["data"][0]

    def __index__(self):
        """An integer tensor of one element as an index: data[i:i + 8], range(n), [..][i] (PyTorch's)."""
        if self._data.size != 1 or self._data.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors of a single element can be converted to an index, got "
                            f"{self._data.dtype} of shape {self.shape}")
        self._read("an index")
        return int(self._data.item())

    def tolist(self):
        self._read("t.tolist()")
        return self._data.tolist()

    def __array__(self, dtype=None, copy=None):
        if _modes.recorder is not None:
            _modes.recorder.record_read(self, self._data if dtype is None else None, "np.asarray(t)")
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self):
        self._read("printing t")
        options = PRINT_OPTIONS
        sci = options["sci_mode"]  # None: numpy decides; False: never scientific; True: always
        formatter = None if not sci else {"float_kind": lambda v: f"{v:.{options['precision']}e}"}
        body = np.array2string(self._data, separator=", ", prefix="tensor(", precision=options["precision"],
                               threshold=options["threshold"], edgeitems=options["edgeitems"],
                               max_line_width=options["linewidth"], suppress_small=sci is False or None,
                               formatter=formatter)
        extra = f", grad_fn={self.grad_fn}" if self._ctx is not None else (
            ", requires_grad=True" if self.requires_grad else "")
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype}{extra})"

    def __format__(self, spec):
        """f"{t:.4f}": a one-element tensor formats as its number; f"{t}" is str(t), except for a 0-d
        tensor, which is its number (PyTorch's)."""
        self._read("formatting t")
        if self._data.size == 1 and (spec or self._data.ndim == 0):
            return format(self._data.item(), spec)
        if spec:
            raise TypeError(f"format: the spec {spec!r} formats one number, but this tensor has shape {self.shape} "
                            f"({self._data.size} numbers); format t.item() of a one-element tensor, or each element")
        return str(self)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        self._read("bool(t), as in `if t:`")
        if self._data.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self._data)

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=False, create_graph=False):
        """Backpropagate from this tensor; leaves that require grad get `.grad` (accumulated).
        `gradient`: d(something)/d(this tensor), of its shape (needed when it is not a scalar)."""
        if create_graph:  # (the backward_walk exercise swaps in a learner's backward(root, grad, retain_graph))
            autograd.backward(self, gradient, retain_graph, create_graph=True)
        else:
            autograd.backward(self, gradient, retain_graph)

    def detach_(self):
        """Cut this tensor from the graph, in place: it becomes a leaf that does not require grad
        (d2l detaches an RNN's state between batches this way)."""
        if self._base is not None and self._ctx is not None:
            raise RuntimeError("detach_: this tensor is a view of another one in the graph; use x = x.detach()")
        self._ctx, self._requires_grad = None, False
        return self

    def detach(self):
        """The same values (shared memory), cut from the graph."""
        t = Tensor._from_op(self._data, False)
        t._base = self if self._base is None else self._base
        t.detached = True  # (an in-place change of it inside the graph is refused: _update_view_in_graph)
        return t

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def register_hook(self, hook):
        """Call `hook(grad)` when backward has this tensor's gradient (a Tensor); if it returns a
        tensor, that replaces the gradient: what flows on to the inputs, and what .grad keeps. For
        looking at gradients mid-graph (`h.register_hook(print)`), or clipping them on the way.
        Returns a handle: `handle.remove()` takes the hook off. (A step with hooks is not replayed
        by minigrad.compile: it runs eagerly.)"""
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't require gradient")
        hooks = self.__dict__.setdefault("grad_hooks", {})
        key = max(hooks, default=-1) + 1
        hooks[key] = hook
        autograd.HOOKED[id(self)] = self
        return _HookHandle(self, key)

    def retain_grad(self):
        """Keep `.grad` on this intermediate tensor too after backward (leaves keep it always)."""
        self._retains_grad = True
        return self

    # ------------------------------------------------------------------ in-place updates
    # x += y, x.add_(y), x.copy_(src), x[i] = v, ... write into x's own memory, so every view of x
    # sees the change. PyTorch's rules, which keep gradients right:
    #   - a leaf that requires grad (a weight) cannot be changed while gradients are recorded: its
    #     .grad would belong to values it no longer holds. Update weights inside `no_grad()`, as an
    #     optimizer does: `with no_grad(): w -= lr * w.grad` leaves w a leaf that requires grad;
    #   - on a tensor inside the graph (the result of an op), the update is recorded as an op: x's
    #     history becomes "the op applied to x as it was";
    #   - every change counts one version (`_bump`); a backward that needs values saved before the
    #     change refuses to run (autograd._check_versions).
    def _bump(self, by="an in-place update"):
        """Count one in-place change of this tensor's values, and what made it. The count lives on
        the tensor that owns the memory, so a view and its base see each other's changes. Optimizer
        steps, weight init and load_state_dict call this after writing the array."""
        root = self if self._base is None else self._base
        root._version += 1
        root._changed_by = by

    def _update(self, op, compute, *operands):
        """The in-place op `op`: write `compute(self, *operands)`, its out-of-place result, into this
        tensor's memory, following the rules above."""
        if autograd.is_grad_enabled() and (self._requires_grad or any(
                isinstance(o, Tensor) and o._requires_grad for o in operands)):
            if self._ctx is None and self._requires_grad:
                raise RuntimeError(
                    f"{op}: a leaf tensor that requires grad is being used in an in-place operation while "
                    "gradients are recorded (its .grad would belong to values it no longer holds). Update it "
                    "inside `with minigrad.no_grad():`, as an optimizer step does, or change `.data` instead"
                )
            return self._update_in_graph(op, compute, operands)
        self._write(op, compute(self, *operands))
        self._bump(op)
        return self

    def _update_in_graph(self, op, compute, operands):
        """`_update` for a tensor in the graph: the update becomes an op whose input is this tensor as
        it was (`previous`, which takes over its history), and this tensor becomes its output."""
        if self._base is not None:
            return self._update_view_in_graph(op, compute, operands)
        if self._ctx is not None and self._ctx.outputs is not None:
            raise RuntimeError(f"{op}: this tensor is one of several outputs of {self._ctx.name}; it cannot be "
                               "changed in place inside the graph. Use the out-of-place form, or clone() it first")
        new = compute(Clone.apply(self._snapshot()), *operands)  # (what the op saves: a copy the write cannot reach)
        self._write(op, new)
        self._bump(op)
        ctx = new._ctx
        ctx.output_version, ctx.inplace = self._version, op
        self._ctx, self._requires_grad = ctx, True
        return self

    def _snapshot(self):
        """This tensor as it is now, as a node of its own: its values' memory (whose later changes
        count against it: the same version count) and its history, which an in-place op is about to
        give to this tensor anew."""
        t = Tensor._from_op(self._data, self._requires_grad)
        t._ctx, t._base = self._ctx, self if self._base is None else self._base
        return t

    def _update_view_in_graph(self, op, compute, operands):
        """`_update` for a view of another tensor, `base` (x = base.reshape(...), base[0], base.T):
        changing the view changes base, so both get a new history, as in PyTorch:

            base   <- base as it was, with the view's elements replaced by the new values
            view   <- those elements read from the new base

        Which elements of base the view holds is read from the memory they share (`_positions`):
        a flat index into base for each element of the view, so any view (slice, reshape, transpose)
        works the same way. The new base is a SetItem at those indices; each view a GetItem."""
        base = self._base
        positions = _positions(base._data, self._data)
        if positions is None or self.__dict__.get("detached") or self._ctx is not None and self._ctx.outputs:
            raise RuntimeError(
                f"{op}: this tensor shares memory with another one (it was made by detach(), or is one of "
                "several outputs of one op, such as split or unbind), so changing it in place inside the "
                "graph would change the other tensor behind its gradient's back. Use the out-of-place form "
                "(x = x + y), clone() it first, or make the change inside `minigrad.no_grad()` if no "
                "gradient should flow through it")
        if base._ctx is None and base._requires_grad:
            raise RuntimeError(f"{op}: a view of a leaf tensor that requires grad is being used in an in-place "
                               "operation while gradients are recorded; update it inside `minigrad.no_grad()`, "
                               "or change a clone")
        before = base._snapshot()  # base as it was (its history)
        flat, index = (-1,), (positions,)
        new = compute(ops.GetItem.apply(before.reshape(flat), index=index), *operands)  # (a copy: the write
        after = SetItem.apply(before.reshape(flat), new, index=index)  # cannot reach it); base as it is now, flat
        self._write(op, new)
        self._bump(op)
        # base and the view each read `after` through an op of their own (a later change of base
        # gives base a newer history, not the view, which keeps reading this one)
        base._ctx, base._requires_grad = Clone.apply(after.reshape(base.shape))._ctx, True
        self._ctx, self._requires_grad = ops.GetItem.apply(after, index=index)._ctx, True
        for ctx in (base._ctx, self._ctx):
            ctx.output_version, ctx.inplace = base._version, op
        return self

    def _write(self, op, new):
        if new.shape != self.shape:
            raise ValueError(f"{op}: the result has shape {new.shape}, but this tensor has shape {self.shape}; an "
                             "in-place op cannot change a tensor's shape")
        if new.dtype != self.dtype and not (new.dtype.kind in "biu" and self.dtype.kind in "iu"):
            raise TypeError(f"{op}: the result is {new.dtype}, but this tensor is {self.dtype}; an in-place op "
                            f"keeps the tensor's dtype (convert first: x = x.to({str(new.dtype)!r}))")
        if not self._data.flags.writeable:
            raise RuntimeError(f"{op}: this tensor's memory is read-only (an expand() or broadcast_to() view, "
                               "where many elements share one number); clone() it first")
        if _modes.recorder is not None:
            _modes.recorder.record_write(self, new)
        self._data[...] = new._data  # (an integer result is cast to this integer dtype, as PyTorch does)

    def add_(self, other, alpha=1):
        """self += alpha * other"""
        return self._update("add_", lambda x, y: ops.Add.apply(*_operands(x, _scaled(y, alpha), "add_")), other)

    def sub_(self, other, alpha=1):
        """self -= alpha * other"""
        return self._update("sub_", lambda x, y: ops.Sub.apply(*_operands(x, _scaled(y, alpha), "sub_")), other)

    def mul_(self, other):
        return self._update("mul_", lambda x, y: ops.Mul.apply(*_operands(x, y, "mul_")), other)

    def div_(self, other):
        return self._update("div_", lambda x, y: ops.Div.apply(*_operands(x, y, "div_")), other)

    def clamp_(self, min=None, max=None):
        ops.check_clip_bounds("clamp_", min, max)
        return self._update("clamp_", lambda x: x.clip(min, max))

    def copy_(self, src, non_blocking=False):
        """Copy `src`'s values (broadcast to this shape, cast to this dtype) into this tensor."""
        return self._update("copy_", Copy.apply, self._in_my_dtype(src))

    def fill_(self, value):
        return self._update("fill_", Copy.apply, self._in_my_dtype(value))

    def _in_my_dtype(self, value):
        """A Python number (or list of them) written into this tensor, as an array of its dtype: 0.1
        into a float64 tensor is float64's 0.1, not float32's (which the default dtype would give)."""
        if isinstance(value, (numbers.Number, list, tuple)) and not isinstance(value, Tensor):
            try:
                return np.asarray(value, dtype=self._data.dtype)
            except (TypeError, ValueError):
                return value
        return value

    def zero_(self):
        return self._update("zero_", Copy.apply, 0)

    def addcmul_(self, tensor1, tensor2, value=1):
        """self += value * tensor1 * tensor2 (an optimizer's moment: `v.addcmul_(g, g, value=1 - beta2)`)"""
        return self._update("addcmul_", lambda x, a, b: ops.Add.apply(*_operands(x, _scaled(a * b, value), "add_")),
                            tensor1, tensor2)

    def addcdiv_(self, tensor1, tensor2, value=1):
        """self += value * tensor1 / tensor2 (Adam's step: `p.addcdiv_(m, v.sqrt() + eps, value=-lr)`)"""
        return self._update("addcdiv_", lambda x, a, b: ops.Add.apply(*_operands(x, _scaled(a / b, value), "add_")),
                            tensor1, tensor2)

    def lerp_(self, end, weight):
        """self += weight * (end - self): a step of the way to `end` (an exponential moving average)"""
        return self._update("lerp_", lambda x, e: x.lerp(e, weight), end)

    def pow_(self, exponent):
        return self._update("pow_", lambda x: x ** exponent)

    def clip_(self, min=None, max=None):
        """The same as clamp_."""
        return self.clamp_(min, max)

    def assign(self, values):
        """Replace the values in place, with values of the same shape: `p.assign(new)` (copy_ also
        broadcasts, and is differentiable in `src`)."""
        values = np.asarray(values)
        if values.shape != self.shape:
            raise ValueError(f"assign: got shape {values.shape}, expected {self.shape}")
        return self._update("assign", Copy.apply, values)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __setitem__(self, index, value):
        """x[index] = value, in place (value broadcast to the selected shape), with the rules above."""
        index = _index_items(index)
        return self._update("__setitem__", lambda x, v: SetItem.apply(x, v, index=index), self._in_my_dtype(value))

    def masked_fill_(self, mask, value):
        """Write `value` where `mask` (bool, broadcastable to this shape) is True, in place (see masked_fill)."""
        return self._update("masked_fill_", lambda x: x.masked_fill(mask, value))

    def clone(self):
        """A copy of the values in new memory, still in the graph (its gradient flows back to this tensor)."""
        return Clone.apply(self)

    # ------------------------------------------------------------------ dtype and device
    def to(self, *args, dtype=None, device=None, copy=False, non_blocking=False):
        """This tensor in another dtype (a new tensor, in the graph), as PyTorch's `to`: `x.to(dtype)`,
        `x.to(device)`, `x.to("cpu", dtype)`, `x.to(other_tensor)`. The only device is the CPU, so a
        device changes nothing (another one is refused). Returns self if nothing changes (a clone
        with copy=True)."""
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif devices.is_device(arg):
                device = arg
            else:
                dtype = arg
        devices.check_device(device, "to")
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self.clone() if copy else self
        return ops.Cast.apply(self, dtype=np.dtype(dtype))

    device = property(lambda self: devices.CPU, doc="Where the values are: always the CPU.")
    is_cuda = False

    def cpu(self):
        return self

    def cuda(self, device=None):
        devices.check_device("cuda", "cuda")

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def long(self):
        return Tensor(self._data.astype(np.int64))

    def type_as(self, other):
        """This tensor in `other`'s dtype (itself if it already is)."""
        return self.to(other.dtype)

    def type(self, dtype=None):
        """`x.type(dtype)` is `x.to(dtype)` (also with PyTorch's type names: "torch.LongTensor");
        `x.type()` names the dtype as PyTorch does ("minigrad.FloatTensor" for float32, ...)."""
        dtype = getattr(dtype, "dtype", dtype) if callable(dtype) else dtype  # (x.type(minigrad.LongTensor))
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            names = {f"{kind}Tensor": name for name, kind in _TENSOR_TYPE_NAMES.items()}
            dtype = names.get(dtype.rsplit(".", 1)[-1], dtype)
        if dtype is not None:
            return self.to(dtype)
        return f"minigrad.{_TENSOR_TYPE_NAMES.get(self.dtype.name, self.dtype.name.capitalize())}Tensor"

    # ------------------------------------------------------------------ new tensors like this one
    # PyTorch's x.new_zeros(2, 3), ...: new tensors outside the graph, in this tensor's dtype (and
    # device) unless dtype= says otherwise; their shape is given, not taken from x
    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("new_zeros", np.zeros, size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("new_ones", np.ones, size, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of `size`; its values are zeros here (PyTorch leaves them unset: never read them)."""
        return self._new("new_empty", np.zeros, size, dtype, device, requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return self._new("new_full", lambda shape, dtype: np.full(shape, fill_value, dtype=dtype), (size,), dtype,
                         device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor holding a copy of `data`, in this tensor's dtype unless `dtype` is given."""
        devices.check_device(device, "new_tensor")
        return Tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)

    def _new(self, op, make, size, dtype, device, requires_grad):
        devices.check_device(device, op)
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], numbers.Integral) else tuple(size)
        if any(not isinstance(n, numbers.Integral) or n < 0 for n in shape):
            raise ValueError(f"{op}: a shape is integers >= 0, got {shape}")
        return Tensor(make(shape, dtype=self.dtype if dtype is None else dtype), requires_grad=requires_grad)

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
    add, sub, mul, pow, neg = __add__, __sub__, __mul__, __pow__, __neg__
    multiply, subtract = __mul__, __sub__
    floor_divide, remainder = __floordiv__, __mod__

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode "floor" rounds the quotient down (self // other), "trunc"
        towards zero, as PyTorch's (integers then stay integers; the gradient of a rounded quotient
        is 0)."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode != "trunc":
            raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
        floor = self // other
        remainder = self - floor * other  # (has the divisor's sign): trunc is one more where the signs differ
        return floor + ((remainder != 0) & ((self < 0) != (as_number_tensor(other) < 0))).to(floor.dtype)

    true_divide = divide = __truediv__

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
        ops.same_float_dtype("matmul", [("self", a), ("other", b)])  # (refused, as in PyTorch: see there)
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

    def mm(self, mat2):
        """The product of two matrices (exactly 2-D each: no broadcasting, unlike matmul)."""
        return self._product("mm", mat2, 2, "2-D (matrices)")

    def bmm(self, mat2):
        """The products of two batches of matrices, (b, n, m) @ (b, m, p) -> (b, n, p): exactly 3-D
        each, with the same b (no broadcasting, unlike matmul)."""
        return self._product("bmm", mat2, 3, "3-D (batches of matrices)")

    def _product(self, op, other, ndim, what):
        a, b = _operands(self, other, "matmul")
        if a.ndim != ndim or b.ndim != ndim:
            raise ValueError(f"{op}: expected two {what} tensors, got shapes {a.shape} and {b.shape}")
        if ndim == 3 and a.shape[0] != b.shape[0]:
            raise ValueError(f"{op}: the batch sizes differ: {a.shape} and {b.shape} ({a.shape[0]} != {b.shape[0]})")
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"{op}: inner dimensions differ: {a.shape} @ {b.shape} ({a.shape[-1]} != {b.shape[-2]})")
        ops.same_float_dtype(op, [("self", a), ("mat2", b)])
        return a.matmul(b)

    def mv(self, vec):
        """A matrix (n, m) times a vector (m,): (n,) (exactly 2-D and 1-D: no broadcasting)."""
        a, b = _operands(self, vec, "matmul")
        if a.ndim != 2 or b.ndim != 1 or a.shape[1] != b.shape[0]:
            raise ValueError(f"mv: expected a matrix (n, m) and a vector (m,), got shapes {a.shape} and {b.shape}")
        ops.same_float_dtype("mv", [("self", a), ("vec", b)])
        return a.matmul(b)

    def dot(self, other):
        """The dot product of two 1-D tensors of the same length and dtype: sum(x * y), a 0-D tensor."""
        a, b = _operands(self, other, "matmul")
        if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
            raise ValueError(f"dot: expected two 1-D tensors of the same length, got shapes {a.shape} and {b.shape}")
        if a.dtype != b.dtype:
            raise TypeError(f"dot: expected both tensors to have the same dtype, got {a.dtype} and {b.dtype} (as "
                            "PyTorch); convert one with .to(other.dtype)")
        return a.matmul(b)

    def outer(self, vec2):
        """The outer product of two 1-D tensors: out[i, j] = x[i] * y[j]."""
        if self.ndim != 1 or getattr(vec2, "ndim", None) != 1:
            raise ValueError(f"outer: expected two 1-D tensors, got shapes {self.shape} and "
                             f"{getattr(vec2, 'shape', type(vec2).__name__)}")
        return self.reshape(-1, 1) * vec2.reshape(1, -1)

    def where(self, condition, other):
        """This tensor where `condition` is True, `other` elsewhere: `torch.where(condition, self, other)`."""
        from .creation import where  # (creation.py imports this module)

        return where(condition, self, other)

    def lerp(self, end, weight):
        """self + weight * (end - self): weight 0 gives self, 1 gives end (weight a number or a tensor)."""
        return self + weight * (end - self)

    def addcmul(self, tensor1, tensor2, value=1):
        """self + value * tensor1 * tensor2."""
        return self + _scaled(tensor1 * tensor2, value)

    def addcdiv(self, tensor1, tensor2, value=1):
        """self + value * tensor1 / tensor2."""
        return self + _scaled(tensor1 / tensor2, value)

    def maximum(self, other):
        return ops.Maximum.apply(*_operands(self, other, "maximum"))

    def minimum(self, other):
        return ops.Minimum.apply(*_operands(self, other, "minimum"))

    def clip(self, min=None, max=None):
        if isinstance(min, Tensor) or isinstance(max, Tensor):  # bounds per element: gradients to them too
            ops.check_clip_bounds("clip (clamp)", min, max)
            x = self if min is None else self.clamp_min(min)
            return x if max is None else x.clamp_max(max)
        return ops.Clip.apply(_meeting_number(_meeting_number(self, min), max), low=min, high=max)

    clamp = clip

    # ------------------------------------------------------------------ indexing (other shape methods: tensor_shape.py)
    def __getitem__(self, index):
        return ops.GetItem.apply(self, index=_index_items(index))

    # comparisons give bool tensors, outside the graph (they have no gradient)
    def _compare(self, other, fn):
        a, b = _operands(self, other, fn.__name__)
        return Tensor._from_op(fn(a._data, b._data), False)

    __lt__ = lambda self, other: self._compare(other, np.less)  # noqa: E731
    __le__ = lambda self, other: self._compare(other, np.less_equal)  # noqa: E731
    __gt__ = lambda self, other: self._compare(other, np.greater)  # noqa: E731
    __ge__ = lambda self, other: self._compare(other, np.greater_equal)  # noqa: E731
    __eq__ = lambda self, other: self._compare(other, np.equal)  # noqa: E731
    __ne__ = lambda self, other: self._compare(other, np.not_equal)  # noqa: E731
    lt, le, gt, ge, eq, ne = __lt__, __le__, __gt__, __ge__, __eq__, __ne__  # PyTorch's names: x.gt(0) is x > 0

    def __invert__(self):
        if self.dtype != np.bool_:
            raise TypeError(f"~ (logical not) needs a bool tensor, got {self.dtype}")
        return Tensor._from_op(~self._data, False)

    def __and__(self, other):
        return Tensor._from_op(self._data & np.asarray(other), False)

    def __or__(self, other):
        return Tensor._from_op(self._data | np.asarray(other), False)

    # any() and all() are in tensor_math.py


def _positions(base, view):
    """The flat index into `base` (a C-contiguous array) of each element of `view` (an array over the
    same memory), shaped like view; None if that cannot be read from their memory."""
    if not base.flags.c_contiguous or base.dtype != view.dtype or any(s % base.itemsize for s in view.strides):
        return None
    start, step = view.__array_interface__["data"][0] - base.__array_interface__["data"][0], base.itemsize
    if start % step:
        return None
    positions = np.full(view.shape, start // step, dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
        positions += (np.arange(n, dtype=np.int64) * (stride // step)).reshape((n,) + (1,) * (view.ndim - axis - 1))
    if positions.size and (positions.min() < 0 or positions.max() >= base.size):
        return None
    return positions


def as_number_tensor(x):
    """x as a Tensor, for comparisons (a number or an array too)."""
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


def _write_out(op, out, result):
    """PyTorch's `out=` argument: the result written into `out`, which takes its shape if they differ
    (as PyTorch resizes it) and keeps its dtype. Outside the graph only, as in PyTorch."""
    if autograd.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad")
    if out.shape == result.shape:
        out._data[...] = result._data
    else:
        out._data = result._data.astype(out.dtype)
    out._bump(f"{op}(out=)")
    return out


def _zero_grads(params, set_to_none=True):
    """zero_grad of optimizers and modules: `p.grad = None` for each parameter (without the property's
    call), or with set_to_none=False zeros written into each gradient there is."""
    for p in params:
        if set_to_none or p._grad is None:
            p._grad = None
        else:
            p._grad._data[...] = 0


def _in_place(name):
    def method(self):
        return self._update(name + "_", getattr(Tensor, name))

    method.__name__ = name + "_"
    method.__doc__ = f"x.{name}_(): x = x.{name}(), written into x's memory (the rules of in-place updates)."
    return method


# x.relu_(), x.exp_(), ...: the elementwise ops in place, each `_update` with its out-of-place op
for _name in ("relu sigmoid tanh exp log sqrt rsqrt abs neg sign floor ceil round square reciprocal sin cos log1p "
              "expm1 erf").split():
    setattr(Tensor, _name + "_", _in_place(_name))
del _name


class _HookHandle:
    """What register_hook returns: remove() takes the hook off (also on leaving a `with` block)."""

    def __init__(self, tensor, key):
        self.tensor, self.key = weakref.ref(tensor), key

    def remove(self):
        tensor = self.tensor()
        if tensor is not None:
            hooks = tensor.__dict__.get("grad_hooks", {})
            hooks.pop(self.key, None)
            if not hooks:
                autograd.HOOKED.pop(id(tensor), None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class GradFn(str):
    """`t.grad_fn`: the op that made t. It equals the op's name ("Mul"), and answers PyTorch's
    questions about the graph: `name()`, and `next_functions`, one (node, 0) per input of the op:
    the GradFn of the op that made that input, an AccumulateGrad for a leaf that requires grad
    (where backward leaves .grad), or None."""

    def __new__(cls, ctx):
        node = super().__new__(cls, ctx.fn.__name__)
        node.ctx = ctx
        return node

    def name(self):
        return f"{str(self)}Backward0"

    @property
    def next_functions(self):
        inputs = self.ctx.inputs or ()  # (() once backward has freed the graph)
        return tuple((GradFn(t._ctx) if t._ctx is not None else AccumulateGrad(t) if t._requires_grad else None, 0)
                     for t in inputs)

    def __repr__(self):
        return f"<{self.name()}>"


class AccumulateGrad:
    """The end of the graph at a leaf that requires grad: `.variable` is the leaf."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"


class ElementCount(int):
    """`x.size`: the number of elements, an int as in numpy; calling it gives PyTorch's `x.size()`,
    the shape, or `x.size(d)`, the length along dim d."""

    def __new__(cls, n, shape):
        size = super().__new__(cls, n)
        size.shape = shape
        return size

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[ops._axis(dim, len(self.shape), "size", self.shape)]


class Size(tuple):
    """A shape, as `torch.Size`: a tuple of ints, `minigrad.Size([2, 3]) == (2, 3)`, with `numel()`.
    `x.shape` and `x.size()` are plain tuples, equal to it: `x.shape == minigrad.Size([2, 3])`."""

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for n in sizes:
            if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
                raise TypeError(f"Size: expected a sequence of ints >= 0, got {sizes!r}")
        return super().__new__(cls, (int(n) for n in sizes))

    def numel(self):
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __repr__(self):
        return f"minigrad.Size({list(self)})"


# ---------------------------------------------------------------------- operands of binary ops
def _operands(a, b, op):
    """Make both operands Tensors of one dtype.

    A Python number or an integer/bool tensor takes the float operand's dtype. Two float tensors
    of different precision both become their result_type (float64), as in PyTorch, except in
    place (op "add_", ...), where the other operand takes this tensor's dtype. The rule and its
    reasons: ops.same_float_dtype."""
    a_is, b_is = isinstance(a, Tensor), isinstance(b, Tensor)
    if a_is and b_is:
        da, db = a._data.dtype, b._data.dtype
        if da == db:
            return a, b
    a = a if a_is else _constant_like(a, b)
    b = b if b_is else _constant_like(b, a)
    da, db = a._data.dtype, b._data.dtype
    if da != db:
        fa, fb = da.kind == "f", db.kind == "f"
        if fa and fb:
            if op == "matmul":
                return a, b  # refused there, as PyTorch's matmul does (ops.same_float_dtype)
            return (a, b.to(da)) if op.endswith("_") else tuple(_promoted([a, b]))
        if fa:
            b = Tensor._from_op(b._data.astype(da), False)
        elif fb:
            a = Tensor._from_op(a._data.astype(db), False)
    return a, b


def _promoted(tensors):
    """Float tensors of different precision, each cast (in the graph) to their numpy result_type:
    the op then sees one dtype, and each cast's backward gives its input a gradient in its own
    dtype. Other tensors are left as they are."""
    floats = [t.dtype for t in tensors if t.dtype.kind == "f"]
    wide = np.result_type(*floats) if floats else None
    return [t.to(wide) if t.dtype.kind == "f" else t for t in tensors]


def _meeting_number(x, number):
    """Tensor x, about to meet a Python number in an op (an exponent, a clip bound): an integer
    tensor meeting a float becomes the default float dtype, as in `_operands` (x ** 0.5 as x * 0.5)."""
    if number is None or isinstance(number, numbers.Integral) or x._data.dtype.kind in "fc":
        return x
    return x.to(_default_float)


def _constant_like(x, other):
    """A Python number meeting a tensor takes the tensor's dtype when it fits in its kind (PyTorch's
    rule): a float meeting a float tensor, an int meeting an integer tensor (`counts += 1` keeps an
    int32 tensor int32)."""
    if isinstance(x, (numbers.Number, np.generic)) and isinstance(other, Tensor):
        kind = other._data.dtype.kind
        if kind == "f" or (kind in "iu" and isinstance(x, (numbers.Integral, np.integer)) and not isinstance(
                x, (bool, np.bool_)) and np.can_cast(np.min_scalar_type(x), other._data.dtype)):
            return Tensor._from_op(np.asarray(x, dtype=other._data.dtype), False)
    return Tensor(x)


def _scaled(x, alpha):
    """alpha * x for add_ and sub_ (x itself if alpha is 1)."""
    if alpha == 1:
        return x
    return (x if isinstance(x, (Tensor, np.ndarray, numbers.Number)) else Tensor(x)) * alpha


# ---------------------------------------------------------------------- ops of the in-place updates
class Clone(autograd.Function):
    """x.clone(): the same values in new memory."""

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    rule = "the values are unchanged, so is their gradient: da = g"

    @staticmethod
    def backward(ctx, g):
        return g

    @staticmethod
    def gradient(ctx, g):  # the rule in tensor ops, for create_graph=True (gradients of gradients)
        return g


class Copy(autograd.Function):
    """copy_, fill_, zero_, assign: a tensor shaped and typed like `dst`, holding `src` (broadcast)."""

    @staticmethod
    def forward(ctx, dst, src):
        out = np.empty_like(dst)
        try:
            out[...] = src
        except ValueError:
            raise ValueError(f"copy_: a source of shape {src.shape} does not broadcast to the tensor's shape "
                             f"{dst.shape}") from None
        return out

    rule = "dst's old values are overwritten: d dst = 0; each element is a copy of src: d src = g"

    @staticmethod
    def backward(ctx, g):
        return None, g  # (the walk sums g over the copies of a broadcast src)


class SetItem(autograd.Function):
    """x[index] = v: x's values, with v (broadcast) at `index`."""

    @staticmethod
    def forward(ctx, a, v, index):
        out = a.copy()
        try:
            out[index] = v
        except ValueError:
            raise ValueError(f"__setitem__: a value of shape {v.shape} does not broadcast to the selected shape "
                             f"{a[index].shape} (tensor of shape {a.shape})") from None
        ctx.index = index
        return out

    rule = "the elements at index are overwritten: da = g with 0 at index; each v lands at index: dv = g[index]"

    @staticmethod
    def backward(ctx, g):
        da = None
        if ctx.needs_input_grad[0]:
            da = g.copy()
            da[ctx.index] = 0
        return da, (g[ctx.index] if ctx.needs_input_grad[1] else None)


# ---------------------------------------------------------------------- indexing
def _index_items(index):
    """An index for `x[index]` as the tuple of numpy index items that GetItem takes: tensors
    become their arrays, lists become index arrays."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(x._data if isinstance(x, Tensor) else x for x in items)
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
