"""minigrad.nn's layers (Linear, LayerNorm, Embedding, Dropout, the activations) and the functional
API: shapes, init, values against numpy formulas, errors, float64 gradient checks of each layer
and its parameters (on both backends where a kernel computes it), and a small MLP that learns."""
import math

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from helpers import BACKENDS, MLP, gradcheck_module, t64, two_spirals
from minigrad import nn, ops
from strategies import TIGHT, leaf, normal


# ============================================================================ layers
def test_linear_shapes_init_and_forward():
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    assert lin.weight.dtype == np.float32 and lin.bias.dtype == np.float32
    bound = 1 / math.sqrt(5)
    assert np.abs(lin.weight.numpy()).max() <= bound and np.abs(lin.bias.numpy()).max() <= bound
    assert np.abs(lin.weight.numpy()).max() > 0.5 * bound  # not all zeros / tiny
    x = minigrad.randn(4, 5)
    y = lin(x)
    assert y.shape == (4, 3) and y.dtype == np.float32
    expected = x.numpy().astype(np.float64) @ lin.weight.numpy().T.astype(np.float64) + lin.bias.numpy()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    x3 = minigrad.randn(2, 3, 5)
    assert lin(x3).shape == (2, 3, 3)
    np.testing.assert_allclose(lin(x3).numpy()[1], lin(x3[1]).numpy(), rtol=1e-6, atol=1e-6)


def test_linear_without_bias():
    lin = nn.Linear(4, 2, bias=False)
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert list(lin.state_dict()) == ["weight"]
    x = minigrad.randn(3, 4)
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ lin.weight.numpy().T, rtol=1e-5, atol=1e-6)


def test_linear_wrong_feature_count_is_an_error():
    with pytest.raises(ValueError, match="features"):
        nn.Linear(4, 2)(minigrad.randn(3, 5))


def test_layer_norm_init_and_forward():
    ln = nn.LayerNorm(6)
    np.testing.assert_array_equal(ln.weight.numpy(), np.ones(6, dtype=np.float32))
    np.testing.assert_array_equal(ln.bias.numpy(), np.zeros(6, dtype=np.float32))
    assert ln.weight.dtype == np.float32
    x = normal((4, 6), seed=3) * 3 + 2
    y = ln(minigrad.tensor(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=-1), 1 / (1 + 1e-5 / x.var(axis=-1)), rtol=1e-4)
    # with weight and bias, in float64, against the formula
    ln.double()
    ln.weight.numpy()[...] = normal(6, seed=4)
    ln.bias.numpy()[...] = normal(6, seed=5)
    out = ln(t64(x)).numpy()
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_layer_norm_multi_axis_normalized_shape():
    ln = nn.LayerNorm((2, 3)).double()
    assert ln.weight.shape == (2, 3)
    x = normal((4, 2, 3), seed=6)
    out = ln(t64(x)).numpy()
    flat = x.reshape(4, 6)
    expected = ((flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)).reshape(4, 2, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="normalized_shape"):
        ln(t64(np.zeros((4, 3, 2))))


def test_embedding_lookup():
    emb = nn.Embedding(10, 4)
    assert emb.weight.shape == (10, 4) and emb.weight.dtype == np.float32
    ids = np.array([[1, 9, 1], [0, 3, 3]])
    out = emb(ids)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[ids])
    np.testing.assert_array_equal(emb(minigrad.tensor(np.array([2, 5]))).numpy(), emb.weight.numpy()[[2, 5]])


def test_embedding_init_is_standard_normal():
    w = nn.Embedding(400, 50).weight.numpy()
    assert abs(w.mean()) < 0.02  # 20000 samples: std of the mean 0.007
    assert abs(w.std() - 1.0) < 0.02


@pytest.mark.parametrize("bad", [10, 57, -1])
def test_embedding_id_out_of_range(bad):
    emb = nn.Embedding(10, 4)
    with pytest.raises(IndexError) as info:
        emb(np.array([0, bad, 3]))
    message = str(info.value)
    assert str(bad) in message
    assert "10" in message


def test_embedding_float_ids_rejected():
    with pytest.raises(TypeError, match="integer"):
        nn.Embedding(4, 2)(np.array([0.0, 1.0]))


def test_dropout_eval_is_identity():
    drop = nn.Dropout(0.5).eval()
    x = minigrad.randn(10, 10)
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())


def test_dropout_train_zeros_about_p_and_scales():
    p = 0.3
    drop = nn.Dropout(p)
    assert drop.training
    x = minigrad.tensor(np.random.default_rng(0).uniform(1.0, 2.0, (200, 100)).astype(np.float32))
    y = drop(x).numpy()
    zero = y == 0
    n = zero.size
    # binomial(20000, 0.3): std of the fraction is 0.0032; 5 sigma
    assert abs(zero.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y[~zero], x.numpy()[~zero] / (1 - p), rtol=1e-6)
    # two calls draw different masks
    assert not np.array_equal(zero, drop(x).numpy() == 0)


def test_dropout_edge_probabilities():
    x = minigrad.randn(5, 5)
    np.testing.assert_array_equal(nn.Dropout(0.0)(x).numpy(), x.numpy())
    np.testing.assert_array_equal(nn.Dropout(1.0)(x).numpy(), np.zeros((5, 5), dtype=np.float32))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="p must be in"):
            nn.Dropout(bad)


def test_dropout_float64_keeps_dtype():
    y = nn.Dropout(0.5)(t64(np.ones((4, 4))))
    assert y.dtype == np.float64
    assert set(np.unique(y.numpy())) <= {0.0, 2.0}


def test_activations():
    x = np.linspace(-3, 3, 13)
    xt = t64(x)
    np.testing.assert_array_equal(nn.ReLU()(xt).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Tanh()(xt).numpy(), np.tanh(x), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(nn.Sigmoid()(xt).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-14, atol=1e-15)
    exact = x * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    np.testing.assert_allclose(nn.GELU()(xt).numpy(), exact, rtol=1e-12, atol=1e-14)
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(nn.GELU("tanh")(xt).numpy(), approx, rtol=1e-12, atol=1e-14)
    assert not np.allclose(exact, approx, rtol=0, atol=1e-6)  # the two GELUs differ
    assert nn.Identity()(xt) is xt


# ============================================================================ gradient checks: layers
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3)])
def test_gradcheck_linear(bias, shape):
    lin = nn.Linear(3, 2, bias=bias)
    x = leaf(normal(shape, seed=1))
    report = gradcheck_module(lin, lin, [x])
    assert len(report.inputs) == (3 if bias else 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["random", "near_constant"])
def test_gradcheck_layer_norm(backend, kind):
    minigrad.set_backend(backend)
    ln = nn.LayerNorm(5)
    ln.double()
    ln.weight.numpy()[...] = normal(5, seed=2) + 1.0
    ln.bias.numpy()[...] = normal(5, seed=3)
    x = normal((3, 5), seed=4) * 2 if kind == "random" else 1.0 + 1e-3 * normal((3, 5), seed=4)
    gradcheck_module(ln, ln, [leaf(x)])


def test_gradcheck_layer_norm_3d_input():
    ln = nn.LayerNorm(4)
    gradcheck_module(ln, ln, [leaf(normal((2, 3, 4), seed=5))])


def test_layer_norm_constant_row_gives_bias_and_finite_gradient():
    ln = nn.LayerNorm(4).double()
    ln.bias.numpy()[...] = [0.5, -1.0, 2.0, 0.0]
    x = leaf(np.full((2, 4), 3.25))
    out = ln(x)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(ln.bias.numpy(), (2, 4)))
    gradcheck_module(ln, ln, [x])
    ln(x).backward(normal((2, 4), seed=27))
    assert np.all(np.isfinite(x.grad)) and np.all(np.isfinite(ln.weight.grad))
    np.testing.assert_array_equal(ln.weight.grad, 0.0)  # xhat = 0: the scale has no effect


def test_gradcheck_linear_1d_input():
    lin = nn.Linear(3, 2)
    x = leaf(normal(3, seed=20))
    assert lin.double()(x).shape == (2,)
    gradcheck_module(lin, lin, [x])


def test_layer_norm_large_float32_matches_float64_reference():
    """Sizes big enough for the compiled kernels' threaded paths (several row blocks in the
    backward); float32 results against the float64 numpy reference backend."""
    x = normal((300, 128), seed=21) * 2 + 1
    w, b = normal(128, seed=22), normal(128, seed=23)
    g = normal((300, 128), seed=24)
    results = {}
    for backend, dtype in (("numba", np.float32), ("numpy", np.float64)):
        minigrad.set_backend(backend)
        ln = nn.LayerNorm(128).to(dtype)
        ln.weight.numpy()[...] = w
        ln.bias.numpy()[...] = b
        xt = minigrad.tensor(x.astype(dtype), requires_grad=True)
        out = ln(xt)
        out.backward(g.astype(dtype))
        assert out.dtype == dtype and xt.grad.dtype == dtype
        results[backend] = (out.numpy(), xt.grad, ln.weight.grad, ln.bias.grad)
    for got, want in zip(results["numba"], results["numpy"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_gradcheck_embedding_repeated_ids():
    emb = nn.Embedding(5, 3)
    ids = np.array([[0, 2, 2], [4, 2, 0]])
    gradcheck_module(emb, lambda: emb(ids), [])
    # the repeated id's row collects the gradient of each of its uses
    emb.zero_grad()
    out = emb(ids)
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(emb.weight.grad[:, 0], [2, 0, 3, 0, 1])


def test_gradcheck_dropout_p0_is_identity():
    drop = nn.Dropout(0.0)
    assert drop.training
    x = leaf(normal((3, 4), seed=6))
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    assert minigrad.gradcheck(lambda x: drop(x) * 1.0, [x], **TIGHT)


def test_gradcheck_dropout_fixed_mask():
    x = leaf(normal((4, 5), seed=7))
    m = np.random.default_rng(8).random((4, 5)) >= 0.3
    assert 0 < m.sum() < m.size
    out = ops.Dropout.apply(x, p=0.3, mask=m)
    np.testing.assert_allclose(out.numpy(), x.numpy() * m / 0.7, rtol=1e-15, atol=0)
    assert minigrad.gradcheck(lambda x: ops.Dropout.apply(x, p=0.3, mask=m), [x], **TIGHT)
    with pytest.raises(ValueError, match="mask"):
        ops.Dropout.apply(x, p=0.3, mask=m[:2])


def test_gradcheck_mlp_with_activations():
    mlp = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.GELU(),
                        nn.Linear(4, 4), nn.GELU("tanh"), nn.Linear(4, 2), nn.Sigmoid())
    gradcheck_module(mlp, mlp, [leaf(normal((3, 3), seed=9))])


# ============================================================================ functional API
def test_functional_api_exists():
    for name in ("linear", "layer_norm", "gelu", "relu", "softmax", "log_softmax", "dropout", "embedding",
                 "mse_loss", "cross_entropy"):
        assert callable(getattr(F, name)), name


def test_functional_linear_matches_layer():
    lin = nn.Linear(4, 3)
    x = minigrad.randn(2, 4)
    np.testing.assert_array_equal(F.linear(x, lin.weight, lin.bias).numpy(), lin(x).numpy())
    no_bias = F.linear(x, lin.weight).numpy()
    np.testing.assert_allclose(no_bias + lin.bias.numpy(), lin(x).numpy(), rtol=1e-6, atol=1e-6)


def test_functional_layer_norm_matches_layer():
    ln = nn.LayerNorm(5)
    ln.weight.numpy()[...] = np.arange(1, 6)
    ln.bias.numpy()[...] = -1.0
    x = minigrad.randn(3, 5)
    np.testing.assert_array_equal(F.layer_norm(x, 5, ln.weight, ln.bias).numpy(), ln(x).numpy())
    plain = F.layer_norm(x, (5,)).numpy()
    np.testing.assert_allclose(plain * np.arange(1, 6) - 1.0, ln(x).numpy(), rtol=1e-5, atol=1e-5)


def test_functional_gelu_and_dropout_match_layers():
    x = minigrad.randn(4, 6)
    np.testing.assert_array_equal(F.gelu(x).numpy(), nn.GELU()(x).numpy())
    np.testing.assert_array_equal(F.gelu(x, "tanh").numpy(), nn.GELU("tanh")(x).numpy())
    np.testing.assert_array_equal(F.relu(x).numpy(), nn.ReLU()(x).numpy())
    assert F.dropout(x, 0.5, training=False) is x
    minigrad.manual_seed(3)
    a = F.dropout(x, 0.5, training=True).numpy()
    minigrad.manual_seed(3)
    b = nn.Dropout(0.5)(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert (a == 0).any()


def test_functional_softmax_and_log_softmax():
    z = normal((3, 5), seed=19) * 4
    e = np.exp(z - z.max(-1, keepdims=True))
    expected = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(F.softmax(t64(z)).numpy(), expected, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(F.log_softmax(t64(z)).numpy(), np.log(expected), rtol=1e-13, atol=1e-13)
    e0 = np.exp(z - z.max(0, keepdims=True))
    np.testing.assert_allclose(F.softmax(t64(z), axis=0).numpy(), e0 / e0.sum(0), rtol=1e-13, atol=1e-16)
    x = leaf(z)
    assert minigrad.gradcheck(lambda x: F.log_softmax(x), [x], **TIGHT)
    assert minigrad.gradcheck(lambda x: F.softmax(x, axis=0), [x], **TIGHT)
    # cross_entropy is the negative log-likelihood under log_softmax
    t = np.array([0, 4, 2])
    nll = -F.log_softmax(t64(z)).numpy()[np.arange(3), t].mean()
    np.testing.assert_allclose(F.cross_entropy(t64(z), t).item(), nll, rtol=1e-13)


def test_dtype_mismatch_is_a_type_error_naming_both_dtypes():
    lin = nn.Linear(3, 2)  # float32
    x = t64(np.ones((2, 3)))
    with pytest.raises(TypeError) as info:
        lin(x)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    with pytest.raises(TypeError) as info:
        F.linear(x, lin.weight, lin.bias)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    with pytest.raises(TypeError) as info:
        nn.LayerNorm(3)(x)
    assert "float64" in str(info.value) and "float32" in str(info.value)
    # after converting the model, the same input works
    assert lin.double()(x).dtype == np.float64


# ============================================================================ training
def test_mlp_learns_two_spirals():
    x, y = two_spirals()
    xt = minigrad.tensor(x)
    model = MLP()
    opt = minigrad.optim.Adam(model.parameters(), lr=0.02)
    model.eval()
    start = float((model(xt).numpy().argmax(-1) == y).mean())
    first_loss = F.cross_entropy(model(xt), y).item()
    model.train()
    for _ in range(250):
        loss = F.cross_entropy(model(xt), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    accuracy = float((model(xt).numpy().argmax(-1) == y).mean())
    assert accuracy >= 0.95, f"training accuracy {accuracy:.3f} (started at {start:.3f})"
    assert F.cross_entropy(model(xt), y).item() < 0.25 * first_loss
    assert all(p.dtype == np.float32 for p in model.parameters())
