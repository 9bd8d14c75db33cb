"""minigrad.compile: record a training step once, then replay it without the Python around the ops.

    step = minigrad.compile(train_step)      # or @minigrad.compile above `def train_step(x, y)`
    for x, y in batches:
        loss = step(x, y)                     # same results as train_step(x, y), bit for bit

Why. In eager mode (the default) every op of a step pays a fixed cost in Python before its kernel
runs: the modules' `forward`, `Function.apply` making Tensors and recording the graph, the
backward walk sorting the graph and checking versions. For a small model that cost is most of the
step. Yet a training step does the same thing every time: the same ops, on arrays of the same
shapes, in the same order. So, as tinygrad's `TinyJit`, MLX's `mx.compile` and (with much more
machinery) `torch.compile` do, minigrad can write the step down once and then only redo the work:

    call 1   runs `train_step` as written (eager): kernels compile, optimizers create their state.
    call 2   runs it eagerly again while a `Recorder` writes down a `Tape`:
               - each op: its Function, which values it read, its parameters (`_record_op`);
               - each backward: the order the walk visits the values in (`_record_backward`);
               - in-place writes (`x += y` under no_grad, `p.data -= ...`) (`record_write`);
               - whole calls that only touch arrays (optimizer.step(), zero_grad(),
                 clip_grad_norm_, an LR schedule's step): replayed as calls (`replayed_as_a_call`).
    call 3+  if the arguments have the shapes, dtypes and values (for non-tensors) of call 2, the
             tape is replayed (`Tape.replay`): each op's `forward` and `backward` on plain arrays,
             with no Tensor, no graph and no walk to build. Otherwise the step runs eagerly once
             more and a tape is recorded for the new arguments.

A replay runs the very functions the eager step runs, on the same arrays, in the same order, so its
results are the same bits (the tests check 100 steps). What it skips is the Python *around* them.

What a replay cannot see, and so what the step must not do (the recorder refuses, the step then
stays eager, and a warning gives the reason in one line):
- read a value into Python (`loss.item()`, `if x.sum() > 0:`, `print(t)`): the replay would not
  run that Python again. Return the tensor and read it outside the step;
- draw random numbers outside an op (`minigrad.randn(...)` inside the step). Dropout is an op and
  draws inside its forward, so it draws fresh numbers at each replay, as in eager mode;
- replace an array behind a tensor (`p.data = other`), or take gradients with `minigrad.grad`.
Python control flow that depends on anything but the arguments (a global counter, the clock, a
module switched to eval()) is frozen at what it was during the recording, as in TinyJit: call
`step.reset()` after changing it. Anomaly mode (`detect_anomaly`) always runs eagerly. A module hook
(`register_forward_hook`, ...) is Python a replay would not run: a step that calls a module with
hooks stays eager (with a warning), and adding or removing a hook makes every step record again.
"""
import collections.abc
import functools
import threading
import warnings

import numpy as np

from . import autograd
from .grad_mode import _modes
from .tensor import Tensor

__all__ = ["compile", "CompiledStep", "Tape", "replayed_as_a_call"]


_hooks_epoch = [0]  # bumped when a module hook is added or removed (hooks_changed)


def hooks_changed():
    """A module hook was added or removed (nn.Module calls this): a tape recorded before may now be
    wrong (a replay calls no hook), so each CompiledStep forgets its tapes at its next call."""
    _hooks_epoch[0] += 1


class CaptureRefused(Exception):
    """Raised inside a recording when the step does something a replay could not redo."""


def compile(fn=None, *, name=None):  # noqa: A001  (minigrad.compile, as torch.compile)
    """`fn` as a `CompiledStep`: the same results, with the Python around its ops run only while
    it is recorded (see this module's docstring). Usable as `@minigrad.compile` too."""
    if fn is None:
        return functools.partial(compile, name=name)
    return CompiledStep(fn, name=name)


# ----------------------------------------------------------------------------- the step
class CompiledStep:
    """A function whose calls replay a recorded tape where they can (see the module docstring).

    `tapes`: {signature of the arguments: Tape}; `stats`: how many calls ran eagerly, were recorded,
    were replayed; `reasons`: why a signature could not be recorded. `reset()` forgets every tape."""

    MAX_TAPES = 8  # signatures to keep tapes for; past this, new signatures run eagerly

    def __init__(self, fn, name=None):
        functools.update_wrapper(self, fn, updated=())  # (its name and docstring; not a module's attributes)
        self.fn, self.name = fn, name or getattr(fn, "__qualname__", "step")
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        """Forget every tape: the next calls run eagerly and record again."""
        self._forget()
        self.stats = {"eager": 0, "recorded": 0, "replayed": 0}

    def _forget(self):
        self.tapes, self.reasons, self._seen = {}, {}, set()
        self._hooks_epoch = _hooks_epoch[0]

    def __call__(self, *args, **kwargs):
        if _modes.anomaly_enabled or _modes.recorder is not None:
            # detect_anomaly() checks op by op; inside another step's recording, that recorder sees the ops
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        if self._hooks_epoch != _hooks_epoch[0]:  # a module hook was added or removed since the tapes were made
            with self._lock:
                self._forget()
        key = _signature(args, kwargs)
        tape = self.tapes.get(key)
        if tape is not None:
            self.stats["replayed"] += 1
            return tape.replay(args, kwargs)
        with self._lock:
            first_call = key not in self._seen
            self._seen.add(key)
            if len(self._seen) > 4 * self.MAX_TAPES:  # (and forget them: the set must not grow forever)
                self._seen = set()
                self._refuse("changing", "its arguments differ at almost every call (a number that changes, "
                                         "such as a step count or a learning rate? pass it as a tensor)")
        if first_call or key is None or key in self.reasons or len(self.tapes) >= self.MAX_TAPES:
            if key is None:
                self._refuse(key, "an argument is of a kind a replay cannot take (tensors, arrays, numbers, "
                                  "strings, None and tuples of them can be replayed)")
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        return self._record(key, args, kwargs)

    def _record(self, key, args, kwargs):
        """Run the step eagerly while a Recorder writes it down; keep the tape unless it refused."""
        recorder = Recorder(args, kwargs)
        _modes.recorder = recorder
        try:
            result = self.fn(*args, **kwargs)
        finally:
            _modes.recorder = None
        self.stats["recorded"] += 1
        try:
            if recorder.refused:
                raise CaptureRefused(recorder.refused)
            tape = recorder.finish(result)
        except CaptureRefused as refused:
            self._refuse(key, str(refused))
        else:
            with self._lock:
                self.tapes[key] = tape
        return result

    def _refuse(self, key, reason):
        """Note why calls with this signature run eagerly, and say it once, in one line."""
        if key in self.reasons:
            return
        self.reasons[key] = reason
        warnings.warn(f"minigrad.compile: {self.name} runs eagerly: {reason}", RuntimeWarning, stacklevel=3)


def _signature(args, kwargs):
    """What must be equal for a tape to apply: each tensor's shape, dtype and requires_grad, each
    other argument's value; and the grad mode. None if an argument is of a kind a replay cannot take."""
    def part(x):
        if isinstance(x, Tensor):
            return ("tensor", x._data.shape, x._data.dtype.str, x._requires_grad)
        if isinstance(x, np.ndarray):
            return ("array", x.shape, x.dtype.str)
        if x is None or isinstance(x, (bool, int, float, str)):
            return ("value", type(x).__name__, x)
        if isinstance(x, tuple):
            inner = tuple(part(y) for y in x)
            return None if None in inner else ("tuple", inner)
        return None

    parts = [part(a) for a in args] + [part(v) for _, v in sorted(kwargs.items())]
    if any(p is None for p in parts):
        return None
    return tuple(parts), tuple(sorted(kwargs)), _modes.grad_enabled


def _flat_arguments(args, kwargs):
    """The tensors and arrays among the arguments, in a fixed order (tuples opened)."""
    out = []

    def visit(x):
        if isinstance(x, (Tensor, np.ndarray)):
            out.append(x)
        elif isinstance(x, tuple):
            for y in x:
                visit(y)

    for a in args:
        visit(a)
    for k in sorted(kwargs):
        visit(kwargs[k])
    return out


# ----------------------------------------------------------------------------- recording
# Where an op reads an input from at replay time:
VALUE, LIVE, GRAD, NUMBER = 0, 1, 2, 3  # values[i] (an argument or an op's result), tensor._data, leaf._grad._data,
#                                        a Python number passed to an op (forward gets it as it is: autograd.py)


def _stops_on_refusal(method):
    """A Recorder hook that, when the step does something a replay could not redo, stops recording
    (the rest of the call runs plain eager) and notes why, rather than raising into the step."""

    @functools.wraps(method)
    def hook(self, *args):
        try:
            return method(self, *args)
        except CaptureRefused as refused:
            self.refused = str(refused)
            _modes.recorder = None
        return None

    return hook


class Recorder:
    """Writes down what one eager call of the step does. Installed as `_modes.recorder` (per
    thread) while the call runs; autograd, Tensor and the optimizers call its methods."""

    def __init__(self, args, kwargs):
        self.n_values = 0
        self.slot_of = {}  # id(Tensor) -> value slot, for arguments and op results
        self.array_slot = {}  # id(array) -> value slot: the same memory, under another Tensor
        self.keep = []  # every object whose id() is a key above, kept alive while recording
        self.events = []  # ("op", OpRecord) | ("backward", plan) | ("write", target, source) | ("call", ...)
        self.grad_of = {}  # id(grad Tensor) -> the leaf it is the .grad of (made by a recorded backward)
        self.reads = {}  # id(array) -> (slot, array, where): values read into Python
        self.ctx_op = {}  # id(ctx) -> index of its OpRecord
        self.refused = None  # why this call cannot be replayed (recording stopped there)
        self.arguments = []  # value slots of the tensor arguments, in _flat_arguments order
        for x in _flat_arguments(args, kwargs):
            self.arguments.append(self._new_slot(x if isinstance(x, Tensor) else None, x if isinstance(
                x, np.ndarray) else x._data))
        self.n_ops = 0

    def _new_slot(self, tensor, array):
        slot = self.n_values
        self.n_values += 1
        if tensor is not None:
            self.slot_of[id(tensor)] = slot
        self.array_slot[id(array)] = slot
        self.keep.append((tensor, array))
        return slot

    def source(self, t):
        """Where the tensor `t` an op reads is found at replay: (VALUE, slot), (GRAD, leaf) or (LIVE, t)."""
        slot = self.slot_of.get(id(t))
        if slot is not None:
            return VALUE, slot
        slot = self.array_slot.get(id(t._data))
        if slot is not None:  # another Tensor over the same array (detach(), .data, Tensor(array))
            self.reads.pop(id(t._data), None)
            return VALUE, slot
        leaf = self.grad_of.get(id(t))
        if leaf is not None:
            return GRAD, leaf
        if "python_number" in t.__dict__:
            return NUMBER, t.python_number
        self.reads.pop(id(t._data), None)
        return LIVE, t  # a weight, a buffer, a constant made inside the step

    def refuse(self, reason):
        """Stop recording: the step did something a replay could not redo (the call goes on eagerly)."""
        self.refused = reason
        _modes.recorder = None

    @_stops_on_refusal
    def record_op(self, cls, inputs, params, outputs, needs):
        sources = [self.source(t) for t in inputs]
        param_slots = {}
        for k, v in params.items():
            if isinstance(v, np.ndarray) and id(v) in self.reads:
                slot = self.reads.pop(id(v))[0]
                if slot is not None:  # (a value of the step passed as a parameter; else a weight's or buffer's array)
                    param_slots[k] = slot
            elif isinstance(v, np.ndarray) and id(v) in self.array_slot:
                param_slots[k] = self.array_slot[id(v)]
            elif isinstance(v, np.ndarray) and self._derived(v):
                raise CaptureRefused(f"{cls.__name__} takes a parameter {k!r} computed from the step's tensors "
                                     "outside an op, which a replay would not recompute")
        index = self.n_ops
        self.n_ops += 1
        out_slots = []
        for o in outputs:
            out_slots.append(self._new_slot(o, o._data))
            if o._ctx is not None:
                self.ctx_op[id(o._ctx)] = index
        self.events.append(("op", OpRecord(cls, sources, params, param_slots, out_slots, needs)))

    def _derived(self, array):
        """Does `array` share memory with a value of the step (but is not one of them)?"""
        return any(np.may_share_memory(array, a) for _, a in self.keep if isinstance(a, np.ndarray))

    @_stops_on_refusal
    def record_read(self, t, array, what):
        """t's values were read into Python (t.numpy(), np.asarray(t), t.item(), ...)."""
        if array is None:
            raise CaptureRefused(f"it reads a tensor's value into Python ({what}); return the tensor and read it "
                                 "outside the step")
        slot = self.slot_of.get(id(t), self.array_slot.get(id(t._data)))
        if slot is None and id(t) in self.grad_of:
            raise CaptureRefused(f"it reads a gradient's values into Python ({what}) outside an op")
        # Fine if the very array reaches an op (as an input or a parameter: record_op, source), which
        # then reads it afresh at each replay; anything computed from it in Python would be frozen.
        self.reads[id(array)] = (slot, array, what)

    @_stops_on_refusal
    def record_grad_set(self, tensor, value):
        """tensor.grad = value: `p.grad = None` is replayed (as zero_grad is); any other value is not."""
        if value is not None:
            raise CaptureRefused("it sets .grad to a tensor (only p.grad = None is replayed)")
        self.events.append(("call", _clear_grad, (tensor,), {}))

    @_stops_on_refusal
    def record_write(self, target, new):
        """target._data[...] = new._data, outside the graph (an in-place op under no_grad, p.data += ...)."""
        self.events.append(("write", self.source(target), self.source(new)))

    @_stops_on_refusal
    def record_backward(self, root, grad):
        """Called before the walk runs (the graph is still whole); returns the plan for after_backward."""
        if grad is not None:
            raise CaptureRefused("backward(gradient) is not replayed; call backward() on a scalar loss")
        plan = self._backward_plan(root)
        self.events.append(("backward", plan))
        return plan

    def _backward_plan(self, root):
        """The walk of autograd._walk from `root`, written down: one entry per tensor it visits."""
        order = autograd._topological_order([root])
        position = {id(node): i for i, node in enumerate(order)}
        plan = []
        for node in reversed(order):
            kind, where = self.source(node)
            if kind != VALUE and node._ctx is not None:
                raise CaptureRefused("the graph holds a tensor made outside the recorded ops")
            ctx = node._ctx
            leaf = node if (ctx is None and node._requires_grad) else None
            if ctx is not None and node._retains_grad:
                raise CaptureRefused("retain_grad() on a result is not replayed")
            if leaf is not None and kind == VALUE:
                raise CaptureRefused("an argument of the step requires grad; a replay gives gradients only to "
                                     "weights and other tensors made outside the step")
            if ctx is None:
                plan.append((position[id(node)], where if kind == VALUE else None, leaf, None, None, None))
                continue
            op = self.ctx_op.get(id(ctx))
            if op is None:
                raise CaptureRefused(f"the graph holds {ctx.name}, an op run before the step")
            outputs = None
            if ctx.outputs is not None:
                outputs = (autograd._output_index(ctx, node), len(ctx.outputs), ctx.output_shapes)
            inputs = [(position.get(id(t)), self.source(t)) for t in ctx.inputs]
            plan.append((position[id(node)], where, None, op, outputs, inputs))
        counts = {}
        for entry in plan:
            if entry[4] is not None:
                counts[entry[3]] = counts.get(entry[3], 0) + 1
        return BackwardPlan(position[id(root)], self.source(root)[1], plan, counts)

    def after_backward(self, plan):
        """The walk has run: the .grad tensors it made are values later ops may read (p.grad)."""
        for entry in plan.entries:
            leaf = entry[2]
            if leaf is not None and leaf._grad is not None:
                self.grad_of[id(leaf._grad)] = leaf
                self.keep.append((leaf._grad, None))

    @_stops_on_refusal
    def record_call(self, fn, args, kwargs):
        self.events.append(("call", fn, args, kwargs))

    def finish(self, result):
        if self.reads:
            what = next(iter(self.reads.values()))[2]
            raise CaptureRefused(f"it computes with a tensor's values in Python ({what}) outside an op, which a "
                                 "replay would not redo")
        return Tape(self.n_values, self.arguments, self.events, self._result_spec(result))

    def _result_spec(self, result):
        if isinstance(result, Tensor):
            kind, where = self.source(result)
            if kind == LIVE:
                raise CaptureRefused("it returns a tensor that no recorded op made")
            return ("tensor", kind, where)
        if result is None:
            return ("none",)
        if isinstance(result, (tuple, list)):
            return (type(result), [self._result_spec(r) for r in result])
        raise CaptureRefused(f"it returns a {type(result).__name__}; a replayed step returns tensors (or "
                             "tuples of them, or None)")


class OpRecord:
    """One op of the tape: `cls.forward(ctx, *inputs, **params)` -> the values in `out_slots`."""

    __slots__ = ("cls", "sources", "params", "param_slots", "out_slots", "needs")

    def __init__(self, cls, sources, params, param_slots, out_slots, needs):
        self.cls, self.sources, self.params, self.param_slots = cls, sources, params, param_slots
        self.out_slots, self.needs = out_slots, needs


class BackwardPlan:
    """One backward of the tape: root (its walk position and value slot) and, in the walk's order,
    (position, value slot, leaf or None, op index or None, (output index, count, shapes) or None,
    [(input's position, its source)])."""

    __slots__ = ("root_position", "root_slot", "entries", "counts")

    def __init__(self, root_position, root_slot, entries, counts):
        self.root_position, self.root_slot, self.entries = root_position, root_slot, entries
        self.counts = counts  # op index -> how many of its outputs the walk visits (ops with several)


# ----------------------------------------------------------------------------- replaying
def _array(values, source):
    kind, where = source
    if kind == VALUE:
        return values[where]
    if kind == LIVE:
        return where._data
    if kind == NUMBER:
        return where
    return where._grad._data  # (GRAD: the leaf's .grad, made by this replay's backward)


class Tape:
    """What one call of the step did, to be done again on new arguments (see the module docstring)."""

    def __init__(self, n_values, arguments, events, result):
        self.n_values, self.arguments, self.events, self.result = n_values, arguments, events, result

    def replay(self, args, kwargs):
        values = [None] * self.n_values
        for slot, x in zip(self.arguments, _flat_arguments(args, kwargs)):
            values[slot] = x._data if isinstance(x, Tensor) else x
        ctxs = []
        for event in self.events:
            kind = event[0]
            if kind == "op":
                ctxs.append(_replay_op(event[1], values))
            elif kind == "backward":
                _replay_backward(event[1], values, ctxs)
            elif kind == "write":
                _array(values, event[1])[...] = _array(values, event[2])
            else:  # "call"
                event[1](*event[2], **event[3])
        return _result(self.result, values)

    def __str__(self):
        lines = [f"Tape: {sum(e[0] == 'op' for e in self.events)} ops, {self.n_values} values"]
        names = {VALUE: "%{}".format, LIVE: lambda t: f"const{tuple(t._data.shape)}", GRAD: lambda t: "p.grad",
                 NUMBER: repr}
        for e in self.events:
            if e[0] == "op":
                r = e[1]
                ins = ", ".join(names[k](w) for k, w in r.sources)
                outs = ", ".join(f"%{s}" for s in r.out_slots)
                lines.append(f"  {outs} = {r.cls.__name__}({ins})")
            elif e[0] == "backward":
                lines.append(f"  backward from %{e[1].root_slot} ({len(e[1].entries)} tensors)")
            elif e[0] == "write":
                lines.append(f"  write into {names[e[1][0]](e[1][1])}")
            else:
                lines.append(f"  call {getattr(e[1], '__qualname__', e[1])}")
        return "\n".join(lines)


def _replay_op(record, values):
    ctx = autograd.Context(record.needs)
    ctx.fn = record.cls
    arrays = [values[w] if k == VALUE else _array(values, (k, w)) for k, w in record.sources]
    params = record.params
    if record.param_slots:
        params = {**params, **{k: values[s] for k, s in record.param_slots.items()}}
    data = record.cls.forward(ctx, *arrays, **params)
    if isinstance(data, tuple):
        for slot, a in zip(record.out_slots, data):
            values[slot] = a if isinstance(a, np.ndarray) else np.asarray(a)
    else:
        values[record.out_slots[0]] = data if isinstance(data, np.ndarray) else np.asarray(data)
    return ctx


def _replay_backward(plan, values, ctxs):
    """autograd._walk over the written-down plan: the same backward calls, the same sums in the
    same order (so the same bits), keyed by walk position instead of by Tensor."""
    root = values[plan.root_slot]
    grads = {plan.root_position: np.ones_like(root)}
    owned = set()
    waiting = {}
    for position, slot, leaf, op, outputs, inputs in plan.entries:
        g = grads.pop(position, None)
        if leaf is not None:
            if g is not None:
                autograd._store_grad(leaf, g, position in owned)
            continue
        if op is None:
            continue
        ctx = ctxs[op]
        if outputs is None:
            if g is None:
                continue
            output_grads = (g,)
        else:
            index, count, shapes = outputs
            entry = waiting.get(op)
            if entry is None:
                entry = waiting[op] = [[None] * count, plan.counts[op]]
            entry[0][index] = g
            entry[1] -= 1
            if entry[1] > 0 or all(x is None for x in entry[0]):
                continue
            output_grads = [np.zeros(s, d) if x is None else x for (s, d), x in zip(shapes, entry[0])]
        input_grads = ctx.fn.backward(ctx, *output_grads)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for i, needed in enumerate(ctx.needs_input_grad):
            if needed and input_grads[i] is not None:
                input_position, source = inputs[i]
                autograd._accumulate_at(grads, owned, input_position, _array(values, source), input_grads[i], ctx, i)


def _result(spec, values):
    if spec[0] == "tensor":
        return Tensor._from_op(_array(values, spec[1:]), False)
    if spec[0] == "none":
        return None
    return spec[0](_result(s, values) for s in spec[1])


# ----------------------------------------------------------------------------- whole calls
def _clear_grad(tensor):
    tensor._grad = None


def replayed_as_a_call(fn):
    """Decorator for functions that change arrays directly, outside the ops (an optimizer's step,
    zero_grad, clip_grad_norm_): while a step is recorded, a call is written down whole (and the
    ops it runs are not), so that each replay calls it again with the same arguments."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        recorder = _modes.recorder
        if recorder is None:
            return fn(*args, **kwargs)
        # an iterator (model.parameters()) would be used up by this call: each replay gets the list
        args = tuple(list(a) if isinstance(a, collections.abc.Iterator) else a for a in args)
        kwargs = {k: list(v) if isinstance(v, collections.abc.Iterator) else v for k, v in kwargs.items()}
        recorder.record_call(fn, args, kwargs)
        _modes.recorder = None
        try:
            return fn(*args, **kwargs)
        finally:
            _modes.recorder = recorder

    return wrapper
