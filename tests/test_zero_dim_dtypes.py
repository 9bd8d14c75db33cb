"""A float32 tensor stays float32 through every op, a 0-d one too, on every supported numpy.

numpy before 2 computes a 0-d array (or a numpy scalar, such as a whole reduction) with a Python
number in float64; numpy 2 keeps the array's dtype (NEP 50). minigrad keeps it on both."""
import numpy as np
import pytest

import minigrad as mg
from strategies import OPS


@pytest.mark.parametrize("shape", [(), (3, 4)], ids=["0-d", "2-d"])
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_float32_in_float32_out(op, shape):
    values = op.domain.sample(*[shape] * op.domain.arity)
    values = values if op.domain.arity == 2 else (values,)
    inputs = [mg.tensor(np.asarray(v, dtype=np.float32), requires_grad=True) for v in values]
    out = op.fn(*inputs)
    assert out.dtype == np.float32, f"{op.name} of a {shape} float32 tensor gave {out.dtype}"
    out.sum().backward()
    assert all(x.grad.dtype == np.float32 for x in inputs)


@pytest.mark.parametrize("reduce", [lambda x: x.var(), lambda x: x.var(ddof=1), lambda x: x.var(axis=0),
                                    lambda x: x.mean(), lambda x: x.sum() / 4, lambda x: x.max()],
                         ids=["var", "var_ddof1", "var_axis0", "mean", "sum_div", "max"])
def test_a_whole_reduction_of_float32_is_float32(reduce):
    x = mg.randn(3, 4, requires_grad=True)
    out = reduce(x)
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == np.float32
