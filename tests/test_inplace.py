"""In-place updates (x += y, add_, sub_, mul_, div_, zero_, fill_, copy_, clamp_, x[i] = v) and
PyTorch's rules for them: a leaf that requires grad is refused while gradients are recorded,
allowed under no_grad (it stays a leaf); on a tensor inside the graph the update is recorded
(gradient-checked here); a backward that needs values changed since the forward refuses to run."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import optim
from strategies import TIGHT, leaf

# name, the update on a minigrad tensor, the same on a numpy array
UPDATES = [
    ("iadd", lambda t: t.__iadd__(2.0), lambda a: a + 2.0),
    ("isub", lambda t: t.__isub__(mg.tensor([1.0, 2.0, 3.0])), lambda a: a - [1.0, 2.0, 3.0]),
    ("imul", lambda t: t.__imul__(3.0), lambda a: a * 3.0),
    ("itruediv", lambda t: t.__itruediv__(4.0), lambda a: a / 4.0),
    ("add_", lambda t: t.add_(mg.tensor([1.0, 1.0, 1.0]), alpha=0.5), lambda a: a + 0.5),
    ("sub_", lambda t: t.sub_(np.ones(3, dtype=np.float32), alpha=2), lambda a: a - 2.0),
    ("mul_", lambda t: t.mul_(mg.tensor([[2.0], [3.0]])), lambda a: a * [[2.0], [3.0]]),
    ("div_", lambda t: t.div_(2.0), lambda a: a / 2.0),
    ("zero_", lambda t: t.zero_(), lambda a: a * 0.0),
    ("fill_", lambda t: t.fill_(7.0), lambda a: np.full_like(a, 7.0)),
    ("copy_", lambda t: t.copy_(mg.tensor([9.0, 8.0, 7.0])), lambda a: np.broadcast_to([9.0, 8.0, 7.0], a.shape)),
    ("clamp_", lambda t: t.clamp_(min=1.5, max=4.5), lambda a: np.clip(a, 1.5, 4.5)),
    ("setitem", lambda t: t.__setitem__((1, slice(0, 2)), -1.0), lambda a: np.where([[0, 0, 0], [1, 1, 0]], -1.0, a)),
]


@pytest.mark.parametrize("name, update, expected", UPDATES, ids=[u[0] for u in UPDATES])
def test_update_changes_the_memory_in_place_and_views_see_it(name, update, expected):
    t = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    memory, view = t.numpy(), t[0]
    want = np.asarray(expected(t.numpy().copy()), dtype=np.float32)
    assert update(t) is t
    assert t.numpy() is memory and t.dtype == np.float32
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), want[0], rtol=1e-6)
    assert t._version == 1 and t.is_leaf and not t.requires_grad


def test_augmented_assignment_keeps_the_object():
    t = mg.tensor([1.0, 2.0])
    alias = t
    t += 1
    t -= mg.tensor([0.5, 0.5])
    t *= 2
    t /= 3
    assert alias is t
    np.testing.assert_allclose(alias.numpy(), [1.0, 5.0 / 3.0], rtol=1e-6)


# ----------------------------------------------------------------------------- leaves that require grad
@pytest.mark.parametrize("name, update, expected", UPDATES, ids=[u[0] for u in UPDATES])
def test_leaf_that_requires_grad_is_refused_while_recording(name, update, expected):
    w = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad.*in-place.*no_grad.*\\.data"):
        update(w)
    np.testing.assert_array_equal(w.numpy(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert w._version == 0 and w.is_leaf


@pytest.mark.parametrize("name, update, expected", UPDATES, ids=[u[0] for u in UPDATES])
def test_leaf_that_requires_grad_is_updated_under_no_grad_and_stays_a_leaf(name, update, expected):
    w = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    want = np.asarray(expected(w.numpy().copy()), dtype=np.float32)
    with mg.no_grad():
        update(w)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-6)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_the_tutorial_update_under_no_grad_trains():
    """`p -= lr * p.grad` under no_grad: the parameter objects the model holds change."""
    mg.manual_seed(0)
    model = mg.nn.Linear(1, 1)
    x = mg.linspace(-1, 1, 50).unsqueeze(1)
    y = 3 * x + 1
    held = list(model.parameters())
    first = None
    for _ in range(200):
        loss = ((model(x) - y) ** 2).mean()
        first = loss.item() if first is None else first
        model.zero_grad()
        loss.backward()
        with mg.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    assert loss.item() < 1e-3 * first
    assert all(a is b for a, b in zip(held, model.parameters()))
    np.testing.assert_allclose([model.weight.item(), model.bias.item()], [3.0, 1.0], atol=0.02)


# ----------------------------------------------------------------------------- recorded in the graph
RECORDED = {
    "iadd": lambda x, w: _then(x * 2, lambda y: y.__iadd__(w)),
    "add_alpha": lambda x, w: _then(x.sin(), lambda y: y.add_(w, alpha=-1.5)),
    "isub": lambda x, w: _then(x * x, lambda y: y.__isub__(w * x)),
    "imul": lambda x, w: _then(x + 1, lambda y: y.__imul__(w)),
    "itruediv": lambda x, w: _then(x * 3, lambda y: y.__itruediv__(w + 3)),
    "mul_then_div_twice": lambda x, w: _then(x.sin(), lambda y: y.mul_(x).div_(w + 3).mul_(w)),
    "clamp_": lambda x, w: _then(x * w, lambda y: y.clamp_(min=-0.5, max=0.8)),
    "copy_broadcast": lambda x, w: _then(x * 2, lambda y: y.copy_(w[0])) * x,
    "fill_tensor": lambda x, w: _then(x * 2, lambda y: y.fill_((w * w).sum())) * x,
    "zero_": lambda x, w: _then(x * w, lambda y: y.zero_()) + x * w,
    "setitem": lambda x, w: _then(x * 2, lambda y: y.__setitem__((slice(None), 1), w[:, 0] * 5)) * w,
    "setitem_mask": lambda x, w: _then(x.cos(), lambda y: y.__setitem__(x.numpy() > 0, 0.0)) * w,
    "constant_meets_grad": lambda x, w: _then(mg.zeros(2, 3, dtype="float64"), lambda y: y.__iadd__(x * w)),
}


def _then(y, update):
    update(y)
    return y


@pytest.mark.parametrize("name", list(RECORDED))
def test_update_inside_the_graph_is_recorded_and_gradient_checked(name):
    rng = np.random.default_rng(1)
    x = leaf(rng.uniform(-1, 1, (2, 3)))
    w = leaf(rng.uniform(0.5, 1.5, (2, 3)))
    report = mg.gradcheck(lambda a, b: RECORDED[name](a, b), [x, w], **TIGHT)
    assert report


def test_recorded_update_makes_the_tensor_an_op_result():
    x = leaf([1.0, 2.0])
    y = x * 2
    y += 1
    assert not y.is_leaf and y.requires_grad and y.grad_fn == "Add"
    c = mg.zeros(2, dtype="float64")
    c += x
    assert not c.is_leaf and c.requires_grad
    (y * c).sum().backward()
    np.testing.assert_allclose(x.grad, 4 * x.numpy() + 1)  # sum((2x + 1) x)


def test_recorded_updates_match_pytorch():
    torch = pytest.importorskip("torch")
    values = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.7]])
    x, w = leaf(values), leaf(values[::-1].copy())
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (values, values[::-1].copy()))
    for a, b, lib in ((x, w, mg), (tx, tw, torch)):
        y = a.exp()
        y = y * 1
        y += b
        y.mul_(b)
        y.clamp_(max=3.0)
        y[0, 1] = (b * b).sum()
        (y * a).sum().backward()
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad, tw.grad.numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- changed after being saved
def test_saved_input_changed_in_place_raises_at_backward_naming_the_update():
    x = leaf([1.0, 2.0])
    w = mg.tensor(np.array([3.0, 4.0]))
    loss = (x * w).sum()  # Mul saves w for x's gradient
    w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*Mul.*input 1.*mul_"):
        loss.backward()


def test_saved_output_changed_by_a_recorded_update_raises_at_backward():
    x = leaf([0.0, 1.0])
    y = x.exp()  # Exp saves its output
    y += 1  # recorded: y's history is now Add(exp(x) as it was, 1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*Exp.*its output.*add_"):
        y.sum().backward()


def test_saved_parameter_changed_by_an_optimizer_step_names_the_step():
    w = leaf([1.0, 2.0])
    x = leaf([3.0, 4.0])
    loss = (x * w).sum()
    w.grad = np.ones(2, dtype=np.float64)
    optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*SGD.step"):
        loss.backward()


def test_input_used_before_a_recorded_update_raises_instead_of_a_wrong_gradient():
    """z used y; then y's history became y + x. z's gradient must not flow into x."""
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y + 0  # Add saves nothing, so only the rewritten history makes this wrong
    y += x
    with pytest.raises(RuntimeError, match="input 0 of Add.*modified in place by add_ after Add used it"):
        z.sum().backward()


def test_a_constant_used_before_it_joined_the_graph_gets_no_gradient():
    x = leaf([1.0, 2.0])
    c = mg.ones(2, dtype="float64")
    z = x + c  # c is a constant here: z wants no gradient for it
    c += x  # now c requires grad, with the history 1 + x
    z.sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_update_before_use_is_fine():
    x = leaf([1.0, 2.0])
    y = x * 1
    y *= 3
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad, 18 * x.numpy())


# ----------------------------------------------------------------------------- errors
def test_a_view_inside_the_graph_changes_its_base_and_the_gradient_follows():
    """(tests/test_inplace_views.py checks more; a detach() alias is still refused: test_inplace_views.py)"""
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2
    y[0].add_(1.0)
    y.reshape(4).mul_(x.reshape(4))  # y = (2x + [1, 0]) * x: dy/dx = 4x + [1, 0]
    np.testing.assert_allclose(y.numpy(), (2 * x.numpy() + [[1.0], [0.0]]) * x.numpy())
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 4 * x.numpy() + [[1.0], [0.0]])


def test_one_of_several_outputs_inside_the_graph_is_refused():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    a, b = (x * 1).split(2)
    with pytest.raises(RuntimeError, match="shares memory|several outputs"):
        a += 1


def test_shape_dtype_and_read_only_errors():
    t = mg.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"add_: the result has shape \(2, 2\), but this tensor has shape \(2,\)"):
        t += mg.ones(2, 2)
    i = mg.arange(3)
    with pytest.raises(TypeError, match="add_: the result is float32, but this tensor is int64"):
        i += 0.5
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        mg.ones(1, 3).expand(2, 3).mul_(2.0)
    with pytest.raises(ValueError, match=r"copy_: a source of shape \(3,\) does not broadcast.*\(2,\)"):
        t.copy_(mg.ones(3))
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert t._version == 0


def test_integer_update_stays_integer():
    i = mg.arange(4)
    i += 2
    i *= 3
    i[0] = 100
    np.testing.assert_array_equal(i.numpy(), [100, 9, 12, 15])
    assert i.dtype == np.int64


def test_optimizers_still_update_in_place():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    memory = w.numpy()
    for opt in (optim.SGD([w], lr=0.1, momentum=0.9), optim.Adam([w], lr=0.1), optim.RMSprop([w], lr=0.1)):
        before = w.numpy().copy()
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
        assert w.numpy() is memory and w.is_leaf and w.requires_grad
        assert (w.numpy() < before).all()
