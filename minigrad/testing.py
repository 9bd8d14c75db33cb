"""minigrad.testing, as torch.testing: `assert_close(actual, expected)`, the check course notebooks
and tests write to compare two results.

Two numbers a and e are close when |a − e| ≤ atol + rtol · |e|. The default tolerances depend on
the dtype, as PyTorch's: float32 rtol 1.3e-6, atol 1e-5; float64 rtol 1e-7, atol 1e-7; float16
rtol 1e-3, atol 1e-5; integers and bools must be equal. Shapes must be equal, and so must dtypes
(check_dtype=False compares values only). NaNs are equal only with equal_nan=True.
"""
import numpy as np

from .tensor import Tensor

__all__ = ["assert_close"]

_TOLERANCES = {np.float16: (1e-3, 1e-5), np.float32: (1.3e-6, 1e-5), np.float64: (1e-7, 1e-7)}


def _array(x):
    if isinstance(x, Tensor):
        return x.detach().numpy()
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # (a PyTorch tensor)
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True, msg=None):
    """Raise AssertionError, saying how many elements differ and where the largest difference is,
    unless `actual` and `expected` (tensors, arrays, numbers, or lists/tuples/dicts of them) are
    close (see the module docstring). Give rtol and atol both, or neither."""
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: give both rtol and atol, or neither")
    if isinstance(expected, (list, tuple)) and not isinstance(actual, Tensor):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"assert_close: lengths differ: {len(actual)} and {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype,
                         msg=msg or f"item {i}")
        return
    if isinstance(expected, dict):
        if set(actual) != set(expected):
            raise AssertionError(msg or f"assert_close: keys differ: {sorted(actual)} and {sorted(expected)}")
        for key in expected:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg or f"key {key!r}")
        return
    a, e = _array(actual), _array(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"assert_close: the shapes differ: {a.shape} and {e.shape}")
    if check_dtype and a.dtype != e.dtype and not (isinstance(actual, (int, float)) or
                                                   isinstance(expected, (int, float))):
        raise AssertionError(msg or f"assert_close: the dtypes differ: {a.dtype} and {e.dtype}")
    if rtol is None:
        rtol, atol = _TOLERANCES.get(np.result_type(a, e).type, (0.0, 0.0))
    with np.errstate(invalid="ignore"):
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    bad = ~close
    diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
    worst = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1)), a.shape)
    where = tuple(int(i) for i in worst)
    raise AssertionError(
        (f"{msg}: " if msg else "") + f"assert_close: {int(bad.sum())} of {a.size} elements are not close "
        f"(rtol={rtol}, atol={atol}); the greatest difference is {diff[worst]} at index {where} "
        f"({a[worst]} vs {e[worst]})")
