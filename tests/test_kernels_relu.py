"""The ReLU kernels (minigrad/kernels/relu.py) give exactly their numpy twins' numbers (a ReLU
rounds nothing), NaN included, on one thread and on several, for float32 arrays of any shape and
for the arrays the kernels leave to the twins (other dtypes, views, read-only arrays)."""
import numpy as np
import pytest

from helpers import num_threads
import minigrad as mg
from minigrad.kernels.relu import relu_backward_numba, relu_backward_numpy, relu_forward_numba, relu_forward_numpy


def _inputs(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if x.size >= 4 and dtype == np.float32:
        x.reshape(-1)[:4] = [np.nan, -0.0, 0.0, -np.inf]
    return x, g


@pytest.mark.parametrize("shape, threads", [((), 1), ((7,), 1), ((3, 0, 2), 2), ((64, 6, 28, 28), 2),
                                            ((64, 6, 28, 28), 1)])
def test_relu_numba_matches_numpy_exactly(shape, threads):
    x, g = _inputs(shape)
    with num_threads(threads):
        y, dx = relu_forward_numba(x), relu_backward_numba(x, g)
    np.testing.assert_array_equal(y, relu_forward_numpy(x))  # (NaN where NaN)
    np.testing.assert_array_equal(dx, relu_backward_numpy(x, g))
    assert y.dtype == dx.dtype == np.float32 and y.shape == dx.shape == x.shape
    if x.size >= 4:
        assert np.isnan(y.reshape(-1)[0]) and (y.reshape(-1)[1:4] == 0).all()  # NaN passes, -0 and -inf give 0
        assert not np.signbit(y.reshape(-1)[1])


@pytest.mark.parametrize("case", ["float64", "int64", "transposed", "read-only"])
def test_relu_kernels_leave_other_arrays_to_the_twins(case):
    x, g = _inputs((5, 6), seed=1, dtype=np.int64 if case == "int64" else
                   np.float64 if case == "float64" else np.float32)
    if case == "transposed":
        x, g = x.T, g.T
    if case == "read-only":
        x.flags.writeable = g.flags.writeable = False
    y, dx = relu_forward_numba(x), relu_backward_numba(x, g)
    np.testing.assert_array_equal(y, relu_forward_numpy(x))
    np.testing.assert_array_equal(dx, relu_backward_numpy(x, g))
    assert y.dtype == x.dtype


def test_relu_backward_rejects_a_gradient_of_another_shape():
    with pytest.raises(ValueError, match=r"relu_backward: g \(3,\) does not match x \(4,\)"):
        relu_backward_numba(np.zeros(4, np.float32), np.zeros(3, np.float32))


def test_relu_op_gives_pytorchs_numbers_on_both_backends():
    x_np, g_np = _inputs((16, 33), seed=2)
    results = []
    for backend in ("numba", "numpy"):
        with mg.use_backend(backend):
            x = mg.tensor(x_np, requires_grad=True)
            y = x.relu()
            y.backward(mg.tensor(g_np))
            results.append((y.numpy(), x.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(results[0][1], np.where(x_np > 0, g_np, 0))
