"""minigrad.nn's Module machinery: registration of parameters and submodules (dotted names, tied and
shared parameters), the containers Sequential and ModuleList, train/eval, zero_grad, dtype
conversion, state dicts (keys, copies, strict and non-strict loading), the printed tree, and the
initialisers of minigrad.nn.init."""
import math

import numpy as np
import pytest

import minigrad
from helpers import t64
from minigrad import nn
from minigrad.nn import init


# ============================================================================ a model to inspect
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


# ============================================================================ registration
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


# ============================================================================ containers
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


# ============================================================================ train/eval, grads, dtypes
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


# ============================================================================ state dicts
def test_state_dict_keys_copies_and_buffers():
    net = Net()
    net.register_buffer("pos", minigrad.randn(4), persistent=True)
    net.register_buffer("mask", minigrad.ones(4), persistent=False)
    sd = net.state_dict()
    # PyTorch's order: each module's parameters, then its buffers, then the modules below it (pos is Net's own)
    own = [n for n in NET_PARAMETER_NAMES if "." not in n]
    assert list(sd) == own + ["pos"] + [n for n in NET_PARAMETER_NAMES if "." in n]
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


# ============================================================================ printing and misuse
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
    assert "    (2): Dropout(p=0.1, inplace=False)" in lines
    assert "    (3): Linear(in_features=4, out_features=5, bias=False)" in lines
    assert "    (1): Tanh()" in lines
    assert repr(nn.ReLU()) == "ReLU()"


def test_repr_of_a_module_with_settings_and_sub_modules_closes_its_parentheses():
    from transformer.positional import LearnedPositionalEmbedding

    lines = repr(LearnedPositionalEmbedding(8, 4, 0.1)).splitlines()
    assert lines[0] == "LearnedPositionalEmbedding("
    assert lines[1].strip() == "max_len=8, d_model=4"
    assert lines[-1] == ")" and text_balanced("\n".join(lines))


def text_balanced(text):
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


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
