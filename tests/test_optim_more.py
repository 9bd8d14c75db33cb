"""Adagrad, Adadelta, Adamax, NAdam and RAdam: against PyTorch's optimizers (when torch is installed),
against their update rules worked out by hand, through state dicts and through minigrad.compile."""
import math
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import optim

NAMES = ["Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


def param(values, dtype=np.float64):
    return mg.Tensor(np.array(values, dtype=dtype), requires_grad=True)


def run(opt, params, grads):
    """One optimizer step per entry of `grads` (a list of per-parameter gradient lists)."""
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else np.array(g, dtype=p.dtype)
        opt.step()


P0 = np.array([1.0, -2.0, 3.0, -0.5])
G1 = np.array([0.5, -1.0, 2.0, 0.25])
G2 = np.array([-0.3, 0.2, 0.1, 1.5])


# ---------------------------------------------------------------------------- against PyTorch
# Every option of each optimizer, alone and together.
TORCH_CASES = {
    "Adagrad": [{}, {"weight_decay": 0.1}, {"lr_decay": 0.05}, {"initial_accumulator_value": 0.5}, {"eps": 1e-3},
                {"lr_decay": 0.1, "weight_decay": 0.05, "initial_accumulator_value": 0.2, "eps": 1e-6}],
    "Adadelta": [{}, {"weight_decay": 0.1}, {"rho": 0.5}, {"eps": 1e-3},
                 {"rho": 0.95, "eps": 1e-4, "weight_decay": 0.05}],
    "Adamax": [{}, {"weight_decay": 0.1}, {"betas": (0.8, 0.9)}, {"eps": 1e-3},
               {"betas": (0.5, 0.99), "eps": 1e-4, "weight_decay": 0.05}],
    "NAdam": [{}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "decoupled_weight_decay": True},
              {"momentum_decay": 0.05}, {"betas": (0.8, 0.9)}, {"eps": 1e-3},
              {"betas": (0.85, 0.95), "eps": 1e-4, "weight_decay": 0.05, "momentum_decay": 0.01,
               "decoupled_weight_decay": True}],
    # betas (0.8, 0.9): ρ_t passes 5 at step 6 (as with the default β2 = 0.999), then nears ρ∞ = 19
    "RAdam": [{}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "decoupled_weight_decay": True},
              {"betas": (0.8, 0.9)}, {"eps": 1e-3},
              {"betas": (0.85, 0.9), "eps": 1e-4, "weight_decay": 0.05, "decoupled_weight_decay": True}],
}
CASES = [(name, options) for name, cases in TORCH_CASES.items() for options in cases]
CASE_IDS = [name + "-" + ("-".join(f"{k}={v}" for k, v in options.items()) or "defaults") for name, options in CASES]

SHAPES = [(4, 3), (3,), (2, 2, 2), ()]
STEPS = 20


def groups_of(params, base_lr):
    """Two parameter groups, the second with three times the learning rate and its own weight decay."""
    return [{"params": params[:2]}, {"params": params[2:], "lr": 3 * base_lr, "weight_decay": 0.02}]


@pytest.fixture
def torch_float64():
    """torch, with float64 as its default dtype while the test runs. (NAdam keeps "mu_product" in a
    tensor of the default dtype; in float32 it would be rounded at every step.)"""
    torch = pytest.importorskip("torch")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield torch
    torch.set_default_dtype(default)


def trajectories(torch, name, options, dtype):
    """The same start and the same fixed random gradients through minigrad's and torch's optimizer.
    Yields, before the first step and after each step, the pairs (minigrad parameter, torch tensor)
    and the two optimizers."""
    rng = np.random.default_rng(7)
    start = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    base_lr = options.get("lr", getattr(optim, name)([param(0.0)]).defaults["lr"])
    params = [param(v, dtype) for v in start]
    tensors = [torch.tensor(v, requires_grad=True) for v in start]
    mine = getattr(optim, name)(groups_of(params, base_lr), **options)
    theirs = getattr(torch.optim, name)(groups_of(tensors, base_lr), **options)
    yield list(zip(params, tensors)), mine, theirs
    for step_grads in grads:
        run(mine, params, [step_grads])
        for t, g in zip(tensors, step_grads):
            t.grad = torch.tensor(g)
        theirs.step()
        yield list(zip(params, tensors)), mine, theirs


def assert_same_state(mine, theirs, p, t, rtol, atol):
    """Every buffer minigrad keeps, under PyTorch's key, equal to PyTorch's."""
    assert set(mine.state[p]) == set(theirs.state[t])
    for key, value in mine.state[p].items():
        expected = theirs.state[t][key]
        if isinstance(value, np.ndarray):
            assert value.dtype == p.dtype
            np.testing.assert_allclose(value, expected.numpy(), rtol=rtol, atol=atol, err_msg=key)
        else:
            assert value == pytest.approx(float(expected), rel=rtol), key


@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
def test_matches_torch_float64(torch_float64, name, options):
    for pairs, mine, theirs in trajectories(torch_float64, name, options, np.float64):
        for p, t in pairs:
            # the values are O(1); atol for a coordinate that passes near zero
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    for p, t in pairs:
        assert_same_state(mine, theirs, p, t, rtol=1e-12, atol=1e-14)
        assert mine.state[p]["step"] == STEPS == int(theirs.state[t]["step"])


K_ROUNDINGS = 10  # the most operations from g and the buffers to a step Δ, in any of the five rules


@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
def test_matches_torch_float32(name, options):
    """Both compute in float32 but round at different places (fused multiply-adds, lerp, the order
    of products), so they drift apart by a few roundings per step. With ε = float32's epsilon, a
    rounding is off by at most ε/2 of its result; at step t, for each coordinate,
      - θ ← θ − Δ rounds once on each side: at most ε·|θ| apart;
      - Δ is a chain of at most K = 10 operations on g and the buffers: at most K·ε·|Δ|;
      - the buffers (sums, running averages) take at most one more rounding a step, so they are at
        most t·ε relatively apart, which reaches Δ as at most t·ε·|Δ|.
    The bound after T steps sums ε·(|θ_t| + (K + t)·|Δ_t|) over t ≤ T, with |θ_t| and |Δ_t| the largest
    over the parameter's coordinates (an operation errs relative to its terms, not to a result that
    cancellation made small)."""
    torch = pytest.importorskip("torch")
    eps = float(np.finfo(np.float32).eps)
    steps = trajectories(torch, name, options, np.float32)
    pairs, _, _ = next(steps)
    before = [t.detach().numpy().astype(np.float64) for _, t in pairs]
    bound = [0.0] * len(pairs)
    for step, (pairs, mine, _) in enumerate(steps, start=1):
        for i, (p, t) in enumerate(pairs):
            theirs = t.detach().numpy().astype(np.float64)
            delta = np.abs(theirs - before[i]).max()
            bound[i] += eps * (np.abs(theirs).max() + (K_ROUNDINGS + step) * delta)
            assert p.dtype == np.float32
            error = np.abs(p.numpy().astype(np.float64) - theirs).max()
            assert error <= bound[i], f"step {step}, parameter {i}: {error:.3g} > {bound[i]:.3g}"
            before[i] = theirs
    assert all(mine.state[p]["step"] == STEPS for p, _ in pairs)


# ---------------------------------------------------------------------------- by hand, without torch
def test_adagrad_first_two_steps():
    """s starts at initial_accumulator_value a; the step size lr/(1 + (t − 1)η) shrinks with t."""
    lr, eta, a = 0.1, 0.5, 0.25
    p = param(P0)
    run(optim.Adagrad([p], lr=lr, lr_decay=eta, initial_accumulator_value=a, eps=0.0), [p], [[G1]])
    step1 = [lr * g / math.sqrt(a + g * g) for g in G1]
    np.testing.assert_allclose(p.numpy(), P0 - step1, rtol=1e-14)
    p = param(P0)
    run(optim.Adagrad([p], lr=lr, lr_decay=eta, initial_accumulator_value=a, eps=0.0), [p], [[G1], [G2]])
    step2 = [lr / (1 + eta) * g2 / math.sqrt(a + g1 * g1 + g2 * g2) for g1, g2 in zip(G1, G2)]
    np.testing.assert_allclose(p.numpy(), P0 - step1 - step2, rtol=1e-14)


def test_adagrad_weight_decay_and_eps():
    """One step with λ = 0.1 and eps = 0.5 from s = 0: the gradient g + λθ over its own size + eps."""
    p = param(P0)
    opt = optim.Adagrad([p], lr=0.2, weight_decay=0.1, eps=0.5)
    run(opt, [p], [[G1]])
    expected = [theta - 0.2 * (g + 0.1 * theta) / (abs(g + 0.1 * theta) + 0.5) for theta, g in zip(P0, G1)]
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(opt.state[p]["sum"], (G1 + 0.1 * P0) ** 2, rtol=1e-14)


def test_adagrad_constant_gradient():
    """With a constant g, after t steps s = a + t·g², so step t is lr_t·g / √(a + t·g²)."""
    lr, eta, a, T = 0.1, 0.2, 1.0, 6
    p = param(P0)
    run(optim.Adagrad([p], lr=lr, lr_decay=eta, initial_accumulator_value=a, eps=0.0), [p], [[G1]] * T)
    total = sum(lr / (1 + (t - 1) * eta) * G1 / np.sqrt(a + t * G1 ** 2) for t in range(1, T + 1))
    np.testing.assert_allclose(p.numpy(), P0 - total, rtol=1e-13)


def test_adadelta_first_two_steps():
    lr, rho, eps = 1.0, 0.9, 1e-2
    p = param(P0)
    opt = optim.Adadelta([p], lr=lr, rho=rho, eps=eps)
    run(opt, [p], [[G1], [G2]])
    for i, (theta, g1, g2) in enumerate(zip(P0, G1, G2)):
        v1 = 0.1 * g1 ** 2                                # v and u start at 0
        d1 = math.sqrt(eps) / math.sqrt(v1 + eps) * g1    # step 1: √eps / √(v + eps) · g
        u1 = 0.1 * d1 ** 2
        v2 = 0.9 * v1 + 0.1 * g2 ** 2
        d2 = math.sqrt(u1 + eps) / math.sqrt(v2 + eps) * g2
        assert p.numpy()[i] == pytest.approx(theta - d1 - d2, rel=1e-14)
        assert opt.state[p]["acc_delta"][i] == pytest.approx(0.9 * u1 + 0.1 * d2 ** 2, rel=1e-14)


def test_adadelta_lr_and_weight_decay_scale_the_step():
    p = param(P0)
    run(optim.Adadelta([p], lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.2), [p], [[G1]])
    g = G1 + 0.2 * P0
    np.testing.assert_allclose(p.numpy(), P0 - 0.5 * math.sqrt(1e-3) * g / np.sqrt(0.5 * g * g + 1e-3), rtol=1e-14)


def test_adamax_first_two_steps():
    """Step 1: m = (1 − β1)·g, u = |g| + eps, and the bias correction cancels (1 − β1): each coordinate
    moves lr·g / (|g| + eps), which is lr·sign(g) for eps = 0."""
    lr, b1, b2 = 0.01, 0.9, 0.99
    p = param(P0)
    opt = optim.Adamax([p], lr=lr, betas=(b1, b2), eps=0.0)
    run(opt, [p], [[G1]])
    np.testing.assert_allclose(p.numpy(), P0 - lr * np.sign(G1), rtol=1e-15)
    run(opt, [p], [[G2]])
    u2 = np.maximum(b2 * np.abs(G1), np.abs(G2))
    m2 = b1 * (1 - b1) * G1 + (1 - b1) * G2
    np.testing.assert_allclose(p.numpy(), P0 - lr * np.sign(G1) - lr / (1 - b1 ** 2) * m2 / u2, rtol=1e-14)
    np.testing.assert_array_equal(opt.state[p]["exp_inf"], u2)


def test_adamax_constant_gradient_moves_lr_per_step():
    """A constant g: m̂ = g and u = |g| + eps at every step."""
    p = param(P0)
    run(optim.Adamax([p], lr=0.01, eps=0.1, weight_decay=0.0), [p], [[G1]] * 5)
    np.testing.assert_allclose(p.numpy(), P0 - 5 * 0.01 * G1 / (np.abs(G1) + 0.1), rtol=1e-13)


def nadam_mu(t, beta1=0.9, psi=4e-3):
    return beta1 * (1 - 0.5 * 0.96 ** (t * psi))


def test_nadam_first_step():
    """Step 1: m = (1 − β1)g and √v̂ = |g|, so (eps = 0) each coordinate moves
    lr·sign(g)·(1 + μ_2·(1 − β1) / (1 − μ_1·μ_2))."""
    lr = 0.01
    p = param(P0)
    opt = optim.NAdam([p], lr=lr, eps=0.0)
    run(opt, [p], [[G1]])
    mu1, mu2 = nadam_mu(1), nadam_mu(2)
    np.testing.assert_allclose(p.numpy(), P0 - lr * np.sign(G1) * (1 + mu2 * 0.1 / (1 - mu1 * mu2)), rtol=1e-14)
    assert opt.state[p]["mu_product"] == pytest.approx(mu1, rel=1e-15)


def test_nadam_constant_gradient():
    """A constant g: m = (1 − β1^t)·g and √v̂ = |g| at every step."""
    lr, psi, T = 0.01, 0.05, 6
    p = param(P0)
    run(optim.NAdam([p], lr=lr, eps=0.0, momentum_decay=psi), [p], [[G1]] * T)
    mus = [nadam_mu(t, psi=psi) for t in range(1, T + 2)]
    products = np.cumprod(mus)  # products[t − 1] = μ_1⋯μ_t
    total = sum((1 - mus[t - 1]) / (1 - products[t - 1]) + mus[t] * (1 - 0.9 ** t) / (1 - products[t])
                for t in range(1, T + 1))
    np.testing.assert_allclose(p.numpy(), P0 - lr * np.sign(G1) * total, rtol=1e-13)


@pytest.mark.parametrize("decoupled", [False, True])
def test_nadam_weight_decay(decoupled):
    lr, wd = 0.01, 0.1
    p = param(P0)
    run(optim.NAdam([p], lr=lr, eps=0.0, weight_decay=wd, decoupled_weight_decay=decoupled), [p], [[G1]])
    factor = 1 + nadam_mu(2) * 0.1 / (1 - nadam_mu(1) * nadam_mu(2))
    if decoupled:  # θ shrinks by lr·λ·θ, the gradient is g itself
        expected = P0 * (1 - lr * wd) - lr * np.sign(G1) * factor
    else:          # the gradient is g + λθ
        expected = P0 - lr * np.sign(G1 + wd * P0) * factor
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-14)


def test_radam_first_steps_are_momentum_then_rectified():
    """ρ_1 = 1: step 1 is θ − lr·g. With a constant g, m̂ = g and √(v/(1 − β2^t)) = |g|; with the
    default β2 = 0.999, ρ_5 ≈ 4.99 and ρ_6 ≈ 5.99, so steps 1 to 5 move lr·g and step 6 moves lr·r_6·sign(g)."""
    lr, b2 = 0.01, 0.999
    p = param(P0)
    opt = optim.RAdam([p], lr=lr, eps=0.0)
    run(opt, [p], [[G1]])
    np.testing.assert_allclose(p.numpy(), P0 - lr * G1, rtol=1e-15)
    run(opt, [p], [[G1]] * 4)
    np.testing.assert_allclose(p.numpy(), P0 - 5 * lr * G1, rtol=1e-13)
    rho_inf = (1 + b2) / (1 - b2)
    rho_6 = rho_inf - 12 * b2 ** 6 / (1 - b2 ** 6)
    assert 5 < rho_6 < 6
    r_6 = math.sqrt((rho_6 - 4) * (rho_6 - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_6))
    run(opt, [p], [[G1]])
    np.testing.assert_allclose(p.numpy(), P0 - 5 * lr * G1 - lr * r_6 * np.sign(G1), rtol=1e-13)


@pytest.mark.parametrize("decoupled", [False, True])
def test_radam_weight_decay(decoupled):
    lr, wd = 0.01, 0.1
    p = param(P0)
    run(optim.RAdam([p], lr=lr, weight_decay=wd, decoupled_weight_decay=decoupled), [p], [[G1]])
    expected = P0 * (1 - lr * wd) - lr * G1 if decoupled else P0 - lr * (G1 + wd * P0)
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-15)


CONVERGING = {
    "Adagrad": lambda ps: optim.Adagrad(ps, lr=0.5),
    "Adadelta": lambda ps: optim.Adadelta(ps),
    "Adamax": lambda ps: optim.Adamax(ps, lr=0.05),
    "NAdam": lambda ps: optim.NAdam(ps, lr=0.05),
    "RAdam": lambda ps: optim.RAdam(ps, lr=0.05),
}


@pytest.mark.parametrize("name", NAMES)
def test_converges_on_a_quadratic(name):
    """½·Σ a_i (w_i − c_i)², curvatures 0.1 to 10, gradients from backward()."""
    a, c = mg.tensor(np.array([1.0, 10.0, 0.1])), mg.tensor(np.array([1.0, -2.0, 3.0]))
    w = param(np.zeros(3))
    opt = CONVERGING[name]([w])
    losses = []
    for _ in range(1000):
        opt.zero_grad()
        loss = (a * (w - c) ** 2).sum() * 0.5
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-12 * losses[0]
    np.testing.assert_allclose(w.numpy(), [1.0, -2.0, 3.0], atol=1e-5)


# ---------------------------------------------------------------------------- state, dtypes, arguments
OPTIMIZERS = {
    "Adagrad": lambda ps: optim.Adagrad([{"params": ps[:1], "lr": 0.05}, {"params": ps[1:]}], lr_decay=0.01,
                                        weight_decay=0.01, initial_accumulator_value=0.1),
    "Adadelta": lambda ps: optim.Adadelta([{"params": ps[:1], "lr": 0.5}, {"params": ps[1:]}], weight_decay=0.01),
    "Adamax": lambda ps: optim.Adamax([{"params": ps[:1], "lr": 0.01}, {"params": ps[1:]}], weight_decay=0.01),
    "NAdam": lambda ps: optim.NAdam([{"params": ps[:1], "lr": 0.01}, {"params": ps[1:]}], weight_decay=0.01,
                                    decoupled_weight_decay=True),
    "RAdam": lambda ps: optim.RAdam([{"params": ps[:1], "lr": 0.01}, {"params": ps[1:]}], weight_decay=0.01),
}


def plain_data_only(obj):
    if isinstance(obj, dict):
        return all(isinstance(k, str) and plain_data_only(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(plain_data_only(v) for v in obj)
    return isinstance(obj, (np.ndarray, int, float, str, bool)) or obj is None


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_continues_bit_identically(name):
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (3,), (2, 2, 2)]
    params = [param(rng.standard_normal(s), np.float32) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(12)]
    grads[1][2] = None  # one parameter a step behind the others
    opt = OPTIMIZERS[name](params)
    run(opt, params, grads[:4])  # (RAdam: rectified steps start after the reload)

    state = opt.state_dict()
    assert plain_data_only(state)
    assert state["state"]["2"]["step"] == 3
    copies = [param(p.numpy().copy(), np.float32) for p in params]
    fresh = OPTIMIZERS[name](copies)
    for group in fresh.param_groups:
        group["lr"] = 123.0  # hyper-parameters are restored by load_state_dict too
    fresh.load_state_dict(state)
    assert [g["lr"] for g in fresh.param_groups] == [g["lr"] for g in opt.param_groups]

    run(opt, params, grads[4:])
    run(fresh, copies, grads[4:])
    for p, c in zip(params, copies):
        np.testing.assert_array_equal(p.numpy(), c.numpy())
        assert c.dtype == np.float32
        for key, value in fresh.state[c].items():
            if isinstance(value, np.ndarray):
                assert value.dtype == np.float32
                np.testing.assert_array_equal(value, opt.state[p][key])
            else:
                assert value == opt.state[p][key]
    # the saved dict holds copies: stepping did not change it
    for key, saved in state["state"].items():
        for buffer in saved.values():
            if isinstance(buffer, np.ndarray):
                assert not any(buffer is b for b in opt.state[params[int(key)]].values())


@pytest.mark.parametrize("name", NAMES)
def test_float32_stays_float32_even_with_float64_gradients(name):
    """A float64 gradient on a float32 parameter is taken in float32: the same bits as with the
    gradient rounded to float32 first."""
    rng = np.random.default_rng(1)
    start = rng.standard_normal((8, 8))
    p, q = param(start, np.float32), param(start, np.float32)
    opt, twin = OPTIMIZERS[name]([p, param(P0, np.float32)]), OPTIMIZERS[name]([q, param(P0, np.float32)])
    for _ in range(4):
        g = rng.standard_normal((8, 8))
        p.grad = g.copy()  # float64
        opt.step()
        np.testing.assert_array_equal(p.grad, g)  # read, not changed
        run(twin, [q], [[g.astype(np.float32)]])
    assert p.dtype == np.float32 and p.numpy().dtype == np.float32
    buffers = [v for v in opt.state[p].values() if isinstance(v, np.ndarray)]
    assert buffers and all(b.dtype == np.float32 for b in buffers)
    assert not np.array_equal(p.numpy(), start.astype(np.float32))
    np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("name", NAMES)
def test_params_without_grad_are_skipped_and_updates_are_in_place(name):
    a, b = param(P0), param(P0)
    opt = OPTIMIZERS[name]([a, b])
    array = a.numpy()
    run(opt, [a, b], [[G1, None], [G2, None]])
    np.testing.assert_array_equal(b.numpy(), P0)
    assert b._version == 0 and b not in opt.state
    assert a._version == 2 and a.numpy() is array and opt.state[a]["step"] == 2
    assert not np.array_equal(a.numpy(), P0)


def test_defaults_are_pytorchs():
    defaults = {name: getattr(optim, name)([param(P0)]).defaults for name in NAMES}
    assert defaults["Adagrad"] == dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10)
    assert defaults["Adadelta"] == dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0)
    assert defaults["Adamax"] == dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    assert defaults["NAdam"] == dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                                     decoupled_weight_decay=False)
    assert defaults["RAdam"] == dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                                     decoupled_weight_decay=False)
    assert all(name in optim.__all__ for name in NAMES)


BAD_ARGUMENTS = {
    "Adagrad": [{"lr": -1}, {"lr_decay": -0.1}, {"weight_decay": -1}, {"initial_accumulator_value": -1},
                {"eps": -1}],
    "Adadelta": [{"lr": -1}, {"rho": 1.5}, {"rho": -0.1}, {"eps": -1}, {"weight_decay": -1}],
    "Adamax": [{"lr": -1}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)}, {"betas": (0.9,)}, {"eps": -1},
               {"weight_decay": -1}],
    "NAdam": [{"lr": -1}, {"betas": (0.9, 1.0)}, {"eps": -1}, {"weight_decay": -1}, {"momentum_decay": -1}],
    "RAdam": [{"lr": -1}, {"betas": (-0.1, 0.9)}, {"eps": -1}, {"weight_decay": -1}, {"lr": float("nan")}],
}


@pytest.mark.parametrize("name, bad", [(n, b) for n, bads in BAD_ARGUMENTS.items() for b in bads])
def test_bad_arguments_raise(name, bad):
    with pytest.raises(ValueError, match=f"{name}: {next(iter(bad))}"):
        getattr(optim, name)([param(P0)], **bad)


@pytest.mark.parametrize("name", NAMES)
def test_a_single_tensor_or_an_empty_list_raise(name):
    with pytest.raises(TypeError, match="single Tensor"):
        getattr(optim, name)(param(P0))
    with pytest.raises(ValueError, match="empty"):
        getattr(optim, name)([])


# ---------------------------------------------------------------------------- minigrad.compile
@pytest.mark.parametrize("name", NAMES)
def test_a_compiled_training_step_gives_the_eager_parameters(name):
    """A small tanh network; the optimizer also holds a parameter the loss never uses (its grad stays
    None). Eager and compiled runs give the same bits: a replay calls the optimizer's step again."""
    rng = np.random.default_rng(5)
    X = mg.tensor(rng.standard_normal((16, 3)).astype(np.float32))
    Y = mg.tensor(rng.standard_normal((16, 2)).astype(np.float32))
    start = [rng.standard_normal(s).astype(np.float32) for s in [(3, 8), (8,), (8, 2), (5,)]]
    steps = 7
    results = []
    for compiled in (False, True):
        params = [param(v, np.float32) for v in start]
        W1, b1, W2, _unused = params
        opt = OPTIMIZERS[name](params)

        def step(x, y):
            opt.zero_grad()
            loss = (((x @ W1 + b1).tanh() @ W2 - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        step = mg.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a compiled step that fell back to eager would warn
            losses = [step(X, Y).item() for _ in range(steps)]
        if compiled:
            assert step.stats == {"eager": 1, "recorded": 1, "replayed": steps - 2}
        results.append((losses, [p.numpy().copy() for p in params], opt))
    (eager, eager_params, eager_opt), (replayed, replayed_params, replayed_opt) = results
    assert replayed == eager
    assert eager[-1] < eager[0]
    for p, q in zip(eager_params, replayed_params):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(replayed_params[3], start[3])  # no gradient: never moved
    assert [s["step"] for s in replayed_opt.state.values()] == [steps] * 3


# ---------------------------------------------------------------------------- Rprop, LBFGS and closures
A_FIT = np.random.default_rng(3).standard_normal((20, 5))
B_FIT = np.random.default_rng(4).standard_normal(20)


def fit(lib, make, steps):
    """Minimise mean((A w - b)^2) + 0.1 sum(w^4) with optimizer make([w]), stepping with a closure;
    the losses step() returned and the final w."""
    w = lib.tensor(np.zeros(5), requires_grad=True)
    opt = make(lib, [w])
    a, b = lib.tensor(A_FIT), lib.tensor(B_FIT)
    losses = []
    for _ in range(steps):
        def closure():
            opt.zero_grad()
            loss = ((a @ w - b) ** 2).mean() + (w ** 4).sum() * 0.1
            loss.backward()
            return loss
        losses.append(float(opt.step(closure).detach()))
    return losses, w.detach().numpy()


def test_rprop_follows_its_rule_by_hand():
    p = param([1.0, -2.0, 3.0])
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 1.2), step_sizes=(1e-3, 0.15))
    run(opt, [p], [[[1.0, -1.0, 2.0]], [[2.0, 1.0, 0.0]], [[1.0, 1.0, -1.0]]])
    # step sizes: 0.1 everywhere; then ×1.2 (same sign, capped at 0.15) or ×0.5 (flip, and no move)
    # w0: -0.1, then -0.12, then -0.144   w1: +0.1, then flip: no move (g set to 0), then g_prev 0: +0.05
    # w2: -0.1, then g = 0: no move, then g_prev 0: +0.1
    np.testing.assert_allclose(p.numpy(), [1.0 - 0.1 - 0.12 - 0.144, -2.0 + 0.1 - 0.05, 3.0 - 0.1 + 0.1])


@pytest.mark.parametrize("name, make", [
    ("Rprop", lambda lib, ps: lib.optim.Rprop(ps, lr=0.01)),
    ("LBFGS", lambda lib, ps: lib.optim.LBFGS(ps, lr=0.5, max_iter=10, history_size=3)),
    ("LBFGS-defaults", lambda lib, ps: lib.optim.LBFGS(ps)),
    ("SGD-closure", lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9)),
])
def test_closure_optimizers_match_torch(name, make):
    torch = pytest.importorskip("torch")
    ours, theirs = fit(mg, make, 6), fit(torch, make, 6)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-12)


def test_lbfgs_solves_a_quadratic_in_a_few_steps_and_round_trips_its_state():
    losses, w = fit(mg, lambda lib, ps: lib.optim.LBFGS(ps, history_size=5), 4)
    assert losses[-1] < 0.6 * losses[0]
    w2 = mg.tensor(np.zeros(5), requires_grad=True)
    opt = optim.LBFGS([w2], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((w2 - 1.0) ** 4).sum()
        loss.backward()
        return loss

    opt.step(closure)
    twin = optim.LBFGS([mg.tensor(w2.numpy().copy(), requires_grad=True)], max_iter=3)
    twin.load_state_dict(opt.state_dict())
    saved, loaded = opt.state[w2], twin.state[twin.param_groups[0]["params"][0]]
    assert loaded["n_iter"] == saved["n_iter"] > 0 and len(loaded["dirs"]) == len(saved["dirs"])
    with pytest.raises(NotImplementedError, match="line_search_fn='strong_wolfe'"):
        optim.LBFGS([w2], line_search_fn="strong_wolfe")


def test_every_optimizer_step_takes_a_closure_and_returns_its_loss():
    for cls in (optim.SGD, optim.Adam, optim.RMSprop, optim.Adagrad, optim.Rprop):
        w = mg.tensor([1.0, 2.0], requires_grad=True)
        opt = cls([w], lr=0.1)

        def closure():
            opt.zero_grad()
            loss = (w ** 2).sum()
            loss.backward()
            return loss

        assert opt.step(closure).item() == 5.0 and opt.step() is None
        assert np.all(np.abs(w.numpy()) < [1.0, 2.0])
