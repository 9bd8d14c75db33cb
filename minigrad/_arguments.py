"""Argument checks for the helpers around the engine (viz, gradcheck, opcheck, explain, save and
load): an argument of the wrong kind gets a TypeError that shows the function's signature and
what it got, instead of an AttributeError from deep inside (`'str' object has no attribute
'items'`). The usual slip is an argument in the wrong place: `draw(y, "graph.png")`,
`save(path, obj)`, `gradcheck(inputs, fn)`."""
import os
from collections.abc import Mapping

import numpy as np


def _got(value):
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {text}"


def is_path(value):
    return isinstance(value, (str, bytes, os.PathLike))


def tensor(signature, name, value):
    """`value`, checked to be a Tensor."""
    from .tensor import Tensor

    if not isinstance(value, Tensor):
        raise TypeError(f"{signature}: {name} must be a Tensor, got {_got(value)}")
    return value


def names(signature, value):
    """`names` as a dict name -> Tensor: None, a dict, or (name, tensor) pairs such as
    `model.named_parameters()`."""
    from .tensor import Tensor

    if value is None:
        return {}
    wrong = TypeError(f"{signature}: names must map names to tensors, as dict(model.named_parameters(), x=x) "
                      f"does, got {_got(value)}")
    if is_path(value) or isinstance(value, (Tensor, np.ndarray)):
        raise wrong
    try:
        pairs = list(value.items() if isinstance(value, Mapping) else value)
    except TypeError:
        raise wrong from None
    if not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], Tensor)
               for p in pairs):
        raise wrong
    return dict(pairs)


def path(signature, name, value):
    """`value`, checked to be a file path (str, bytes or os.PathLike)."""
    if not is_path(value):
        raise TypeError(f"{signature}: {name} must be a file path (a str or a pathlib.Path), got {_got(value)}")
    return value


def function(signature, name, value):
    """`value`, checked to be callable (a function or a Module)."""
    if not callable(value):
        raise TypeError(f"{signature}: {name} must be a function or a Module, got {_got(value)}")
    return value


def inputs(signature, value):
    """`inputs` as a tuple: a Tensor, or a sequence of arguments (Tensors, or anything fn takes)."""
    from .tensor import Tensor

    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, np.ndarray) or is_path(value) or callable(value):
        raise TypeError(f"{signature}: inputs must be a Tensor or a list of Tensors, got {_got(value)}"
                        + ("; wrap an array with minigrad.tensor(a, dtype='float64', requires_grad=True)"
                           if isinstance(value, np.ndarray) else ""))
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{signature}: inputs must be a Tensor or a list of Tensors, got {_got(value)}") from None
