"""The backward pass, narrated: every step of the walk with its rule and its numbers.

    loss = ((x @ W1 + b1).tanh() @ W2).sum()
    minigrad.explain_backward(loss, names=dict(x=x, W1=W1, b1=b1, W2=W2, loss=loss))

`explain_backward` IS `loss.backward()` (the same walk, leaving the same `.grad`), and it prints
each op's backward as the walk runs it, in that order:

     3. Tanh                   (1, 2) -> (1, 2)
        rule   d(tanh a)/da = 1 - tanh^2 a
        g      [[0.5, -0.25]]               the gradient that reached the op's output
        d a    [[0.2012, -0.1988]]           what it sends to its input a (= g * (1 - tanh^2 a))

The rule is the op's `rule` attribute, the one-line derivation written beside its backward in
ops.py. A tensor of at most `values_up_to` numbers is printed whole (a micrograd-sized example
can be followed by hand); a larger one as its shape and norm.
"""
import numbers
import sys

import numpy as np

from .autograd import SliceGrad, backward, unbroadcast


def forward_order(root):
    """The tensors `root` was computed from (through recorded ops), each after its inputs: the
    order in which the forward pass could have made them."""
    from . import _arguments as check

    check.tensor("forward_order(root)", "root", root)
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        t, inputs_done = stack.pop()
        if inputs_done:
            order.append(t)
        elif id(t) not in seen:
            seen.add(id(t))
            stack.append((t, True))
            ctx = t._ctx
            if ctx is not None and ctx.inputs is not None:
                stack.extend((p, False) for p, need in zip(reversed(ctx.inputs), reversed(ctx.needs_input_grad))
                             if need and id(p) not in seen)
    return order


class Step:
    """One backward call: the op, its rule, the labels and shapes of its inputs and outputs, the
    gradients it received (`grads_in`, one per output) and returned (`grads_out`, one per input,
    None where it returned none; summed to the input's shape as the walk does)."""

    def __init__(self, number, name, rule, inputs, outputs, grads_in, grads_out):
        self.number, self.name, self.rule = number, name, rule
        self.inputs, self.outputs = inputs, outputs  # [(label, shape)]
        self.grads_in, self.grads_out = grads_in, grads_out


class Walk(list):
    """The `Step`s of one narrated backward walk, in the order they ran."""

    def __repr__(self):
        return f"<backward walk: {len(self)} steps: {' '.join(step.name for step in self)}>"


class _Narrated:
    """Stands in for an op's class during one walk: its backward runs the op's own and notes the
    step. (The walk calls `ctx.fn.backward(ctx, *grads)` and reads `ctx.fn.__name__`.)"""

    def __init__(self, fn, labels, steps):
        self.fn, self.labels, self.steps = fn, labels, steps
        self.__name__ = fn.__name__

    def backward(self, ctx, *grads):
        returned = self.fn.backward(ctx, *grads)
        as_tuple = returned if isinstance(returned, tuple) else (returned,)
        outs = [self.labels.output(ctx, i) for i in range(len(grads))]
        ins = [(self.labels.of(t), t.shape) for t in ctx.inputs]
        grads_out = [_fitted(g, t, need) for g, t, need in zip(as_tuple, ctx.inputs, ctx.needs_input_grad)]
        self.steps.append(Step(len(self.steps) + 1, self.fn.__name__, getattr(self.fn, "rule", None), ins, outs,
                               [np.asarray(g) for g in grads], grads_out))
        return returned


def _fitted(g, t, needed):
    """The gradient `g` for input t as the walk will add it: dense, and summed to t's shape."""
    if g is None or not needed:
        return None
    if isinstance(g, SliceGrad):
        g = g.dense(np.zeros(t.shape, dtype=t.dtype))
    g = np.asarray(g)
    return unbroadcast(g, t.shape) if g.shape != t.shape else g


class _Labels:
    """A name for every tensor of the graph: the caller's names first; then leaves x1, x2, ...
    and op outputs t1, t2, ... in the order the forward pass made them."""

    def __init__(self, root, names):
        self.by_id = {id(t): name for name, t in (names or {}).items()}
        self.made = {}  # id(ctx) -> the tensor it made (ops with one output)
        leaves = made = 0
        for t in forward_order(root):
            if t._ctx is not None:
                self.made[id(t._ctx)] = t
            if id(t) in self.by_id:
                continue
            if t._ctx is None:
                leaves += 1
                self.by_id[id(t)] = f"x{leaves}"
            else:
                made += 1
                self.by_id[id(t)] = f"t{made}"

    def of(self, t):
        return self.by_id.get(id(t), "const")

    def output(self, ctx, i):
        """(label, shape) of output i of ctx's op."""
        if ctx.outputs is None:
            t = self.made[id(ctx)]
            return self.of(t), t.shape
        t = ctx.outputs[i]()
        return ("unused" if t is None else self.of(t)), ctx.output_shapes[i][0]


def explain_backward(root, grad=None, names=None, retain_graph=False, file=None, values_up_to=8):
    """Run `root.backward(grad)` and print each step of the walk: the op, its derivative rule,
    the shapes of its inputs and output, the gradient arriving at its output and the gradient it
    sends to each input (the numbers themselves for tensors of at most `values_up_to` elements,
    else the norm). Then the `.grad` each named leaf holds.

    names: name -> tensor (e.g. `dict(model.named_parameters(), x=x, loss=loss)`), used as labels;
    other tensors are called x1, x2, ... (leaves) and t1, t2, ... (made by ops).
    file: where to print (default sys.stdout). Returns the `Step`s, a list (shown as one line, so
    that a notebook cell ending with the call shows the walk once)."""
    from . import _arguments as check
    from .tensor import Tensor

    signature = "explain_backward(root, grad=None, names=None, retain_graph=False, file=None, values_up_to=8)"
    check.tensor(signature, "root", root)
    if grad is not None and not isinstance(grad, (Tensor, np.ndarray, numbers.Number)):
        raise TypeError(f"{signature}: grad must be a Tensor, an array or a number (the gradient of the loss "
                        f"with respect to root), got {type(grad).__name__} {grad!r:.40}")
    names = check.names(signature, names)
    file = sys.stdout if file is None else file
    if not callable(getattr(file, "write", None)):
        raise TypeError(f"{signature}: file must be a text stream (sys.stdout, or open(path, 'w')), got "
                        f"{type(file).__name__} {file!r:.40}")
    labels = _Labels(root, names)
    steps, swapped = Walk(), []
    for t in forward_order(root):
        ctx = t._ctx
        if ctx is not None and not isinstance(ctx.fn, _Narrated) and ctx.inputs is not None:
            swapped.append((ctx, ctx.fn))
            ctx.fn = _Narrated(ctx.fn, labels, steps)
    try:
        backward(root, grad, retain_graph)
    finally:
        for ctx, fn in swapped:
            ctx.fn = fn
    _print_walk(root, steps, labels, names, file, values_up_to)
    return steps


def _show(a, values_up_to):
    """A gradient as text, on one line: its values if it is small, else its shape and norm."""
    a = np.asarray(a)
    if a.size <= values_up_to:
        if a.ndim == 0:
            return f"{float(a):.5g}"
        text = np.array2string(a.astype(np.float64), precision=4, separator=", ", floatmode="maxprec",
                               max_line_width=10**6)
        return " ".join(text.split())
    return f"norm {float(np.linalg.norm(a.astype(np.float64))):.4g} ({a.size} numbers)"


def _print_walk(root, steps, labels, names, file, values_up_to):
    print(f"backward from {labels.of(root)} {root.shape}: {len(steps)} steps in the order the walk runs them "
          "(g: the gradient arriving at the op's output; ->: what the op sends to each input)", file=file)
    for s in steps:
        ins = ", ".join(f"{label} {shape}" for label, shape in s.inputs)
        outs = ", ".join(f"{label} {shape}" for label, shape in s.outputs)
        width = max(len(label) for label, _ in s.inputs + s.outputs)
        print(f"{s.number:>3}. {s.name}: {ins} -> {outs}", file=file)
        print(f"     rule    {s.rule or '(this op has no rule attribute)'}", file=file)
        for (label, _), g in zip(s.outputs, s.grads_in):
            print(f"     g  {label:<{width}}  {_show(g, values_up_to)}", file=file)
        for (label, _), g in zip(s.inputs, s.grads_out):
            if g is not None:
                print(f"     -> {label:<{width}}  {_show(g, values_up_to)}", file=file)
    for name, t in (names or {}).items():
        if t._ctx is None and t.grad is not None:
            print(f"  {name}.grad = {_show(t.grad, values_up_to)}", file=file)
