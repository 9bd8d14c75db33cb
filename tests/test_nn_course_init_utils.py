"""nn.init's course names (constant_, eye_, dirac_, xavier_normal_, kaiming_uniform_, kaiming_normal_,
trunc_normal_, orthogonal_, calculate_gain, the fans of conv weights) and nn.utils
(clip_grad_norm_ with norm_type 2, 1, inf and p, clip_grad_value_, parameters_to_vector,
vector_to_parameters).

The random initialisers cannot be compared with PyTorch value for value (another generator), so
their samples are tested by statistics: the bound is reached and never passed, and the sample std
is within 5 standard errors of the std the fan and gain give. The standard error of a sample std
s of n draws is about sigma sqrt((kurtosis - 1) / (4 n)): kurtosis 3 for a normal, 9/5 for a
uniform, less than 3 for a truncated normal. Gains, fans and the clipping functions are compared
with PyTorch's when it is installed, and with their formulas always."""
import math

import numpy as np
import pytest

import minigrad
from course_compare import DTYPES, assert_close, tolerance
from helpers import has_all
from minigrad import nn
from minigrad.nn import init
from strategies import TIGHT, leaf

N = 40_000  # draws per statistics test


def within_sampling_error(samples, mean, std, kurtosis):
    """The sample mean and std are within 5 standard errors of `mean` and `std`."""
    samples = np.asarray(samples, dtype=np.float64).ravel()
    n = samples.size
    assert abs(samples.mean() - mean) <= 5 * std / math.sqrt(n), (samples.mean(), mean)
    assert abs(samples.std() - std) <= 5 * std * math.sqrt((kurtosis - 1) / (4 * n)), (samples.std(), std)


def weight(*shape, dtype=np.float64):
    return nn.Parameter(np.empty(shape, dtype=dtype))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# ============================================================================ gains and fans
GAINS = [("linear", None, 1.0), ("conv2d", None, 1.0), ("conv_transpose1d", None, 1.0), ("sigmoid", None, 1.0),
         ("tanh", None, 5 / 3), ("relu", None, math.sqrt(2)), ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))),
         ("leaky_relu", 0.2, math.sqrt(2 / 1.04)), ("leaky_relu", 0, math.sqrt(2)), ("selu", None, 0.75)]


@pytest.mark.parametrize("nonlinearity, param, expected", GAINS)
def test_calculate_gain(nonlinearity, param, expected):
    gain = init.calculate_gain(nonlinearity, param)
    assert gain == pytest.approx(expected, rel=1e-15)
    if (torch := _torch()) is not None:
        assert gain == torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError) as info:
        init.calculate_gain("swish")
    has_all(str(info.value), "calculate_gain", "'swish'", "relu", "leaky_relu")
    with pytest.raises(ValueError, match="calculate_gain: negative_slope"):
        init.calculate_gain("leaky_relu", True)


# (weight shape, fan_in, fan_out): Linear (out, in); Conv1d/2d/3d (out, in, *kernel); ConvTranspose2d (in, out, kh, kw)
FANS = [((5, 3), 3, 5), ((7, 4, 3), 12, 21), ((8, 4, 3, 3), 36, 72), ((6, 2, 3, 3, 3), 54, 162),
        ((4, 8, 5, 5), 200, 100)]


@pytest.mark.parametrize("shape, fan_in, fan_out", FANS)
def test_fans_of_linear_and_conv_weights(shape, fan_in, fan_out):
    assert init._calculate_fan_in_and_fan_out(weight(*shape)) == (fan_in, fan_out)
    if (torch := _torch()) is not None:
        assert torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape)) == (fan_in, fan_out)


def test_fans_of_the_layers_weights():
    assert init._calculate_fan_in_and_fan_out(nn.Conv2d(3, 16, 5).weight) == (3 * 25, 16 * 25)
    assert init._calculate_fan_in_and_fan_out(nn.Linear(10, 4).weight) == (10, 4)


# ============================================================================ random initialisers: statistics
@pytest.mark.parametrize("shape", [(200, 200), (25, 16, 10, 10)])  # (a Linear weight, a Conv2d weight)
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity, a", [("leaky_relu", 0), ("relu", 0), ("leaky_relu", 0.2), ("tanh", 0)])
def test_kaiming_uniform_bound_and_std(shape, mode, nonlinearity, a):
    w = weight(*shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(w)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = init.calculate_gain(nonlinearity, a) * math.sqrt(3 / fan)  # gain sqrt(3 / fan)
    assert init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity) is w
    values = w.numpy()
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.999 * bound and values.max() > 0.999 * bound  # the whole range is used
    within_sampling_error(values, 0.0, bound / math.sqrt(3), kurtosis=9 / 5)


@pytest.mark.parametrize("shape", [(200, 200), (25, 16, 10, 10)])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity, a", [("leaky_relu", 0), ("relu", 0), ("leaky_relu", 0.2), ("selu", 0)])
def test_kaiming_normal_std(shape, mode, nonlinearity, a):
    w = weight(*shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(w)
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)
    assert init.kaiming_normal_(w, a, mode, nonlinearity) is w
    within_sampling_error(w.numpy(), 0.0, std, kurtosis=3)


def test_kaiming_defaults_are_pytorchs():
    """nonlinearity='leaky_relu' with a=0 (so relu's gain sqrt(2)), mode='fan_in'."""
    w = weight(100, 400)
    init.kaiming_uniform_(w)
    assert w.numpy().max() <= math.sqrt(2) * math.sqrt(3 / 400) and w.numpy().max() > 0.999 * math.sqrt(6 / 400)


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier_normal_std(gain):
    w = weight(16, 8, 5, 5)
    fan_in, fan_out = 8 * 25, 16 * 25
    assert init.xavier_normal_(w, gain=gain) is w
    within_sampling_error(w.numpy(), 0.0, gain * math.sqrt(2 / (fan_in + fan_out)), kurtosis=3)


def truncated_normal_moments(mean, std, a, b):
    """The mean and std of N(mean, std^2) truncated to [a, b]."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    shift = (pdf(alpha) - pdf(beta)) / z
    variance = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - shift ** 2
    return mean + std * shift, std * math.sqrt(variance)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.5, 1.0, -1.0, 1.5), (0.0, 0.02, -0.04, 0.04),
                                             (0.0, 0.02, -2.0, 2.0), (1.0, 1.0, 2.5, 4.0)])
def test_trunc_normal_bounds_and_moments(mean, std, a, b):
    w = weight(200, 200)
    assert init.trunc_normal_(w, mean, std, a, b) is w
    values = w.numpy()
    assert values.min() >= a and values.max() <= b
    expected_mean, expected_std = truncated_normal_moments(mean, std, a, b)
    within_sampling_error(values, expected_mean, expected_std, kurtosis=3)  # (truncation lowers the kurtosis)


def test_trunc_normal_defaults_are_pytorchs():
    w = init.trunc_normal_(weight(200, 200))
    assert w.numpy().min() >= -2 and w.numpy().max() <= 2
    within_sampling_error(w.numpy(), *truncated_normal_moments(0.0, 1.0, -2.0, 2.0), kurtosis=3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (4, 2, 3, 3), (1, 7)])
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_orthogonal(shape, gain, dtype):
    w = weight(*shape, dtype=dtype)
    assert init.orthogonal_(w, gain=gain) is w and w.dtype == dtype
    m = w.numpy().reshape(shape[0], -1).astype(np.float64)
    rows, cols = m.shape
    product = m @ m.T if rows <= cols else m.T @ m  # gain^2 I of the smaller side
    # each entry of the product is a dot product of two rows of norm gain: within a few eps gain^2 of exact
    np.testing.assert_allclose(product, gain ** 2 * np.eye(min(rows, cols)),
                               atol=tolerance(dtype, gain ** 2, terms=max(rows, cols))["atol"])


def test_orthogonal_is_random_and_seeded():
    g1, g2 = minigrad.Generator().manual_seed(3), minigrad.Generator().manual_seed(3)
    a, b = init.orthogonal_(weight(4, 6), generator=g1), init.orthogonal_(weight(4, 6), generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), init.orthogonal_(weight(4, 6), generator=g1).numpy())


RANDOM_INITS = {
    "normal_": lambda w, g: init.normal_(w, 0.0, 1.0, generator=g),
    "uniform_": lambda w, g: init.uniform_(w, -1.0, 1.0, generator=g),
    "xavier_uniform_": lambda w, g: init.xavier_uniform_(w, generator=g),
    "xavier_normal_": lambda w, g: init.xavier_normal_(w, generator=g),
    "kaiming_uniform_": lambda w, g: init.kaiming_uniform_(w, generator=g),
    "kaiming_normal_": lambda w, g: init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu", generator=g),
    "trunc_normal_": lambda w, g: init.trunc_normal_(w, std=0.5, generator=g),
    "orthogonal_": lambda w, g: init.orthogonal_(w, generator=g),
}


@pytest.mark.parametrize("name", list(RANDOM_INITS))
def test_random_init_reproducible_with_a_seeded_generator(name):
    fn = RANDOM_INITS[name]
    first = fn(weight(6, 5), minigrad.Generator().manual_seed(11)).numpy()
    again = fn(weight(6, 5), minigrad.Generator().manual_seed(11)).numpy()
    other = fn(weight(6, 5), minigrad.Generator().manual_seed(12)).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # the default generator: minigrad.manual_seed, and a private generator leaves it alone
    minigrad.manual_seed(5)
    a = fn(weight(6, 5), None).numpy()
    minigrad.manual_seed(5)
    fn(weight(6, 5), minigrad.Generator().manual_seed(0))
    np.testing.assert_array_equal(a, fn(weight(6, 5), None).numpy())


@pytest.mark.parametrize("name", list(RANDOM_INITS))
def test_random_init_in_place_outside_the_graph(name):
    """On a float32 Parameter that requires grad, with gradients on: filled in place, no history,
    its version counted, its dtype kept."""
    w = weight(6, 5, dtype=np.float32)
    array, version = w.numpy(), w._version
    assert RANDOM_INITS[name](w, None) is w
    assert w.numpy() is array and w.dtype == np.float32 and w.is_leaf and w.requires_grad
    assert w._version == version + 1 and np.all(np.isfinite(array)) and len(np.unique(array)) == array.size


# ============================================================================ deterministic initialisers
def test_constant_eye_zeros_ones():
    w = weight(3, 4, dtype=np.float32)
    assert init.constant_(w, 0.3) is w
    np.testing.assert_array_equal(w.numpy(), np.full((3, 4), 0.3, dtype=np.float32))
    assert init.eye_(w) is w
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 4))
    np.testing.assert_array_equal(init.eye_(weight(4, 2)).numpy(), np.eye(4, 2))
    if (torch := _torch()) is not None:
        np.testing.assert_array_equal(w.numpy(), torch.nn.init.eye_(torch.empty(3, 4)).numpy())


@pytest.mark.parametrize("out_channels, in_channels, groups", [(4, 4, 1), (6, 4, 1), (3, 5, 1), (6, 2, 2), (4, 1, 4)])
def test_dirac_makes_a_conv_pass_its_inputs_through(out_channels, in_channels, groups):
    conv = nn.Conv2d(in_channels * groups, out_channels, 3, padding=1, groups=groups).double()
    init.dirac_(conv.weight, groups=groups)
    init.zeros_(conv.bias)
    x = np.random.default_rng(0).standard_normal((2, in_channels * groups, 5, 5))
    out = conv(minigrad.tensor(x)).numpy()
    per_group = out_channels // groups
    for g in range(groups):
        for d in range(per_group):
            expected = x[:, g * in_channels + d] if d < in_channels else 0.0
            np.testing.assert_array_equal(out[:, g * per_group + d], expected)
    if (torch := _torch()) is not None:
        theirs = torch.nn.init.dirac_(torch.empty(tuple(conv.weight.shape), dtype=torch.float64), groups=groups)
        np.testing.assert_array_equal(conv.weight.numpy(), theirs.numpy())


def test_init_errors_name_the_function_and_the_problem():
    with pytest.raises(ValueError) as info:
        init.kaiming_uniform_(weight(3, 4), mode="fan_avg")
    has_all(str(info.value), "kaiming_uniform_", "'fan_in' or 'fan_out'", "'fan_avg'")
    with pytest.raises(ValueError, match="calculate_gain: unsupported nonlinearity 'gelu'"):
        init.kaiming_normal_(weight(3, 4), nonlinearity="gelu")
    for fn in (init.kaiming_normal_, init.kaiming_uniform_, init.xavier_normal_, init.xavier_uniform_):
        with pytest.raises(ValueError) as info:
            fn(weight(5))
        has_all(str(info.value), fn.__name__, "at least 2 dims", "(5,)")
    with pytest.raises(ValueError, match=r"orthogonal_: needs a tensor with at least 2 dims, got shape \(5,\)"):
        init.orthogonal_(weight(5))
    with pytest.raises(ValueError, match=r"eye_: needs a 2-D tensor, got shape \(2, 2, 2\)"):
        init.eye_(weight(2, 2, 2))
    with pytest.raises(ValueError, match=r"dirac_: needs a 3-, 4- or 5-D conv weight.*\(3, 3\)"):
        init.dirac_(weight(3, 3))
    with pytest.raises(ValueError, match=r"dirac_: 5 output channels .* groups=2"):
        init.dirac_(weight(5, 2, 3), groups=2)
    with pytest.raises(ValueError, match="trunc_normal_: needs a < b, got a=1, b=-1"):
        init.trunc_normal_(weight(3), a=1, b=-1)
    with pytest.raises(ValueError, match="trunc_normal_: .* too far from mean=0"):
        init.trunc_normal_(weight(3), a=100, b=101)


def test_kaiming_on_an_empty_tensor_warns_and_does_nothing():
    w = weight(0, 3)
    with pytest.warns(UserWarning, match="kaiming_normal_: the tensor has no elements"):
        assert init.kaiming_normal_(w) is w


# ============================================================================ nn.utils
def test_nn_utils_is_reachable_both_ways():
    from minigrad.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

    assert minigrad.nn.utils.clip_grad_norm_ is clip_grad_norm_
    assert all(callable(f) for f in (clip_grad_value_, parameters_to_vector, vector_to_parameters))


def grads_fixture(dtype, seed=0, scale=3.0):
    """Three parameters with gradients (one 0-d) and one without."""
    g = np.random.default_rng(seed)
    shapes = [(3, 4), (5,), ()]
    params = [nn.Parameter(g.standard_normal(s).astype(dtype)) for s in shapes + [(2,)]]
    for p, s in zip(params, shapes):
        p.grad = (g.standard_normal(s) * scale).astype(dtype)
    return params


def total_norm(grads, p):
    flat = np.concatenate([np.asarray(gr, dtype=np.float64).ravel() for gr in grads])
    return np.abs(flat).max() if p == math.inf else (np.abs(flat) ** p).sum() ** (1 / p)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, "inf", 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(norm_type, max_norm, dtype):
    params = grads_fixture(dtype)
    before = [p.grad.numpy().copy() for p in params[:3]]
    p = float(norm_type)
    expected_total = total_norm(before, p)
    total = minigrad.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert total.shape == () and total.dtype == dtype
    assert_close(total, expected_total, dtype, expected_total, terms=13)
    scale = min(1.0, max_norm / (expected_total + 1e-6))  # g * max_norm / (total + 1e-6), if that shrinks it
    for param, old in zip(params, before):
        assert param.grad.dtype == dtype
        assert_close(param.grad, old * scale, dtype, np.abs(old).max(), terms=13)
    assert params[3].grad is None
    if scale < 1:
        assert total_norm([q.grad.numpy() for q in params[:3]], p) == pytest.approx(max_norm, rel=1e-5)
    if (torch := _torch()) is not None:
        theirs = [torch.tensor(q.numpy()) for q in params]
        for t, old in zip(theirs, before):
            t.grad = torch.tensor(old)
        their_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
        assert str(their_total.dtype).replace("torch.", "") == str(total.dtype)
        assert_close(total, their_total.numpy(), dtype, expected_total, terms=13)
        for param, t in zip(params[:3], theirs):
            assert_close(param.grad, t.grad.numpy(), dtype, np.abs(t.grad.numpy()).max(initial=0), terms=13)


def test_clip_grad_norm_non_finite():
    params = grads_fixture(np.float64)
    params[0].grad.numpy()[0, 0] = np.inf
    before = [p.grad.numpy().copy() for p in params[:3]]
    assert minigrad.nn.utils.clip_grad_norm_(params, 1.0).item() == np.inf
    for p, old in zip(params, before):  # left alone: the caller sees the inf and skips the step
        np.testing.assert_array_equal(p.grad.numpy(), old)
    with pytest.raises(RuntimeError, match="clip_grad_norm_: the total norm of order 2.0 .* is inf"):
        minigrad.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="clip_grad_norm_: norm_type must be > 0"):
        minigrad.nn.utils.clip_grad_norm_(params, 1.0, norm_type=0)


def test_clip_grad_norm_edge_cases():
    w = nn.Parameter(np.array([3.0, 4.0]))
    total = minigrad.nn.utils.clip_grad_norm_(w, 1.0)  # no gradient yet
    assert total.item() == 0.0 and total.dtype == np.float32 and w.grad is None
    w.grad = np.array([3.0, 4.0])
    assert minigrad.nn.utils.clip_grad_norm_(iter([w, w]), 1.0).item() == 5.0  # listed twice, counted once
    np.testing.assert_allclose(w.grad.numpy(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)], rtol=1e-15)
    model = nn.Linear(3, 2)
    model(minigrad.randn(4, 3)).sum().backward()
    total = minigrad.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)  # model.parameters(): a generator
    assert total.item() > 1e-3
    assert total_norm([p.grad.numpy() for p in model.parameters()], 2) == pytest.approx(1e-3, rel=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_grad_value(dtype):
    params = grads_fixture(dtype)
    before = [p.grad.numpy().copy() for p in params[:3]]
    assert minigrad.nn.utils.clip_grad_value_(params, 1.5) is None
    for p, old in zip(params, before):
        assert p.grad.dtype == dtype
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(old, dtype(-1.5), dtype(1.5)))
    if (torch := _torch()) is not None:
        theirs = [torch.tensor(q.numpy()) for q in params[:3]]
        for t, old in zip(theirs, before):
            t.grad = torch.tensor(old)
        torch.nn.utils.clip_grad_value_(theirs, 1.5)
        for p, t in zip(params, theirs):
            np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    with pytest.raises(ValueError, match="clip_grad_value_: clip_value must be >= 0, got -1.0"):
        minigrad.nn.utils.clip_grad_value_(params, -1)


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    vec = minigrad.nn.utils.parameters_to_vector(model.parameters())
    assert vec.shape == (3 * 4 + 4 + 4 * 2 + 2,) and vec.dtype == np.float32
    np.testing.assert_array_equal(vec.numpy(), np.concatenate([p.numpy().ravel() for p in model.parameters()]))
    new = np.arange(vec.numel(), dtype=np.float64)
    versions = [p._version for p in model.parameters()]
    assert minigrad.nn.utils.vector_to_parameters(minigrad.tensor(new), model.parameters()) is None
    np.testing.assert_array_equal(minigrad.nn.utils.parameters_to_vector(model.parameters()).numpy(), new)
    assert all(p.dtype == np.float32 for p in model.parameters())
    assert [p._version for p in model.parameters()] == [v + 1 for v in versions]
    np.testing.assert_array_equal(model[0].weight.numpy(), new[:12].reshape(4, 3))  # row-major, in order
    if (torch := _torch()) is not None:
        theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        torch.nn.utils.vector_to_parameters(torch.tensor(new, dtype=torch.float32), theirs.parameters())
        for (name, p), (_, t) in zip(model.named_parameters(), theirs.named_parameters()):
            np.testing.assert_array_equal(p.numpy(), t.detach().numpy(), err_msg=name)


def test_parameters_to_vector_is_in_the_graph():
    a, b = leaf(np.arange(6.0).reshape(2, 3)), leaf(np.array([0.5, -1.0]))
    assert minigrad.gradcheck(lambda a, b: minigrad.nn.utils.parameters_to_vector([a, b]) ** 2, [a, b], **TIGHT)


def test_vector_to_parameters_errors():
    params = [nn.Parameter(np.zeros((2, 3))), nn.Parameter(np.zeros(2))]
    with pytest.raises(TypeError, match="vector_to_parameters: vec must be a Tensor, got ndarray"):
        minigrad.nn.utils.vector_to_parameters(np.zeros(8), params)
    with pytest.raises(ValueError) as info:
        minigrad.nn.utils.vector_to_parameters(minigrad.zeros(7), params)
    has_all(str(info.value), "vector_to_parameters", "8 elements", "(2, 3)", "(7,)")
    with pytest.raises(ValueError, match="parameters_to_vector: got no parameters"):
        minigrad.nn.utils.parameters_to_vector([])
