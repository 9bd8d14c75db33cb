"""More of torch.nn: the activations Hardswish, Hardsigmoid, Softsign, Tanhshrink, Threshold, GLU,
CELU, Softshrink, Hardshrink; the losses MarginRankingLoss, HingeEmbeddingLoss, CosineEmbeddingLoss,
TripletMarginLoss, GaussianNLLLoss, PoissonNLLLoss, MultiLabelSoftMarginLoss, SoftMarginLoss,
MultiMarginLoss; and Bilinear, Fold, Unfold, ChannelShuffle.

Each against its formula written in numpy (float32 and float64, every reduction), a float64
gradient check of every element of every differentiable input (away from the kinks, where central
differences measure nothing), against PyTorch when it is installed (values, dtypes, gradients, and
at the kinks PyTorch's choice of gradient), and the errors."""
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from course_compare import DTYPES, assert_close, assert_same_as_torch, magnitude
from helpers import has_all
from minigrad import nn
from strategies import TIGHT

REDUCTIONS = ["mean", "sum", "none"]
SHAPE = (4, 5)


def rng(seed):
    return np.random.default_rng(seed)


def away_from(values, kinks, gap=0.1):
    """values moved off every kink by at least `gap` (central differences need a smooth neighbourhood)."""
    values = np.array(values, dtype=np.float64)
    for k in kinks:
        near = np.abs(values - k) < gap
        values[near] = k + np.where(values[near] >= k, gap, -gap) * 2
    return values


# ============================================================================ activations
def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


@dataclass
class Act:
    """call(F, x) for minigrad's F and PyTorch's; module(nn); formula(x) in numpy; kinks to keep away from."""
    call: Callable
    module: Callable
    formula: Callable
    kinks: tuple = ()
    inplace: bool = False
    shape: tuple = SHAPE


ACTS = {
    "hardswish": Act(lambda F, x: F.hardswish(x), lambda nn: nn.Hardswish(),
                     lambda x: x * np.clip(x + 3, 0, 6) / 6, (-3.0, 3.0), True),
    "hardsigmoid": Act(lambda F, x: F.hardsigmoid(x), lambda nn: nn.Hardsigmoid(),
                       lambda x: np.clip(x + 3, 0, 6) / 6, (-3.0, 3.0), True),
    "softsign": Act(lambda F, x: F.softsign(x), lambda nn: nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    "tanhshrink": Act(lambda F, x: F.tanhshrink(x), lambda nn: nn.Tanhshrink(), lambda x: x - np.tanh(x)),
    "threshold": Act(lambda F, x: F.threshold(x, 0.5, -2.0), lambda nn: nn.Threshold(0.5, -2.0),
                     lambda x: np.where(x > 0.5, x, -2.0), (0.5,), True),
    "glu": Act(lambda F, x: F.glu(x), lambda nn: nn.GLU(), lambda x: x[..., :3] * np_sigmoid(x[..., 3:]),
               shape=(4, 6)),
    "glu_dim0": Act(lambda F, x: F.glu(x, 0), lambda nn: nn.GLU(0), lambda x: x[:2] * np_sigmoid(x[2:])),
    "celu": Act(lambda F, x: F.celu(x), lambda nn: nn.CELU(),
                lambda x: np.maximum(x, 0) + np.minimum(0, np.expm1(x)), (0.0,), True),
    "celu_alpha": Act(lambda F, x: F.celu(x, 0.5), lambda nn: nn.CELU(0.5),
                      lambda x: np.maximum(x, 0) + np.minimum(0, 0.5 * np.expm1(x / 0.5)), (0.0,), True),
    "softshrink": Act(lambda F, x: F.softshrink(x, 0.7), lambda nn: nn.Softshrink(0.7),
                      lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0.0)), (-0.7, 0.7)),
    "hardshrink": Act(lambda F, x: F.hardshrink(x, 0.7), lambda nn: nn.Hardshrink(0.7),
                      lambda x: np.where(np.abs(x) > 0.7, x, 0.0), (-0.7, 0.7)),
}


def act_input(name, seed):
    act = ACTS[name]
    return away_from(rng(seed).uniform(-5, 5, act.shape), act.kinks)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_matches_formula(name, dtype):
    act = ACTS[name]
    x = act_input(name, 1)
    expected = act.formula(x.astype(dtype).astype(np.float64))
    for out in (act.call(F, minigrad.tensor(x.astype(dtype))), act.module(nn)(minigrad.tensor(x.astype(dtype)))):
        assert out.dtype == dtype
        assert_close(out, expected, dtype, magnitude(x, expected))


@pytest.mark.parametrize("name", list(ACTS))
def test_activation_gradcheck(name):
    x = minigrad.tensor(act_input(name, 2), requires_grad=True)
    report = minigrad.gradcheck(lambda x: ACTS[name].call(F, x), [x], **TIGHT)
    assert report and report.inputs[0].checked == x.numel()


def kink_points(name):
    """Points on every kink, beside them, and elsewhere: there the gradient is a convention, PyTorch's."""
    act = ACTS[name]
    values = [k + d for k in act.kinks for d in (-0.25, 0.0, 0.25)] + [-4.5, -1.1, 0.0, 0.3, 1.7, 4.4]
    n = int(np.prod(act.shape))
    values = (values * n)[:n]
    return np.array(values, dtype=np.float64).reshape(act.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_matches_torch_with_its_gradient_at_the_kinks(name, dtype):
    torch = pytest.importorskip("torch")
    act = ACTS[name]
    for x in (act_input(name, 3), kink_points(name)):
        ours = minigrad.tensor(x.astype(dtype), requires_grad=True)
        theirs = torch.tensor(x.astype(dtype), requires_grad=True)
        out, ref = act.call(F, ours), act.call(torch.nn.functional, theirs)
        assert_same_as_torch(out, ref, dtype, magnitude(x))
        upstream = rng(4).standard_normal(tuple(ref.shape)).astype(dtype)
        out.backward(minigrad.tensor(upstream))
        ref.backward(torch.tensor(upstream))
        # PyTorch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32 (a constant of its
        # kernel): ours is 1/6 in float64, so there the two agree to float32's precision only
        grad_dtype = np.float32 if name == "hardsigmoid" else dtype
        assert_same_as_torch(ours.grad, theirs.grad, grad_dtype, magnitude(upstream))
        assert repr(act.module(nn)) == repr(act.module(torch.nn))


def test_activation_gradient_at_the_kinks_is_pytorchs():
    """Written out, so that it holds without PyTorch too: the values PyTorch 2.x gives."""
    def grad(fn, values):
        x = minigrad.tensor(np.array(values, dtype=np.float64), requires_grad=True)
        fn(x).sum().backward()
        return x.grad.numpy().tolist()

    assert grad(F.hardswish, [-3.0, 3.0]) == [0.0, 1.0]
    assert grad(F.hardsigmoid, [-3.0, 3.0]) == [0.0, 0.0]
    assert grad(lambda x: F.softshrink(x, 0.5), [-0.5, 0.5]) == [0.0, 0.0]
    assert grad(lambda x: F.hardshrink(x, 0.5), [-0.5, 0.5]) == [0.0, 0.0]
    assert grad(F.celu, [0.0]) == [1.0]
    assert grad(lambda x: F.threshold(x, 1.0, 5.0), [1.0]) == [0.0]


@pytest.mark.parametrize("name", [n for n, a in ACTS.items() if a.inplace])
def test_activation_inplace_writes_into_the_input(name):
    act = ACTS[name]
    x = act_input(name, 5)
    leaf = minigrad.tensor(x, requires_grad=True)
    y = leaf * 1.0  # not a leaf: it may be changed in place
    module = act.module(nn)
    module.inplace = True
    out = module(y)
    assert out is y
    np.testing.assert_array_equal(y.numpy(), act.call(F, minigrad.tensor(x)).numpy())
    out.sum().backward()  # the gradient goes through "f of y as it was" to the leaf
    plain = minigrad.tensor(x, requires_grad=True)
    act.call(F, plain).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), plain.grad.numpy())


def test_activation_errors():
    with pytest.raises(ValueError) as info:
        F.glu(minigrad.tensor(np.ones((2, 5))))
    has_all(str(info.value), "glu", "even", "(2, 5)", "5")
    with pytest.raises(ValueError, match="celu.*alpha"):
        F.celu(minigrad.tensor([1.0]), 0.0)
    with pytest.raises(ValueError, match="softshrink.*lambd.*-1"):
        F.softshrink(minigrad.tensor([1.0]), -1.0)
    with pytest.raises(ValueError, match="Softshrink.*lambd"):
        nn.Softshrink(-0.1)


# ============================================================================ losses: data
def signs(g, shape):
    return g.choice([-1.0, 1.0], shape)


def ranking(seed):
    """x1, x2, y with -y (x1 - x2) + margin (0.3) at least 0.1 away from 0."""
    g = rng(seed)
    x2, y = g.standard_normal(SHAPE), signs(g, SHAPE)
    z = away_from(g.uniform(-2, 2, SHAPE), (0.0,))  # the hinge's argument
    return dict(x1=x2 - y * (z - 0.3), x2=x2, t=y)


def hinge(seed):
    g = rng(seed)
    y = signs(g, SHAPE)
    return dict(x=away_from(g.uniform(-2, 3, SHAPE), (1.0,)), t=y)  # margin - x off 0


def cosine(seed):
    g = rng(seed)
    return dict(x1=g.standard_normal(SHAPE), x2=g.standard_normal(SHAPE), t=signs(g, SHAPE[0]))


def triplet(seed):
    g = rng(seed)
    a = g.standard_normal(SHAPE)
    return dict(a=a, p=a + 0.3 * g.standard_normal(SHAPE), n=g.standard_normal(SHAPE) * 1.5)


def gaussian(seed, var_shape=SHAPE):
    g = rng(seed)
    return dict(x=g.standard_normal(SHAPE), t=g.standard_normal(SHAPE), var=g.uniform(0.3, 2.0, var_shape))


def poisson(seed, log_input=True):
    g = rng(seed)
    x = g.standard_normal(SHAPE) if log_input else g.uniform(0.2, 4.0, SHAPE)
    t = g.integers(0, 7, SHAPE).astype(np.float64)
    t[0, :3] = [0.0, 1.0, 2.0]
    return dict(x=x, t=t)


def margins(seed):
    g = rng(seed)
    return dict(x=g.standard_normal(SHAPE), t=signs(g, SHAPE))


def multilabel(seed, weight=False):
    g = rng(seed)
    data = dict(x=g.standard_normal(SHAPE), t=(g.random(SHAPE) < 0.4).astype(np.float64))
    if weight:
        data["w"] = g.uniform(0.5, 2.0, SHAPE[-1])
    return data


def multi_margin(seed, margin=1.0, weight=False):
    """Scores whose hinge arguments margin - x[y] + x[j] keep 0.1 off 0."""
    g = rng(seed)
    y = g.integers(0, SHAPE[-1], SHAPE[0])
    x = g.standard_normal(SHAPE)
    picked = x[np.arange(SHAPE[0]), y][:, None]
    z = away_from(margin - picked + x, (0.0,))
    data = dict(x=z + picked - margin, t=y)
    data["x"][np.arange(SHAPE[0]), y] = picked[:, 0]
    if weight:
        data["w"] = g.uniform(0.5, 2.0, SHAPE[-1])
    return data


# ============================================================================ losses: numpy formulas
def np_logsigmoid(x):
    return -np.logaddexp(0, -x)


def np_cos(x1, x2):
    return (x1 * x2).sum(-1) / np.sqrt(((x1 * x1).sum(-1) + 1e-12) * ((x2 * x2).sum(-1) + 1e-12))


def np_dist(u, v, p, eps=1e-6):
    return (np.abs(u - v + eps) ** p).sum(-1) ** (1 / p)


def np_triplet(d, margin, p, swap):
    d_an = np_dist(d["a"], d["n"], p)
    if swap:
        d_an = np.minimum(d_an, np_dist(d["p"], d["n"], p))
    return np.maximum(margin + np_dist(d["a"], d["p"], p) - d_an, 0)


def np_gaussian(d, full):
    var = d["var"] if d["var"].shape == d["x"].shape or d["var"].ndim == d["x"].ndim else d["var"][..., None]
    return 0.5 * (np.log(var) + (d["x"] - d["t"]) ** 2 / var) + (0.5 * math.log(2 * math.pi) if full else 0)


def np_poisson(d, log_input, full):
    x, t = d["x"], d["t"]
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + 1e-8)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = loss + np.where(t > 1, t * np.log(t) - t + 0.5 * np.log(2 * math.pi * t), 0.0)
    return loss


def np_multi_margin(d, p, margin):
    x, y = d["x"], d["t"]
    z = np.maximum(margin - x[np.arange(len(y)), y][:, None] + x, 0) ** p
    z[np.arange(len(y)), y] = 0
    w = d["w"][y][:, None] if "w" in d else 1.0
    return (z * w).sum(-1) / x.shape[-1]


def reduced(losses, reduction):
    return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.mean()


@dataclass
class Loss:
    """call(F, inputs, r): `inputs` the data's tensors by name (minigrad's or PyTorch's), r the reduction;
    module(nn, r) and forward(module, inputs) likewise; formula(data) the per-element (unreduced) numpy losses.
    grads: the names of the differentiable inputs (float64 gradient check, and compared with PyTorch)."""
    call: Callable
    module: Callable
    forward: Callable
    data: Callable
    formula: Callable
    grads: tuple
    torch_grads: tuple = None  # those PyTorch differentiates (default: grads)
    ints: tuple = ()  # integer inputs (class ids)
    consts: tuple = ("w",)  # inputs that never require grad (weights)
    reductions: list = field(default_factory=lambda: list(REDUCTIONS))


def two(name):
    return lambda m, d: m(d["x1"], d["x2"], d["t"])


LOSSES = {
    "margin_ranking": Loss(lambda F, d, r: F.margin_ranking_loss(d["x1"], d["x2"], d["t"], 0.3, reduction=r),
                           lambda nn, r: nn.MarginRankingLoss(0.3, reduction=r), two("x"), ranking,
                           lambda d: np.maximum(-d["t"] * (d["x1"] - d["x2"]) + 0.3, 0), ("x1", "x2", "t")),
    "hinge_embedding": Loss(lambda F, d, r: F.hinge_embedding_loss(d["x"], d["t"], reduction=r),
                            lambda nn, r: nn.HingeEmbeddingLoss(reduction=r), lambda m, d: m(d["x"], d["t"]), hinge,
                            lambda d: np.where(d["t"] == 1, d["x"], np.maximum(0, 1.0 - d["x"])), ("x",)),
    "hinge_embedding_margin": Loss(lambda F, d, r: F.hinge_embedding_loss(d["x"], d["t"], 2.0, reduction=r),
                                   lambda nn, r: nn.HingeEmbeddingLoss(2.0, reduction=r),
                                   lambda m, d: m(d["x"], d["t"]),
                                   lambda s: {**hinge(s), "x": away_from(hinge(s)["x"], (2.0,))},
                                   lambda d: np.where(d["t"] == 1, d["x"], np.maximum(0, 2.0 - d["x"])), ("x",)),
    "cosine_embedding": Loss(lambda F, d, r: F.cosine_embedding_loss(d["x1"], d["x2"], d["t"], -0.9, reduction=r),
                             lambda nn, r: nn.CosineEmbeddingLoss(-0.9, reduction=r), two("x"), cosine,
                             lambda d: np.where(d["t"] == 1, 1 - np_cos(d["x1"], d["x2"]),
                                                np.maximum(np_cos(d["x1"], d["x2"]) + 0.9, 0)), ("x1", "x2")),
    "triplet": Loss(lambda F, d, r: F.triplet_margin_loss(d["a"], d["p"], d["n"], reduction=r),
                    lambda nn, r: nn.TripletMarginLoss(reduction=r), lambda m, d: m(d["a"], d["p"], d["n"]),
                    triplet, lambda d: np_triplet(d, 1.0, 2, False), ("a", "p", "n")),
    "triplet_p1_swap": Loss(lambda F, d, r: F.triplet_margin_loss(d["a"], d["p"], d["n"], 4.0, 1, swap=True,
                                                                  reduction=r),
                            lambda nn, r: nn.TripletMarginLoss(4.0, 1, swap=True, reduction=r),
                            lambda m, d: m(d["a"], d["p"], d["n"]), triplet, lambda d: np_triplet(d, 4.0, 1, True),
                            ("a", "p", "n")),
    "gaussian": Loss(lambda F, d, r: F.gaussian_nll_loss(d["x"], d["t"], d["var"], reduction=r),
                     lambda nn, r: nn.GaussianNLLLoss(reduction=r), lambda m, d: m(d["x"], d["t"], d["var"]),
                     gaussian, lambda d: np_gaussian(d, False), ("x", "t", "var")),
    "gaussian_full_row_var": Loss(lambda F, d, r: F.gaussian_nll_loss(d["x"], d["t"], d["var"], True, reduction=r),
                                  lambda nn, r: nn.GaussianNLLLoss(full=True, reduction=r),
                                  lambda m, d: m(d["x"], d["t"], d["var"]), lambda s: gaussian(s, SHAPE[:1]),
                                  lambda d: np_gaussian(d, True), ("x", "t", "var")),
    "gaussian_shared_var": Loss(lambda F, d, r: F.gaussian_nll_loss(d["x"], d["t"], d["var"], reduction=r),
                                lambda nn, r: nn.GaussianNLLLoss(reduction=r),
                                lambda m, d: m(d["x"], d["t"], d["var"]), lambda s: gaussian(s, (1, SHAPE[1])),
                                lambda d: np_gaussian(d, False), ("x", "t", "var")),
    "poisson": Loss(lambda F, d, r: F.poisson_nll_loss(d["x"], d["t"], reduction=r),
                    lambda nn, r: nn.PoissonNLLLoss(reduction=r), lambda m, d: m(d["x"], d["t"]), poisson,
                    lambda d: np_poisson(d, True, False), ("x", "t")),
    "poisson_rate_full": Loss(lambda F, d, r: F.poisson_nll_loss(d["x"], d["t"], False, True, reduction=r),
                              lambda nn, r: nn.PoissonNLLLoss(False, True, reduction=r),
                              lambda m, d: m(d["x"], d["t"]), lambda s: poisson(s, False),
                              lambda d: np_poisson(d, False, True), ("x",)),
    # (the target's gradient with full=True: its term jumps at target = 1 and PyTorch's is NaN at 0; tested below)
    "soft_margin": Loss(lambda F, d, r: F.soft_margin_loss(d["x"], d["t"], reduction=r),
                        lambda nn, r: nn.SoftMarginLoss(reduction=r), lambda m, d: m(d["x"], d["t"]), margins,
                        lambda d: np.log1p(np.exp(-d["t"] * d["x"])), ("x", "t"), torch_grads=("x",)),
    "multilabel_soft_margin": Loss(
        lambda F, d, r: F.multilabel_soft_margin_loss(d["x"], d["t"], reduction=r),
        lambda nn, r: nn.MultiLabelSoftMarginLoss(reduction=r), lambda m, d: m(d["x"], d["t"]), multilabel,
        lambda d: -(d["t"] * np_logsigmoid(d["x"]) + (1 - d["t"]) * np_logsigmoid(-d["x"])).mean(-1), ("x", "t")),
    "multilabel_soft_margin_weight": Loss(
        lambda F, d, r: F.multilabel_soft_margin_loss(d["x"], d["t"], weight=d["w"], reduction=r),
        lambda nn, r, **k: nn.MultiLabelSoftMarginLoss(reduction=r, **k), lambda m, d: m(d["x"], d["t"]),
        lambda s: multilabel(s, True),
        lambda d: -(d["w"] * (d["t"] * np_logsigmoid(d["x"]) + (1 - d["t"]) * np_logsigmoid(-d["x"]))).mean(-1),
        ("x", "t")),
    "multi_margin": Loss(lambda F, d, r: F.multi_margin_loss(d["x"], d["t"], reduction=r),
                         lambda nn, r: nn.MultiMarginLoss(reduction=r), lambda m, d: m(d["x"], d["t"]),
                         multi_margin, lambda d: np_multi_margin(d, 1, 1.0), ("x",), ints=("t",)),
    "multi_margin_p2_weight": Loss(
        lambda F, d, r: F.multi_margin_loss(d["x"], d["t"], 2, 0.5, d["w"], reduction=r),
        lambda nn, r, **k: nn.MultiMarginLoss(2, 0.5, reduction=r, **k), lambda m, d: m(d["x"], d["t"]),
        lambda s: multi_margin(s, 0.5, True), lambda d: np_multi_margin(d, 2, 0.5), ("x",), ints=("t",)),
}

LOSS_REDUCTIONS = [(name, r) for name, case in LOSSES.items() for r in case.reductions]


def tensors(lib, case, data, dtype, grads=None):
    """The data as tensors of `lib` (minigrad or torch): class ids as int64, the others in dtype, those
    named in `grads` requiring grad."""
    grads = case.grads if grads is None else grads
    out = {}
    for k, v in data.items():
        if k in case.ints:
            out[k] = lib.tensor(v.astype(np.int64))
        else:
            out[k] = lib.tensor(v.astype(dtype), requires_grad=k in grads)
    return out


def module_of(case, lib_nn, r, inputs):
    return case.module(lib_nn, r, weight=inputs["w"]) if "w" in inputs else case.module(lib_nn, r)


def scale_of(data):
    return magnitude(*[v for v in data.values() if v.dtype.kind == "f"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reduction", LOSS_REDUCTIONS)
def test_loss_matches_formula(name, reduction, dtype):
    case = LOSSES[name]
    data = {k: (v.astype(dtype).astype(np.float64) if v.dtype.kind == "f" else v)
            for k, v in case.data(1).items()}
    elementwise = case.formula(data)
    expected = reduced(elementwise, reduction)
    terms = 1 if reduction == "none" else elementwise.size
    inputs = tensors(minigrad, case, data, dtype, grads=())
    for out in (case.call(F, inputs, reduction), case.forward(module_of(case, nn, reduction, inputs), inputs)):
        assert out.dtype == dtype and out.shape == np.shape(expected)
        assert_close(out, expected, dtype, magnitude(scale_of(data), elementwise) * 4, terms * 4)


@pytest.mark.parametrize("name, reduction", LOSS_REDUCTIONS)
def test_loss_gradcheck(name, reduction):
    """float64 central differences, every element of every differentiable input."""
    case = LOSSES[name]
    inputs = tensors(minigrad, case, case.data(2), np.float64)
    names = list(case.grads)

    def fn(*values):
        return case.call(F, {**inputs, **dict(zip(names, values))}, reduction)

    report = minigrad.gradcheck(fn, [inputs[k] for k in names], **TIGHT)
    assert report and len(report.inputs) == len(names)
    assert all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reduction", LOSS_REDUCTIONS)
def test_loss_matches_torch(name, reduction, dtype):
    torch = pytest.importorskip("torch")
    case = LOSSES[name]
    data = case.data(3)
    grads = case.grads if case.torch_grads is None else case.torch_grads
    ours, theirs = tensors(minigrad, case, data, dtype, grads), tensors(torch, case, data, dtype, grads)
    elementwise = case.formula(data)
    terms = 1 if reduction == "none" else elementwise.size
    scale = magnitude(scale_of(data), elementwise) * 4
    for out, ref in [(case.call(F, ours, reduction), case.call(torch.nn.functional, theirs, reduction)),
                     (case.forward(module_of(case, nn, reduction, ours), ours),
                      case.forward(module_of(case, torch.nn, reduction, theirs), theirs))]:
        assert_same_as_torch(out, ref, dtype, scale, terms * 4)
        for k in grads:
            ours[k].grad = theirs[k].grad = None
        upstream = rng(4).standard_normal(tuple(ref.shape)).astype(dtype)
        out.backward(minigrad.tensor(upstream))
        ref.backward(torch.tensor(upstream))
        for k in grads:
            assert_same_as_torch(ours[k].grad, theirs[k].grad, dtype, scale * magnitude(upstream), terms * 4)


def test_loss_gradient_at_the_kinks_is_pytorchs():
    """On the kinks: PyTorch's clamp_min counts 0 as inside (gradient of the line), multi_margin_loss as outside."""
    x1 = minigrad.tensor([1.0, 0.0], requires_grad=True)
    F.margin_ranking_loss(x1, minigrad.tensor([1.0, 0.0]), minigrad.tensor([1.0, -1.0]), reduction="sum").backward()
    assert x1.grad.numpy().tolist() == [-1.0, 1.0]
    x = minigrad.tensor([1.0], requires_grad=True)
    F.hinge_embedding_loss(x, minigrad.tensor([-1.0]), reduction="sum").backward()
    assert x.grad.numpy().tolist() == [-1.0]
    scores = minigrad.tensor(np.array([[0.0, -1.0, 0.5]]), requires_grad=True)  # margin - x[0] + x[1] = 0
    F.multi_margin_loss(scores, np.array([0]), reduction="sum").backward()
    np.testing.assert_allclose(scores.grad.numpy(), [[-1 / 3, 0.0, 1 / 3]], rtol=1e-15)


def test_poisson_full_target_gradient_is_finite_where_the_term_is_dropped():
    """full=True drops Stirling's term where target <= 1; PyTorch's gradient for a target 0 is NaN there
    (0 * log'(0)), ours 0: the term is computed on a safe stand-in."""
    x = minigrad.tensor(np.array([0.5, 0.5, 0.5]), requires_grad=True)
    t = minigrad.tensor(np.array([0.0, 1.0, 3.0]), requires_grad=True)
    F.poisson_nll_loss(x, t, full=True, reduction="sum").backward()
    stirling = np.log(3.0) + 1 - 1 + 0.5 / 3.0  # d/dt of t log t - t + 0.5 log(2 pi t) at 3
    np.testing.assert_allclose(t.grad.numpy(), [-0.5, -0.5, -0.5 + stirling], rtol=1e-14)


def test_poisson_full_target_gradcheck_above_one():
    g = rng(13)
    x = minigrad.tensor(g.uniform(0.2, 4.0, SHAPE), requires_grad=True)
    t = minigrad.tensor(g.uniform(1.5, 6.0, SHAPE), requires_grad=True)
    for log_input in (True, False):
        report = minigrad.gradcheck(lambda x, t: F.poisson_nll_loss(x, t, log_input, True, reduction="sum"), [x, t],
                                    **TIGHT)
        assert report and all(r.checked == r.size for r in report.inputs)


def test_gaussian_nll_var_below_eps_is_clamped_but_keeps_its_gradient():
    """PyTorch's clamp under no_grad: the value max(var, eps), the gradient as if not clamped."""
    x, t = minigrad.tensor(np.array([0.0])), minigrad.tensor(np.array([2e-3]))
    var = minigrad.tensor(np.array([1e-9]), requires_grad=True)
    loss = F.gaussian_nll_loss(x, t, var, eps=1e-6, reduction="sum")
    np.testing.assert_allclose(loss.item(), 0.5 * (np.log(1e-6) + 4e-6 / 1e-6), rtol=1e-14)
    loss.backward()
    np.testing.assert_allclose(var.grad.numpy(), [0.5 * (1 / 1e-6 - 4e-6 / 1e-12)], rtol=1e-9)


def test_gaussian_nll_float_var():
    x, t = minigrad.tensor(np.array([0.0, 1.0])), minigrad.tensor(np.array([0.5, 0.0]))
    np.testing.assert_allclose(F.gaussian_nll_loss(x, t, 2.0, reduction="none").numpy(),
                               0.5 * (np.log(2.0) + np.array([0.25, 1.0]) / 2.0), rtol=1e-15)


# ============================================================================ loss errors
WRONG_SHAPES = {
    "margin_ranking_loss": lambda a, b: F.margin_ranking_loss(a, a, b),
    "hinge_embedding_loss": lambda a, b: F.hinge_embedding_loss(a, b),
    "triplet_margin_loss": lambda a, b: F.triplet_margin_loss(a, a, b),
    "gaussian_nll_loss": lambda a, b: F.gaussian_nll_loss(a, b, a),
    "poisson_nll_loss": lambda a, b: F.poisson_nll_loss(a, b),
    "soft_margin_loss": lambda a, b: F.soft_margin_loss(a, b),
    "multilabel_soft_margin_loss": lambda a, b: F.multilabel_soft_margin_loss(a, b),
}


@pytest.mark.parametrize("op", list(WRONG_SHAPES))
def test_loss_shape_mismatch_is_an_error_naming_the_loss_and_shapes(op):
    """Predictions (N, 1) against targets (N,) would broadcast to (N, N): an error, not a silent loss."""
    with pytest.raises(ValueError) as info:
        WRONG_SHAPES[op](minigrad.tensor(np.full((4, 1), 0.5)), minigrad.tensor(np.full(4, 1.0)))
    has_all(str(info.value), op, "(4, 1)", "(4,)", "same shape")


def test_loss_specific_shape_errors():
    x = minigrad.tensor(np.ones((4, 3)))
    with pytest.raises(ValueError) as info:
        F.cosine_embedding_loss(x, x, minigrad.tensor(np.ones((4, 1))))
    has_all(str(info.value), "cosine_embedding_loss", "(4, 3)", "(4, 1)")
    with pytest.raises(ValueError) as info:
        F.gaussian_nll_loss(x, x, minigrad.tensor(np.ones(3)))
    has_all(str(info.value), "gaussian_nll_loss", "var", "(3,)", "(4, 3)")
    with pytest.raises(ValueError, match="gaussian_nll_loss.*negative"):
        F.gaussian_nll_loss(x, x, minigrad.tensor(-np.ones((4, 3))))
    with pytest.raises(ValueError) as info:
        F.multi_margin_loss(x, np.zeros(3, dtype=np.int64))
    has_all(str(info.value), "multi_margin_loss", "(4, 3)", "(3,)")
    with pytest.raises(IndexError, match="multi_margin_loss.*3"):
        F.multi_margin_loss(x, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="p = 1 and p = 2"):
        F.multi_margin_loss(x, np.zeros(4, dtype=np.int64), p=3)
    with pytest.raises(ValueError, match="MultiMarginLoss.*p"):
        nn.MultiMarginLoss(p=3)


@pytest.mark.parametrize("module", [nn.MarginRankingLoss, nn.HingeEmbeddingLoss, nn.CosineEmbeddingLoss,
                                    nn.TripletMarginLoss, nn.GaussianNLLLoss, nn.PoissonNLLLoss,
                                    nn.MultiLabelSoftMarginLoss, nn.SoftMarginLoss, nn.MultiMarginLoss])
def test_loss_module_bad_reduction_and_legacy_arguments(module):
    with pytest.raises(ValueError) as info:
        module(reduction="avg")
    has_all(str(info.value), module.__name__, "reduction", "'avg'")
    if module is not nn.GaussianNLLLoss:  # (PyTorch's has no size_average either)
        with pytest.raises(TypeError, match=f"{module.__name__}.*size_average"):
            module(size_average=True)


def test_loss_weight_is_a_buffer():
    loss = nn.MultiMarginLoss(weight=minigrad.tensor([1.0, 2.0]))
    assert list(loss.state_dict()) == ["weight"] and list(loss.parameters()) == []


# ============================================================================ Bilinear, Fold, Unfold, ChannelShuffle
def test_bilinear_matches_formula_and_gradcheck():
    g = rng(10)
    layer = nn.Bilinear(3, 4, 2).double()
    x1, x2 = g.standard_normal((5, 3)), g.standard_normal((5, 4))
    w, b = layer.weight.numpy(), layer.bias.numpy()
    expected = np.einsum("ni,kij,nj->nk", x1, w, x2) + b
    np.testing.assert_allclose(layer(minigrad.tensor(x1), minigrad.tensor(x2)).numpy(), expected, rtol=1e-13,
                               atol=1e-14)
    a, c = minigrad.tensor(x1, requires_grad=True), minigrad.tensor(x2, requires_grad=True)
    report = minigrad.gradcheck(lambda a, c, w, b: F.bilinear(a, c, w, b), [a, c, layer.weight, layer.bias],
                                **TIGHT)
    assert report and all(r.checked == r.size for r in report.inputs)
    nobias = nn.Bilinear(3, 4, 2, bias=False)
    assert nobias.bias is None and nobias(minigrad.tensor(x1.astype(np.float32)),
                                          minigrad.tensor(x2.astype(np.float32))).shape == (5, 2)


def test_bilinear_init_is_pytorchs_bound():
    minigrad.manual_seed(0)
    layer = nn.Bilinear(16, 3, 40)
    bound = 1 / math.sqrt(16)
    w = layer.weight.numpy()
    assert w.shape == (40, 16, 3) and layer.bias.shape == (40,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    # 1920 draws of U(-b, b): none beyond 0.99 b has probability 0.99^1920 < 1e-8; the mean is 0 within
    # 5 standard errors b / sqrt(3 n)
    assert np.abs(w).max() > 0.99 * bound and abs(w.mean()) < 5 * bound / math.sqrt(3 * w.size)


def test_bilinear_matches_torch():
    torch = pytest.importorskip("torch")
    ours = nn.Bilinear(3, 4, 2).double()
    theirs = torch.nn.Bilinear(3, 4, 2).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    g = rng(11)
    x1, x2 = g.standard_normal((2, 5, 3)), g.standard_normal((2, 5, 4))
    a, c = minigrad.tensor(x1, requires_grad=True), minigrad.tensor(x2, requires_grad=True)
    ta, tc = torch.tensor(x1, requires_grad=True), torch.tensor(x2, requires_grad=True)
    out, ref = ours(a, c), theirs(ta, tc)
    assert_same_as_torch(out, ref, np.float64, 10.0, 12)
    up = g.standard_normal(tuple(ref.shape))
    out.backward(minigrad.tensor(up))
    ref.backward(torch.tensor(up))
    for m, t in [(a, ta), (c, tc), (ours.weight, theirs.weight), (ours.bias, theirs.bias)]:
        assert_same_as_torch(m.grad, t.grad, np.float64, 10.0, 12)
    assert repr(ours) == repr(theirs)
    with pytest.raises(ValueError, match="bilinear.*\\(5, 4\\).*\\(5, 3\\)"):
        ours(minigrad.tensor(x2[0]), minigrad.tensor(x1[0]))


def test_fold_unfold_modules():
    g = rng(12)
    x = g.standard_normal((2, 3, 5, 6))
    unfold = nn.Unfold(kernel_size=(2, 3), padding=1, stride=2)
    cols = unfold(minigrad.tensor(x))
    np.testing.assert_array_equal(cols.numpy(), F.unfold(minigrad.tensor(x), (2, 3), 1, 1, 2).numpy())
    fold = nn.Fold(output_size=(5, 6), kernel_size=(2, 3), padding=1, stride=2)
    back = fold(cols)
    np.testing.assert_array_equal(back.numpy(), F.fold(cols, (5, 6), (2, 3), 1, 1, 2).numpy())
    # fold(unfold(x)) = x times the number of windows covering each pixel
    counts = F.fold(F.unfold(minigrad.tensor(np.ones_like(x)), (2, 3), 1, 1, 2), (5, 6), (2, 3), 1, 1, 2).numpy()
    np.testing.assert_allclose(back.numpy(), x * counts, rtol=1e-14)
    torch = pytest.importorskip("torch")
    t_unfold, t_fold = torch.nn.Unfold((2, 3), padding=1, stride=2), torch.nn.Fold((5, 6), (2, 3), padding=1, stride=2)
    np.testing.assert_allclose(cols.numpy(), t_unfold(torch.tensor(x)).numpy(), rtol=1e-15)
    np.testing.assert_allclose(back.numpy(), t_fold(t_unfold(torch.tensor(x))).numpy(), rtol=1e-14)
    assert repr(nn.Fold((4, 4), 2)) == repr(torch.nn.Fold((4, 4), 2))
    assert repr(nn.Unfold(2)) == repr(torch.nn.Unfold(2))


def test_channel_shuffle():
    x = np.arange(2 * 6 * 2 * 1, dtype=np.float64).reshape(2, 6, 2, 1)
    out = nn.ChannelShuffle(3)(minigrad.tensor(x)).numpy()
    # channels as a (3 groups, 2) table, read by columns: 0, 2, 4, 1, 3, 5
    np.testing.assert_array_equal(out, x[:, [0, 2, 4, 1, 3, 5]])
    t = minigrad.tensor(x, requires_grad=True)
    assert minigrad.gradcheck(lambda t: F.channel_shuffle(t, 2), [t], **TIGHT)
    with pytest.raises(ValueError) as info:
        F.channel_shuffle(minigrad.tensor(np.ones((1, 5, 2))), 2)
    has_all(str(info.value), "channel_shuffle", "5 channels", "2 groups")
    with pytest.raises(ValueError, match="channel_shuffle.*groups.*0"):
        F.channel_shuffle(minigrad.tensor(x), 0)
    with pytest.raises(ValueError, match="channel_shuffle.*\\(4, 2\\)"):
        F.channel_shuffle(minigrad.tensor(np.ones((4, 2))), 2)
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(out, torch.nn.ChannelShuffle(3)(torch.tensor(x)).numpy())
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
