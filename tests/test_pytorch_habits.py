"""What PyTorch code writes, accepted as written: dim=/keepdim=, x.size(), x.dim(), clone(),
float(t), is_causal=, lists and numpy arrays as inputs, from_numpy, the loss modules, ModuleDict,
Module.apply and requires_grad_, summary(model), minigrad.grad, and PyTorch's dtype names."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from strategies import TIGHT, leaf

X = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7 - 1


# ----------------------------------------------------------------------------- dim= and keepdim=
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod", "argmax", "argmin"])
def test_reductions_take_dim_and_keepdim(name):
    x = mg.tensor(X)
    numpy_way = getattr(x, name)(axis=1, keepdims=True)
    for pytorch_way in (getattr(x, name)(dim=1, keepdim=True), getattr(mg, name)(x, dim=1, keepdim=True)
                        if hasattr(mg, name) else getattr(x, name)(dim=1, keepdim=True)):
        assert pytorch_way.shape == (2, 1, 4)
        np.testing.assert_array_equal(pytorch_way.numpy(), numpy_way.numpy())
    np.testing.assert_array_equal(getattr(x, name)(dim=-1).numpy(), getattr(x, name)(axis=-1).numpy())
    with pytest.raises(TypeError, match=f"{name}: got both axis=1 and dim=1"):
        getattr(x, name)(axis=1, dim=1)
    with pytest.raises(TypeError, match=f"{name}: got both keepdims= and keepdim="):
        getattr(x, name)(1, keepdims=True, keepdim=True)


def test_max_and_min_with_dim_return_values_and_indices_as_pytorch():
    x = mg.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 0.0]], requires_grad=True)
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), [5.0, 4.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    low = x.min(dim=0, keepdim=True)
    np.testing.assert_array_equal(low.values.numpy(), [[1.0, 2.0, 0.0]])
    np.testing.assert_array_equal(low.indices.numpy(), [[0, 1, 1]])
    values.sum().backward()  # the values are in the graph
    np.testing.assert_array_equal(x.grad, [[0, 1, 0], [1, 0, 0]])
    assert x.max(axis=1).shape == (2,)  # numpy's name: the values alone, as before
    with pytest.raises(TypeError, match="max: dim must be one int"):
        x.max(dim=(0, 1))


def test_var_and_std_take_pytorchs_correction_names():
    x = mg.tensor(X)
    np.testing.assert_allclose(x.var(dim=2, unbiased=True).numpy(), X.var(axis=2, ddof=1))
    np.testing.assert_allclose(x.std(dim=2, correction=1).numpy(), X.std(axis=2, ddof=1))
    np.testing.assert_allclose(x.var(dim=2, unbiased=False).numpy(), X.var(axis=2))
    with pytest.raises(TypeError, match="var: got both unbiased=True and ddof=1"):
        x.var(ddof=1, unbiased=True)


def test_softmax_family_and_scans_take_dim():
    x = mg.tensor(X)
    for fn in (lambda t, **k: t.softmax(**k), lambda t, **k: t.log_softmax(**k), lambda t, **k: F.softmax(t, **k),
               lambda t, **k: F.log_softmax(t, **k)):
        np.testing.assert_allclose(fn(x, dim=1).numpy(), fn(x, axis=1).numpy())
        np.testing.assert_allclose(fn(x).numpy(), fn(x, dim=-1).numpy())
    np.testing.assert_allclose(x.logsumexp(axis=0).numpy(), x.logsumexp(0).numpy())
    np.testing.assert_allclose(x.cumsum(axis=2).numpy(), np.cumsum(X, axis=2))
    with pytest.raises(TypeError, match="softmax: got both"):
        x.softmax(axis=1, dim=1)


def test_shape_functions_take_dim():
    x = mg.tensor(X)
    assert mg.cat([x, x], dim=2).shape == (2, 3, 8) and mg.stack([x, x], dim=1).shape == (2, 2, 3, 4)
    assert [p.shape for p in x.split(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    assert [p.shape for p in x.chunk(3, dim=1)] == [(2, 1, 4)] * 3
    assert [p.shape for p in x.unbind(dim=2)] == [(2, 3)] * 4
    assert x.unsqueeze(dim=0).shape == (1, 2, 3, 4) and x[:, :1].squeeze(dim=1).shape == (2, 4)
    assert x.transpose(dim0=0, dim1=2).shape == (4, 3, 2)
    with pytest.raises(TypeError, match="cat: got both"):
        mg.cat([x, x], axis=0, dim=0)


# ----------------------------------------------------------------------------- size, dim, clone, conversions
def test_size_is_numpys_int_and_pytorchs_call():
    x = mg.zeros(2, 3, 4)
    assert x.size == 24 and isinstance(x.size, int) and x.size + 1 == 25
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.numel() == 24 and x.dim() == 3 and mg.numel(x) == 24
    with pytest.raises(mg.AxisError, match=r"size: axis 3 is out of range for a tensor of shape \(2, 3, 4\)"):
        x.size(3)


def test_clone_is_a_copy_in_the_graph():
    x = leaf(X)
    c = x.clone()
    assert not np.shares_memory(c.data, x.data) and c.grad_fn == "Clone"
    np.testing.assert_array_equal(c.numpy(), X)
    assert mg.gradcheck(lambda t: (t.clone() * t).sum(axis=0), [x], **TIGHT)


def test_one_element_tensors_convert_to_python_numbers():
    assert float(mg.tensor([[2.5]])) == 2.5 and int(mg.tensor(7)) == 7 and int(mg.tensor([3.9])) == 3
    assert bool(mg.tensor([1.0])) and not bool(mg.tensor(0))
    for convert in (float, int, bool):
        with pytest.raises(ValueError, match=r"one element|ambiguous"):
            convert(mg.tensor([1.0, 2.0]))


# ----------------------------------------------------------------------------- attention
def test_sdpa_is_causal_is_the_lower_triangular_mask():
    rng = np.random.default_rng(0)
    q, k, v = (mg.tensor(rng.standard_normal((2, 3, 5, 4))) for _ in range(3))
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    explicit = F.scaled_dot_product_attention(q, k, v, np.tril(np.ones((5, 5), dtype=bool)))
    np.testing.assert_array_equal(causal.numpy(), explicit.numpy())
    by_name = F.scaled_dot_product_attention(q, k, v, attn_mask=np.tril(np.ones((5, 5), dtype=bool)))
    np.testing.assert_array_equal(by_name.numpy(), explicit.numpy())
    with pytest.raises(ValueError, match="mask or is_causal=True, not both"):
        F.scaled_dot_product_attention(q, k, v, np.ones((5, 5), dtype=bool), is_causal=True)
    with pytest.raises(NotImplementedError, match="dropout_p"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)


def test_sdpa_is_causal_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 4, 6, 8)) for _ in range(3))
    ours = F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- lists and arrays as inputs
def test_lists_and_arrays_are_accepted_as_inputs():
    mg.manual_seed(0)
    layer = nn.Linear(3, 2)
    as_tensor = layer(mg.tensor([[1.0, 2.0, 3.0]])).numpy()
    np.testing.assert_array_equal(layer([[1.0, 2.0, 3.0]]).numpy(), as_tensor)
    np.testing.assert_array_equal(layer([[1, 2, 3]]).numpy(), as_tensor)  # ints of a list: the weight's dtype
    np.testing.assert_array_equal(layer(np.array([[1.0, 2.0, 3.0]], dtype=np.float32)).numpy(), as_tensor)
    np.testing.assert_array_equal(nn.Sequential(layer, nn.ReLU())([[1.0, 2.0, 3.0]]).numpy(),
                                  np.maximum(as_tensor, 0))
    assert F.relu([-1.0, 2.0]).tolist() == [0.0, 2.0] and F.softmax([0.0, 0.0]).tolist() == [0.5, 0.5]
    assert F.mse_loss([1.0, 3.0], [1.0, 1.0]).item() == 2.0
    assert F.cross_entropy([[0.0, 0.0]], [1]).item() == pytest.approx(np.log(2))
    assert nn.Flatten()(np.zeros((2, 3, 4), dtype=np.float32)).shape == (2, 12)


def test_from_numpy_shares_memory_and_dtype():
    a = np.array([1.0, 2.0])
    t = mg.from_numpy(a)
    assert t.dtype == np.float64
    a[0] = 5.0
    t += 1
    assert t.tolist() == [6.0, 3.0] and a.tolist() == [6.0, 3.0]
    with pytest.raises(TypeError, match="from_numpy: expected a numpy array, got list"):
        mg.from_numpy([1.0])
    with pytest.raises(TypeError, match="from_numpy: .*object"):
        mg.from_numpy(np.array([object()]))


# ----------------------------------------------------------------------------- modules
def test_flatten_module():
    x = mg.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60) and nn.Flatten(0, 1)(x).shape == (6, 4, 5)
    assert nn.Flatten(start_dim=1, end_dim=2)(x).shape == (2, 12, 5)
    assert repr(nn.Flatten(0, 1)) == "Flatten(start_dim=0, end_dim=1)"


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_modules_are_the_functions(reduction):
    rng = np.random.default_rng(0)
    logits, target = mg.tensor(rng.standard_normal((4, 5))), rng.integers(0, 5, 4)
    np.testing.assert_array_equal(nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.1)(logits, target).numpy(),
                                  F.cross_entropy(logits, target, reduction=reduction, label_smoothing=0.1).numpy())
    y = mg.tensor(rng.standard_normal((4, 5)))
    np.testing.assert_array_equal(nn.MSELoss(reduction=reduction)(logits, y).numpy(),
                                  F.mse_loss(logits, y, reduction=reduction).numpy())
    with pytest.raises(ValueError, match="MSELoss: reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        nn.MSELoss(reduction="avg")
    ones = nn.CrossEntropyLoss(weight=mg.ones(5))  # (weight=: test_course_names_more.py checks the formula)
    assert ones(mg.tensor(np.eye(5)), np.arange(5)).item() == pytest.approx(nn.CrossEntropyLoss()(
        mg.tensor(np.eye(5)), np.arange(5)).item())


def test_mse_loss_sum_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = np.random.default_rng(2).standard_normal((2, 7))
    x = leaf(a)
    loss = nn.MSELoss(reduction="sum")(x, b)
    tx = torch.tensor(a, requires_grad=True)
    reference = torch.nn.MSELoss(reduction="sum")(tx, torch.tensor(b))
    loss.backward()
    reference.backward()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-12)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-12)


def test_module_dict_registers_its_modules():
    heads = nn.ModuleDict({"a": nn.Linear(2, 3), "train": nn.Linear(3, 1)})
    heads["b"] = nn.Linear(1, 1)
    assert list(heads) == ["a", "train", "b"] and len(heads) == 3 and "a" in heads
    assert heads["a"] is heads.a and callable(heads.train)  # a key does not hide a method
    assert heads.train() is heads
    names = [n for n, _ in heads.named_parameters()]
    assert names == ["a.weight", "a.bias", "train.weight", "train.bias", "b.weight", "b.bias"]
    assert list(heads.state_dict()) == names
    del heads["b"]
    assert list(heads.keys()) == ["a", "train"] and heads.pop("a") is not None and len(heads) == 1
    with pytest.raises(KeyError, match="without '.'"):
        heads["x.y"] = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="must be a Module"):
        heads["c"] = 3
    with pytest.raises(AttributeError, match="no attribute or key 'zzz'"):
        heads.zzz


def test_module_apply_visits_children_first_then_self():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh(), nn.Linear(3, 1)))
    seen = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Tanh", "Linear", "Sequential", "Sequential"]

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)

    model.apply(init)
    assert all(not m.weight.numpy().any() for m in model.modules() if isinstance(m, nn.Linear))


def test_module_requires_grad_freezes_and_unfreezes():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    assert model[0].requires_grad_(False) is model[0]
    model(mg.ones(1, 2)).sum().backward()
    assert model[0].weight.grad is None and model[1].weight.grad is not None
    model.requires_grad_()
    assert all(p.requires_grad for p in model.parameters())


def test_summary_lists_every_parameter_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight
            self.norm = nn.LayerNorm(4)

    model = Tied()
    model.norm.requires_grad_(False)
    table = mg.summary(model)
    assert table.rows == [("embed.weight", (10, 4), 40), ("norm.weight", (4,), 4), ("norm.bias", (4,), 4)]
    assert table.total == 48 == model.num_parameters() and table.trainable == 40
    text = str(table)
    assert "embed.weight" in text and "(10, 4)" in text and "total: 48 parameters (40 trainable)" in text
    page = table._repr_html_()  # in a notebook: an HTML table, one row per parameter
    assert page.count("<tr>") == 4 and "<td>embed.weight</td>" in page and "total: 48 parameters" in page
    assert nn.summary is mg.summary
    with pytest.raises(TypeError, match="summary: expected a Module"):
        mg.summary([1])


# ----------------------------------------------------------------------------- minigrad.grad
def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    h = x * w
    loss = (h * h).sum()
    gx, gh = mg.grad(loss, [x, h])
    np.testing.assert_allclose(gx.numpy(), 2 * (x.numpy() * w.numpy()) * w.numpy())
    np.testing.assert_allclose(gh.numpy(), 2 * h.numpy())
    assert x.grad is None and w.grad is None and h.grad is None and not gx.requires_grad
    assert mg.autograd.grad is mg.grad  # torch.autograd.grad's path


def test_grad_of_several_outputs_and_unused_inputs():
    x, unused = leaf([1.0, 2.0]), leaf([0.0])
    y = x * 3
    (gx,) = mg.grad([y, x.sum()], x, grad_outputs=[np.array([1.0, 10.0]), None], retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [4.0, 31.0])
    with pytest.raises(RuntimeError, match="grad: input 1 .* was not used.*allow_unused=True"):
        mg.grad(y.sum(), [x, unused], retain_graph=True)
    assert mg.grad(y.sum(), [x, unused], allow_unused=True)[1] is None
    with pytest.raises(RuntimeError, match="grad: input 0 .*does not require grad"):
        mg.grad((x * 2).sum(), [mg.ones(2)])
    (g,) = mg.grad((x * x).sum(), x, create_graph=True)  # (tests/test_create_graph.py checks more)
    assert g.requires_grad and mg.grad(g.sum(), x)[0].tolist() == [2.0] * x.numel()


# ----------------------------------------------------------------------------- dtype names
def test_pytorch_dtype_names():
    assert mg.float == "float32" and mg.double == "float64" and mg.long == "int64" and mg.bool == "bool"
    assert mg.zeros(2, dtype=mg.long).dtype == np.int64 and mg.ones(2, dtype=mg.double).dtype == np.float64
    assert mg.tensor([1.0]).dtype == mg.float and mg.arange(3).long().dtype == mg.long
    namespace = {}
    exec("from minigrad import *", namespace)
    assert "float" not in namespace and "bool" not in namespace and "tensor" in namespace
