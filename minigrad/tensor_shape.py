"""TensorShape: the Tensor methods that move or select elements: reshape, permute, t, squeeze, expand,
unflatten, narrow, split, masked_fill, tril, diag, flip, roll, repeat, repeat_interleave, gather,
index_select, scatter_add, ...

`Tensor` (tensor.py) inherits them; each calls one op of ops.py (`x[index]` is in tensor.py).
"""
import numbers

import numpy as np

from . import ops
from .ops import _axis
from .tensor_math import _pytorch_names


class TensorShape:
    """Shape and layout methods of a Tensor (see tensor.py for the class itself). An axis argument
    has numpy's name, axis=, or PyTorch's, dim=."""

    __slots__ = ()  # (Tensor declares the slots)

    # ------------------------------------------------------------------ dtype (float, double, long: tensor.py)
    # values in another integer dtype have no gradient: new tensors outside the graph, as long()
    def int(self):
        return self._from_op(self.numpy().astype(np.int32), False)

    def short(self):
        return self._from_op(self.numpy().astype(np.int16), False)

    def byte(self):
        return self._from_op(self.numpy().astype(np.uint8), False)

    def bool(self):
        return self._from_op(self.numpy().astype(np.bool_), False)

    def half(self):
        return self.to(np.float16)

    # ------------------------------------------------------------------ shape
    def nelement(self):
        """The number of elements: PyTorch's other name for numel()."""
        return self.numel()

    def reshape(self, *sizes, shape=None, size=None):
        """The same values in another shape: x.reshape(2, 3), x.reshape((2, 3)), or PyTorch's keywords
        reshape(shape=...) and view(size=...); -1 once for the size that makes the count fit."""
        keyword = shape if shape is not None else size
        shape = (keyword,) if keyword is not None else sizes
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self if shape == self.shape else ops.Reshape.apply(self, shape=shape)

    def view(self, *shape, size=None, dtype=None):
        """reshape (a view where the memory allows), or PyTorch's x.view(dtype): the same bytes read
        as another dtype (outside the graph)."""
        if dtype is not None or (len(shape) == 1 and isinstance(shape[0], (str, type, np.dtype))):
            dtype = np.dtype(dtype if dtype is not None else shape[0])
            return self._from_op(self.numpy().view(dtype), False)
        return self.reshape(*shape, size=size)  # (view(size=...) is PyTorch's keyword)

    def view_as(self, other):
        """reshape(other.shape)."""
        return self.reshape(other.shape)

    reshape_as = view_as

    def unflatten(self, dim, sizes):
        """Dim `dim` split into several of the given `sizes` (one may be -1: what is left), the
        reverse of flatten: x (2, 12).unflatten(1, (3, 4)) is (2, 3, 4)."""
        dim = _axis(dim, self.ndim, "unflatten", self.shape)
        sizes, n = tuple(int(k) for k in sizes), self.shape[dim]
        known = int(np.prod([k for k in sizes if k != -1]))  # (-1 stands for n / known)
        fits = (sizes.count(-1) == 1 and known > 0 and n % known == 0) if -1 in sizes else known == n
        if not sizes or not fits or any(k < -1 for k in sizes):
            raise ValueError(f"unflatten: sizes {sizes} do not split dim {dim} of size {n} (tensor of shape "
                             f"{self.shape}); expected sizes that multiply to {n}, one of them -1 at most")
        return self.reshape(self.shape[:dim] + sizes + self.shape[dim + 1:])

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        start, end = start_dim % self.ndim, end_dim % self.ndim
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def permute(self, *axes, dims=None):
        if dims is not None:  # (PyTorch's keyword: x.permute(dims=(1, 0)))
            axes = (dims,)
        axes = tuple(axes[0]) if len(axes) == 1 and not isinstance(axes[0], numbers.Integral) else axes
        if len(axes) != self.ndim:
            raise ValueError(f"permute: got {len(axes)} axes {axes} for a tensor of shape {self.shape}")
        return ops.Permute.apply(self, axes=axes)

    def transpose(self, axis0=-2, axis1=-1, *, dim0=None, dim1=None):
        """Swap two axes (the last two by default)."""
        axis0, axis1 = (axis0 if dim0 is None else dim0), (axis1 if dim1 is None else dim1)
        if self.ndim < 2:
            return self
        axis0, axis1 = (_axis(a, self.ndim, "transpose", self.shape) for a in (axis0, axis1))
        axes = list(range(self.ndim))
        axes[axis0], axes[axis1] = axes[axis1], axes[axis0]
        return ops.Permute.apply(self, axes=tuple(axes))

    def t(self):
        """The transpose of a matrix (a tensor of at most 2 dims; 0-D and 1-D ones come back as they
        are, as views), as PyTorch's t()."""
        if self.ndim > 2:
            raise ValueError(f"t: expects a tensor of at most 2 dims, got shape {self.shape}; use "
                             "transpose(dim0, dim1) to swap two dims of it")
        return ops.Permute.apply(self, axes=tuple(reversed(range(self.ndim))))

    @property
    def T(self):
        """All axes reversed (numpy's .T)."""
        return self if self.ndim < 2 else ops.Permute.apply(self, axes=tuple(reversed(range(self.ndim))))

    def is_contiguous(self):
        """Whether the values lie in memory row by row, with no gaps (not after a transpose or expand)."""
        return bool(self._data.flags.c_contiguous)

    def contiguous(self):
        """A row-major copy (or this tensor, if it already is): after a transpose, it saves the
        ops that follow from reading scattered memory, or from copying it again each time."""
        return self if self._data.flags.c_contiguous else ops.Contiguous.apply(self)

    def unsqueeze(self, axis=None, *, dim=None):
        if dim is not None:
            axis = _pytorch_names("unsqueeze", axis, False, dim, None)[0]
        if axis is None:
            raise TypeError("unsqueeze: missing the position (axis or dim) of the new axis")
        axis = _axis(axis, self.ndim + 1, "unsqueeze", self.shape)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis=None, *, dim=None):
        if dim is not None:
            axis = _pytorch_names("squeeze", axis, False, dim, None)[0]
        if axis is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = {_axis(a, self.ndim, "squeeze", self.shape)
                for a in ((axis,) if isinstance(axis, numbers.Integral) else axis)}
        # an axis whose size is not 1 stays, as in PyTorch (x.squeeze(1) of a (B, T) batch is the batch)
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes or n != 1))

    def expand(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self if shape == self.shape else ops.Expand.apply(self, shape=shape)

    def broadcast_to(self, shape):
        return self.expand(tuple(shape))

    def expand_as(self, other):
        """expand(other.shape)."""
        return self.expand(tuple(other.shape))

    def narrow(self, dim, start, length):
        """The `length` elements from `start` along `dim` (a view): x.narrow(1, 2, 3) is x[:, 2:5]."""
        dim = _axis(dim, self.ndim, "narrow", self.shape)
        n = self.shape[dim]
        start = start + n if isinstance(start, numbers.Integral) and -n <= start < 0 else start
        if not isinstance(start, numbers.Integral) or not isinstance(length, numbers.Integral) or not (
                0 <= start <= n and 0 <= length <= n - start):
            raise ValueError(f"narrow: start {start} and length {length} do not fit in dim {dim} of size {n} "
                             f"(tensor of shape {self.shape}); expected 0 <= start and start + length <= {n}")
        return self[(slice(None),) * dim + (slice(int(start), int(start + length)),)]

    def split(self, split_size_or_sections, axis=None, *, dim=None):
        """Pieces of `split_size` along `axis` (0 by default; the last piece may be smaller), or of the
        listed sizes."""
        if dim is not None:
            axis = _pytorch_names("split", axis, False, dim, None)[0]
        axis = _axis(0 if axis is None else axis, self.ndim, "split", self.shape)
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

    def unbind(self, axis=None, *, dim=None):
        """The slices along `axis` (0 by default), each without that axis: x.unbind(0) is (x[0], x[1], ...)."""
        if dim is not None:
            axis = _pytorch_names("unbind", axis, False, dim, None)[0]
        axis = _axis(0 if axis is None else axis, self.ndim, "unbind", self.shape)
        return ops.Unbind.apply(self, axis=axis)

    def chunk(self, chunks, axis=None, *, dim=None):
        """`chunks` pieces of (nearly) equal size along `axis` (0 by default)."""
        if dim is not None:
            axis = _pytorch_names("chunk", axis, False, dim, None)[0]
        axis = 0 if axis is None else axis
        if not isinstance(chunks, numbers.Integral) or chunks <= 0:
            raise ValueError(f"chunk: the number of chunks must be a positive integer, got {chunks}")
        axis = _axis(axis, self.ndim, "chunk", self.shape)
        return self.split(-(-self.shape[axis] // chunks), axis=axis)

    def masked_fill(self, mask, value):
        """A copy with `value` where `mask` (bool, broadcastable to this shape) is True."""
        mask = np.asarray(mask)
        return ops.MaskedFill.apply(self, mask=mask, value=value)

    def tril(self, diagonal=0, *, k=None):
        """The lower triangle of the last two dims: diagonal `diagonal` (PyTorch's name; numpy's is
        k) and those below it kept, the others 0."""
        return ops.Triangle.apply(self, k=_diagonal("tril", diagonal, k), lower=True)

    def triu(self, diagonal=0, *, k=None):
        """The upper triangle of the last two dims: diagonal `diagonal` (or k) and those above it kept."""
        return ops.Triangle.apply(self, k=_diagonal("triu", diagonal, k), lower=False)

    def diag(self, diagonal=0):
        """For a 1-D tensor, the square matrix with it on diagonal `diagonal` (0 the main one, > 0
        above it, < 0 below) and 0 elsewhere; for a 2-D tensor, that diagonal of it, as a 1-D copy."""
        if not isinstance(diagonal, numbers.Integral):
            raise TypeError(f"diag: diagonal must be an int, got {diagonal!r}")
        return ops.Diag.apply(self, k=int(diagonal))

    def roll(self, shifts, dims=None):
        """The elements shifted by `shifts` places along `dims` (ints or tuples of the same length),
        those pushed off the end coming back at the start; without dims, over the flattened tensor
        (then back to this shape)."""
        many = not isinstance(shifts, numbers.Integral)
        shifts = tuple(int(s) for s in shifts) if many else int(shifts)
        if dims is None:
            if many and len(shifts) != 1:
                raise ValueError(f"roll: {len(shifts)} shifts {shifts} need as many dims, got none")
            return ops.Roll.apply(self, shifts=shifts[0] if many else shifts, dims=None)
        dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
        shifts = shifts if many else (shifts,)
        if len(shifts) != len(dims):
            raise ValueError(f"roll: {len(shifts)} shifts {shifts} for {len(dims)} dims {dims}; expected one "
                             "shift per dim")
        dims = tuple(_axis(d, self.ndim, "roll", self.shape) for d in dims)
        return ops.Roll.apply(self, shifts=shifts, dims=dims)

    def flip(self, *dims):
        """The elements in reverse order along each axis in `dims`: x.flip(0) or x.flip((0, 1))."""
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], numbers.Integral) else dims
        axes = [_axis(d, self.ndim, "flip", self.shape) for d in dims]
        if len(set(axes)) != len(axes):
            raise ValueError(f"flip: dims {dims} name an axis twice (tensor of shape {self.shape})")
        return ops.Flip.apply(self, dims=tuple(axes))

    def repeat(self, *sizes):
        """sizes[d] copies along each axis d (numpy's tile): x (2, 3).repeat(2, 1) is (4, 3). Give at
        least one size per axis; extra leading sizes add axes in front: x.repeat(4, 1, 1) is (4, 2, 3)."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral) else sizes
        if len(sizes) < self.ndim:
            raise ValueError(f"repeat: {len(sizes)} sizes {sizes} for a tensor of shape {self.shape}; expected "
                             f"at least one per dim ({self.ndim})")
        if any(not isinstance(n, numbers.Integral) or n < 0 for n in sizes):
            raise ValueError(f"repeat: sizes must be integers >= 0, got {sizes}")
        return ops.Repeat.apply(self, sizes=tuple(int(n) for n in sizes))

    def index_select(self, dim, index):
        """The slices at the positions in `index` (a 1-D integer tensor) along `dim`, in that order:
        x.index_select(0, i) is x[i]. A position may repeat; the gradient adds up its copies."""
        dim = _axis(dim, self.ndim, "index_select", self.shape)
        index = np.asarray(index)
        if index.ndim > 1 or index.dtype.kind not in "iu":
            raise ValueError(f"index_select: index must be a 1-D integer tensor, got shape {index.shape} and dtype "
                             f"{index.dtype}")
        index, n = index.reshape(-1).astype(np.intp), self.shape[dim]
        if index.size and (index.min() < 0 or index.max() >= n):
            bad = index.min() if index.min() < 0 else index.max()
            raise IndexError(f"index_select: index {int(bad)} is out of range for dim {dim} of size {n} (tensor of "
                             f"shape {self.shape}); expected 0 <= index < {n}")
        return self[(slice(None),) * dim + (index,)]

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Each element (each slice along `dim`) repeated `repeats` times in place, one copy after
        the other: [1, 2].repeat_interleave(2) is [1, 1, 2, 2]. repeats: an int or a 1-D integer
        tensor, one count per element; without dim, over the flattened tensor. The gradient adds up
        the copies."""
        x = self.reshape(-1) if dim is None else self
        dim = 0 if dim is None else _axis(dim, self.ndim, "repeat_interleave", self.shape)
        counts = np.asarray(repeats)
        n = x.shape[dim]
        if counts.dtype.kind not in "iu" or counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, n)):
            raise ValueError(f"repeat_interleave: repeats must be an int or a 1-D integer tensor of {n} counts (dim "
                             f"{dim} of shape {x.shape}) or of 1, got shape {counts.shape} and dtype {counts.dtype}")
        if np.any(counts < 0):
            raise ValueError(f"repeat_interleave: repeats must be >= 0, got {counts.tolist()}")
        index = np.repeat(np.arange(n), counts.reshape(-1) if counts.size == n else int(counts.reshape(-1)[0]))
        if output_size is not None and output_size != len(index):
            raise ValueError(f"repeat_interleave: output_size={output_size}, but the repeats give {len(index)}")
        return x.index_select(dim, index)

    def gather(self, dim, index):
        """out[i][j] = x[index[i][j]][j] for dim=0, x[i][index[i][j]] for dim=1 (and so on): values
        picked along `dim` at the positions in `index`, an integer tensor with as many dims as x
        and no larger along the others. out has index's shape."""
        dim = _axis(dim, self.ndim, "gather", self.shape)
        return ops.Gather.apply(self, index=np.asarray(index), dim=dim)

    def scatter_add(self, dim, index, src):
        """A copy of x with src[i][j] added at [index[i][j]][j] for dim=0 (and so on): the reverse of
        gather, adding up the values sent to one place. index has as many dims as src and x."""
        dim = _axis(dim, self.ndim, "scatter_add", self.shape)
        if not isinstance(src, TensorShape):  # (every Tensor is one) numbers or arrays: x's dtype
            src = np.asarray(src, dtype=self.dtype)
        return ops.ScatterAdd.apply(self, src, index=np.asarray(index), dim=dim)


    def scatter(self, dim, index, src=None, *, value=None):
        """A copy of x with src[i][j] written at [index[i][j]][j] for dim=0 (and so on): the writing
        twin of scatter_add. `src` may be a number (or give value=): `zeros(N, C).scatter(1,
        y.unsqueeze(1), 1.0)` is the one-hot encoding of y."""
        dim = _axis(dim, self.ndim, "scatter", self.shape)
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter: give src (a tensor or a number) or value=")
        if not isinstance(src, TensorShape):  # numbers or arrays: x's dtype
            src = np.asarray(src, dtype=self.dtype)
        index = np.asarray(getattr(index, "_data", index))
        if index.ndim == 0 and self.ndim == 1:  # (PyTorch takes a 0-d index for a 1-D tensor: one place)
            index = index.reshape(1)
            src = src.reshape(1) if src.ndim == 0 else src
        return ops.Scatter.apply(self, src, index=index, dim=dim)

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        """scatter, written into x (reduce="add": scatter_add_; "multiply" is not supported)."""
        if reduce not in (None, "add"):
            raise NotImplementedError(f"scatter_: reduce={reduce!r} is not supported (only None and 'add')")
        if reduce == "add":
            return self.scatter_add_(dim, index, value if src is None else src)
        return self._update("scatter_", lambda x: x.scatter(dim, index, src, value=value))

    def scatter_add_(self, dim, index, src):
        """scatter_add, written into x."""
        return self._update("scatter_add_", lambda x: x.scatter_add(dim, index, src))

    def index_add(self, dim, index, source, *, alpha=1):
        """A copy of x with alpha * source[..., i, ...] added to x[..., index[i], ...] along `dim`
        (index 1-D, as long as source is along dim; an index given twice adds twice)."""
        dim = _axis(dim, self.ndim, "index_add", self.shape)
        index = np.asarray(getattr(index, "_data", index))
        source = source if isinstance(source, TensorShape) else np.asarray(source, dtype=self.dtype)
        if index.ndim != 1 or source.ndim != self.ndim or source.shape[dim] != len(index):
            raise ValueError(f"index_add: expected a 1-D index as long as source along dim {dim}, and source with "
                             f"x's dims; got index {index.shape}, source {tuple(source.shape)}, x {self.shape}")
        shape = [1] * self.ndim
        shape[dim] = len(index)
        spread = np.broadcast_to(index.reshape(shape), source.shape)  # scatter_add's index: one per source element
        return self.scatter_add(dim, spread, source if alpha == 1 else source * alpha)

    def index_add_(self, dim, index, source, *, alpha=1):
        return self._update("index_add_", lambda x: x.index_add(dim, index, source, alpha=alpha))

    def index_fill(self, dim, index, value):
        """A copy of x with `value` in every slice x[..., i, ...] along `dim` for i in `index`."""
        dim = _axis(dim, self.ndim, "index_fill", self.shape)
        rows = np.zeros(self.shape[dim], dtype=bool)
        rows[np.asarray(getattr(index, "_data", index))] = True
        return self.masked_fill(rows.reshape([-1 if d == dim else 1 for d in range(self.ndim)]), value)

    def index_fill_(self, dim, index, value):
        return self._update("index_fill_", lambda x: x.index_fill(dim, index, value))

    def fill_diagonal_(self, fill_value, wrap=False):
        """Write fill_value on the main diagonal (x[i, i], or x[i, i, i] ...: every dim as long), in
        place; wrap=True starts again below a tall matrix's square top, as numpy's fill_diagonal."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise ValueError(f"fill_diagonal_: expected a matrix, or a tensor with every dim as long, got shape "
                             f"{self.shape}")
        mask = np.zeros(self.shape, dtype=bool)
        np.fill_diagonal(mask, True, wrap=wrap)
        return self.masked_fill_(mask, fill_value)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal of the (dim1, dim2) planes: x[i, i + offset] for a matrix; those two dims go,
        and the diagonal is the last dim. It is indexing, so the gradient flows back to it."""
        d1, d2 = (_axis(d, self.ndim, "diagonal", self.shape) for d in (dim1, dim2))
        if d1 == d2:
            raise ValueError(f"diagonal: dim1 and dim2 must differ, both are {d1}")
        rest = [d for d in range(self.ndim) if d not in (d1, d2)]
        planes = self.permute(*rest, d1, d2)  # (..., rows, cols)
        rows, cols = planes.shape[-2:]
        n = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
        i = np.arange(n)
        return planes[(Ellipsis, i - min(offset, 0), i + max(offset, 0))]

    def trace(self):
        """The sum of a matrix's diagonal."""
        if self.ndim != 2:
            raise ValueError(f"trace: expected a matrix (2-D), got shape {self.shape}")
        return self.diagonal().sum()

    def movedim(self, source, destination):
        """x with its dims `source` moved to the places `destination` (ints, or tuples of them), the
        others keeping their order: x.movedim(0, -1) of (A, B, C) is (B, C, A). A view, as permute."""
        src = [source] if isinstance(source, numbers.Integral) else list(source)
        dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim: source {source} and destination {destination} must have as many dims")
        src = [_axis(d, self.ndim, "movedim", self.shape) for d in src]
        dst = [_axis(d, self.ndim, "movedim", self.shape) for d in dst]
        rest = iter([d for d in range(self.ndim) if d not in src])
        placed = dict(zip(dst, src))
        return self.permute(*[placed[i] if i in placed else next(rest) for i in range(self.ndim)])

    moveaxis = movedim

    def swapaxes(self, axis0, axis1):
        """transpose(axis0, axis1), numpy's and PyTorch's other name (swapdims too)."""
        return self.transpose(axis0, axis1)

    swapdims = swapaxes
    mT = property(lambda self: self.transpose(-2, -1), doc="the matrices of a batch (..., m, n) transposed")

    def tile(self, *dims):
        """Copies of x along each dim (numpy's tile; fewer dims than x are padded with 1 in front)."""
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], numbers.Integral) else dims
        return self.repeat(*((1,) * (self.ndim - len(dims)) + tuple(dims)))

    def masked_select(self, mask):
        """The elements where `mask` (broadcast to x's shape) is True, as a 1-D tensor (in the graph)."""
        mask = np.asarray(getattr(mask, "_data", mask))
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_select: the mask must be bool, got {mask.dtype}")
        shape = np.broadcast_shapes(self.shape, mask.shape)
        x = self if shape == self.shape else self.expand(shape)
        return x[np.broadcast_to(mask, shape)]

    def _reshaped_in_place(self, change):
        """unsqueeze_, squeeze_, t_, transpose_: this tensor takes the new shape, its history too."""
        new = change(self if self._ctx is None else self._snapshot())
        self._data = new._data
        if self._ctx is not None:
            self._ctx = new._ctx
        return self

    def unsqueeze_(self, dim):
        return self._reshaped_in_place(lambda x: x.unsqueeze(dim))

    def squeeze_(self, dim=None):
        return self._reshaped_in_place(lambda x: x.squeeze(dim))

    def t_(self):
        return self._reshaped_in_place(lambda x: x.t())

    def transpose_(self, dim0, dim1):
        return self._reshaped_in_place(lambda x: x.transpose(dim0, dim1))

    def storage(self):
        """The flat memory this tensor reads (its own, or the tensor it is a view of), as a 1-D tensor
        sharing it: writing into it writes into the tensor (Deep Learning with PyTorch, chapter 3)."""
        root = self if self._base is None else self._base
        return self._from_op(root._data.reshape(-1), False)

    untyped_storage = storage

    def storage_offset(self):
        """Where this tensor's first element is in its storage, counted in elements."""
        root = self if self._base is None else self._base
        start = self._data.__array_interface__["data"][0] - root._data.__array_interface__["data"][0]
        return start // self.dtype.itemsize

    def is_floating_point(self):
        return self.dtype.kind == "f"

    def is_complex(self):
        return self.dtype.kind == "c"

    def element_size(self):
        """Bytes per element."""
        return self.dtype.itemsize

    def stride(self, dim=None):
        """How many elements apart the neighbours along each dim are (PyTorch counts elements, numpy
        bytes)."""
        strides = tuple(s // self.dtype.itemsize for s in self.numpy().strides)
        return strides if dim is None else strides[_axis(dim, self.ndim, "stride", self.shape)]

    def ndimension(self):
        """The number of dims (x.ndim), PyTorch's old name."""
        return self.ndim


def _diagonal(op, diagonal, k):
    """The diagonal of tril and triu, by PyTorch's name (diagonal=) or numpy's (k=), not both."""
    if k is not None:
        if diagonal != 0:
            raise TypeError(f"{op}: got both diagonal={diagonal!r} and k={k!r}, which are the same argument; pass one")
        diagonal = k
    if not isinstance(diagonal, numbers.Integral):
        raise TypeError(f"{op}: diagonal must be an int, got {diagonal!r}")
    return int(diagonal)
