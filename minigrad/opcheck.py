"""Which op's backward is wrong: every op of a recorded graph, checked on its own.

`gradcheck` compares a whole function's gradient with central differences. When they disagree it
cannot say which of the function's ops is to blame: a wrong backward anywhere spoils every
gradient behind it. `find_bad_backward(fn, inputs)` runs fn once more, recording each op with the
arguments it was given and the line of your code that called it, then checks each op alone, in
the order the forward pass ran them. For op f, the arrays x it actually saw (made float64) and a
random upstream gradient v of each of its outputs:

    analytic:  f.backward(v)                              one call
    numeric:   (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),   L(x) = sum(v * f.forward(x))

The first op whose two disagree is the one to fix: every op before it passed, and its own
check involved nothing but its forward and its backward. Integer and bool inputs (indices,
targets, masks) and inputs that need no gradient are not checked. A big input is checked at
`max_elements` elements drawn at random (the report says how many), which bounds the work for a
whole GPT; a bug that spoils only a few elements may then go unseen.

An op that draws random numbers (dropout) draws the same ones at every call of its check: the
generator's state is reset before each call, and restored at the end to what it was before the
search (which then draws nothing from the caller's random stream).
"""
import inspect
import os
import sys

import numpy as np

from . import random as _random
from .autograd import _PACKAGE_DIR, Context, Function, SliceGrad, unbroadcast
from .grad_mode import enable_grad

_APPLY = Function.apply.__func__.__code__  # the code object of Function.apply, to spot its calls


# ----------------------------------------------------------------------------- recording
class OpCall:
    """One op as the forward pass ran it: the Context it left (inputs, needs_input_grad), the
    keyword arguments it was given (`params`), the line of user code that called it, and its place
    in the forward order."""

    def __init__(self, ctx, params, call_site, order):
        self.ctx, self.params, self.call_site, self.order = ctx, params, call_site, order

    @property
    def name(self):
        return self.ctx.fn.__name__


def _call_site(frame):
    """'file:line' of the innermost frame outside the minigrad package (as detect_anomaly names it)."""
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def record(fn, inputs):
    """Run fn(*inputs) with gradients on, and note every op it applies.

    Returns (output, {id(ctx): OpCall}). A profile hook (sys.setprofile: this thread only, the
    previous hook is put back) sees each call of `Function.apply` and its return value, so the
    ops themselves need no change and cost nothing extra when nobody is recording."""
    from . import _arguments as check

    check.function("record(fn, inputs)", "fn", fn)
    inputs = check.inputs("record(fn, inputs)", inputs)
    calls, pending = {}, {}

    def hook(frame, event, arg):
        if frame.f_code is not _APPLY:
            return
        if event == "call":
            pending[frame] = (dict(frame.f_locals.get("params", {})), _call_site(frame.f_back))
        elif event == "return" and frame in pending:
            params, site = pending.pop(frame)
            outs = arg if isinstance(arg, tuple) else (arg,)
            ctx = getattr(outs[0], "_ctx", None) if outs else None
            if ctx is not None and id(ctx) not in calls:
                calls[id(ctx)] = OpCall(ctx, params, site, len(calls))

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        with enable_grad():
            out = fn(*inputs)
    finally:
        sys.setprofile(previous)
    return out, calls


def _graph_contexts(roots):
    """The Contexts of every op that the tensors `roots` depend on (through recorded inputs)."""
    seen, stack, found = set(), list(roots), []
    while stack:
        t = stack.pop()
        ctx = getattr(t, "_ctx", None)
        if ctx is None or id(ctx) in seen or ctx.inputs is None:
            continue
        seen.add(id(ctx))
        found.append(ctx)
        stack.extend(ctx.inputs)
    return found


# ----------------------------------------------------------------------------- one op, alone
class InputCheck:
    """How one input of one op fared: elements checked, the worst one, analytic and numeric values."""

    def __init__(self, position, shape, indices, analytic, numeric, atol, rtol, note=None):
        self.position, self.shape, self.size = position, tuple(shape), int(np.prod(shape, dtype=np.int64))
        self.checked = len(indices)
        error = np.abs(analytic - numeric)
        slack = error - (atol + rtol * np.abs(numeric))
        self.passed = note is None and bool(np.all(slack <= 0))
        worst = int(np.argmax(slack)) if len(indices) else 0
        self.worst_index = tuple(int(i) for i in np.unravel_index(indices[worst], shape)) if len(indices) else ()
        self.analytic = float(analytic[worst]) if len(indices) else 0.0
        self.numeric = float(numeric[worst]) if len(indices) else 0.0
        self.note = note  # what went wrong before any number could be compared (a wrong shape, ...)

    @property
    def sampled(self):
        return self.checked < self.size


class OpCheck:
    """The check of one op: its OpCall, its input and output shapes, one InputCheck per checked
    input; `skipped` says why an op could not be checked (then `passed` is True)."""

    def __init__(self, call, inputs, input_shapes, output_shapes, skipped=None):
        self.call, self.inputs, self.skipped = call, inputs, skipped
        self.input_shapes, self.output_shapes = input_shapes, output_shapes

    @property
    def passed(self):
        return all(c.passed for c in self.inputs)

    @property
    def name(self):
        return self.call.name

    @property
    def call_site(self):
        return self.call.call_site

    @property
    def worst(self):
        """The first failing input's check (None if the op passed)."""
        return next((c for c in self.inputs if not c.passed), None)


def _float64(a):
    return np.array(a, dtype=np.float64) if a.dtype.kind == "f" else a


class _Replay:
    """Run one op's forward (and backward) again on arrays of our choosing, with the random
    generator in the same state at every call."""

    def __init__(self, call):
        self.cls, self.params, self.needs = call.ctx.fn, call.params, call.ctx.needs_input_grad
        self.rng_state = _random.get_state()

    def forward(self, arrays):
        _random.set_state(self.rng_state)
        ctx = Context(self.needs)
        ctx.fn = self.cls
        out = self.cls.forward(ctx, *arrays, **self.params)
        return ctx, (out if isinstance(out, tuple) else (out,))


def check_op(call, *, eps=1e-6, atol=1e-5, rtol=1e-3, max_elements=128, rng=None):
    """Check one recorded op's backward against central differences of its own forward."""
    if not isinstance(call, OpCall):
        raise TypeError(f"check_op(call, ...): call must be an OpCall, one of the values of record(fn, inputs)[1], "
                        f"got {type(call).__name__}")
    rng = np.random.default_rng(0) if rng is None else rng
    ctx = call.ctx
    arrays = [_float64(t.numpy()) for t in ctx.inputs]
    input_shapes = [a.shape for a in arrays]
    replay = _Replay(call)
    fresh, outs = replay.forward(arrays)
    outs = [np.asarray(o) for o in outs]
    output_shapes = [o.shape for o in outs]
    if any(o.dtype.kind == "f" and o.dtype != np.float64 for o in outs) or not any(o.dtype.kind == "f" for o in outs):
        return OpCheck(call, [], input_shapes, output_shapes,
                       skipped=f"its output is {outs[0].dtype} for float64 inputs")
    v = [rng.standard_normal(o.shape) if o.dtype.kind == "f" else np.zeros(o.shape) for o in outs]

    def projected(xs):  # L = sum(v * forward(x)), the scalar whose derivative backward gives
        return sum(float(np.sum(o * w)) for o, w in zip(replay.forward(xs)[1], v) if o.dtype.kind == "f")

    grads = call.ctx.fn.backward(fresh, *v)
    grads = grads if isinstance(grads, tuple) else (grads,)
    checks = []
    for i, x in enumerate(arrays):
        if not (ctx.needs_input_grad[i] and x.dtype.kind == "f"):
            continue
        indices = np.arange(x.size) if x.size <= max_elements else np.sort(rng.choice(x.size, max_elements,
                                                                                        replace=False))
        analytic, note = _analytic(grads, i, x, len(arrays))
        numeric = np.zeros(len(indices))
        xs = list(arrays)
        xs[i] = x.copy()
        flat = xs[i].reshape(-1) if xs[i].flags.c_contiguous else None
        for k, j in enumerate(indices):
            where = (j,) if flat is not None else np.unravel_index(j, x.shape)
            target = flat if flat is not None else xs[i]
            original = target[where]
            target[where] = original + eps
            up = projected(xs)
            target[where] = original - eps
            down = projected(xs)
            target[where] = original
            numeric[k] = (up - down) / (2 * eps)
        a = analytic.reshape(-1)[indices] if analytic is not None else np.full(len(indices), np.nan)
        checks.append(InputCheck(i, x.shape, indices, a, numeric, atol, rtol, note))
    _random.set_state(replay.rng_state)
    return OpCheck(call, checks, input_shapes, output_shapes)


def _analytic(grads, i, x, n_inputs):
    """The gradient backward returned for input i, as the autograd walk would use it (a SliceGrad
    made dense, a broadcast-shaped one summed down), in float64; or (None, why it is unusable)."""
    if len(grads) != n_inputs:
        return None, f"backward returned {len(grads)} gradients for {n_inputs} inputs"
    g = grads[i]
    if g is None:
        return np.zeros(x.shape), None  # None means zero; wrong only if the numeric gradient is not
    if isinstance(g, SliceGrad):
        g = g.dense(np.zeros(x.shape))
    g = np.asarray(g, dtype=np.float64)
    if g.shape != x.shape:
        try:
            g = unbroadcast(g, x.shape)
        except ValueError:
            return None, f"backward returned a gradient of shape {g.shape} for an input of shape {x.shape}"
    return g, None


# ----------------------------------------------------------------------------- the whole graph
class Location:
    """The result of `find_bad_backward`: `bad` is the first op (an OpCheck) in forward order whose
    backward disagrees with its forward, or None; `checked` every op checked, in forward order
    (the search stops at the first bad one); `str()` says it in words."""

    def __init__(self, checked, bad, unrecorded, atol, rtol):
        self.checked, self.bad, self.unrecorded = checked, bad, unrecorded
        self.atol, self.rtol = atol, rtol

    def __bool__(self):
        """True when no bad op was found."""
        return self.bad is None

    def __str__(self):
        if self.bad is None:
            skipped = [c for c in self.checked if c.skipped]
            text = (f"each of the {len(self.checked)} ops in the graph has a backward that agrees with its own "
                    "forward")
            if skipped:
                text += f" ({len(skipped)} could not be checked: " + "; ".join(
                    f"{c.name} at {c.call_site}: {c.skipped}" for c in skipped) + ")"
            return text + (".\nIf the whole function's gradient is still wrong, it is lost between ops: does "
                           "the function compute with values outside the graph (.numpy(), .data, .item(), "
                           "detach(), no_grad()), draw random numbers, or sit on a kink (relu at 0, a tie in "
                           "max)?")
        return _describe(self.bad, len(self.checked) - 1, self.atol, self.rtol)

    __repr__ = __str__


def _backward_source(cls):
    """'file:line' where cls.backward is defined."""
    try:
        return f"{inspect.getsourcefile(cls.backward)}:{inspect.getsourcelines(cls.backward)[1]}"
    except (OSError, TypeError):
        return "<unknown>"


def _describe(op, before, atol, rtol):
    worst = op.worst
    shapes = ", ".join(str(s) for s in op.input_shapes)
    lines = [
        f"the backward of {op.name} is wrong: its gradient for input {worst.position} disagrees with central "
        f"differences of its own forward",
        f"  called at   {op.call_site}",
        f"  shapes      inputs {shapes} -> output {', '.join(str(s) for s in op.output_shapes)}",
    ]
    if worst.note is not None:
        lines.append(f"  problem     {worst.note}")
    else:
        error = abs(worst.analytic - worst.numeric)
        lines.append(f"  worst       input {worst.position} at {worst.worst_index}: analytic {worst.analytic:.6g}, "
                     f"numeric {worst.numeric:.6g} (|a - n| = {error:.3g} > {atol:g} + {rtol:g} |n|)")
    for c in op.inputs:
        verdict = "ok" if c.passed else "WRONG"
        how = f"{c.checked} of {c.size} elements, sampled at random" if c.sampled else f"all {c.size} elements"
        lines.append(f"  input {c.position}     {str(c.shape):<16} {how}: {verdict}")
    rule = getattr(op.call.ctx.fn, "rule", None)
    lines.append(f"  backward    {op.name}.backward at {_backward_source(op.call.ctx.fn)}"
                 + (f"\n  rule        {rule}" if rule else ""))
    lines.append(f"  the {before} op{'s' if before != 1 else ''} before it in the forward pass "
                 f"{'have backwards that agree' if before != 1 else 'has a backward that agrees'} with their forwards")
    return "\n".join(lines)


def find_bad_backward(fn, inputs=(), *, eps=1e-6, atol=1e-5, rtol=1e-3, max_elements=128, seed=0):
    """Run fn(*inputs) and check each of its ops' backward alone, in forward order; stop at the
    first that disagrees with central differences of its own forward. Returns a `Location`:
    `print(find_bad_backward(model, [x]))` names the op, the input, the shapes, the worst element
    with its analytic and numeric values, and the line of your code that called the op.

    fn:      a function or a Module; it may return a Tensor or a tuple of them (GPT's logits, loss).
    inputs:  a Tensor or a sequence of arguments for fn. Model weights and inputs should be float64
             (the ops' arrays are checked in float64 either way, but a float32 forward feeds them
             rounded values).
    max_elements: elements checked per input of each op; larger inputs are sampled at random.
    """
    from . import _arguments as check

    signature = "find_bad_backward(fn, inputs=(), ...)"
    check.function(signature, "fn", fn)
    inputs = check.inputs(signature, inputs)
    state = _random.get_state()
    try:
        return _search(fn, inputs, eps, atol, rtol, max_elements, seed)
    finally:
        _random.set_state(state)  # a check draws nothing from the caller's random stream


def _search(fn, inputs, eps, atol, rtol, max_elements, seed):
    from .tensor import Tensor

    out, calls = record(fn, inputs)
    roots = [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, Tensor)]
    contexts = _graph_contexts(roots)
    recorded = sorted((calls[id(c)] for c in contexts if id(c) in calls), key=lambda call: call.order)
    unrecorded = len(contexts) - len(recorded)
    rng = np.random.default_rng(seed)
    checked = []
    for call in recorded:
        if not any(call.ctx.needs_input_grad):
            continue
        op = check_op(call, eps=eps, atol=atol, rtol=rtol, max_elements=max_elements, rng=rng)
        checked.append(op)
        if not op.passed:
            return Location(checked, op, unrecorded, atol, rtol)
    return Location(checked, None, unrecorded, atol, rtol)
