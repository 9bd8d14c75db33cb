"""nn.Module's hooks and the rest of PyTorch's module API that course code calls: forward and
forward pre-hooks (order, arguments, replaced outputs and args, handles), full backward hooks (the
gradients they see, replacing grad_input or grad_output), add_module / register_parameter,
named_children, get_submodule / get_parameter / get_buffer, prefix= and recurse= of the
traversals; a hooked module inside minigrad.compile; and the same hooks in PyTorch."""
import threading
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.nn import functional as F


def _mlp(seed=0):
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _x(seed=1, shape=(5, 3), requires_grad=False):
    rng = np.random.default_rng(seed)
    return mg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=requires_grad)


class TwoInputs(nn.Module):
    """forward(a, scale, b): two tensors and a number between them."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, a, scale, b):
        return self.fc(a) * scale + b * b


# ============================================================================ forward hooks
def test_forward_hooks_run_in_order_with_module_args_and_output():
    model = _mlp()
    x = _x()
    calls = []
    model[0].register_forward_hook(lambda m, args, out: calls.append(("first", m, args, out)))
    model[0].register_forward_hook(lambda m, args, out: calls.append(("second", m, args, out)))
    model[0].register_forward_hook(lambda m, args, out: calls.append(("prepended", m, args, out)), prepend=True)
    y = model(x)
    assert [c[0] for c in calls] == ["prepended", "first", "second"]
    for _, m, args, out in calls:
        assert m is model[0]
        assert isinstance(args, tuple) and len(args) == 1 and args[0] is x
        assert out.shape == (5, 4)
    np.testing.assert_array_equal(calls[0][3].numpy(), (x @ model[0].weight.T + model[0].bias).numpy())
    np.testing.assert_array_equal(y.numpy(), model[2](model[1](calls[0][3])).numpy())


def test_a_forward_hook_that_returns_a_value_replaces_the_output():
    model = _mlp()
    x = _x()
    plain = model(x).numpy()
    handle = model[1].register_forward_hook(lambda m, args, out: out * 0)
    replaced = model(x).numpy()
    np.testing.assert_array_equal(replaced, np.broadcast_to(model[2].bias.numpy(), replaced.shape))
    assert not np.array_equal(plain, replaced)
    handle.remove()
    np.testing.assert_array_equal(model(x).numpy(), plain)
    handle.remove()  # (a second remove does nothing)


def test_handles_remove_hooks_and_work_as_context_managers():
    lin = nn.Linear(3, 2)
    calls = []
    h1 = lin.register_forward_hook(lambda m, a, o: calls.append(1))
    h2 = lin.register_forward_pre_hook(lambda m, a: calls.append(2))
    assert h1.id != h2.id and lin._has_hooks
    lin(_x())
    assert calls == [2, 1]
    h1.remove()
    lin(_x())
    assert calls == [2, 1, 2]
    h2.remove()
    assert not lin._has_hooks and not lin._forward_hooks and not lin._forward_pre_hooks  # the fast path again
    with lin.register_forward_hook(lambda m, a, o: calls.append(3)) as handle:
        lin(_x())
    lin(_x())
    assert calls == [2, 1, 2, 3] and handle.id not in lin._forward_hooks and not lin._has_hooks


def test_hooks_cleared_by_hand_leave_the_module_working():
    lin = nn.Linear(3, 2)
    calls = []
    lin.register_forward_hook(lambda m, a, o: calls.append(o.shape))
    lin._forward_hooks.clear()  # (course code sometimes does this)
    lin(_x())
    assert calls == [] and not lin._has_hooks


def test_a_hook_that_removes_itself_while_running():
    lin = nn.Linear(3, 2)
    calls = []

    def once(m, args, out):
        calls.append(out.shape)
        handle.remove()

    handle = lin.register_forward_hook(once)
    lin(_x())
    lin(_x())
    assert calls == [(5, 2)]


def test_forward_hook_with_kwargs_sees_the_keyword_arguments():
    m = TwoInputs()
    a, b = _x(2), _x(3)
    seen = []

    def hook(module, args, kwargs, out):
        seen.append((args, kwargs, out))
        return out + 1

    m.register_forward_hook(hook, with_kwargs=True)
    out = m(a, 2.0, b=b)
    (args, kwargs, raw), = seen
    assert args == (a, 2.0) and kwargs == {"b": b}
    np.testing.assert_array_equal(out.numpy(), raw.numpy() + 1)


def test_always_call_forward_hooks_run_when_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("broken forward")

    m = Broken()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(("normal", out)))
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    with pytest.raises(ValueError, match="broken forward"):
        m(_x())
    assert calls == [("always", None)]


# ============================================================================ forward pre-hooks
def test_forward_pre_hooks_see_the_args_in_order_and_can_replace_them():
    lin = nn.Linear(3, 2)
    x, other = _x(1), _x(2)
    calls = []

    def first(m, args):
        calls.append(("first", m, args))
        return other  # a single value: wrapped in a tuple, as PyTorch

    def second(m, args):
        calls.append(("second", m, args))

    lin.register_forward_pre_hook(second)
    lin.register_forward_pre_hook(first, prepend=True)
    out = lin(x)
    assert [c[0] for c in calls] == ["first", "second"]
    assert calls[0][1] is lin and calls[0][2] == (x,)
    assert calls[1][2] == (other,)  # the next hook sees the replaced args
    np.testing.assert_array_equal(out.numpy(), (other @ lin.weight.T + lin.bias).numpy())
    assert not np.array_equal(out.numpy(), (x @ lin.weight.T + lin.bias).numpy())


def test_forward_pre_hook_returning_a_tuple_and_with_kwargs():
    m = TwoInputs()
    a, b = _x(2), _x(3)
    expected = m(a, 3.0, b).numpy()
    h = m.register_forward_pre_hook(lambda mod, args: (args[0], 3.0, args[2]))
    np.testing.assert_array_equal(m(a, 1.0, b).numpy(), expected)
    h.remove()
    seen = []

    def with_kwargs(mod, args, kwargs):
        seen.append((args, dict(kwargs)))
        return args, {"b": b}

    m.register_forward_pre_hook(with_kwargs, with_kwargs=True)
    np.testing.assert_array_equal(m(a, 3.0, b=a).numpy(), expected)
    assert seen[0][0] == (a, 3.0) and seen[0][1]["b"] is a


def test_forward_pre_hook_with_kwargs_must_return_args_and_kwargs():
    lin = nn.Linear(3, 2)
    lin.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"tuple of \(new_args, new_kwargs\)"):
        lin(_x())


def test_hooks_are_per_module_even_across_threads():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    calls = []
    a.register_forward_hook(lambda m, args, out: calls.append(threading.current_thread().name))
    threads = [threading.Thread(target=lambda: (a(_x()), b(_x())), name=f"t{i}") for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(calls) == ["t0", "t1", "t2"] and not b._has_hooks


# ============================================================================ backward hooks
def test_full_backward_hook_sees_the_gradients_computed_without_it():
    x = _x(requires_grad=True)
    model = _mlp()
    y = model(x)
    y.retain_grad()
    (y * y).sum().backward()
    grad_x, grads = x.grad.numpy().copy(), [p.grad.numpy().copy() for p in model.parameters()]

    model = _mlp()
    x = _x(requires_grad=True)
    hidden = []
    model[1].register_forward_hook(lambda m, a, out: hidden.append(out))
    calls = []
    model[2].register_full_backward_hook(lambda m, gi, go: calls.append(("last", m, gi, go)))
    model[0].register_full_backward_hook(lambda m, gi, go: calls.append(("first", m, gi, go)))
    y2 = model(x)
    y2.retain_grad()
    (y2 * y2).sum().backward()
    assert [c[0] for c in calls] == ["last", "first"]  # in the order backward reaches them
    _, m, gi, go = calls[1]
    assert m is model[0] and len(gi) == 1 and len(go) == 1
    np.testing.assert_array_equal(gi[0].numpy(), grad_x)  # d loss / d (the first layer's input)
    np.testing.assert_allclose(go[0].numpy(), (calls[0][2][0].numpy() * (1 - hidden[0].numpy() ** 2)), rtol=1e-5)
    _, m, gi, go = calls[0]
    np.testing.assert_array_equal(go[0].numpy(), 2 * y2.numpy())  # d (y*y).sum() / dy
    np.testing.assert_array_equal(go[0].numpy(), y2.grad.numpy())
    np.testing.assert_allclose(gi[0].numpy(), go[0].numpy() @ model[2].weight.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(x.grad.numpy(), grad_x)  # the hooks changed nothing
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_array_equal(p.grad.numpy(), g)


def test_a_backward_hook_that_returns_grad_input_changes_the_inputs_gradient():
    model = _mlp()
    x = _x(requires_grad=True)
    model(x).sum().backward()
    plain_x, plain_w0 = x.grad.numpy().copy(), model[0].weight.grad.numpy().copy()
    plain_w2 = model[2].weight.grad.numpy().copy()

    model.zero_grad()
    x = _x(requires_grad=True)
    model[0].register_full_backward_hook(lambda m, gi, go: (gi[0] * 3,))
    model[2].register_full_backward_hook(lambda m, gi, go: tuple(g * 2 for g in gi))
    model(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * plain_x, rtol=1e-6)
    np.testing.assert_allclose(model[0].weight.grad.numpy(), 2 * plain_w0, rtol=1e-6)  # upstream of model[2]
    np.testing.assert_array_equal(model[2].weight.grad.numpy(), plain_w2)  # its own weights: not its input


def test_a_backward_pre_hook_replaces_grad_output_before_the_module_sees_it():
    model = _mlp()
    x = _x(requires_grad=True)
    model(x).sum().backward()
    plain = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    order = []
    model[2].register_full_backward_hook(lambda m, gi, go: order.append(("hook", go[0].numpy().copy())))
    model[2].register_full_backward_pre_hook(lambda m, go: (order.append(("pre", go[0].numpy().copy())),
                                                            (go[0] * 0.5,))[1])
    model(x).sum().backward()
    assert [o[0] for o in order] == ["pre", "hook"]
    np.testing.assert_array_equal(order[0][1], np.ones((5, 2), np.float32))
    np.testing.assert_array_equal(order[1][1], np.full((5, 2), 0.5, np.float32))  # the hook sees the replaced one
    for p, g in zip(model.parameters(), plain):
        np.testing.assert_allclose(p.grad.numpy(), 0.5 * g, rtol=1e-6)


def test_backward_hook_grad_input_has_none_for_numbers_and_tensors_without_grad():
    m = TwoInputs()
    a, b = _x(2, requires_grad=True), _x(3)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m(a, 2.0, b).sum().backward()
    gi, = seen
    assert len(gi) == 3 and gi[1] is None and gi[2] is None
    np.testing.assert_array_equal(gi[0].numpy(), a.grad.numpy())


def test_backward_hook_when_no_input_requires_grad_gets_grad_input_none():
    lin = nn.Linear(3, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(_x()).sum().backward()
    (gi, go), = seen
    assert gi == (None,) and go[0].shape == (5, 2)
    assert lin.weight.grad is not None


def test_backward_hook_wrong_number_of_gradients_is_an_error():
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        lin(_x(requires_grad=True)).sum().backward()


def test_backward_hook_gradients_are_read_only_and_no_hook_runs_without_grad():
    lin = nn.Linear(3, 2)
    seen = []

    def hook(m, gi, go):
        seen.append(gi)
        with pytest.raises(ValueError):
            gi[0].numpy()[...] = 0  # (shared with the walk's sums: not to be changed in place)

    lin.register_full_backward_hook(hook)
    x = _x(requires_grad=True)
    lin(x).sum().backward()
    assert len(seen) == 1 and np.abs(x.grad.numpy()).sum() > 0
    with mg.no_grad():
        out = lin(x)
    assert not out.requires_grad and len(seen) == 1


def test_backward_hook_with_a_tuple_output():
    class Split(nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    m = Split()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    x = _x(requires_grad=True)
    a, b = m(x)
    (a.sum() + (b * b).sum()).backward()
    (gi, go), = seen
    np.testing.assert_array_equal(go[0].numpy(), np.ones((5, 3), np.float32))
    np.testing.assert_allclose(go[1].numpy(), 2 * b.numpy())
    np.testing.assert_allclose(gi[0].numpy(), x.grad.numpy())


# ============================================================================ registration and traversal
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])
        self.norm = nn.BatchNorm1d(3)
        self.head = nn.Sequential(nn.Linear(3, 2))
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 1)})

    def forward(self, x):
        for b in self.blocks:
            x = b(x) * self.scale
        return self.head(self.norm(x))


def test_add_module_register_module_and_register_parameter():
    m = nn.Module()
    m.add_module("fc", nn.Linear(3, 2))
    m.register_module("act", nn.ReLU())
    m.add_module("nothing", None)
    m.register_parameter("gain", nn.Parameter(np.ones(2, dtype=np.float32)))
    m.register_parameter("bias", None)
    assert list(m._modules) == ["fc", "act", "nothing"] and isinstance(m.fc, nn.Linear) and m.nothing is None
    assert [n for n, _ in m.named_children()] == ["fc", "act"]
    assert [n for n, _ in m.named_parameters()] == ["gain", "fc.weight", "fc.bias"]
    assert m.bias is None and "bias" in m._parameters and "bias" not in m.state_dict()
    assert m.get_parameter("gain") is m.gain
    m.add_module("fc", nn.Linear(3, 5))  # replaces, in its place
    assert list(m._modules) == ["fc", "act", "nothing"] and m.fc.out_features == 5
    for bad, error, match in [(("x.y", nn.ReLU()), KeyError, "contain"), (("", nn.ReLU()), KeyError, "empty"),
                              (("train", nn.ReLU()), KeyError, "attribute 'train' already exists"),
                              (("gain", nn.ReLU()), KeyError, "attribute 'gain' already exists"),
                              (("ok", nn.Parameter(np.ones(1))), TypeError, "not a Module subclass"),
                              ((1, nn.ReLU()), TypeError, "should be a string")]:
        with pytest.raises(error, match=match):
            m.add_module(*bad)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' object to parameter 'w'"):
        m.register_parameter("w", mg.ones(2))
    with pytest.raises(KeyError, match="attribute 'fc' already exists"):
        m.register_parameter("fc", nn.Parameter(np.ones(1)))


def test_add_module_in_a_sequential_is_called_in_order():
    seq = nn.Sequential()
    seq.add_module("fc", nn.Linear(3, 2))
    seq.add_module("act", nn.ReLU())
    x = _x()
    np.testing.assert_array_equal(seq(x).numpy(), seq.act(seq.fc(x)).numpy())
    assert [n for n, _ in seq.named_children()] == ["fc", "act"]


def test_named_children_and_children_list_each_child_once():
    shared = nn.Linear(3, 3)
    m = nn.Module()
    m.a, m.b, m.c = shared, nn.ReLU(), shared
    assert [n for n, _ in m.named_children()] == ["a", "b"]
    assert list(m.children()) == [shared, m.b]
    net = Net()
    assert [n for n, _ in net.named_children()] == ["blocks", "norm", "head", "heads"]


def test_get_submodule_get_parameter_get_buffer_and_their_errors():
    net = Net()
    assert net.get_submodule("") is net
    assert net.get_submodule("blocks.1") is net.blocks[1]
    assert net.get_submodule("head.0") is net.head[0]
    assert net.get_submodule("heads.a") is net.heads["a"]
    assert net.get_parameter("blocks.0.weight") is net.blocks[0].weight
    assert net.get_parameter("scale") is net.scale
    assert net.get_buffer("norm.running_mean") is net.norm.running_mean
    with pytest.raises(AttributeError, match=r"ModuleList at 'blocks' has no attribute `2`"):
        net.get_submodule("blocks.2.weight")
    with pytest.raises(AttributeError, match=r"Net has no attribute `body`"):
        net.get_submodule("body.fc")
    with pytest.raises(AttributeError, match=r"`weight` of Linear at 'blocks.0' is not an nn.Module"):
        net.get_submodule("blocks.0.weight")
    with pytest.raises(AttributeError, match=r"Linear has no attribute `kernel`"):
        net.get_parameter("blocks.0.kernel")
    with pytest.raises(AttributeError, match=r"`in_features` is not an nn.Parameter"):
        net.get_parameter("blocks.0.in_features")
    with pytest.raises(AttributeError, match=r"ModuleList at 'blocks' has no attribute `7`"):
        net.get_parameter("blocks.7.weight")
    with pytest.raises(AttributeError, match=r"`weight` is not a buffer"):
        net.get_buffer("norm.weight")


def test_parameters_and_buffers_with_prefix_and_recurse():
    net = Net()
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert list(net.parameters(recurse=False)) == [net.scale]
    assert [n for n, _ in net.blocks[0].named_parameters(prefix="blocks.0")] == ["blocks.0.weight", "blocks.0.bias"]
    assert [n for n, _ in net.named_parameters(prefix="model")][:3] == ["model.scale", "model.blocks.0.weight",
                                                                       "model.blocks.0.bias"]
    assert len(list(net.parameters())) == 1 + 4 + 2 + 2 + 2
    assert list(net.named_buffers(recurse=False)) == [] and list(net.buffers(recurse=False)) == []
    assert [n for n, _ in net.named_buffers()] == ["norm.running_mean", "norm.running_var",
                                                   "norm.num_batches_tracked"]
    assert [n for n, _ in net.norm.named_buffers(prefix="bn", recurse=False)] == [
        "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert list(net.buffers())[0] is net.norm.running_mean


def test_remove_duplicate_false_lists_shared_parameters_and_modules_under_each_name():
    shared = nn.Linear(2, 2)
    m = nn.Module()
    m.a, m.b = shared, shared
    m.tied = shared.weight
    assert [n for n, _ in m.named_parameters()] == ["tied", "a.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == [
        "tied", "a.weight", "a.bias", "b.weight", "b.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "a"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b"]
    assert [n for n, _ in m.named_modules(prefix="top")] == ["top", "top.a"]
    assert list(m.modules()) == [m, shared]


def test_requires_grad_on_a_module_and_its_submodules():
    net = Net()
    assert net.head.requires_grad_(False) is net.head
    assert [n for n, p in net.named_parameters() if not p.requires_grad] == ["head.0.weight", "head.0.bias"]
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())


# ============================================================================ hooks and minigrad.compile
def _training(hook=None, compiled=False, steps=5, add_at=None, remove_at=None):
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    X = mg.tensor(rng.standard_normal((16, 3)).astype(np.float32))
    Y = mg.tensor(rng.standard_normal((16, 1)).astype(np.float32))
    seen = []

    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    def default_hook(m, args, out):
        seen.append((out.shape, out))  # only reads: a shape, and the tensor itself

    hook = hook or default_hook
    handle = model[0].register_forward_hook(hook) if add_at is None else None
    step = mg.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        if i == add_at:
            handle = model[0].register_forward_hook(hook)
        if i == remove_at:
            handle.remove()
        losses.append(step(X, Y).item())
    return losses, seen, step, model


def test_a_forward_hook_in_a_compiled_step_runs_eagerly_with_the_eager_losses():
    eager, eager_seen, _, _ = _training()
    with pytest.warns(RuntimeWarning, match="Linear has hooks"):
        compiled, seen, step, model = _training(compiled=True)
    assert compiled == eager  # exactly
    assert len(seen) == 5 and [s[0] for s in seen] == [(16, 8)] * 5  # called at each step, as in eager mode
    for (_, a), (_, b) in zip(seen, eager_seen):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert step.stats["replayed"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(mg.ones(2, 3))  # (the model itself still runs, and its hook)
    assert len(seen) == 6


def test_a_forward_hook_that_changes_the_output_in_a_compiled_step():
    hook = lambda m, args, out: out * 0.5  # noqa: E731
    eager, _, _, _ = _training(hook=hook)
    plain, _, _, _ = _training(hook=lambda m, a, o: None)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        compiled, _, _, _ = _training(hook=hook, compiled=True)
    assert compiled == eager and compiled != plain


def test_a_hook_added_after_the_step_was_recorded_is_not_skipped_by_replays():
    eager, eager_seen, _, _ = _training(steps=10, add_at=4, remove_at=7)
    with pytest.warns(RuntimeWarning, match="has hooks"):
        compiled, seen, step, _ = _training(compiled=True, steps=10, add_at=4, remove_at=7)
    assert compiled == eager
    assert len(seen) == len(eager_seen) == 3  # steps 4, 5, 6
    # steps 0-3: eager, recorded, replayed twice; 4-6 eager (the hook); after its removal: eager, recorded, replayed
    assert step.stats["replayed"] == 3 and step.stats["recorded"] == 3


# ============================================================================ the same in PyTorch
def test_hooks_match_pytorch():
    torch = pytest.importorskip("torch")
    ours = _mlp()
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p, t in zip(ours.parameters(), theirs.parameters()):
            t.copy_(torch.from_numpy(p.numpy()))
    x_np = _x().numpy()

    def run(model, x, lib):
        record = {"forward": [], "pre": [], "backward": []}
        model[0].register_forward_pre_hook(lambda m, args: record["pre"].append(tuple(args[0].shape)))
        model[0].register_forward_hook(lambda m, args, out: record["forward"].append(out.detach().numpy().copy()))
        model[1].register_forward_hook(lambda m, args, out: out * 2)
        model[2].register_full_backward_hook(
            lambda m, gi, go: (record["backward"].append((gi[0].numpy().copy(), go[0].numpy().copy())),
                               (gi[0] * 3,))[1])
        model[2].register_full_backward_pre_hook(lambda m, go: (go[0] + 1,))
        y = model(x)
        (y * y).sum().backward()
        return record, y.detach().numpy(), x.grad.numpy(), [p.grad.numpy() for p in model.parameters()]

    mine = run(ours, mg.tensor(x_np, requires_grad=True), mg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run(theirs, torch.tensor(x_np, requires_grad=True), torch)
    assert mine[0]["pre"] == ref[0]["pre"] == [(5, 3)]
    np.testing.assert_allclose(mine[0]["forward"][0], ref[0]["forward"][0], rtol=1e-5, atol=1e-6)
    (gi, go), = mine[0]["backward"]
    (tgi, tgo), = ref[0]["backward"]
    np.testing.assert_allclose(go, tgo, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gi, tgi, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine[1], ref[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine[2], ref[2], rtol=1e-5, atol=1e-6)
    for a, b in zip(mine[3], ref[3]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_traversal_names_match_pytorch():
    torch = pytest.importorskip("torch")

    def build(lib):
        m = lib.nn.Module()
        m.add_module("body", lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.BatchNorm1d(3)))
        m.register_parameter("gain", lib.nn.Parameter(lib.ones(3)))
        m.register_parameter("nothing", None)
        m.shared = m.body[0]
        return m

    ours, theirs = build(mg), build(torch)
    for call in [lambda m: m.named_parameters(), lambda m: m.named_parameters(prefix="p", recurse=False),
                 lambda m: m.named_parameters(remove_duplicate=False), lambda m: m.named_buffers(prefix="b"),
                 lambda m: m.named_children(), lambda m: m.named_modules(),
                 lambda m: m.named_modules(remove_duplicate=False)]:
        assert [n for n, _ in call(ours)] == [n for n, _ in call(theirs)]
    assert type(ours.get_submodule("body.1")).__name__ == type(theirs.get_submodule("body.1")).__name__
    assert tuple(ours.get_parameter("body.0.weight").shape) == tuple(theirs.get_parameter("body.0.weight").shape)
