"""Lazy layers: `LazyLinear(out)`, `LazyConv2d(out, k)`, `LazyBatchNorm2d()`, ..., as in PyTorch.

Why: in a deep network the input size of each layer is the output size of the one before, and
working it out by hand (how many features come out of two convolutions and a pooling?) is
tedious and easy to get wrong. A lazy layer is given only what it produces; the first batch it
sees tells it the rest (Linear: input.shape[-1]; a convolution or batch norm: input.shape[1],
the channels), and only then are its weights made.

    net = nn.Sequential(nn.LazyConv2d(6, kernel_size=5), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
    net(example_batch)                  # the first call infers the sizes and makes the weights
    type(net[0]) is nn.Conv2d           # True: the layer has become the ordinary one

Before that first call each layer already holds its Parameter objects, empty (shape (0,), an
`UninitializedParameter`), so `model.parameters()` can go to an optimizer at once. The first call
fills those same objects with the values the ordinary layer's own initialisation gives (the
same numbers for the same seed), then changes the layer's class into the ordinary one (PyTorch's
`cls_to_become`): from then on it is that layer, with its repr and state_dict, at no extra cost.

A checkpoint can also be loaded before the first call: the shapes in the state dict tell the
sizes (`model.load_state_dict(torch_or_minigrad_state)` on a model made of lazy layers, as the
d2l book does). Loaded into the lazy layer itself, it becomes the ordinary layer at once; through
a parent module it becomes it once all its tensors are loaded (or at its first call).
"""
import contextlib
import weakref

import numpy as np

from ..random import default_generator
from ..tensor import Tensor, default_float
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .layers import Linear
from .module import Module, Parameter
from .normalization import BatchNorm1d, BatchNorm2d

__all__ = [
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyModuleMixin", "UninitializedParameter", "UninitializedBuffer", "is_lazy",
]


# ============================================================================ tensors without values
def _fits(shape, pattern):
    return pattern is None or (len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern)))


def _pattern_str(pattern, what):
    return "(" + ", ".join(what if p is None else str(p) for p in pattern) + ("," if len(pattern) == 1 else "") + ")"


class _Pending:
    """What UninitializedParameter and UninitializedBuffer share: an empty array (its dtype is the
    one the values will have; `model.to(dtype)` changes it), and the way to get values."""

    __slots__ = ()

    def accepts_shape(self, shape):
        """Could a checkpoint's tensor of `shape` fill this one? (load_state_dict asks: any shape its
        layer could still give it, or the empty (0,) of a lazy layer's own checkpoint.)"""
        shape = tuple(shape)
        return shape == (0,) or _fits(shape, self.__dict__.get("_lazy_pattern"))

    @property
    def data(self):
        return Tensor.data.fget(self)

    @data.setter
    def data(self, value):
        """`t.data = array`, as load_state_dict and `model.to(dtype)` write: an empty (0,) array
        leaves the tensor waiting (a new dtype, or a checkpoint of a lazy layer never called);
        values make it an ordinary tensor holding them."""
        array = value._data if isinstance(value, Tensor) else np.asarray(value)
        if array.shape == (0,):
            Tensor.data.fset(self, array)
            return
        pattern = self.__dict__.get("_lazy_pattern")
        if not _fits(array.shape, pattern):
            raise ValueError(f"{self.__dict__.get('_lazy_where', type(self).__name__)} must have shape "
                             f"{_pattern_str(pattern, '?')}, got {array.shape}")
        Tensor.data.fset(self, array)
        owner = self._fill(self._data)
        if owner is not None:
            owner._lazy_loaded()

    def materialize(self, shape, dtype=None):
        """Give it zeros of `shape` (PyTorch's materialize gives an empty tensor): it becomes an
        ordinary Parameter (or Tensor). For layers of one's own; the lazy layers here fill their
        tensors with the ordinary layer's initial values instead."""
        self._fill(np.zeros(shape, dtype=self.dtype if dtype is None else dtype))

    def _fill(self, array):
        """Hold `array` and become the ordinary class; returns the lazy layer that owns this tensor
        (None if there is none any more, e.g. in a deep copy)."""
        owner_ref = self.__dict__.get("_lazy_owner")
        name = self.__dict__.get("_lazy_name")
        for key in ("_lazy_owner", "_lazy_name", "_lazy_pattern", "_lazy_where"):
            self.__dict__.pop(key, None)
        self._data = array
        self.__class__ = self._becomes
        self._bump("materialize")
        owner = owner_ref() if owner_ref is not None else None
        if isinstance(owner, LazyModuleMixin) and (owner._parameters.get(name) is self or
                                                   owner._buffers.get(name, (None,))[0] is self):
            return owner
        return None

    def _bind(self, owner, name):
        self.__dict__.update(_lazy_owner=weakref.ref(owner), _lazy_name=name, _lazy_pattern=owner._lazy_pattern(name),
                             _lazy_where=f"{owner._describe()}.{name}")
        return self

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Pending, Parameter):
    """A Parameter with no values yet (an empty array of shape (0,)); a lazy layer's first call
    fills it and it becomes an ordinary Parameter, the same object."""

    _becomes = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        Parameter.__init__(self, np.empty((0,), dtype=default_float() if dtype is None else dtype), requires_grad)


class UninitializedBuffer(_Pending, Tensor):
    """A buffer (batch norm's running statistics) with no values yet; becomes an ordinary Tensor."""

    _becomes = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        Tensor.__init__(self, np.empty((0,), dtype=default_float() if dtype is None else dtype),
                        requires_grad=requires_grad)


def is_lazy(tensor):
    """Whether `tensor` is still waiting for its values (an UninitializedParameter or Buffer)."""
    return isinstance(tensor, _Pending)


@contextlib.contextmanager
def _rng_untouched():
    """Leave the default generator's state as it was: making a placeholder must not change which
    numbers the real initialisation draws later."""
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)


def _shape_of(x):
    return tuple(np.shape(x))


# ============================================================================ the mixin
class LazyModuleMixin:
    """What the lazy layers share. A lazy layer names the ordinary class it becomes
    (`cls_to_become`), the tensors that wait for the inferred size (`_lazy_names`), and how the
    size comes from an input (`_infer_size`) or from a loaded tensor's shape (`_size_from`)."""

    cls_to_become = None
    _inferred = "in_features"  # the ordinary class's argument the input gives
    _lazy_names = ("weight", "bias")

    # ---------------------------------------------------------------- set-up
    def _lazy_init(self, kwargs):
        """After the ordinary class's __init__ made placeholders: swap each for an empty tensor."""
        object.__setattr__(self, "_lazy_kwargs", kwargs)
        object.__setattr__(self, self._inferred, 0)
        for name in self._lazy_names:
            t = getattr(self, name, None)
            if t is None:
                continue
            if isinstance(t, Parameter):
                setattr(self, name, UninitializedParameter(t.requires_grad, dtype=t.dtype)._bind(self, name))
            else:
                self.register_buffer(name, UninitializedBuffer(dtype=t.dtype)._bind(self, name), self._buffers[name][1])

    def _lazy_tensors(self):
        """(name, tensor) for the tensors that wait for the inferred size and are present."""
        for name in self._lazy_names:
            t = self._parameters.get(name)
            if t is None and name in self._buffers:
                t = self._buffers[name][0]
            if t is not None:
                yield name, t

    def has_uninitialized_params(self):
        """Whether some parameter or buffer of this layer has no values yet."""
        return any(is_lazy(t) for _, t in self._lazy_tensors())

    def _describe(self):
        return f"{type(self).__name__}({self._settings()})"

    # ---------------------------------------------------------------- the first call
    def forward(self, *args, **kwargs):
        """The first call: infer the size, make the weights, become the ordinary layer, run it."""
        if not args:
            raise TypeError(f"{self._describe()}: expected an input tensor")
        self.initialize_parameters(*args, **kwargs)
        return self.forward(*args, **kwargs)  # (now the ordinary class's forward)

    def initialize_parameters(self, input, *args, **kwargs):
        """Infer the size from `input`, give the tensors the ordinary layer's initial values and
        become that layer."""
        size = self._infer_size(_shape_of(input))
        loaded = self._size_from_loaded()
        if loaded is not None and loaded[0] != size:
            name, value = loaded[1], loaded[0]
            raise ValueError(f"{self._describe()}: the input {_shape_of(input)} gives {self._inferred}={size}, but "
                             f"the {name} loaded from a state dict has {self._inferred}={value}")
        self._become(size)

    def _size_from_loaded(self):
        """(size, name) from the tensors that already hold values (loaded), or None; they must agree."""
        found = None
        for name, t in self._lazy_tensors():
            if is_lazy(t):
                continue
            size = self._size_from(name, t.shape)
            if size is None:
                continue
            if found is not None and found[0] != size:
                raise ValueError(f"{self._describe()}: the loaded {found[1]} {self._shape_of_loaded(found[1])} gives "
                                 f"{self._inferred}={found[0]}, but the loaded {name} {t.shape} gives {size}")
            found = found or (size, name)
        return found

    def _shape_of_loaded(self, name):
        return dict(self._lazy_tensors())[name].shape

    def _lazy_loaded(self):
        """A tensor got its values from a state dict: once none waits, become the ordinary layer."""
        if not self.has_uninitialized_params():
            found = self._size_from_loaded()
            if found is not None:
                self._become(found[0])

    def _become(self, size):
        """Make the ordinary layer with `size` (its own initialisation, drawing from the default
        generator as it would), move its arrays into the tensors still empty, take its settings,
        and change class."""
        dtype = next((t.dtype for _, t in self._lazy_tensors()), self._lazy_kwargs.get("dtype"))
        kwargs = {**self._lazy_kwargs, "dtype": dtype, self._inferred: size}
        waiting = self.has_uninitialized_params()
        with contextlib.nullcontext() if waiting else _rng_untouched():  # (all loaded: draw nothing)
            eager = self.cls_to_become(**kwargs)
        for name, t in eager._parameters.items():
            mine = self._parameters[name]
            if is_lazy(mine):
                mine._fill(t._data)
        for name, (t, _) in eager._buffers.items():
            mine = self._buffers[name][0]
            if is_lazy(mine):
                mine._fill(t._data)
        object.__setattr__(self, self._inferred, size)  # (the other settings are the placeholder's: the same)
        for key, value in eager.__dict__.items():  # (anything the placeholder lacked; hooks and mode stay)
            if key not in self.__dict__:
                object.__setattr__(self, key, value)
        del self.__dict__["_lazy_kwargs"]
        self.__class__ = self.cls_to_become

    # ---------------------------------------------------------------- checkpoints
    def load_state_dict(self, state_dict, strict=True):
        """Load a checkpoint before the first call: its shapes give the size (checked against what
        the layer already knows), its values fill the tensors, and the layer becomes the ordinary
        one. A checkpoint of a lazy layer never called (empty tensors) leaves it waiting."""
        values = {k: (v.detach().cpu().numpy() if hasattr(v, "detach") and not isinstance(v, np.ndarray) else v)
                  for k, v in state_dict.items()}
        sizes = []
        for name, t in self._lazy_tensors():
            if name not in values or not is_lazy(t):
                continue
            shape = tuple(np.shape(values[name]))
            if shape == (0,):
                continue
            pattern = self._lazy_pattern(name)
            if not _fits(shape, pattern):
                raise ValueError(f"load_state_dict into {self._describe()}: {name} has shape {shape} in the state "
                                 f"dict, expected {_pattern_str(pattern, self._inferred)}")
            size = self._size_from(name, shape)
            if size is not None:
                sizes.append((size, name, shape))
        known = self._size_from_loaded()
        if known is not None:
            sizes.append((known[0], known[1], self._shape_of_loaded(known[1])))
        if len({s for s, _, _ in sizes}) > 1:
            raise ValueError(f"load_state_dict into {self._describe()}: the shapes disagree about "
                             f"{self._inferred}: " + ", ".join(f"{n} {sh} gives {s}" for s, n, sh in sizes))
        return Module.load_state_dict(self, values, strict)


# ============================================================================ the layers
class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose in_features is inferred: x (..., in_features) -> (..., out_features),
    in_features = x.shape[-1] of the first input. Becomes nn.Linear then, with weight
    (out_features, in_features) and bias (out_features,) from Linear's own U(-1/sqrt(in), 1/sqrt(in))."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        with _rng_untouched():
            Linear.__init__(self, 0, out_features, bias=bias, dtype=dtype, device=device)
        self._lazy_init(dict(out_features=out_features, bias=bias, dtype=dtype, device=device))

    def _settings(self):
        return f"out_features={self.out_features}"

    def _lazy_pattern(self, name):
        return (self.out_features, None) if name == "weight" else (self.out_features,)

    def _size_from(self, name, shape):
        return shape[1] if name == "weight" else None

    def _infer_size(self, shape):
        if len(shape) < 1:
            raise ValueError(f"{self._describe()}: expected an input of shape (..., in_features) with at least 1 "
                             f"dim, got shape {shape}")
        return shape[-1]


class _LazyConvNd(LazyModuleMixin):
    """What the lazy convolutions share: in_channels = the input's dim 1 (dim 0 if unbatched)."""

    _inferred = "in_channels"

    def _lazy_conv_init(self, kwargs):
        out, groups, name = kwargs["out_channels"], kwargs["groups"], type(self).__name__
        if not isinstance(groups, int) or groups < 1 or out % groups:
            raise ValueError(f"{name}: groups={groups} must be a positive int that divides out_channels={out}")
        with _rng_untouched():  # (a placeholder with in_channels = groups, for the ordinary checks)
            self.cls_to_become.__init__(self, in_channels=groups, **kwargs)
        self._lazy_init(kwargs)

    def _settings(self):
        return f"out_channels={self.out_channels}, kernel_size={self.kernel_size}"

    def _lazy_pattern(self, name):
        if name == "bias":
            return (self.out_channels,)
        if self.transposed:
            return (None, self.out_channels // self.groups, *self.kernel_size)
        return (self.out_channels, None, *self.kernel_size)

    def _size_from(self, name, shape):
        if name == "bias":
            return None
        return shape[0] if self.transposed else shape[1] * self.groups

    def _infer_size(self, shape):
        n = self.dims
        if len(shape) not in (n + 1, n + 2):
            spatial = ("L",) if n == 1 else ("H", "W")
            raise ValueError(f"{self._describe()}: expected an input of shape ({', '.join(('N', 'C_in') + spatial)}) "
                             f"or ({', '.join(('C_in',) + spatial)}) (unbatched), got shape {shape}")
        size = shape[1] if len(shape) == n + 2 else shape[0]
        if size < 1 or size % self.groups:
            raise ValueError(f"{self._describe()}: the input {shape} has {size} channels, which groups={self.groups} "
                             "does not divide into equal groups")
        return size


class LazyConv1d(_LazyConvNd, Conv1d):
    """A Conv1d whose in_channels is inferred: x (N, C_in, L) or (C_in, L) -> (N, out_channels, OL).
    Becomes nn.Conv1d at the first call, weight (out_channels, C_in / groups, k)."""

    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        self._lazy_conv_init(dict(out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                                  dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode, dtype=dtype,
                                  device=device))


class LazyConv2d(_LazyConvNd, Conv2d):
    """A Conv2d whose in_channels is inferred: x (N, C_in, H, W) or (C_in, H, W) -> (N, out_channels,
    OH, OW). Becomes nn.Conv2d at the first call, weight (out_channels, C_in / groups, kh, kw)."""

    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        self._lazy_conv_init(dict(out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                                  dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode, dtype=dtype,
                                  device=device))


class LazyConvTranspose2d(_LazyConvNd, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels is inferred: x (N, C_in, H, W) or (C_in, H, W) ->
    (N, out_channels, OH, OW). Becomes nn.ConvTranspose2d, weight (C_in, out_channels / groups, kh, kw)."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        self._lazy_conv_init(dict(out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                                  output_padding=output_padding, groups=groups, bias=bias, dilation=dilation,
                                  padding_mode=padding_mode, dtype=dtype, device=device))


class _LazyBatchNorm(LazyModuleMixin):
    """What the lazy batch norms share: num_features = the input's dim 1 (its channels)."""

    _inferred = "num_features"
    _lazy_names = ("weight", "bias", "running_mean", "running_var")

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        kwargs = dict(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats, dtype=dtype,
                      device=device)
        self.cls_to_become.__init__(self, num_features=0, **kwargs)
        self._lazy_init(kwargs)

    def _settings(self):
        return ""

    def _lazy_pattern(self, name):
        return (None,)

    def _size_from(self, name, shape):
        return shape[0]

    def _infer_size(self, shape):
        if len(shape) not in self._dims:
            raise ValueError(f"{self._describe()}: expected an input of shape {self._shapes}, got shape {shape}")
        return shape[1]


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """A BatchNorm1d whose num_features is inferred: x (N, C) or (N, C, L), C = x.shape[1] at the
    first call. Becomes nn.BatchNorm1d: weight 1 and bias 0 (C,), running_mean 0 and running_var 1 (C,)."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """A BatchNorm2d whose num_features is inferred: x (N, C, H, W), C = x.shape[1] at the first call.
    Becomes nn.BatchNorm2d (see LazyBatchNorm1d)."""

    cls_to_become = BatchNorm2d
