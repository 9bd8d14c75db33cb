"""ParameterList and ParameterDict: parameters held in a list or a dict, registered with the module
(a plain Python list of Parameters would hide them from `parameters()`, the optimizer and
`state_dict()`). Their names are PyTorch's: the index ("plist.0") or the key ("pdict.scale").

    class Mixture(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.means = nn.ParameterList([nn.Parameter(np.zeros(2, dtype=np.float32)) for _ in range(k)])
"""
from ..tensor import Tensor
from .module import Module, Parameter


def _as_parameter(op, where, value):
    """A Parameter stays itself; a plain Tensor becomes a Parameter (of a copy of its values), as
    PyTorch's containers do."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value.detach().numpy())
    raise TypeError(f"{op}: {where} must be a Parameter (or a Tensor, made one), got {type(value).__name__}")


def _describe(p):
    return f"Parameter containing: [{p.dtype} of size {'x'.join(str(n) for n in p.shape) or '()'}]"


class ParameterList(Module):
    """A list of parameters, registered under their indices: ParameterList([w0, w1])[1] is w1, named
    "1" in `named_parameters()` and in the `state_dict()`."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def append(self, value):
        setattr(self, str(len(self)), _as_parameter("ParameterList.append", f"element {len(self)}", value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def _index(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"ParameterList: index {i} is out of range for a list of {n} parameters")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ParameterList(list(self._parameters.values())[i])
        return self._parameters[self._index(i)]

    def __setitem__(self, i, value):
        key = self._index(i)
        value = _as_parameter("ParameterList", f"element {key}", value)
        self._parameters[key] = value  # (replaced in its place: setattr would move it to the end)
        object.__setattr__(self, key, value)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __repr__(self):
        lines = [f"({name}): {_describe(p)}" for name, p in self._parameters.items()]
        return "ParameterList(" + "".join("\n  " + line for line in lines) + ("\n)" if lines else ")")


class ParameterDict(Module):
    """A dict of parameters, registered under their keys: ParameterDict({"scale": s})["scale"] is s,
    named "scale" in `named_parameters()` and in the `state_dict()`; `pd.scale` works too."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ParameterDict: a key must be a non-empty string without '.', got {key!r}")
        # (kept out of the attributes, as ModuleDict: a key such as "train" must not hide a method)
        self._parameters[key] = _as_parameter("ParameterDict", repr(key), value)

    def __getitem__(self, key):
        return self._parameters[key]

    def __getattr__(self, name):  # (only for names that are not attributes: pd.scale is pd["scale"])
        parameters = self.__dict__.get("_parameters", {})
        if name in parameters:
            return parameters[name]
        raise AttributeError(f"{type(self).__name__} has no attribute or key {name!r}")

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        return self._parameters.pop(key)

    def update(self, parameters):
        for key, value in (parameters.items() if hasattr(parameters, "items") else parameters):
            self[key] = value

    def __repr__(self):
        lines = [f"({key}): {_describe(p)}" for key, p in self._parameters.items()]
        return "ParameterDict(" + "".join("\n  " + line for line in lines) + ("\n)" if lines else ")")
