"""explain_backward: the walk, narrated in the order it runs, with each op's rule and the numbers
(checked against the chain rule done by hand); and every op has a rule to narrate."""
import inspect
import io
import re

import numpy as np

import minigrad as mg
import transformer  # noqa: F401  (its modules define no op today; any that does is checked below)
from minigrad.autograd import Function


def two_layers():
    """The README's example: x (1, 2) -> tanh(x W1 + b1) -> (.) W2 -> (y - 1)^2."""
    x = mg.tensor([[1.0, -2.0]])
    W1 = mg.tensor([[0.5, -0.3], [0.8, 0.2]], requires_grad=True)
    b1 = mg.tensor([0.1, -0.1], requires_grad=True)
    W2 = mg.tensor([[1.5], [-1.0]], requires_grad=True)
    h = (x @ W1 + b1).tanh()
    y = h @ W2
    loss = ((y - 1.0) ** 2).sum()
    return dict(x=x, W1=W1, b1=b1, W2=W2, h=h, y=y, loss=loss)


def numbers(line):
    """The numbers printed after '-> label' or 'g label'."""
    return np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", line.strip().split(None, 2)[2])])


def test_narrated_walk_matches_the_chain_rule_by_hand():
    t = two_layers()
    out = io.StringIO()
    steps = mg.explain_backward(t["loss"], names=t, file=out)
    text = out.getvalue()

    # by hand, in float64
    x, W1, b1, W2 = (np.asarray(t[k].numpy(), dtype=np.float64) for k in ("x", "W1", "b1", "W2"))
    a = x @ W1 + b1
    h = np.tanh(a)
    y = h @ W2
    dy = 2 * (y - 1)  # d(y - 1)^2 / dy
    dh = dy @ W2.T  # dA = G B^T
    dW2 = h.T @ dy  # dB = A^T G
    da = dh * (1 - h * h)  # d tanh = 1 - tanh^2
    dW1 = x.T @ da

    assert [s.name for s in steps] == ["Sum", "PowScalar", "Sub", "MatMul", "Tanh", "Add", "MatMul"]
    lines = text.splitlines()

    def after(step_title, arrow):
        start = next(i for i, line in enumerate(lines) if step_title in line)
        return next(line for line in lines[start:] if line.strip().startswith(arrow))

    close = dict(rtol=2e-4, atol=1e-4)  # printed with 4 decimals
    np.testing.assert_allclose(numbers(after("PowScalar:", "-> ")), dy.ravel(), **close)
    np.testing.assert_allclose(numbers(after("MatMul: h (1, 2), W2", "-> h")), dh.ravel(), **close)
    np.testing.assert_allclose(numbers(after("MatMul: h (1, 2), W2", "-> W2")), dW2.ravel(), **close)
    np.testing.assert_allclose(numbers(after("Tanh:", "-> ")), da.ravel(), **close)
    np.testing.assert_allclose(numbers(after("Add:", "-> b1")), da.ravel(), **close)
    np.testing.assert_allclose(numbers(after("MatMul: x (1, 2), W1", "-> W1")), dW1.ravel(), **close)
    assert "d(tanh a)/da = 1 - tanh^2 a" in text and "dA = G B^T, dB = A^T G" in text
    assert "-> x" not in text  # x needs no gradient, so nothing is sent to it

    # the walk was the real backward: the same .grad, and the graph is freed as usual
    np.testing.assert_allclose(t["W1"].grad, dW1, rtol=1e-5)
    np.testing.assert_allclose(t["W2"].grad, dW2, rtol=1e-5)
    assert t["h"]._ctx.fn is mg.ops.Tanh and t["h"]._ctx.inputs is None  # its own class again; freed


def test_steps_follow_the_execution_order_and_big_tensors_print_norms():
    mg.manual_seed(0)
    x = mg.randn(10, 3, requires_grad=True)
    w = mg.randn(3, 4, requires_grad=True)
    loss = (x @ w).relu().mean()
    out = io.StringIO()
    steps = mg.explain_backward(loss, names=dict(x=x, w=w), file=out)
    assert [s.name for s in steps] == ["Mean", "ReLU", "MatMul"]
    text = out.getvalue()
    assert "norm" in text and "(30 numbers)" in text and "(40 numbers)" in text
    np.testing.assert_allclose(float(re.search(r"-> w\s+norm (\S+)", text).group(1)),
                               np.linalg.norm(w.grad), rtol=1e-3)


def test_op_with_several_outputs_is_narrated_once():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    a, b = x.split([1, 1], axis=0)
    out = io.StringIO()
    steps = mg.explain_backward((a * b).sum(), names=dict(x=x, a=a, b=b), file=out)
    split = [s for s in steps if s.name == "Split"]
    assert len(split) == 1 and [label for label, _ in split[0].outputs] == ["a", "b"]
    np.testing.assert_allclose(x.grad, [[3, 4, 5], [0, 1, 2]])


def _all_function_classes():
    found, stack = [], list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in ("minigrad", "transformer"):
            found.append(cls)
    return found


def test_every_op_has_a_rule():
    classes = _all_function_classes()
    assert len([c for c in classes if c.__module__ == "minigrad.ops"]) > 60
    missing = [c.__name__ for c in classes if not isinstance(c.__dict__.get("rule"), str) or not c.rule.strip()]
    assert not missing, f"ops without a rule: {missing}"


def test_rule_sits_beside_its_backward():
    for cls in _all_function_classes():
        source = inspect.getsource(cls)
        assert source.index("rule = ") < source.index("def backward"), cls.__name__


def test_the_returned_walk_reads_as_one_line():
    """A notebook cell ending with explain_backward(...) shows its return value: one line, not a
    list of objects."""
    x = mg.tensor([1.0, 2.0], dtype=mg.float64, requires_grad=True)
    walk = mg.explain_backward((x * x).sum(), file=io.StringIO())
    assert len(walk) == 2 and repr(walk) == "<backward walk: 2 steps: Sum Mul>"
