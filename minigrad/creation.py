"""The functions that make tensors, as in PyTorch: from data (`tensor`, `as_tensor`), from a shape
(`zeros`, `ones`, `full`, `empty`, `eye`, `arange`, `linspace`), at random (`randn`, `rand`,
`randint`, `randperm`, `multinomial`, each with `generator=`), like another tensor (`zeros_like`,
`ones_like`, `full_like`, `empty_like`, `rand_like`, `randn_like`, `randint_like`), from a numpy
array without a copy (`from_numpy`), and from other tensors (`matmul`, `einsum`, `cat`, `stack`,
`hstack`, `vstack`, `meshgrid`, `where`, `repeat_interleave`, `dropout`, `embedding`, `var_mean`,
`std_mean`); and the limits of each dtype (`finfo`, `iinfo`).

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
from .random import rng
from .tensor import Tensor, _operands, _promoted, _write_out, default_float
from .tensor_math import _correction, _dim_and_keepdim, _pytorch_names


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
def matmul(input, other, *, out=None):
    """Matrix product `input @ other`, with numpy's rules (see `Tensor.matmul`); out=: written into `out`."""
    a, b = _operands(input, other, "matmul")
    return a.matmul(b) if out is None else _write_out("matmul", out, a.matmul(b))


def cat(tensors, axis=None, *, dim=None, out=None):
    """Join tensors along an existing axis (axis= or dim=, 0 by default)."""
    if dim is not None:
        axis = _pytorch_names("cat", axis, False, dim, None)[0]
    tensors = _promoted([as_tensor(t) for t in tensors])  # (float32 with float64: float64, as in PyTorch)
    if not tensors:
        raise ValueError("cat: needs at least one tensor")
    result = ops.Cat.apply(*tensors, axis=_axis(axis or 0, tensors[0].ndim, "cat", tensors[0].shape))
    return result if out is None else _write_out("cat", out, result)


def stack(tensors, axis=None, *, dim=None):
    """Join equal-shaped tensors along a new axis (axis= or dim=, 0 by default)."""
    if dim is not None:
        axis = _pytorch_names("stack", axis, False, dim, None)[0]
    tensors = _promoted([as_tensor(t) for t in tensors])  # (float32 with float64: float64, as in PyTorch)
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    return ops.Stack.apply(*tensors, axis=_axis(axis or 0, tensors[0].ndim + 1, "stack", tensors[0].shape))


def var_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, ddof=None, axis=None,
             keepdims=None):
    """The pair (variance, mean) over `dim`, as `torch.var_mean`: the variance divides by n - 1 by
    default (see `Tensor.var` for unbiased=, correction= and ddof=). Both are in the graph."""
    return _spread_and_mean("var_mean", "var", input, dim, unbiased, keepdim, correction, ddof, axis, keepdims)


def std_mean(input, dim=None, unbiased=None, keepdim=None, *, correction=None, ddof=None, axis=None,
             keepdims=None):
    """The pair (standard deviation, mean) over `dim`, as `torch.std_mean` (see `var_mean`)."""
    return _spread_and_mean("std_mean", "std", input, dim, unbiased, keepdim, correction, ddof, axis, keepdims)


def _spread_and_mean(op, spread, x, dim, unbiased, keepdim, correction, ddof, axis, keepdims):
    x = as_tensor(x)
    dim, keepdim = _dim_and_keepdim(op, dim, unbiased, keepdim, axis, keepdims)
    if isinstance(dim, bool):  # var_mean(x, False): PyTorch's (input, unbiased) overload
        dim, unbiased = None, dim
    _correction(op, unbiased, correction, ddof)  # (checked here, to name this function in the error)
    value = getattr(x, spread)(dim, unbiased, keepdim, correction=correction, ddof=ddof)
    return value, x.mean(axis=dim, keepdims=keepdim)


def where(condition, a=None, b=None):
    """Elementwise `a` where `condition` is True, else `b` (all three broadcast). With the condition
    alone, the positions where it is True, one 1-D tensor per dim (`nonzero(as_tuple=True)`)."""
    if a is None and b is None:
        return as_tensor(condition).nonzero(as_tuple=True)
    if a is None or b is None:
        raise TypeError("where: expected where(condition, input, other), or where(condition) alone")
    condition = np.asarray(condition, dtype=bool)
    a, b = _operands(a, b, "where")
    return ops.Where.apply(a, b, condition=condition)


def hstack(tensors):
    """Join tensors side by side: along dim 0 if they are 1-D (0-D ones count as 1-D), else along dim 1."""
    tensors = [t.reshape(1) if t.ndim == 0 else t for t in (as_tensor(t) for t in tensors)]
    return cat(tensors, dim=0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """Join tensors one above the other, along dim 0; 1-D ones (n,) count as rows (1, n), 0-D ones as (1, 1)."""
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in (as_tensor(t) for t in tensors)], dim=0)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors (0-D ones count as 1-D) of sizes n1, n2, ...: one tensor per
    input, each of shape (n1, n2, ...), holding input i's values along dim i and copies along the
    others. indexing="xy" swaps the first two dims, (n2, n1, ...), as numpy's default and plotting
    code expect. (PyTorch's default is "ij" too, with a warning to pass it.) The grids are expanded
    views: the gradient of each adds up its copies."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = [as_tensor(t) for t in tensors]
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors:
        raise ValueError("meshgrid: expects at least one tensor")
    for t in tensors:
        if t.ndim > 1:
            raise ValueError(f"meshgrid: expects 0-D or 1-D tensors, got shapes {[t.shape for t in tensors]}")
    if len({t.dtype for t in tensors}) > 1:
        raise TypeError(f"meshgrid: expects tensors of one dtype, got {[str(t.dtype) for t in tensors]}")
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for t, axis in zip(tensors, axes):
        shape[axis] = t.numel()
    grids = []
    for t, axis in zip(tensors, axes):
        along = [1] * len(shape)
        along[axis] = shape[axis]
        grids.append(t.reshape(along).expand(shape))
    return tuple(grids)


def einsum(equation, *operands):
    """Einstein summation, as `torch.einsum`: `einsum("ij,jk->ik", a, b)` is a @ b; a letter in the
    inputs but not after "->" is summed over. The operands may also come as one list. Without
    "->", the output is every letter that appears once, in alphabetical order. "..." stands for the
    dims no letter names, broadcast as numpy's ("...chw,c->...hw"). Differentiable in every operand.
    Not supported: a letter twice in one operand (diagonals and traces: use diag or a mask)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = [as_tensor(x) for x in operands]
    inputs, output = ops.parse_einsum(equation, [x.shape for x in operands])
    ops.same_float_dtype("einsum", [(f"operand {i}", x) for i, x in enumerate(operands)])
    floats = [x.dtype for x in operands if x.dtype.kind == "f"]
    if floats:  # integer operands meeting a float one take its dtype (numpy would make float64)
        operands = [x if x.dtype.kind == "f" else x.to(floats[0]) for x in operands]
    return ops.Einsum.apply(*operands, inputs=inputs, output=output)


def dropout(x, p=0.5, training=True, *, generator=None):
    """Inverted dropout; the identity when not training or p == 0. The mask is drawn from
    `generator` (a `minigrad.Generator`) or the default one."""
    if not training or p == 0.0:
        return x
    return ops.Dropout.apply(x, p=p, generator=generator)


def embedding(ids, weight, padding_idx=None):
    """Rows of `weight` (num_embeddings, dim) for integer `ids` of any shape: (*ids.shape, dim).
    `padding_idx` (negative: counted from the end): that row gets no gradient."""
    ids = np.asarray(ids)
    if padding_idx is None:
        return ops.Embedding.apply(weight, ids=ids)
    n = weight.shape[0]
    if not isinstance(padding_idx, numbers.Integral) or not -n <= padding_idx < n:
        raise ValueError(f"embedding: padding_idx must be an integer in [-{n}, {n}) for a table of {n} rows, "
                         f"got {padding_idx!r}")
    return ops.Embedding.apply(weight, ids=ids, padding_idx=int(padding_idx) % n)


# ---------------------------------------------------------------------- creation
def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new Tensor holding a copy of `data` (Python floats become the default float dtype, float32)."""
    check_device(device, "tensor")
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else tuple(shape)


def zeros(*shape, size=None, dtype=None, requires_grad=False, device=None, out=None):
    check_device(device, "zeros")
    result = Tensor(np.zeros(_size("zeros", shape, size), dtype=dtype or default_float()), requires_grad=requires_grad)
    return result if out is None else _write_out("zeros", out, result)


def ones(*shape, size=None, dtype=None, requires_grad=False, device=None, out=None):
    check_device(device, "ones")
    result = Tensor(np.ones(_size("ones", shape, size), dtype=dtype or default_float()), requires_grad=requires_grad)
    return result if out is None else _write_out("ones", out, result)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of shape `size` filled with `fill_value`, of its kind unless `dtype` is given, as PyTorch:
    a float gives the default float dtype, an int int64, a bool bool."""
    check_device(device, "full")
    if dtype is None:
        dtype = np.bool_ if isinstance(fill_value, (bool, np.bool_)) else np.int64 if isinstance(
            fill_value, numbers.Integral) else default_float() if isinstance(fill_value, numbers.Real) else None
    return Tensor(np.full(_shape((size,)), fill_value, dtype=dtype), requires_grad=requires_grad)


def empty(*shape, size=None, dtype=None, requires_grad=False, device=None):
    """A new tensor of `shape`. PyTorch leaves its values unset (whatever was in memory), for code that
    writes every element before reading any; minigrad fills it with zeros, but never count on that."""
    check_device(device, "empty")
    return Tensor(np.zeros(_size("empty", shape, size), dtype=dtype or default_float()), requires_grad=requires_grad)


def empty_like(input, dtype=None, requires_grad=False, device=None):
    """A new tensor of input's shape (and dtype, unless given); zeros here, unset values in PyTorch (see empty)."""
    check_device(device, "empty_like")
    return Tensor(np.zeros_like(np.asarray(input), dtype=dtype), requires_grad=requires_grad)


def zeros_like(input, dtype=None, requires_grad=False, device=None):
    check_device(device, "zeros_like")
    return Tensor(np.zeros_like(np.asarray(input), dtype=dtype), requires_grad=requires_grad)


def ones_like(input, dtype=None, requires_grad=False, device=None):
    check_device(device, "ones_like")
    return Tensor(np.ones_like(np.asarray(input), dtype=dtype), requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of input's shape (and dtype, unless given) filled with `fill_value`."""
    check_device(device, "full_like")
    return Tensor(np.full_like(np.asarray(input), fill_value, dtype=dtype), requires_grad=requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    """The (n, m) identity matrix (m = n by default): ones on the diagonal, zeros elsewhere."""
    check_device(device, "eye")
    for name, value in (("n", n), ("m", m)):
        if value is not None and (not isinstance(value, numbers.Integral) or value < 0):
            raise ValueError(f"eye: {name} must be an integer >= 0, got {value!r}")
    return Tensor(np.eye(n, m, dtype=dtype or default_float()), requires_grad=requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    """`steps` evenly spaced values from start to end, both included (PyTorch's: steps is required)."""
    check_device(device, "linspace")
    if not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"linspace: steps must be an integer >= 0, got {steps!r}")
    return Tensor(np.linspace(start, end, steps).astype(dtype or default_float()), requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, device=None):
    """`steps` values from base^start to base^end, evenly spaced in the exponent (both included)."""
    check_device(device, "logspace")
    if not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"logspace: steps must be an integer >= 0, got {steps!r}")
    return Tensor(np.logspace(start, end, steps, base=base).astype(dtype or default_float()),
                  requires_grad=requires_grad)


def arange(start=None, stop=None, step=1, dtype=None, requires_grad=False, device=None, *, end=None):
    """Like numpy's arange; integer arguments give int64, floats the default float dtype (float32).
    PyTorch's keywords too: arange(start=0, end=10, step=2), arange(end=5)."""
    check_device(device, "arange")
    if end is not None:
        if stop is not None:
            raise TypeError("arange: got both stop and end, which are the same argument; pass one")
        start, stop = (0 if start is None else start), end
    if start is None:
        raise TypeError("arange: missing the end of the range: arange(end), arange(start, end) or arange(end=...)")
    values = np.arange(start, stop, step) if stop is not None else np.arange(0, start, step)
    return Tensor(values if dtype or values.dtype.kind != "f" else values.astype(default_float()),
                  dtype=dtype, requires_grad=requires_grad)


def randn(*shape, size=None, generator=None, dtype=None, requires_grad=False, device=None):
    """Standard normal samples, drawn from `generator` (a `minigrad.Generator`) or the default one
    (see `manual_seed`). One seed gives the same numbers on every backend and thread count, but not
    PyTorch's numbers: the bit generator is numpy's PCG64, not PyTorch's Mersenne Twister."""
    check_device(device, "randn")
    values = rng(generator).standard_normal(_size("randn", shape, size))
    return Tensor(values.astype(dtype or default_float()), requires_grad=requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False, device=None):
    """Normal samples mean + std * z, z ~ N(0, 1), as PyTorch's `torch.normal`: `normal(0, 1, (3, 4))`
    with numbers and a `size`, or with tensors `mean` and/or `std` (one sample per element, their
    shapes broadcast). Drawn from `generator` or the default one (see randn); no gradient flows to
    mean or std (the result is a new leaf)."""
    check_device(device, "normal")
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors and size is None:
        raise TypeError("normal: with a number mean and std, give the size too: normal(0.0, 1.0, (3, 4))")
    if tensors and size is not None:
        raise TypeError("normal: size is only for a number mean and std; with tensors, their shape is the size")
    m, s = (x.numpy() if isinstance(x, Tensor) else x for x in (mean, std))
    if np.any(np.asarray(s) < 0):
        raise ValueError(f"normal: std must be >= 0, got {std if not isinstance(std, Tensor) else 'a negative entry'}")
    shape = _size("normal", (), size) if size is not None else np.broadcast_shapes(*(np.shape(x) for x in (m, s)))
    dtype = dtype or (np.result_type(*(t.dtype for t in tensors)) if tensors else default_float())
    values = m + s * rng(generator).standard_normal(shape)
    return Tensor(np.asarray(values).astype(dtype), requires_grad=requires_grad)


def rand(*shape, size=None, generator=None, dtype=None, requires_grad=False, device=None):
    """Uniform samples in [0, 1), from `generator` or the default one (see `randn`)."""
    check_device(device, "rand")
    values = rng(generator).random(_size("rand", shape, size))
    return Tensor(values.astype(dtype or default_float()), requires_grad=requires_grad)


def rand_like(input, *, dtype=None, requires_grad=False, device=None, generator=None):
    """Uniform samples in [0, 1) of input's shape and (float) dtype, unless `dtype` is given (see rand)."""
    dtype = _float_dtype("rand_like", input, dtype)
    return rand(*input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad, device=device)


def randn_like(input, *, dtype=None, requires_grad=False, device=None, generator=None):
    """Standard normal samples of input's shape and (float) dtype, unless `dtype` is given (see randn)."""
    dtype = _float_dtype("randn_like", input, dtype)
    return randn(*input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad, device=device)


def randint_like(input, low=None, high=None, *, dtype=None, requires_grad=False, device=None, generator=None):
    """Integers drawn from low, ..., high - 1, of input's shape and dtype (a float input gives floats
    holding integers, as in PyTorch) unless `dtype` is given: `randint_like(x, 10)` or
    `randint_like(x, 2, 10)`, as randint."""
    if low is None and high is None:
        raise TypeError("randint_like: missing high; write randint_like(input, high) or randint_like(input, low, high)")
    if high is None:
        low, high = 0, low
    low = 0 if low is None else low
    return randint(low, high, tuple(input.shape), generator=generator,
                   dtype=input.dtype if dtype is None else dtype, requires_grad=requires_grad, device=device)


def _float_dtype(op, input, dtype):
    dtype = np.dtype(input.dtype if dtype is None else dtype)
    if dtype.kind != "f":
        raise TypeError(f"{op}: random floats need a float dtype, got {dtype} (give dtype=, e.g. minigrad.float32)")
    return dtype


def randint(*args, low=None, high=None, size=None, generator=None, dtype=np.int64, requires_grad=False,
            device=None):
    """Integers drawn uniformly from low, ..., high - 1, as `torch.randint`: `randint(high, size)` or
    `randint(low, high, size)` (low is 0 by default), int64 unless `dtype` says otherwise; from
    `generator` or the default one (see `randn`)."""
    check_device(device, "randint")
    given = [low, high, size]
    if len(args) > 3:
        raise TypeError(f"randint: expected (high, size) or (low, high, size), got {len(args)} arguments")
    names = {1: ["high"], 2: ["high", "size"], 3: ["low", "high", "size"]}.get(len(args), [])
    if len(args) == 1 and size is None and high is not None:  # randint(low, high=..., size=...)
        names = ["low"]
    if len(args) == 2 and size is not None:  # randint(low, high, size=...)
        names = ["low", "high"]
    for name, value in zip(names, args):
        slot = ["low", "high", "size"].index(name)
        if given[slot] is not None:
            raise TypeError(f"randint: got {name} twice, by position and by name")
        given[slot] = value
    low, high, size = given
    low = 0 if low is None else low
    if high is None or size is None:
        raise TypeError("randint: missing high or size; write randint(high, size) or randint(low, high, size)")
    if not isinstance(low, numbers.Integral) or not isinstance(high, numbers.Integral):
        raise TypeError(f"randint: low and high must be integers, got {low!r} and {high!r}")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be larger than low ({low}): the values are low, ..., high - 1")
    values = rng(generator).integers(low, high, _size("randint", (size,), None), dtype=np.int64)
    return Tensor(values.astype(dtype or default_float()), requires_grad=requires_grad)


def randperm(n, *, generator=None, dtype=np.int64, requires_grad=False, device=None):
    """0, 1, ..., n - 1 in a random order (int64), from `generator` or the default one (see `randn`)."""
    check_device(device, "randperm")
    if not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"randperm: n must be an integer >= 0, got {n!r}")
    return Tensor(rng(generator).permutation(int(n)).astype(dtype), requires_grad=requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices of categories drawn with probabilities proportional to the weights in `input`, as
    `torch.multinomial`: (num_samples,) int64 for weights (n,), (rows, num_samples) for (rows, n),
    one row at a time. Weights need not add up to 1, but must be >= 0 with a positive sum. Without
    replacement no category is drawn twice in a row: each draw is among those not drawn yet, with
    their weights (at most n samples; once the categories of positive weight are used up, those of
    weight 0 follow, as in PyTorch). From `generator` or the default one (see `randn`)."""
    weights = as_tensor(input).numpy()
    if weights.ndim not in (1, 2):
        raise ValueError(f"multinomial: the weights must be 1-D or 2-D (rows of categories), got shape {weights.shape}")
    if weights.dtype.kind != "f":
        raise TypeError(f"multinomial: the weights must be a float tensor, got {weights.dtype}; convert them with "
                        ".float()")
    if not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be a positive integer, got {num_samples!r}")
    rows = weights.reshape(-1, weights.shape[-1]).astype(np.float64)
    n = rows.shape[1]
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ValueError(f"multinomial: the weights (shape {weights.shape}) contain a negative number, inf or NaN; "
                         "expected weights >= 0")
    positive = (rows > 0).sum(axis=1)
    if np.any(positive == 0):
        raise ValueError(f"multinomial: row {int(np.argmax(positive == 0))} of the weights (shape {weights.shape}) "
                         "adds up to 0; expected a positive sum")
    if not replacement and num_samples > n:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from {n} categories "
                         "(pass replacement=True, or fewer samples)")
    draw = rng(generator)
    if replacement:  # inverse of the cumulative weights at uniform points
        cumulative = np.cumsum(rows, axis=1)
        points = draw.random((rows.shape[0], num_samples)) * cumulative[:, -1:]
        # the category of point u: how many cumulative weights are <= u (a weight of 0 adds no room)
        if len(rows) == 1:
            samples = np.searchsorted(cumulative[0], points[0], side="right")[None]
        else:
            samples = (cumulative[:, None, :] <= points[:, :, None]).sum(axis=2)
        last = n - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)  # (rounding at the very top: the last positive one)
        samples = np.minimum(samples, last[:, None])
    else:  # exponential race: category i finishes at E_i / w_i; the first num_samples to finish, in order
        # (a weight of 0 never finishes: those come last, in their order)
        with np.errstate(divide="ignore"):
            finish = draw.standard_exponential(rows.shape) / rows
        samples = np.argsort(finish, axis=1, kind="stable")[:, :num_samples]
    return Tensor(samples.astype(np.int64).reshape(weights.shape[:-1] + (num_samples,)))


def _size(op, shape, size):
    """The shape of a random tensor, given as numbers (2, 3), as a tuple ((2, 3)) or as size=."""
    if size is not None:
        if shape:
            raise TypeError(f"{op}: got a shape both by position and as size=; pass one")
        shape = (size,)
    shape = _shape(shape) if shape else ()
    if any(not isinstance(n, numbers.Integral) or n < 0 for n in shape):
        raise ValueError(f"{op}: a shape is integers >= 0, got {shape}")
    return tuple(int(n) for n in shape)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """`input.repeat_interleave(repeats, dim)` (see Tensor.repeat_interleave). With the counts alone,
    `repeat_interleave(counts)`: each position i repeated counts[i] times, [2, 1] -> [0, 0, 1]."""
    if repeats is None:
        counts = as_tensor(input)
        return arange(counts.numel()).repeat_interleave(counts, output_size=output_size)
    return as_tensor(input).repeat_interleave(repeats, dim, output_size=output_size)


def is_tensor(obj):
    """Whether `obj` is a minigrad Tensor."""
    return isinstance(obj, Tensor)


def equal(input, other):
    """True if the two tensors have the same shape and the same values (a Python bool)."""
    a, b = np.asarray(as_tensor(input).numpy()), np.asarray(as_tensor(other).numpy())
    return a.shape == b.shape and bool(np.array_equal(a, b))


def cdist(x1, x2, p=2.0):
    """The p-norm distance between every row of x1 (..., P, M) and every row of x2 (..., R, M):
    (..., P, R). It is `norm` of the differences, whose gradient is 0 where two rows are equal
    (the distance's kink), as PyTorch's."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"cdist: expected x1 (..., P, M) and x2 (..., R, M) with the same M, got shapes {x1.shape} "
                         f"and {x2.shape}")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


def _legacy(dtype):
    def make(*args, device=None):
        """PyTorch's old constructor: `FloatTensor(2, 3)` (a new tensor of that shape, zeros here)
        or `FloatTensor([1, 2])` (the values, in this dtype)."""
        check_device(device, "a legacy constructor")
        if args and all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=dtype)
        if len(args) == 1 and isinstance(args[0], (tuple, list)) and not args[0]:
            return zeros(0, dtype=dtype)
        if len(args) != 1:
            raise TypeError(f"expected sizes (ints) or one sequence of values, got {args!r}")
        return tensor(args[0].numpy() if isinstance(args[0], Tensor) else args[0], dtype=dtype)

    make.dtype = np.dtype(dtype)  # (so that x.type(minigrad.LongTensor) knows the dtype)
    return make


FloatTensor, DoubleTensor, HalfTensor = _legacy(np.float32), _legacy(np.float64), _legacy(np.float16)
LongTensor, IntTensor, ShortTensor = _legacy(np.int64), _legacy(np.int32), _legacy(np.int16)
ByteTensor, CharTensor, BoolTensor = _legacy(np.uint8), _legacy(np.int8), _legacy(np.bool_)


# ---------------------------------------------------------------------- the limits of each dtype
class finfo:
    """The limits of a float dtype (float32 by default), as `torch.finfo`: `eps` (the gap between 1 and
    the next float), `max`, `min` (the most negative), `tiny` (the smallest positive normal number,
    also called `smallest_normal`), `resolution` (10^-digits) and `bits`, as Python numbers."""

    def __init__(self, type=None):
        info = _info("finfo", np.finfo, default_float() if type is None else type, "fc", "iinfo")
        self.bits, self.dtype = info.bits, info.dtype.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -info.precision  # (as a Python float: 0.001 for float16, not 0.0010004)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype, as `torch.iinfo`: `max`, `min` and `bits`, as Python ints."""

    def __init__(self, type):
        info = _info("iinfo", np.iinfo, type, "iu", "finfo")
        self.bits, self.dtype, self.max, self.min = info.bits, info.dtype.name, int(info.max), int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def _info(op, numpy_info, type, kinds, other):
    try:
        dtype = np.dtype(type.dtype if isinstance(type, Tensor) else type)
    except TypeError:
        raise TypeError(f"{op}: expected a dtype (such as minigrad.float32), got {type!r}") from None
    if dtype.kind not in kinds:
        hint = f"; use minigrad.{other} for it" if dtype.kind in "fciu" else ""
        raise TypeError(f"{op}: {dtype} is not {'an integer' if op == 'iinfo' else 'a float'} dtype{hint}")
    return numpy_info(dtype)
