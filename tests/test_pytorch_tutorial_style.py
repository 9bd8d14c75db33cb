"""PyTorch code, run on minigrad: a cubic polynomial fitted to sin(x) on linspace(-pi, pi, 2000),
in the ways PyTorch's "Learning PyTorch with Examples" teaches (by-hand updates under no_grad with
`-=`, a custom autograd.Function, nn + MSELoss(reduction='sum'), an optimizer). Written with
`import minigrad as torch`, so each reads as PyTorch code; where PyTorch is installed, each run is
repeated on it from the same initial weights and must agree."""
import math

import numpy as np
import pytest

import minigrad as torch

# float32 runs of 2000 steps, each summing 2000 points in another order than PyTorch: the two
# runs differ by float32 rounding only (measured: losses within 1.4e-6, coefficients within 3e-8)
AGREE = {"rtol": 1e-5, "atol": 1e-7}
# RMSprop's steps keep a size of about lr however small the gradient, so near the minimum the
# coefficients jitter, and a rounding difference changes which way a step goes: the two runs
# (float64) follow the same descent, then jitter differently (measured: losses within 2.6% at
# some steps, within 2e-3 every 100th step, coefficients within 5e-6)
JITTER = {"rtol": 2e-3, "atol": 1e-5}


def data(lib, dtype=None):
    x = lib.linspace(-math.pi, math.pi, 2000, dtype=dtype or lib.float)
    return x, lib.sin(x)


def pytorch():
    return pytest.importorskip("torch")


# ----------------------------------------------------------------------------- tensors and autograd
def fit_by_hand(lib, start, steps=2000, learning_rate=1e-6):
    """PyTorch's autograd example: four 0-d leaves, updated by hand under no_grad."""
    device = lib.device("cuda" if lib.cuda.is_available() else "cpu")
    x, y = data(lib)
    a, b, c, d = (lib.tensor(v, dtype=lib.float, device=device, requires_grad=True) for v in start)
    losses = []
    for _ in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [t.item() for t in (a, b, c, d)], [t.is_leaf and t.requires_grad for t in (a, b, c, d)]


START = (-0.4, 0.9, 0.3, -0.6)


def test_by_hand_updates_under_no_grad_fit_the_cubic():
    losses, coefficients, still_leaves = fit_by_hand(torch, START)
    assert all(still_leaves)
    assert losses[-1] < losses[0] / 50 and losses[-1] < 30  # PyTorch's tutorial ends near 9-15
    assert coefficients[1] == pytest.approx(0.85, abs=0.05) and coefficients[3] == pytest.approx(-0.092, abs=0.01)


def test_by_hand_updates_agree_with_pytorch():
    pt = pytorch()
    losses, coefficients, _ = fit_by_hand(torch, START)
    reference_losses, reference, _ = fit_by_hand(pt, START)
    np.testing.assert_allclose(losses[::100], reference_losses[::100], **AGREE)
    np.testing.assert_allclose(coefficients, reference, **AGREE)


# ----------------------------------------------------------------------------- a custom Function
class LegendreP3(torch.autograd.Function):
    """P3(x) = (5x^3 - 3x) / 2, the Legendre polynomial of degree 3; P3'(x) = (15x^2 - 3) / 2."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def fit_legendre(lib, function, steps=2000, learning_rate=5e-6):
    x, y = data(lib)
    a, b, c, d = (lib.full((), v, dtype=lib.float, device="cpu", requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
    losses = []
    for _ in range(steps):
        y_pred = a + b * function.apply(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for t in (a, b, c, d):
                t -= learning_rate * t.grad
                t.grad = None
    return losses, [t.item() for t in (a, b, c, d)]


def test_custom_function_is_gradient_checked():
    x = torch.randn(7, dtype=torch.double, requires_grad=True)
    assert torch.gradcheck(LegendreP3.apply, [x], atol=1e-7, rtol=1e-5)


def test_custom_function_fits_the_cubic():
    losses, (a, b, c, d) = fit_legendre(torch, LegendreP3)
    assert losses[-1] < losses[0] / 5 and losses[-1] < 10  # PyTorch's tutorial ends near 8.9
    assert b == pytest.approx(-2.2, abs=0.1) and d == pytest.approx(0.255, abs=0.01)


def test_custom_function_agrees_with_pytorch():
    pt = pytorch()

    class TorchLegendreP3(pt.autograd.Function):
        forward, backward = LegendreP3.forward, LegendreP3.backward

    losses, coefficients = fit_legendre(torch, LegendreP3)
    reference_losses, reference = fit_legendre(pt, TorchLegendreP3)
    np.testing.assert_allclose(losses[::100], reference_losses[::100], **AGREE)
    np.testing.assert_allclose(coefficients, reference, **AGREE)


# ----------------------------------------------------------------------------- nn, and an optimizer
def polynomial_model(lib, weight, bias, dtype):
    """Linear(3, 1) on (x, x^2, x^3), then Flatten(0, 1): the cubic as a network."""
    model = lib.nn.Sequential(lib.nn.Linear(3, 1, dtype=dtype), lib.nn.Flatten(0, 1))
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(weight))
        model[0].bias.copy_(lib.tensor(bias))
    return model


def fit_nn(lib, weight, bias, make_optimizer=None, steps=2000, learning_rate=1e-6, double=False):
    x, y = data(lib, lib.double if double else lib.float)
    p = lib.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = polynomial_model(lib, weight, bias, x.dtype)
    loss_fn = lib.nn.MSELoss(reduction="sum")
    optimizer = make_optimizer(lib, model) if make_optimizer else None
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        if optimizer:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            model.zero_grad()
            loss.backward()
            with lib.no_grad():
                for param in model.parameters():
                    param -= learning_rate * param.grad
    linear = model[0]
    return losses, [linear.bias.item()] + [linear.weight[:, i].item() for i in range(3)]


WEIGHT, BIAS = [[0.3, -0.2, 0.1]], [0.05]


def rmsprop(lib, model):
    return lib.optim.RMSprop(model.parameters(), lr=1e-3)


@pytest.mark.parametrize("make_optimizer", [None, rmsprop], ids=["by-hand", "rmsprop"])
def test_nn_model_fits_the_cubic(make_optimizer):
    losses, (a, b, c, d) = fit_nn(torch, WEIGHT, BIAS, make_optimizer)
    assert losses[-1] < losses[0] / 100 and losses[-1] < 15  # PyTorch's tutorial ends near 9
    assert b == pytest.approx(0.85, abs=0.05) and d == pytest.approx(-0.092, abs=0.01)


@pytest.mark.parametrize("make_optimizer, steps, double, tolerance",
                         [(None, 2000, False, AGREE), (rmsprop, 1000, True, JITTER)], ids=["by-hand", "rmsprop"])
def test_nn_model_agrees_with_pytorch(make_optimizer, steps, double, tolerance):
    pt = pytorch()
    losses, coefficients = fit_nn(torch, WEIGHT, BIAS, make_optimizer, steps, double=double)
    reference_losses, reference = fit_nn(pt, WEIGHT, BIAS, make_optimizer, steps, double=double)
    np.testing.assert_allclose(losses[::100], reference_losses[::100], **tolerance)
    np.testing.assert_allclose(coefficients, reference, **tolerance)


class Polynomial3(torch.nn.Module):
    """PyTorch's custom-Module example: four scalar Parameters."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = (torch.nn.Parameter(torch.tensor(v)) for v in START)

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3


def test_custom_module_with_sgd_momentum_fits_the_cubic():
    x, y = data(torch)
    model = Polynomial3()
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
    first = None
    for _ in range(1000):
        loss = criterion(model(x), y)
        first = loss.item() if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < first / 100 and loss.item() < 15
    assert model.b.item() == pytest.approx(0.85, abs=0.05)
