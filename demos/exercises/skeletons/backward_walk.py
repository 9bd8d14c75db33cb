"""Exercise: the backward walk itself (minigrad/autograd.py, function backward).

loss.backward() calls backward(loss). Every tensor t made by an op remembers it in t._ctx:
    t._ctx                  None for a leaf (a tensor you created), else the op's context
    t._ctx.inputs           the op's input tensors
    t._ctx.fn.backward      the op's backward: t._ctx.fn.backward(t._ctx, g) takes dL/dt and returns
                            one gradient (or None) per input, as a tuple (or one array for one input)
    t.requires_grad         whether t wants a gradient (an input that does not: skip it)
    t.grad                  where a leaf keeps its gradient (a Tensor; assign it a Tensor or a numpy
                            array): add to it if it is not None
                            (gradients accumulate over backward calls until zero_grad())
An op's gradient for an input may be shaped like the op's broadcast output:
unbroadcast(grad, input.shape, what) sums it down to the input's shape (`what` names it in errors).

Write the walk for graphs of ops with one output (minigrad's own walk also handles ops with
several outputs, slices and retain_grad; the checks and `train` need none of those).

    python -m demos.exercises check backward_walk
    python -m demos.exercises train backward_walk     # a model trains with your walk
"""
import numpy as np

from minigrad.autograd import unbroadcast  # noqa: F401  (yours to use)


def topological_order(root):
    """Every tensor that requires grad and that root was computed from (root included), each after
    all the inputs it was computed from. A graph may be 100,000 ops deep: a loop with your own
    stack is safer than recursion."""
    raise NotImplementedError("topological_order")


def backward(root, grad=None, retain_graph=False):
    """Add d(root)/d(leaf) into leaf.grad for every leaf that requires grad. grad: dL/droot, shaped
    like root (None: root is a number and the gradient is 1). retain_graph: ignored here."""
    g = np.ones_like(root.numpy()) if grad is None else np.asarray(grad, dtype=root.dtype)
    # grads = {id(root): g}      dL/dt summed so far, by id(t)
    # for each tensor, in an order where it comes after every op that used it: ...
    raise NotImplementedError("backward")
