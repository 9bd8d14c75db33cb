"""minigrad.distributions (as torch.distributions): Categorical, Bernoulli, Normal, Uniform and
kl_divergence. log_prob, entropy, mean, variance and KL against their formulas in numpy and against
PyTorch; float64 gradient checks of every element of every parameter; rsample's gradient; samples'
shape, dtype, reproducibility with a seed, and frequencies and means within bounds derived from the
sample size (5 standard errors: a correct sampler fails one with probability < 1e-6, and the seeds
fix the draws anyway); a REINFORCE step against PyTorch's; validate_args errors."""
import math

import numpy as np
import pytest

import minigrad
import minigrad.distributions as D
from course_compare import assert_close
from strategies import TIGHT

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def rng(seed):
    return np.random.default_rng(seed)


def t64(values, requires_grad=False):
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def np_log_softmax(x):
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)


def gradcheck_all(fn, inputs):
    report = minigrad.gradcheck(fn, inputs, **TIGHT)
    assert report and all(r.checked == r.size for r in report.inputs)


# ============================================================================ formulas
def test_normal_formulas():
    g = rng(1)
    loc, scale, x = g.standard_normal(5), g.uniform(0.5, 2, 5), g.standard_normal((3, 5))
    d = D.Normal(t64(loc), t64(scale))
    assert d.batch_shape == (5,) and d.event_shape == () and d.has_rsample
    assert_close(d.log_prob(t64(x)), -(x - loc) ** 2 / (2 * scale ** 2) - np.log(scale) - LOG_SQRT_2PI, np.float64, 5)
    assert_close(d.entropy(), 0.5 + LOG_SQRT_2PI + np.log(scale), np.float64, 3)
    assert_close(d.mean, loc, np.float64)
    assert_close(d.stddev, scale, np.float64)
    assert_close(d.variance, scale ** 2, np.float64)
    scalar = D.Normal(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.loc.dtype == np.float32  # (numbers: the default dtype)


def test_uniform_formulas():
    g = rng(2)
    low = g.standard_normal(4)
    high = low + g.uniform(0.5, 3, 4)
    d = D.Uniform(t64(low), t64(high))
    inside = low + 0.3 * (high - low)
    assert_close(d.log_prob(t64(inside)), -np.log(high - low), np.float64)
    assert np.all(d.log_prob(t64(high)).numpy() == -np.inf)  # [low, high): high itself has density 0
    assert_close(d.log_prob(t64(low)), -np.log(high - low), np.float64)
    assert_close(d.entropy(), np.log(high - low), np.float64)
    assert_close(d.mean, (low + high) / 2, np.float64, 4)
    assert_close(d.variance, (high - low) ** 2 / 12, np.float64, 4)
    assert_close(d.stddev, (high - low) / math.sqrt(12), np.float64, 4)


def test_bernoulli_formulas():
    g = rng(3)
    logits = g.standard_normal(6)
    p = 1 / (1 + np.exp(-logits))
    x = (g.random(6) < 0.5).astype(np.float64)
    for d in (D.Bernoulli(logits=t64(logits)), D.Bernoulli(probs=t64(p))):
        assert_close(d.log_prob(t64(x)), x * np.log(p) + (1 - x) * np.log(1 - p), np.float64, 10)
        assert_close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)), np.float64, 10)
        assert_close(d.probs, p, np.float64)
        assert_close(d.logits, logits, np.float64, 10, 4)
        assert_close(d.mean, p, np.float64)
        assert_close(d.variance, p * (1 - p), np.float64)


def test_categorical_formulas():
    g = rng(4)
    logits = g.standard_normal((3, 5))
    log_p = np_log_softmax(logits)
    p = np.exp(log_p)
    for d in (D.Categorical(logits=t64(logits)), D.Categorical(probs=t64(p * 7.0))):  # probs are normalised
        assert d.batch_shape == (3,) and d.event_shape == ()
        assert_close(d.probs, p, np.float64)
        assert_close(d.logits, log_p, np.float64, 10, 4)
        ids = np.array([4, 0, 2])
        assert_close(d.log_prob(ids), log_p[np.arange(3), ids], np.float64, 10, 4)
        more = g.integers(0, 5, (7, 3))  # (sample, batch): broadcast against batch_shape
        assert_close(d.log_prob(more), log_p[np.arange(3), more], np.float64, 10, 4)
        assert_close(d.entropy(), -(p * log_p).sum(-1), np.float64, 10, 5)
        assert np.isnan(d.mean.numpy()).all() and d.mean.shape == (3,)
    zero = D.Categorical(probs=t64([0.0, 0.5, 0.5]))  # 0 log 0 counts 0
    np.testing.assert_allclose(zero.entropy().item(), math.log(2), rtol=1e-14)


def test_kl_divergence_formulas():
    g = rng(5)
    mp, sp, mq, sq = g.standard_normal(4), g.uniform(0.5, 2, 4), g.standard_normal(4), g.uniform(0.5, 2, 4)
    kl = D.kl_divergence(D.Normal(t64(mp), t64(sp)), D.Normal(t64(mq), t64(sq)))
    assert_close(kl, np.log(sq / sp) + (sp ** 2 + (mp - mq) ** 2) / (2 * sq ** 2) - 0.5, np.float64, 10, 6)
    same = D.Normal(t64(mp), t64(sp))
    np.testing.assert_allclose(D.kl_divergence(same, same).numpy(), 0.0, atol=1e-15)
    lp, lq = np_log_softmax(g.standard_normal((2, 4))), np_log_softmax(g.standard_normal((2, 4)))
    kl = D.kl_divergence(D.Categorical(logits=t64(lp)), D.Categorical(logits=t64(lq)))
    assert_close(kl, (np.exp(lp) * (lp - lq)).sum(-1), np.float64, 10, 8)
    p, q = D.Categorical(probs=t64([0.0, 0.5, 0.5])), D.Categorical(probs=t64([0.5, 0.5, 0.0]))
    assert D.kl_divergence(p, q).item() == math.inf  # q = 0 where p > 0
    np.testing.assert_allclose(D.kl_divergence(q, D.Categorical(probs=t64([0.25, 0.5, 0.25]))).item(),
                               0.5 * math.log(2), rtol=1e-14)  # p = 0 terms count 0
    with pytest.raises(NotImplementedError, match="Normal.*Uniform"):
        D.kl_divergence(same, D.Uniform(0.0, 1.0))


# ============================================================================ gradients
def test_gradcheck_log_prob_entropy_kl():
    g = rng(6)
    loc, scale = t64(g.standard_normal(4), True), t64(g.uniform(0.5, 2, 4), True)
    x = t64(g.standard_normal((3, 4)), True)
    gradcheck_all(lambda loc, scale, x: D.Normal(loc, scale).log_prob(x), [loc, scale, x])
    gradcheck_all(lambda scale: D.Normal(0.0, scale).entropy(), [scale])
    loc2, scale2 = t64(g.standard_normal(4), True), t64(g.uniform(0.5, 2, 4), True)
    gradcheck_all(lambda a, b, c, d: D.kl_divergence(D.Normal(a, b), D.Normal(c, d)), [loc, scale, loc2, scale2])
    low = t64(g.standard_normal(4), True)
    high = t64(low.numpy() + g.uniform(1, 2, 4), True)
    gradcheck_all(lambda low, high: D.Uniform(low, high).log_prob(t64(low.numpy() + 0.5)), [low, high])
    gradcheck_all(lambda low, high: D.Uniform(low, high).entropy(), [low, high])
    logits = t64(g.standard_normal((3, 5)), True)
    ids = g.integers(0, 5, (2, 3))
    gradcheck_all(lambda z: D.Categorical(logits=z).log_prob(ids), [logits])
    gradcheck_all(lambda z: D.Categorical(logits=z).entropy(), [logits])
    probs = t64(g.uniform(0.1, 1, (3, 5)), True)
    gradcheck_all(lambda p: D.Categorical(probs=p).log_prob(ids), [probs])
    other = t64(g.standard_normal((3, 5)), True)
    gradcheck_all(lambda a, b: D.kl_divergence(D.Categorical(logits=a), D.Categorical(logits=b)), [logits, other])
    b_logits = t64(g.standard_normal(5), True)
    b_probs = t64(g.uniform(0.1, 0.9, 5), True)
    values = (g.random(5) < 0.5).astype(np.float64)
    gradcheck_all(lambda z: D.Bernoulli(logits=z).log_prob(values), [b_logits])
    gradcheck_all(lambda z: D.Bernoulli(logits=z).entropy(), [b_logits])
    gradcheck_all(lambda p: D.Bernoulli(probs=p).log_prob(values), [b_probs])
    gradcheck_all(lambda p: D.Bernoulli(probs=p).entropy(), [b_probs])


def test_rsample_is_in_the_graph_and_sample_is_not():
    minigrad.manual_seed(7)
    loc, scale = t64([0.5, -1.0], True), t64([2.0, 0.5], True)
    x = D.Normal(loc, scale).rsample((3,))
    assert x.shape == (3, 2) and x.requires_grad
    x.sum().backward()
    eps = (x.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(loc.grad.numpy(), [3.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-12)  # d x / d scale = eps
    low, high = t64([0.0, 1.0], True), t64([1.0, 5.0], True)
    u = D.Uniform(low, high).rsample((4,))
    u.sum().backward()
    frac = (u.detach().numpy() - low.detach().numpy()) / (high.detach().numpy() - low.detach().numpy())
    np.testing.assert_allclose(high.grad.numpy(), frac.sum(0), rtol=1e-12)
    np.testing.assert_allclose(low.grad.numpy(), (1 - frac).sum(0), rtol=1e-12)
    for d in (D.Normal(loc, scale), D.Uniform(low, high), D.Bernoulli(logits=loc), D.Categorical(logits=loc)):
        assert not d.sample((2,)).requires_grad
    with pytest.raises(NotImplementedError, match="Categorical.*rsample"):
        D.Categorical(logits=loc).rsample()
    assert not D.Bernoulli(probs=0.5).has_rsample


# ============================================================================ sampling
N = 40000


def test_sample_shapes_dtypes_and_seed():
    cases = [(D.Normal(t64(np.zeros(3)), 1.0), np.float64), (D.Normal(0.0, 1.0), np.float32),
             (D.Uniform(minigrad.zeros(3), 1.0), np.float32), (D.Bernoulli(probs=t64([0.2, 0.7, 0.5])), np.float64),
             (D.Categorical(logits=minigrad.zeros(3, 4)), np.int64)]
    for d, dtype in cases:
        for shape in [(), (5,), (2, 5)]:
            s = d.sample(shape)
            assert s.shape == shape + d.batch_shape and s.dtype == dtype
        minigrad.manual_seed(123)
        a = d.sample((50,)).numpy()
        minigrad.manual_seed(123)
        b = d.sample((50,)).numpy()
        c = d.sample((50,)).numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    assert D.Normal(0.0, 1.0).sample(4).shape == (4,)  # (an int sample_shape, as PyTorch)


def test_normal_and_uniform_sample_moments():
    minigrad.manual_seed(8)
    loc, scale = np.array([-1.0, 3.0]), np.array([0.5, 2.0])
    x = D.Normal(t64(loc), t64(scale)).sample((N,)).numpy()
    # mean: standard error scale / sqrt(N); variance: sd of the sample variance ~ scale^2 sqrt(2 / (N - 1))
    assert np.all(np.abs(x.mean(0) - loc) < 5 * scale / math.sqrt(N))
    assert np.all(np.abs(x.var(0, ddof=1) - scale ** 2) < 5 * scale ** 2 * math.sqrt(2 / (N - 1)))
    low, high = np.array([0.0, -2.0]), np.array([1.0, 6.0])
    u = D.Uniform(t64(low), t64(high)).sample((N,)).numpy()
    assert np.all((u >= low) & (u < high))
    width = high - low
    assert np.all(np.abs(u.mean(0) - (low + high) / 2) < 5 * width / math.sqrt(12 * N))
    r = D.Normal(t64(loc), t64(scale)).rsample((N,)).detach().numpy()
    assert np.all(np.abs(r.mean(0) - loc) < 5 * scale / math.sqrt(N))


def test_bernoulli_and_categorical_frequencies():
    minigrad.manual_seed(9)
    p = np.array([0.05, 0.5, 0.9, 0.0, 1.0])
    s = D.Bernoulli(probs=t64(p)).sample((N,)).numpy()
    assert set(np.unique(s)) <= {0.0, 1.0}
    assert np.all(np.abs(s.mean(0) - p) <= 5 * np.sqrt(p * (1 - p) / N))  # exact for p = 0 and 1
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]])
    ids = D.Categorical(probs=t64(probs)).sample((N,)).numpy()
    assert ids.min() >= 0 and ids.max() <= 3
    for row in range(2):
        freq = np.bincount(ids[:, row], minlength=4) / N
        assert np.all(np.abs(freq - probs[row]) <= 5 * np.sqrt(probs[row] * (1 - probs[row]) / N))
    assert not np.any(ids[:, 0] == 1)  # a class of probability 0 is never drawn
    logits = np.log(probs[0] + 1e-300)
    ids = D.Categorical(logits=t64(logits)).sample((N,)).numpy()
    freq = np.bincount(ids, minlength=4) / N
    assert np.all(np.abs(freq - probs[0]) <= 5 * np.sqrt(probs[0] * (1 - probs[0]) / N))


# ============================================================================ against PyTorch
def test_matches_torch():
    torch = pytest.importorskip("torch")
    TD = torch.distributions
    g = rng(10)
    logits, x = g.standard_normal((3, 5)), g.integers(0, 5, (4, 3))
    loc, scale, v = g.standard_normal(3), g.uniform(0.5, 2, 3), g.standard_normal((4, 3))
    low = g.standard_normal(3)
    high = low + 2.0
    bern, bx = g.uniform(0.1, 0.9, 3), (g.random((4, 3)) < 0.5).astype(np.float64)
    pairs = [
        (D.Categorical(logits=t64(logits)), TD.Categorical(logits=torch.tensor(logits)), x),
        (D.Categorical(probs=t64(np.exp(logits))), TD.Categorical(probs=torch.tensor(np.exp(logits))), x),
        (D.Normal(t64(loc), t64(scale)), TD.Normal(torch.tensor(loc), torch.tensor(scale)), v),
        (D.Uniform(t64(low), t64(high)), TD.Uniform(torch.tensor(low), torch.tensor(high)), low + 0.7),
        (D.Bernoulli(probs=t64(bern)), TD.Bernoulli(probs=torch.tensor(bern)), bx),
        (D.Bernoulli(logits=t64(loc)), TD.Bernoulli(logits=torch.tensor(loc)), bx),
    ]
    for ours, theirs, value in pairs:
        assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
        # (before .probs and .logits: PyTorch's repr lists the lazily computed one too once it was read)
        assert repr(ours).replace("Size(", "torch.Size(") == repr(theirs)
        tv = torch.tensor(value)
        assert_close(ours.log_prob(value), theirs.log_prob(tv).numpy(), np.float64, 10, 8)
        assert_close(ours.entropy(), theirs.entropy().numpy(), np.float64, 10, 8)
        for name in ("probs", "logits") if hasattr(theirs, "probs") else ("mean", "variance", "stddev"):
            assert_close(getattr(ours, name), getattr(theirs, name).numpy(), np.float64, 20, 4)
    p, q = (logits, g.standard_normal((3, 5)))
    assert_close(D.kl_divergence(D.Categorical(logits=t64(p)), D.Categorical(logits=t64(q))),
                 TD.kl_divergence(TD.Categorical(logits=torch.tensor(p)),
                                  TD.Categorical(logits=torch.tensor(q))).numpy(),
                 np.float64, 10, 10)
    assert_close(D.kl_divergence(D.Normal(t64(loc), t64(scale)), D.Normal(t64(low), t64(bern))),
                 TD.kl_divergence(TD.Normal(torch.tensor(loc), torch.tensor(scale)),
                                  TD.Normal(torch.tensor(low), torch.tensor(bern))).numpy(), np.float64, 10, 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reinforce_step_matches_torch(dtype):
    """-(log pi(a) * reward).mean() for a policy's logits: the gradient PyTorch gives, and the formula's
    (onehot(a) - softmax(logits)) * reward / B with a minus sign."""
    g = rng(11)
    logits, actions, reward = g.standard_normal((6, 4)), g.integers(0, 4, 6), g.standard_normal(6)
    z = minigrad.tensor(logits.astype(dtype), requires_grad=True)
    policy = D.Categorical(logits=z)
    loss = -(policy.log_prob(minigrad.tensor(actions)) * minigrad.tensor(reward.astype(dtype))).mean()
    loss.backward()
    assert z.grad.dtype == dtype
    p = np.exp(np_log_softmax(logits))
    expected = -(np.eye(4)[actions] - p) * reward[:, None] / 6
    assert_close(z.grad, expected, dtype, 1.0, 4)
    torch = pytest.importorskip("torch")
    tz = torch.tensor(logits.astype(dtype), requires_grad=True)
    tp = torch.distributions.Categorical(logits=tz)
    (-(tp.log_prob(torch.tensor(actions)) * torch.tensor(reward.astype(dtype))).mean()).backward()
    assert_close(z.grad, tz.grad.numpy(), dtype, 1.0, 4)
    np.testing.assert_allclose(loss.item(), (-(tp.log_prob(torch.tensor(actions)) *
                                               torch.tensor(reward.astype(dtype))).mean()).item(),
                               rtol=8 * np.finfo(dtype).eps * 6)


# ============================================================================ errors
def test_validate_args_errors():
    cases = [
        (lambda: D.Normal(0.0, -1.0), ["Normal", "scale", "GreaterThan", "-1.0"]),
        (lambda: D.Normal(t64([0.0, 0.0]), t64([1.0, 0.0])), ["Normal", "scale", "0."]),
        (lambda: D.Uniform(1.0, 0.0), ["Uniform", "low", "LessThan", "1.0"]),
        (lambda: D.Bernoulli(probs=1.5), ["Bernoulli", "probs", "Interval", "1.5"]),
        (lambda: D.Categorical(probs=t64([0.5, -0.1, 0.6])), ["Categorical", "probs", "Simplex", "-0.1"]),
        (lambda: D.Categorical(logits=minigrad.zeros(3)).log_prob(np.array([3])),
         ["Categorical", "value", "IntegerInterval", "upper_bound=2", "[3]"]),
        (lambda: D.Bernoulli(probs=0.5).log_prob(0.5), ["Bernoulli", "value", "Boolean", "0.5"]),
        (lambda: D.Uniform(0.0, 1.0).log_prob(1.5), ["Uniform", "value", "Interval", "1.5"]),
        (lambda: D.Normal(0.0, 1.0).log_prob(float("nan")), ["Normal", "value", "Real", "nan"]),
        (lambda: D.Categorical(), ["Categorical", "probs", "logits"]),
        (lambda: D.Bernoulli(probs=0.5, logits=0.0), ["Bernoulli", "not both"]),
        (lambda: D.Categorical(probs=t64(0.5)), ["Categorical", "one-dimensional"]),
    ]
    for make, words in cases:
        with pytest.raises(ValueError) as info:
            make()
        for word in words:
            assert word in str(info.value), (word, str(info.value))
    # validate_args=False: no check, as PyTorch
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    assert D.Uniform(0.0, 1.0, validate_args=False).log_prob(1.5).item() == -math.inf
