"""Autograd: how an op records itself, and the walk that runs the graph backwards.

Every op is a `Function` with two static methods side by side:

    forward(ctx, *arrays, **params) -> array        numpy arrays in, numpy array out
    backward(ctx, grad) -> one array (or None) per input array

An op may also return a tuple of arrays (split, unbind): it then gives a tuple of tensors, and its
backward receives one gradient per output, `backward(ctx, *grads)`, once all of them are known
(zeros for an output that the loss does not use).

`Function.apply(*tensors, **params)` runs `forward` on the tensors' arrays and, when a gradient is
needed, remembers the op, its inputs and the `ctx` on the output tensor. `backward(tensor)` visits
those records in reverse topological order and calls each `backward`.

Broadcasting is handled here, once: `backward` may return a gradient shaped like the broadcast
result, and `unbroadcast` sums it back to the input's shape (broadcasting copies a value to many
places, so its gradient adds the copies up).

Both run once per op, so they are written for the usual case: `apply` reads each input once and
leaves the checks of detect_anomaly() to `_apply_checked`; the walk adds a gradient that already
has its input's shape and dtype as it is (`_accumulate`), and fits the others first (`_fitted`).
"""
import functools
import importlib
import os
import traceback
import weakref

import numpy as np

from .grad_mode import (  # noqa: F401  (re-exported: autograd.no_grad and the others keep working)
    AnomalyError,
    _modes,
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
)


def __getattr__(name):
    """`autograd._grad_enabled` and `autograd._anomaly_mode`, read-only: the current thread's
    modes, for code written when they were one module-level flag each."""
    if name == "_grad_enabled":
        return _modes.grad_enabled
    if name == "_anomaly_mode":
        return _modes.anomaly_enabled
    if name == "functional":  # torch.autograd.functional (jacobian, hessian): imported on first use
        return importlib.import_module(".jacobians", __package__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- anomaly mode's checks
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_call_site():
    """'file:line' of the innermost stack frame outside the minigrad package."""
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def _check_finite(ctx, arrays, stage):
    for a in arrays:
        a = a.value if isinstance(a, SliceGrad) else a
        if a is not None and a.dtype.kind == "f" and not np.isfinite(a).all():
            shapes = getattr(ctx, "input_shapes", None) or [t.shape for t in ctx.inputs or ()]
            where = getattr(ctx, "call_site", "an unknown line (its forward ran outside detect_anomaly)")
            raise AnomalyError(
                f"{ctx.name} {stage} produced {'NaN' if np.isnan(a).any() else 'Inf'} "
                f"(input shapes: {', '.join(str(s) for s in shapes)}); the op was called at {where}"
            )


# ----------------------------------------------------------------------------- Function
class Context:
    """Scratch space an op's forward leaves for its backward (as in `torch.autograd.Function`).

    `save_for_backward(*arrays)` keeps arrays; `saved_tensors` returns them. Any other attribute
    (`ctx.axis = 1`) works too. `needs_input_grad[i]` tells whether input i wants a gradient."""

    __slots__ = ("fn", "inputs", "versions", "outputs", "output_version", "saved_tensors", "needs_input_grad",
                 "__dict__")

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()
        self.outputs = None  # weak references to the outputs of an op with several

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays

    @property
    def name(self):
        return self.fn.__name__


class Function:
    """Base class of every op. Subclass it, write `forward` and `backward`, call `apply`.

    Example, a learner's own op (the README shows it gradient-checked):

        class Cube(minigrad.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 3 * x ** 2          # d(x^3)/dx = 3x^2

        y = Cube.apply(t)

    A forward that returns a tuple of arrays makes `apply` return a tuple of tensors; backward
    then takes one gradient per output: `backward(ctx, *grads)`.

    An op whose values are real numbers whatever its inputs are (division, exp, cos, mean, softmax,
    ...) sets `promotes_int_to_float = True`: `apply` then turns integer and bool inputs into the
    default float dtype, float32, before `forward` sees them. This is PyTorch's rule; numpy would
    give float64 (or float16 for bools), which a float32 model then refuses to mix with.
    """

    promotes_int_to_float = False

    @staticmethod
    def forward(ctx, *arrays, **params):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs, **params):
        tensor = _tensor_module()
        Tensor = tensor.Tensor
        try:
            arrays = [t._data for t in inputs]  # (the usual case: every input is a Tensor)
        except AttributeError:
            inputs, arrays = _tensor_inputs(Tensor, inputs)
        if cls.promotes_int_to_float:
            for a in arrays:
                if type(a) is not np.ndarray or a.dtype.kind not in "fc":  # (rare: only then are new inputs made)
                    inputs = tuple([t if t._data.dtype.kind in "fc" else t.to(tensor._default_float) for t in inputs])
                    arrays = [t._data for t in inputs]
                    break
        modes = _modes
        needs = tuple([t._requires_grad for t in inputs]) if modes.grad_enabled else (False,) * len(inputs)
        ctx = Context(needs)
        ctx.fn = cls
        if modes.anomaly_enabled:
            return _apply_checked(cls, ctx, inputs, arrays, params)
        if modes.recorder is not None:
            return _apply_recorded(cls, ctx, inputs, arrays, params, modes.recorder)
        data = cls.forward(ctx, *arrays, **params)
        if isinstance(data, tuple):
            return _several_outputs(ctx, inputs, data)
        return _output_tensor(Tensor, data, inputs, ctx, True in needs)


def _tensor_inputs(Tensor, inputs):
    """apply's inputs that are not all Tensors: each made a Tensor (for the graph), and the arrays
    forward gets. A Python number reaches forward as itself, as in PyTorch, so that it mixes with a
    float32 array as a number does (a 0-d int64 array would make the result float64)."""
    tensors = tuple([x if isinstance(x, Tensor) else Tensor(x) for x in inputs])
    arrays = []
    for x, t in zip(inputs, tensors):
        if type(x) in (int, float, bool):
            t.python_number = x  # (what a replay passes: compile.py)
            arrays.append(x)
        else:
            arrays.append(t._data)
    return tensors, arrays


def _apply_checked(cls, ctx, inputs, arrays, params):
    """Function.apply under detect_anomaly(): the op's forward with numpy's warnings silenced,
    then a check that names the op and the user's line if it produced a NaN or an Inf."""
    ctx.input_shapes = [t.shape for t in inputs]
    ctx.call_site = _user_call_site()
    with np.errstate(all="ignore"):
        data = cls.forward(ctx, *arrays, **params)
    if isinstance(data, tuple):
        return _several_outputs(ctx, inputs, data)
    _check_finite(ctx, [data], "forward")
    return _output_tensor(_tensor_module().Tensor, data, inputs, ctx, True in ctx.needs_input_grad)


def _apply_recorded(cls, ctx, inputs, arrays, params, recorder):
    """Function.apply while minigrad.compile records a step (compile.py): the op runs as usual, then
    the recorder writes it down. Ops that its forward itself may call are part of it: not recorded."""
    _modes.recorder = None
    try:
        data = cls.forward(ctx, *arrays, **params)
    finally:
        _modes.recorder = recorder
    if isinstance(data, tuple):
        outs = _several_outputs(ctx, inputs, data)
    else:
        outs = (_output_tensor(_tensor_module().Tensor, data, inputs, ctx, True in ctx.needs_input_grad),)
    recorder.record_op(cls, inputs, params, outs, ctx.needs_input_grad)
    return outs if isinstance(data, tuple) else outs[0]


@functools.cache
def _tensor_module():
    """The module minigrad.tensor, imported on first use. Function.apply makes Tensors, but it
    cannot import tensor.py at the top of this file: tensor.py imports ops.py, which imports this
    module for `Function`."""
    return importlib.import_module(".tensor", __package__)


def _output_tensor(Tensor, data, inputs, ctx, requires_grad):
    """A Tensor of `data`, the output of ctx's op on `inputs`: if it requires grad, ctx is its
    record (with the version counts of the inputs and of itself, see `_check_versions`). A view
    shares the version count of the input it views."""
    if not isinstance(data, np.ndarray):
        data = np.asarray(data)
    out = Tensor._from_op(data, requires_grad)
    if data.base is not None:  # a view (reshape, transpose, slice): share the version count
        for t in inputs:
            if np.may_share_memory(data, t._data):
                out._base = t if t._base is None else t._base
                break
    if requires_grad and ctx is not None:
        ctx.inputs = inputs
        ctx.versions = tuple([(t if t._base is None else t._base)._version for t in inputs])
        ctx.output_version = (out if out._base is None else out._base)._version
        out._ctx = ctx
    return out


def _several_outputs(ctx, inputs, arrays):
    """Function.apply for a forward that returned a tuple of arrays: a tuple of tensors."""
    if _modes.anomaly_enabled:
        _check_finite(ctx, arrays, "forward")
    Tensor = _tensor_module().Tensor
    outs = tuple(_output_tensor(Tensor, a, inputs, None, any(ctx.needs_input_grad)) for a in arrays)
    if outs and outs[0].requires_grad:
        ctx.inputs = inputs
        ctx.versions = tuple([_root(t)._version for t in inputs])
        ctx.output_version = tuple([_root(o)._version for o in outs])
        ctx.outputs = tuple([weakref.ref(o) for o in outs])  # (weak: an unused output may be freed)
        ctx.output_shapes = [(o._data.shape, o._data.dtype) for o in outs]
        for o in outs:
            o._ctx = ctx
    return outs


def _output_index(ctx, tensor):
    """Which output of its op (with several) `tensor` is."""
    return next(i for i, ref in enumerate(ctx.outputs) if ref() is tensor)


def _root(t):
    """The tensor that owns the memory `t` views (or `t` itself): in-place changes count there."""
    return t if t._base is None else t._base


# ----------------------------------------------------------------------------- gradients of slices
class SliceGrad:
    """A gradient that is `value` at `index` of the input and zero everywhere else.

    The backward of a slice `x[index]` (basic indexing: no index repeats an element) returns one.
    The walk then adds `value` into place in x's gradient. A dense array of zeros per slice would
    cost a full pass over x's shape for each slice: three slices of x would write three arrays of
    x's shape and add them up, instead of filling one. (`split` and `unbind`, which cut a tensor
    into all of its pieces at once, are single ops with several outputs instead.)"""

    __slots__ = ("index", "value")

    def __init__(self, index, value):
        self.index, self.value = index, value

    def dense(self, like):
        """The whole gradient, laid out in memory like the array `like` (the input's data): for an
        input that is itself a permuted view, the gradient then flows back through the permutation
        as a contiguous array."""
        grad = np.zeros_like(like)
        grad[self.index] = self.value
        return grad


# ----------------------------------------------------------------------------- broadcasting
def unbroadcast(grad, shape, what="gradient"):
    """Sum `grad` down to `shape`: the gradient of broadcasting (an expand) is a sum.

    Leading axes that broadcasting added are summed away; axes where the input had size 1
    are summed with keepdims."""
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0 or any(n != 1 and n != m for n, m in zip(shape, grad.shape[extra:])):
        raise ValueError(f"{what} of shape {grad.shape} cannot be summed to the input shape {tuple(shape)}")
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1
    )
    return grad.sum(axis=axes, keepdims=True).reshape(shape) if axes else grad.reshape(shape)


# ----------------------------------------------------------------------------- the walk
def _topological_order(roots):
    """Tensors reachable from `roots` (a tensor or a list of them) through recorded ops, inputs
    before outputs. An op's input is followed if it wanted a gradient when the op ran
    (`needs_input_grad`).

    Iterative depth-first search (a chain of 100,000 ops needs no recursion). The stack holds
    tensors to visit; a visited tensor is pushed back under a None, so that it is popped again,
    after the None, once everything pushed above it (its inputs) is in `order`."""
    order, visited = [], set()
    stack = list(reversed(roots)) if isinstance(roots, list) else [roots]
    push, pop, seen, see = stack.append, stack.pop, visited.__contains__, visited.add
    while stack:
        node = pop()
        if node is None:  # the tensor below it: every input of it is already in `order`
            order.append(pop())
            continue
        if seen(id(node)):
            continue
        see(id(node))
        push(node)
        push(None)
        ctx = node._ctx
        if ctx is not None and ctx.inputs is not None:
            for parent, needed in zip(ctx.inputs, ctx.needs_input_grad):
                if needed and not seen(id(parent)):
                    push(parent)
    return order


def _check_versions(ctx, output):
    """Refuse to run a backward whose inputs were changed in place since the forward, where that
    matters. (The one place where the version counts are read.)

    Every in-place update (x += y, add_, copy_, x[i] = v, optimizer steps, init, load_state_dict)
    bumps a version count, shared by a tensor and its views, and `Function.apply` noted the counts
    of the op's inputs and output. A change matters if
    - an array the forward saved (ctx.save_for_backward) shares memory with the changed tensor:
      the backward would compute with the new values;
    - an input was changed by an in-place op recorded in the graph after this op used it: its
      history is now that op's, and the gradient would flow into the wrong history.
    A change through `.data` (or into the array of `.numpy()`) is not counted, as in PyTorch: it
    is not seen."""
    for t, version in zip(ctx.inputs, ctx.versions):
        if (t if t._base is None else t._base)._version != version:
            break
    else:  # no input changed (the usual case); the output matters only if the backward saved something
        if not ctx.saved_tensors:
            return
        output_version = ctx.output_version if ctx.outputs is None else ctx.output_version[_output_index(ctx, output)]
        if _root(output)._version == output_version:
            return
    _refuse_changed(ctx, output)


def _refuse_changed(ctx, output):
    """_check_versions, once a count differs: find the change that matters, and raise."""
    changed = [(f"input {i}", t, v) for i, (t, v) in enumerate(zip(ctx.inputs, ctx.versions))
               if _root(t)._version != v]
    for i, (t, version) in enumerate(zip(ctx.inputs, ctx.versions)):
        rewritten = t._ctx is not None and getattr(t._ctx, "inplace", None) and t._ctx.output_version > version
        if ctx.needs_input_grad[i] and rewritten:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: input {i} of {ctx.name} (shape {t.shape}) was modified in place by {t._ctx.inplace} "
                f"after {ctx.name} used it (version {version} -> {_root(t)._version}), so its gradient would flow "
                "into the history of the new values. Use the out-of-place form (x = x + y), or clone() the "
                "tensor before changing it"
            )
    output_version = ctx.output_version if ctx.outputs is None else ctx.output_version[_output_index(ctx, output)]
    if _root(output)._version != output_version:
        changed.append(("its output", output, output_version))
    for what, t, version in changed:
        if any(isinstance(s, np.ndarray) and np.may_share_memory(s, t._data) for s in ctx.saved_tensors):
            by = getattr(_root(t), "_changed_by", None) or "an in-place update"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: {ctx.name}.backward needs {what} (shape {t.shape}) as it was in the forward pass, "
                f"but it was modified in place afterwards, last by {by} (version {version} -> {_root(t)._version}). "
                "Modify a copy instead (x = x + y, or x.clone()), or make the in-place change before using the tensor."
            )


def backward(root, grad=None, retain_graph=False, create_graph=False):
    """Accumulate d(root)/d(leaf) into `.grad` of every leaf tensor that requires grad. With
    create_graph=True the gradients are computed by ops, so `.grad` has a graph of its own
    (see `_walk_in_graph`)."""
    if create_graph:
        if _modes.recorder is not None:
            _modes.recorder.refuse("backward(create_graph=True) is not replayed")
        _walk_in_graph([root], [_root_grad(root, grad)], _store_grad_tensor)
        return
    recorder = _modes.recorder  # (minigrad.compile writes the walk down before it runs: compile.py)
    if recorder is not None and len(HOOKED):
        recorder.refuse("a tensor has a gradient hook (register_hook), which a replay would not call")
        recorder = None
    plan = None if recorder is None else recorder.record_backward(root, grad)
    _walk([root], [_root_grad(root, grad)], retain_graph, _store_grad)
    if plan is not None and _modes.recorder is recorder:
        recorder.after_backward(plan)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, create_graph=False, allow_unused=False):
    """d(outputs)/d(inputs) as a tuple of tensors, one per input, without touching any `.grad`
    (PyTorch's `torch.autograd.grad`).

    outputs: a tensor or a list of them (their gradients add up); grad_outputs: for each output,
    the gradient to start from (None: 1, for a one-element output). inputs may be leaves or
    results of ops. An input the outputs do not depend on raises, or gives None with allow_unused=True.
    create_graph=True: the gradients are computed by ops (`_walk_in_graph`), so they can be
    differentiated again (a Hessian-vector product, a gradient penalty)."""
    Tensor = _tensor_module().Tensor
    if _modes.recorder is not None:
        _modes.recorder.refuse("minigrad.grad is not replayed (its results are not .grad)")
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, (Tensor, np.ndarray)):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs; give one per output")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            what = f"shape {t.shape}" if isinstance(t, Tensor) else type(t).__name__
            raise RuntimeError(f"grad: input {i} ({what}) does not require grad, so it has no gradient; create it "
                               "with requires_grad=True")
    wanted, found = {id(t) for t in inputs}, {}

    def keep(node, g, owned):
        if g is not None and id(node) in wanted:
            found[id(node)] = g if owned else g.copy()

    root_grads = [_root_grad(o, g, "grad") for o, g in zip(outputs, grad_outputs)]
    if create_graph:
        _walk_in_graph(outputs, root_grads, lambda node, g: found.__setitem__(id(node), g) if id(node) in wanted
                       else None)
    else:
        _walk(outputs, root_grads, retain_graph, keep)
    result = []
    for i, t in enumerate(inputs):
        if id(t) not in found and not allow_unused:
            raise RuntimeError(f"grad: input {i} (shape {t.shape}) was not used to compute the outputs; pass "
                               "allow_unused=True to get None for it")
        g = found.get(id(t))
        result.append(g if g is None or isinstance(g, Tensor) else Tensor._from_op(g, False))
    return tuple(result)


def _walk_in_graph(roots, root_grads, keep):
    """The backward pass for create_graph=True: `_walk`'s order, but each op's gradient comes from
    its `gradient(ctx, g)`, its rule written with Tensor ops (Mul's is `g * b, g * a`) instead of
    numpy, so every gradient is a Tensor in a graph of its own, which backward can walk again.
    Ops without one are named in the error. The first graph is kept (it is part of the new one)."""
    with enable_grad():  # (the gradients' ops are recorded, even if the caller is inside no_grad)
        _gradients_in_graph(roots, root_grads, keep)


def _gradients_in_graph(roots, root_grads, keep):
    Tensor = _tensor_module().Tensor
    grads = {}
    for root, g in zip(roots, root_grads):
        g = Tensor._from_op(np.asarray(g), False)
        grads[id(root)] = g if id(root) not in grads else grads[id(root)] + g
    for node in reversed(_topological_order(roots)):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        keep(node, g)
        ctx = node._ctx
        if ctx is None:
            continue
        gradient = getattr(ctx.fn, "gradient", None)
        if gradient is None or ctx.outputs is not None:
            raise NotImplementedError(
                f"create_graph=True: {ctx.name}'s gradient is not written in tensor ops (its backward computes on "
                "numpy arrays), so it cannot be differentiated again. The ops that have one: " + ", ".join(
                    sorted(c.__name__ for c in _ops_with_gradient())))
        if ctx.inputs is None:
            raise RuntimeError(_FREED_MESSAGE)
        _check_versions(ctx, node)
        ctx.output = node
        try:
            input_grads = gradient(ctx, g)
        finally:
            ctx.output = None
        input_grads = input_grads if isinstance(input_grads, tuple) else (input_grads,)
        for parent, needed, pg in zip(ctx.inputs, ctx.needs_input_grad, input_grads):
            if needed and pg is not None:
                pg = _fitted_tensor(pg, parent)
                grads[id(parent)] = pg if id(parent) not in grads else grads[id(parent)] + pg


def _fitted_tensor(pg, parent):
    """A gradient Tensor summed down to `parent`'s shape (it may have the broadcast output's) and
    cast to its dtype: `_fitted` with ops, so that it stays in the graph."""
    if pg.shape != parent.shape:
        extra = pg.ndim - parent.ndim
        if extra:
            pg = pg.sum(tuple(range(extra)))
        ones = tuple(i for i, n in enumerate(parent.shape) if n == 1 and pg.shape[i] != 1)
        if ones:
            pg = pg.sum(ones, keepdims=True)
    return pg if pg.dtype == parent.dtype else pg.to(parent.dtype)


def _ops_with_gradient():
    found, stack = [], list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "gradient" in cls.__dict__:
            found.append(cls)
    return found


def _store_grad_tensor(node, g):
    """_store_grad for create_graph=True: `.grad` is the Tensor g itself, with its graph (added to
    what an earlier backward left there, out of place)."""
    if node._ctx is None or node._retains_grad:
        node._grad = g if node._grad is None else node._grad + g


# tensors with gradient hooks (Tensor.register_hook): the walk looks for hooks only while there are some
HOOKED = weakref.WeakValueDictionary()  # id(tensor) -> tensor (a Tensor's == is elementwise: no set)


def _run_hooks(node, g):
    """Call node's gradient hooks, in order, on g (as a Tensor); one that returns a value replaces g."""
    Tensor = _tensor_module().Tensor
    for hook in list(node.__dict__.get("grad_hooks", {}).values()):
        result = hook(Tensor._from_op(g if isinstance(g, np.ndarray) else np.asarray(g), False))
        if result is not None:
            new = np.asarray(result._data if isinstance(result, Tensor) else result)
            if new.shape != np.shape(g):
                raise RuntimeError(f"hook: a gradient hook returned shape {new.shape}, expected {np.shape(g)} (the "
                                   "tensor's gradient)")
            g = new.astype(node._data.dtype, copy=False)
    return g


def _walk(roots, root_grads, retain_graph, keep):
    """The backward pass, from `roots` (whose gradients are `root_grads`) to the leaves.

    The walk visits the graph back to the leaves, each tensor after every op that used it: it takes
    the tensor's summed gradient, hands it to `keep(tensor, gradient, owned)` (backward stores it in
    .grad), and to the backward of the op that made the tensor; it adds what that returns into the
    sums of the op's inputs."""
    grads = {}  # id(tensor) -> d(roots)/d(tensor) summed so far
    owned = set()  # ids whose array in `grads` this walk allocated, so it may add into it in place
    for root, g in zip(roots, root_grads):
        if id(root) in grads:
            grads[id(root)] = grads[id(root)] + g
            owned.add(id(root))
        else:
            grads[id(root)] = g
    order = _topological_order(roots)
    waiting = _outputs_to_come(order)
    anomaly = _modes.anomaly_enabled
    hooked = len(HOOKED) > 0
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if hooked and g is not None and id(node) in HOOKED:
            g = _run_hooks(node, g)
        if g is not None:
            keep(node, g, id(node) in owned)
        ctx = node._ctx
        if ctx is None:
            continue  # a leaf
        if not retain_graph and node._data.size <= DRAWN_SIZE:
            _keep_small(ctx, node, g)
        if ctx.outputs is None:  # (the usual op, with one output)
            if g is None:
                continue  # no gradient reached it
            output_grads = (g,)
        else:
            output_grads = _gather_output_grads(waiting, ctx, node, g)
            if output_grads is None:
                continue  # outputs still to come, or none of them has a gradient
        inputs = ctx.inputs
        if inputs is None:
            raise RuntimeError(_FREED_MESSAGE)
        _check_versions(ctx, node)
        input_grads = _call_backward(ctx, output_grads, anomaly)
        for i, needed in enumerate(ctx.needs_input_grad):
            if needed and input_grads[i] is not None:
                _accumulate(grads, owned, inputs[i], input_grads[i], ctx, i)
        if not retain_graph:
            _keep_links(ctx)
            ctx.inputs = None  # free the graph behind this op, and the arrays its forward saved
            ctx.saved_tensors = ()


DRAWN_SIZE = 16  # an op's output of at most this many numbers keeps its value and gradient for viz


def _keep_links(ctx):
    """Before the walk frees ctx's inputs, note what each was, without its values, so that viz can
    still draw the graph: the name of the op that made it, that op's own links (a list filled when
    its backward runs) and its small outputs (`_keep_small`), a weak reference to it (a leaf's name
    and .grad), its shape and dtype."""
    links = ctx.__dict__.setdefault("links", [])
    for t in ctx.inputs:
        made_by = t._ctx
        up = None if made_by is None else (made_by.fn.__name__, made_by.__dict__.setdefault("links", []),
                                           made_by.__dict__.setdefault("small", {}))
        links.append((up, weakref.ref(t), t._data.shape, t._data.dtype))


def _keep_small(ctx, node, g):
    """A tiny output of ctx (a micrograd-sized example): keep copies of its value and of the
    gradient that reached it, by shape, so that a picture drawn after backward can show both
    (as micrograd draws every node), with no graph and no large array kept alive."""
    ctx.__dict__.setdefault("small", {})[node._data.shape] = (node._data.copy(), None if g is None else np.array(g))


def _root_grad(root, grad, op="backward"):
    """The gradient the walk starts from: d(root)/d(root) = 1 for a scalar, else `grad`."""
    if not root.requires_grad:
        raise RuntimeError(
            f"{op}: this tensor does not require grad and has no graph "
            "(were its inputs created with requires_grad=True, outside no_grad()?)"
        )
    if grad is None:
        if root._data.size != 1:
            raise RuntimeError(
                f"{op}: grad can be implied only for a scalar output, but the output has shape "
                f"{root.shape}; pass grad= of that shape, or reduce it first (e.g. loss.sum())"
            )
        grad = np.ones_like(root._data)
    else:
        grad = np.asarray(grad, dtype=root.dtype)
        if grad.shape != root.shape:
            raise ValueError(f"{op}: grad has shape {grad.shape}, expected the output's shape {root.shape}")
    if root._ctx is not None and root._ctx.inputs is None:
        raise RuntimeError(_FREED_MESSAGE)
    return grad


def _store_grad(node, g, owned):
    """Keep g in `node.grad` if node is a leaf or called retain_grad(): set it, or add to what an
    earlier backward left there, in place (the same Tensor object, its array updated). `owned`: g
    was allocated by this walk, so .grad may keep it as is; otherwise it may be shared (Add's
    backward returns g twice) and .grad gets a copy."""
    if g is None or not (node._ctx is None or node._retains_grad):
        return
    if not isinstance(g, np.ndarray):  # (0-d arithmetic gives numpy scalars; a Tensor holds an array)
        g, owned = np.asarray(g), True
    grad = node._grad
    if grad is None:
        node._grad = node._from_op(g if owned else g.copy(), False)
    elif grad._data.flags.writeable:
        grad._data += g
    else:  # (a read-only array was assigned to .grad: the sum goes to new memory)
        grad._data = grad._data + g


def _call_backward(ctx, output_grads, anomaly=False):
    """ctx.fn.backward, checked: one gradient (or None) per input, and with `anomaly` (under
    detect_anomaly()) no NaN or Inf among them (reported by the check, not by numpy's warnings,
    which it silences)."""
    if anomaly:
        with np.errstate(all="ignore"):
            input_grads = ctx.fn.backward(ctx, *output_grads)
    else:
        input_grads = ctx.fn.backward(ctx, *output_grads)
    if not isinstance(input_grads, tuple):
        input_grads = (input_grads,)
    if len(input_grads) != len(ctx.inputs):
        raise RuntimeError(
            f"{ctx.name}.backward returned {len(input_grads)} gradients for {len(ctx.inputs)} inputs"
        )
    if anomaly:
        _check_finite(ctx, input_grads, "backward")
    return input_grads


def _accumulate(grads, owned, parent, pg, ctx, i):
    """Add pg, the gradient that input i of ctx's op gets, into grads[id(parent)].

    pg is made to fit first: a SliceGrad is added into place; a gradient shaped like a broadcast
    output is summed down to the input's shape (`unbroadcast`) and cast to the input's dtype.
    The first gradient of a tensor is kept as it comes (it may be shared, so not ours to change);
    the second makes a new array, the walk's own, into which the next ones are added in place."""
    _accumulate_at(grads, owned, id(parent), parent._data, pg, ctx, i)


def _accumulate_at(grads, owned, key, data, pg, ctx, i):
    """_accumulate into grads[key], for an input whose array is `data` (a compiled step's replay
    calls this too, with its own keys: compile.py)."""
    if type(pg) is not np.ndarray or pg.shape != data.shape or pg.dtype != data.dtype:
        if isinstance(pg, SliceGrad):
            _accumulate_slice(grads, owned, key, data, pg)
            return
        pg = _fitted(pg, data, ctx, i)
    if key not in grads:
        grads[key] = pg
    elif key in owned:
        grads[key] += pg
    else:
        grads[key] = grads[key] + pg
        owned.add(key)


def _fitted(pg, data, ctx, i):
    """pg, the gradient input i of ctx's op gets, summed down to the shape of the input's array
    `data` (a gradient shaped like the broadcast output) and cast to its dtype."""
    if not isinstance(pg, np.ndarray):
        pg = np.asarray(pg)
    if pg.shape != data.shape:
        pg = unbroadcast(pg, data.shape, f"{ctx.name}.backward: gradient for input {i}")
    if pg.dtype != data.dtype:
        pg = pg.astype(data.dtype)
    return pg


def _accumulate_slice(grads, owned, key, data, pg):
    """_accumulate for a SliceGrad: its value is added into place."""
    if key not in grads:
        grads[key] = pg.dense(data)
    else:
        if key not in owned:
            grads[key] = grads[key].astype(data.dtype, copy=True)
        grads[key][pg.index] += pg.value
    owned.add(key)


# ----------------------------------------------------------------------------- ops with several outputs
def _outputs_to_come(order):
    """An op with several outputs runs its backward once, at the last of its outputs in the walk.
    Returns id(ctx) -> [the gradient of each output (None: none yet), how many outputs are to come]."""
    waiting = {}
    for node in order:
        if node._ctx is not None and node._ctx.outputs is not None:
            waiting.setdefault(id(node._ctx), [[None] * len(node._ctx.outputs), 0])[1] += 1
    return waiting


def _gather_output_grads(waiting, ctx, node, g):
    """The gradients to call ctx's backward with, now that the walk is at `node`, an output of ctx
    whose gradient is g; or None if the backward is not to run (yet).

    An op with one output runs as soon as its output has a gradient: (g,). An op with several runs
    at the last of them in the walk, with the gradients of all (zeros for outputs the loss does not
    use; None if it uses none)."""
    if ctx.outputs is None:
        return None if g is None else (g,)
    entry = waiting[id(ctx)]
    entry[0][_output_index(ctx, node)] = g
    entry[1] -= 1
    if entry[1] > 0 or all(og is None for og in entry[0]):
        return None
    return [np.zeros(shape, dtype) if og is None else og for (shape, dtype), og in zip(ctx.output_shapes, entry[0])]


_FREED_MESSAGE = (
    "backward: this graph was already used by a backward pass and its saved values were freed. "
    "Call backward(retain_graph=True) the first time to backpropagate through it again."
)
