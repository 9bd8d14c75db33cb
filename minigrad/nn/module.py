"""Module: a piece of a model that owns parameters and sub-modules, as in PyTorch.

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(2, 16)     # sub-modules and parameters register themselves
            self.fc2 = nn.Linear(16, 1)     # when assigned as attributes

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())
"""
from collections import OrderedDict, namedtuple

import numpy as np

from .. import devices
from ..compile import replayed_as_a_call
from ..tensor import Tensor, _zero_grads


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable (requires_grad=True by default)."""

    def __init__(self, data, requires_grad=True):
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    training = True

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        if name in self._buffers and (value is None or type(value) is Tensor):  # a buffer's new value: still a buffer
            self._buffers[name] = (value, self._buffers[name][1])
            object.__setattr__(self, name, value)
            return
        keep = (self._parameters if isinstance(value, Parameter) else
                self._modules if isinstance(value, Module) else None)
        for registry in (self._parameters, self._buffers, self._modules):
            if registry is not keep:
                registry.pop(name, None)
        if keep is not None:
            keep[name] = value  # (a replaced one keeps its place in the order, as in PyTorch)
        object.__setattr__(self, name, value)  # plain attribute too: fast look-up in forward

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor the module needs but does not train (BatchNorm's running statistics, a mask).
        Floating buffers follow `to(dtype)` (integer ones, such as a count, keep their dtype); it is
        in `state_dict()` unless persistent=False (a table the constructor can rebuild). None
        registers the name with no tensor yet (left out of `buffers()` and `state_dict()`)."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: a buffer name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got {type(tensor).__name__}")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer: {name!r} is already a parameter or a sub-module of "
                           f"{type(self).__name__}")
        object.__setattr__(self, name, tensor)
        self._buffers[name] = (tensor, persistent)

    # ------------------------------------------------------------------ traversal
    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and every module below it, depth first."""
        stack = [(prefix, self)]
        seen = set()
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{n}" if name else n, m) for n, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        return (m for _, m in self.named_modules())

    def children(self):
        return (m for m in self._modules.values() if m is not None)

    def named_parameters(self, remove_duplicate=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules (tied weights) is
        listed once, under its first name, unless remove_duplicate=False."""
        seen = set()
        for prefix, module in self.named_modules():
            for name, p in module._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (f"{prefix}.{name}" if prefix else name), p

    def parameters(self):
        return (p for _, p in self.named_parameters())

    def named_buffers(self):
        """(dotted name, tensor) for every buffer of this module and the modules below it."""
        return ((name, t) for name, t, _ in self._named_buffers())

    def buffers(self):
        return (t for _, t, _ in self._named_buffers())

    def _named_buffers(self):
        """(dotted name, tensor, persistent) for every buffer that holds a tensor."""
        for prefix, module in self.named_modules():
            for name, (t, persistent) in module._buffers.items():
                if t is not None:
                    yield (f"{prefix}.{name}" if prefix else name), t, persistent

    def num_parameters(self):
        """How many numbers the model trains (shared parameters counted once)."""
        return sum(p.numel() for p in self.parameters())

    def apply(self, fn):
        """Call fn(module) on every sub-module, then on this one (as PyTorch: for custom init,
        `model.apply(init_weights)`); returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad of every parameter (False freezes them); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------------ modes and dtype
    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    @replayed_as_a_call
    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient (`p.grad = None`); zeros instead with set_to_none=False."""
        _zero_grads(self.parameters(), set_to_none)

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """Convert every floating parameter and buffer to `dtype`, in place (the Parameter
        objects stay the same, so an optimizer that holds them keeps working). Takes PyTorch's forms
        too: `model.to(device)`, `model.to("cpu", dtype)`; the only device is the CPU."""
        for arg in args:
            if devices.is_device(arg):
                device = arg
            else:
                dtype = arg
        devices.check_device(device, f"{type(self).__name__}.to")
        if dtype is None:
            return self
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"{type(self).__name__}.to: parameters must stay floating point, got {dtype}")
        for p in self.parameters():
            if p.dtype.kind == "f" and p.dtype != dtype:
                p.data = p.numpy().astype(dtype)
                p.grad = None
        for _, t in self.named_buffers():
            if t.dtype.kind == "f" and t.dtype != dtype:
                t.data = t.numpy().astype(dtype)
        return self

    def double(self):
        return self.to(np.float64)

    def cpu(self):
        return self

    def cuda(self, device=None):
        devices.check_device("cuda", f"{type(self).__name__}.cuda")

    def float(self):
        return self.to(np.float32)

    # ------------------------------------------------------------------ state
    def _state(self):
        """(dotted name, tensor) for every parameter and persistent buffer, in PyTorch's order: each
        module's parameters, then its buffers, then the modules below it."""
        for prefix, module in self.named_modules():
            for registry in (module._parameters, {n: t for n, (t, keep) in module._buffers.items() if keep}):
                for name, t in registry.items():
                    if t is not None:
                        yield (f"{prefix}.{name}" if prefix else name), t

    def state_dict(self):
        """name -> numpy array (a copy) for every parameter and persistent buffer."""
        return OrderedDict((n, t.numpy().copy()) for n, t in self._state())

    def load_state_dict(self, state_dict, strict=True):
        """Copy values from `state_dict` into this module's parameters.

        With strict=True, missing keys, unexpected keys and shape mismatches raise one error that
        lists each of them; otherwise the matching entries are loaded and the rest reported."""
        own = OrderedDict(self._state())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = [
            f"{k}: checkpoint {np.shape(state_dict[k])} vs model {own[k].shape}"
            for k in own if k in state_dict and np.shape(state_dict[k]) != own[k].shape
        ]
        if mismatched or (strict and (missing or unexpected)):
            problems = [f"shape mismatch for {m}" for m in mismatched]
            if strict:
                problems += [f"missing key: {k}" for k in missing] + [f"unexpected key: {k}" for k in unexpected]
            raise ValueError(f"load_state_dict into {type(self).__name__}:\n  " + "\n  ".join(problems))
        for k, t in own.items():
            if k in state_dict:
                value = state_dict[k]
                if hasattr(value, "detach") and not isinstance(value, np.ndarray):  # a PyTorch tensor
                    value = value.detach().cpu().numpy()
                t.data = np.array(value, dtype=t.dtype)
                t._bump("load_state_dict")
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        # with sub-modules, the settings get a line of their own inside the parentheses (as PyTorch)
        return f"{type(self).__name__}(\n  " + "\n  ".join(([extra] if extra else []) + lines) + "\n)"


class ModuleList(Module):
    """A list of modules whose parameters are registered (a plain list would hide them), named
    "0", "1", ... A slice is a ModuleList of its own (a Sequential's slice a Sequential)."""

    def __init__(self, modules=()):
        super().__init__()
        self.extend(modules)

    def append(self, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: expected a Module, got {type(module).__name__}")
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)

    def _renumber(self, modules):
        for name in list(self._modules):
            delattr(self, name)
        self.extend(modules)

    def _index(self, i):
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"{type(self).__name__}: index {i} is out of range for {n} modules")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return self._modules[self._index(i)]

    def __setitem__(self, i, module):
        setattr(self, self._index(i), module)

    def __delitem__(self, i):
        modules = list(self._modules.values())
        del modules[i]
        self._renumber(modules)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of modules whose parameters are registered, under their keys:
    ModuleDict({"encoder": Linear(4, 8), "head": Linear(8, 2)})["head"]."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ModuleDict: a key must be a non-empty string without '.', got {key!r}")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {key!r} must be a Module, got {type(module).__name__}")
        self._modules[key] = module  # (not an attribute: a key such as "train" must not hide a method)

    def __getitem__(self, key):
        return self._modules[key]

    def __getattr__(self, name):  # (only for names that are not attributes: md.head is md["head"])
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"{type(self).__name__} has no attribute or key {name!r}")

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self[key] = module

    def pop(self, key):
        return self._modules.pop(key)


class Sequential(ModuleList):
    """Modules applied one after another: Sequential(Linear(2, 8), ReLU(), Linear(8, 1)), named "0",
    "1", ...; or Sequential(OrderedDict([("fc", Linear(2, 8)), ("act", ReLU())])), named by its keys
    (seq.fc). A slice is a Sequential with the same names."""

    def __init__(self, *modules):
        if len(modules) == 1 and isinstance(modules[0], dict):
            Module.__init__(self)
            for name, module in modules[0].items():
                if not isinstance(module, Module):
                    raise TypeError(f"Sequential: {name!r} must be a Module, got {type(module).__name__}")
                setattr(self, name, module)
            return
        super().__init__(modules)

    def _index(self, i):
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"Sequential: index {i} is out of range for {n} modules")
        return list(self._modules)[i]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return self._modules[self._index(i)]


    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class Summary:
    """What `summary(model)` returns: `rows` (dotted name, shape, count) per parameter, `total` and
    `trainable` counts; printed, a table."""

    def __init__(self, model):
        self.name = type(model).__name__
        self.rows = [(name, tuple(p.shape), p.numel()) for name, p in model.named_parameters()]
        self.total = sum(count for _, _, count in self.rows)
        self.trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)

    def __str__(self):
        header = ("parameter", "shape", "count")
        body = [(name, str(shape), f"{count:,}") for name, shape, count in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]
        line = lambda r: f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}"  # noqa: E731
        rule = "-" * len(line(header))
        lines = [self.name, line(header), rule] + [line(r) for r in body] + [rule]
        lines.append(f"total: {self.total:,} parameters ({self.trainable:,} trainable)")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self):
        """The same table for a notebook."""
        import html

        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{shape}</td><td style='text-align:right'>{count:,}</td></tr>"
                       for name, shape, count in self.rows)
        return (f"<b>{html.escape(self.name)}</b><table><tr><th>parameter</th><th>shape</th><th>count</th></tr>"
                f"{rows}</table>total: {self.total:,} parameters ({self.trainable:,} trainable)")


def summary(model):
    """A table of `model`'s parameters: dotted name, shape, number of values, and the total (a
    parameter shared by two modules counts once). `print(summary(model))`."""
    if not isinstance(model, Module):
        raise TypeError(f"summary: expected a Module, got {type(model).__name__}")
    return Summary(model)
