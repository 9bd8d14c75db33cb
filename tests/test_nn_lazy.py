"""The lazy layers the d2l book builds its models with: LazyLinear, LazyConv1d, LazyConv2d,
LazyConvTranspose2d, LazyBatchNorm1d, LazyBatchNorm2d (minigrad/nn/lazy.py).

For each one, over a table of settings: the layer its first call makes is the ordinary one made
with the same seed (the same weights, buffers and output); an optimizer made before that call
trains it (the same Parameter objects); it then is the ordinary class (type, repr, state_dict);
checkpoints load before the first call (into the layer, through a parent, from a file, from
PyTorch); and the errors name the layer and the shapes. Then d2l's LeNet and BN-LeNet, with its
`apply_init` (a dummy forward, then `net.apply(init)` keyed on `type(m) == nn.Linear`), train on
random data. With PyTorch installed, the shapes, types, reprs and state_dict keys match its lazy
layers after a forward, and the state dicts load both ways with the same outputs."""
import copy
from dataclasses import dataclass, field

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn.lazy import (
    LazyBatchNorm1d, LazyBatchNorm2d, LazyConv1d, LazyConv2d, LazyConvTranspose2d, LazyLinear, LazyModuleMixin,
    UninitializedBuffer, UninitializedParameter, is_lazy,
)


@dataclass
class Case:
    name: str
    lazy: str  # the class name (the same in minigrad.nn.lazy and torch.nn)
    eager: str
    kwargs: dict  # the lazy layer's arguments
    size_kwarg: str  # the eager layer's argument the input gives
    input_shape: tuple
    size: int
    eager_kwargs: dict = field(default_factory=dict)  # the eager layer's arguments besides the size

    def __post_init__(self):
        self.eager_kwargs = self.eager_kwargs or dict(self.kwargs)

    def __str__(self):
        return self.name


LAZY = {c.__name__: c for c in (LazyLinear, LazyConv1d, LazyConv2d, LazyConvTranspose2d, LazyBatchNorm1d,
                                 LazyBatchNorm2d)}

CASES = [
    Case("linear", "LazyLinear", "Linear", dict(out_features=3), "in_features", (5, 4), 4),
    Case("linear-3d-no-bias", "LazyLinear", "Linear", dict(out_features=6, bias=False), "in_features", (2, 5, 7), 7),
    Case("conv1d", "LazyConv1d", "Conv1d", dict(out_channels=4, kernel_size=3, padding=1), "in_channels",
         (2, 3, 9), 3),
    Case("conv2d", "LazyConv2d", "Conv2d", dict(out_channels=6, kernel_size=5, padding=2), "in_channels",
         (2, 3, 8, 8), 3),
    Case("conv2d-groups-stride", "LazyConv2d", "Conv2d",
         dict(out_channels=6, kernel_size=3, stride=2, padding=1, groups=2, bias=False), "in_channels",
         (2, 4, 7, 7), 4),
    Case("conv2d-unbatched", "LazyConv2d", "Conv2d", dict(out_channels=5, kernel_size=(3, 2), dilation=(1, 2)),
         "in_channels", (3, 8, 9), 3),
    Case("conv-transpose2d", "LazyConvTranspose2d", "ConvTranspose2d",
         dict(out_channels=4, kernel_size=3, stride=2, padding=1, output_padding=1), "in_channels", (2, 3, 5, 5), 3),
    Case("batchnorm1d", "LazyBatchNorm1d", "BatchNorm1d", dict(), "num_features", (6, 5), 5),
    Case("batchnorm1d-seq-momentum-none", "LazyBatchNorm1d", "BatchNorm1d", dict(momentum=None, eps=1e-3),
         "num_features", (4, 3, 7), 3),
    Case("batchnorm2d", "LazyBatchNorm2d", "BatchNorm2d", dict(), "num_features", (4, 3, 5, 5), 3),
    Case("batchnorm2d-no-affine", "LazyBatchNorm2d", "BatchNorm2d", dict(affine=False, momentum=0.3),
         "num_features", (4, 3, 5, 5), 3),
    Case("batchnorm2d-no-running", "LazyBatchNorm2d", "BatchNorm2d", dict(track_running_stats=False),
         "num_features", (4, 2, 3, 3), 2),
]
TRAINABLE = [c for c in CASES if c.kwargs.get("affine", True)]


def lazy_of(case):
    return LAZY[case.lazy](**case.kwargs)


def eager_of(case, **extra):
    return getattr(nn, case.eager)(**{case.size_kwarg: case.size, **case.eager_kwargs, **extra})


def data(shape, seed=0, dtype=np.float32):
    """Inputs from numpy's generator: drawing them does not move minigrad's (the weights')."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def arrays(state):
    return {k: np.asarray(v) for k, v in state.items()}


def assert_same_state(a, b):
    a, b = arrays(a), arrays(b)
    assert list(a) == list(b)
    for k in a:
        assert a[k].shape == b[k].shape and a[k].dtype == b[k].dtype, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ============================================================================ before the first call
@pytest.mark.parametrize("case", CASES, ids=str)
def test_before_the_first_call_the_parameters_exist_and_are_empty(case):
    m = lazy_of(case)
    eager_cls = getattr(nn, case.eager)
    assert isinstance(m, eager_cls) and type(m) is not eager_cls and isinstance(m, LazyModuleMixin)
    assert getattr(m, case.size_kwarg) == 0
    assert repr(m).startswith(case.lazy + "(")
    params = list(m.parameters())
    waiting = case.kwargs.get("affine", True) or case.kwargs.get("track_running_stats", True)
    assert m.has_uninitialized_params() == waiting
    for p in params:
        assert type(p) is UninitializedParameter and isinstance(p, nn.Parameter) and is_lazy(p)
        assert p.numel() == 0 and p.shape == (0,) and p.requires_grad and repr(p) == "<UninitializedParameter>"
    expected = list(eager_of(case).state_dict())
    assert list(m.state_dict()) == expected  # the same keys, empty values
    for k, v in m.state_dict().items():
        assert v.shape == ((0,) if k != "num_batches_tracked" else ())
    for name in ("running_mean", "running_var"):
        if name in expected:
            assert type(getattr(m, name)) is UninitializedBuffer


def test_making_a_lazy_layer_draws_no_random_numbers():
    mg.manual_seed(3)
    first = mg.randn(4).numpy()
    mg.manual_seed(3)
    for case in CASES:
        lazy_of(case)
    np.testing.assert_array_equal(mg.randn(4).numpy(), first)


# ============================================================================ (1) the same as the eager layer
@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_first_call_makes_the_eager_layer_of_the_same_seed(case):
    x = data(case.input_shape)
    mg.manual_seed(11)
    lazy = lazy_of(case)
    y_lazy = lazy(mg.tensor(x))
    mg.manual_seed(11)
    eager = eager_of(case)
    y_eager = eager(mg.tensor(x))
    assert_same_state(lazy.state_dict(), eager.state_dict())  # weights, and the running statistics after one batch
    np.testing.assert_array_equal(y_lazy.numpy(), y_eager.numpy())
    assert y_lazy.shape == y_eager.shape and y_lazy.dtype == y_eager.dtype == np.float32
    # the next calls too (the layer is the eager one now), in eval mode
    lazy.eval(), eager.eval()
    np.testing.assert_array_equal(lazy(mg.tensor(x)).numpy(), eager(mg.tensor(x)).numpy())


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("linear", "conv2d", "batchnorm2d")], ids=str)
def test_to_double_before_the_first_call_gives_a_double_layer(case):
    x = data(case.input_shape, dtype=np.float64)
    mg.manual_seed(5)
    lazy = lazy_of(case).double()
    assert all(p.dtype == np.float64 and is_lazy(p) for p in lazy.parameters())
    y = lazy(mg.tensor(x))
    mg.manual_seed(5)
    eager = eager_of(case, dtype=np.float64)
    y_eager = eager(mg.tensor(x))
    assert_same_state(lazy.state_dict(), eager.state_dict())
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.numpy(), y_eager.numpy())


def test_a_frozen_parameter_stays_frozen_and_dtype_argument_is_kept():
    m = LazyLinear(3, dtype=np.float64)
    m.bias.requires_grad_(False)
    m(mg.tensor(data((2, 4), dtype=np.float64)))
    assert m.weight.dtype == np.float64 and m.weight.requires_grad and not m.bias.requires_grad


# ============================================================================ (2) an optimizer made first
@pytest.mark.parametrize("case", TRAINABLE, ids=str)
def test_an_optimizer_made_before_the_first_call_trains_the_layer(case):
    mg.manual_seed(2)
    m = lazy_of(case)
    params = list(m.parameters())
    opt = mg.optim.SGD(m.parameters(), lr=0.05, momentum=0.5)
    x = mg.tensor(data(case.input_shape, seed=1))
    target = None
    losses = []
    for _ in range(6):
        y = m(x)
        if target is None:
            target = mg.tensor(data(y.shape, seed=2))
        loss = ((y - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert type(m) is getattr(nn, case.eager)
    now = list(m.parameters())
    assert len(now) == len(params) and all(a is b for a, b in zip(now, params))
    assert all(type(p) is nn.Parameter and p.grad is not None and p.grad.shape == p.shape for p in now)
    assert opt.param_groups[0]["params"][0] is m.weight
    assert losses[-1] < losses[0] and all(np.isfinite(losses)), losses


def test_adam_made_before_the_first_call_trains_a_small_mlp():
    mg.manual_seed(0)
    net = nn.Sequential(LazyLinear(16), nn.ReLU(), LazyBatchNorm1d(), LazyLinear(1))
    opt = mg.optim.Adam(net.parameters(), lr=0.01)
    x = mg.tensor(data((32, 5), seed=3))
    y = mg.tensor(data((32, 1), seed=4))
    losses = []
    for _ in range(10):
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert [type(m) for m in net] == [nn.Linear, nn.ReLU, nn.BatchNorm1d, nn.Linear]
    assert [p.shape for p in net.parameters()] == [(16, 5), (16,), (16,), (16,), (1, 16), (1,)]
    assert losses[-1] < losses[0] * 0.9, losses


# ============================================================================ (3) then it is the eager class
@pytest.mark.parametrize("case", CASES, ids=str)
def test_after_the_first_call_it_is_the_eager_class(case):
    lazy = lazy_of(case)
    lazy(mg.tensor(data(case.input_shape)))
    eager = eager_of(case)
    assert type(lazy) is type(eager)
    assert not isinstance(lazy, LazyModuleMixin) and not hasattr(lazy, "has_uninitialized_params")
    assert repr(lazy) == repr(eager)
    assert list(lazy.state_dict()) == list(eager.state_dict())
    assert sorted(lazy.__dict__) == sorted(eager.__dict__)
    assert [(n, p.shape) for n, p in lazy.named_parameters()] == [(n, p.shape) for n, p in eager.named_parameters()]
    assert [(n, t.shape, type(t)) for n, t in lazy.named_buffers()] == [
        (n, t.shape, type(t)) for n, t in eager.named_buffers()]
    # and it loads the eager layer's state dict, and the other way round, as the eager class does
    eager.load_state_dict(lazy.state_dict())
    lazy.load_state_dict(eager.state_dict())
    wrong = {k: np.zeros(np.shape(v) + (1,)) for k, v in eager.state_dict().items()}
    if wrong:
        with pytest.raises(ValueError, match="shape mismatch"):
            lazy.load_state_dict(wrong)


def test_training_mode_and_hooks_set_before_the_first_call_stay():
    m = LazyBatchNorm2d().eval()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(out.shape))
    x = mg.tensor(data((2, 3, 4, 4)))
    y = m(x)
    assert type(m) is nn.BatchNorm2d and not m.training and calls == [(2, 3, 4, 4)]
    np.testing.assert_allclose(y.numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-6)  # eval: running 0 and 1
    assert int(m.num_batches_tracked.item()) == 0
    m(x)
    assert len(calls) == 2


def test_a_deep_copy_before_the_first_call_is_a_lazy_layer_of_its_own():
    m = LazyConv2d(4, 3)
    c = copy.deepcopy(m)
    c(mg.tensor(data((1, 2, 5, 5))))
    assert type(c) is nn.Conv2d and c.weight.shape == (4, 2, 3, 3)
    assert type(m) is LazyConv2d and m.has_uninitialized_params()
    m(mg.tensor(data((1, 5, 5, 5))))
    assert m.weight.shape == (4, 5, 3, 3)


# ============================================================================ checkpoints before the first call
class MLP(nn.Module):
    """d2l 6.6 (File I/O): saved after a forward, loaded into a fresh lazy MLP."""

    def __init__(self):
        super().__init__()
        self.hidden = LazyLinear(16)
        self.bn = LazyBatchNorm1d()
        self.output = LazyLinear(3)

    def forward(self, x):
        return self.output(self.bn(self.hidden(x)).relu())


def test_d2l_file_io_a_lazy_model_loads_a_checkpoint_before_its_first_call(tmp_path):
    net = MLP()
    x = mg.tensor(data((8, 10)))
    net(x)
    net(x)
    net.eval()
    y = net(x).numpy()
    mg.save(net.state_dict(), str(tmp_path / "mlp.npz"))
    clone = MLP()
    mg.manual_seed(99)
    before = mg.randn(3).numpy()
    mg.manual_seed(99)
    result = clone.load_state_dict(mg.load(str(tmp_path / "mlp.npz")))
    np.testing.assert_array_equal(mg.randn(3).numpy(), before)  # loading drew no random numbers
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert type(clone.hidden) is nn.Linear and type(clone.bn) is nn.BatchNorm1d and type(clone.output) is nn.Linear
    assert repr(clone) == repr(net)
    assert_same_state(clone.state_dict(), net.state_dict())
    clone.eval()
    np.testing.assert_array_equal(clone(x).numpy(), y)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_loading_into_the_lazy_layer_materializes_it(case):
    mg.manual_seed(4)
    eager = eager_of(case)
    x = mg.tensor(data(case.input_shape))
    eager(x)
    lazy = lazy_of(case)
    lazy.load_state_dict(eager.state_dict())
    waiting = case.kwargs.get("affine", True) or case.kwargs.get("track_running_stats", True)
    if waiting:  # (a batch norm with no tensors at all learns its size only from an input)
        assert type(lazy) is type(eager) and repr(lazy) == repr(eager)
    assert_same_state(lazy.state_dict(), eager.state_dict())
    lazy.eval(), eager.eval()
    np.testing.assert_array_equal(lazy(x).numpy(), eager(x).numpy())
    assert type(lazy) is type(eager)


def test_the_state_of_a_layer_never_called_leaves_another_waiting():
    first = nn.Sequential(LazyLinear(3), LazyBatchNorm1d())
    second = nn.Sequential(LazyLinear(3), LazyBatchNorm1d())
    second.load_state_dict(first.state_dict())
    second[0].load_state_dict(first[0].state_dict())
    assert type(second[0]) is LazyLinear
    assert second[0].has_uninitialized_params() and second[1].has_uninitialized_params()
    second(mg.tensor(data((4, 6))))
    assert second[0].weight.shape == (3, 6) and second[1].running_mean.shape == (3,)


def test_a_partial_load_keeps_the_loaded_tensor_and_initialises_the_rest():
    m = LazyLinear(3)
    w = data((3, 4))
    result = m.load_state_dict({"weight": w}, strict=False)
    assert result.missing_keys == ["bias"]
    assert type(m) is LazyLinear and type(m.weight) is nn.Parameter and is_lazy(m.bias)
    with pytest.raises(ValueError, match=r"LazyLinear\(out_features=3\).*\(2, 5\).*in_features=5.*in_features=4"):
        m(mg.tensor(data((2, 5))))
    y = m(mg.tensor(data((2, 4))))
    assert type(m) is nn.Linear and m.bias.shape == (3,) and y.shape == (2, 3)
    np.testing.assert_array_equal(m.weight.numpy(), w)


def test_a_checkpoint_of_the_wrong_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"LazyLinear\(out_features=3\).*weight has shape \(4, 5\).*"
                                         r"\(3, in_features\)"):
        LazyLinear(3).load_state_dict({"weight": np.zeros((4, 5)), "bias": np.zeros(3)})
    with pytest.raises(ValueError, match=r"LazyConv2d.*weight has shape \(6, 2, 3, 3\).*\(6, in_channels, 5, 5\)"):
        LazyConv2d(6, 5).load_state_dict({"weight": np.zeros((6, 2, 3, 3)), "bias": np.zeros(6)})
    with pytest.raises(ValueError, match=r"LazyBatchNorm2d.*disagree about num_features.*weight \(4,\) gives 4"):
        LazyBatchNorm2d().load_state_dict(
            {"weight": np.ones(4), "bias": np.zeros(4), "running_mean": np.zeros(5), "running_var": np.ones(5),
             "num_batches_tracked": np.array(0)})
    net = nn.Sequential(LazyLinear(3))
    with pytest.raises(ValueError, match=r"shape mismatch for 0\.weight: checkpoint \(4, 5\)"):
        net.load_state_dict({"0.weight": np.zeros((4, 5)), "0.bias": np.zeros(3)})
    assert type(net[0]) is LazyLinear and net[0].has_uninitialized_params()
    with pytest.raises(ValueError, match=r"LazyLinear\(out_features=3\)\.weight must have shape \(3, \?\), "
                                         r"got \(2, 2\)"):
        net[0].weight.data = np.zeros((2, 2))


# ============================================================================ errors at the first call
@pytest.mark.parametrize("make, shape, pattern", [
    (lambda: LazyLinear(3), (),
     r"LazyLinear\(out_features=3\): expected an input of shape \(\.\.\., in_features\).*got shape \(\)"),
    (lambda: LazyConv1d(4, 3), (2, 3, 5, 5),
     r"LazyConv1d\(out_channels=4, kernel_size=\(3,\)\): expected an input of shape \(N, C_in, L\) or "
     r"\(C_in, L\).*got shape \(2, 3, 5, 5\)"),
    (lambda: LazyConv2d(6, 5), (3, 28),
     r"LazyConv2d\(out_channels=6, kernel_size=\(5, 5\)\): expected an input of shape \(N, C_in, H, W\) or "
     r"\(C_in, H, W\).*got shape \(3, 28\)"),
    (lambda: LazyConvTranspose2d(2, 3), (1, 1, 2, 3, 3),
     r"LazyConvTranspose2d.*\(N, C_in, H, W\).*got shape \(1, 1, 2, 3, 3\)"),
    (lambda: LazyConv2d(6, 3, groups=2), (2, 3, 5, 5),
     r"LazyConv2d.*input \(2, 3, 5, 5\) has 3 channels.*groups=2"),
    (lambda: LazyBatchNorm1d(), (2, 3, 4, 5),
     r"LazyBatchNorm1d\(\): expected an input of shape \(N, C\) or \(N, C, L\), got shape \(2, 3, 4, 5\)"),
    (lambda: LazyBatchNorm2d(), (8, 16),
     r"LazyBatchNorm2d\(\): expected an input of shape \(N, C, H, W\), got shape \(8, 16\)"),
])
def test_an_input_of_the_wrong_shape_names_the_layer_and_the_shapes(make, shape, pattern):
    m = make()
    with pytest.raises(ValueError, match=pattern):
        m(mg.tensor(np.zeros(shape, dtype=np.float32)))
    assert isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()  # nothing half made


def test_errors_of_the_arguments_come_at_construction():
    with pytest.raises(ValueError, match=r"LazyConv2d: groups=4 .*out_channels=6"):
        LazyConv2d(6, 3, groups=4)
    with pytest.raises(ValueError, match="padding_mode"):
        LazyConv2d(6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="kernel_size"):
        LazyConv1d(6, (3, 3))
    with pytest.raises(ValueError, match="ConvTranspose2d"):
        LazyConvTranspose2d(6, 3, padding="same")


# ============================================================================ (4) d2l's LeNet with apply_init
def lenet():
    """d2l 7.6: LeNet of lazy layers."""
    return nn.Sequential(
        LazyConv2d(6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        LazyConv2d(16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(), LazyLinear(120), nn.Sigmoid(), LazyLinear(84), nn.Sigmoid(), LazyLinear(10))


def bn_lenet():
    """d2l 8.5: LeNet with batch normalization."""
    return nn.Sequential(
        LazyConv2d(6, kernel_size=5), LazyBatchNorm2d(), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        LazyConv2d(16, kernel_size=5), LazyBatchNorm2d(), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(), LazyLinear(120), LazyBatchNorm1d(), nn.Sigmoid(), LazyLinear(84), LazyBatchNorm1d(),
        nn.Sigmoid(), LazyLinear(10))


@pytest.mark.parametrize("make, shapes", [
    (lenet, [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,), (84, 120), (84,), (10, 84), (10,)]),
    (bn_lenet, [(6, 1, 5, 5), (6,), (6,), (6,), (16, 6, 5, 5), (16,), (16,), (16,), (120, 256), (120,), (120,),
                (120,), (84, 120), (84,), (84,), (84,), (10, 84), (10,)]),
], ids=["lenet", "bn-lenet"])
def test_d2l_lenet_apply_init_then_train(make, shapes):
    mg.manual_seed(0)
    net = make()
    size = 28
    # d2l's Module.apply_init: one dummy forward, then net.apply(init) keyed on the exact type
    net(mg.zeros(1 if make is lenet else 2, 1, size, size))
    before = {id(m): m.weight.numpy().copy() for m in net if type(m) in (nn.Linear, nn.Conv2d)}
    touched = []

    def init_cnn(module):
        if type(module) == nn.Linear or type(module) == nn.Conv2d:  # noqa: E721  (d2l's test)
            nn.init.xavier_uniform_(module.weight)
            touched.append(module)

    net.apply(init_cnn)
    assert len(touched) == 5 and len(before) == 5
    for m in touched:
        assert not np.array_equal(m.weight.numpy(), before[id(m)])
        fan_in, fan_out = m.weight.shape[1] * int(np.prod(m.weight.shape[2:])), m.weight.shape[0] * int(
            np.prod(m.weight.shape[2:]))
        assert np.abs(m.weight.numpy()).max() <= np.sqrt(6 / (fan_in + fan_out)) + 1e-7
    assert [p.shape for p in net.parameters()] == shapes
    assert not any(isinstance(m, LazyModuleMixin) for m in net.modules())
    # d2l's Trainer makes the optimizer after apply_init
    opt = mg.optim.SGD(net.parameters(), lr=0.1)
    x = mg.tensor(data((16, 1, size, size), seed=5))
    labels = mg.tensor(np.random.default_rng(6).integers(0, 10, 16))
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        loss = loss_fn(net(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses


# ============================================================================ (5) against PyTorch
def _without_norm_bias(text):
    """Recent PyTorch's batch norm takes `bias` (whether there is a shift) and prints it; minigrad's
    BatchNorm has no such argument (affine gives both weight and bias), so it is left out."""
    return text.replace(", bias=True, track_running_stats", ", track_running_stats").replace(
        ", bias=False, track_running_stats", ", track_running_stats")


def _torch_input(torch, x):
    return torch.from_numpy(np.ascontiguousarray(x))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_same_as_pytorch_lazy_layers(case):
    torch = pytest.importorskip("torch")
    x = data(case.input_shape, seed=7)
    ours = lazy_of(case)
    theirs = getattr(torch.nn, case.lazy)(**case.kwargs)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    y = ours(mg.tensor(x))
    with torch.no_grad():
        theirs(_torch_input(torch, x))
    assert type(ours).__name__ == type(theirs).__name__ == case.eager
    assert repr(ours) == _without_norm_bias(repr(theirs))
    assert getattr(ours, case.size_kwarg) == getattr(theirs, case.size_kwarg) == case.size
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    # our state dict (after one batch) into PyTorch's eager layer: the same outputs
    eager = getattr(torch.nn, case.eager)(**{case.size_kwarg: case.size, **case.eager_kwargs})
    eager.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in ours.state_dict().items()})
    with torch.no_grad():
        expected = eager(_torch_input(torch, x)).numpy()
    y = ours(mg.tensor(x))
    assert tuple(y.shape) == expected.shape
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-5)
    for k, v in eager.state_dict().items():  # the running statistics moved the same way
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_pytorch_state_dict_loads_into_a_lazy_layer(case):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = data(case.input_shape, seed=8)
    eager = getattr(torch.nn, case.eager)(**{case.size_kwarg: case.size, **case.eager_kwargs})
    with torch.no_grad():
        eager(_torch_input(torch, x))  # (moves batch norm's running statistics)
    eager.eval()
    ours = lazy_of(case)
    ours.load_state_dict(eager.state_dict())  # torch tensors, straight into the lazy layer
    ours.eval()
    y = ours(mg.tensor(x))
    assert type(ours).__name__ == case.eager
    with torch.no_grad():
        np.testing.assert_allclose(y.numpy(), eager(_torch_input(torch, x)).numpy(), rtol=1e-4, atol=1e-5)


def test_a_lazy_lenet_state_dict_loads_into_pytorchs_eager_lenet():
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    mg.manual_seed(1)
    net = bn_lenet()
    x = data((4, 1, 28, 28), seed=9)
    net(mg.tensor(x))
    theirs = tnn.Sequential(
        tnn.Conv2d(1, 6, kernel_size=5), tnn.BatchNorm2d(6), tnn.Sigmoid(), tnn.AvgPool2d(kernel_size=2, stride=2),
        tnn.Conv2d(6, 16, kernel_size=5), tnn.BatchNorm2d(16), tnn.Sigmoid(), tnn.AvgPool2d(kernel_size=2, stride=2),
        tnn.Flatten(), tnn.Linear(256, 120), tnn.BatchNorm1d(120), tnn.Sigmoid(), tnn.Linear(120, 84),
        tnn.BatchNorm1d(84), tnn.Sigmoid(), tnn.Linear(84, 10))
    theirs.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in net.state_dict().items()})
    assert repr(net) == _without_norm_bias(repr(theirs))
    net.eval(), theirs.eval()
    with torch.no_grad():
        expected = theirs(_torch_input(torch, x)).numpy()
    np.testing.assert_allclose(net(mg.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
