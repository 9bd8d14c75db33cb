"""More of the names course code calls, found by running course scripts with `import minigrad as
torch`: indexing and scattering (scatter, index_add, index_fill, fill_diagonal_, diagonal, trace,
movedim), order statistics and counts (median, quantile, unique, bincount), logspace, equal, cdist,
the legacy constructors (FloatTensor ...), minigrad.linalg, and the behaviours PyTorch code counts
on (an integer tensor as an index, squeeze of a longer dim, zero_grad(set_to_none=False), slices
of Sequential, state_dict's order, a Python number passed to a custom Function, fill_ in float64).

Each is checked against numpy or a formula written here, by a float64 gradient check of every
element where it has a gradient, and against PyTorch when it is installed."""
from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad.utils.data import DataLoader


def _torch():
    return pytest.importorskip("torch")


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 5, 4))  # float64: gradient checks


# ---------------------------------------------------------------------- scatter and friends
def test_scatter_writes_src_where_index_says_and_its_gradient_passes_a_check():
    index = np.array([[0, 2, 1, 4], [3, 0, 0, 1]])  # (2, 4) into x (5, 4) along dim 0 (index[1, 1:3]: two rows)
    x, src = RNG.standard_normal((5, 4)), RNG.standard_normal((2, 4))
    expected = x.copy()
    for i in range(2):
        for j in range(4):
            expected[index[i, j], j] = src[i, j]
    np.testing.assert_array_equal(mg.tensor(x).scatter(0, mg.tensor(index), mg.tensor(src)).numpy(), expected)
    assert mg.gradcheck(lambda a, b: mg.tensor(np.arange(20.0).reshape(5, 4)) * a.scatter(0, index, b),
                        (mg.tensor(x, requires_grad=True), mg.tensor(src, requires_grad=True)))


def test_scatter_of_a_number_writes_one_hot_rows_in_place():
    y = mg.tensor([2, 0, 3])
    one_hot = mg.zeros(3, 4)
    assert one_hot.scatter_(1, y.unsqueeze(1), 1.0) is one_hot
    np.testing.assert_array_equal(one_hot.numpy(), np.eye(4, dtype=np.float32)[[2, 0, 3]])
    np.testing.assert_array_equal(mg.zeros(3, 4).scatter(1, y[:, None], value=2.0).numpy(), 2 * one_hot.numpy())
    added = mg.ones(3, 4).scatter_(1, y[:, None], mg.ones(3, 1), reduce="add")
    np.testing.assert_array_equal(added.numpy(), 1 + one_hot.numpy())


def test_index_add_adds_rows_where_index_says_twice_for_a_repeated_index():
    x, source, index = RNG.standard_normal((5, 3)), RNG.standard_normal((4, 3)), np.array([0, 4, 2, 0])
    expected = x.copy()
    np.add.at(expected, index, 0.5 * source)
    np.testing.assert_allclose(mg.tensor(x).index_add(0, mg.tensor(index), mg.tensor(source), alpha=0.5).numpy(),
                               expected)
    y = mg.tensor(x.copy())
    y.index_add_(0, index, mg.tensor(source), alpha=0.5)
    np.testing.assert_allclose(y.numpy(), expected)
    assert mg.gradcheck(lambda a, b: a.index_add(1, np.array([2, 0]), b).square(),
                        (mg.tensor(x, requires_grad=True), mg.tensor(source[:, :2].T.copy().T, requires_grad=True)))
    with pytest.raises(ValueError, match="index_add: expected a 1-D index as long as source"):
        mg.tensor(x).index_add(0, mg.tensor([0, 1]), mg.tensor(source))


def test_index_fill_and_fill_diagonal():
    x = mg.zeros(3, 4)
    np.testing.assert_array_equal(x.index_fill(1, mg.tensor([0, 3]), -1.0).numpy()[0], [-1, 0, 0, -1])
    tall = mg.zeros(5, 3)
    tall.fill_diagonal_(7.0, wrap=True)
    expected = np.zeros((5, 3))
    np.fill_diagonal(expected, 7.0, wrap=True)
    np.testing.assert_array_equal(tall.numpy(), expected)
    with pytest.raises(ValueError, match="fill_diagonal_: expected a matrix"):
        mg.zeros(2, 3, 4).fill_diagonal_(1.0)


@pytest.mark.parametrize("offset, dim1, dim2", [(0, 0, 1), (1, 1, 2), (-2, 2, 1), (3, 0, 2), (0, -1, 0)])
def test_diagonal_is_numpys_and_its_gradient_passes_a_check(offset, dim1, dim2):
    np.testing.assert_array_equal(mg.tensor(X).diagonal(offset, dim1, dim2).numpy(),
                                  np.diagonal(X, offset, dim1, dim2))
    assert mg.gradcheck(lambda a: a.diagonal(offset, dim1, dim2) * 2.0, (mg.tensor(X, requires_grad=True),))


def test_trace_movedim_and_ndimension():
    m = RNG.standard_normal((4, 4))
    assert mg.tensor(m).trace().item() == pytest.approx(np.trace(m))
    np.testing.assert_array_equal(mg.tensor(X).movedim(0, -1).numpy(), np.moveaxis(X, 0, -1))
    np.testing.assert_array_equal(mg.tensor(X).movedim((0, 1), (2, 0)).numpy(), np.moveaxis(X, (0, 1), (2, 0)))
    assert mg.tensor(X).ndimension() == 3
    with pytest.raises(ValueError, match="trace: expected a matrix"):
        mg.tensor(X).trace()


def test_the_scatter_family_matches_pytorch():
    torch = _torch()
    x, src = RNG.standard_normal((4, 5)).astype(np.float32), RNG.standard_normal((4, 5)).astype(np.float32)
    index = np.array([[1, 0, 2, 4, 3], [0, 1, 3, 2, 4], [4, 3, 2, 1, 0], [2, 4, 0, 3, 1]])
    ours, theirs = mg.tensor(x), torch.tensor(x)
    pairs = [
        (ours.scatter(1, mg.tensor(index[:, :3]), mg.tensor(src)), theirs.scatter(1, torch.tensor(index[:, :3]),
                                                                                  torch.tensor(src))),
        (ours.index_add(1, mg.tensor([4, 0]), mg.tensor(src[:, :2]), alpha=2.0),
         theirs.index_add(1, torch.tensor([4, 0]), torch.tensor(src[:, :2]), alpha=2.0)),
        (ours.index_fill(0, mg.tensor([1, 3]), 5.0), theirs.index_fill(0, torch.tensor([1, 3]), 5.0)),
        (ours.diagonal(1), theirs.diagonal(1)), (ours.movedim(1, 0), theirs.movedim(1, 0)),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


# ---------------------------------------------------------------------- order statistics and counts
def test_median_is_the_lower_middle_value_and_its_gradient_goes_there():
    assert mg.tensor([4.0, 1.0, 3.0, 2.0]).median().item() == 2.0  # (not 2.5: PyTorch's lower median)
    values, indices = mg.tensor(X).median(1)
    expected = np.sort(X, axis=1)[:, (5 - 1) // 2]
    np.testing.assert_array_equal(values.numpy(), expected)
    np.testing.assert_array_equal(np.take_along_axis(X, indices.numpy()[:, None], 1)[:, 0], expected)
    assert mg.tensor(X).median(2, keepdim=True).values.shape == (3, 5, 1)
    assert np.isnan(mg.tensor([1.0, np.nan, 0.5]).median().item())
    assert mg.gradcheck(lambda a: a.median(1).values * 3.0, (mg.tensor(X, requires_grad=True),))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_is_numpys_and_its_gradient_passes_a_check(interpolation):
    for q in (0.3, [0.1, 0.5, 0.9]):
        for dim, axis in ((None, None), (1, 1), (-1, -1)):
            qs = mg.tensor(q, dtype=mg.float64) if isinstance(q, list) else q
            got = mg.tensor(X).quantile(qs, dim, interpolation=interpolation)
            np.testing.assert_allclose(got.numpy(), np.quantile(X, q, axis=axis, method=interpolation), rtol=1e-12)
    assert mg.gradcheck(lambda a: a.quantile(mg.tensor([0.3, 0.7], dtype=mg.float64), 1, interpolation=interpolation),
                        (mg.tensor(X, requires_grad=True),))


def test_unique_and_bincount():
    u = mg.tensor([3, 1, 2, 3, 1])
    values, inverse, counts = u.unique(return_inverse=True, return_counts=True)
    assert values.tolist() == [1, 2, 3] and inverse.tolist() == [2, 0, 1, 2, 0] and counts.tolist() == [2, 1, 2]
    assert mg.unique(u).tolist() == [1, 2, 3]
    assert u.bincount().tolist() == [0, 2, 1, 2] and u.bincount(minlength=6).tolist() == [0, 2, 1, 2, 0, 0]
    weighted = u.bincount(mg.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert weighted.tolist() == [0.0, 7.0, 3.0, 5.0] and weighted.dtype == np.float32
    with pytest.raises(ValueError, match="bincount: expected a 1-D tensor of integers >= 0"):
        mg.tensor([1, -1]).bincount()


def test_order_statistics_and_counts_match_pytorch():
    torch = _torch()
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[2, 3] = np.nan
    for dim in (0, 1):
        a, b = mg.tensor(x).median(dim), torch.tensor(x).median(dim)
        np.testing.assert_array_equal(a.values.numpy(), b.values.numpy())
    q = [0.2, 0.5, 0.75]
    for dim in (None, 0, 1):
        for keepdim in (False, True):
            a = mg.tensor(x).quantile(mg.tensor(q), dim, keepdim)
            b = torch.quantile(torch.tensor(x), torch.tensor(q), dim, keepdim)
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    ints = np.array([5, 1, 1, 3, 0, 5, 5])
    for a, b in zip(mg.tensor(ints).unique(return_inverse=True, return_counts=True),
                    torch.tensor(ints).unique(return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(mg.tensor(ints).bincount().numpy(), torch.tensor(ints).bincount().numpy())


# ---------------------------------------------------------------------- creation and distances
def test_logspace_equal_and_the_legacy_constructors():
    np.testing.assert_allclose(mg.logspace(-3, 0, 4).numpy(), [1e-3, 1e-2, 1e-1, 1.0], rtol=1e-6)
    np.testing.assert_allclose(mg.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8])
    assert mg.equal(mg.ones(2, 3), mg.ones(2, 3)) is True
    assert mg.equal(mg.ones(2, 3), mg.ones(3, 2)) is False and mg.equal(mg.ones(2), mg.zeros(2)) is False
    assert mg.FloatTensor(2, 3).shape == (2, 3) and mg.FloatTensor(2, 3).dtype == np.float32
    assert mg.FloatTensor([1, 2]).dtype == np.float32 and mg.LongTensor([1.0, 2.0]).dtype == np.int64
    assert mg.DoubleTensor(mg.ones(2)).dtype == np.float64 and mg.BoolTensor([1, 0]).tolist() == [True, False]
    with pytest.raises(TypeError, match="expected sizes"):
        mg.FloatTensor([1], [2])


def test_cdist_is_the_distance_of_every_pair_and_its_gradient_is_zero_where_rows_meet():
    a, b = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    for p in (1.0, 2.0, 3.0):
        expected = (np.abs(a[:, :, None] - b[:, None]) ** p).sum(-1) ** (1 / p)
        np.testing.assert_allclose(mg.cdist(mg.tensor(a), mg.tensor(b), p).numpy(), expected, rtol=1e-12)
    assert mg.gradcheck(lambda x, y: mg.cdist(x, y), (mg.tensor(a, requires_grad=True), mg.tensor(b)))
    same = mg.tensor(np.ones((2, 3)), requires_grad=True)
    mg.cdist(same, mg.tensor(np.ones((2, 3)))).sum().backward()
    np.testing.assert_array_equal(same.grad.numpy(), 0.0)  # (not NaN)


# ---------------------------------------------------------------------- minigrad.linalg
def test_inv_and_det_and_their_gradients_pass_a_check():
    a = RNG.standard_normal((2, 3, 3))
    np.testing.assert_allclose(mg.linalg.inv(mg.tensor(a)).numpy(), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(mg.linalg.det(mg.tensor(a)).numpy(), np.linalg.det(a), rtol=1e-12)
    assert mg.gradcheck(lambda t: mg.linalg.inv(t), (mg.tensor(a, requires_grad=True),))
    assert mg.gradcheck(lambda t: mg.linalg.det(t), (mg.tensor(a, requires_grad=True),))


def test_det_of_a_singular_matrix_has_its_gradient_the_adjugate():
    s = mg.tensor([[1.0, 2.0], [2.0, 4.0]], dtype="float64", requires_grad=True)  # det 0
    mg.linalg.det(s).backward()
    np.testing.assert_allclose(s.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)  # [[d, -c], [-b, a]]
    with pytest.raises(np.linalg.LinAlgError, match="inv: a matrix of shape"):
        mg.linalg.inv(s)
    with pytest.raises(ValueError, match=r"det: expected square matrices"):
        mg.linalg.det(mg.ones(2, 3))


def test_linalg_norms():
    a = RNG.standard_normal((3, 4))
    assert mg.linalg.norm(mg.tensor(a)).item() == pytest.approx(np.linalg.norm(a))
    np.testing.assert_allclose(mg.linalg.vector_norm(mg.tensor(a), 1, dim=1).numpy(), np.abs(a).sum(1))
    assert mg.linalg.matrix_norm(mg.tensor(a)).item() == pytest.approx(np.linalg.norm(a, "fro"))
    with pytest.raises(NotImplementedError, match="matrix_norm: ord='nuc'"):
        mg.linalg.matrix_norm(mg.tensor(a), "nuc")


def test_linalg_matches_pytorch():
    torch = _torch()
    a = RNG.standard_normal((2, 3, 3))
    ours, theirs = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (mg.linalg.inv(ours).square().sum() + mg.linalg.det(ours).sum()).backward()
    (torch.linalg.inv(theirs).square().sum() + torch.linalg.det(theirs).sum()).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9)


# ---------------------------------------------------------------------- behaviours course code counts on
def test_an_integer_tensor_of_one_element_is_an_index():
    data, i = mg.arange(10), mg.tensor(2)
    assert data[i:i + 3].tolist() == [2, 3, 4] and [10, 20, 30][i] == 30 and list(range(mg.tensor(3))) == [0, 1, 2]
    ix = mg.tensor([4, 1])
    assert [data[j:j + 2].tolist() for j in ix] == [[4, 5], [1, 2]]  # (gpt.py's get_batch)
    for bad in (mg.tensor(2.0), mg.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            [0, 1, 2][bad]


def test_squeeze_leaves_a_dim_longer_than_1():
    x = mg.zeros(2, 1, 3)
    assert x.squeeze(0).shape == (2, 1, 3) and x.squeeze(1).shape == (2, 3) and x.squeeze().shape == (2, 3)


def test_zero_grad_with_set_to_none_false_writes_zeros_into_the_same_gradients():
    model = nn.Linear(3, 2)
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    model(mg.ones(4, 3)).sum().backward()
    grad = model.weight.grad
    opt.zero_grad(set_to_none=False)
    assert model.weight.grad is grad and not grad.numpy().any()
    model(mg.ones(4, 3)).sum().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), 4.0)  # (added into the zeros)
    model.zero_grad(set_to_none=True)
    assert model.weight.grad is None


def test_fill_and_item_assignment_keep_a_python_float_exact_in_float64():
    t = mg.zeros(4, dtype=mg.float64)
    t.fill_(0.1)
    t[1] = 0.2
    t[t == 0.1] = 0.3
    assert t.tolist() == [0.3, 0.2, 0.3, 0.3]
    u = mg.zeros(2, dtype=mg.int64)
    u.fill_(2.7)  # (an integer tensor truncates, as PyTorch)
    assert u.tolist() == [2, 2]


class Scale(mg.Function):
    """A custom op with a Python number argument, as PyTorch's tutorials write them."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_a_python_number_reaches_a_custom_forward_as_itself_and_a_replay_gives_the_same_losses():
    x = mg.ones(2, requires_grad=True)
    y = Scale.apply(x, 3)
    assert y.dtype == np.float32  # (a 0-d int64 array would have made it float64)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    losses = {}
    for compiled in (False, True):
        mg.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = mg.optim.SGD(model.parameters(), lr=0.01)
        data = mg.randn(4, 3)

        def step(data):
            opt.zero_grad()
            loss = Scale.apply(model(data), 3).square().mean()
            loss.backward()
            opt.step()
            return loss

        run = mg.compile(step) if compiled else step
        losses[compiled] = [run(data).item() for _ in range(5)]
        if compiled:
            assert run.stats["replayed"] == 3
    assert losses[True] == losses[False]


def test_sequential_from_an_ordered_dict_and_slices_of_containers():
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU()), ("out", nn.Linear(3, 1))]))
    assert seq[0] is seq.fc and seq[-1] is seq.out and list(seq.state_dict())[0] == "fc.weight"
    head = seq[:-1]
    assert isinstance(head, nn.Sequential) and head.fc is seq.fc and head(mg.ones(1, 2)).shape == (1, 3)
    layers = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    first, rest = layers[0], layers[1:]
    assert isinstance(rest, nn.ModuleList) and len(rest) == 2 and list(rest.state_dict())[0] == "0.weight"
    layers[0] = nn.ReLU()  # replaced in its place
    assert [type(m).__name__ for m in layers] == ["ReLU", "Linear", "Linear"] and list(layers._modules)[0] == "0"
    del layers[1]
    layers.insert(0, first)
    layers += [nn.Tanh()]
    assert [type(m).__name__ for m in layers] == ["Linear", "ReLU", "Linear", "Tanh"]
    assert list(layers._modules) == ["0", "1", "2", "3"] and not hasattr(layers, "4")
    with pytest.raises(TypeError, match="Sequential: 'a' must be a Module"):
        nn.Sequential(OrderedDict([("a", 3)]))
    with pytest.raises(IndexError, match="index 5 is out of range"):
        layers[5]


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("tril", mg.ones(2))
        self.proj = nn.Linear(2, 2)
        self.norm = nn.BatchNorm1d(2)


def test_state_dict_lists_each_modules_parameters_then_its_buffers_then_the_modules_below():
    assert list(WithBuffer().state_dict()) == [
        "tril", "proj.weight", "proj.bias", "norm.weight", "norm.bias", "norm.running_mean", "norm.running_var",
        "norm.num_batches_tracked"]
    torch = _torch()

    class TorchWithBuffer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("tril", torch.ones(2))
            self.proj = torch.nn.Linear(2, 2)
            self.norm = torch.nn.BatchNorm1d(2)

    assert list(WithBuffer().state_dict()) == list(TorchWithBuffer().state_dict())


def test_printing_and_collating_as_pytorch():
    assert f"{mg.tensor(1.5)}" == "1.5" and f"{mg.tensor([1.5]):.2f}" == "1.50"
    assert f"{mg.tensor([1.5])}" == str(mg.tensor([1.5]))
    numbers, words = next(iter(DataLoader([(1, "a"), (2, "b")], batch_size=2)))
    assert numbers.tolist() == [1, 2] and words == ("a", "b")


# ---------------------------------------------------------------------- losses and statistics as PyTorch's
def test_cross_entropy_takes_pytorchs_layout_when_the_shapes_say_so_and_refuses_when_they_cannot():
    F = nn.functional
    logits, targets = RNG.standard_normal((2, 5, 3)), RNG.integers(0, 5, (2, 3))  # (N, C, d), targets (N, d)
    expected = F.cross_entropy(mg.tensor(logits.transpose(0, 2, 1).reshape(-1, 5)), targets.reshape(-1),
                               reduction="none").numpy().reshape(2, 3)
    np.testing.assert_allclose(F.cross_entropy(mg.tensor(logits), targets, reduction="none").numpy(), expected)
    np.testing.assert_allclose(F.nll_loss(mg.tensor(logits).log_softmax(1), targets, reduction="none").numpy(),
                               expected)
    assert mg.gradcheck(lambda a: F.cross_entropy(a, targets), (mg.tensor(logits, requires_grad=True),))
    minigrads = RNG.standard_normal((2, 3, 5))  # (N, d, C): minigrad's layout still works
    assert F.cross_entropy(mg.tensor(minigrads), targets).shape == ()
    with pytest.raises(ValueError, match=r"could have their classes along dim 1 \(PyTorch's layout"):
        F.cross_entropy(mg.randn(2, 4, 4), mg.tensor([[0, 1, 2, 3], [3, 3, 0, 1]]))  # C = d: either one
    torch = _torch()
    np.testing.assert_allclose(F.cross_entropy(mg.tensor(logits), targets, reduction="none").numpy(),
                               torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(targets),
                                                                 reduction="none").numpy(), rtol=1e-12)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_class_weights_is_the_weighted_formula(label_smoothing, reduction):
    logits, targets, w = RNG.standard_normal((6, 4)), np.array([0, 3, 1, -100, 3, 2]), np.array([0.5, 2.0, 1.0, 3.0])
    log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    counted = targets != -100
    t = np.where(counted, targets, 0)
    per = np.where(counted, (1 - label_smoothing) * w[t] * -log_p[np.arange(6), t]
                   + label_smoothing / 4 * (w * -log_p).sum(1), 0.0)
    expected = {"none": per, "sum": per.sum(), "mean": per.sum() / w[t][counted].sum()}[reduction]
    loss = nn.CrossEntropyLoss(weight=mg.tensor(w), label_smoothing=label_smoothing, reduction=reduction)
    np.testing.assert_allclose(loss(mg.tensor(logits), targets).numpy(), expected, rtol=1e-12)
    assert mg.gradcheck(lambda a: loss(a, targets), (mg.tensor(logits, requires_grad=True),))
    torch = _torch()
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=label_smoothing, reduction=reduction)
    np.testing.assert_allclose(loss(mg.tensor(logits), targets).numpy(),
                               theirs(torch.tensor(logits), torch.tensor(targets)).numpy(), rtol=1e-12)


def test_the_std_of_equal_values_has_gradient_zero_and_integer_sums_are_int64():
    x = mg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    x.std().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)  # (PyTorch's; sqrt alone would give NaN)
    assert mg.gradcheck(lambda a: a.std(1), (mg.tensor(X[0], requires_grad=True),))
    for dtype in (mg.uint8, mg.int32, mg.bool):
        assert mg.tensor([1, 0, 1], dtype=dtype).sum().dtype == np.int64


def test_a_saved_tensor_loads_as_a_tensor_and_load_takes_pytorchs_arguments(tmp_path):
    mg.save(mg.arange(4), tmp_path / "x-file")
    loaded = mg.load(tmp_path / "x-file", weights_only=True, map_location="cpu")
    assert isinstance(loaded, mg.Tensor) and loaded.tolist() == [0, 1, 2, 3]
    model = nn.Linear(2, 2)
    mg.save(model.state_dict(), tmp_path / "m.pth")
    model.load_state_dict(mg.load(tmp_path / "m.pth", weights_only=True))


# ---------------------------------------------------------------------- graph questions and small methods
def test_grad_fn_answers_pytorchs_questions_about_the_graph():
    model = nn.Linear(3, 2)
    loss = nn.MSELoss()(model(mg.ones(1, 3)), mg.zeros(1, 2))
    assert loss.grad_fn == "Mean" and repr(loss.grad_fn) == "<MeanBackward0>" and loss.grad_fn.name() == "MeanBackward0"
    (node, index), = loss.grad_fn.next_functions
    assert index == 0 and node.next_functions  # (the squared difference, and before it the layer)
    chain, seen = [loss.grad_fn], []
    while chain:  # walk to the leaves: the weight and bias end at AccumulateGrad
        for nxt, _ in chain.pop().next_functions:
            if nxt is not None and nxt.name() == "AccumulateGrad":
                seen.append(nxt.variable)
            elif nxt is not None:
                chain.append(nxt)
    assert {id(p) for p in seen} == {id(model.weight), id(model.bias)}
    assert mg.ones(2).grad_fn is None


def test_register_hook_sees_and_replaces_gradients_as_pytorchs():
    seen = []
    x = mg.tensor(np.arange(4.0).reshape(2, 2), requires_grad=True)
    h = x * 3
    handle = h.register_hook(lambda g: seen.append(g.numpy().copy()))
    y = h.tanh()
    y.register_hook(lambda g: g * 10)  # replaces the gradient flowing on
    x.register_hook(lambda g: g + 1)  # and what .grad keeps
    (y ** 2).sum().backward()
    t = np.tanh(3 * np.arange(4.0).reshape(2, 2))
    np.testing.assert_allclose(seen[0], 10 * 2 * t * (1 - t ** 2), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 3 * seen[0] + 1, rtol=1e-12)
    handle.remove()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        mg.ones(2).register_hook(print)
    torch = _torch()
    tx = torch.tensor(np.arange(4.0).reshape(2, 2), requires_grad=True)
    th = tx * 3
    ty = th.tanh()
    ty.register_hook(lambda g: g * 10)
    tx.register_hook(lambda g: g + 1)
    (ty ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_a_step_with_a_gradient_hook_runs_eagerly_under_compile():
    model = nn.Linear(2, 1)
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    calls = []

    def step(x):
        opt.zero_grad()
        h = model(x)
        h.register_hook(lambda g: calls.append(1))
        loss = h.square().mean()
        loss.backward()
        opt.step()
        return loss

    compiled = mg.compile(step)
    with pytest.warns(RuntimeWarning, match="gradient hook"):
        for _ in range(3):
            compiled(mg.ones(4, 2))
    assert len(calls) == 3 and compiled.stats["replayed"] == 0


def test_small_methods_course_code_calls():
    x = mg.tensor(np.arange(6.0).reshape(2, 3))
    assert x.swapaxes(0, 1).shape == (3, 2) and x.swapdims(0, 1).shape == (3, 2) and x.mT.shape == (3, 2)
    np.testing.assert_array_equal(x.tile(2).numpy(), np.tile(x.numpy(), 2))
    np.testing.assert_array_equal(x.tile((2, 1, 1)).numpy(), np.tile(x.numpy(), (2, 1, 1)))
    np.testing.assert_array_equal(x.masked_select(x > 2).numpy(), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(x.masked_select(mg.tensor([True, False, True])).numpy(), [0.0, 2.0, 3.0, 5.0])
    assert (x > 2).logical_not().tolist() == [[True, True, True], [False, False, False]]
    assert mg.logical_and(x > 0, x < 5).tolist() == [[False, True, True], [True, True, False]]
    assert x.is_floating_point() and not mg.arange(3).is_floating_point() and x.element_size() == 8  # (float64)
    assert x.stride() == (3, 1) and x.t().stride() == (1, 3) and x.stride(1) == 1 and mg.ones(2).element_size() == 4
    values, indices = mg.tensor([[3.0, 1.0, 2.0]]).kthvalue(2)
    assert values.tolist() == [2.0] and indices.tolist() == [2]
    assert mg.gradcheck(lambda a: a.kthvalue(2, dim=1).values, (mg.tensor(X[0], requires_grad=True),))
    assert mg.gradcheck(lambda a: a.masked_select(a > 0), (mg.tensor(X[0], requires_grad=True),))


def test_in_place_shape_changes_and_detach_():
    x = mg.randn(2, 3, requires_grad=True)
    y = x * 2
    assert y.unsqueeze_(0) is y and y.shape == (1, 2, 3)
    y.squeeze_(0)
    y.t_()
    assert y.shape == (3, 2)
    (y * mg.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(6.0).reshape(3, 2).T)
    state = x * 3
    assert state.detach_() is state and not state.requires_grad and state.grad_fn is None


def test_division_modes_out_arguments_and_sizes():
    a = mg.tensor([-7, 7, -6])
    assert mg.div(a, 2, rounding_mode="floor").tolist() == [-4, 3, -3]
    assert mg.div(a, 2, rounding_mode="trunc").tolist() == [-3, 3, -3]
    assert mg.div(a.float(), 2, rounding_mode="trunc").tolist() == [-3.0, 3.0, -3.0]
    np.testing.assert_allclose(mg.true_divide(a, 2).numpy(), [-3.5, 3.5, -3.0])
    t, out = mg.ones(3, 3), mg.empty(3, 3)
    assert mg.matmul(t, t.T, out=out) is out and out.tolist() == [[3.0] * 3] * 3
    grown = mg.empty(1)
    mg.mul(t, t, out=grown)
    assert grown.shape == (3, 3)  # (resized, as PyTorch)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        mg.mul(mg.ones(2, requires_grad=True), 2.0, out=mg.empty(2))
    assert mg.zeros(size=(2, 3)).shape == (2, 3) and mg.ones(size=(4,)).shape == (4,)
    assert mg.empty(size=(1, 2)).shape == (1, 2)
    assert mg.tensor([1.5, 2.5]).type("torch.LongTensor").tolist() == [1, 2]


def test_distances_and_the_sampler_module():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(nn.functional.pairwise_distance(mg.tensor(a), mg.tensor(b)).numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(mg.cosine_similarity(mg.tensor(a), mg.tensor(b)).numpy(),
                               (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1), rtol=1e-12)
    from minigrad.utils.data import sampler
    assert sorted(sampler.SubsetRandomSampler(range(5))) == [0, 1, 2, 3, 4]
    assert sampler.SequentialSampler is mg.utils.data.SequentialSampler


def test_testing_assert_close_uses_pytorchs_tolerances_and_says_where():
    mg.testing.assert_close(mg.ones(3), mg.ones(3) + 1e-6)  # float32: rtol 1.3e-6, atol 1e-5
    with pytest.raises(AssertionError, match=r"1 of 3 elements are not close .* at index \(1,\)"):
        mg.testing.assert_close(mg.ones(3), mg.tensor([1.0, 1.001, 1.0]))
    with pytest.raises(AssertionError, match="the dtypes differ: float32 and float64"):
        mg.testing.assert_close(mg.ones(3), mg.ones(3, dtype=mg.float64))
    mg.testing.assert_close(mg.ones(3), mg.ones(3, dtype=mg.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="the shapes differ"):
        mg.testing.assert_close(mg.ones(3), mg.ones(1, 3))
    mg.testing.assert_close({"a": [mg.ones(2), 3]}, {"a": [mg.ones(2), 3]})
    with pytest.raises(AssertionError, match="key 'a'"):
        mg.testing.assert_close({"a": mg.zeros(2)}, {"a": mg.ones(2)})
    mg.testing.assert_close(mg.tensor([np.nan]), mg.tensor([np.nan]), equal_nan=True)
    with pytest.raises(AssertionError):
        mg.testing.assert_close(mg.tensor([np.nan]), mg.tensor([np.nan]))


def test_clip_with_tensor_bounds_gives_gradients_to_the_bounds_as_pytorch():
    low, high = np.array([0.0, 0.0, 0.7]), np.array([1.0, 0.2, 1.0])
    x, lo, hi = (mg.tensor(v, requires_grad=True) for v in ([-1.0, 0.5, 0.5], low, high))
    y = x.clip(lo, hi)
    (y * mg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert y.tolist() == [0.0, 0.2, 0.7] and x.grad.tolist() == [0.0, 0.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 3.0] and hi.grad.tolist() == [0.0, 2.0, 0.0]
    assert mg.tensor([1.0, 2.0]).clamp(min=mg.tensor([1.5, 0.0])).tolist() == [1.5, 2.0]
    points = mg.tensor(np.array([[0.3, -0.4], [0.9, 0.1]]), requires_grad=True)  # (float64: a gradient check)
    bounds = mg.tensor(np.array([[0.0, -0.6], [0.2, 0.4]]), requires_grad=True)
    assert mg.gradcheck(lambda a, b: a.clip(b, 0.5), (points, bounds))


def test_seeds_and_the_random_state_by_pytorchs_names():
    mg.manual_seed(3)
    assert mg.initial_seed() == 3
    state = mg.get_rng_state()
    first = mg.randn(4)
    mg.set_rng_state(state)
    assert mg.equal(mg.randn(4), first)
    fresh = mg.seed()
    assert mg.initial_seed() == fresh and mg.random.manual_seed(3) is mg.default_generator


def test_pytorchs_keyword_names_and_storage(tmp_path):
    assert mg.arange(start=0, end=10, step=3).tolist() == [0, 3, 6, 9] and mg.arange(end=3).tolist() == [0, 1, 2]
    assert mg.arange(1, 4).tolist() == [1, 2, 3] and mg.arange(0.0, 1.0, 0.25).dtype == np.float32
    with pytest.raises(TypeError, match="arange: got both stop and end"):
        mg.arange(0, 3, end=4)
    assert mg.zeros_like(input=mg.ones(2)).tolist() == [0.0, 0.0] and mg.ones_like(input=mg.zeros(1)).tolist() == [1.0]
    assert mg.ones(2, 3).permute(dims=(1, 0)).shape == (3, 2)
    mg.save(obj={"w": mg.ones(2)}, f=tmp_path / "model.pth")
    assert mg.load(f=tmp_path / "model.pth")["w"].tolist() == [1.0, 1.0]
    points = mg.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
    storage = points.storage()
    storage[0] = 2.0  # (writing into the storage writes into the tensor)
    assert points[0, 0].item() == 2.0 and storage.shape == (6,)
    assert points[1:].storage_offset() == 2 and points.t().storage_offset() == 0 and points[1].storage().shape == (6,)


def test_more_keywords_aliases_and_legacy_types():
    x = mg.ones(2, 3)
    assert mg.sum(input=x).item() == 6.0 and mg.squeeze(input=mg.ones(1, 2)).shape == (2,)
    assert mg.matmul(input=x, other=x.T).shape == (2, 2) and mg.multiply(x, 2).sum().item() == 12.0
    assert mg.subtract(x, x).sum().item() == 0.0 and x.multiply(3).sum().item() == 18.0
    assert mg.full(size=(2, 2), fill_value=3).tolist() == [[3, 3], [3, 3]]
    assert x.reshape(shape=(3, 2)).shape == (3, 2) and x.view(size=(6,)).shape == (6,)
    assert mg.arange(3).type(mg.LongTensor).dtype == np.int64 and mg.arange(3).type(mg.FloatTensor).dtype == np.float32
    assert mg.ones(2).view(mg.int32).tolist() == [1065353216, 1065353216]  # (the same bytes as int32)
    assert x.data_ptr() == x.numpy().__array_interface__["data"][0] and x.untyped_storage().shape == (6,)
    assert mg.zeros(10).scatter_(0, mg.tensor(3), value=1.0).tolist()[3] == 1.0  # (a 0-d index: one place)


def test_a_module_used_twice_is_in_the_state_dict_under_each_name():
    block = nn.Linear(2, 2)
    model = nn.Sequential(*(3 * [block]))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]
    model.load_state_dict(model.state_dict())
    assert len(list(model.parameters())) == 2


def test_save_and_load_take_open_files(tmp_path):
    import io

    points = mg.tensor([[4.0, 1.0], [5.0, 3.0]])
    with open(tmp_path / "ourpoints.t", "wb") as f:
        mg.save(points, f)
    with open(tmp_path / "ourpoints.t", "rb") as f:
        assert mg.equal(mg.load(f), points)
    buffer = io.BytesIO()
    mg.save({"step": 3, "w": points}, buffer)
    buffer.seek(0)
    assert mg.load(buffer)["step"] == 3
    with pytest.raises(mg.CheckpointError, match="not an .npz file"):
        mg.load(io.BytesIO(b"not a checkpoint"))


def test_jacobian_and_hessian_as_torch_autograd_functional():
    f = lambda x: (x ** 3).sum(-1) + x.sin()[..., 0]  # noqa: E731  (R^(2x2) -> R^2)
    x = np.array([[0.3, -0.7], [1.2, 0.4]])
    jac = mg.autograd.functional.jacobian(f, mg.tensor(x))
    expected = np.zeros((2, 2, 2))
    for i in range(2):
        expected[i, i] = 3 * x[i] ** 2 + np.array([np.cos(x[i, 0]), 0.0])
    np.testing.assert_allclose(jac.numpy(), expected, rtol=1e-12)
    g = lambda v: (v ** 3).sum() + (v[0] * v[1]).exp()  # noqa: E731
    v = np.array([0.3, -0.7])
    e = np.exp(v[0] * v[1])
    hess = [[6 * v[0] + v[1] ** 2 * e, e * (1 + v[0] * v[1])], [e * (1 + v[0] * v[1]), 6 * v[1] + v[0] ** 2 * e]]
    np.testing.assert_allclose(mg.autograd.functional.hessian(g, mg.tensor(v)).numpy(), hess, rtol=1e-12)
    da, db = mg.autograd.functional.jacobian(lambda a, b: a * b, (mg.tensor([1.0, 2.0]), mg.tensor([3.0, 4.0])))
    assert da.tolist() == [[3.0, 0.0], [0.0, 4.0]] and db.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    torch = _torch()
    np.testing.assert_allclose(jac.numpy(), torch.autograd.functional.jacobian(f, torch.tensor(x)).numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("equation, shapes", [
    ("...chw,c->...hw", [(2, 3, 4, 4), (3,)]),  # Deep Learning with PyTorch's grayscale image
    ("...chw,c->...hw", [(3, 4, 4), (3,)]),
    ("bij,...jk->bik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),  # (no "->": the "..." dims lead the result; 1 broadcasts)
    ("i...->...", [(3, 2, 2)]),
])
def test_einsum_with_an_ellipsis_is_numpys_and_its_gradient_passes_a_check(equation, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    np.testing.assert_allclose(mg.einsum(equation, *[mg.tensor(a) for a in arrays]).numpy(),
                               np.einsum(equation, *arrays), rtol=1e-12)
    assert mg.gradcheck(lambda *ts: mg.einsum(equation, *ts), [mg.tensor(a, requires_grad=True) for a in arrays])
