"""In-place changes of a view inside the graph (X = s.reshape(...); X[~mask] = -1e6, y[0] += w,
y.T[1] *= 2): the view and the tensor it views both get a new history, as in PyTorch, so the
gradient flows through the change. Checked by float64 gradient checks of every element, against
the same computation written out of place, and against PyTorch when it is installed; the cases
that cannot be right are refused with a message."""
import warnings

import numpy as np
import pytest

import minigrad as mg


def _torch():
    return pytest.importorskip("torch")


def masked_softmax(lib, s, valid):
    """d2l's masked_softmax (chapter 11): the scores' padding set to -1e6 through a reshaped view."""
    shape = s.shape
    X = s.reshape(-1, shape[-1])
    mask = lib.arange(shape[-1])[None, :] < valid[:, None]
    X[~mask] = -1e6
    return X.reshape(shape).softmax(-1)


VALID = np.array([2, 3, 4, 1, 2, 3])


def test_d2ls_masked_softmax_has_the_gradient_of_its_out_of_place_form():
    s0 = np.random.default_rng(0).standard_normal((2, 3, 4))
    weights = np.arange(24.0).reshape(2, 3, 4)

    def in_place(w):
        return (masked_softmax(mg, w * 2.0, mg.tensor(VALID)) * weights).sum()

    def out_of_place(w):
        keep = (np.arange(4)[None, :] < VALID[:, None]).reshape(2, 3, 4)
        return (mg.where(keep, w * 2.0, -1e6).softmax(-1) * weights).sum()

    a, b = mg.tensor(s0, requires_grad=True), mg.tensor(s0, requires_grad=True)
    in_place(a).backward()
    out_of_place(b).backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert mg.gradcheck(in_place, (mg.tensor(s0, requires_grad=True),))


def test_a_slice_and_a_transposed_row_changed_in_place_pass_a_gradient_check():
    def f(x, w):
        y = x * 1.0
        y[0] += w * 3.0  # (Python: getitem, +=, then setitem back)
        y.T[1] *= 2.0  # a row of the transpose: a column of y
        view = y.reshape(3, 2)
        view[1:, 0] -= w[:2]  # a view of a view
        return (y ** 2).sum() + y.sum(0) @ w

    x, w = np.arange(6.0).reshape(2, 3) / 7, np.array([0.3, -0.4, 0.5])
    assert mg.gradcheck(f, (mg.tensor(x, requires_grad=True), mg.tensor(w, requires_grad=True)))


def test_views_changed_in_place_match_pytorch():
    torch = _torch()

    def run(lib, as_tensor):
        s0 = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
        w = as_tensor(s0)
        w.requires_grad_(True)
        out = masked_softmax(lib, w * 2, as_tensor(VALID))
        y = out * 1
        y[0] += out[1] * 3
        y.transpose(0, 2)[1] *= 2
        (y * y).sum().backward()
        return y.detach().numpy(), w.grad.numpy()

    for a, b in zip(run(mg, mg.tensor), run(torch, torch.tensor)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_view_changed_in_place_in_a_compiled_step_replays_the_same_losses():
    def make():
        mg.manual_seed(0)
        layer = mg.nn.Linear(4, 4)
        opt = mg.optim.SGD(layer.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (masked_softmax(mg, layer(x).reshape(2, 3, 4), mg.tensor(VALID)) * mg.arange(4.0)).sum()
            loss.backward()
            opt.step()
            return loss

        return step

    x = mg.tensor(np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32))
    eager = make()
    compiled = mg.compile(make())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a fall back to eager would warn)
        assert [compiled(x).item() for _ in range(5)] == [eager(x).item() for _ in range(5)]
    assert compiled.stats["replayed"] == 3


def test_what_cannot_be_right_is_refused_with_a_message():
    w = mg.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf tensor that requires grad"):
        w[0] += 1.0
    y = w * 2
    with pytest.raises(RuntimeError, match="made by detach"):
        y.detach()[0] += w[1]
    first, _ = y.split([1, 1])
    with pytest.raises(RuntimeError, match="several outputs of one op"):
        first += 1.0
    a, b = y[0], y[1]
    a += 1.0  # y gets a new history; b still reads the old one
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (b * 2).sum().backward()
    with mg.no_grad():  # outside the graph any view may change
        w[0] += 1.0
