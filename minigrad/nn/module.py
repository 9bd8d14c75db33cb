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
from .hooks import _HOOK_DICTS, ModuleHooks, RemovableHandle  # noqa: F401  (RemovableHandle: PyTorch's name here)


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable (requires_grad=True by default)."""

    def __init__(self, data, requires_grad=True):
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module(ModuleHooks):
    training = True

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)
        for name in _HOOK_DICTS:  # (PyTorch's names: course code sometimes looks at m._forward_hooks)
            object.__setattr__(self, name, OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        if self._has_hooks:  # (the one test a module without hooks pays: GPT calls thousands per step)
            return self._call_with_hooks(args, kwargs)
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

    def _check_new_name(self, what, name, registry):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if not name:
            raise KeyError(f"{what} name can't be empty string \"\"")
        if "." in name:
            raise KeyError(f"{what} name can't contain \".\", got {name!r}")
        if name not in registry and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Register `param` (a Parameter, or None: the name is kept with no tensor, left out of
        `parameters()` and `state_dict()`) under `name`, as `self.name = param` does."""
        self._check_new_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(minigrad.nn.Parameter or None required)")
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def add_module(self, name, module):
        """Register `module` (or None) as a sub-module called `name`, as `self.name = module` does
        (useful when the name is computed: `self.add_module(f"layer{i}", nn.Linear(4, 4))`)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name("module", name, self._modules)
        self._modules[name] = module
        object.__setattr__(self, name, module)

    def register_module(self, name, module):
        """The same as add_module."""
        self.add_module(name, module)

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every module below it, depth first; a module
        reached twice (shared) is listed once, unless remove_duplicate=False."""
        stack = [(prefix, self)]
        seen = set() if memo is None else memo
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if module in seen if memo is not None else id(module) in seen:
                    continue
                seen.add(module if memo is not None else id(module))
            yield name, module
            children = [(f"{name}.{n}" if name else n, m) for n, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        """(name, module) for each direct sub-module (a module registered twice, once)."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        return (m for _, m in self.named_children())

    def _named_members(self, members, prefix, recurse, remove_duplicate):
        """(dotted name, value) for each (name, value) of members(module), for this module and
        (recurse=True) the modules below it; a value reached twice is listed once, under its first
        name, unless remove_duplicate=False (as PyTorch, which then lists shared modules twice too)."""
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, v in members(module):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{module_prefix}.{name}" if module_prefix else name), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs, names starting with `prefix`; recurse=False: only this
        module's own parameters. A parameter shared by two modules (tied weights) is listed once,
        under its first name, unless remove_duplicate=False."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, tensor) for every buffer of this module and (recurse=True) the modules below it."""
        return ((name, t) for name, t, _ in self._named_buffers(prefix, recurse, remove_duplicate))

    def buffers(self, recurse=True):
        return (t for _, t, _ in self._named_buffers(recurse=recurse))

    def _named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, tensor, persistent) for every buffer that holds a tensor (a tensor that is
        a buffer of two modules, once, unless remove_duplicate=False)."""
        members = lambda m: [(n, entry) for n, entry in m._buffers.items() if entry[0] is not None]  # noqa: E731
        seen = set()
        for name, (t, persistent) in self._named_members(members, prefix, recurse, remove_duplicate):
            if remove_duplicate and id(t) in seen:
                continue
            seen.add(id(t))
            yield name, t, persistent

    def get_submodule(self, target):
        """The module at the dotted path `target` ("blocks.0.fc"); "" is this module. An
        AttributeError names the part of the path that is missing."""
        if target == "":
            return self
        module, path = self, []
        for item in target.split("."):
            where = f"{type(module).__name__} at {'.'.join(path)!r}" if path else type(module).__name__
            modules = module.__dict__.get("_modules", {})
            if item in modules and modules[item] is not None:
                module = modules[item]
            elif item in modules or hasattr(module, item):
                raise AttributeError(f"get_submodule({target!r}): `{item}` of {where} is not an nn.Module")
            else:
                raise AttributeError(f"get_submodule({target!r}): {where} has no attribute `{item}`")
            path.append(item)
        return module

    def get_parameter(self, target):
        """The parameter at the dotted path `target` ("blocks.0.fc.weight")."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        params = module.__dict__.get("_parameters", {})
        if name in params and params[name] is not None:
            return params[name]
        if hasattr(module, name):
            raise AttributeError(f"get_parameter({target!r}): `{name}` is not an nn.Parameter")
        raise AttributeError(f"get_parameter({target!r}): {type(module).__name__} has no attribute `{name}`")

    def get_buffer(self, target):
        """The buffer at the dotted path `target` ("bn.running_mean")."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        buffers = module.__dict__.get("_buffers", {})
        if name in buffers and buffers[name][0] is not None:
            return buffers[name][0]
        if hasattr(module, name):
            raise AttributeError(f"get_buffer({target!r}): `{name}` is not a buffer")
        raise AttributeError(f"get_buffer({target!r}): {type(module).__name__} has no attribute `{name}`")

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
        module's parameters, then its buffers, then the modules below it. A module used twice
        (`Sequential(*(3 * [block]))`) is listed under each of its names, as PyTorch's."""
        for prefix, module in self.named_modules(remove_duplicate=False):
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
            f"{k}: checkpoint {tuple(np.shape(state_dict[k]))} vs model {own[k].shape}"
            for k in own if k in state_dict and not _fits(own[k], tuple(np.shape(state_dict[k])))
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


def _fits(t, shape):
    """Can a checkpoint's tensor of `shape` be loaded into t? Its shape, or for a lazy layer's tensor
    with no values yet (nn/lazy.py), any shape that layer could still give it."""
    accepts = getattr(t, "accepts_shape", None)
    return accepts(shape) if accepts is not None else shape == t.shape


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
