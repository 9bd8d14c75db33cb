"""minigrad.optim.lr_scheduler: each schedule against its formula, written out again here, and against
PyTorch's own scheduler (when torch is installed) driven the same way: optimizer.step(), then
scheduler.step(). Two parameter groups with different rates throughout."""
import math
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import optim
from minigrad.optim import lr_scheduler
from minigrad.optim.lr_scheduler import (ConstantLR, CosineAnnealingLR, ExponentialLR, LinearLR, MultiStepLR,
                                         OneCycleLR, ReduceLROnPlateau, SequentialLR, StepLR)

STEPS = 30
LRS = (0.1, 0.025)  # one per parameter group
MAX_LRS = (0.5, 0.2)  # OneCycleLR's max_lr, one per group
RTOL = 1e-12  # PyTorch computes several schedules step by step, minigrad in closed form


def make_optimizer(lib, cls="SGD", lrs=LRS, **options):
    """An optimizer of `lib` (minigrad or torch), one parameter group per rate in `lrs`."""
    groups = [{"params": [lib.zeros(3, requires_grad=True)], "lr": lr} for lr in lrs]
    return getattr(lib.optim, cls)(groups, lr=lrs[0], **options)


def lrs_of(opt):
    return [group["lr"] for group in opt.param_groups]


def drive(opt, scheduler, steps=STEPS):
    """The rates of every group at step 0 (construction), 1, ..., `steps`: a (steps + 1, groups) array."""
    rates, start = [lrs_of(opt)], scheduler.last_epoch
    for _ in range(steps):
        opt.step()
        scheduler.step()
        assert scheduler.get_last_lr() == lrs_of(opt)
        rates.append(lrs_of(opt))
    assert scheduler.last_epoch == start + steps
    return np.array(rates, dtype=np.float64)


# ---------------------------------------------------------------------------- the formulas, again
def cosine(t, base, eta_min, t_max):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2


def one_cycle(t, max_lr, total, pct=0.3, div=25.0, final_div=1e4, strategy="cos", three_phase=False,
              values=None):
    """The 1cycle curve from its definition: given values at the knots, annealed in between."""
    low = max_lr / div
    a = pct * total - 1
    knots = [0, a, 2 * a, total - 1] if three_phase else [0, a, total - 1]
    if values is None:
        values = [low, max_lr, low, low / final_div] if three_phase else [low, max_lr, low / final_div]
    k = next((i for i in range(len(knots) - 2) if t <= knots[i + 1]), len(knots) - 2)
    p = (t - knots[k]) / (knots[k + 1] - knots[k])
    start, end = values[k], values[k + 1]
    if strategy == "cos":
        return end + (start - end) * (1 + math.cos(math.pi * p)) / 2
    return start + (end - start) * p


def cyclic(t, base, top, up, down, mode="triangular", gamma=1.0):
    """CyclicLR's triangle, by the position in the cycle: up for `up` steps, down for `down`."""
    cycle, position = divmod(t, up + down)
    height = position / up if position <= up else (up + down - position) / down
    factor = {"triangular": 1.0, "triangular2": 0.5 ** cycle, "exp_range": gamma ** t}[mode]
    return base + (top - base) * height * factor


def warm_restarts(t, base, eta_min, t_0, t_mult):
    """SGDR: find the cycle step t falls in (they last t_0, t_0 t_mult, ...), then the cosine of it."""
    start, length = 0, t_0
    while t >= start + length:
        start, length = start + length, length * t_mult
    return cosine(t - start, base, eta_min, length)


CYCLIC_BASES, CYCLIC_TOPS = (0.01, 0.002), (0.1, 0.05)


def sequence(t, base):
    """ConstantLR(factor 0.5, 3 steps) until step 6, ExponentialLR(0.8) until 15, then StepLR(3, 0.5)."""
    if t < 6:
        return base * 0.5 if t < 3 else base
    if t < 15:
        return base * 0.8 ** (t - 6)
    return base * 0.5 ** ((t - 15) // 3)


# name: (make(lib, optimizer) -> scheduler, with lib minigrad or torch;  lr(t, group index))
CASES = {
    "StepLR": (lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=4, gamma=0.5),
               lambda t, i: LRS[i] * 0.5 ** (t // 4)),
    "StepLR-default-gamma": (lambda lib, o: lib.optim.lr_scheduler.StepLR(o, 7),
                             lambda t, i: LRS[i] * 0.1 ** (t // 7)),
    "MultiStepLR": (lambda lib, o: lib.optim.lr_scheduler.MultiStepLR(o, milestones=[12, 3, 12, 25], gamma=0.3),
                    lambda t, i: LRS[i] * 0.3 ** sum(m <= t for m in (3, 12, 12, 25))),
    "ExponentialLR": (lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
                      lambda t, i: LRS[i] * 0.9 ** t),
    "CosineAnnealingLR": (lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.002),
                          lambda t, i: cosine(t, LRS[i], 0.002, 10)),  # down, back up, down again
    "CosineAnnealingLR-eta_min-0": (lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=13),
                                    lambda t, i: cosine(t, LRS[i], 0.0, 13)),
    "LinearLR": (lambda lib, o: lib.optim.lr_scheduler.LinearLR(o),
                 lambda t, i: LRS[i] * (1 / 3 + (1 - 1 / 3) * min(t, 5) / 5)),
    "LinearLR-decay": (lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.2,
                                                                      total_iters=20),
                       lambda t, i: LRS[i] * (1.0 - 0.8 * min(t, 20) / 20)),
    "ConstantLR": (lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o),
                   lambda t, i: LRS[i] / 3 if t < 5 else LRS[i]),
    "ConstantLR-half": (lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=12),
                        lambda t, i: LRS[i] * 0.5 if t < 12 else LRS[i]),
    "LambdaLR": (lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, lambda t: 1 / (1 + t)),
                 lambda t, i: LRS[i] / (1 + t)),
    "OneCycleLR": (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=list(MAX_LRS), total_steps=STEPS),
                   lambda t, i: one_cycle(t, MAX_LRS[i], STEPS)),
    "OneCycleLR-linear-three-phase": (
        lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=list(MAX_LRS), epochs=5, steps_per_epoch=6,
                                                         pct_start=0.25, anneal_strategy="linear", div_factor=10.0,
                                                         final_div_factor=100.0, three_phase=True),
        lambda t, i: one_cycle(t, MAX_LRS[i], STEPS, pct=0.25, div=10.0, final_div=100.0, strategy="linear",
                               three_phase=True)),
    "CyclicLR": (lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, list(CYCLIC_BASES), list(CYCLIC_TOPS),
                                                                step_size_up=4, step_size_down=6),
                 lambda t, i: cyclic(t, CYCLIC_BASES[i], CYCLIC_TOPS[i], 4, 6)),
    "CyclicLR-triangular2": (lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                                            mode="triangular2"),
                             lambda t, i: cyclic(t, 0.01, 0.1, 3, 3, "triangular2")),
    "CyclicLR-exp_range": (lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=5,
                                                                          step_size_down=2, mode="exp_range",
                                                                          gamma=0.95),
                           lambda t, i: cyclic(t, 0.01, 0.1, 5, 2, "exp_range", 0.95)),
    "CosineAnnealingWarmRestarts": (
        lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=7, eta_min=0.001),
        lambda t, i: warm_restarts(t, LRS[i], 0.001, 7, 1)),
    "CosineAnnealingWarmRestarts-T_mult-2": (
        lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2),
        lambda t, i: warm_restarts(t, LRS[i], 0.0, 4, 2)),
    "PolynomialLR": (lambda lib, o: lib.optim.lr_scheduler.PolynomialLR(o, total_iters=12, power=2.0),
                     lambda t, i: LRS[i] * (1 - min(t, 12) / 12) ** 2),
    "MultiplicativeLR": (lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, lambda t: 0.9 if t % 3 else 1.1),
                         lambda t, i: LRS[i] * math.prod(0.9 if k % 3 else 1.1 for k in range(1, t + 1))),
    "SequentialLR-warmup-restarts": (
        lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
            o, [lib.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=3),
                lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=5)], milestones=[3]),
        lambda t, i: LRS[i] * (0.5 + 0.5 * t / 3) if t < 3 else warm_restarts(t - 3, LRS[i], 0.0, 5, 1)),
    "SequentialLR-warmup-cosine": (
        lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
            o, [lib.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5),
                lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=25)], milestones=[5]),
        lambda t, i: LRS[i] * (0.1 + 0.9 * t / 5) if t < 5 else cosine(t - 5, LRS[i], 0.0, 25)),
    "SequentialLR-three": (
        lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
            o, [lib.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3),
                lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.8),
                lib.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)], milestones=[6, 15]),
        lambda t, i: sequence(t, LRS[i])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rates_follow_the_formula(name):
    make, formula = CASES[name]
    opt = make_optimizer(mg)
    rates = drive(opt, make(mg, opt))
    expected = [[formula(t, i) for i in range(len(LRS))] for t in range(STEPS + 1)]
    np.testing.assert_allclose(rates, expected, rtol=RTOL, atol=0)
    assert len(set(rates[:, 0])) > 1  # (the schedule did move)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rates_match_pytorch(name):
    torch = pytest.importorskip("torch")
    make, _ = CASES[name]
    mine, theirs = make_optimizer(mg), make_optimizer(torch)
    scheduler, reference = make(mg, mine), make(torch, theirs)
    np.testing.assert_allclose(drive(mine, scheduler), drive(theirs, reference), rtol=RTOL, atol=0)
    if hasattr(reference, "base_lrs"):  # (PyTorch's SequentialLR has none)
        assert scheduler.base_lrs == pytest.approx(reference.base_lrs, rel=RTOL)


# ---------------------------------------------------------------------------- OneCycleLR's momentum
MOMENTUM_CASES = {
    "sgd": (dict(cls="SGD", momentum=0.9), dict(), "momentum"),
    "sgd-without-momentum": (dict(cls="SGD"), dict(base_momentum=[0.8, 0.85], max_momentum=[0.9, 0.95]),
                             "momentum"),
    "adam-three-phase": (dict(cls="Adam", betas=(0.9, 0.99)), dict(three_phase=True, anneal_strategy="linear"),
                         "betas"),
}


def momenta_of(opt, key):
    return [group[key][0] if key == "betas" else group[key] for group in opt.param_groups]


def drive_momenta(opt, scheduler, key):
    momenta = [momenta_of(opt, key)]
    for _ in range(STEPS):
        opt.step()
        scheduler.step()
        momenta.append(momenta_of(opt, key))
    return np.array(momenta)


@pytest.mark.parametrize("name", sorted(MOMENTUM_CASES))
def test_one_cycle_cycles_the_momentum(name):
    optimizer_options, options, key = MOMENTUM_CASES[name]
    opt = make_optimizer(mg, **optimizer_options)
    scheduler = OneCycleLR(opt, max_lr=list(MAX_LRS), total_steps=STEPS, **options)
    momenta = drive_momenta(opt, scheduler, key)
    lows, highs = [options.get("base_momentum", [0.85] * 2), options.get("max_momentum", [0.95] * 2)]
    three = options.get("three_phase", False)
    for i in range(2):
        values = [highs[i], lows[i], highs[i], highs[i]] if three else [highs[i], lows[i], highs[i]]
        expected = [one_cycle(t, 1.0, STEPS, strategy=options.get("anneal_strategy", "cos"), three_phase=three,
                              values=values) for t in range(STEPS + 1)]
        np.testing.assert_allclose(momenta[:, i], expected, rtol=RTOL, atol=0)
    if key == "betas":
        assert all(group["betas"][1] == 0.99 for group in opt.param_groups)  # beta2 untouched


@pytest.mark.parametrize("name", sorted(MOMENTUM_CASES))
def test_one_cycle_momentum_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    optimizer_options, options, key = MOMENTUM_CASES[name]
    mine, theirs = make_optimizer(mg, **optimizer_options), make_optimizer(torch, **optimizer_options)
    scheduler = OneCycleLR(mine, max_lr=list(MAX_LRS), total_steps=STEPS, **options)
    reference = torch.optim.lr_scheduler.OneCycleLR(theirs, max_lr=list(MAX_LRS), total_steps=STEPS, **options)
    np.testing.assert_allclose(drive_momenta(mine, scheduler, key), drive_momenta(theirs, reference, key),
                               rtol=RTOL, atol=0)
    np.testing.assert_allclose(lrs_of(mine), lrs_of(theirs), rtol=RTOL, atol=0)


@pytest.mark.parametrize("cls, key", [("SGD", "momentum"), ("Adam", "betas")])
def test_cyclic_lr_cycles_the_momentum_the_other_way(cls, key):
    opt = make_optimizer(mg, cls)
    scheduler = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=4, step_size_down=6, base_momentum=[0.8, 0.7],
                                      max_momentum=[0.9, 0.95])
    momenta = drive_momenta(opt, scheduler, key)
    for i, (low, high) in enumerate([(0.8, 0.9), (0.7, 0.95)]):
        expected = [high - (high - low) * (cyclic(t, 0.0, 1.0, 4, 6)) for t in range(STEPS + 1)]
        np.testing.assert_allclose(momenta[:, i], expected, rtol=RTOL, atol=1e-15)
    torch = pytest.importorskip("torch")
    theirs = make_optimizer(torch, cls)
    reference = torch.optim.lr_scheduler.CyclicLR(theirs, 0.01, 0.1, step_size_up=4, step_size_down=6,
                                                  base_momentum=[0.8, 0.7], max_momentum=[0.9, 0.95])
    np.testing.assert_allclose(drive_momenta(theirs, reference, key), momenta, rtol=RTOL, atol=1e-15)


def test_cyclic_lr_needs_momentum_or_betas_to_cycle_it():
    opt = mg.optim.Adagrad([mg.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="CyclicLR: cycle_momentum needs an optimizer with momentum or betas"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1)
    scheduler = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, cycle_momentum=False)
    scheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([0.055])


def test_warm_restarts_step_to_a_fraction_of_an_epoch_as_sgdr_does():
    """scheduler.step(epoch + i / batches): the cosine at fractional epochs, and step() goes on from there."""
    epochs = [e + i / 4 for e in range(12) for i in range(4)]
    opt = make_optimizer(mg)
    scheduler = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
    rates = []
    for epoch in epochs:
        scheduler.step(epoch)
        rates.append(lrs_of(opt))
    expected = [[warm_restarts_fraction(e, LRS[i], 0.001, 3, 2) for i in range(2)] for e in epochs]
    np.testing.assert_allclose(rates, expected, rtol=RTOL)
    assert scheduler.last_epoch == 11 and scheduler.T_i == 12 and scheduler.T_cur == pytest.approx(11.75 - 9)
    scheduler.step()  # one on: 12.75
    np.testing.assert_allclose(lrs_of(opt), [warm_restarts_fraction(12.75, lr, 0.001, 3, 2) for lr in LRS],
                               rtol=RTOL)
    torch = pytest.importorskip("torch")
    theirs = make_optimizer(torch)
    reference = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs, T_0=3, T_mult=2, eta_min=0.001)
    theirs_rates = []
    for epoch in epochs:
        reference.step(epoch)
        theirs_rates.append(lrs_of(theirs))
    np.testing.assert_allclose(rates, theirs_rates, rtol=RTOL)


def warm_restarts_fraction(epoch, base, eta_min, t_0, t_mult):
    start, length = 0.0, t_0
    while epoch >= start + length:
        start, length = start + length, length * t_mult
    return cosine(epoch - start, base, eta_min, length)


def test_one_cycle_without_momentum_leaves_it_alone_and_stops_at_total_steps():
    opt = make_optimizer(mg, momentum=0.7)
    scheduler = OneCycleLR(opt, max_lr=0.3, total_steps=10, cycle_momentum=False)
    for _ in range(10):  # step 10 (the rate after the last batch) is allowed, as in PyTorch
        scheduler.step()
    assert [group["momentum"] for group in opt.param_groups] == [0.7, 0.7]
    with pytest.raises(ValueError, match="OneCycleLR: step 11 is past total_steps=10"):
        scheduler.step()


def test_one_cycle_needs_momentum_or_betas_to_cycle():
    class Plain(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

        def step(self):
            pass

    opt = Plain([mg.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="OneCycleLR: cycle_momentum needs an optimizer with momentum or betas"):
        OneCycleLR(opt, max_lr=0.5, total_steps=10)
    assert "initial_lr" not in opt.param_groups[0]  # a refused scheduler leaves the optimizer alone
    OneCycleLR(opt, max_lr=0.5, total_steps=10, cycle_momentum=False)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 / 25, rel=RTOL)


# ---------------------------------------------------------------------------- ReduceLROnPlateau
def test_reduce_lr_on_plateau_worked_example():
    """lr 1, factor 0.5, patience 1, cooldown 1, threshold 0.1 (rel: better means < 0.9·best), min_lr 0.2.
    10 sets best; 9.5, 9.2 are not below 9: the second bad step in a row halves lr (step 3), then
    cooldown: 9.9 (step 4) does not count; 9.9, then 8.9 < 9 is the new best; 8.5, 8.5 are not below
    8.01: halved (step 8); 8 is; 9, 9: halved to max(0.125, 0.2) = 0.2 (step 11); 9 in cooldown;
    9, 9: max(0.1, 0.2) = 0.2 lowers nothing (step 14)."""
    opt = make_optimizer(mg, lrs=(1.0,))
    plateau = ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, threshold=0.1, min_lr=0.2)
    assert plateau.get_last_lr() == [1.0] and plateau.last_epoch == 0
    metrics = [10, 9.5, 9.2, 9.9, 9.9, 8.9, 8.5, 8.5, 8, 9, 9, 9, 9, 9]
    rates = []
    for m in metrics:
        plateau.step(m)
        rates.append(plateau.get_last_lr()[0])
    assert rates == [1, 1, .5, .5, .5, .5, .5, .25, .25, .25, .2, .2, .2, .2]
    assert plateau.best == 8 and plateau.last_epoch == len(metrics) and plateau.num_bad_epochs == 0


def test_reduce_lr_on_plateau_max_mode_abs_threshold_and_tensor_metrics():
    opt = make_optimizer(mg, lrs=(0.1,))
    plateau = ReduceLROnPlateau(opt, mode="max", threshold_mode="abs", threshold=0.05, patience=0, factor=0.1)
    for accuracy in (0.5, 0.6, 0.62):  # 0.62 is not above 0.6 + 0.05: patience 0, so lowered at once
        plateau.step(mg.tensor(accuracy))
    assert plateau.best == float(np.float32(0.6))  # (mg.tensor(0.6) is float32, as torch.tensor(0.6))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01, rel=RTOL)


METRICS = [5.0, 4.0, 4.0, 3.9996, 4.1, 4.0, 3.0, 3.0, 3.0, 2.9999, 3.5, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0,
           1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 0.9, 0.9, 0.9, 0.9, 0.9]
PLATEAU_OPTIONS = [
    {},
    {"patience": 2},
    {"patience": 1, "cooldown": 2, "factor": 0.5},
    {"patience": 0, "factor": 0.3, "min_lr": [0.01, 0.001]},
    {"mode": "max", "patience": 1},
    {"threshold_mode": "abs", "threshold": 0.5, "patience": 1},
    {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 2, "cooldown": 1},
    {"patience": 0, "factor": 0.5, "eps": 0.02},
    {"patience": 0, "factor": 0.5, "eps": 0.025},  # 0.05 → 0.025 lowers by exactly eps: kept
    {"patience": 1, "threshold": 0.3},
]


@pytest.mark.parametrize("options", PLATEAU_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_reduce_lr_on_plateau_matches_pytorch(options):
    torch = pytest.importorskip("torch")
    mine, theirs = make_optimizer(mg), make_optimizer(torch)
    plateau = ReduceLROnPlateau(mine, **options)
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **options)
    sign = -1.0 if options.get("mode") == "max" else 1.0
    changes = 0
    for m in METRICS:
        before = lrs_of(mine)
        mine.step()
        theirs.step()
        plateau.step(sign * m)
        reference.step(sign * m)
        np.testing.assert_allclose(lrs_of(mine), lrs_of(theirs), rtol=RTOL, atol=0)
        assert plateau.get_last_lr() == lrs_of(mine)
        assert (plateau.best, plateau.num_bad_epochs, plateau.cooldown_counter, plateau.last_epoch) == (
            reference.best, reference.num_bad_epochs, reference.cooldown_counter, reference.last_epoch)
        changes += lrs_of(mine) != before
    assert changes >= (0 if options == {} else 1)


def test_reduce_lr_on_plateau_changes_nothing_when_made():
    opt = make_optimizer(mg)
    ReduceLROnPlateau(opt)
    assert lrs_of(opt) == list(LRS) and "initial_lr" not in opt.param_groups[0]


# ---------------------------------------------------------------------------- minigrad.compile
def train(make_scheduler, compiled, steps=10, metric=False):
    """A small model trained with a scheduler stepped inside the (compiled or eager) step: the rates,
    momenta and losses after each call, the final weights, and the step."""
    w = mg.Tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
    b = mg.Tensor(np.array([0.3]), requires_grad=True)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1, momentum=0.9)
    scheduler = make_scheduler(opt)

    def train_step(x):
        loss = ((w * x).sum() + b.sum()) ** 2
        loss.backward()
        opt.step()
        opt.zero_grad()
        scheduler.step(loss) if metric else scheduler.step()
        return loss

    step = mg.compile(train_step) if compiled else train_step
    x = mg.tensor(np.array([0.5, 1.0, -1.0]))
    history = []
    for _ in range(steps):
        loss = step(x).item()
        history.append((loss, scheduler.get_last_lr(), [g["momentum"] for g in opt.param_groups]))
    return history, np.concatenate([w.numpy(), b.numpy()]), step


class CountingStepLR(StepLR):
    """A subclass with its own step, as course code writes them: still replayed as one call."""

    def step(self):
        self.calls = getattr(self, "calls", 0) + 1
        super().step()


REPLAYED = {
    "StepLR": lambda opt: StepLR(opt, step_size=3, gamma=0.5),
    "OneCycleLR": lambda opt: OneCycleLR(opt, max_lr=[0.2, 0.05], total_steps=10),
    "SequentialLR": lambda opt: SequentialLR(opt, [LinearLR(opt, 0.2, total_iters=3),
                                                   CosineAnnealingLR(opt, T_max=7)], milestones=[3]),
    "subclass-with-own-step": lambda opt: CountingStepLR(opt, step_size=2),
}


@pytest.mark.parametrize("name", sorted(REPLAYED))
def test_a_scheduler_inside_a_compiled_step_advances_at_every_replay(name):
    eager, eager_weights, _ = train(REPLAYED[name], compiled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compiled step that fell back to eager would warn
        replayed, replayed_weights, step = train(REPLAYED[name], compiled=True)
    assert step.stats == {"eager": 1, "recorded": 1, "replayed": 8}
    assert replayed == eager  # the rates, momenta and losses of each call, the same bits
    np.testing.assert_array_equal(replayed_weights, eager_weights)
    assert len({tuple(rates) for _, rates, _ in eager}) > 2


def test_a_subclass_step_is_called_at_each_replay():
    schedulers = []
    _, _, step = train(lambda opt: schedulers.append(CountingStepLR(opt, 2)) or schedulers[-1], compiled=True)
    assert step.stats["replayed"] == 8 and schedulers[0].calls == 1 + 10  # construction, then every call


def test_reduce_lr_on_plateau_inside_a_compiled_step_stays_eager_and_says_why():
    make = lambda opt: ReduceLROnPlateau(opt, patience=1, factor=0.5, threshold=0.5)  # noqa: E731
    eager, eager_weights, _ = train(make, compiled=False, metric=True)
    with pytest.warns(RuntimeWarning, match=r"runs eagerly: ReduceLROnPlateau.step\(metrics\) decides from the "
                                            r"metric's value"):
        compiled, compiled_weights, step = train(make, compiled=True, metric=True)
    assert step.stats["replayed"] == 0 and not step.tapes
    assert compiled == eager
    np.testing.assert_array_equal(compiled_weights, eager_weights)
    assert eager[-1][1] != eager[0][1]  # (the rate was lowered along the way)


# ---------------------------------------------------------------------------- state dicts
def plain_data_only(obj):
    if isinstance(obj, dict):
        return all(isinstance(k, str) and plain_data_only(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(plain_data_only(v) for v in obj)
    return isinstance(obj, (int, float, str, bool)) or obj is None


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_round_trip_continues_identically(name):
    make, _ = CASES[name]
    opt = make_optimizer(mg, momentum=0.9)
    scheduler = make(mg, opt)
    drive(opt, scheduler, steps=7)
    state = scheduler.state_dict()
    assert plain_data_only(state)

    fresh_opt = make_optimizer(mg, momentum=0.9)
    fresh = make(mg, fresh_opt)
    assert fresh.last_epoch == 0
    fresh.load_state_dict(state)
    assert lrs_of(fresh_opt) == lrs_of(opt) and fresh.last_epoch == 7
    assert [g["momentum"] for g in fresh_opt.param_groups] == [g["momentum"] for g in opt.param_groups]
    np.testing.assert_array_equal(drive(fresh_opt, fresh, steps=15)[1:], drive(opt, scheduler, steps=15)[1:])


def test_reduce_lr_on_plateau_state_dict_round_trip():
    def run(plateau, metrics):
        rates = []
        for m in metrics:
            plateau.step(m)
            rates.append(plateau.get_last_lr())
        return rates

    opt = make_optimizer(mg)
    plateau = ReduceLROnPlateau(opt, patience=1, cooldown=3, factor=0.5)
    run(plateau, METRICS[:5])  # 4.0, 4.0, 3.9996, 4.1: lowered at step 4, now in cooldown
    assert plateau.cooldown_counter > 0 and plateau.best == 4.0
    state = plateau.state_dict()
    assert plain_data_only(state)
    fresh_opt = make_optimizer(mg)
    fresh = ReduceLROnPlateau(fresh_opt, patience=1, cooldown=3, factor=0.5)
    fresh.load_state_dict(state)
    assert lrs_of(fresh_opt) == lrs_of(opt)
    assert run(fresh, METRICS[5:]) == run(plateau, METRICS[5:])
    with pytest.raises(ValueError, match="ReduceLROnPlateau.load_state_dict: the state dict has 2 learning rates"):
        ReduceLROnPlateau(make_optimizer(mg, lrs=(0.1,))).load_state_dict(state)


def test_sequential_lr_state_dict_holds_its_schedulers():
    make, _ = CASES["SequentialLR-three"]
    opt = make_optimizer(mg)
    state = make(mg, opt).state_dict()
    assert len(state["schedulers"]) == 3 and all("last_step" in s for s in state["schedulers"])
    other = SequentialLR(opt, [StepLR(opt, 2)], [])
    with pytest.raises(ValueError, match="SequentialLR.load_state_dict: the state dict has 3 schedulers, this one "
                                         "has 1"):
        other.load_state_dict(state)


# ---------------------------------------------------------------------------- the API
def test_the_pytorch_import_forms_and_the_old_names():
    import minigrad as torch
    from minigrad.optim.lr_scheduler import CosineAnnealingLR as Imported

    opt = torch.optim.SGD([torch.zeros(3, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    assert Imported is CosineAnnealingLR and type(sched) is StepLR
    assert sched.get_last_lr() == [0.1]
    for name in ("LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR", "cosine_with_warmup", "noam"):
        assert getattr(optim, name) is getattr(lr_scheduler, name)
    assert all(hasattr(lr_scheduler, name) for name in lr_scheduler.__all__)
    assert lr_scheduler._LRScheduler is lr_scheduler.LRScheduler


def test_get_last_lr_is_a_copy_and_last_epoch_is_last_step():
    opt = make_optimizer(mg)
    sched = ExponentialLR(opt, gamma=0.5)
    sched.step()
    rates = sched.get_last_lr()
    assert rates == sched.last_lr == [0.05, 0.0125] and sched.last_epoch == sched.last_step == 1
    rates[0] = 123.0
    assert sched.get_last_lr() == [0.05, 0.0125]
    sched.last_epoch = 4
    assert sched.last_step == 4


def test_a_second_scheduler_starts_from_initial_lr():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (mg, torch):
        opt = make_optimizer(lib)
        lib.optim.lr_scheduler.ConstantLR(opt, factor=0.5)  # sets lr = 0.5·base_lr
        second = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        results.append((list(second.base_lrs), [g["initial_lr"] for g in opt.param_groups]))
    assert results[0] == results[1] == (list(LRS), list(LRS))


def test_a_course_style_subclass_with_last_epoch():
    class Halving(lr_scheduler._LRScheduler):
        def __init__(self, optimizer, last_epoch=-1):
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    opt = make_optimizer(mg)
    rates = drive(opt, Halving(opt), steps=5)
    np.testing.assert_allclose(rates, [[lr * 0.5 ** t for lr in LRS] for t in range(6)], rtol=RTOL, atol=0)
    with pytest.raises(ValueError, match="Halving: last_epoch must be -1"):
        Halving(opt, last_epoch=3)


BAD_ARGUMENTS = [
    (lambda o: StepLR(o, step_size=0), r"StepLR: step_size must be a number > 0, got 0"),
    (lambda o: StepLR(o, step_size="2"), r"StepLR: step_size must be a number > 0, got '2'"),
    (lambda o: StepLR(o, 3, gamma=-0.1), r"StepLR: gamma must be a number >= 0, got -0.1"),
    (lambda o: MultiStepLR(o, milestones=[3, -1]), r"MultiStepLR: milestones must be integers >= 0"),
    (lambda o: MultiStepLR(o, milestones=[3], gamma=None), r"MultiStepLR: gamma must be a number"),
    (lambda o: ExponentialLR(o, gamma="0.9"), r"ExponentialLR: gamma must be a number >= 0, got '0.9'"),
    (lambda o: CosineAnnealingLR(o, T_max=0), r"CosineAnnealingLR: T_max must be a number > 0, got 0"),
    (lambda o: CosineAnnealingLR(o, 10, eta_min=float("nan")), r"CosineAnnealingLR: eta_min must be a number"),
    (lambda o: LinearLR(o, start_factor=0), r"LinearLR: start_factor must be a number in \(0, 1\], got 0"),
    (lambda o: LinearLR(o, end_factor=1.5), r"LinearLR: end_factor must be a number in \[0, 1\], got 1.5"),
    (lambda o: LinearLR(o, total_iters=0), r"LinearLR: total_iters must be an integer >= 1, got 0"),
    (lambda o: ConstantLR(o, factor=2), r"ConstantLR: factor must be a number in \[0, 1\], got 2"),
    (lambda o: ConstantLR(o, total_iters=-1), r"ConstantLR: total_iters must be an integer >= 1, got -1"),
    (lambda o: OneCycleLR(o, max_lr=0.1), r"OneCycleLR: give total_steps, or epochs and steps_per_epoch"),
    (lambda o: OneCycleLR(o, 0.1, total_steps=0), r"OneCycleLR: total_steps must be an integer >= 1, got 0"),
    (lambda o: OneCycleLR(o, 0.1, epochs=2, steps_per_epoch=0), r"OneCycleLR: steps_per_epoch must be an integer"),
    (lambda o: OneCycleLR(o, 0.1, 10, pct_start=1.5), r"OneCycleLR: pct_start must be a number in \[0, 1\]"),
    (lambda o: OneCycleLR(o, 0.1, 10, anneal_strategy="cosine"),
     r"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got 'cosine'"),
    (lambda o: OneCycleLR(o, [0.1, 0.2, 0.3], 10), r"OneCycleLR: got 3 max_lr values for 2 parameter groups"),
    (lambda o: OneCycleLR(o, -0.1, 10), r"OneCycleLR: max_lr must be numbers >= 0"),
    (lambda o: OneCycleLR(o, 0.1, 10, div_factor=0), r"OneCycleLR: div_factor must be a number > 0, got 0"),
    (lambda o: OneCycleLR(o, 0.1, 10, base_momentum=[0.8]), r"OneCycleLR: got 1 base_momentum values for 2"),
    (lambda o: OneCycleLR(o, 0.1, 10, pct_start=0.1), r"OneCycleLR: step 0 falls in a phase of zero length"),
    (lambda o: SequentialLR(o, [], []), r"SequentialLR: schedulers must hold at least one scheduler"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), StepLR(o, 3)], [4, 5]),
     r"SequentialLR: 2 schedulers need 1 milestones, got 2"),
    (lambda o: SequentialLR(o, [StepLR(o, 2), StepLR(o, 3), StepLR(o, 4)], [5, 5]),
     r"SequentialLR: milestones must be increasing integers >= 0, got \[5, 5\]"),
    (lambda o: SequentialLR(o, [ReduceLROnPlateau(o)], []),
     r"SequentialLR: schedulers\[0\] must be a scheduler whose step\(\) takes no metric, got ReduceLROnPlateau"),
    (lambda o: SequentialLR(o, [StepLR(make_optimizer(mg), 2)], []),
     r"SequentialLR: schedulers\[0\] \(StepLR\) drives another optimizer"),
    (lambda o: ReduceLROnPlateau(o, mode="minimum"), r"ReduceLROnPlateau: mode must be 'min' or 'max', got 'minimum'"),
    (lambda o: ReduceLROnPlateau(o, threshold_mode="relative"),
     r"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got 'relative'"),
    (lambda o: ReduceLROnPlateau(o, factor=1.0), r"ReduceLROnPlateau: factor must be a number in \[0, 1\), got 1.0"),
    (lambda o: ReduceLROnPlateau(o, patience=-1), r"ReduceLROnPlateau: patience must be an integer >= 0, got -1"),
    (lambda o: ReduceLROnPlateau(o, cooldown=1.5), r"ReduceLROnPlateau: cooldown must be an integer >= 0, got 1.5"),
    (lambda o: ReduceLROnPlateau(o, eps=-1), r"ReduceLROnPlateau: eps must be a number >= 0, got -1"),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.1]), r"ReduceLROnPlateau: got 1 min_lr values for 2 parameter groups"),
    (lambda o: ReduceLROnPlateau(o, min_lr=-1), r"ReduceLROnPlateau: min_lr must be numbers >= 0"),
]


@pytest.mark.parametrize("make, message", BAD_ARGUMENTS, ids=[m[:40] for _, m in BAD_ARGUMENTS])
def test_bad_arguments_name_the_scheduler_and_the_argument(make, message):
    opt = make_optimizer(mg)
    with pytest.raises(ValueError, match=message):
        make(opt)


def test_a_scheduler_needs_an_optimizer():
    for make in (lambda p: StepLR(p, 2), lambda p: OneCycleLR(p, 0.1, 10), lambda p: ReduceLROnPlateau(p)):
        with pytest.raises(TypeError, match=r"(StepLR|OneCycleLR|ReduceLROnPlateau): expected an optimizer "
                                            r"\(with param_groups\), got list"):
            make([mg.zeros(3, requires_grad=True)])


def test_float_step_sizes_as_pytorchs_tutorial_passes_them():
    """PyTorch's own tutorial makes StepLR(optimizer, 1.0, gamma=0.95): a float step_size (and T_max)
    works as in PyTorch, lr = base_lr * gamma ** (t // step_size)."""
    opt = make_optimizer(mg)
    rates = drive(opt, StepLR(opt, 1.0, gamma=0.95), steps=4)
    np.testing.assert_allclose(rates, [[lr * 0.95 ** t for lr in LRS] for t in range(5)], rtol=RTOL, atol=0)
    opt = make_optimizer(mg)
    rates = drive(opt, StepLR(opt, 2.5, gamma=0.5), steps=6)
    np.testing.assert_allclose(rates, [[lr * 0.5 ** (t // 2.5) for lr in LRS] for t in range(7)], rtol=RTOL, atol=0)
    torch = pytest.importorskip("torch")
    ours, theirs = make_optimizer(mg), make_optimizer(torch)
    np.testing.assert_allclose(drive(ours, CosineAnnealingLR(ours, T_max=7.5), steps=10),
                               drive(theirs, torch.optim.lr_scheduler.CosineAnnealingLR(theirs, T_max=7.5), steps=10),
                               rtol=RTOL, atol=0)
