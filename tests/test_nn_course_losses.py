"""The losses course code takes from torch.nn (L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss, NLLLoss,
BCELoss, BCEWithLogitsLoss with weight and pos_weight), as functions and as modules: values and
gradients against an independent numpy formula in float32 and float64 with every reduction,
float64 gradient checks of every input that has a gradient, the same against PyTorch when it is
installed (value, dtype, shape, gradients), and the errors for wrong shapes and arguments.

Inputs keep away from the kinks (|input - target| = beta or delta, = 0), where a gradient is only
a convention and central differences measure nothing."""
import warnings
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


# ============================================================================ data
def regression(seed, kink=1.0):
    """(input, target) whose differences d have |d| in [0.1, 0.9] kink or [1.1, 2.5] kink, either sign."""
    g = rng(seed)
    target = g.standard_normal(SHAPE)
    size = np.where(g.random(SHAPE) < 0.5, g.uniform(0.1, 0.9, SHAPE), g.uniform(1.1, 2.5, SHAPE)) * kink
    return dict(x=target + size * g.choice([-1.0, 1.0], SHAPE), t=target)


def log_probs(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def kl_data(seed, zeros=True, log_target=False):
    g = rng(seed)
    p = np.exp(log_probs(g.standard_normal(SHAPE)))
    if zeros:  # some target probabilities exactly 0: 0 log 0 counts 0
        p[0, 1] = p[2, 3] = 0.0
        p /= p.sum(-1, keepdims=True)
    return dict(x=log_probs(g.standard_normal(SHAPE)), t=np.log(p) if log_target else p)


def bce_data(seed, logits=False, weight=False, pos_weight=False):
    g = rng(seed)
    x = g.uniform(-3, 3, SHAPE) if logits else g.uniform(0.05, 0.95, SHAPE)
    data = dict(x=x, t=g.uniform(0, 1, SHAPE))
    if weight:
        data["weight"] = g.uniform(0.5, 2.0, SHAPE[-1:])  # (C,): broadcast over the batch
    if pos_weight:
        data["pos_weight"] = g.uniform(0.5, 4.0, SHAPE[-1:])
    return data


def nll_data(seed, weight=False, ignore=False):
    g = rng(seed)
    data = dict(x=log_probs(g.standard_normal(SHAPE)), t=g.integers(0, SHAPE[-1], SHAPE[0]))
    if ignore:
        data["t"][1] = -1
    if weight:
        data["weight"] = g.uniform(0.5, 2.0, SHAPE[-1])
    return data


# ============================================================================ numpy formulas
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def smooth_l1(d, beta):
    return np.abs(d) if beta == 0 else np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)


def huber(d, delta):
    return np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


def kl(x, t, log_target):
    if log_target:
        return np.exp(t) * (t - x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t == 0, 0.0, t * np.log(t)) - t * x


def bce(p, y, weight=None):
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)) * (1 if weight is None else weight)


def bce_logits(x, y, weight=None, pos_weight=None):
    pw = 1 if pos_weight is None else pos_weight
    return -(pw * y * np.log(sigmoid(x)) + (1 - y) * np.log(1 - sigmoid(x))) * (1 if weight is None else weight)


def nll(x, t, weight=None, ignore_index=-100):
    """(per-row losses, the mean's denominator)"""
    counted = t != ignore_index
    w = np.ones(x.shape[-1]) if weight is None else weight
    wt = np.where(counted, w[np.where(counted, t, 0)], 0.0)
    losses = -wt * x[np.arange(len(t)), np.where(counted, t, 0)]
    return losses, wt.sum()


def reduced(losses, denominator=None, *, reduction):
    """losses reduced; 'mean' divides by `denominator` (default: their number)."""
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "batchmean":
        return losses.sum() / losses.shape[0]
    return losses.sum() / (losses.size if denominator is None else denominator)


# ============================================================================ the cases
@dataclass
class Case:
    """One loss: `call(F, x, t, reduction, **extras)` works with minigrad's F and with PyTorch's,
    `module(nn, reduction, **extras)` likewise; `formula(data, reduction)` is numpy's value."""
    call: Callable
    module: Callable
    data: Callable
    formula: Callable
    target_grad: bool = True  # whether the target is differentiable (not class ids, not 0 log 0)
    reductions: list = field(default_factory=lambda: list(REDUCTIONS))


CASES = {
    "l1": Case(lambda F, x, t, r: F.l1_loss(x, t, reduction=r),
               lambda nn, r: nn.L1Loss(reduction=r),
               regression, lambda d, r: reduced(np.abs(d["x"] - d["t"]), reduction=r)),
    "smooth_l1": Case(lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r),
                      lambda nn, r: nn.SmoothL1Loss(reduction=r),
                      regression, lambda d, r: reduced(smooth_l1(d["x"] - d["t"], 1.0), reduction=r)),
    "smooth_l1_beta": Case(lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
                           lambda nn, r: nn.SmoothL1Loss(reduction=r, beta=0.5),
                           lambda s: regression(s, kink=0.5),
                           lambda d, r: reduced(smooth_l1(d["x"] - d["t"], 0.5), reduction=r)),
    "smooth_l1_beta0": Case(lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
                            lambda nn, r: nn.SmoothL1Loss(reduction=r, beta=0.0),
                            regression, lambda d, r: reduced(smooth_l1(d["x"] - d["t"], 0.0), reduction=r)),
    "huber": Case(lambda F, x, t, r: F.huber_loss(x, t, reduction=r),
                  lambda nn, r: nn.HuberLoss(reduction=r),
                  regression, lambda d, r: reduced(huber(d["x"] - d["t"], 1.0), reduction=r)),
    "huber_delta": Case(lambda F, x, t, r: F.huber_loss(x, t, r, 2.0),  # (positional, as PyTorch's)
                        lambda nn, r: nn.HuberLoss(r, 2.0),
                        lambda s: regression(s, kink=2.0),
                        lambda d, r: reduced(huber(d["x"] - d["t"], 2.0), reduction=r)),
    "kl": Case(lambda F, x, t, r: F.kl_div(x, t, reduction=r),
               lambda nn, r: nn.KLDivLoss(reduction=r),
               kl_data, lambda d, r: reduced(kl(d["x"], d["t"], False), reduction=r),
               target_grad=False, reductions=["batchmean", "sum", "none", "mean"]),
    "kl_positive_target": Case(lambda F, x, t, r: F.kl_div(x, t, reduction=r),
                               lambda nn, r: nn.KLDivLoss(reduction=r),
                               lambda s: kl_data(s, zeros=False),
                               lambda d, r: reduced(kl(d["x"], d["t"], False), reduction=r),
                               reductions=["batchmean", "sum", "none"]),
    "kl_log_target": Case(lambda F, x, t, r: F.kl_div(x, t, reduction=r, log_target=True),
                          lambda nn, r: nn.KLDivLoss(reduction=r, log_target=True),
                          lambda s: kl_data(s, zeros=False, log_target=True),
                          lambda d, r: reduced(kl(d["x"], d["t"], True), reduction=r),
                          reductions=["batchmean", "sum", "none"]),
    "bce": Case(lambda F, x, t, r: F.binary_cross_entropy(x, t, reduction=r),
                lambda nn, r: nn.BCELoss(reduction=r),
                bce_data, lambda d, r: reduced(bce(d["x"], d["t"]), reduction=r)),
    "bce_weight": Case(lambda F, x, t, r, weight: F.binary_cross_entropy(x, t, weight=weight, reduction=r),
                       lambda nn, r, weight: nn.BCELoss(weight=weight, reduction=r),
                       lambda s: bce_data(s, weight=True),
                       lambda d, r: reduced(bce(d["x"], d["t"], d["weight"]), reduction=r)),
    "bce_logits": Case(lambda F, x, t, r: F.binary_cross_entropy_with_logits(x, t, reduction=r),
                       lambda nn, r: nn.BCEWithLogitsLoss(reduction=r),
                       lambda s: bce_data(s, logits=True),
                       lambda d, r: reduced(bce_logits(d["x"], d["t"]), reduction=r)),
    "bce_logits_pos_weight": Case(
        lambda F, x, t, r, pos_weight: F.binary_cross_entropy_with_logits(x, t, reduction=r, pos_weight=pos_weight),
        lambda nn, r, pos_weight: nn.BCEWithLogitsLoss(reduction=r, pos_weight=pos_weight),
        lambda s: bce_data(s, logits=True, pos_weight=True),
        lambda d, r: reduced(bce_logits(d["x"], d["t"], pos_weight=d["pos_weight"]), reduction=r)),
    "bce_logits_both": Case(
        lambda F, x, t, r, weight, pos_weight: F.binary_cross_entropy_with_logits(
            x, t, weight=weight, reduction=r, pos_weight=pos_weight),
        lambda nn, r, weight, pos_weight: nn.BCEWithLogitsLoss(weight=weight, reduction=r, pos_weight=pos_weight),
        lambda s: bce_data(s, logits=True, weight=True, pos_weight=True),
        lambda d, r: reduced(bce_logits(d["x"], d["t"], d["weight"], d["pos_weight"]), reduction=r)),
    "nll": Case(lambda F, x, t, r: F.nll_loss(x, t, reduction=r),
                lambda nn, r: nn.NLLLoss(reduction=r),
                nll_data, lambda d, r: reduced(*nll(d["x"], d["t"]), reduction=r),
                target_grad=False),
    "nll_weight_ignore": Case(
        lambda F, x, t, r, weight: F.nll_loss(x, t, weight=weight, ignore_index=-1, reduction=r),
        lambda nn, r, weight: nn.NLLLoss(weight=weight, ignore_index=-1, reduction=r),
        lambda s: nll_data(s, weight=True, ignore=True),
        lambda d, r: reduced(*nll(d["x"], d["t"], d["weight"], -1), reduction=r),
        target_grad=False),
}

CASE_REDUCTIONS = [(name, r) for name, case in CASES.items() for r in case.reductions]


def extras_of(data, convert):
    return {k: convert(v) for k, v in data.items() if k not in ("x", "t")}


def minigrad_inputs(data, dtype, target_grad):
    x = minigrad.tensor(data["x"].astype(dtype), requires_grad=True)
    t = data["t"]
    t = t if t.dtype.kind == "i" else minigrad.tensor(t.astype(dtype), requires_grad=target_grad)
    return x, t, extras_of(data, lambda v: minigrad.tensor(v.astype(dtype)))


def quietly(fn):
    """Run fn with the 'mean' KL warning silenced (it is tested on its own below)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*reduction.*mean.*", category=UserWarning)
        return fn()


# ============================================================================ values and gradients: numpy
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reduction", CASE_REDUCTIONS)
def test_loss_matches_formula(name, reduction, dtype):
    case = CASES[name]
    data = case.data(3)
    expected = case.formula(data, reduction)
    elementwise = case.formula(data, "none")
    terms = 1 if reduction == "none" else elementwise.size
    scale = magnitude(data["x"], elementwise)
    x, t, extras = minigrad_inputs(data, dtype, False)
    for out in (quietly(lambda: case.call(F, x, t, reduction, **extras)),
                quietly(lambda: case.module(nn, reduction, **extras)(x, t))):
        assert out.dtype == dtype and out.shape == np.shape(expected)
        assert_close(out, expected, dtype, scale, terms)


@pytest.mark.parametrize("name, reduction", CASE_REDUCTIONS)
def test_loss_gradcheck(name, reduction):
    """float64 central differences, every element of the input (and of the target, where it has a gradient)."""
    case = CASES[name]
    data = case.data(4)
    x, t, extras = minigrad_inputs(data, np.float64, case.target_grad)
    inputs = [x, t] if case.target_grad else [x]
    fn = (lambda x, t: case.call(F, x, t, reduction, **extras)) if case.target_grad else \
        (lambda x: case.call(F, x, t, reduction, **extras))
    report = quietly(lambda: minigrad.gradcheck(fn, inputs, **TIGHT))
    assert len(report.inputs) == len(inputs) and all(r.checked == r.size for r in report.inputs)


# ============================================================================ against PyTorch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, reduction", CASE_REDUCTIONS)
def test_loss_matches_torch(name, reduction, dtype):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    data = case.data(5)
    elementwise = case.formula(data, "none")
    terms = 1 if reduction == "none" else elementwise.size
    x, t, extras = minigrad_inputs(data, dtype, case.target_grad)
    tx = torch.tensor(data["x"].astype(dtype), requires_grad=True)
    tt = (torch.from_numpy(data["t"]) if data["t"].dtype.kind == "i"
          else torch.tensor(data["t"].astype(dtype), requires_grad=case.target_grad))
    textras = extras_of(data, lambda v: torch.tensor(v.astype(dtype)))
    for ours, theirs in [
        (lambda: case.call(F, x, t, reduction, **extras), lambda: case.call(torch.nn.functional, tx, tt, reduction,
                                                                           **textras)),
        (lambda: case.module(nn, reduction, **extras)(x, t),
         lambda: case.module(torch.nn, reduction, **textras)(tx, tt)),
    ]:
        out, ref = quietly(ours), quietly(theirs)
        assert_same_as_torch(out, ref, dtype, magnitude(data["x"], elementwise), terms)
        upstream = rng(6).standard_normal(ref.shape)
        x.grad = tx.grad = None
        if case.target_grad:
            t.grad = tt.grad = None
        out.backward(minigrad.tensor(upstream.astype(dtype)))
        ref.backward(torch.tensor(upstream.astype(dtype)))
        grad_scale = magnitude(tx.grad.numpy(), tt.grad.numpy() if case.target_grad else 0.0)
        assert_same_as_torch(x.grad, tx.grad, dtype, grad_scale)
        if case.target_grad:
            assert_same_as_torch(t.grad, tt.grad, dtype, grad_scale)


def test_kl_div_mean_warns_and_divides_by_every_element():
    data = kl_data(7)
    x, t = minigrad.tensor(data["x"]), minigrad.tensor(data["t"])
    with pytest.warns(UserWarning, match="batchmean"):
        mean = F.kl_div(x, t)
    np.testing.assert_allclose(mean.item(), F.kl_div(x, t, reduction="sum").item() / x.numel(), rtol=1e-15)
    np.testing.assert_allclose(F.kl_div(x, t, reduction="batchmean").item(),
                               F.kl_div(x, t, reduction="sum").item() / x.shape[0], rtol=1e-15)


def test_kl_div_zero_target_counts_zero_with_a_finite_gradient():
    data = kl_data(8)
    x = minigrad.tensor(data["x"], requires_grad=True)
    t = minigrad.tensor(data["t"], requires_grad=True)
    losses = F.kl_div(x, t, reduction="none")
    assert losses.numpy()[0, 1] == -0.0 * data["x"][0, 1] and losses.numpy()[2, 3] == 0.0
    losses.sum().backward()
    assert np.all(np.isfinite(t.grad.numpy())) and np.all(np.isfinite(x.grad.numpy()))
    np.testing.assert_array_equal(x.grad.numpy(), -data["t"])  # d/dx of -t x


def test_pos_weight_is_exact_at_zero_logits():
    """At x = 0 the composition's gradient is the formula's: (sigmoid(0) (pw y + 1 - y) - pw y) / n."""
    x = minigrad.tensor(np.zeros(SHAPE), requires_grad=True)
    y = rng(9).uniform(0, 1, SHAPE)
    pw = rng(10).uniform(0.5, 4, SHAPE[-1])
    F.binary_cross_entropy_with_logits(x, y, pos_weight=minigrad.tensor(pw)).backward()
    expected = (0.5 * (pw * y + 1 - y) - pw * y) / y.size
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=4 * np.finfo(np.float64).eps, atol=1e-17)


def test_nll_loss_after_log_softmax_is_cross_entropy():
    logits = rng(11).standard_normal(SHAPE)
    targets = rng(12).integers(0, SHAPE[-1], SHAPE[0])
    model = nn.Sequential(nn.LogSoftmax(dim=1))
    for reduction in REDUCTIONS:
        a = nn.NLLLoss(reduction=reduction)(model(minigrad.tensor(logits)), targets)
        b = nn.CrossEntropyLoss(reduction=reduction)(minigrad.tensor(logits), targets)
        assert_close(a, b.numpy(), np.float64, magnitude(b.numpy()), 1 if reduction == "none" else SHAPE[0])


def test_nll_loss_all_ignored_or_zero_weights_gives_zero():
    x = minigrad.tensor(log_probs(rng(13).standard_normal(SHAPE)), requires_grad=True)
    weight = np.ones(SHAPE[-1])
    assert F.nll_loss(x, np.full(SHAPE[0], -100), weight=weight).item() == 0.0
    assert F.nll_loss(x, np.zeros(SHAPE[0], dtype=np.int64), weight=np.zeros(SHAPE[-1])).item() == 0.0


def test_loss_weights_are_buffers():
    """As in PyTorch: in the state_dict, and converted with the module by .double()."""
    loss = nn.BCEWithLogitsLoss(weight=minigrad.tensor([1.0, 2.0]), pos_weight=minigrad.tensor([3.0, 1.0]))
    assert list(loss.state_dict()) == ["weight", "pos_weight"] and list(loss.parameters()) == []
    loss.double()
    assert loss.weight.dtype == np.float64 and loss.pos_weight.dtype == np.float64
    assert list(nn.NLLLoss().state_dict()) == [] and nn.NLLLoss().weight is None
    if (torch := _torch()) is not None:
        theirs = torch.nn.BCEWithLogitsLoss(weight=torch.ones(2), pos_weight=torch.ones(2))
        assert list(theirs.state_dict()) == list(loss.state_dict())


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def test_loss_modules_repr():
    assert repr(nn.HuberLoss(delta=2.0)) == "HuberLoss(reduction='mean', delta=2.0)"
    assert repr(nn.SmoothL1Loss(beta=0.5)) == "SmoothL1Loss(reduction='mean', beta=0.5)"
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction='sum')"


# ============================================================================ errors
LOSS_FUNCTIONS = {
    "l1_loss": lambda x, t: F.l1_loss(x, t),
    "smooth_l1_loss": lambda x, t: F.smooth_l1_loss(x, t),
    "huber_loss": lambda x, t: F.huber_loss(x, t),
    "kl_div": lambda x, t: F.kl_div(x, t, reduction="batchmean"),
    "binary_cross_entropy": lambda x, t: F.binary_cross_entropy(x.sigmoid(), t),
    "binary_cross_entropy_with_logits": lambda x, t: F.binary_cross_entropy_with_logits(x, t),
}


@pytest.mark.parametrize("op", list(LOSS_FUNCTIONS))
def test_loss_shape_mismatch_is_an_error_naming_the_loss_and_shapes(op):
    """The usual slip: predictions (N, 1) against targets (N,), which would broadcast to (N, N)."""
    x = minigrad.tensor(np.full((4, 1), 0.5))
    with pytest.raises(ValueError) as info:
        LOSS_FUNCTIONS[op](x, np.full(4, 0.5))
    has_all(str(info.value), op, "(4, 1)", "(4,)", "same shape")


@pytest.mark.parametrize("op", ["l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
                                "binary_cross_entropy_with_logits"])
def test_loss_bad_reduction_is_an_error(op):
    fn = getattr(F, op)
    x = minigrad.tensor(np.full(3, 0.5))
    with pytest.raises(ValueError) as info:
        fn(x, x, reduction="avg")
    has_all(str(info.value), op, "reduction", "'avg'")


@pytest.mark.parametrize("module", [nn.L1Loss, nn.SmoothL1Loss, nn.KLDivLoss, nn.NLLLoss, nn.BCELoss,
                                    nn.BCEWithLogitsLoss])
def test_loss_module_bad_reduction_is_an_error(module):
    with pytest.raises(ValueError) as info:
        module(reduction="avg")
    has_all(str(info.value), module.__name__, "reduction", "'avg'")
    with pytest.raises(ValueError, match="HuberLoss"):
        nn.HuberLoss("avg")


def test_only_kl_div_takes_batchmean():
    x = minigrad.tensor(np.zeros(3))
    with pytest.raises(ValueError, match="l1_loss: reduction"):
        F.l1_loss(x, x, reduction="batchmean")
    nn.KLDivLoss(reduction="batchmean")
    with pytest.raises(ValueError, match="L1Loss"):
        nn.L1Loss(reduction="batchmean")


def test_loss_argument_errors():
    x = minigrad.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="smooth_l1_loss: beta must be >= 0, got -1"):
        F.smooth_l1_loss(x, x, beta=-1)
    with pytest.raises(ValueError, match="huber_loss: delta must be > 0, got 0"):
        F.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="SmoothL1Loss: beta"):
        nn.SmoothL1Loss(beta=-0.5)
    with pytest.raises(ValueError, match="HuberLoss: delta"):
        nn.HuberLoss(delta=-1.0)
    with pytest.raises(ValueError) as info:
        F.binary_cross_entropy_with_logits(x, x, pos_weight=minigrad.tensor(np.ones(2)))
    has_all(str(info.value), "binary_cross_entropy_with_logits", "pos_weight", "(2,)", "(2, 3)")
    with pytest.raises(ValueError) as info:
        F.binary_cross_entropy(x.sigmoid(), x, weight=np.ones((4, 3)))
    has_all(str(info.value), "binary_cross_entropy", "weight", "(4, 3)", "(2, 3)")
    with pytest.raises(ValueError) as info:
        F.nll_loss(x, np.zeros(2, dtype=np.int64), weight=np.ones(2))
    has_all(str(info.value), "nll_loss", "weight", "(3,)", "(2,)")
    with pytest.raises(ValueError) as info:
        nn.NLLLoss()(x, np.zeros(3, dtype=np.int64))
    has_all(str(info.value), "nll_loss", "(3,)", "(2, 3)", "(2,)")


def test_constant_weights_take_the_inputs_dtype():
    """A float64 numpy array of weights leaves a float32 loss float32."""
    data = bce_data(14, logits=True, weight=True, pos_weight=True)
    x = minigrad.tensor(data["x"].astype(np.float32))
    loss = nn.BCEWithLogitsLoss(weight=data["weight"], pos_weight=data["pos_weight"])(x, data["t"])
    assert loss.dtype == np.float32
    assert F.binary_cross_entropy(x.sigmoid(), data["t"], weight=data["weight"]).dtype == np.float32
    assert nn.NLLLoss(weight=np.ones(SHAPE[-1]))(x.log_softmax(-1), np.zeros(SHAPE[0], dtype=np.int64)).dtype == \
        np.float32


# ============================================================================ minigrad.compile
COMPILED_LOSSES = {  # built from ops only (no mask computed in Python): replayed by minigrad.compile
    "smooth_l1": lambda out, y: F.smooth_l1_loss(out, y, beta=0.5),
    "huber": lambda out, y: nn.HuberLoss(delta=0.5)(out, y),
    "l1": lambda out, y: nn.L1Loss()(out, y),
    "kl": lambda out, y: F.kl_div(out.log_softmax(-1), y.softmax(-1), reduction="batchmean"),
    "bce_pos_weight": lambda out, y: F.binary_cross_entropy_with_logits(out, y.sigmoid(), pos_weight=np.full(2, 3.0)),
    "cosine": lambda out, y: (1 - F.cosine_similarity(out, y)).mean() + F.normalize(out).sum(),
}


ACTIVATIONS = {  # ops of their own (their gradient at the kinks is PyTorch's): replayed too
    "mish": nn.Mish, "hardtanh": lambda: nn.Hardtanh(-0.5, 0.5), "relu6": nn.ReLU6, "prelu": lambda: nn.PReLU(8),
}


@pytest.mark.parametrize("name, activation", [(name, "mish") for name in COMPILED_LOSSES]
                         + [("l1", name) for name in ACTIVATIONS if name != "mish"])
def test_a_compiled_step_replays_the_new_losses_exactly(name, activation):
    """The same losses and weights, bit for bit, eagerly and replayed, and no 'runs eagerly' warning
    (nn.clip_grad_norm_ replayed as a call, as optim's)."""
    results = []
    for compiled in (False, True):
        minigrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), ACTIVATIONS[activation](), nn.Linear(8, 2))
        opt = minigrad.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = COMPILED_LOSSES[name](model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
            return loss

        run = minigrad.compile(step) if compiled else step
        g = rng(15)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a refused recording would warn
            losses = [run(minigrad.tensor(g.standard_normal((6, 3)).astype(np.float32)),
                          minigrad.tensor(g.standard_normal((6, 2)).astype(np.float32)))
                      .item() for _ in range(5)]
        results.append((losses, [p.numpy().copy() for p in model.parameters()]))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)
