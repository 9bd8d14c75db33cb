"""TensorShape: the Tensor methods that move or select elements: reshape, permute, squeeze, expand,
split, masked_fill, tril, flip, repeat, gather, scatter_add, ...

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

    def transpose(self, axis0=-2, axis1=-1, *, dim0=None, dim1=None):
        """Swap two axes (the last two by default)."""
        axis0, axis1 = (axis0 if dim0 is None else dim0), (axis1 if dim1 is None else dim1)
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
        for a in axes:
            if self.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {self.shape[a]}, not 1 (shape {self.shape})")
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def expand(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self if shape == self.shape else ops.Expand.apply(self, shape=shape)

    def broadcast_to(self, shape):
        return self.expand(tuple(shape))

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

    def tril(self, k=0):
        return ops.Triangle.apply(self, k=k, lower=True)

    def triu(self, k=0):
        return ops.Triangle.apply(self, k=k, lower=False)

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
