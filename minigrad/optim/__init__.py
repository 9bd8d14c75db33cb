"""Optimizers, gradient clipping and learning-rate schedules.

    optimizer = minigrad.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    schedule = minigrad.optim.WarmupCosineLR(optimizer, warmup_steps=100, decay_steps=5000, min_lr=3e-5)
    for batch in batches:
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        minigrad.optim.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        schedule.step()

The schedules live in `minigrad.optim.lr_scheduler` (lr_scheduler.py), as in PyTorch: StepLR,
CosineAnnealingLR, OneCycleLR, ReduceLROnPlateau, ...; the ones minigrad had before it (LRScheduler,
LambdaLR, WarmupCosineLR, NoamLR, cosine_with_warmup, noam) are also reachable from here.

The optimizers, with PyTorch's names, arguments, defaults and update rules: SGD, Adam, AdamW,
RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam.

Notation in the update-rule comments: θ is a parameter, g its gradient, lr the learning rate,
λ the weight decay, t the step number (1, 2, ...).

An update changes the parameter's array in place (`p.numpy()`, with numpy's `out=` and `-=`, or
Adam's kernel; `p.grad.numpy()` is the gradient's array), so a model that
holds the parameter sees the new values, and it counts the change (`p._bump()`), so autograd
can tell that a tensor saved for a backward pass was changed afterwards. The arithmetic runs in
the parameter's dtype: a float32 model stays float32, and so do the optimizer's buffers.
"""
import functools
import math

import numpy as np

from .. import kernels
from ..compile import replayed_as_a_call
from ..grad_mode import enable_grad
from ..tensor import Tensor, _zero_grads
from . import lr_scheduler
from .lr_scheduler import LambdaLR, LRScheduler, NoamLR, WarmupCosineLR, cosine_with_warmup, noam

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop",
    "LBFGS",
    "clip_grad_norm_", "lr_scheduler",
    "cosine_with_warmup", "noam", "LRScheduler", "LambdaLR", "WarmupCosineLR", "NoamLR",
]


# ============================================================================ optimizers
class Optimizer:
    """Base class: holds parameter groups and per-parameter state; subclasses write `step()`.

    `params` is an iterable of Tensors, or of dicts ("parameter groups") such as
    `{"params": [w1, w2], "lr": 0.1, "weight_decay": 0.0}`; a key a group leaves out takes its
    value from `defaults`. Each group in `self.param_groups` is a dict with "params" (a list) and
    every hyper-parameter, so a schedule can change `group["lr"]` between steps.

    `self.state[p]` is a dict of what the optimizer remembers about parameter `p`
    (step count, moving averages, ...), created on p's first update.
    """

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of Tensors (or of dicts), "
                            "got a single Tensor; wrap it in a list")
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}
        self._scratch = {}  # (shape, dtype) -> work array reused every step, not part of the state
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty list of parameters")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        """Add a dict {"params": [...], hyper-parameters...}; missing hyper-parameters take the defaults."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{type(self).__name__}: a parameter group must be a dict with a 'params' key, "
                            f"got {type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                hint = " (did you pass named_parameters()? pass parameters())" if isinstance(p, tuple) else ""
                raise TypeError(f"{type(self).__name__}: parameters must be Tensors, got {type(p).__name__}{hint}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or any(id(p) in seen for p in params):
            raise ValueError(f"{type(self).__name__}: a parameter appears more than once")
        self.param_groups.append({**self.defaults, **group, "params": params})

    def __init_subclass__(cls, **kwargs):
        """A subclass's `step` changes the weights' arrays directly, outside the ops: minigrad.compile
        replays it as one call (compile.py). It also takes PyTorch's `step(closure)`: the closure
        (which clears the gradients, computes the loss and calls backward) runs first, and its loss
        is returned. (LBFGS, whose step calls the closure many times, handles it itself.)"""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not cls.__dict__.get("calls_its_closure", False):
            cls.step = _closure_first(replayed_as_a_call(cls.__dict__["step"]))

    @replayed_as_a_call
    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient (`p.grad = None`); the next backward starts afresh.
        set_to_none=False writes zeros into the gradients instead (PyTorch's option)."""
        _zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self):
        """Update every parameter that has a gradient. Subclasses implement this."""
        raise NotImplementedError

    def _state(self, p, **first):
        """p's state, made on its first update from `first` (name -> a number, or None for an array
        of zeros like p: `self._state(p, exp_avg=None)`), with "step": 0; then counts this update
        (state["step"] += 1) and returns it."""
        state = self.state.get(p)
        if state is None:
            theta = p.numpy()
            state = self.state[p] = {"step": 0}
            for name, value in first.items():
                state[name] = np.zeros_like(theta) if value is None else value
        state["step"] += 1
        return state

    def _work_array(self, p):
        """A scratch array shaped and typed like `p`, shared by parameters of the same shape."""
        key = (p.shape, p.dtype)
        buf = self._scratch.get(key)
        if buf is None:
            buf = self._scratch[key] = np.empty_like(p.numpy())
        return buf

    # ------------------------------------------------------------------ saving and restoring
    def state_dict(self):
        """The optimizer's state as plain data: dicts, lists, numpy arrays (copies), numbers, strings.

        Parameters are numbered 0, 1, 2, ... in the order of the groups; "state" is keyed by that
        number as a string, and each group lists its parameters' numbers under "params":

            {"state": {"0": {"step": 3, "exp_avg": array, ...}, ...},
             "param_groups": [{"lr": 0.001, "betas": [0.9, 0.999], ..., "params": [0, 1, 2]}]}
        """
        index = {}
        groups = []
        for group in self.param_groups:
            saved = {k: _plain(v) for k, v in group.items() if k != "params"}
            saved["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(saved)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[str(index[id(p)])] = {k: _plain(v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore from `state_dict()` of an optimizer built on parameters of the same shapes, in the
        same groups and order. Hyper-parameters (lr, ...) are restored too. Raises ValueError listing
        every mismatch (group count, group sizes, buffer shapes) and changes nothing in that case."""
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
            raise ValueError(f"{name}: expected a dict with 'state' and 'param_groups', "
                             f"got {type(state_dict).__name__}")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}: the state dict has {len(saved_groups)} parameter groups, "
                             f"this optimizer has {len(self.param_groups)}")
        errors = []
        param_of = {}  # saved index -> this optimizer's parameter
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                errors.append(f"group {i} has {len(saved['params'])} parameters in the state dict, "
                              f"{len(group['params'])} here")
            param_of.update(zip((int(k) for k in saved["params"]), group["params"]))
        if errors:
            raise ValueError(f"{name}: the state dict does not fit this optimizer:\n  " + "\n  ".join(errors))
        state = {}
        for key, saved in state_dict["state"].items():
            p = param_of.get(int(key))
            if p is None:
                errors.append(f"state for parameter {key}: no such parameter")
                continue
            for k, v in saved.items():
                if isinstance(v, np.ndarray) and v.shape != p.shape:
                    errors.append(f"parameter {key} ({k!r}): shape {v.shape} in the state dict, "
                                  f"the parameter's shape is {p.shape}")
            state[p] = {k: np.array(v, dtype=p.dtype) if isinstance(v, np.ndarray) else v
                        for k, v in saved.items()}
        if errors:
            raise ValueError(f"{name}: the state dict does not fit this optimizer:\n  " + "\n  ".join(errors))
        for saved, group in zip(saved_groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = tuple(v) if isinstance(group.get(k), tuple) else v
        self.state = state

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for i, group in enumerate(self.param_groups):
            settings = ", ".join(f"{k}={v}" for k, v in group.items() if k != "params")
            lines.append(f"  group {i}: {len(group['params'])} parameters, {settings}")
        return "\n".join(lines) + "\n)"


def _plain(value):
    """A state-dict-safe copy: arrays copied, tuples become lists."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _closure_first(step):
    @functools.wraps(step)
    def step_with_closure(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        step(self)
        return loss

    return step_with_closure


def _check_not_negative(name, **values):
    """ValueError for the first of `values` (lr=..., eps=..., ...) that is negative (or NaN)."""
    for key, value in values.items():
        _check(value >= 0.0, f"{name}: {key} must be >= 0, got {value}")


def _check_betas(name, betas):
    _check(len(betas) == 2 and all(0.0 <= b < 1.0 for b in betas),
           f"{name}: betas must be two numbers in [0, 1), got {betas}")


def _gradient(p, weight_decay):
    """p's gradient as an array in p's dtype, plus λθ if weight_decay λ ≠ 0 (the L2 penalty).
    Adding λθ makes a new array, so p.grad itself is left as backward() wrote it."""
    theta, g = p.numpy(), p.grad.numpy()
    if g.dtype != theta.dtype:
        g = g.astype(theta.dtype)  # (a float64 gradient on a float32 parameter: work in float32)
    if weight_decay != 0:
        g = g + weight_decay * theta  # g ← g + λθ
    return g


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum, dampening, Nesterov and weight decay
    (the same rules as PyTorch's SGD).

        g ← g + λθ                          (if weight_decay λ > 0)
        b ← μb + (1 − dampening)·g          (if momentum μ > 0; on the first step b ← g)
        g ← g + μb  (nesterov)  or  g ← b
        θ ← θ − lr·g
    """

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
        _check_not_negative("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        _check(not nesterov or (momentum > 0 and dampening == 0),
               "SGD: nesterov needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      nesterov=nesterov, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, mu, damp, wd = group["lr"], group["momentum"], group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta, g = p.numpy(), p.grad.numpy()
                if wd != 0:
                    g = g + wd * theta                               # g ← g + λθ   (a new array: p.grad stays)
                if mu != 0:
                    state = self.state.setdefault(p, {})
                    b = state.get("momentum_buffer")
                    if b is None:
                        b = state["momentum_buffer"] = np.array(g, dtype=p.dtype)    # b ← g  (first step)
                    else:
                        np.multiply(b, mu, out=b)                    # b ← μb + (1 − dampening)·g
                        if damp == 0:
                            b += g
                        else:
                            b += (1 - damp) * g
                    g = g + mu * b if group["nesterov"] else b      # g ← g + μb  or  g ← b
                work = self._work_array(p)
                np.multiply(g, lr, out=work)                        # θ ← θ − lr·g
                theta -= work
                p._bump("SGD.step")


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015): a step per coordinate scaled by running gradient statistics.

        g ← g + λθ                        (weight_decay λ as an L2 penalty, like PyTorch's Adam)
        m ← β1·m + (1 − β1)·g             (running mean of g)
        v ← β2·v + (1 − β2)·g²            (running mean of g²)
        m̂ = m / (1 − β1^t),  v̂ = v / (1 − β2^t)     (bias correction: m, v start at 0)
        θ ← θ − lr · m̂ / (√v̂ + eps)

    The last line is computed as PyTorch does: θ ← θ − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + eps).
    """

    _decoupled = False  # AdamW sets True: decay θ directly instead of adding λθ to g
    _step_name = "Adam.step"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        name = type(self).__name__
        _check_not_negative(name, lr=lr)
        _check_betas(name, betas)
        _check_not_negative(name, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, exp_avg=None, exp_avg_sq=None)
                # in place, in one pass over memory (numba) or in numpy (see kernels/adam.py):
                #   g ← g + λθ  (Adam)  or  θ ← θ − lr·λ·θ  (AdamW)
                #   m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²
                #   θ ← θ − lr·m̂ / (√v̂ + eps)   with m̂ = m / (1 − β1^t), v̂ = v / (1 − β2^t)
                kernels.adam_update(theta, p.grad.numpy(), state["exp_avg"], state["exp_avg_sq"],
                                    lr, beta1, beta2, eps, wd, self._decoupled, state["step"])
                p._bump(self._step_name)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as PyTorch's AdamW.

        θ ← θ − lr·λ·θ                    (decay the weights directly, before the Adam step)
        then the Adam update of `Adam` with the plain gradient g (no λθ added to g).

    With Adam's L2 penalty the decay is divided by √v̂ like the gradient, so weights with large
    gradients are barely decayed; AdamW decays every weight at the same rate lr·λ.
    """

    _decoupled = True
    _step_name = "AdamW.step"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e): divide each coordinate's step by a running root mean square
    of its gradients, as PyTorch's RMSprop.

        g ← g + λθ                                  (if weight_decay λ > 0)
        v ← α·v + (1 − α)·g²                        (running mean of g², from v = 0)
        centered:  m ← α·m + (1 − α)·g,  d = √(v − m²) + eps      (variance instead of mean square)
        otherwise: d = √v + eps
        momentum μ > 0:  b ← μ·b + g/d,  θ ← θ − lr·b            (from b = 0)
        otherwise:       θ ← θ − lr·g/d
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
        _check_not_negative("RMSprop", lr=lr)
        _check(0.0 <= alpha <= 1.0, f"RMSprop: alpha must be in [0, 1], got {alpha}")
        _check_not_negative("RMSprop", eps=eps, weight_decay=weight_decay, momentum=momentum)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered))

    def step(self):
        for group in self.param_groups:
            lr, alpha, eps, wd, mu = (group[k] for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta, g = p.numpy(), p.grad.numpy()
                if wd != 0:
                    g = g + wd * theta                                    # g ← g + λθ
                state = self._state(p, square_avg=None)
                v = state["square_avg"]
                v *= alpha                                                # v ← αv + (1 − α)g²
                v += (1 - alpha) * g * g
                if group["centered"]:
                    m = state.get("grad_avg")
                    if m is None:
                        m = state["grad_avg"] = np.zeros_like(theta)
                    m *= alpha                                            # m ← αm + (1 − α)g
                    m += (1 - alpha) * g
                    d = np.sqrt(v - m * m) + eps                          # d = √(v − m²) + eps
                else:
                    d = np.sqrt(v) + eps                                  # d = √v + eps
                if mu > 0:
                    b = state.get("momentum_buffer")
                    if b is None:
                        b = state["momentum_buffer"] = np.zeros_like(theta)
                    b *= mu                                               # b ← μb + g/d
                    b += g / d
                    theta -= lr * b                                       # θ ← θ − lr·b
                else:
                    theta -= lr * g / d                                   # θ ← θ − lr·g/d
                p._bump("RMSprop.step")


class Adagrad(Optimizer):
    """Adagrad (Duchi, Hazan & Singer, 2011): each coordinate's step is divided by the root of the
    sum of all its squared gradients so far, as PyTorch's Adagrad.

        g ← g + λθ                                  (if weight_decay λ > 0)
        lr_t = lr / (1 + (t − 1)·lr_decay)
        s ← s + g²                                  (from s = initial_accumulator_value)
        θ ← θ − lr_t · g / (√s + eps)

    Coordinates with large or frequent gradients slow down, rare ones keep large steps. As s only
    grows, the steps only shrink; RMSprop and Adadelta replace the sum by a running mean.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                 eps=1e-10):
        _check_not_negative("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                            initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps))

    def step(self):
        for group in self.param_groups:
            lr, lr_decay, wd, eps = (group[k] for k in ("lr", "lr_decay", "weight_decay", "eps"))
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, sum=None)
                if state["step"] == 1:  # (the sum starts at initial_accumulator_value)
                    state["sum"] += group["initial_accumulator_value"]
                g = _gradient(p, wd)                                      # g ← g + λθ
                lr_t = lr / (1 + (state["step"] - 1) * lr_decay)          # lr_t = lr / (1 + (t − 1)·lr_decay)
                s = state["sum"]
                s += g * g                                                # s ← s + g²
                work = self._work_array(p)
                np.sqrt(s, out=work)                                      # θ ← θ − lr_t·g / (√s + eps)
                work += eps
                np.divide(g, work, out=work)
                work *= lr_t
                theta -= work
                p._bump("Adagrad.step")


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): RMSprop's running mean of g², and a running mean of the squared
    steps whose root takes the place of a learning rate, so that a step has the units of θ.
    As PyTorch's Adadelta.

        g ← g + λθ                                  (if weight_decay λ > 0)
        v ← ρ·v + (1 − ρ)·g²                        (running mean of g², from v = 0)
        Δ = √(u + eps) / √(v + eps) · g             (u: running mean of Δ², from u = 0)
        u ← ρ·u + (1 − ρ)·Δ²
        θ ← θ − lr·Δ

    The paper's rule is lr = 1 (the default); PyTorch's lr scales the step.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
        _check_not_negative("Adadelta", lr=lr)
        _check(0.0 <= rho <= 1.0, f"Adadelta: rho must be in [0, 1], got {rho}")
        _check_not_negative("Adadelta", eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, rho, eps, wd = (group[k] for k in ("lr", "rho", "eps", "weight_decay"))
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, square_avg=None, acc_delta=None)
                g = _gradient(p, wd)                                      # g ← g + λθ
                v, u = state["square_avg"], state["acc_delta"]
                v *= rho                                                  # v ← ρv + (1 − ρ)g²
                v += (1 - rho) * g * g
                delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g           # Δ = √(u + eps) / √(v + eps) · g
                u *= rho                                                  # u ← ρu + (1 − ρ)Δ²
                u += (1 - rho) * delta * delta
                theta -= lr * delta                                       # θ ← θ − lr·Δ
                p._bump("Adadelta.step")


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7): Adam with the root mean square of the gradients
    replaced by a decaying maximum of |g| (an infinity norm), as PyTorch's Adamax.

        g ← g + λθ                                  (if weight_decay λ > 0)
        m ← β1·m + (1 − β1)·g                       (running mean of g, from m = 0)
        u ← max(β2·u, |g| + eps)                    (decaying maximum of |g|, from u = 0)
        θ ← θ − (lr / (1 − β1^t)) · m / u           (m's bias correction; u needs none)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        _check_not_negative("Adamax", lr=lr)
        _check_betas("Adamax", betas)
        _check_not_negative("Adamax", eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, exp_avg=None, exp_inf=None)
                g = _gradient(p, wd)                                      # g ← g + λθ
                m, u = state["exp_avg"], state["exp_inf"]
                m *= beta1                                                # m ← β1·m + (1 − β1)·g
                m += (1 - beta1) * g
                u *= beta2                                                # u ← max(β2·u, |g| + eps)
                np.maximum(u, np.abs(g) + eps, out=u)
                work = self._work_array(p)
                np.divide(m, u, out=work)                                 # θ ← θ − (lr / (1 − β1^t))·m / u
                work *= lr / (1 - beta1 ** state["step"])
                theta -= work
                p._bump("Adamax.step")


class NAdam(Optimizer):
    """NAdam (Dozat, 2016): Adam with Nesterov momentum (the step already uses the next step's
    momentum) and a momentum coefficient μ_t that warms up from β1/2 towards β1, as PyTorch's NAdam.

        θ ← θ − lr·λ·θ   if decoupled_weight_decay (NAdamW),  else  g ← g + λθ     (if λ > 0)
        μ_t = β1·(1 − ½·0.96^(t·ψ))                 (ψ = momentum_decay)
        m ← β1·m + (1 − β1)·g                       (running mean of g, from m = 0)
        v ← β2·v + (1 − β2)·g²                      (running mean of g², from v = 0)
        d = √v̂ + eps,   v̂ = v / (1 − β2^t)
        θ ← θ − lr·(1 − μ_t) / (1 − μ_1⋯μ_t) · g/d  −  lr·μ_{t+1} / (1 − μ_1⋯μ_{t+1}) · m/d

    The product μ_1⋯μ_t (a number, from 1) is kept in the state as "mu_product".
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False):
        _check_not_negative("NAdam", lr=lr)
        _check_betas("NAdam", betas)
        _check_not_negative("NAdam", eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            psi, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, mu_product=1.0, exp_avg=None, exp_avg_sq=None)
                t = state["step"]
                if decoupled and wd != 0:
                    theta *= 1 - lr * wd                                  # θ ← θ − lr·λ·θ
                g = _gradient(p, 0.0 if decoupled else wd)                # g ← g + λθ
                mu = beta1 * (1 - 0.5 * 0.96 ** (t * psi))                # μ_t = β1·(1 − ½·0.96^(tψ))
                mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))     # μ_{t+1}
                state["mu_product"] *= mu                                 # μ_1⋯μ_t
                mu_product = state["mu_product"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m *= beta1                                                # m ← β1·m + (1 − β1)·g
                m += (1 - beta1) * g
                v *= beta2                                                # v ← β2·v + (1 − β2)·g²
                v += (1 - beta2) * g * g
                d = self._work_array(p)
                np.divide(v, 1 - beta2 ** t, out=d)                       # d = √v̂ + eps,  v̂ = v / (1 − β2^t)
                np.sqrt(d, out=d)
                d += eps
                # θ ← θ − lr·(1 − μ_t) / (1 − μ_1⋯μ_t) · g/d  −  lr·μ_{t+1} / (1 − μ_1⋯μ_{t+1}) · m/d
                theta -= lr * (1 - mu) / (1 - mu_product) * g / d
                theta -= lr * mu_next / (1 - mu_product * mu_next) * m / d
                p._bump("NAdam.step")


class RAdam(Optimizer):
    """RAdam (Liu et al., 2020): Adam whose adaptive step starts only once the variance of v̂ can
    be estimated (ρ_t > 5), scaled by a rectification factor r_t; before that the update is SGD
    with momentum. As PyTorch's RAdam.

        θ ← θ − lr·λ·θ   if decoupled_weight_decay (RAdamW),  else  g ← g + λθ     (if λ > 0)
        m ← β1·m + (1 − β1)·g                       (running mean of g, from m = 0)
        v ← β2·v + (1 − β2)·g²                      (running mean of g², from v = 0)
        m̂ = m / (1 − β1^t)
        ρ∞ = 2 / (1 − β2) − 1,   ρ_t = ρ∞ − 2t·β2^t / (1 − β2^t)    (length of the moving average)
        if ρ_t > 5:  r_t = √((ρ_t − 4)(ρ_t − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρ_t))
                     θ ← θ − lr·m̂ · r_t·√(1 − β2^t) / (√v + eps)
        else:        θ ← θ − lr·m̂

    With β2 = 0.999, ρ_t ≈ t for small t: the first 5 steps are momentum steps.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False):
        _check_not_negative("RAdam", lr=lr)
        _check_betas("RAdam", betas)
        _check_not_negative("RAdam", eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                state = self._state(p, exp_avg=None, exp_avg_sq=None)
                t = state["step"]
                if decoupled and wd != 0:
                    theta *= 1 - lr * wd                                  # θ ← θ − lr·λ·θ
                g = _gradient(p, 0.0 if decoupled else wd)                # g ← g + λθ
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m *= beta1                                                # m ← β1·m + (1 − β1)·g
                m += (1 - beta1) * g
                v *= beta2                                                # v ← β2·v + (1 − β2)·g²
                v += (1 - beta2) * g * g
                bias1, bias2 = 1 - beta1 ** t, 1 - beta2 ** t
                rho_inf = 2 / (1 - beta2) - 1                             # ρ∞ = 2 / (1 − β2) − 1
                rho_t = rho_inf - 2 * t * beta2 ** t / bias2              # ρ_t = ρ∞ − 2t·β2^t / (1 − β2^t)
                work = self._work_array(p)
                if rho_t > 5:
                    # r_t = √((ρ_t − 4)(ρ_t − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρ_t))
                    r_t = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    # θ ← θ − lr·m̂ · r_t·√(1 − β2^t) / (√v + eps)
                    np.sqrt(v, out=work)
                    work += eps
                    np.divide(m, work, out=work)
                    work *= lr / bias1 * r_t * math.sqrt(bias2)
                else:
                    np.multiply(m, lr / bias1, out=work)                  # θ ← θ − lr·m̂,  m̂ = m / (1 − β1^t)
                theta -= work
                p._bump("RAdam.step")


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun, 1993), as PyTorch's: each weight has its own step size, which
    grows while its gradient keeps its sign and shrinks when the sign flips; only the gradient's
    sign is used, never its size.

        s = sign(g · g_prev):  step ← clip(step · η+, step_min, step_max) where s > 0,
                               step ← clip(step · η−, step_min, step_max) where s < 0
        g ← 0 where s < 0                           (after a flip: no move, and no flip next time)
        θ ← θ − sign(g) · step,   g_prev ← g        (step starts at lr everywhere, g_prev at 0)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)):
        _check_not_negative("Rprop", lr=lr)
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Rprop: etas must be (η−, η+) with 0 < η− < 1 < η+, got {etas}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes)))

    def step(self):
        for group in self.param_groups:
            (eta_minus, eta_plus), (low, high) = group["etas"], group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                theta = p.numpy()
                first = p not in self.state
                state = self._state(p, prev=None, step_size=None)
                if first:
                    state["step_size"].fill(group["lr"])
                g = p.grad.numpy().astype(theta.dtype, copy=True)
                s = np.sign(g * state["prev"])
                factor = np.where(s > 0, eta_plus, np.where(s < 0, eta_minus, 1.0)).astype(theta.dtype)
                np.clip(state["step_size"] * factor, low, high, out=state["step_size"])
                g[s < 0] = 0
                theta -= np.sign(g) * state["step_size"]
                state["prev"][...] = g
                p._bump("Rprop.step")


from .lbfgs import LBFGS  # noqa: E402  (its step calls the closure many times: a file of its own)


# ============================================================================ gradient clipping
@replayed_as_a_call
def clip_grad_norm_(parameters, max_norm):
    """Scale all gradients together so that their total L2 norm is at most `max_norm`:
    `minigrad.nn.utils.clip_grad_norm_` with norm_type 2, its total returned as a Python float
    (handy for logging) instead of a tensor.

        total = √(Σ over every gradient entry of g²)      (summed in float64)
        g ← g · min(1, max_norm / (total + 1e-6))          for every gradient, in place

    Parameters whose `.grad` is None are ignored. A parameter listed twice (`[w, w]`, or two
    parameter groups that share a weight) counts once: its gradient enters `total` once and is
    scaled once. (PyTorch does not de-duplicate: there `[w, w]` counts w's norm twice and scales
    `w.grad` twice.) If `total` is inf or NaN the gradients are left alone and `total` is
    returned, so the caller can see the problem and skip the step.
    """
    from ..nn.utils import clip_grad_norm_ as clip  # (nn imports optim's neighbours, not optim: no cycle)

    return float(clip(parameters, max_norm))
