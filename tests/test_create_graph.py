"""Gradients of gradients: `minigrad.grad(..., create_graph=True)` and `backward(create_graph=True)`
compute each op's gradient with tensor ops (its `gradient`), so the result can be differentiated
again. Checked against central differences of the first gradient (float64, every element), against
derivatives worked out by hand, and against PyTorch when it is installed."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F

EPS = 1e-6


def numeric_jacobian(grad_fn, x0):
    """d grad_fn(x)/dx at x0 by central differences: (n_out, n_in)."""
    cols = []
    for j in range(x0.size):
        step = np.zeros_like(x0)
        step.flat[j] = EPS
        cols.append((grad_fn(x0 + step) - grad_fn(x0 - step)).ravel() / (2 * EPS))
    return np.stack(cols, axis=1)


def hessian_by_create_graph(f, x0):
    """Row i of the Hessian: the gradient of (df/dx)_i, through create_graph=True."""
    x = mg.tensor(x0, requires_grad=True)
    (g,) = mg.grad(f(x), x, create_graph=True)
    flat = g.reshape(-1)
    rows = [mg.grad(flat[i], x, retain_graph=True, allow_unused=True)[0] for i in range(x0.size)]
    return np.stack([np.zeros(x0.size) if r is None else r.numpy().ravel() for r in rows])


def first_gradient(f):
    def grad_at(x0):
        x = mg.tensor(x0, requires_grad=True)
        f(x).backward()
        return x.grad.numpy()

    return grad_at


FUNCTIONS = {
    "polynomial": lambda x: (x ** 3).sum() + (x * x * 2.0).sum() - (x / (x * x + 1.0)).sum(),
    "elementwise": lambda x: (x.sin() * x.exp()).sum() + x.tanh().sum() + x.sigmoid().mean() + x.cos().sum(),
    "roots-and-logs": lambda x: ((x * x + 1.0).sqrt() + (x * x + 2.0).log()).sum(),
    "softmaxes": lambda x: (x.reshape(2, 3).softmax(-1) * mg.tensor(np.arange(6.0).reshape(2, 3))).sum()
    + x.reshape(2, 3).log_softmax(0).sum() * 0.5,
    "matrix-products": lambda x: ((x.reshape(2, 3) @ x.reshape(3, 2)).tanh() ** 2).sum(),
    "shapes": lambda x: (x.reshape(3, 2).t()[1] * x[:3].flip(0)).sum() + x.reshape(2, 3).mean(1).exp().sum(),
    "masks": lambda x: mg.where(x > 0, x * x, x * 3.0).sum() + x.masked_fill(x < -0.5, 0.0).pow(3).sum()
    + mg.maximum(x, x * 0.5).square().sum() + x.reshape(2, 3).tril().abs().sum(),
    "norms": lambda x: x.reshape(2, 3).norm(2, dim=1).sum() + x.norm(1) * x.norm(),
    "joins": lambda x: (mg.cat([x[:2], x.exp()[2:]]) * mg.stack([x, x.sign() + x], 1).sum(1)).pow(2).sum(),
    # the fused ops: their gradient written again in tensor ops beside their kernels
    "gelu": lambda x: (F.gelu(x) * x).sum() + (F.gelu(x * 0.7, approximate="tanh") ** 2).sum() + x.erf().sum(),
    "layer_norm": lambda x: (F.layer_norm(x.reshape(2, 3), 3, x[:3] * 0.5 + 1.0, x[3:]) ** 3).sum(),
    "cross_entropy": lambda x: F.cross_entropy(x.reshape(2, 3) * 1.5, np.array([2, 0])) * 2.0
    + F.cross_entropy(x.reshape(3, 2), np.array([1, -100, 0]), label_smoothing=0.2, reduction="sum")
    + (F.cross_entropy(x.reshape(2, 3), np.array([1, 2]), reduction="none") ** 2).sum(),
    "masked_softmax": lambda x: (x.reshape(2, 3).softmax(-1, mask=np.array([[True, False, True]]), scale=0.8)
                                 * mg.tensor(np.arange(6.0).reshape(2, 3))).sum(),
    "embedding": lambda x: (F.embedding(np.array([[0, 2], [2, 1]]), x.reshape(3, 2), padding_idx=1) ** 3).sum(),
}
X0 = np.array([0.3, -0.7, 1.2, 0.45, -0.2, 0.9])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_hessian_by_create_graph_is_the_jacobian_of_the_gradient(name):
    f = FUNCTIONS[name]
    np.testing.assert_allclose(hessian_by_create_graph(f, X0), numeric_jacobian(first_gradient(f), X0),
                               rtol=1e-5, atol=1e-6)


def test_third_derivatives_and_backward_with_create_graph():
    x = mg.tensor(np.array([1.5, -0.5]), requires_grad=True)
    (g,) = mg.grad((x ** 4).sum(), x, create_graph=True)  # 4x^3
    (h,) = mg.grad(g.sum(), x, create_graph=True)  # 12x^2
    (t,) = mg.grad(h.sum(), x)  # 24x
    np.testing.assert_allclose(t.numpy(), 24 * x.numpy())
    y = mg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (y ** 2 * y.exp()).sum().backward(create_graph=True)  # .grad = (2y + y^2) e^y, with a graph
    assert y.grad.requires_grad
    (hh,) = mg.grad((y.grad ** 2).sum(), y)  # d/dy of ((2y + y^2) e^y)^2
    v = y.numpy()
    first = (2 * v + v ** 2) * np.exp(v)
    np.testing.assert_allclose(hh.numpy(), 2 * first * (2 + 4 * v + v ** 2) * np.exp(v), rtol=1e-12)


def mlp(x, w1, b1, w2):
    return F.linear(F.linear(x, w1, b1).tanh(), w2).sum()


def penalty(x, w1, b1, w2):
    """WGAN-GP's gradient penalty: (|d out/dx| - 1)^2, averaged over the rows."""
    (gx,) = mg.grad(mlp(x, w1, b1, w2), x, create_graph=True)
    return ((gx.norm(2, dim=1) - 1) ** 2).mean()


RNG = np.random.default_rng(0)
W1, B1, W2, XS = RNG.standard_normal((8, 3)), RNG.standard_normal(8), RNG.standard_normal((1, 8)), \
    RNG.standard_normal((5, 3))


def test_a_gradient_penalty_has_the_gradient_of_its_central_differences():
    w1 = mg.tensor(W1, requires_grad=True)
    penalty(mg.tensor(XS, requires_grad=True), w1, mg.tensor(B1), mg.tensor(W2)).backward()

    def value(w):
        with mg.enable_grad():
            return penalty(mg.tensor(XS, requires_grad=True), mg.tensor(w, requires_grad=True), mg.tensor(B1),
                           mg.tensor(W2)).item()

    numeric = np.zeros_like(W1)
    for j in range(W1.size):
        step = np.zeros_like(W1)
        step.flat[j] = EPS
        numeric.flat[j] = (value(W1 + step) - value(W1 - step)) / (2 * EPS)
    np.testing.assert_allclose(w1.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_a_gradient_penalty_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = [mg.tensor(a, requires_grad=True) for a in (XS, W1, B1, W2)]
    penalty(*ours).backward()
    theirs = [torch.tensor(a, requires_grad=True) for a in (XS, W1, B1, W2)]
    out = torch.nn.functional.linear(torch.nn.functional.linear(theirs[0], theirs[1], theirs[2]).tanh(),
                                     theirs[3]).sum()
    (gx,) = torch.autograd.grad(out, theirs[0], create_graph=True)
    ((gx.norm(2, dim=1) - 1) ** 2).mean().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_an_op_without_a_gradient_in_tensor_ops_is_named():
    x = mg.tensor(np.array([0.5, 1.0]), requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"create_graph=True: CumSum's gradient is not written in tensor "
                                                  r"ops .* The ops that have one: .*Mul"):
        mg.grad(x.cumsum(0).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="a 3-norm"):
        mg.grad(x.norm(3), x, create_graph=True)
