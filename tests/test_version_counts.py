"""In-place writers outside Tensor's own methods (optimizer steps, weight init) count their change
on the tensor that owns the memory, as Tensor's in-place methods do: a parameter that is a view
of a tensor saved for backward makes that backward refuse to run on changed values."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import optim
from minigrad.nn import init


def _graph_saving(base):
    """A loss whose backward needs `base` as it is now (Mul saves both operands)."""
    w = mg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    return (w * base).sum()


def _view_parameter(base):
    p = base[:2].detach().requires_grad_()  # shares base's memory
    p.grad = np.ones(2, dtype=np.float32)
    return p


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1), lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: optim.Adam(ps, lr=0.1)], ids=["sgd", "sgd-momentum", "adam"])
def test_optimizer_step_on_a_view_counts_on_its_base(make):
    base = mg.tensor([1.0, 2.0, 3.0])
    loss = _graph_saving(base)
    make([_view_parameter(base)]).step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_init_on_a_view_counts_on_its_base():
    base = mg.tensor([1.0, 2.0, 3.0])
    loss = _graph_saving(base)
    init.zeros_(base[:2].detach())
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_optimizer_step_on_a_plain_parameter_still_counts_once():
    p = mg.tensor([1.0, 2.0], requires_grad=True)
    p.grad = np.ones(2, dtype=np.float32)
    optim.SGD([p], lr=0.1).step()
    assert p._version == 1
