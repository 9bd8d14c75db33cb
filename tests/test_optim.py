"""Optimizers, clipping and schedules against update rules written out by hand with numpy."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import optim


def param(values, dtype=np.float64):
    return mg.Tensor(np.array(values, dtype=dtype), requires_grad=True)


def run(opt, params, grads):
    """One optimizer step per entry of `grads` (a list of per-parameter gradient lists)."""
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else np.array(g, dtype=p.dtype)
        opt.step()


P0 = np.array([1.0, -2.0, 3.0])
G = [np.array([0.5, -1.0, 2.0]), np.array([-0.3, 0.2, 0.1]), np.array([1.5, 0.0, -0.7])]


# ---------------------------------------------------------------------------- SGD
def test_sgd_plain_updates_in_place_and_bumps_version():
    p = param(P0)
    array, version = p.numpy(), p._version
    run(optim.SGD([p], lr=0.1), [p], [[G[0]], [G[1]]])
    np.testing.assert_allclose(p.data, P0 - 0.1 * G[0] - 0.1 * G[1], rtol=0, atol=1e-15)
    assert p.numpy() is array
    assert p._version == version + 2


def test_sgd_momentum():
    p = param(P0)
    run(optim.SGD([p], lr=0.1, momentum=0.9), [p], [[g] for g in G])
    b1 = G[0]
    b2 = 0.9 * b1 + G[1]
    b3 = 0.9 * b2 + G[2]
    np.testing.assert_allclose(p.data, P0 - 0.1 * (b1 + b2 + b3), rtol=0, atol=1e-14)


def test_sgd_nesterov():
    p = param(P0)
    run(optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True), [p], [[g] for g in G])
    b1 = G[0]
    b2 = 0.9 * b1 + G[1]
    b3 = 0.9 * b2 + G[2]
    expected = P0 - 0.1 * (G[0] + 0.9 * b1) - 0.1 * (G[1] + 0.9 * b2) - 0.1 * (G[2] + 0.9 * b3)
    np.testing.assert_allclose(p.data, expected, rtol=0, atol=1e-14)


def test_sgd_weight_decay_does_not_change_grad():
    p = param(P0)
    opt = optim.SGD([p], lr=0.1, weight_decay=0.01)
    p.grad = G[0].copy()
    opt.step()
    np.testing.assert_allclose(p.data, P0 - 0.1 * (G[0] + 0.01 * P0), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(p.grad, G[0])


def test_sgd_dampening_skipped_on_first_step():
    p = param(P0)
    run(optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5), [p], [[g] for g in G[:2]])
    b1 = G[0]                       # first step: b = g, no dampening
    b2 = 0.9 * b1 + 0.5 * G[1]
    np.testing.assert_allclose(p.data, P0 - 0.1 * (b1 + b2), rtol=0, atol=1e-14)


def test_sgd_rejects_bad_arguments():
    p = param(P0)
    with pytest.raises(ValueError, match="lr"):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="named_parameters"):
        optim.SGD([("w", p)], lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)


# ---------------------------------------------------------------------------- Adam / AdamW
def adam_reference(p, grads, lr, b1, b2, eps, wd=0.0, decoupled=False):
    p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p - lr * wd * p
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def test_adam_bias_correction_three_steps():
    p = param(P0)
    opt = optim.Adam([p], lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    run(opt, [p], [[G[0]]])
    # with bias correction the first step is lr * sign(g) (up to eps)
    np.testing.assert_allclose(p.data, P0 - 0.01 * np.sign(G[0]), rtol=0, atol=1e-9)
    run(opt, [p], [[G[1]], [G[2]]])
    np.testing.assert_allclose(p.data, adam_reference(P0, G, 0.01, 0.9, 0.99, 1e-8), rtol=0, atol=1e-14)
    assert opt.state[p]["step"] == 3


def test_adam_weight_decay_is_l2_on_gradient():
    p = param(P0)
    run(optim.Adam([p], lr=0.01, weight_decay=0.1), [p], [[g] for g in G])
    np.testing.assert_allclose(p.data, adam_reference(P0, G, 0.01, 0.9, 0.999, 1e-8, wd=0.1), rtol=0, atol=1e-14)


def test_adamw_decouples_weight_decay():
    p, q = param(P0), param(P0)
    run(optim.AdamW([p], lr=0.01, weight_decay=0.1), [p], [[g] for g in G])
    run(optim.Adam([q], lr=0.01, weight_decay=0.1), [q], [[g] for g in G])
    expected = adam_reference(P0, G, 0.01, 0.9, 0.999, 1e-8, wd=0.1, decoupled=True)
    np.testing.assert_allclose(p.data, expected, rtol=0, atol=1e-14)
    assert np.abs(p.data - q.data).max() > 1e-6


def test_adamw_default_weight_decay():
    assert optim.AdamW([param(P0)]).param_groups[0]["weight_decay"] == 0.01
    assert optim.Adam([param(P0)]).param_groups[0]["weight_decay"] == 0.0


def test_float32_stays_float32():
    p = param(P0, np.float32)
    opt = optim.AdamW([p], lr=0.01)
    run(opt, [p], [[g] for g in G])
    assert p.dtype == np.float32
    assert opt.state[p]["exp_avg"].dtype == np.float32 and opt.state[p]["exp_avg_sq"].dtype == np.float32
    expected = adam_reference(P0, G, 0.01, 0.9, 0.999, 1e-8, wd=0.01, decoupled=True)
    np.testing.assert_allclose(p.data, expected, rtol=1e-6, atol=1e-6)


def test_adam_float64_grad_on_float32_parameter():
    p = param(P0, np.float32)
    opt = optim.Adam([p], lr=0.01, weight_decay=0.1)
    for g in G:
        p.grad = g.copy()  # float64
        opt.step()
        np.testing.assert_array_equal(p.grad, g)  # the gradient is read, not changed
    assert p.dtype == np.float32 and opt.state[p]["exp_avg"].dtype == np.float32
    expected = adam_reference(P0, G, 0.01, 0.9, 0.999, 1e-8, wd=0.1)
    np.testing.assert_allclose(p.data, expected, rtol=1e-6, atol=1e-6)


def test_adam_updates_a_non_contiguous_parameter_in_place():
    values = np.arange(12.0).reshape(3, 4) / 10
    p = mg.Tensor(np.asfortranarray(values), requires_grad=True)
    array = p.numpy()
    grads = [np.full((3, 4), 0.5), np.linspace(-1, 1, 12).reshape(3, 4)]
    run(optim.AdamW([p], lr=0.01, weight_decay=0.1), [p], [[g] for g in grads])
    assert p.numpy() is array
    expected = adam_reference(values, grads, 0.01, 0.9, 0.999, 1e-8, wd=0.1, decoupled=True)
    np.testing.assert_allclose(p.data, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
                                  lambda ps: optim.AdamW([{"params": ps[:2], "weight_decay": 0.1},
                                                          {"params": ps[2:], "weight_decay": 0.0}], lr=0.01)])
def test_adam_compiled_and_numpy_backends_agree(dtype, make):
    rng = np.random.default_rng(3)
    shapes = [(16, 33), (5, 7, 3), (33,), ()]
    start = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(5)]
    results = {}
    for backend in ("numba", "numpy"):
        with mg.use_backend(backend):
            params = [param(v, dtype) for v in start]
            opt = make(params)
            run(opt, params, grads)
            results[backend] = [(p.data, opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]) for p in params]
    # The backends round at different places. The kernel's m = beta1 m + (1 - beta1) g is
    # fma(beta1, m, (1 - beta1) g) (LLVM contracts it, with numba 0.58 as with 0.68); the twin rounds
    # both products and the sum; numpy < 2 takes a 0-d array's products in float64, unrounded
    # scalars included. Rounding costs up to u|x| of each term x (u = 2^-24, or 2^-53 in float64), so
    # an error is relative to the terms of a sum, not to the result, which cancellation can make far
    # smaller. For m: each backend's step errs by <= 1.5u (|beta1 m| + |(1 - beta1) g|) <= 1.5u G,
    # G = max|g + wd p| >= max|m|; beta1 shrinks older errors; so after T = 5 steps the backends
    # differ by <= 2 * 1.5u * T * G = 15u G (8.9e-7 G; float64: 1.7e-15 G), within tol G.
    # Example: the last step of AdamW's 0-d m is 0.9 * 0.0880 - 0.1 * 0.7726 = 0.0019; 0.5 ulp of
    # 0.08 (3.7e-9) is 2e-6 of the result, which is why tol * |m| alone is tighter than float32.
    # Scales: p's start and end for p (steps of ~lr = 0.01 are smaller), G for m, G^2 for v (whose
    # terms are all >= 0).
    tol = 1e-6 if dtype == np.float32 else 1e-14
    for i, (compiled, reference) in enumerate(zip(results["numba"], results["numpy"])):
        p_scale = max(np.abs(start[i]).max(), np.abs(reference[0]).max())
        g_scale = max(np.abs(step_grads[i]).max() for step_grads in grads) + 0.1 * p_scale  # wd <= 0.1
        for got, expected, scale in zip(compiled, reference, (p_scale, g_scale, g_scale ** 2)):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)


def test_adamw_matches_torch_with_groups_and_a_schedule():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    shapes = [(8, 16), (16,), (16, 4), (4,)]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]
    lrs = [1e-3, 3e-3, 1e-2, 1e-2, 5e-3, 1e-3]

    params = [param(v, np.float32) for v in start]
    opt = optim.AdamW([{"params": params[0::2], "weight_decay": 0.1},
                       {"params": params[1::2], "weight_decay": 0.0}], betas=(0.9, 0.95))
    tensors = [torch.tensor(v, requires_grad=True) for v in start]
    reference = torch.optim.AdamW([{"params": tensors[0::2], "weight_decay": 0.1},
                                   {"params": tensors[1::2], "weight_decay": 0.0}], betas=(0.9, 0.95))
    for lr, step_grads in zip(lrs, grads):
        for group in opt.param_groups + reference.param_groups:
            group["lr"] = lr
        run(opt, params, [step_grads])
        for t, g in zip(tensors, step_grads):
            t.grad = torch.tensor(g)
        reference.step()
    for p, t in zip(params, tensors):
        expected = t.detach().numpy()
        np.testing.assert_allclose(p.data, expected, rtol=2e-6, atol=2e-6 * np.abs(expected).max())
        state = reference.state[t]
        np.testing.assert_allclose(opt.state[p]["exp_avg_sq"], state["exp_avg_sq"].numpy(), rtol=2e-6)
        assert opt.state[p]["step"] == int(state["step"])


# ---------------------------------------------------------------------------- groups, zero_grad, None grads
def test_param_groups_with_own_hyperparameters():
    a, b = param(P0), param(P0)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "weight_decay": 0.1}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.0, 0.1]
    assert opt.param_groups[0]["momentum"] == 0.0  # missing keys take the defaults
    run(opt, [a, b], [[G[0], G[0]]])
    np.testing.assert_allclose(a.data, P0 - 0.1 * G[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(b.data, P0 - 0.5 * (G[0] + 0.1 * P0), rtol=0, atol=1e-15)


def test_zero_grad_sets_none():
    a, b = param(P0), param(P0)
    opt = optim.Adam([a, b])
    a.grad, b.grad = np.ones(3), np.ones(3)
    opt.zero_grad()
    assert a.grad is None and b.grad is None


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.AdamW(ps),
                                  lambda ps: optim.RMSprop(ps, momentum=0.9, centered=True)])
def test_params_without_grad_are_skipped(make):
    a, b = param(P0), param(P0)
    opt = make([a, b])
    run(opt, [a, b], [[G[0], None]])
    np.testing.assert_array_equal(b.data, P0)
    assert b._version == 0 and b not in opt.state
    assert a._version == 1


# ---------------------------------------------------------------------------- RMSprop
def test_rmsprop_worked_example():
    """p = (1, -2), lr = 0.1, alpha = 0.9, eps = 0; gradients (0.5, -1) then (0.5, 0).
    Step 1: v = 0.1 g², so g / √v = sign(g) / √0.1: each coordinate moves lr / √0.1 = 0.316227766.
    Step 2: v = 0.9 (0.025, 0.1) + 0.1 (0.25, 0) = (0.0475, 0.09); the first coordinate moves
    0.1 · 0.5 / √0.0475 = 0.229415734, the second (gradient 0) not at all."""
    p = param([1.0, -2.0])
    run(optim.RMSprop([p], lr=0.1, alpha=0.9, eps=0.0), [p], [[[0.5, -1.0]]])
    np.testing.assert_allclose(p.data, [0.683772234, -1.683772234], rtol=1e-9)
    p = param([1.0, -2.0])
    run(optim.RMSprop([p], lr=0.1, alpha=0.9, eps=0.0), [p], [[[0.5, -1.0]], [[0.5, 0.0]]])
    np.testing.assert_allclose(p.data, [0.683772234 - 0.229415734, -1.683772234], rtol=1e-8)


def test_rmsprop_centered_and_momentum_worked_example():
    """centered, step 1: m = 0.1 g = (0.05, -0.1), v − m² = (0.025 − 0.0025, 0.1 − 0.01) =
    (0.0225, 0.09), so d = (0.15, 0.3) and each coordinate moves 0.1 · 0.5 / 0.15 = 1/3.
    momentum 0.5, step 2 (gradients as in the plain example): b = 0.5 · 3.16227766 + 2.29415734 =
    3.87529617 and 0.5 · (−3.16227766) + 0 = −1.58113883; p moves −lr · b."""
    p = param([1.0, -2.0])
    run(optim.RMSprop([p], lr=0.1, alpha=0.9, eps=0.0, centered=True), [p], [[[0.5, -1.0]]])
    np.testing.assert_allclose(p.data, [1.0 - 1.0 / 3.0, -2.0 + 1.0 / 3.0], rtol=1e-12)
    p = param([1.0, -2.0])
    run(optim.RMSprop([p], lr=0.1, alpha=0.9, eps=0.0, momentum=0.5), [p], [[[0.5, -1.0]], [[0.5, 0.0]]])
    np.testing.assert_allclose(p.data, [0.683772234 - 0.387529617, -1.683772234 + 0.158113883], rtol=1e-8)


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1}, {"momentum": 0.9}, {"centered": True},
                                     {"alpha": 0.5, "eps": 1e-3, "weight_decay": 0.05, "momentum": 0.7,
                                      "centered": True}], ids=["plain", "wd", "momentum", "centered", "all"])
def test_rmsprop_matches_torch(options):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    start = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(6)]
    p = param(start)
    t = torch.tensor(start, requires_grad=True)
    mine, theirs = optim.RMSprop([p], lr=0.01, **options), torch.optim.RMSprop([t], lr=0.01, **options)
    for g in grads:
        p.grad, t.grad = g.copy(), torch.tensor(g)
        mine.step()
        theirs.step()
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_rmsprop_rejects_bad_arguments():
    for bad in ({"lr": -1}, {"alpha": 1.5}, {"eps": -1}, {"weight_decay": -1}, {"momentum": -0.1}):
        with pytest.raises(ValueError, match=f"RMSprop: {next(iter(bad))}"):
            optim.RMSprop([param(P0)], **bad)


# ---------------------------------------------------------------------------- state dicts
OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
    "adamw": lambda ps: optim.AdamW([{"params": ps[:1]}, {"params": ps[1:], "weight_decay": 0.0}], lr=0.01),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True, weight_decay=0.01),
}


def plain_data_only(obj):
    if isinstance(obj, dict):
        return all(isinstance(k, str) and plain_data_only(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(plain_data_only(v) for v in obj)
    return isinstance(obj, (np.ndarray, int, float, str, bool)) or obj is None


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_state_dict_round_trip_continues_bit_identically(name):
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (3,), (2, 2, 2)]
    params = [param(rng.standard_normal(s), np.float32) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(8)]
    grads[1][2] = None  # one parameter without state for a while
    opt = OPTIMIZERS[name](params)
    run(opt, params, grads[:3])

    state = opt.state_dict()
    assert plain_data_only(state)
    assert sorted(k for g in state["param_groups"] for k in g["params"]) == [0, 1, 2]
    copies = [param(p.numpy().copy(), np.float32) for p in params]
    fresh = OPTIMIZERS[name](copies)
    fresh.load_state_dict(state)

    run(opt, params, grads[3:])
    run(fresh, copies, grads[3:])
    for p, c in zip(params, copies):
        np.testing.assert_array_equal(p.data, c.data)
    # the saved dict holds copies: stepping did not change it
    for key, saved in state["state"].items():
        for buffer in saved.values():
            if isinstance(buffer, np.ndarray):
                assert not any(buffer is b for b in opt.state[params[int(key)]].values())


def test_load_state_dict_restores_hyperparameters():
    opt = optim.Adam([param(P0)], lr=0.5, betas=(0.8, 0.9))
    fresh = optim.Adam([param(P0)])
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == 0.5
    assert fresh.param_groups[0]["betas"] == (0.8, 0.9)


def test_load_state_dict_mismatches_raise():
    opt = optim.Adam([param(np.zeros((2, 3))), param(np.zeros(4))])
    run(opt, opt.param_groups[0]["params"], [[np.ones((2, 3)), np.ones(4)]])
    state = opt.state_dict()

    with pytest.raises(ValueError, match="1 parameter groups, this optimizer has 2"):
        optim.Adam([{"params": [param(np.zeros((2, 3)))]}, {"params": [param(np.zeros(4))]}]).load_state_dict(state)
    with pytest.raises(ValueError, match="group 0 has 2 parameters in the state dict, 1 here"):
        optim.Adam([param(np.zeros((2, 3)))]).load_state_dict(state)

    wrong = optim.Adam([param(np.zeros((3, 2))), param(np.zeros(5))])
    with pytest.raises(ValueError) as info:
        wrong.load_state_dict(state)
    message = str(info.value)
    assert "parameter 0 ('exp_avg'): shape (2, 3)" in message and "(3, 2)" in message
    assert "parameter 1 ('exp_avg_sq'): shape (4,)" in message and "(5,)" in message
    assert wrong.state == {}  # nothing was loaded


# ---------------------------------------------------------------------------- clip_grad_norm_
def test_clip_grad_norm_scales_all_grads_together():
    a, b, c = param([0.0, 0.0]), param([0.0]), param([0.0])
    a.grad, b.grad = np.array([3.0, 4.0]), np.array([12.0])  # total norm 13; c has no grad
    total = optim.clip_grad_norm_([a, b, c], max_norm=6.5)
    assert isinstance(total, float) and total == pytest.approx(13.0, abs=1e-12)
    scale = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(a.grad, [3.0 * scale, 4.0 * scale], rtol=1e-15)
    np.testing.assert_allclose(b.grad, [12.0 * scale], rtol=1e-15)
    assert c.grad is None
    new_norm = math.sqrt((a.grad ** 2).sum() + (b.grad ** 2).sum())
    assert new_norm == pytest.approx(6.5, rel=1e-6)


def test_clip_grad_norm_below_max_is_a_no_op():
    a = param([0.0, 0.0], np.float32)
    a.grad = np.array([3.0, 4.0], dtype=np.float32)
    assert optim.clip_grad_norm_([a], max_norm=10.0) == pytest.approx(5.0)
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
    assert a.grad.dtype == np.float32


def test_clip_grad_norm_float32_grads_summed_in_float64():
    a = param(np.zeros(4), np.float32)
    a.grad = np.full(4, 1e20, dtype=np.float32)  # squares overflow float32
    assert optim.clip_grad_norm_([a], max_norm=1.0) == pytest.approx(2e20, rel=1e-6)
    np.testing.assert_allclose(a.grad, 0.5, rtol=1e-6)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_clip_grad_norm_non_finite_is_returned_unscaled(bad):
    a = param([0.0, 0.0])
    a.grad = np.array([1.0, bad])
    total = optim.clip_grad_norm_([a], max_norm=1.0)
    assert not math.isfinite(total)
    np.testing.assert_array_equal(a.grad, [1.0, bad])


def test_clip_grad_norm_counts_a_parameter_listed_twice_once():
    # PyTorch does not de-duplicate: [w, w] gives total sqrt(2) * 5 there and scales w.grad twice
    w = param([0.0, 0.0])
    w.grad = np.array([3.0, 4.0])  # norm 5
    total = optim.clip_grad_norm_([w, w], max_norm=1.0)
    assert total == pytest.approx(5.0, abs=1e-12)
    np.testing.assert_allclose(w.grad, np.array([3.0, 4.0]) / (5.0 + 1e-6), rtol=1e-15)
    assert np.linalg.norm(np.asarray(w.grad)) == pytest.approx(1.0, rel=1e-6)


# ---------------------------------------------------------------------------- schedules
def test_cosine_with_warmup_known_steps():
    def f(step):
        return optim.cosine_with_warmup(step, max_lr=1e-3, min_lr=1e-4, warmup_steps=100, decay_steps=1100)

    assert f(0) == 0.0
    assert f(50) == pytest.approx(5e-4)
    assert f(100) == pytest.approx(1e-3)
    assert f(600) == pytest.approx((1e-3 + 1e-4) / 2)
    assert f(1100) == pytest.approx(1e-4)
    assert f(5000) == 1e-4
    values = [f(s) for s in range(0, 1200)]
    assert all(x <= y for x, y in zip(values[:100], values[1:101]))       # rises during warmup
    assert all(x >= y for x, y in zip(values[100:], values[101:]))       # then never rises
    with pytest.raises(ValueError):
        optim.cosine_with_warmup(0, 1.0, 0.1, warmup_steps=10, decay_steps=5)


def test_noam_known_steps():
    d_model, warmup = 512, 4000
    peak = d_model ** -0.5 * warmup ** -0.5
    assert optim.noam(warmup, d_model, warmup) == pytest.approx(peak)
    assert optim.noam(warmup // 2, d_model, warmup) == pytest.approx(peak / 2)
    assert optim.noam(4 * warmup, d_model, warmup) == pytest.approx(peak / 2)
    assert optim.noam(0, d_model, warmup) == optim.noam(1, d_model, warmup)
    assert optim.noam(warmup, d_model, warmup, factor=2.0) == pytest.approx(2 * peak)


def test_lambda_lr_sets_lr_from_construction_on():
    groups = [{"params": [param(P0)], "lr": 0.1}, {"params": [param(P0)], "lr": 1.0}]
    opt = optim.SGD(groups, lr=0.1)
    sched = optim.LambdaLR(opt, lambda step: 0.5 ** step)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]  # step 0
    sched.step()
    sched.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.025, 0.25])
    assert sched.last_lr == pytest.approx([0.025, 0.25]) and sched.last_step == 2


def test_warmup_cosine_lr_follows_the_function_per_group():
    groups = [{"params": [param(P0)], "lr": 1e-3}, {"params": [param(P0)], "lr": 2e-3}]
    opt = optim.AdamW(groups)
    sched = optim.WarmupCosineLR(opt, warmup_steps=10, decay_steps=50, min_lr=1e-5)
    for step in range(60):
        assert sched.last_step == step
        expected = [optim.cosine_with_warmup(step, m, 1e-5, 10, 50) for m in (1e-3, 2e-3)]
        assert [g["lr"] for g in opt.param_groups] == expected
        sched.step()


def test_noam_lr_sets_lr_directly():
    opt = optim.Adam([param(P0)], lr=123.0)
    sched = optim.NoamLR(opt, d_model=64, warmup_steps=10)
    assert opt.param_groups[0]["lr"] == optim.noam(1, 64, 10)
    for _ in range(10):
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(64 ** -0.5 * 10 ** -0.5)


def test_scheduler_state_dict_round_trip():
    opt = optim.SGD([param(P0)], lr=0.1)
    sched = optim.WarmupCosineLR(opt, warmup_steps=5, decay_steps=20, min_lr=0.01)
    for _ in range(7):
        sched.step()
    opt2 = optim.SGD([param(P0)], lr=0.1)
    sched2 = optim.WarmupCosineLR(opt2, warmup_steps=5, decay_steps=20, min_lr=0.01)
    sched2.load_state_dict(sched.state_dict())
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    sched.step()
    sched2.step()
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
