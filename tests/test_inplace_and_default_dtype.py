"""PyTorch's `inplace=` arguments, the in-place Tensor methods (relu_, addcmul_, lerp_, ...), the
default float dtype (set_default_dtype) and minigrad.Size: the course code that uses them runs
unchanged and gives PyTorch's numbers."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F


def _torch():  # PyTorch is optional: the comparisons with it skip without it
    return pytest.importorskip("torch")


F32 = dict(rtol=1e-6, atol=1e-6)  # the same float32 ops on the same numbers, in another order at most


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    yield
    mg.set_default_dtype(mg.float32)


# ---------------------------------------------------------------------- inplace= on the layers
IN_PLACE_LAYERS = [
    lambda: nn.ReLU(inplace=True), lambda: nn.LeakyReLU(0.1, inplace=True), lambda: nn.ELU(0.5, inplace=True),
    lambda: nn.ReLU6(inplace=True), lambda: nn.Hardtanh(-0.5, 0.5, inplace=True), lambda: nn.SiLU(inplace=True),
    lambda: nn.SELU(inplace=True), lambda: nn.Mish(inplace=True), lambda: nn.Dropout(0.3, inplace=True),
    lambda: nn.Dropout1d(0.3, inplace=True),
]


@pytest.mark.parametrize("make", IN_PLACE_LAYERS)
@pytest.mark.parametrize("before", ["linear", "batch_norm", "layer_norm"])
def test_an_in_place_layer_gives_the_out_of_place_numbers_and_gradients(make, before):
    mg.manual_seed(0)
    layer = make()
    first = {"linear": nn.Linear(6, 6), "batch_norm": nn.BatchNorm1d(6), "layer_norm": nn.LayerNorm(6)}[before]
    model = nn.Sequential(nn.Linear(6, 6), first, layer, nn.Linear(6, 2))  # (Dropout1d: (C, L) = (5, 6))
    x = mg.randn(5, 6, requires_grad=True)
    results = []
    for inplace in (True, False):
        layer.inplace = inplace
        mg.manual_seed(1)  # (the same dropout masks)
        out = model(x)
        out.square().sum().backward()
        results.append((out.numpy().copy(), x.grad.numpy().copy(), model[0].weight.grad.numpy().copy()))
        x.grad = None
        model.zero_grad()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **F32)


@pytest.mark.parametrize("name, call", [
    ("relu", lambda x: F.relu(x, inplace=True)), ("relu_", F.relu_),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2, True)), ("leaky_relu_", lambda x: F.leaky_relu_(x, 0.2)),
    ("elu", lambda x: F.elu(x, 0.7, True)), ("elu_", F.elu_), ("hardtanh", lambda x: F.hardtanh(x, -1, 1, True)),
    ("hardtanh_", F.hardtanh_), ("relu6", lambda x: F.relu6(x, True)), ("selu", lambda x: F.selu(x, True)),
    ("silu", lambda x: F.silu(x, True)), ("mish", lambda x: F.mish(x, True)),
    ("dropout", lambda x: F.dropout(x, 0.5, True, True)),
])
def test_the_functional_in_place_forms_write_into_their_input_and_return_it(name, call):
    x = mg.tensor(np.linspace(-3, 3, 12).reshape(3, 4))
    expected = x.numpy().copy()
    out = call(x)
    assert out is x
    assert not np.array_equal(x.numpy(), expected)  # (each of them changes some of these numbers)


def test_an_in_place_activation_on_a_view_in_the_graph_changes_the_tensor_it_views():
    x = mg.randn(2, 6, requires_grad=True)
    product = x * 2
    view = product.reshape(2, 2, 3)
    assert nn.ReLU(inplace=True)(view) is view
    np.testing.assert_array_equal(product.numpy(), np.maximum(2 * x.numpy(), 0))  # (the product changed too)
    product.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (x.numpy() > 0))


def test_channel_dropout_in_place_on_feature_maps_gives_the_out_of_place_numbers():
    conv, layer = nn.Conv2d(2, 4, 3, padding=1), nn.Dropout2d(0.5, inplace=True)
    x = mg.randn(3, 2, 5, 5, requires_grad=True)
    results = []
    for inplace in (True, False):
        layer.inplace, x.grad = inplace, None
        mg.manual_seed(7)
        out = layer(conv(x))
        out.square().sum().backward()
        results.append((out.numpy().copy(), x.grad.numpy().copy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **F32)
    assert (results[0][0] == 0).all(axis=(2, 3)).any()  # (whole maps were dropped)


def test_an_in_place_activation_outside_training_leaves_its_input_alone():
    x = mg.randn(4, 3)
    kept = x.numpy().copy()
    layer = nn.Dropout(0.5, inplace=True).eval()
    assert layer(x) is x
    np.testing.assert_array_equal(x.numpy(), kept)


@pytest.mark.parametrize("call", [
    lambda x: F.relu(x * 1.5 - 0.2, inplace=True).sum() * 1.0,
    lambda x: F.elu((x @ x.T), 0.3, inplace=True),
    lambda x: F.leaky_relu(x * 2 - 0.1, 0.1, inplace=True) * x,
    lambda x: F.hardtanh(x * 2, -0.5, 0.5, inplace=True),
])
def test_the_gradient_through_an_in_place_activation_passes_a_float64_check(call):
    # points away from the kinks, where the central difference is defined
    x = mg.tensor(np.array([[0.31, -0.72, 1.13], [-0.44, 0.58, -1.27]]), requires_grad=True)
    assert mg.gradcheck(call, (x,))


def test_an_in_place_activation_on_a_weight_is_refused_as_in_pytorch():
    w = mg.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="relu_: a leaf tensor that requires grad"):
        F.relu(w, inplace=True)
    with mg.no_grad():  # outside the graph it is allowed: the values change
        F.relu(w, inplace=True)
    assert (w.numpy() >= 0).all() and w.requires_grad


def test_an_in_place_activation_on_an_output_saved_for_backward_is_refused_at_backward():
    x = mg.randn(4, requires_grad=True)
    y = x.sigmoid()  # sigmoid's backward uses its output y
    F.relu(y - 0.5, inplace=True)  # (a new tensor: allowed)
    nn.ReLU(inplace=True)(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|changed in place"):
        y.sum().backward()


def test_the_layers_print_their_inplace_argument_as_pytorch():
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)" and repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.LeakyReLU(0.2, True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert repr(nn.Dropout(0.1)) == "Dropout(p=0.1, inplace=False)"


def test_a_resnet_block_with_in_place_relus_matches_pytorch():
    torch = _torch()

    class Block(nn.Module):  # torchvision's BasicBlock: relu(bn(conv)) and out += identity, in place
        def __init__(self, c, t=nn):
            super().__init__()
            self.conv1, self.bn1 = t.Conv2d(c, c, 3, padding=1, bias=False), t.BatchNorm2d(c)
            self.relu = t.ReLU(inplace=True)
            self.conv2, self.bn2 = t.Conv2d(c, c, 3, padding=1, bias=False), t.BatchNorm2d(c)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            return self.relu(out)

    class TorchBlock(torch.nn.Module):
        forward = Block.forward

        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c)
            self.relu = torch.nn.ReLU(inplace=True)
            self.conv2, self.bn2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c)

    mg.manual_seed(0)
    ours = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), Block(4))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(inplace=True), TorchBlock(4))
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    a, b = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_a, out_b = ours(a), theirs(b)
    out_a.square().sum().backward()
    out_b.square().sum().backward()
    np.testing.assert_allclose(out_a.numpy(), out_b.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours[0].weight.grad.numpy(), theirs[0].weight.grad.numpy(), rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------------- in-place Tensor methods
UNARY = "relu sigmoid tanh exp log sqrt rsqrt abs neg sign floor ceil round square reciprocal sin cos log1p expm1 erf"


@pytest.mark.parametrize("name", UNARY.split())
def test_each_in_place_method_is_its_out_of_place_op_written_into_the_tensor(name):
    values = np.array([0.3, 1.7, 2.2, 0.9], dtype=np.float32)  # (positive: log, sqrt and rsqrt are defined)
    x = mg.tensor(values)
    expected = getattr(mg.tensor(values), name)().numpy()
    assert getattr(x, name + "_")() is x
    np.testing.assert_allclose(x.numpy(), expected, **F32)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "square", "reciprocal", "sin"])
def test_the_gradient_through_an_in_place_method_passes_a_float64_check(name):
    x = mg.tensor(np.array([0.4, 1.3, -0.8]), requires_grad=True)

    def f(x):
        y = x * 1.0
        getattr(y, name + "_")()
        return y * x

    assert mg.gradcheck(f, (x,))


def test_addcmul_addcdiv_and_lerp_follow_their_formulas():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(5) for _ in range(3))
    b2 = np.abs(b) + 0.5
    x = mg.tensor(a)
    np.testing.assert_allclose(x.addcmul(mg.tensor(b), mg.tensor(c), value=0.3).numpy(), a + 0.3 * b * c)
    np.testing.assert_allclose(x.addcdiv(mg.tensor(c), mg.tensor(b2), value=-2).numpy(), a - 2 * c / b2)
    np.testing.assert_allclose(x.lerp(mg.tensor(c), 0.25).numpy(), a + 0.25 * (c - a))
    np.testing.assert_allclose(x.lerp(mg.tensor(c), mg.tensor(b)).numpy(), a + b * (c - a))
    y = mg.tensor(a.copy())
    assert y.addcmul_(mg.tensor(b), mg.tensor(c), value=0.3) is y
    np.testing.assert_allclose(y.numpy(), a + 0.3 * b * c)
    y.addcdiv_(mg.tensor(c), mg.tensor(b2)).lerp_(mg.tensor(b), 0.5).pow_(2).clip_(0, 1)
    np.testing.assert_allclose(y.numpy(), np.clip(((a + 0.3 * b * c + c / b2) * 0.5 + 0.5 * b) ** 2, 0, 1))


def test_adam_written_with_in_place_methods_matches_optim_adam():
    """The Adam a course writes by hand, with mul_, add_, addcmul_, addcdiv_ under no_grad."""
    mg.manual_seed(0)
    model = nn.Linear(4, 3)
    twin = nn.Linear(4, 3)
    twin.load_state_dict(model.state_dict())
    opt = mg.optim.Adam(twin.parameters(), lr=0.01)
    state = [(mg.zeros_like(p), mg.zeros_like(p)) for p in model.parameters()]
    x, y = mg.randn(8, 4), mg.randn(8, 3)
    beta1, beta2, eps, lr = 0.9, 0.999, 1e-8, 0.01
    for t in range(1, 6):
        for m in (model, twin):
            m.zero_grad()
            F.mse_loss(m(x), y).backward()
        with mg.no_grad():
            for p, (m1, m2) in zip(model.parameters(), state):
                m1.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                m2.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denom = (m2 / (1 - beta2 ** t)).sqrt_().add_(eps)
                p.addcdiv_(m1, denom, value=-lr / (1 - beta1 ** t))
        opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


def test_the_in_place_methods_match_pytorch():
    torch = _torch()
    values = np.array([0.3, 1.7, 2.2, 0.9], dtype=np.float32)
    for name in UNARY.split():
        ours, theirs = mg.tensor(values), torch.tensor(values)
        getattr(ours, name + "_")()
        getattr(theirs, name + "_")()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    a, b, c = (torch.tensor(v) for v in (values, values[::-1].copy(), values + 1))
    x = mg.tensor(values)
    x.addcmul_(mg.tensor(b.numpy()), mg.tensor(c.numpy()), value=0.5).addcdiv_(mg.tensor(b.numpy()), mg.tensor(
        c.numpy()), value=2).lerp_(mg.tensor(c.numpy()), 0.3)
    a.addcmul_(b, c, value=0.5).addcdiv_(b, c, value=2).lerp_(c, 0.3)
    np.testing.assert_allclose(x.numpy(), a.numpy(), rtol=1e-6)


# ---------------------------------------------------------------------- the default float dtype
FACTORIES = {
    "tensor": lambda: mg.tensor([1.5, 2.0]), "zeros": lambda: mg.zeros(2), "ones": lambda: mg.ones(2, 3),
    "empty": lambda: mg.empty(2), "full": lambda: mg.full((2,), 0.5), "eye": lambda: mg.eye(2),
    "linspace": lambda: mg.linspace(0, 1, 5), "arange": lambda: mg.arange(0.0, 1.0, 0.25),
    "randn": lambda: mg.randn(3), "rand": lambda: mg.rand(3), "normal": lambda: mg.normal(0.0, 1.0, (3,)),
    "int / 2": lambda: mg.arange(4) / 2, "int.exp()": lambda: mg.arange(3).exp(),
}
LAYERS = {
    "Linear": lambda: nn.Linear(3, 2).weight, "Conv2d": lambda: nn.Conv2d(1, 2, 3).weight,
    "Embedding": lambda: nn.Embedding(4, 2).weight, "LayerNorm": lambda: nn.LayerNorm(3).weight,
    "BatchNorm1d": lambda: nn.BatchNorm1d(3).running_var, "GroupNorm": lambda: nn.GroupNorm(1, 2).bias,
    "LSTM": lambda: nn.LSTM(2, 3).weight_hh_l0, "GRUCell": lambda: nn.GRUCell(2, 3).weight_ih,
    "PReLU": lambda: nn.PReLU().weight, "MultiheadAttention": lambda: nn.MultiheadAttention(4, 2).in_proj_weight,
}


@pytest.mark.parametrize("what", list(FACTORIES) + list(LAYERS))
def test_factories_and_layers_take_the_default_float_dtype(what):
    make = {**FACTORIES, **LAYERS}[what]
    assert mg.get_default_dtype() == "float32" and make().dtype == np.float32
    mg.set_default_dtype(mg.float64)
    assert mg.get_default_dtype() == mg.float64 and make().dtype == np.float64
    mg.set_default_dtype(mg.float32)
    assert make().dtype == np.float32


def test_the_default_dtype_leaves_integers_explicit_dtypes_and_arrays_alone():
    mg.set_default_dtype(mg.double)
    assert mg.tensor([1, 2]).dtype == np.int64 and mg.arange(3).dtype == np.int64
    assert mg.zeros(2, dtype=mg.float32).dtype == np.float32
    assert mg.tensor(np.ones(2, dtype=np.float32)).dtype == np.float32
    assert nn.Linear(2, 2, dtype=mg.float32).weight.dtype == np.float32


def test_a_float64_default_trains_a_model_whose_gradients_pass_a_check():
    mg.set_default_dtype(mg.float64)
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = mg.randn(5, 3)
    assert mg.gradcheck(lambda w: (nn.functional.linear(x, w, model[0].bias).tanh().sum()), (model[0].weight,))
    assert model(x).dtype == np.float64


def test_set_default_dtype_refuses_what_is_not_float32_or_float64():
    for bad in (mg.int64, mg.float16, "fruit"):
        with pytest.raises(TypeError, match="set_default_dtype"):
            mg.set_default_dtype(bad)
    assert mg.get_default_dtype() == "float32"


def test_the_default_dtype_and_full_match_pytorch():
    torch = _torch()
    try:
        for dtype in ("float64", "float32"):
            torch.set_default_dtype(getattr(torch, dtype))
            mg.set_default_dtype(dtype)
            for value in (0.5, 3, True):
                assert str(mg.full((2,), value).dtype) == str(torch.full((2,), value).dtype).replace("torch.", "")
            assert str(mg.tensor([1.5]).dtype) == str(torch.tensor([1.5]).dtype).replace("torch.", "")
            assert str(mg.get_default_dtype()) == str(torch.get_default_dtype()).replace("torch.", "")
    finally:
        torch.set_default_dtype(torch.float32)


# ---------------------------------------------------------------------- minigrad.Size
def test_size_is_a_shape_tuple_with_numel():
    s = mg.Size([2, 3, 4])
    assert s == (2, 3, 4) and mg.zeros(2, 3, 4).shape == s and mg.zeros(2, 3, 4).size() == s
    assert s.numel() == 24 and mg.Size().numel() == 1 and repr(s) == "minigrad.Size([2, 3, 4])"
    assert mg.zeros(s).shape == (2, 3, 4) and mg.randn(4, 6).view(mg.Size([6, 4])).shape == (6, 4)
    with pytest.raises(TypeError, match="Size: expected a sequence of ints"):
        mg.Size([2, 1.5])
