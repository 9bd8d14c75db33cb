"""Batch, group and instance normalization: gradient checks of every input and parameter in
float64, PyTorch's running statistics and outputs, buffers in state_dict and checkpoints, errors."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from strategies import TIGHT

# float32 against PyTorch: each side rounds every step at ~6e-8 relative, and a channel's mean
# and variance sum at most ~100 values here, so the two agree to well within 1e-5 (outputs are O(1))
F32 = {"rtol": 1e-5, "atol": 1e-5}


def f64(*shape, seed=0, scale=1.0, shift=0.0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return mg.tensor(rng.normal(shift, scale, size=shape), dtype="float64", requires_grad=requires_grad)


SHAPES = [(6, 3), (4, 3, 5), (3, 3, 2, 4)]


# ============================================================================ gradient checks
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_gradcheck(shape, affine):
    x = f64(*shape, scale=2.0, shift=0.5)  # mean and variance far from 0 and 1: their terms matter
    if affine:
        w, b = f64(3, seed=1), f64(3, seed=2)
        assert mg.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [x, w, b], **TIGHT)
    else:
        assert mg.gradcheck(lambda x: F.batch_norm(x, None, None, training=True), [x], **TIGHT)


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_eval_gradcheck_uses_the_running_statistics(shape):
    x, w, b = f64(*shape), f64(3, seed=1), f64(3, seed=2)
    mean, var = mg.tensor([0.5, -1.0, 2.0], dtype="float64"), mg.tensor([0.5, 2.0, 4.0], dtype="float64")
    y = F.batch_norm(x, mean, var, w, b, training=False, eps=0.0)
    shape1 = (1, 3) + (1,) * (len(shape) - 2)
    expected = ((x.numpy() - mean.numpy().reshape(shape1)) / np.sqrt(var.numpy().reshape(shape1))
                * w.numpy().reshape(shape1) + b.numpy().reshape(shape1))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12)
    assert mg.gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b), [x, w, b], **TIGHT)


@pytest.mark.parametrize("module", [nn.BatchNorm1d(3), nn.BatchNorm2d(3)])
def test_batchnorm_module_gradcheck_in_training_mode(module):
    x = f64(4, 3, 2, 3) if isinstance(module, nn.BatchNorm2d) else f64(5, 3)
    module.double()
    with mg.no_grad():
        module.weight.copy_(mg.tensor([0.5, 2.0, -1.0], dtype="float64"))
        module.bias.copy_(mg.tensor([0.1, 0.0, -0.3], dtype="float64"))
    assert mg.gradcheck(lambda x, w, b: module(x), [x, module.weight, module.bias], **TIGHT)


@pytest.mark.parametrize("shape, groups", [((2, 6), 3), ((2, 6, 4), 1), ((2, 6, 4), 2), ((2, 6, 2, 3), 6)])
def test_group_norm_gradcheck(shape, groups):
    x, w, b = f64(*shape, scale=3.0, shift=-1.0), f64(6, seed=1), f64(6, seed=2)
    assert mg.gradcheck(lambda x, w, b: F.group_norm(x, groups, w, b), [x, w, b], **TIGHT)
    assert mg.gradcheck(lambda x: F.group_norm(x, groups), [x], **TIGHT)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 3, 4)])
def test_instance_norm_gradcheck(shape):
    x, w, b = f64(*shape, scale=2.0, shift=1.0), f64(3, seed=1), f64(3, seed=2)
    assert mg.gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [x, w, b], **TIGHT)
    assert mg.gradcheck(lambda x: F.instance_norm(x), [x], **TIGHT)
    mean, var = mg.tensor([0.5, -1.0, 2.0], dtype="float64"), mg.tensor([0.5, 2.0, 4.0], dtype="float64")
    assert mg.gradcheck(lambda x, w, b: F.instance_norm(x, mean, var, w, b, use_input_stats=False), [x, w, b],
                        **TIGHT)


def test_batch_norm_output_is_normalized_per_channel():
    x = f64(50, 4, 3, requires_grad=False) * mg.tensor([1.0, 10.0, 0.1, 3.0], dtype="float64").reshape(1, 4, 1)
    y = F.batch_norm(x, None, None, training=True, eps=0.0).numpy()
    np.testing.assert_allclose(y.mean(axis=(0, 2)), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=(0, 2)), 1.0, rtol=1e-12)


# ============================================================================ against PyTorch
def _randn32(*shape, seed=0):
    return np.random.default_rng(seed).normal(0.5, 2.0, size=shape).astype(np.float32)


def _grads_match(torch, ours, theirs, inputs, torch_inputs, seed=3):
    g = np.random.default_rng(seed).normal(size=ours.shape).astype(np.float32)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **F32)
    (ours * mg.tensor(g)).sum().backward()
    (theirs * torch.from_numpy(g)).sum().backward()
    for a, t in zip(inputs, torch_inputs):
        np.testing.assert_allclose(a.grad, t.grad.numpy(), **F32)


@pytest.mark.parametrize("shape", SHAPES)
def test_functional_norms_match_pytorch_forward_and_backward(shape):
    torch = pytest.importorskip("torch")
    C = shape[1]
    G = 1 if len(shape) == 2 else C  # (for (N, C), groups of one channel would hold one value each)
    for name, call in [
        ("batch_norm", lambda lib, x, w, b: lib.batch_norm(x, None, None, w, b, training=True)),
        ("group_norm", lambda lib, x, w, b: lib.group_norm(x, G, w, b)),
        ("instance_norm", lambda lib, x, w, b: lib.instance_norm(x, weight=w, bias=b)),
    ]:
        if name == "instance_norm" and len(shape) == 2:
            continue
        arrays = [_randn32(*shape), _randn32(C, seed=1), _randn32(C, seed=2)]
        ours = [mg.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        _grads_match(torch, call(F, *ours), call(torch.nn.functional, *theirs), ours, theirs)


@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
@pytest.mark.parametrize("kind, shape", [("1d", (8, 4)), ("1d", (5, 4, 6)), ("2d", (3, 4, 5, 2))])
def test_running_statistics_match_pytorch_and_eval_uses_them(kind, shape, momentum):
    torch = pytest.importorskip("torch")
    ours = (nn.BatchNorm1d if kind == "1d" else nn.BatchNorm2d)(4, momentum=momentum)
    theirs = (torch.nn.BatchNorm1d if kind == "1d" else torch.nn.BatchNorm2d)(4, momentum=momentum)
    w, b = _randn32(4, seed=10), _randn32(4, seed=11)
    with mg.no_grad():
        ours.weight.copy_(mg.tensor(w)), ours.bias.copy_(mg.tensor(b))
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w)), theirs.bias.copy_(torch.from_numpy(b))
    for step in range(5):
        x = _randn32(*shape, seed=step) * (step + 1) + step  # statistics that move from batch to batch
        np.testing.assert_allclose(ours(mg.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), **F32)
    # the running variance is the unbiased one (n - 1): off by n/(n-1) it would fail these tolerances
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), **F32)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), **F32)
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 5
    ours.eval(), theirs.eval()
    x = _randn32(*shape, seed=99)
    y = ours(mg.tensor(x)).numpy()
    np.testing.assert_allclose(y, theirs(torch.from_numpy(x)).detach().numpy(), **F32)
    # eval mode: one example's output does not depend on the rest of its batch
    np.testing.assert_allclose(ours(mg.tensor(x[:1])).numpy(), y[:1], rtol=1e-6, atol=1e-6)
    before = ours.running_mean.numpy().copy()
    ours(mg.tensor(x))
    np.testing.assert_array_equal(ours.running_mean.numpy(), before)  # eval never updates them


def test_instance_norm_running_statistics_match_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    theirs = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    for step in range(3):
        x = _randn32(2, 3, 4, 5, seed=step) + step
        np.testing.assert_allclose(ours(mg.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), **F32)
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), **F32)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), **F32)
    ours.eval(), theirs.eval()
    x = _randn32(3, 4, 5, seed=7)  # one image without a batch axis
    np.testing.assert_allclose(ours(mg.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), **F32)


def test_defaults_match_pytorch():
    torch = pytest.importorskip("torch")
    for ours, theirs in [(nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5)), (nn.BatchNorm2d(5), torch.nn.BatchNorm2d(5)),
                         (nn.InstanceNorm1d(5), torch.nn.InstanceNorm1d(5)),
                         (nn.InstanceNorm2d(5), torch.nn.InstanceNorm2d(5)),
                         (nn.GroupNorm(5, 5), torch.nn.GroupNorm(5, 5))]:
        assert list(ours.state_dict()) == list(theirs.state_dict()), type(ours).__name__
        for key, value in theirs.state_dict().items():
            np.testing.assert_array_equal(ours.state_dict()[key], value.numpy())
            assert ours.state_dict()[key].dtype == value.numpy().dtype
    flat = _randn32(2, 3, 4)
    np.testing.assert_array_equal(nn.Flatten()(mg.tensor(flat)).numpy(),
                                  torch.nn.Flatten()(torch.from_numpy(flat)).numpy())
    np.testing.assert_array_equal(nn.Unflatten(2, (2, 2))(mg.tensor(flat)).numpy(),
                                  torch.nn.Unflatten(2, (2, 2))(torch.from_numpy(flat)).numpy())


# ============================================================================ modes and options
def test_track_running_stats_false_uses_batch_statistics_in_eval_too():
    bn = nn.BatchNorm1d(3, track_running_stats=False)
    assert bn.running_mean is None and list(bn.named_buffers()) == []
    assert list(bn.state_dict()) == ["weight", "bias"]
    x = mg.tensor(_randn32(6, 3))
    train = bn(x).numpy()
    bn.eval()
    np.testing.assert_array_equal(bn(x).numpy(), train)
    np.testing.assert_allclose(train.mean(axis=0), 0.0, atol=1e-6)


def test_affine_false_has_no_parameters():
    bn = nn.BatchNorm2d(3, affine=False)
    assert bn.weight is None and list(bn.parameters()) == []
    assert list(bn.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]


def test_momentum_none_is_the_plain_average_of_every_batch():
    bn = nn.BatchNorm1d(2, momentum=None)
    batches = [_randn32(4, 2, seed=s) * (s + 1) for s in range(4)]
    for x in batches:
        bn(mg.tensor(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in batches], axis=0), rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([x.var(0, ddof=1) for x in batches], axis=0),
                               rtol=1e-5)


def test_buffers_follow_dtype_but_the_count_stays_an_integer():
    bn = nn.BatchNorm1d(3)
    bn(mg.tensor(_randn32(4, 3)))
    bn.double()
    assert bn.running_mean.dtype == bn.running_var.dtype == bn.weight.dtype == np.float64
    assert bn.num_batches_tracked.dtype == np.int64
    bn(f64(4, 3, requires_grad=False))
    assert bn.num_batches_tracked.item() == 2
    assert [name for name, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert len(list(bn.buffers())) == 3


def test_register_buffer_persistence_and_reassignment():
    m = nn.Module()
    m.register_buffer("kept", mg.zeros(2))
    m.register_buffer("table", mg.ones(3), persistent=False)
    m.register_buffer("later", None)
    assert list(m.state_dict()) == ["kept"]
    assert [n for n, _ in m.named_buffers()] == ["kept", "table"]
    m.later = mg.ones(1)  # a new value for a registered buffer keeps it a buffer
    m.kept = mg.full((2,), 5.0)
    assert list(m.state_dict()) == ["kept", "later"]
    np.testing.assert_array_equal(m.state_dict()["kept"], [5.0, 5.0])
    with pytest.raises(TypeError, match="register_buffer"):
        m.register_buffer("bad", np.zeros(2))


def test_state_dict_round_trip_with_batchnorm_through_a_checkpoint(tmp_path):
    def make():
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Unflatten(1, (2, 4)),
                             nn.BatchNorm1d(2), nn.Flatten(), nn.Linear(8, 2))

    mg.manual_seed(0)
    model = make()
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = mg.tensor(_randn32(16, 4, seed=step))
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    state = model.state_dict()
    assert "1.running_var" in state and "4.num_batches_tracked" in state
    assert state["1.num_batches_tracked"].dtype == np.int64 and int(state["1.num_batches_tracked"]) == 3
    mg.save({"model": state}, tmp_path / "bn.npz")
    mg.manual_seed(1)
    fresh = make()
    fresh.load_state_dict(mg.load(tmp_path / "bn.npz")["model"])
    for key, value in fresh.state_dict().items():
        np.testing.assert_array_equal(value, state[key])
        assert value.dtype == state[key].dtype
    model.eval(), fresh.eval()
    x = mg.tensor(_randn32(5, 4, seed=9))
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())


# ============================================================================ errors
def test_errors_name_the_op_and_the_shapes():
    with pytest.raises(ValueError, match=r"BatchNorm1d\(4\).*\(8, 3\).*3 channels.*expected 4"):
        nn.BatchNorm1d(4)(mg.zeros(8, 3))
    with pytest.raises(ValueError, match=r"BatchNorm2d.*\(N, C, H, W\).*\(2, 3, 4\)"):
        nn.BatchNorm2d(3)(mg.zeros(2, 3, 4))
    with pytest.raises(ValueError, match=r"batch_norm: running_mean has shape \(4,\).*\(2, 3\) has 3 channels"):
        F.batch_norm(mg.zeros(2, 3), mg.zeros(4), mg.ones(4), training=True)
    with pytest.raises(ValueError, match=r"group_norm.*\(2, 6, 3\) has 6 channels.*num_groups=4"):
        F.group_norm(mg.zeros(2, 6, 3), 4)
    with pytest.raises(ValueError, match=r"GroupNorm: num_channels=6.*num_groups=4"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match=r"GroupNorm\(2, 6\).*\(N, 6, \.\.\.\).*\(2, 4\)"):
        nn.GroupNorm(2, 6)(mg.zeros(2, 4))
    with pytest.raises(ValueError, match=r"instance_norm: Expected more than 1 spatial element.*\(2, 3, 1\)"):
        F.instance_norm(mg.zeros(2, 3, 1))
    with pytest.raises(ValueError, match="eval mode.*running_mean and running_var"):
        F.batch_norm(mg.zeros(2, 3), None, None)
    with pytest.raises(TypeError, match="batch_norm: the input is float64 but weight is float32"):
        F.batch_norm(f64(2, 3), None, None, mg.ones(3), training=True)
    with pytest.raises(ValueError, match=r"Unflatten: cannot split dim 1 of size 6.*\(4, 2\)"):
        nn.Unflatten(1, (4, 2))(mg.zeros(3, 6))


def test_a_batch_of_one_is_refused_while_training_only():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match=r"BatchNorm1d: Expected more than 1 value per channel when training, "
                                         r"got input of shape \(1, 3\)"):
        bn(mg.zeros(1, 3))
    assert bn.num_batches_tracked.item() == 0  # the refused batch is not counted
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(mg.zeros(1, 2, 1), None, None, training=True)
    bn(mg.zeros(1, 3, 2))  # one example, but two values per channel: allowed (as PyTorch)
    bn.eval()
    assert bn(mg.zeros(1, 3)).shape == (1, 3)  # eval mode: the running statistics need no batch
