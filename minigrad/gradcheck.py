"""Gradient checking: compare backward's gradient with central differences, element by element.

For a function f of inputs x (Tensors) with output y, pick a random upstream gradient v of y's
shape and look at the scalar L(x) = sum(v * f(x)). Then for every element x_i of every input:

    analytic:  dL/dx_i from one call of y.backward(v)
    numeric:   (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)

and the check passes when |analytic - numeric| <= atol + rtol * |numeric| everywhere.

Why a random v and not y.sum(): softmax rows sum to 1, so d(sum softmax)/dx = 0 whatever the
backward computes; a backward that is off by a factor 2 would pass a sum-based check.

When the check fails, the report also names the op to blame: `opcheck.find_bad_backward` checks
each op of fn on its own and finds the first whose backward disagrees with its forward.
`gradcheck(module, inputs)` checks a Module's parameters as well, one row per dotted name.
"""
import warnings

import numpy as np

from .autograd import no_grad


class GradcheckError(AssertionError):
    """The analytic gradient of some input disagrees with the numeric one (see the table)."""


class GradcheckWarning(UserWarning):
    pass


class InputReport:
    """How one input fared: its largest errors and the worst element.

    `name` labels the row (a module's parameter: its dotted name). When only some elements were
    checked (`checked` < the input's size), `numeric` is NaN at the others and the errors count the
    checked elements only."""

    def __init__(self, position, shape, analytic, numeric, atol, rtol, name=None):
        self.position, self.shape, self.name = position, shape, name
        self.analytic, self.numeric = analytic, numeric
        seen = ~np.isnan(numeric)
        self.checked, self.size = int(seen.sum()), int(numeric.size)
        error = np.where(seen, np.abs(analytic - numeric), 0.0)
        numeric0 = np.where(seen, numeric, 0.0)
        self.passed = bool(np.all(error <= atol + rtol * np.abs(numeric0)))
        # relative error where the gradient is not ~0 (near 0 only the absolute error means anything)
        relative = np.where(np.abs(numeric0) > atol, error / np.maximum(np.abs(numeric0), atol), 0.0)
        self.max_abs_error = float(error.max()) if error.size else 0.0
        self.max_rel_error = float(relative.max()) if error.size else 0.0
        # the worst element: the one furthest beyond its allowed error
        slack = np.where(seen, error - (atol + rtol * np.abs(numeric0)), -np.inf)
        self.worst_index = np.unravel_index(int(np.argmax(slack)), shape) if error.size else ()
        self.worst_analytic = float(analytic[self.worst_index]) if error.size else 0.0
        self.worst_numeric = float(numeric[self.worst_index]) if error.size else 0.0

    @property
    def label(self):
        return str(self.position) if self.name is None else self.name


class GradcheckReport:
    """The result of `gradcheck(..., raise_exception=False)`: truthy when every input passed;
    `str(report)` is the table. `location` is `find_bad_backward`'s answer (which op's backward
    is wrong) when the check failed or locate=True was asked, else None."""

    def __init__(self, inputs, atol, rtol, eps, location=None):
        self.inputs, self.atol, self.rtol, self.eps = inputs, atol, rtol, eps
        self.location = location

    @property
    def passed(self):
        return all(r.passed for r in self.inputs)

    def __bool__(self):
        return self.passed

    def __str__(self):
        width = max([5] + [len(r.label) for r in self.inputs])
        head = f"{'input':<{width}}  {'shape':<16} {'checked':>11}  {'max abs err':>11}  {'max rel err':>11}  " \
               f"{'worst index':<14} {'analytic':>12}  {'numeric':>12}  result"
        lines = [head, "-" * len(head)]
        for r in self.inputs:
            checked = str(r.size) if r.checked == r.size else f"{r.checked} of {r.size}"
            lines.append(
                f"{r.label:<{width}}  {str(r.shape):<16} {checked:>11}  {r.max_abs_error:>11.3e}  "
                f"{r.max_rel_error:>11.3e}  {str(tuple(int(i) for i in r.worst_index)):<14} "
                f"{r.worst_analytic:>12.6g}  {r.worst_numeric:>12.6g}  {'ok' if r.passed else 'FAIL'}"
            )
        lines.append(f"pass rule: |a - n| <= atol + rtol * |n|   (atol={self.atol:g}, rtol={self.rtol:g}, "
                     f"eps={self.eps:g}; a = analytic, n = numeric)")
        if any(r.checked < r.size for r in self.inputs):
            lines.append("checked: elements compared (a larger tensor is checked at elements drawn at random)")
        if self.location is not None:
            lines.append("each op checked on its own (minigrad.find_bad_backward):")
            lines.append("  " + str(self.location).replace("\n", "\n  "))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self):
        """The table for a notebook: one HTML row per input, failing rows in red, then the pass
        rule and (after a failure) the op to blame, as in the text."""
        import html

        cells = ["input", "shape", "checked", "max abs err", "max rel err", "worst index", "analytic",
                 "numeric", "result"]
        rows = ["<tr>" + "".join(f"<th>{c}</th>" for c in cells) + "</tr>"]
        for r in self.inputs:
            checked = str(r.size) if r.checked == r.size else f"{r.checked} of {r.size}"
            values = [r.label, str(r.shape), checked, f"{r.max_abs_error:.3e}", f"{r.max_rel_error:.3e}",
                      str(tuple(int(i) for i in r.worst_index)), f"{r.worst_analytic:.6g}",
                      f"{r.worst_numeric:.6g}", "ok" if r.passed else "FAIL"]
            style = "" if r.passed else ' style="background-color:#f8d0d0; font-weight:bold"'
            rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>")
        notes = str(self).split("\n")[len(self.inputs) + 2:]  # the lines under the text table
        return (f"<table>{''.join(rows)}</table>"
                f"<pre>{html.escape(chr(10).join(notes))}</pre>")


MODULE_MAX_ELEMENTS = 64  # a Module's check: at most this many elements of each tensor, drawn at random


def gradcheck(fn, inputs=(), *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0, max_elements=None,
              locate=None):
    """Check `fn`'s backward against central differences for every element of every input that
    requires grad.

    fn:     takes the inputs (Tensors) and returns a Tensor. Or a Module: then every parameter is
            checked too, each in a row of the table under its dotted name (`h.0.attn.c_attn.weight`),
            and the module's output is checked (its first, if it returns a tuple).
    inputs: a Tensor or a sequence of Tensors; use float64 (float32 rounding swamps eps), and for
            a Module `module.double()` and `module.eval()` (dropout would make it random).
    max_elements: check at most this many elements of each tensor, drawn at random (seeded); the
            table says how many. Default: every element, and for a Module at most 64 per tensor.
    locate: when the check fails (locate=None, the default), or always (True), also check each op
            of fn alone and name the first whose backward is wrong (`find_bad_backward`): the table
            then ends with the op, its shapes, its worst element and the line that called it.
            locate=False: never.
    Returns a `GradcheckReport` (truthy if passed); raises `GradcheckError` with the report's
    table on failure unless raise_exception=False.
    """
    from . import _arguments as check
    from .nn.module import Module
    from .tensor import Tensor

    signature = "gradcheck(fn, inputs=(), ...)"
    check.function(signature, "fn", fn)
    inputs = check.inputs(signature, inputs)
    names = [None] * len(inputs)
    if isinstance(fn, Module):
        fn, inputs, names = _module_case(fn, inputs)
        max_elements = MODULE_MAX_ELEMENTS if max_elements is None else max_elements
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad, so there is nothing to check")
    for i in checked:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {names[i] or i} is {inputs[i].dtype}; central differences need float64 "
                "(use .double(), or model.double()) or the check measures rounding error",
                GradcheckWarning, stacklevel=2,
            )

    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(out.shape).astype(out.dtype)

    # analytic: one backward pass with upstream gradient v
    saved_grads = [inputs[i].grad for i in checked]
    for i in checked:
        inputs[i].grad = None
    if out.requires_grad:
        out.backward(v)
    analytic = [
        np.zeros(inputs[i].shape) if inputs[i].grad is None else np.array(inputs[i].grad, dtype=np.float64)
        for i in checked
    ]
    for i, g in zip(checked, saved_grads):
        inputs[i].grad = g

    # numeric: nudge one element at a time, both ways
    def projected():
        with no_grad():
            return float(np.sum(np.asarray(fn(*inputs).numpy(), dtype=np.float64) * v))

    reports = []
    for i, a in zip(checked, analytic):
        x = inputs[i].numpy()  # (nudged in place)
        numeric = np.full(x.shape, np.nan)
        for index in _elements(x.shape, max_elements, rng):
            original = x[index]
            x[index] = original + eps
            up = projected()
            x[index] = original - eps
            down = projected()
            x[index] = original
            numeric[index] = (up - down) / (2 * eps)
        reports.append(InputReport(i, x.shape, a, numeric, atol, rtol, names[i]))

    report = GradcheckReport(reports, atol, rtol, eps)
    if locate or (locate is None and not report.passed):
        from .opcheck import find_bad_backward

        report.location = find_bad_backward(fn, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed)
    if raise_exception and not report.passed:
        raise GradcheckError("gradient check failed\n" + str(report))
    return report


def _elements(shape, max_elements, rng):
    """The index of every element of an array of `shape`, or of `max_elements` of them at random."""
    size = int(np.prod(shape, dtype=np.int64))
    if max_elements is None or size <= max_elements:
        return np.ndindex(*shape)
    picked = np.sort(rng.choice(size, int(max_elements), replace=False))
    return (np.unravel_index(int(j), shape) for j in picked)


def _module_case(module, inputs):
    """A Module's check as a function's: (fn, its inputs followed by every parameter, the row names)."""
    named = list(module.named_parameters())
    n = len(inputs)

    def fn(*args):
        out = module(*args[:n])
        return out[0] if isinstance(out, (tuple, list)) else out

    names = [None] * n + [name for name, _ in named]
    return fn, [*inputs, *(p for _, p in named)], names
