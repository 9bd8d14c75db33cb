"""What the course-name tests (test_nn_course_*.py) share: tolerances derived from the dtype, and
the comparison of a minigrad tensor with PyTorch's.

Tolerances. Two implementations of one formula (minigrad's and PyTorch's, or either and a numpy
reference) round differently: each elementwise step (exp, log, tanh, a product) is within an ulp
or two, so a value made of a few steps is within a few ulps, 8 eps relative, where eps =
np.finfo(dtype).eps. Near 0 a relative bound means nothing (a difference of two numbers of size m
that nearly cancel is only known to eps * m), so the absolute part is 8 eps times the magnitude m
of the numbers that went in. A sum or mean of n terms, added up in a different order, can differ
by up to n eps times the sum of |terms| (the classic bound for recursive summation), so `terms`
multiplies both parts.
"""
import numpy as np

DTYPES = [np.float32, np.float64]
ULPS = 8


def tolerance(dtype, magnitude=1.0, terms=1):
    """rtol and atol for values of `dtype` computed two ways: a few ulps (ULPS eps) relative, and
    absolute at `magnitude`, times the number of `terms` summed."""
    eps = float(np.finfo(dtype).eps)
    return dict(rtol=ULPS * eps * terms, atol=ULPS * eps * terms * magnitude)


def magnitude(*arrays):
    """The largest finite |value| in the arrays (at least 1e-300, so that 0 arrays still work)."""
    values = [np.abs(np.asarray(a, dtype=np.float64)) for a in arrays]
    return max([1e-300] + [float(v[np.isfinite(v)].max(initial=0.0)) for v in values])


def assert_close(ours, expected, dtype, magnitude=1.0, terms=1):
    """ours (a minigrad tensor or an array) equals the float64 `expected` within `tolerance`, with
    the same shape; the dtype is checked by the callers against PyTorch's or by name."""
    got = np.asarray(ours.numpy() if hasattr(ours, "numpy") else ours, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, **tolerance(dtype, magnitude, terms))


def assert_same_as_torch(ours, theirs, dtype, magnitude=1.0, terms=1):
    """minigrad's tensor and PyTorch's: the same shape, the same dtype, values within `tolerance`."""
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", ""), (ours.dtype, theirs.dtype)
    assert_close(ours, theirs.detach().numpy(), dtype, magnitude, terms)
