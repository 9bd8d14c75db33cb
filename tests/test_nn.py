"""minigrad.nn: Module mechanics, layers, init, gradient checks of layers and losses, training,
state-dict round trips and an exactly reproducible resume from a checkpoint, and the functional API."""
import math

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn, ops
from minigrad.nn import init

from strategies import leaf, normal

# gradient checks: float64 central differences are good to ~1e-9 at these sizes, so check much
# tighter than gradcheck's defaults (a gradient off by 0.1% must fail), as strategies.check_op does
TIGHT = {"atol": 1e-7, "rtol": 1e-5}
BACKENDS = ["numba", "numpy"]


def gradcheck_module(module, fn, inputs):
    """gradcheck `fn(*inputs)` w.r.t. the inputs and every parameter of `module` (made float64)."""
    module.double()
    params = list(module.parameters())
    assert params and all(p.dtype == np.float64 for p in params)
    n = len(inputs)
    report = minigrad.gradcheck(lambda *args: fn(*args[:n]), [*inputs, *params], **TIGHT)
    assert report
    return report


def t64(values, requires_grad=False):
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ============================================================================ module mechanics
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(self.norm(x)).relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.embed = nn.Embedding(5, 3)
        self.blocks = nn.ModuleList([Block(3), Block(3)])
        self.head = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Dropout(0.1), nn.Linear(4, 5, bias=False))
        self.not_a_parameter = minigrad.zeros(2)  # a plain Tensor: not registered
        self.plain_list = [nn.Linear(3, 3)]  # a plain list hides its modules

    def forward(self, ids):
        x = self.embed(ids) * self.scale
        for block in self.blocks:
            x = block(x)
        return self.head(x)


NET_PARAMETER_NAMES = [
    "scale",
    "embed.weight",
    "blocks.0.norm.weight", "blocks.0.norm.bias", "blocks.0.fc.weight", "blocks.0.fc.bias",
    "blocks.1.norm.weight", "blocks.1.norm.bias", "blocks.1.fc.weight", "blocks.1.fc.bias",
    "head.0.weight", "head.0.bias", "head.3.weight",
]


def test_named_parameters_dotted_names_in_registration_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == NET_PARAMETER_NAMES
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert [id(p) for p in net.parameters()] == [id(p) for _, p in net.named_parameters()]
    assert dict(net.named_parameters())["blocks.1.fc.weight"] is net.blocks[1].fc.weight
    assert dict(net.named_parameters())["head.3.weight"] is net.head[3].weight
    # the plain Tensor and the module inside a plain list are not registered
    ids = {id(p) for p in net.parameters()}
    assert id(net.not_a_parameter) not in ids
    assert id(net.plain_list[0].weight) not in ids


def test_num_parameters():
    net = Net()
    expected = 3 + 5 * 3 + 2 * (3 + 3 + 9 + 3) + (12 + 4) + 20
    assert net.num_parameters() == expected
    assert sum(p.size for p in net.parameters()) == expected


def test_children_and_modules():
    net = Net()
    assert list(net.children()) == [net.embed, net.blocks, net.head]
    modules = list(net.modules())
    assert modules[0] is net
    assert len(modules) == 1 + 1 + (1 + 2 * 3) + (1 + 4)
    assert len({id(m) for m in modules}) == len(modules)
    for m in (net.blocks[0].norm, net.blocks[1].fc, net.head[2]):
        assert any(m is x for x in modules)
    assert not any(m is net.plain_list[0] for m in modules)


def test_reassigning_and_deleting_attributes_updates_registration():
    net = Block(3)
    net.fc = nn.Linear(3, 2)
    assert [n for n, _ in net.named_parameters()] == ["norm.weight", "norm.bias", "fc.weight", "fc.bias"]
    assert net.fc.weight.shape == (2, 3)
    net.fc = None  # replaced by a non-module: no longer registered
    assert [n for n, _ in net.named_parameters()] == ["norm.weight", "norm.bias"]
    del net.norm
    assert list(net.named_parameters()) == []
    assert list(net.children()) == []


def test_tied_parameters_listed_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(7, 4)
            self.out = nn.Linear(4, 7, bias=False)
            self.out.weight = self.embed.weight  # (7, 4) both: weight tying

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["embed.weight"]
    assert len(list(m.parameters())) == 1
    assert m.num_parameters() == 28
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == ["embed.weight", "out.weight"]
    # an optimizer accepts the de-duplicated list (it refuses a parameter listed twice)
    minigrad.optim.SGD(m.parameters(), lr=0.1)
    # the gradient through both uses accumulates in the one parameter
    ids = np.array([1, 3, 3])
    logits = m.out(m.embed(ids))
    logits.sum().backward()
    w = m.embed.weight.numpy()
    expected = np.zeros((7, 4), dtype=np.float32)
    # L = sum(x W^T), x = W[ids]: through the lookup dL/dx_i = sum_j W_j lands on row ids[i];
    # through the projection dL/dW_j = sum_i x_i for every row j
    np.add.at(expected, ids, np.broadcast_to(w.sum(axis=0), (3, 4)))
    expected += np.broadcast_to(w[ids].sum(axis=0), (7, 4))
    np.testing.assert_allclose(m.embed.weight.grad, expected, rtol=1e-5, atol=1e-6)


def test_shared_module_traversed_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(seq.parameters())) == 2
    assert seq.num_parameters() == 6
    assert sum(1 for m in seq.modules() if m is shared) == 1


def test_sequential_forward_indexing_and_len():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert len(seq) == 3
    assert isinstance(seq[1], nn.ReLU) and seq[-1] is seq[2]
    assert [type(m) for m in seq] == [nn.Linear, nn.ReLU, nn.Linear]
    x = minigrad.randn(5, 3)
    np.testing.assert_array_equal(seq(x).numpy(), seq[2](seq[1](seq[0](x))).numpy())
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_module_list_append_and_iterate():
    layers = nn.ModuleList()
    assert len(layers) == 0
    layers.append(nn.Linear(2, 3)).append(nn.Linear(3, 1))
    assert len(layers) == 2
    assert [m.out_features for m in layers] == [3, 1]
    assert layers[-1].in_features == 3
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_train_eval_recursive():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert not net.head[2].training
    assert net.train() is net
    assert all(m.training for m in net.modules())
    net.train(False)
    assert not any(m.training for m in net.modules())


def test_eval_mode_turns_off_dropout_inside_the_tree():
    net = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5))
    x = minigrad.randn(16, 8)
    net.eval()
    a, b = net(x).numpy(), net(x).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, net[0](x).numpy())
    net.train()
    c = net(x).numpy()
    assert (c == 0).sum() > (a == 0).sum()


def test_zero_grad():
    net = Net()
    net(np.array([[0, 1, 4]])).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_dtype_converts_parameters_and_float_buffers_in_place():
    net = Net()
    net.blocks[0].register_buffer("table", minigrad.randn(2, 3))  # float buffer
    net.blocks[0].register_buffer("counts", minigrad.tensor(np.arange(3)), persistent=True)  # int buffer
    before = [id(p) for p in net.parameters()]
    values = [p.numpy().copy() for p in net.parameters()]
    net(np.array([1, 2])).sum().backward()
    assert net.double() is net
    assert [id(p) for p in net.parameters()] == before
    assert all(p.dtype == np.float64 for p in net.parameters())
    assert all(p.grad is None for p in net.parameters())  # a float32 grad would not fit
    for p, v in zip(net.parameters(), values):
        np.testing.assert_array_equal(p.numpy(), v.astype(np.float64))
    assert net.blocks[0].table.dtype == np.float64
    assert net.blocks[0].counts.dtype == np.int64
    out = net(np.array([1, 2]))
    assert out.dtype == np.float64
    net.float()
    assert [id(p) for p in net.parameters()] == before
    assert all(p.dtype == np.float32 for p in net.parameters())
    assert net.blocks[0].table.dtype == np.float32
    net.to(minigrad.float64)
    assert all(p.dtype == np.float64 for p in net.parameters())


def test_optimizer_keeps_working_after_to_dtype():
    lin = nn.Linear(3, 1)
    opt = minigrad.optim.SGD(lin.parameters(), lr=0.1)
    lin.double()
    before = lin.weight.numpy().copy()
    lin(t64(np.ones((2, 3)))).sum().backward()
    opt.step()
    assert lin.weight.dtype == np.float64
    np.testing.assert_allclose(lin.weight.numpy(), before - 0.1 * 2.0, rtol=0, atol=1e-15)


def test_state_dict_keys_copies_and_buffers():
    net = Net()
    net.register_buffer("pos", minigrad.randn(4), persistent=True)
    net.register_buffer("mask", minigrad.ones(4), persistent=False)
    sd = net.state_dict()
    assert list(sd) == NET_PARAMETER_NAMES + ["pos"]
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    np.testing.assert_array_equal(sd["blocks.0.fc.weight"], net.blocks[0].fc.weight.numpy())
    np.testing.assert_array_equal(sd["pos"], net.pos.numpy())
    sd["blocks.0.fc.weight"][...] = 42.0  # a copy: the model is untouched
    assert not np.any(net.blocks[0].fc.weight.numpy() == 42.0)


def test_load_state_dict_round_trip_keeps_parameter_objects():
    minigrad.manual_seed(1)
    a = Net()
    minigrad.manual_seed(2)
    b = Net()
    ids_before = [id(p) for p in b.parameters()]
    assert not np.array_equal(a.embed.weight.numpy(), b.embed.weight.numpy())
    result = b.load_state_dict(a.state_dict())
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert [id(p) for p in b.parameters()] == ids_before
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
        assert pb.dtype == np.float32
    a.eval(), b.eval()
    ids = np.array([[0, 4, 2], [3, 3, 1]])
    np.testing.assert_array_equal(a(ids).numpy(), b(ids).numpy())


def test_load_state_dict_strict_lists_every_problem_in_one_error():
    net = Net()
    sd = net.state_dict()
    del sd["blocks.1.fc.bias"]
    del sd["scale"]
    sd["blocks.2.fc.weight"] = np.zeros((3, 3), dtype=np.float32)
    sd["head.0.weight"] = np.zeros((4, 2), dtype=np.float32)  # model has (4, 3)
    before = {n: p.numpy().copy() for n, p in net.named_parameters()}
    with pytest.raises(ValueError) as info:
        net.load_state_dict(sd)
    message = str(info.value)
    for name in ("blocks.1.fc.bias", "scale", "blocks.2.fc.weight", "head.0.weight"):
        assert name in message
    assert "missing" in message and "unexpected" in message and "shape" in message
    assert "(4, 2)" in message and "(4, 3)" in message
    # nothing was loaded
    for n, p in net.named_parameters():
        np.testing.assert_array_equal(p.numpy(), before[n])


@pytest.mark.parametrize("problem", ["missing", "unexpected", "shape"])
def test_load_state_dict_strict_each_problem_alone_raises(problem):
    net = nn.Linear(3, 2)
    sd = net.state_dict()
    if problem == "missing":
        del sd["bias"]
    elif problem == "unexpected":
        sd["extra"] = np.zeros(1)
    else:
        sd["weight"] = np.zeros((3, 2), dtype=np.float32)
    with pytest.raises(ValueError, match={"missing": "bias", "unexpected": "extra", "shape": "weight"}[problem]):
        net.load_state_dict(sd)


def test_load_state_dict_non_strict_reports_missing_and_unexpected():
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
    sd = src.state_dict()
    del sd["bias"]
    sd["running_mean"] = np.zeros(2)
    old_bias = dst.bias.numpy().copy()
    missing, unexpected = dst.load_state_dict(sd, strict=False)
    assert list(missing) == ["bias"]
    assert list(unexpected) == ["running_mean"]
    np.testing.assert_array_equal(dst.weight.numpy(), src.weight.numpy())  # the matching key is loaded
    np.testing.assert_array_equal(dst.bias.numpy(), old_bias)


def test_repr_prints_the_module_tree():
    text = repr(Net())
    lines = text.splitlines()
    assert lines[0] == "Net("
    assert lines[-1] == ")"
    assert "  (embed): Embedding(5, 3)" in lines
    assert "  (blocks): ModuleList(" in lines
    assert "    (0): Block(" in lines
    assert "      (norm): LayerNorm((3,), eps=1e-05)" in lines
    assert "      (fc): Linear(in_features=3, out_features=3, bias=True)" in lines
    assert "  (head): Sequential(" in lines
    assert "    (2): Dropout(p=0.1)" in lines
    assert "    (3): Linear(in_features=4, out_features=5, bias=False)" in lines
    assert "    (1): Tanh()" in lines
    assert repr(nn.ReLU()) == "ReLU()"


def test_assigning_before_super_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)
            super().__init__()

    with pytest.raises(AttributeError, match=r"Broken.*super\(\)\.__init__\(\)"):
        Broken()


def test_base_module_forward_not_implemented():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="NoForward"):
        NoForward()(minigrad.zeros(1))


# ============================================================================ layers
def test_linear_shapes_init_and_forward():
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    assert lin.weight.dtype == np.float32 and lin.bias.dtype == np.float32
    bound = 1 / math.sqrt(5)
    assert np.abs(lin.weight.numpy()).max() <= bound and np.abs(lin.bias.numpy()).max() <= bound
    assert np.abs(lin.weight.numpy()).max() > 0.5 * bound  # not all zeros / tiny
    x = minigrad.randn(4, 5)
    y = lin(x)
    assert y.shape == (4, 3) and y.dtype == np.float32
    expected = x.numpy().astype(np.float64) @ lin.weight.numpy().T.astype(np.float64) + lin.bias.numpy()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    x3 = minigrad.randn(2, 3, 5)
    assert lin(x3).shape == (2, 3, 3)
    np.testing.assert_allclose(lin(x3).numpy()[1], lin(x3[1]).numpy(), rtol=1e-6, atol=1e-6)


def test_linear_without_bias():
    lin = nn.Linear(4, 2, bias=False)
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert list(lin.state_dict()) == ["weight"]
    x = minigrad.randn(3, 4)
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ lin.weight.numpy().T, rtol=1e-5, atol=1e-6)


def test_linear_wrong_feature_count_is_an_error():
    with pytest.raises(ValueError, match="features"):
        nn.Linear(4, 2)(minigrad.randn(3, 5))


def test_layer_norm_init_and_forward():
    ln = nn.LayerNorm(6)
    np.testing.assert_array_equal(ln.weight.numpy(), np.ones(6, dtype=np.float32))
    np.testing.assert_array_equal(ln.bias.numpy(), np.zeros(6, dtype=np.float32))
    assert ln.weight.dtype == np.float32
    x = normal((4, 6), seed=3) * 3 + 2
    y = ln(minigrad.tensor(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=-1), 1 / (1 + 1e-5 / x.var(axis=-1)), rtol=1e-4)
    # with weight and bias, in float64, against the formula
    ln.double()
    ln.weight.numpy()[...] = normal(6, seed=4)
    ln.bias.numpy()[...] = normal(6, seed=5)
    out = ln(t64(x)).numpy()
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_layer_norm_multi_axis_normalized_shape():
    ln = nn.LayerNorm((2, 3)).double()
    assert ln.weight.shape == (2, 3)
    x = normal((4, 2, 3), seed=6)
    out = ln(t64(x)).numpy()
    flat = x.reshape(4, 6)
    expected = ((flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)).reshape(4, 2, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="normalized_shape"):
        ln(t64(np.zeros((4, 3, 2))))


def test_embedding_lookup():
    emb = nn.Embedding(10, 4)
    assert emb.weight.shape == (10, 4) and emb.weight.dtype == np.float32
    ids = np.array([[1, 9, 1], [0, 3, 3]])
    out = emb(ids)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[ids])
    np.testing.assert_array_equal(emb(minigrad.tensor(np.array([2, 5]))).numpy(), emb.weight.numpy()[[2, 5]])


def test_embedding_init_is_standard_normal():
    w = nn.Embedding(400, 50).weight.numpy()
    assert abs(w.mean()) < 0.02  # 20000 samples: std of the mean 0.007
    assert abs(w.std() - 1.0) < 0.02


@pytest.mark.parametrize("bad", [10, 57, -1])
def test_embedding_id_out_of_range(bad):
    emb = nn.Embedding(10, 4)
    with pytest.raises(IndexError) as info:
        emb(np.array([0, bad, 3]))
    message = str(info.value)
    assert str(bad) in message
    assert "10" in message


def test_embedding_float_ids_rejected():
    with pytest.raises(TypeError, match="integer"):
        nn.Embedding(4, 2)(np.array([0.0, 1.0]))


def test_dropout_eval_is_identity():
    drop = nn.Dropout(0.5).eval()
    x = minigrad.randn(10, 10)
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())


def test_dropout_train_zeros_about_p_and_scales():
    p = 0.3
    drop = nn.Dropout(p)
    assert drop.training
    x = minigrad.tensor(np.random.default_rng(0).uniform(1.0, 2.0, (200, 100)).astype(np.float32))
    y = drop(x).numpy()
    zero = y == 0
    n = zero.size
    # binomial(20000, 0.3): std of the fraction is 0.0032; 5 sigma
    assert abs(zero.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y[~zero], x.numpy()[~zero] / (1 - p), rtol=1e-6)
    # two calls draw different masks
    assert not np.array_equal(zero, drop(x).numpy() == 0)


def test_dropout_edge_probabilities():
    x = minigrad.randn(5, 5)
    np.testing.assert_array_equal(nn.Dropout(0.0)(x).numpy(), x.numpy())
    np.testing.assert_array_equal(nn.Dropout(1.0)(x).numpy(), np.zeros((5, 5), dtype=np.float32))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="p must be in"):
            nn.Dropout(bad)


def test_dropout_float64_keeps_dtype():
    y = nn.Dropout(0.5)(t64(np.ones((4, 4))))
    assert y.dtype == np.float64
    assert set(np.unique(y.numpy())) <= {0.0, 2.0}


def test_activations():
    x = np.linspace(-3, 3, 13)
    xt = t64(x)
    np.testing.assert_array_equal(nn.ReLU()(xt).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Tanh()(xt).numpy(), np.tanh(x), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(nn.Sigmoid()(xt).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-14, atol=1e-15)
    exact = x * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    np.testing.assert_allclose(nn.GELU()(xt).numpy(), exact, rtol=1e-12, atol=1e-14)
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(nn.GELU("tanh")(xt).numpy(), approx, rtol=1e-12, atol=1e-14)
    assert not np.allclose(exact, approx, rtol=0, atol=1e-6)  # the two GELUs differ
    assert nn.Identity()(xt) is xt


# ============================================================================ init
def test_init_normal():
    t = nn.Parameter(np.empty((200, 100), dtype=np.float32))
    assert init.normal_(t, mean=2.0, std=0.5) is t
    assert abs(t.numpy().mean() - 2.0) < 0.02
    assert abs(t.numpy().std() - 0.5) < 0.01


def test_init_xavier_uniform_bound_and_std():
    fan_out, fan_in = 300, 200
    t = nn.Parameter(np.empty((fan_out, fan_in), dtype=np.float64))
    assert init.xavier_uniform_(t) is t
    w = t.numpy()
    bound = math.sqrt(6 / (fan_in + fan_out))
    assert w.max() <= bound and w.min() >= -bound
    assert w.max() > 0.99 * bound and w.min() < -0.99 * bound  # the full range is used
    expected_std = bound / math.sqrt(3)  # = sqrt(2 / (fan_in + fan_out))
    assert abs(w.std() - expected_std) < 0.01 * expected_std
    assert abs(w.mean()) < 0.01 * expected_std * 3
    g = nn.Parameter(np.empty((fan_out, fan_in), dtype=np.float64))
    init.xavier_uniform_(g, gain=2.0)
    assert g.numpy().max() <= 2 * bound and g.numpy().max() > 1.98 * bound
    with pytest.raises(ValueError, match="2 dims"):
        init.xavier_uniform_(nn.Parameter(np.empty(5)))


def test_init_zeros_ones_uniform():
    t = nn.Parameter(np.full((3, 4), 7.0, dtype=np.float32))
    assert init.zeros_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.zeros((3, 4)))
    init.ones_(t)
    np.testing.assert_array_equal(t.numpy(), np.ones((3, 4)))
    assert t.dtype == np.float32
    init.uniform_(t, -0.1, 0.2)
    assert t.numpy().min() >= -0.1 and t.numpy().max() <= 0.2 and len(np.unique(t.numpy())) == 12


def test_init_bumps_version():
    t = nn.Parameter(np.zeros(3, dtype=np.float32))
    v = t._version
    init.ones_(t)
    assert t._version > v


def test_init_reproducible_under_manual_seed():
    minigrad.manual_seed(7)
    a = Net()
    t1 = init.xavier_uniform_(nn.Parameter(np.empty((4, 4))))
    minigrad.manual_seed(7)
    b = Net()
    t2 = init.xavier_uniform_(nn.Parameter(np.empty((4, 4))))
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    np.testing.assert_array_equal(t1.numpy(), t2.numpy())
    minigrad.manual_seed(8)
    c = Net()
    assert not np.array_equal(a.embed.weight.numpy(), c.embed.weight.numpy())


# ============================================================================ gradient checks: layers
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3)])
def test_gradcheck_linear(bias, shape):
    lin = nn.Linear(3, 2, bias=bias)
    x = leaf(normal(shape, seed=1))
    report = gradcheck_module(lin, lin, [x])
    assert len(report.inputs) == (3 if bias else 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["random", "near_constant"])
def test_gradcheck_layer_norm(backend, kind):
    minigrad.set_backend(backend)
    ln = nn.LayerNorm(5)
    ln.double()
    ln.weight.numpy()[...] = normal(5, seed=2) + 1.0
    ln.bias.numpy()[...] = normal(5, seed=3)
    x = normal((3, 5), seed=4) * 2 if kind == "random" else 1.0 + 1e-3 * normal((3, 5), seed=4)
    gradcheck_module(ln, ln, [leaf(x)])


def test_gradcheck_layer_norm_3d_input():
    ln = nn.LayerNorm(4)
    gradcheck_module(ln, ln, [leaf(normal((2, 3, 4), seed=5))])


def test_layer_norm_constant_row_gives_bias_and_finite_gradient():
    ln = nn.LayerNorm(4).double()
    ln.bias.numpy()[...] = [0.5, -1.0, 2.0, 0.0]
    x = leaf(np.full((2, 4), 3.25))
    out = ln(x)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(ln.bias.numpy(), (2, 4)))
    gradcheck_module(ln, ln, [x])
    ln(x).backward(normal((2, 4), seed=27))
    assert np.all(np.isfinite(x.grad)) and np.all(np.isfinite(ln.weight.grad))
    np.testing.assert_array_equal(ln.weight.grad, 0.0)  # xhat = 0: the scale has no effect


def test_gradcheck_linear_1d_input():
    lin = nn.Linear(3, 2)
    x = leaf(normal(3, seed=20))
    assert lin.double()(x).shape == (2,)
    gradcheck_module(lin, lin, [x])


def test_layer_norm_large_float32_matches_float64_reference():
    """Sizes big enough for the compiled kernels' threaded paths (several row blocks in the
    backward); float32 results against the float64 numpy reference backend."""
    x = normal((300, 128), seed=21) * 2 + 1
    w, b = normal(128, seed=22), normal(128, seed=23)
    g = normal((300, 128), seed=24)
    results = {}
    for backend, dtype in (("numba", np.float32), ("numpy", np.float64)):
        minigrad.set_backend(backend)
        ln = nn.LayerNorm(128).to(dtype)
        ln.weight.numpy()[...] = w
        ln.bias.numpy()[...] = b
        xt = minigrad.tensor(x.astype(dtype), requires_grad=True)
        out = ln(xt)
        out.backward(g.astype(dtype))
        assert out.dtype == dtype and xt.grad.dtype == dtype
        results[backend] = (out.numpy(), xt.grad, ln.weight.grad, ln.bias.grad)
    for got, want in zip(results["numba"], results["numpy"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_cross_entropy_large_float32_matches_formula():
    """Large enough for the compiled kernels' threaded paths; value and gradient against numpy."""
    logits = normal((64, 300), seed=25) * 3
    targets = np.random.default_rng(26).integers(0, 300, 64)
    targets[::7] = -100
    z = minigrad.tensor(logits.astype(np.float32), requires_grad=True)
    loss = F.cross_entropy(z, targets, label_smoothing=0.1)
    loss.backward()
    assert loss.dtype == np.float32 and z.grad.dtype == np.float32
    np.testing.assert_allclose(loss.item(), numpy_cross_entropy(logits, targets, label_smoothing=0.1), rtol=1e-5)
    kept = targets != -100
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    target = np.full_like(p, 0.1 / 300)
    target[np.arange(64), np.where(kept, targets, 0)] += 0.9
    expected = np.where(kept[:, None], p - target, 0.0) / kept.sum()
    np.testing.assert_allclose(z.grad, expected, rtol=1e-4, atol=1e-6 * np.abs(expected).max())


def test_gradcheck_embedding_repeated_ids():
    emb = nn.Embedding(5, 3)
    ids = np.array([[0, 2, 2], [4, 2, 0]])
    gradcheck_module(emb, lambda: emb(ids), [])
    # the repeated id's row collects the gradient of each of its uses
    emb.zero_grad()
    out = emb(ids)
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(emb.weight.grad[:, 0], [2, 0, 3, 0, 1])


def test_gradcheck_dropout_p0_is_identity():
    drop = nn.Dropout(0.0)
    assert drop.training
    x = leaf(normal((3, 4), seed=6))
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    assert minigrad.gradcheck(lambda x: drop(x) * 1.0, [x], **TIGHT)


def test_gradcheck_dropout_fixed_mask():
    x = leaf(normal((4, 5), seed=7))
    m = np.random.default_rng(8).random((4, 5)) >= 0.3
    assert 0 < m.sum() < m.size
    out = ops.Dropout.apply(x, p=0.3, mask=m)
    np.testing.assert_allclose(out.numpy(), x.numpy() * m / 0.7, rtol=1e-15, atol=0)
    assert minigrad.gradcheck(lambda x: ops.Dropout.apply(x, p=0.3, mask=m), [x], **TIGHT)
    with pytest.raises(ValueError, match="mask"):
        ops.Dropout.apply(x, p=0.3, mask=m[:2])


def test_gradcheck_mlp_with_activations():
    mlp = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.GELU(),
                        nn.Linear(4, 4), nn.GELU("tanh"), nn.Linear(4, 2), nn.Sigmoid())
    gradcheck_module(mlp, mlp, [leaf(normal((3, 3), seed=9))])


# ============================================================================ losses
def numpy_cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """An independent reference: log-softmax by log-sum-exp, per-row loss, then the reduction."""
    v = logits.shape[-1]
    rows = logits.reshape(-1, v).astype(np.float64)
    t = targets.reshape(-1)
    losses = np.zeros(len(t))
    for r in range(len(t)):
        if t[r] == ignore_index:
            continue
        m = rows[r].max()
        lse = m + math.log(sum(math.exp(z - m) for z in rows[r]))
        logp = rows[r] - lse
        target = np.full(v, label_smoothing / v)
        target[t[r]] += 1 - label_smoothing
        losses[r] = -(target * logp).sum()
    if reduction == "none":
        return losses.reshape(targets.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / max(int((t != ignore_index).sum()), 1)


CE_CASES = {
    "mean": dict(reduction="mean"),
    "sum": dict(reduction="sum"),
    "none": dict(reduction="none"),
    "ignore_index": dict(ignore_index=-1),
    "ignore_index_sum": dict(ignore_index=-1, reduction="sum"),
    "ignore_index_none": dict(ignore_index=-1, reduction="none"),
    "smoothing": dict(label_smoothing=0.1),
    "smoothing_ignore": dict(label_smoothing=0.1, ignore_index=-1),
    "smoothing_none": dict(label_smoothing=0.1, reduction="none"),
}


def ce_targets(shape, v, seed, ignore=None):
    t = np.random.default_rng(seed).integers(0, v, shape)
    if ignore is not None:
        flat = t.reshape(-1)
        flat[[1, len(flat) - 1]] = ignore  # some targets ignored, some kept
    return t


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CE_CASES))
def test_cross_entropy_forward_matches_numpy(backend, case):
    minigrad.set_backend(backend)
    opts = CE_CASES[case]
    logits = normal((6, 5), seed=10) * 3
    targets = ce_targets((6,), 5, seed=11, ignore=opts.get("ignore_index"))
    out = F.cross_entropy(t64(logits), targets, **opts)
    expected = numpy_cross_entropy(logits, targets, **opts)
    assert out.shape == np.shape(expected)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CE_CASES))
def test_gradcheck_cross_entropy(backend, case):
    minigrad.set_backend(backend)
    opts = CE_CASES[case]
    logits = leaf(normal((4, 5), seed=12) * 2)
    targets = ce_targets((4,), 5, seed=13, ignore=opts.get("ignore_index"))
    assert minigrad.gradcheck(lambda z: F.cross_entropy(z, targets, **opts), [logits], **TIGHT)
    if "ignore_index" in opts:  # an ignored row gets exactly zero gradient
        logits.grad = None
        F.cross_entropy(logits, targets, **opts).sum().backward()
        np.testing.assert_array_equal(logits.grad[targets == -1], 0.0)
        assert np.all(logits.grad[targets != -1] != 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_3d_logits(backend, reduction):
    minigrad.set_backend(backend)
    B, T, V = 2, 3, 4
    logits = leaf(normal((B, T, V), seed=14))
    targets = ce_targets((B, T), V, seed=15, ignore=-100)
    out = F.cross_entropy(logits, targets, reduction=reduction)
    expected = numpy_cross_entropy(logits.numpy(), targets, reduction=reduction)
    assert out.shape == np.shape(expected) == ((B, T) if reduction == "none" else ())
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)
    # the same as flattening to (B*T, V)
    flat = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(-1), reduction=reduction)
    np.testing.assert_allclose(out.numpy().reshape(-1), flat.numpy().reshape(-1), rtol=1e-14, atol=0)
    assert minigrad.gradcheck(lambda z: F.cross_entropy(z, targets, reduction=reduction), [logits], **TIGHT)
    assert minigrad.gradcheck(
        lambda z: F.cross_entropy(z, targets, label_smoothing=0.1, reduction=reduction), [logits], **TIGHT
    )


def test_cross_entropy_all_ignored_gives_zero():
    logits = leaf(normal((3, 4), seed=16))
    targets = np.full(3, -100)
    loss = F.cross_entropy(logits, targets)
    assert loss.item() == 0.0
    loss.backward()
    np.testing.assert_array_equal(logits.grad, 0.0)


def test_cross_entropy_extreme_logits_are_finite():
    logits = t64([[1e4, 0.0, -1e4], [0.0, 0.0, 0.0]])
    out = F.cross_entropy(logits, np.array([1, 2]), reduction="none").numpy()
    np.testing.assert_allclose(out, [1e4, math.log(3)], rtol=1e-14)


def test_cross_entropy_errors():
    logits = t64(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="targets of shape"):
        F.cross_entropy(logits, np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(logits, np.zeros(3))
    with pytest.raises(IndexError, match="4"):
        F.cross_entropy(logits, np.array([0, 4, 1]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, np.zeros(3, dtype=np.int64), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(logits, np.zeros(3, dtype=np.int64), label_smoothing=1.5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_values_and_gradcheck(reduction):
    a, b = normal((3, 4), seed=17), normal((3, 4), seed=18)
    out = F.mse_loss(t64(a), t64(b), reduction=reduction)
    sq = (a - b) ** 2
    expected = {"mean": sq.mean(), "sum": sq.sum(), "none": sq}[reduction]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14, atol=0)
    x, y = leaf(a), leaf(b)
    report = minigrad.gradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), [x, y], **TIGHT)
    assert len(report.inputs) == 2
    # a numpy target is a constant
    assert minigrad.gradcheck(lambda x: F.mse_loss(x, b, reduction=reduction), [x], **TIGHT)


def test_mse_loss_errors():
    with pytest.raises(ValueError, match="same shape"):
        F.mse_loss(t64(np.zeros(3)), np.zeros(4))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(t64(np.zeros(3)), np.zeros(3), reduction="avg")


# ============================================================================ training
def two_spirals(n=200, noise=0.05, seed=0):
    """Two interleaved spirals of 1.5 turns each (class 0 and its point reflection, class 1):
    not separable by a line (a linear model gets ~70%), easy for a small MLP."""
    rng = np.random.default_rng(seed)
    half = n // 2
    t = np.sqrt(rng.uniform(0, 1, half)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    x = np.concatenate([arm, -arm]) + noise * rng.standard_normal((2 * half, 2))
    y = np.repeat(np.array([0, 1], dtype=np.int64), half)
    return x.astype(np.float32), y


class MLP(nn.Module):
    def __init__(self, p=0.0):
        super().__init__()
        self.fc1 = nn.Linear(2, 32)
        self.fc2 = nn.Linear(32, 32)
        self.drop = nn.Dropout(p)
        self.fc3 = nn.Linear(32, 2)

    def forward(self, x):
        h = self.fc1(x).tanh()
        h = self.drop(self.fc2(h).relu())
        return self.fc3(h)


def test_mlp_learns_two_spirals():
    x, y = two_spirals()
    xt = minigrad.tensor(x)
    model = MLP()
    opt = minigrad.optim.Adam(model.parameters(), lr=0.02)
    model.eval()
    start = float((model(xt).numpy().argmax(-1) == y).mean())
    first_loss = F.cross_entropy(model(xt), y).item()
    model.train()
    for _ in range(250):
        loss = F.cross_entropy(model(xt), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    accuracy = float((model(xt).numpy().argmax(-1) == y).mean())
    assert accuracy >= 0.95, f"training accuracy {accuracy:.3f} (started at {start:.3f})"
    assert F.cross_entropy(model(xt), y).item() < 0.25 * first_loss
    assert all(p.dtype == np.float32 for p in model.parameters())


def test_state_dict_round_trip_bit_identical(tmp_path):
    x, y = two_spirals(64)
    model = MLP(p=0.2)
    opt = minigrad.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(5):
        loss = F.cross_entropy(model(minigrad.tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    minigrad.manual_seed(999)
    other = MLP(p=0.2).eval()
    assert not np.array_equal(other(minigrad.tensor(x)).numpy(), model(minigrad.tensor(x)).numpy())
    other.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(other(minigrad.tensor(x)).numpy(), model(minigrad.tensor(x)).numpy())
    # through a file as well
    minigrad.save(model.state_dict(), tmp_path / "model.npz")
    third = MLP(p=0.2).eval()
    third.load_state_dict(minigrad.load(tmp_path / "model.npz"))
    np.testing.assert_array_equal(third(minigrad.tensor(x)).numpy(), model(minigrad.tensor(x)).numpy())


def _train_steps(model, opt, x, y, steps, batch=32):
    losses = []
    for _ in range(steps):
        idx = minigrad.random.generator().integers(0, len(x), batch)
        loss = F.cross_entropy(model(minigrad.tensor(x[idx])), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_resume_from_checkpoint_is_exact(tmp_path):
    x, y = two_spirals()
    N, k = 30, 12

    minigrad.manual_seed(5)
    model = MLP(p=0.3)
    opt = minigrad.optim.Adam(model.parameters(), lr=0.01)
    uninterrupted = _train_steps(model, opt, x, y, N)

    minigrad.manual_seed(5)
    model = MLP(p=0.3)
    opt = minigrad.optim.Adam(model.parameters(), lr=0.01)
    first = _train_steps(model, opt, x, y, k)
    path = tmp_path / "ckpt.npz"
    minigrad.save({"model": model.state_dict(), "optim": opt.state_dict(),
                   "rng": minigrad.random.get_state()}, path)
    del model, opt

    minigrad.manual_seed(123)  # a fresh model with other weights, and a generator elsewhere
    model = MLP(p=0.3)
    opt = minigrad.optim.Adam(model.parameters(), lr=0.01)
    ckpt = minigrad.load(path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optim"])
    minigrad.random.set_state(ckpt["rng"])
    rest = _train_steps(model, opt, x, y, N - k)

    assert first + rest == uninterrupted
    assert len(set(uninterrupted)) > N // 2  # the losses do change from step to step


def test_resume_without_rng_state_differs(tmp_path):
    """The control for the test above: with dropout, not restoring the RNG changes the losses
    (so the equality there is evidence that the RNG state is restored, not a coincidence)."""
    x, y = two_spirals()
    minigrad.manual_seed(5)
    model = MLP(p=0.3)
    opt = minigrad.optim.Adam(model.parameters(), lr=0.01)
    _train_steps(model, opt, x, y, 3)
    state = minigrad.random.get_state()
    sd, osd = model.state_dict(), opt.state_dict()
    reference = _train_steps(model, opt, x, y, 3)
    model.load_state_dict(sd)
    opt.load_state_dict(osd)
    minigrad.manual_seed(6)
    assert _train_steps(model, opt, x, y, 3) != reference
    model.load_state_dict(sd)
    opt.load_state_dict(osd)
    minigrad.random.set_state(state)
    assert _train_steps(model, opt, x, y, 3) == reference


# ============================================================================ functional API
def test_functional_api_exists():
    for name in ("linear", "layer_norm", "gelu", "relu", "softmax", "log_softmax", "dropout", "embedding",
                 "mse_loss", "cross_entropy"):
        assert callable(getattr(F, name)), name


def test_functional_linear_matches_layer():
    lin = nn.Linear(4, 3)
    x = minigrad.randn(2, 4)
    np.testing.assert_array_equal(F.linear(x, lin.weight, lin.bias).numpy(), lin(x).numpy())
    no_bias = F.linear(x, lin.weight).numpy()
    np.testing.assert_allclose(no_bias + lin.bias.numpy(), lin(x).numpy(), rtol=1e-6, atol=1e-6)


def test_functional_layer_norm_matches_layer():
    ln = nn.LayerNorm(5)
    ln.weight.numpy()[...] = np.arange(1, 6)
    ln.bias.numpy()[...] = -1.0
    x = minigrad.randn(3, 5)
    np.testing.assert_array_equal(F.layer_norm(x, 5, ln.weight, ln.bias).numpy(), ln(x).numpy())
    plain = F.layer_norm(x, (5,)).numpy()
    np.testing.assert_allclose(plain * np.arange(1, 6) - 1.0, ln(x).numpy(), rtol=1e-5, atol=1e-5)


def test_functional_gelu_and_dropout_match_layers():
    x = minigrad.randn(4, 6)
    np.testing.assert_array_equal(F.gelu(x).numpy(), nn.GELU()(x).numpy())
    np.testing.assert_array_equal(F.gelu(x, "tanh").numpy(), nn.GELU("tanh")(x).numpy())
    np.testing.assert_array_equal(F.relu(x).numpy(), nn.ReLU()(x).numpy())
    assert F.dropout(x, 0.5, training=False) is x
    minigrad.manual_seed(3)
    a = F.dropout(x, 0.5, training=True).numpy()
    minigrad.manual_seed(3)
    b = nn.Dropout(0.5)(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert (a == 0).any()


def test_functional_softmax_and_log_softmax():
    z = normal((3, 5), seed=19) * 4
    e = np.exp(z - z.max(-1, keepdims=True))
    expected = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(F.softmax(t64(z)).numpy(), expected, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(F.log_softmax(t64(z)).numpy(), np.log(expected), rtol=1e-13, atol=1e-13)
    e0 = np.exp(z - z.max(0, keepdims=True))
    np.testing.assert_allclose(F.softmax(t64(z), axis=0).numpy(), e0 / e0.sum(0), rtol=1e-13, atol=1e-16)
    x = leaf(z)
    assert minigrad.gradcheck(lambda x: F.log_softmax(x), [x], **TIGHT)
    assert minigrad.gradcheck(lambda x: F.softmax(x, axis=0), [x], **TIGHT)
    # cross_entropy is the negative log-likelihood under log_softmax
    t = np.array([0, 4, 2])
    nll = -F.log_softmax(t64(z)).numpy()[np.arange(3), t].mean()
    np.testing.assert_allclose(F.cross_entropy(t64(z), t).item(), nll, rtol=1e-13)


def test_functional_mse_loss_matches_formula_float32():
    a = minigrad.randn(5)
    b = np.arange(5, dtype=np.float32)
    out = F.mse_loss(a, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.item(), ((a.numpy() - b) ** 2).mean(), rtol=1e-6)


def test_dtype_mismatch_is_a_type_error_naming_both_dtypes():
    lin = nn.Linear(3, 2)  # float32
    x = t64(np.ones((2, 3)))
    with pytest.raises(TypeError) as info:
        lin(x)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    with pytest.raises(TypeError) as info:
        F.linear(x, lin.weight, lin.bias)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    with pytest.raises(TypeError) as info:
        nn.LayerNorm(3)(x)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    # after converting the model, the same input works
    assert lin.double()(x).dtype == np.float64
