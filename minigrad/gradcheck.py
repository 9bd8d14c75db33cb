"""Gradient checking: compare backward's gradient with central differences, element by element.

For a function f of inputs x (Tensors) with output y, pick a random upstream gradient v of y's
shape and look at the scalar L(x) = sum(v * f(x)). Then for every element x_i of every input:

    analytic:  dL/dx_i from one call of y.backward(v)
    numeric:   (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)

and the check passes when |analytic - numeric| <= atol + rtol * |numeric| everywhere.

Why a random v and not y.sum(): softmax rows sum to 1, so d(sum softmax)/dx = 0 whatever the
backward computes; a backward that is off by a factor 2 would pass a sum-based check.
"""
import warnings

import numpy as np

from .autograd import no_grad


class GradcheckError(AssertionError):
    """The analytic gradient of some input disagrees with the numeric one (see the table)."""


class GradcheckWarning(UserWarning):
    pass


class InputReport:
    """How one input fared: its largest errors and the worst element."""

    def __init__(self, position, shape, analytic, numeric, atol, rtol):
        self.position, self.shape = position, shape
        self.analytic, self.numeric = analytic, numeric
        error = np.abs(analytic - numeric)
        self.passed = bool(np.all(error <= atol + rtol * np.abs(numeric)))
        # relative error where the gradient is not ~0 (near 0 only the absolute error means anything)
        relative = np.where(np.abs(numeric) > atol, error / np.maximum(np.abs(numeric), atol), 0.0)
        self.max_abs_error = float(error.max()) if error.size else 0.0
        self.max_rel_error = float(relative.max()) if error.size else 0.0
        # the worst element: the one furthest beyond its allowed error
        slack = error - (atol + rtol * np.abs(numeric))
        self.worst_index = np.unravel_index(int(np.argmax(slack)), shape) if error.size else ()
        self.worst_analytic = float(analytic[self.worst_index]) if error.size else 0.0
        self.worst_numeric = float(numeric[self.worst_index]) if error.size else 0.0


class GradcheckReport:
    """The result of `gradcheck(..., raise_exception=False)`: truthy when every input passed;
    `str(report)` is the table."""

    def __init__(self, inputs, atol, rtol, eps):
        self.inputs, self.atol, self.rtol, self.eps = inputs, atol, rtol, eps

    @property
    def passed(self):
        return all(r.passed for r in self.inputs)

    def __bool__(self):
        return self.passed

    def __str__(self):
        head = f"{'input':>5}  {'shape':<16} {'max abs err':>11}  {'max rel err':>11}  " \
               f"{'worst index':<14} {'analytic':>12}  {'numeric':>12}  result"
        lines = [head, "-" * len(head)]
        for r in self.inputs:
            lines.append(
                f"{r.position:>5}  {str(r.shape):<16} {r.max_abs_error:>11.3e}  {r.max_rel_error:>11.3e}  "
                f"{str(tuple(int(i) for i in r.worst_index)):<14} {r.worst_analytic:>12.6g}  "
                f"{r.worst_numeric:>12.6g}  {'ok' if r.passed else 'FAIL'}"
            )
        lines.append(f"pass rule: |a - n| <= atol + rtol * |n|   (atol={self.atol:g}, rtol={self.rtol:g}, "
                     f"eps={self.eps:g}; a = analytic, n = numeric)")
        return "\n".join(lines)

    __repr__ = __str__


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Check `fn`'s backward against central differences for every element of every input that
    requires grad.

    fn:     takes the inputs (Tensors) and returns a Tensor.
    inputs: a Tensor or a sequence of Tensors; use float64 (float32 rounding swamps eps).
    Returns a `GradcheckReport` (truthy if passed); raises `GradcheckError` with the report's
    table on failure unless raise_exception=False.
    """
    from .tensor import Tensor

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad, so there is nothing to check")
    for i in checked:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype}; central differences need float64 "
                "(use .double(), or model.double()) or the check measures rounding error",
                GradcheckWarning, stacklevel=2,
            )

    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    v = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)

    # analytic: one backward pass with upstream gradient v
    saved_grads = [inputs[i].grad for i in checked]
    for i in checked:
        inputs[i].grad = None
    if out.requires_grad:
        out.backward(v)
    analytic = [
        np.zeros(inputs[i].shape) if inputs[i].grad is None else inputs[i].grad.astype(np.float64) for i in checked
    ]
    for i, g in zip(checked, saved_grads):
        inputs[i].grad = g

    # numeric: nudge one element at a time, both ways
    def projected():
        with no_grad():
            return float(np.sum(np.asarray(fn(*inputs).data, dtype=np.float64) * v))

    reports = []
    for i, a in zip(checked, analytic):
        x = inputs[i].data
        numeric = np.zeros(x.shape)
        for index in np.ndindex(*x.shape):
            original = x[index]
            x[index] = original + eps
            up = projected()
            x[index] = original - eps
            down = projected()
            x[index] = original
            numeric[index] = (up - down) / (2 * eps)
        reports.append(InputReport(i, x.shape, a, numeric, atol, rtol))

    report = GradcheckReport(reports, atol, rtol, eps)
    if raise_exception and not report.passed:
        raise GradcheckError("gradient check failed\n" + str(report))
    return report
