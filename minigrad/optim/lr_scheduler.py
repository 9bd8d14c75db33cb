"""Learning-rate schedules, as PyTorch's `torch.optim.lr_scheduler`.

    optimizer = minigrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = minigrad.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)                         # optimizer.step() for each batch
        scheduler.step()                   # then once per epoch (a schedule counts its step() calls)
        print(scheduler.get_last_lr())

A scheduler writes `group["lr"]` in each parameter group of its optimizer. In the formulas, t is the
number of `step()` calls so far (`last_step`, PyTorch's `last_epoch`): making the scheduler already
sets the rate of t = 0, as in PyTorch. base_lr is a group's lr when the first scheduler was made on
the optimizer, kept in `group["initial_lr"]` as PyTorch does, so a second scheduler made on the same
optimizer (for SequentialLR) starts from it too, not from the rate the first one set.

Closed forms. PyTorch computes several schedules step by step from the group's current lr (StepLR
multiplies it by γ every step_size steps, CosineAnnealingLR by a ratio of cosines); here each rate
is a formula of t and base_lr. Driven alone, both give the same numbers up to float rounding (the
tests check 1e-12 against PyTorch). They differ only if something else changes `group["lr"]`
between steps: PyTorch builds on the changed value, minigrad overwrites it. So two schedulers
stepped together do not multiply (PyTorch's ChainedScheduler is left out): use SequentialLR for one
after the other, or one LambdaLR with the product of the factors. (CyclicLR and
CosineAnnealingWarmRestarts are closed forms in PyTorch too.) ReduceLROnPlateau, which reacts to
a metric, is the exception: it multiplies the current lr.

minigrad.compile replays a scheduler's `step()` as one call (`replayed_as_a_call`), so it advances
at each replay as in eager mode. Not ReduceLROnPlateau's `step(metrics)`: it decides from the
metric's value, which a replay would not read again, so the compiled step stays eager (see there).
"""
import bisect
import math
import numbers

from ..compile import replayed_as_a_call
from ..grad_mode import _modes

__all__ = [
    "cosine_with_warmup", "noam", "LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR",
    "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "ConstantLR",
    "OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "PolynomialLR", "MultiplicativeLR", "SequentialLR",
    "ReduceLROnPlateau",
]


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _number(x, low=-math.inf, high=math.inf):
    """Is `x` a real number (not a bool, not NaN) in [low, high]?"""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and low <= x <= high


def _integer(x, low=0):
    """Is `x` an integer (not a bool) >= low?"""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and x >= low


def _per_group(scheduler, name, value, optimizer):
    """`value` for each parameter group: one value for all, or a list (or tuple) with one per group."""
    n = len(optimizer.param_groups)
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    _check(len(values) == n, f"{scheduler}: got {len(values)} {name} values for {n} parameter groups")
    return values


def _check_optimizer(scheduler, optimizer):
    if not hasattr(optimizer, "param_groups"):
        raise TypeError(f"{scheduler}: expected an optimizer (with param_groups), got {type(optimizer).__name__}")


# ============================================================================ schedules as functions
def cosine_with_warmup(step, max_lr, min_lr, warmup_steps, decay_steps):
    """Linear warmup, then a cosine decay (the schedule of GPT-style training, e.g. nanoGPT).

        step < warmup_steps:                 lr = max_lr · step / warmup_steps
        warmup_steps ≤ step ≤ decay_steps:   r = (step − warmup_steps) / (decay_steps − warmup_steps)
                                             lr = min_lr + ½·(1 + cos(π·r))·(max_lr − min_lr)
        step > decay_steps:                  lr = min_lr

    So lr is 0 at step 0, max_lr at step `warmup_steps`, (max_lr + min_lr)/2 half-way through the
    decay, and min_lr from `decay_steps` on; `decay_steps` counts from step 0, not from the end of
    warmup. (nanoGPT warms up with max_lr·(step+1)/(warmup_steps+1), which avoids lr = 0 at step 0
    but never quite reaches max_lr; this version is exactly linear from 0 to max_lr.)
    """
    if step < 0 or warmup_steps < 0 or decay_steps < warmup_steps:
        raise ValueError(f"cosine_with_warmup: need step >= 0 and 0 <= warmup_steps <= decay_steps, got "
                         f"step={step}, warmup_steps={warmup_steps}, decay_steps={decay_steps}")
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= decay_steps:
        return min_lr
    ratio = (step - warmup_steps) / (decay_steps - warmup_steps)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def noam(step, d_model, warmup_steps, factor=1.0):
    """The schedule of "Attention Is All You Need": linear growth for `warmup_steps`, then ∝ 1/√step.

        lr = factor · d_model^−½ · min(step^−½, step · warmup_steps^−1.5)

    Steps count from 1; step 0 is treated as step 1 (step^−½ would divide by zero), so a scheduler
    that starts at step 0 uses the step-1 value twice. The peak, at step = warmup_steps, is
    factor · d_model^−½ · warmup_steps^−½.
    """
    if warmup_steps <= 0 or d_model <= 0:
        raise ValueError(f"noam: d_model and warmup_steps must be > 0, got {d_model} and {warmup_steps}")
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


# ============================================================================ the base class
class LRScheduler:
    """Base class: sets `lr` of every parameter group of `optimizer` from the step count.

    Call `step()` once per optimizer step (or once per epoch), after `optimizer.step()`. Creating
    the scheduler already applies the learning rate of step 0 (as in PyTorch). `base_lrs` holds each
    group's `initial_lr` (its lr when the first scheduler was made on the optimizer); `last_lr`, or
    `get_last_lr()`, the rates set most recently; `last_step`, or PyTorch's name `last_epoch`, the
    step they belong to. Subclasses implement `get_lr()`: the list of rates for `self.last_step`.

    `last_epoch` is there for PyTorch's `super().__init__(optimizer, last_epoch)` and must be -1
    (a new schedule): to resume one, make it again and call `load_state_dict`.
    """

    _replayed = True  # minigrad.compile replays step() as one call (ReduceLROnPlateau: False)

    def __init__(self, optimizer, last_epoch=-1):
        name = type(self).__name__
        _check_optimizer(name, optimizer)
        _check(last_epoch == -1, f"{name}: last_epoch must be -1 (a new schedule), got {last_epoch!r}; "
                                 "to resume, make the scheduler and call load_state_dict")
        self.optimizer = optimizer
        self.base_lrs = [group.setdefault("initial_lr", group["lr"]) for group in optimizer.param_groups]
        self.last_step = -1
        self.step()

    def __init_subclass__(cls, **kwargs):
        """A subclass's own `step` changes the optimizer's groups, outside the ops: minigrad.compile
        replays it as one call, as the base class's (compile.py)."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and cls._replayed:
            cls.step = replayed_as_a_call(cls.__dict__["step"])

    def get_lr(self):
        raise NotImplementedError

    @replayed_as_a_call
    def step(self):
        """Advance one step and write the new rates into the optimizer's groups."""
        self.last_step += 1
        self._set_lrs(self.get_lr())

    def _set_lrs(self, lrs):
        self.last_lr = [float(lr) for lr in lrs]
        for group, lr in zip(self.optimizer.param_groups, self.last_lr):
            group["lr"] = lr

    def get_last_lr(self):
        """The rates set most recently, one per group (a copy of `last_lr`; PyTorch's name)."""
        return list(self.last_lr)

    @property
    def last_epoch(self):
        """PyTorch's name for `last_step` (PyTorch calls every step() an epoch, whatever it stands for)."""
        return self.last_step

    @last_epoch.setter
    def last_epoch(self, value):
        self.last_step = value

    def state_dict(self):
        """{"last_step": int, "base_lrs": [...], "last_lr": [...]}: where the schedule stands. Its
        settings (step_size, gamma, a LambdaLR's function, ...) are not saved: make it the same way."""
        return {"last_step": self.last_step, "base_lrs": list(self.base_lrs), "last_lr": list(self.last_lr)}

    def load_state_dict(self, state_dict):
        """Restore the step count and rates, and write the rates back into the optimizer's groups."""
        if len(state_dict["base_lrs"]) != len(self.optimizer.param_groups):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state dict has "
                             f"{len(state_dict['base_lrs'])} learning rates, the optimizer has "
                             f"{len(self.optimizer.param_groups)} parameter groups")
        self.last_step = int(state_dict["last_step"])
        self.base_lrs = [float(lr) for lr in state_dict["base_lrs"]]
        self._set_lrs(state_dict["last_lr"])


# ============================================================================ minigrad's own schedules
class LambdaLR(LRScheduler):
    """lr = base_lr · lr_lambda(t), for each group (`lr_lambda` may be a list, one per group)."""

    def __init__(self, optimizer, lr_lambda):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: got {len(self.lr_lambdas)} functions for {n} parameter groups")
        super().__init__(optimizer)

    def get_lr(self):
        return [base * f(self.last_step) for base, f in zip(self.base_lrs, self.lr_lambdas)]


class WarmupCosineLR(LRScheduler):
    """`cosine_with_warmup` for each group, with max_lr = the group's base_lr.
    `min_lr` is one number, or a list with one per group."""

    def __init__(self, optimizer, warmup_steps, decay_steps, min_lr):
        self.min_lrs = _per_group("WarmupCosineLR", "min_lr", min_lr, optimizer)
        cosine_with_warmup(0, 1.0, 0.0, warmup_steps, decay_steps)  # checks the arguments
        self.warmup_steps, self.decay_steps = warmup_steps, decay_steps
        super().__init__(optimizer)

    def get_lr(self):
        return [cosine_with_warmup(self.last_step, base, low, self.warmup_steps, self.decay_steps)
                for base, low in zip(self.base_lrs, self.min_lrs)]


class NoamLR(LRScheduler):
    """`noam(t, d_model, warmup_steps, factor)` for every group (the groups' own lr is ignored)."""

    def __init__(self, optimizer, d_model, warmup_steps, factor=1.0):
        noam(1, d_model, warmup_steps, factor)  # checks the arguments
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor
        super().__init__(optimizer)

    def get_lr(self):
        return [noam(self.last_step, self.d_model, self.warmup_steps, self.factor)] * len(self.base_lrs)


# ============================================================================ PyTorch's schedules
class StepLR(LRScheduler):
    """Multiply the rate by `gamma` every `step_size` steps, as PyTorch's StepLR.

        lr = base_lr · γ^⌊t / step_size⌋

    e.g. base_lr 0.05, step_size 30, γ 0.1: 0.05 for t < 30, 0.005 for 30 ≤ t < 60, 0.0005 ...
    """

    def __init__(self, optimizer, step_size, gamma=0.1):
        # (a whole float too: PyTorch's own tutorial passes step_size=1.0)
        _check(_number(step_size) and step_size > 0, f"StepLR: step_size must be a number > 0, got {step_size!r}")
        _check(_number(gamma, 0), f"StepLR: gamma must be a number >= 0, got {gamma!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer)

    def get_lr(self):
        return [base * self.gamma ** (self.last_step // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by `gamma` at each of the `milestones` (step counts), as PyTorch's MultiStepLR.

        lr = base_lr · γ^(how many milestones are ≤ t)

    A milestone listed twice counts twice, as in PyTorch; the list need not be sorted.
    """

    def __init__(self, optimizer, milestones, gamma=0.1):
        milestones = list(milestones)
        _check(all(_integer(m) for m in milestones),
               f"MultiStepLR: milestones must be integers >= 0, got {milestones!r}")
        _check(_number(gamma, 0), f"MultiStepLR: gamma must be a number >= 0, got {gamma!r}")
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer)

    def get_lr(self):
        passed = bisect.bisect_right(self.milestones, self.last_step)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by `gamma` at every step, as PyTorch's ExponentialLR.

        lr = base_lr · γ^t
    """

    def __init__(self, optimizer, gamma):
        _check(_number(gamma, 0), f"ExponentialLR: gamma must be a number >= 0, got {gamma!r}")
        self.gamma = gamma
        super().__init__(optimizer)

    def get_lr(self):
        return [base * self.gamma ** self.last_step for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from base_lr down to `eta_min` in `T_max` steps, as PyTorch's CosineAnnealingLR
    (the annealing of SGDR, Loshchilov & Hutter 2017, without its restarts).

        lr = η_min + ½·(base_lr − η_min)·(1 + cos(π·t / T_max))

    Past T_max the cosine goes on, back up to base_lr at 2·T_max, and so on, as in PyTorch: stop
    stepping at T_max to stay at eta_min.
    """

    def __init__(self, optimizer, T_max, eta_min=0.0):  # noqa: N803  (PyTorch's name)
        _check(_number(T_max) and T_max > 0, f"CosineAnnealingLR: T_max must be a number > 0, got {T_max!r}")
        _check(_number(eta_min), f"CosineAnnealingLR: eta_min must be a number, got {eta_min!r}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer)

    def get_lr(self):
        cosine = 1 + math.cos(math.pi * self.last_step / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter 2017), as PyTorch's CosineAnnealingWarmRestarts: half a cosine from
    base_lr down to `eta_min` over T_i steps, then a restart at base_lr, each cycle T_mult times as
    long as the one before (T_0, T_0·T_mult, T_0·T_mult², ...).

        T_cur = steps since the last restart,   lr = η_min + ½·(base_lr − η_min)·(1 + cos(π·T_cur / T_i))

    `step()` counts one step; `step(epoch)` jumps to `epoch`, which may be a fraction, as SGDR steps
    after every batch: `scheduler.step(epoch + i / batches_per_epoch)`. `T_cur` and `T_i` are there
    to read, as in PyTorch.
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0):  # noqa: N803  (PyTorch's names)
        name = "CosineAnnealingWarmRestarts"
        _check(_integer(T_0, 1), f"{name}: expected a positive integer T_0, but got {T_0!r}")
        _check(_integer(T_mult, 1), f"{name}: expected an integer T_mult >= 1, but got {T_mult!r}")
        _check(_number(eta_min), f"{name}: eta_min must be a number, got {eta_min!r}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self._epoch = -1.0
        super().__init__(optimizer)

    @property
    def T_cur(self):  # noqa: N802
        return self._cycle()[0]

    @property
    def T_i(self):  # noqa: N802
        return self._cycle()[1]

    def _cycle(self):
        """(T_cur, T_i): where step `epoch` falls in its cycle, and that cycle's length."""
        t, length = self._epoch, self.T_0
        if self.T_mult == 1:
            return t % length, length
        while t >= length:  # (a handful of cycles: exact, where a logarithm could round across a restart)
            t, length = t - length, length * self.T_mult
        return t, length

    def step(self, epoch=None):
        """One step, or to `epoch` (a number >= 0, a fraction too)."""
        if epoch is None:  # one on from where it stands (last_step, if something else set it: SequentialLR)
            self._epoch = (self._epoch if math.floor(self._epoch) == self.last_step else self.last_step) + 1.0
        else:
            _check(_number(epoch, 0), f"CosineAnnealingWarmRestarts: expected a non-negative epoch, got {epoch!r}")
            self._epoch = epoch
        self.last_step = math.floor(self._epoch)
        self._set_lrs(self.get_lr())

    def get_lr(self):
        t_cur, t_i = self._cycle()
        cosine = 1 + math.cos(math.pi * t_cur / t_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def state_dict(self):
        return {**super().state_dict(), "epoch": self._epoch}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._epoch = float(state_dict.get("epoch", self.last_step))


class PolynomialLR(LRScheduler):
    """Decay to 0 in `total_iters` steps along a power of the time left, as PyTorch's PolynomialLR:

        lr = base_lr · (1 − min(t, total_iters) / total_iters)^power        (power 1: a straight line)
    """

    def __init__(self, optimizer, total_iters=5, power=1.0):
        _check(_integer(total_iters, 1), f"PolynomialLR: total_iters must be an integer >= 1, got {total_iters!r}")
        _check(_number(power), f"PolynomialLR: power must be a number, got {power!r}")
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer)

    def get_lr(self):
        left = 1.0 - min(self.last_step, self.total_iters) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiply the rate by `lr_lambda(t)` at each step t ≥ 1, as PyTorch's MultiplicativeLR:

        lr = base_lr · lr_lambda(1) · lr_lambda(2) ⋯ lr_lambda(t)

    (`lr_lambda` may be a list, one per group.) The product is kept as it grows, so each step costs
    one call of lr_lambda; a jump to another step (load_state_dict, SequentialLR) recomputes it.
    """

    def __init__(self, optimizer, lr_lambda):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        _check(len(self.lr_lambdas) == n, f"MultiplicativeLR: got {len(self.lr_lambdas)} functions for {n} groups")
        self._products = (0, [1.0] * n)  # (the step they belong to, the product of each group's factors)
        super().__init__(optimizer)

    def get_lr(self):
        t, products = self._products
        if t > self.last_step:  # (an earlier step: start again)
            t, products = 0, [1.0] * len(self.lr_lambdas)
        for step in range(t + 1, self.last_step + 1):
            products = [product * f(step) for product, f in zip(products, self.lr_lambdas)]
        self._products = (max(self.last_step, 0), products)
        return [base * product for base, product in zip(self.base_lrs, products)]


class LinearLR(LRScheduler):
    """Scale the rate by a factor that goes in a straight line from `start_factor` to `end_factor`
    in `total_iters` steps, then stays there, as PyTorch's LinearLR (a warmup with the defaults).

        lr = base_lr · (start_factor + (end_factor − start_factor) · min(t, total_iters) / total_iters)

    As in PyTorch, 0 < start_factor ≤ 1 and 0 ≤ end_factor ≤ 1; total_iters must be ≥ 1 here
    (PyTorch divides by it too, in its closed form).
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        _check(_number(start_factor, 0, 1) and start_factor > 0,
               f"LinearLR: start_factor must be a number in (0, 1], got {start_factor!r}")
        _check(_number(end_factor, 0, 1), f"LinearLR: end_factor must be a number in [0, 1], got {end_factor!r}")
        _check(_integer(total_iters, 1), f"LinearLR: total_iters must be an integer >= 1, got {total_iters!r}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer)

    def get_lr(self):
        done = min(self.last_step, self.total_iters) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the rate by `factor` for the first `total_iters` steps, as PyTorch's ConstantLR.

        lr = base_lr · factor    for t < total_iters
        lr = base_lr             from t = total_iters on

    As in PyTorch, 0 ≤ factor ≤ 1; total_iters must be ≥ 1 here (with 0, PyTorch's step-by-step
    rule would keep base_lr · factor for ever, its closed form base_lr).
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5):
        _check(_number(factor, 0, 1), f"ConstantLR: factor must be a number in [0, 1], got {factor!r}")
        _check(_integer(total_iters, 1), f"ConstantLR: total_iters must be an integer >= 1, got {total_iters!r}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer)

    def get_lr(self):
        factor = self.factor if self.last_step < self.total_iters else 1.0
        return [base * factor for base in self.base_lrs]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, "Super-Convergence", 2017), as PyTorch's OneCycleLR: the
    rate climbs from initial_lr to `max_lr`, then falls far below initial_lr, over `total_steps`
    steps (or epochs · steps_per_epoch). Call step() after every batch.

        initial_lr = max_lr / div_factor,   min_lr = initial_lr / final_div_factor,   a = pct_start·T − 1
        phases (first step, last step: from → to), T = total_steps:
            default:           (0, a: initial_lr → max_lr),  (a, T − 1: max_lr → min_lr)
            three_phase=True:  (0, a: initial_lr → max_lr),  (a, 2a: max_lr → initial_lr),
                               (2a, T − 1: initial_lr → min_lr)
        in the phase t falls in (the last one from its first step on):  p = (t − first) / (last − first)
            anneal_strategy 'cos':     lr = to + (from − to)·(1 + cos(π·p)) / 2
            anneal_strategy 'linear':  lr = from + (to − from)·p

    `max_lr`, `base_momentum` and `max_momentum` are one number or a list with one per group; the
    groups' own lr is ignored. Stepping past T raises ValueError, as in PyTorch (t = T itself, the
    rate after the last batch, is allowed), and so does a step in a phase of zero length (such as
    pct_start·T = 1), where PyTorch divides by zero.

    cycle_momentum (the default, as in PyTorch): the momentum follows the same phases the other way,
    max_momentum → base_momentum while the rate climbs, back to max_momentum while it falls (and it
    stays at max_momentum in the third phase). It goes into group["momentum"] (SGD, RMSprop) or the
    first of group["betas"] (Adam, AdamW); so SGD made without momentum gets momentum, as in PyTorch.
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False):
        name = "OneCycleLR"
        _check_optimizer(name, optimizer)
        if total_steps is None:
            _check(epochs is not None and steps_per_epoch is not None,
                   f"{name}: give total_steps, or epochs and steps_per_epoch")
            _check(_integer(epochs, 1), f"{name}: epochs must be an integer >= 1, got {epochs!r}")
            _check(_integer(steps_per_epoch, 1),
                   f"{name}: steps_per_epoch must be an integer >= 1, got {steps_per_epoch!r}")
            total_steps = epochs * steps_per_epoch
        _check(_integer(total_steps, 1), f"{name}: total_steps must be an integer >= 1, got {total_steps!r}")
        _check(_number(pct_start, 0, 1), f"{name}: pct_start must be a number in [0, 1], got {pct_start!r}")
        _check(anneal_strategy in ("cos", "linear"),
               f"{name}: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        for arg, value in (("div_factor", div_factor), ("final_div_factor", final_div_factor)):
            _check(_number(value) and value > 0, f"{name}: {arg} must be a number > 0, got {value!r}")
        max_lrs = _per_group(name, "max_lr", max_lr, optimizer)
        _check(all(_number(m, 0) for m in max_lrs), f"{name}: max_lr must be numbers >= 0, got {max_lr!r}")
        self.total_steps, self.anneal_strategy, self.cycle_momentum = total_steps, anneal_strategy, cycle_momentum
        a = float(pct_start * total_steps) - 1
        self.phase_ends = [a, 2 * a, total_steps - 1] if three_phase else [a, total_steps - 1]
        # each group's rate (and momentum) at the phases' ends: phase k goes from point k to point k + 1
        initial_lrs = [top / div_factor for top in max_lrs]
        self.lr_points = [(low, top, low, low / final_div_factor) if three_phase else (low, top, low / final_div_factor)
                          for low, top in zip(initial_lrs, max_lrs)]
        if cycle_momentum:
            self.use_beta1 = _momentum_setting(name, optimizer)
            bases = _per_group(name, "base_momentum", base_momentum, optimizer)
            highs = _per_group(name, "max_momentum", max_momentum, optimizer)
            _check(all(_number(m) for m in bases + highs),
                   f"{name}: base_momentum and max_momentum must be numbers, got {base_momentum!r}, {max_momentum!r}")
            self.momentum_points = [(high, low, high, high) if three_phase else (high, low, high)
                                    for low, high in zip(bases, highs)]
        for group, low in zip(optimizer.param_groups, initial_lrs):
            group["initial_lr"] = low  # (so base_lrs are the initial_lr, as PyTorch's)
        super().__init__(optimizer)

    def _phase(self):
        """(k, p): the phase step t falls in, and how far through it t is (0 at its first step, 1 at its last)."""
        t = self.last_step
        _check(t <= self.total_steps, f"OneCycleLR: step {t} is past total_steps={self.total_steps}")
        first = 0.0
        for k, last in enumerate(self.phase_ends):
            if t <= last or k == len(self.phase_ends) - 1:
                _check(last != first, f"OneCycleLR: step {t} falls in a phase of zero length (phase {k + 1}, "
                                      f"steps {first} to {last}); change pct_start or total_steps")
                return k, (t - first) / (last - first)
            first = last

    def _anneal(self, start, end, p):
        """From `start` at p = 0 to `end` at p = 1, along a half cosine or a straight line."""
        if self.anneal_strategy == "cos":
            return end + (start - end) * (1 + math.cos(math.pi * p)) / 2
        return start + (end - start) * p

    def get_lr(self):
        k, p = self._phase()
        return [self._anneal(points[k], points[k + 1], p) for points in self.lr_points]

    def step(self):
        """Advance one step: the rates, and the momenta if cycle_momentum."""
        super().step()
        self._set_momenta()

    def _set_momenta(self):
        if not self.cycle_momentum:
            return
        k, p = self._phase()
        _write_momenta(self.optimizer, [self._anneal(points[k], points[k + 1], p) for points in self.momentum_points],
                       self.use_beta1)

    def load_state_dict(self, state_dict):
        """As LRScheduler's, and the momenta of the restored step are written back too."""
        super().load_state_dict(state_dict)
        self._set_momenta()


def _momentum_setting(name, optimizer):
    """Whether the optimizer's momentum is the first of its betas (Adam, AdamW) or group["momentum"]
    (SGD, RMSprop), for the schedules that cycle it; an optimizer with neither is refused."""
    defaults = getattr(optimizer, "defaults", {})
    _check("momentum" in defaults or "betas" in defaults,
           f"{name}: cycle_momentum needs an optimizer with momentum or betas ({type(optimizer).__name__} has "
           "neither); pass cycle_momentum=False")
    return "betas" in defaults


def _write_momenta(optimizer, momenta, use_beta1):
    for group, momentum in zip(optimizer.param_groups, momenta):
        if use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum


class CyclicLR(LRScheduler):
    """The cyclical learning rate (Smith, "Cyclical Learning Rates for Training Neural Networks",
    2017), as PyTorch's CyclicLR: the rate climbs from `base_lr` to `max_lr` in `step_size_up` steps,
    falls back in `step_size_down` (= step_size_up by default), and so on. Call step() after every
    batch.

        T = step_size_up + step_size_down,   cycle = ⌊1 + t / T⌋,   x = 1 + t / T − cycle   (in [0, 1))
        scale = x / r if x ≤ r else (x − 1) / (r − 1),   r = step_size_up / T   (0 → 1 → 0 over a cycle)
        lr = base_lr + (max_lr − base_lr) · scale · f,   where f, by `mode`:
            'triangular':   1                         'triangular2':   1 / 2^(cycle − 1)   (halved each cycle)
            'exp_range':    gamma^t
        or your `scale_fn(cycle)` (scale_mode='cycle') or `scale_fn(t)` (scale_mode='iterations').

    `base_lr` and `max_lr` are one number or a list with one per group; base_lr replaces the
    groups' own lr. cycle_momentum (the default, as in PyTorch): the momentum goes the other way,
    max_momentum − (max_momentum − base_momentum) · scale · f, into group["momentum"] or the first of
    group["betas"]; so SGD made without momentum gets momentum, as in PyTorch.
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9):
        name = "CyclicLR"
        _check_optimizer(name, optimizer)
        step_size_down = step_size_up if step_size_down is None else step_size_down
        for arg, value in (("step_size_up", step_size_up), ("step_size_down", step_size_down)):
            _check(_number(value) and value > 0, f"{name}: {arg} must be a number > 0, got {value!r}")
        _check(scale_fn is not None or mode in ("triangular", "triangular2", "exp_range"),
               f"{name}: mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), got {mode!r}")
        _check(scale_mode in ("cycle", "iterations"),
               f"{name}: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        _check(_number(gamma, 0), f"{name}: gamma must be a number >= 0, got {gamma!r}")
        base_lrs = _per_group(name, "base_lr", base_lr, optimizer)
        self.max_lrs = _per_group(name, "max_lr", max_lr, optimizer)
        _check(all(_number(x, 0) for x in base_lrs + self.max_lrs),
               f"{name}: base_lr and max_lr must be numbers >= 0, got {base_lr!r} and {max_lr!r}")
        self.total_size = float(step_size_up + step_size_down)
        self.step_ratio = step_size_up / self.total_size
        self.mode, self.gamma = mode, gamma
        if scale_fn is None:
            self.scale_fn = {"triangular": lambda c: 1.0, "triangular2": lambda c: 1 / 2.0 ** (c - 1),
                             "exp_range": lambda t: gamma ** t}[mode]
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_setting(name, optimizer)
            self.base_momentums = _per_group(name, "base_momentum", base_momentum, optimizer)
            self.max_momentums = _per_group(name, "max_momentum", max_momentum, optimizer)
        for group, low in zip(optimizer.param_groups, base_lrs):
            group["lr"] = group["initial_lr"] = low  # (base_lr replaces the groups' own lr, as in PyTorch)
        super().__init__(optimizer)

    def _scale(self):
        """The step's height in its cycle (0 at base_lr, 1 at max_lr) times the mode's factor f."""
        t = self.last_step
        cycle = math.floor(1 + t / self.total_size)
        x = 1.0 + t / self.total_size - cycle
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        return height * self.scale_fn(cycle if self.scale_mode == "cycle" else t)

    def get_lr(self):
        scale = self._scale()
        return [base + (top - base) * scale for base, top in zip(self.base_lrs, self.max_lrs)]

    def step(self):
        """Advance one step: the rates, and the momenta if cycle_momentum."""
        super().step()
        self._set_momenta()

    def _set_momenta(self):
        if self.cycle_momentum:
            scale = self._scale()
            _write_momenta(self.optimizer, [high - (high - low) * scale for low, high in
                                            zip(self.base_momentums, self.max_momentums)], self.use_beta1)

    def load_state_dict(self, state_dict):
        """As LRScheduler's, and the momenta of the restored step are written back too."""
        super().load_state_dict(state_dict)
        self._set_momenta()


class SequentialLR(LRScheduler):
    """Schedulers one after the other, as PyTorch's SequentialLR: `schedulers[0]` until step
    `milestones[0]`, then `schedulers[1]` from its own step 0, and so on.

        i = how many milestones are ≤ t,   lr = the rate of schedulers[i] at step t − milestones[i − 1]
                                               (at step t for i = 0)

    Make the schedulers on `optimizer` first, then this one, and step only this one:

        warmup = LinearLR(optimizer, start_factor=0.1, total_iters=5)
        decay = CosineAnnealingLR(optimizer, T_max=95)
        scheduler = SequentialLR(optimizer, [warmup, decay], milestones=[5])

    They all start from the groups' initial_lr, whatever rate the ones made later set. A
    ReduceLROnPlateau cannot be one of them (its step needs a metric), as in PyTorch.
    """

    def __init__(self, optimizer, schedulers, milestones):
        name = "SequentialLR"
        schedulers, milestones = list(schedulers), list(milestones)
        _check(len(schedulers) >= 1, f"{name}: schedulers must hold at least one scheduler")
        for i, s in enumerate(schedulers):
            _check(isinstance(s, LRScheduler) and not isinstance(s, ReduceLROnPlateau),
                   f"{name}: schedulers[{i}] must be a scheduler whose step() takes no metric, got {type(s).__name__}")
            _check(s.optimizer is optimizer, f"{name}: schedulers[{i}] ({type(s).__name__}) drives another optimizer")
        _check(len(milestones) == len(schedulers) - 1,
               f"{name}: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, got {len(milestones)}")
        _check(all(_integer(m) for m in milestones) and all(a < b for a, b in zip(milestones, milestones[1:])),
               f"{name}: milestones must be increasing integers >= 0, got {milestones!r}")
        self.schedulers, self.milestones = schedulers, milestones
        super().__init__(optimizer)

    def step(self):
        """Advance one step: the scheduler whose turn it is takes its own step (and sets the rates)."""
        self.last_step += 1
        i = bisect.bisect_right(self.milestones, self.last_step)
        scheduler = self.schedulers[i]
        scheduler.last_step = self.last_step - (self.milestones[i - 1] if i else 0) - 1
        scheduler.step()
        self.last_lr = list(scheduler.last_lr)

    def state_dict(self):
        """As LRScheduler's, with "schedulers": the state dict of each."""
        return {**super().state_dict(), "schedulers": [s.state_dict() for s in self.schedulers]}

    def load_state_dict(self, state_dict):
        saved = state_dict["schedulers"]
        if len(saved) != len(self.schedulers):
            raise ValueError(f"SequentialLR.load_state_dict: the state dict has {len(saved)} schedulers, "
                             f"this one has {len(self.schedulers)}")
        for scheduler, state in zip(self.schedulers, saved):
            scheduler.load_state_dict(state)
        super().load_state_dict(state_dict)  # (last: its rates are the ones the groups keep)


class ReduceLROnPlateau(LRScheduler):
    """Lower the rate when a metric has stopped improving, as PyTorch's ReduceLROnPlateau: call
    `step(metrics)` once per epoch with, say, the validation loss.

        improved(a) = a < best·(1 − threshold)    mode 'min', threshold_mode 'rel'
                      a < best − threshold        mode 'min', threshold_mode 'abs'
                      a > best·(1 + threshold)    mode 'max', threshold_mode 'rel'
                      a > best + threshold        mode 'max', threshold_mode 'abs'
        at each step(a):
            if improved(a):  best ← a,  bad ← 0       else: bad ← bad + 1
            if cooldown_counter > 0:  cooldown_counter ← cooldown_counter − 1,  bad ← 0
            if bad > patience:  lr ← max(lr·factor, min_lr) in each group (kept if that lowers it by eps
                                or less),  cooldown_counter ← cooldown,  bad ← 0

    best starts at +∞ ('min') or −∞ ('max'), so the first metric is an improvement; so with
    patience p the rate drops at the (p+1)-th step in a row without one, and then steps in
    cooldown do not count. bad is `num_bad_epochs`; `min_lr` is one number or one per group. Unlike
    the other schedulers it multiplies the group's current lr, and making it changes nothing.

    minigrad.compile: `step(metrics)` is not replayed as a call, since the decision hangs on the
    metric's value, which a replay would not read again (it would reuse the recorded one). Inside a
    compiled step it stops the recording, so that step runs eagerly, with a one-line warning; call
    it outside the compiled step, once per epoch.
    """

    _replayed = False

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        name = "ReduceLROnPlateau"
        _check_optimizer(name, optimizer)
        _check(mode in ("min", "max"), f"{name}: mode must be 'min' or 'max', got {mode!r}")
        _check(threshold_mode in ("rel", "abs"),
               f"{name}: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        _check(_number(factor, 0) and factor < 1, f"{name}: factor must be a number in [0, 1), got {factor!r}")
        _check(_integer(patience), f"{name}: patience must be an integer >= 0, got {patience!r}")
        _check(_integer(cooldown), f"{name}: cooldown must be an integer >= 0, got {cooldown!r}")
        _check(_number(threshold), f"{name}: threshold must be a number, got {threshold!r}")
        _check(_number(eps, 0), f"{name}: eps must be a number >= 0, got {eps!r}")
        self.min_lrs = _per_group(name, "min_lr", min_lr, optimizer)
        _check(all(_number(m, 0) for m in self.min_lrs), f"{name}: min_lr must be numbers >= 0, got {min_lr!r}")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = threshold, threshold_mode, cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self.last_step = 0
        self.last_lr = [float(group["lr"]) for group in optimizer.param_groups]

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _improved(self, a):
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metrics):
        """Take the epoch's metric (a number, or a tensor of one element) and lower the rates if it
        has not improved for more than `patience` steps."""
        if _modes.recorder is not None:  # inside minigrad.compile's recording: this step stays eager
            _modes.recorder.refuse("ReduceLROnPlateau.step(metrics) decides from the metric's value, which a "
                                   "replay would not read again; call it outside the compiled step")
        current = float(metrics)
        self.last_step += 1
        if self._improved(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # (bad steps in cooldown do not count)
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self.last_lr = [float(group["lr"]) for group in self.optimizer.param_groups]

    def state_dict(self):
        """{"last_step", "last_lr", "best", "num_bad_epochs", "cooldown_counter"}: where the watch stands."""
        return {"last_step": self.last_step, "last_lr": list(self.last_lr), "best": self.best,
                "num_bad_epochs": self.num_bad_epochs, "cooldown_counter": self.cooldown_counter}

    def load_state_dict(self, state_dict):
        """Restore the watch, and write the saved rates back into the optimizer's groups."""
        if len(state_dict["last_lr"]) != len(self.optimizer.param_groups):
            raise ValueError(f"ReduceLROnPlateau.load_state_dict: the state dict has {len(state_dict['last_lr'])} "
                             f"learning rates, the optimizer has {len(self.optimizer.param_groups)} parameter groups")
        self.last_step = int(state_dict["last_step"])
        self.best = float(state_dict["best"])
        self.num_bad_epochs = int(state_dict["num_bad_epochs"])
        self.cooldown_counter = int(state_dict["cooldown_counter"])
        self._set_lrs(state_dict["last_lr"])


_LRScheduler = LRScheduler  # the name older PyTorch code subclasses
