"""The activations and layers course code takes from torch.nn (Softmax, LogSoftmax, Softmin, ReLU6,
Hardtanh, LogSigmoid, Mish, SELU, PReLU, CosineSimilarity; F.tanh, F.sigmoid, F.normalize,
F.cosine_similarity) and the containers ParameterList and ParameterDict: values against numpy
formulas in float32 and float64, float64 gradient checks of every element, the same against
PyTorch when it is installed (value, dtype, shape, gradient), PyTorch's gradient convention at the
kinks, parameter and state_dict names as PyTorch gives them, and the errors."""
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from course_compare import DTYPES, assert_close, assert_same_as_torch, magnitude
from helpers import gradcheck_module, has_all
from minigrad import nn
from strategies import TIGHT, away_from, leaf

SHAPE = (3, 4, 5)


def rng(seed):
    return np.random.default_rng(seed)


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def norm(x, p, axis):
    if p == np.inf:
        return np.abs(x).max(axis, keepdims=True)
    return (np.abs(x) ** p).sum(axis, keepdims=True) ** (1 / p)


# the published SELU constants (Klambauer et al. 2017), typed in again here
ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


# ============================================================================ the cases
@dataclass
class Case:
    """`call(F, x)` works with minigrad's F and with PyTorch's; `formula(x)` is numpy's value;
    `data(seed)` the input (away from the kinks); `terms`: how many values each output sums."""
    call: Callable
    formula: Callable
    data: Callable = lambda seed: rng(seed).uniform(-3, 3, SHAPE)
    terms: int = 1


def kinks(*points, low=-3.0, high=3.0):
    return lambda seed: away_from(SHAPE, points, seed=seed, low=low, high=high)


PRELU_W = np.array([0.1, -0.3, 0.7, 2.0])  # one slope per channel (dim 1 of SHAPE)

CASES = {
    "tanh": Case(lambda F, x: F.tanh(x), np.tanh),
    "sigmoid": Case(lambda F, x: F.sigmoid(x), lambda x: 1 / (1 + np.exp(-x))),
    "hardtanh": Case(lambda F, x: F.hardtanh(x), lambda x: np.clip(x, -1, 1), kinks(-1, 1)),
    "hardtanh_bounds": Case(lambda F, x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2), kinks(-0.5, 2)),
    "relu6": Case(lambda F, x: F.relu6(x), lambda x: np.clip(x, 0, 6), kinks(0, 6, low=-2, high=8)),
    "logsigmoid": Case(lambda F, x: F.logsigmoid(x), lambda x: -np.log1p(np.exp(-x)),
                       lambda seed: rng(seed).uniform(-30, 30, SHAPE)),
    "mish": Case(lambda F, x: F.mish(x), lambda x: x * np.tanh(np.log1p(np.exp(x))),
                 lambda seed: rng(seed).uniform(-6, 25, SHAPE)),
    "selu": Case(lambda F, x: F.selu(x), lambda x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(x)), kinks(0)),
    "prelu": Case(lambda F, x: F.prelu(x, _like(F, PRELU_W, x)),
                  lambda x: np.where(x > 0, x, PRELU_W[:, None] * x), kinks(0)),
    "softmin": Case(lambda F, x: F.softmin(x, dim=1), lambda x: softmax(-x, 1), terms=SHAPE[1]),
    "softmin_last": Case(lambda F, x: F.softmin(x, -1), lambda x: softmax(-x, -1), terms=SHAPE[2]),
    "normalize": Case(lambda F, x: F.normalize(x), lambda x: x / np.maximum(norm(x, 2, 1), 1e-12), terms=SHAPE[1]),
    "normalize_p1_dim2": Case(lambda F, x: F.normalize(x, p=1.0, dim=2),
                              lambda x: x / np.maximum(norm(x, 1, 2), 1e-12), kinks(0), terms=SHAPE[2]),
    "normalize_p3": Case(lambda F, x: F.normalize(x, p=3, dim=-1),
                         lambda x: x / np.maximum(norm(x, 3, -1), 1e-12), kinks(0), terms=SHAPE[2]),
    "normalize_inf": Case(lambda F, x: F.normalize(x, p=float("inf"), dim=0),
                          lambda x: x / np.maximum(norm(x, np.inf, 0), 1e-12), terms=SHAPE[0]),
}


def _like(F, values, x):
    """values as a tensor of x's dtype, in x's library."""
    if F is minigrad.nn.functional:
        return minigrad.tensor(values.astype(x.dtype))
    import torch

    return torch.tensor(values, dtype=x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_function_matches_formula(name, dtype):
    case = CASES[name]
    x = case.data(1)
    out = case.call(F, minigrad.tensor(x.astype(dtype)))
    expected = case.formula(x.astype(dtype).astype(np.float64))
    assert out.dtype == dtype and out.shape == expected.shape
    assert_close(out, expected, dtype, magnitude(x, expected), case.terms)


@pytest.mark.parametrize("name", list(CASES))
def test_function_gradcheck(name):
    case = CASES[name]
    report = minigrad.gradcheck(lambda x: case.call(F, x), [leaf(case.data(2))], **TIGHT)
    assert all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_function_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    x = case.data(3).astype(dtype)
    ours_x, their_x = minigrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = case.call(F, ours_x), case.call(torch.nn.functional, their_x)
    assert_same_as_torch(out, ref, dtype, magnitude(x, ref.detach().numpy()), case.terms)
    upstream = rng(4).standard_normal(ref.shape).astype(dtype)
    out.backward(minigrad.tensor(upstream))
    ref.backward(torch.tensor(upstream))
    assert_same_as_torch(ours_x.grad, their_x.grad, dtype, magnitude(their_x.grad.numpy(), upstream), case.terms)


@pytest.mark.parametrize("name, points", [("hardtanh", [-1.0, 1.0]), ("relu6", [0.0, 6.0]), ("prelu", [0.0])])
def test_gradient_at_the_kinks_is_pytorchs(name, points):
    """hardtanh and relu6: 0 on the bounds (the gradient passes strictly inside); prelu: the slope at 0."""
    x = leaf(np.array(points + [0.5, -0.5]).reshape(1, -1, 1) if name == "prelu" else np.array(points + [0.5]))
    if name == "prelu":
        out = F.prelu(x, minigrad.tensor([0.25]).double())
        expected = [0.25, 1.0, 0.25]
    else:
        out = CASES[name].call(F, x)
        expected = [0.0] * len(points) + [1.0]
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().ravel(), expected)
    if (torch := _torch()) is not None:
        tx = torch.tensor(x.numpy(), requires_grad=True)
        if name == "prelu":
            torch.nn.functional.prelu(tx, torch.tensor([0.25], dtype=torch.float64)).sum().backward()
        else:
            CASES[name].call(torch.nn.functional, tx).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def test_logsigmoid_is_finite_far_out():
    x = minigrad.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype="float64")
    out = F.logsigmoid(x).numpy()
    np.testing.assert_array_equal(out[[0, 1]], [-1000.0, -50.0])  # log(e^x / (1 + e^x)) = x - log1p(e^x)
    assert out[2] == -np.log(2.0) and out[3] == -np.exp(-50.0) and out[4] == 0.0


def test_normalize_zero_vector_stays_zero_with_zero_gradient():
    x = leaf(np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]]))
    out = F.normalize(x)
    np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0, 0.0], [0.6, 0.0, 0.8]])
    out.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    np.testing.assert_allclose(x.grad.numpy()[0], 1e12, rtol=4 * np.finfo(np.float64).eps)  # x / eps: 1 / eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 4.0, 40.0, float("inf")])
def test_normalize_zero_vector_has_a_finite_gradient_for_every_p(p, dtype):
    """Also where eps^p underflows the dtype (p = 4 in float32, p = 40 in float64)."""
    x = minigrad.tensor(np.array([[0.0, 0.0], [0.5, -1.0]], dtype=dtype), requires_grad=True)
    out = F.normalize(x, p=p)
    out.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy())) and np.all(out.numpy()[0] == 0)
    assert_close(out.numpy()[1], np.array([0.5, -1.0]) / norm(np.array([0.5, -1.0]), p, 0), dtype, 1.0, 2)


# ============================================================================ cosine similarity
COSINE_SHAPES = [((4, 6), (4, 6), 1), ((4, 6), (6,), -1), ((1, 6), (5, 6), 1), ((2, 3, 4), (2, 3, 4), 0)]


def cosine(a, b, dim, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    return (a * b).sum(dim) / (np.maximum(norm(a, 2, dim), eps) * np.maximum(norm(b, 2, dim), eps)).squeeze(dim)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape1, shape2, dim", COSINE_SHAPES)
def test_cosine_similarity_matches_formula_and_gradcheck(shape1, shape2, dim, dtype):
    a, b = rng(5).standard_normal(shape1), rng(6).standard_normal(shape2)
    expected = cosine(a.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64), dim)
    n = np.broadcast_shapes(shape1, shape2)[dim]
    for out in (F.cosine_similarity(minigrad.tensor(a.astype(dtype)), minigrad.tensor(b.astype(dtype)), dim=dim),
                nn.CosineSimilarity(dim=dim)(minigrad.tensor(a.astype(dtype)), minigrad.tensor(b.astype(dtype)))):
        assert out.dtype == dtype
        assert_close(out, expected, dtype, 1.0, n)
    if dtype == np.float64:
        report = minigrad.gradcheck(lambda x, y: F.cosine_similarity(x, y, dim), [leaf(a), leaf(b)], **TIGHT)
        assert all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape1, shape2, dim", COSINE_SHAPES)
def test_cosine_similarity_matches_torch(shape1, shape2, dim, dtype):
    torch = pytest.importorskip("torch")
    a, b = rng(7).standard_normal(shape1).astype(dtype), rng(8).standard_normal(shape2).astype(dtype)
    x1, x2 = minigrad.tensor(a, requires_grad=True), minigrad.tensor(b, requires_grad=True)
    t1, t2 = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, ref = F.cosine_similarity(x1, x2, dim=dim), torch.nn.functional.cosine_similarity(t1, t2, dim=dim)
    n = np.broadcast_shapes(shape1, shape2)[dim]
    assert_same_as_torch(out, ref, dtype, 1.0, n)
    upstream = rng(9).standard_normal(ref.shape).astype(dtype)
    out.backward(minigrad.tensor(upstream))
    ref.backward(torch.tensor(upstream))
    scale = magnitude(t1.grad.numpy(), t2.grad.numpy())
    assert_same_as_torch(x1.grad, t1.grad, dtype, scale, n)
    assert_same_as_torch(x2.grad, t2.grad, dtype, scale, n)


def test_cosine_similarity_of_zero_vector_is_zero():
    out = F.cosine_similarity(minigrad.tensor([[0.0, 0.0], [1.0, 1.0]]), minigrad.tensor([[1.0, 2.0], [2.0, 2.0]]))
    np.testing.assert_allclose(out.numpy(), [0.0, 1.0], rtol=1e-6)


# ============================================================================ modules
MODULES = [  # (module factory, the function it applies)
    (lambda nn: nn.Softmax(dim=1), lambda x: F.softmax(x, dim=1)),
    (lambda nn: nn.LogSoftmax(dim=-1), lambda x: F.log_softmax(x, dim=-1)),
    (lambda nn: nn.Softmin(dim=0), lambda x: F.softmin(x, dim=0)),
    (lambda nn: nn.ReLU6(), F.relu6),
    (lambda nn: nn.Hardtanh(-0.5, 2.0), lambda x: F.hardtanh(x, -0.5, 2.0)),
    (lambda nn: nn.LogSigmoid(), F.logsigmoid),
    (lambda nn: nn.Mish(), F.mish),
    (lambda nn: nn.SELU(), F.selu),
]


@pytest.mark.parametrize("index", range(len(MODULES)))
def test_module_applies_its_function_as_torch(index):
    make, fn = MODULES[index]
    x = away_from(SHAPE, [-0.5, 0.0, 2.0, 6.0], seed=10)
    np.testing.assert_array_equal(make(nn)(minigrad.tensor(x)).numpy(), fn(minigrad.tensor(x)).numpy())
    if (torch := _torch()) is not None:
        ref = make(torch.nn)(torch.tensor(x))
        assert_same_as_torch(make(nn)(minigrad.tensor(x)), ref, np.float64, magnitude(x), SHAPE[1])
        assert repr(make(nn)) == repr(make(torch.nn))


@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 4), (2, 3, 4, 5)])
@pytest.mark.parametrize("module", ["Softmax", "LogSoftmax", "Softmin"])
def test_softmax_modules_without_dim_take_pytorchs_implicit_dim_and_warn(module, shape):
    x = rng(11).standard_normal(shape)
    with pytest.warns(UserWarning, match=f"{module}: no dim given, so dim={0 if len(shape) in (1, 3) else 1}"):
        out = getattr(nn, module)()(minigrad.tensor(x))
    implicit = 0 if len(shape) in (0, 1, 3) else 1
    np.testing.assert_array_equal(out.numpy(), getattr(nn, module)(dim=implicit)(minigrad.tensor(x)).numpy())
    if (torch := _torch()) is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch.nn, module)()(torch.tensor(x))
        assert_same_as_torch(out, ref, np.float64, magnitude(x), shape[implicit])


@pytest.mark.parametrize("num_parameters", [1, 4])
def test_prelu_module(num_parameters):
    prelu = nn.PReLU(num_parameters)
    assert prelu.weight.shape == (num_parameters,) and prelu.weight.dtype == np.float32
    np.testing.assert_array_equal(prelu.weight.numpy(), 0.25)
    assert [n for n, _ in prelu.named_parameters()] == ["weight"]
    assert repr(prelu) == f"PReLU(num_parameters={num_parameters})"
    assert nn.PReLU(init=0.1, dtype=np.float64).weight.dtype == np.float64
    x = away_from(SHAPE, [0.0], seed=12)
    prelu.weight.numpy()[...] = rng(13).uniform(-1, 1, num_parameters)
    w = prelu.weight.numpy().astype(np.float64)
    expected = np.where(x > 0, x, (w[:, None] if num_parameters > 1 else w) * x)
    assert_close(prelu(minigrad.tensor(x.astype(np.float32))), expected, np.float32, magnitude(x))
    gradcheck_module(prelu, prelu, [leaf(x)])  # the input and the slopes, every element
    if (torch := _torch()) is not None:
        theirs = torch.nn.PReLU(num_parameters).double()
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(prelu.weight.numpy()))
        ours_x, their_x = leaf(x), torch.tensor(x, requires_grad=True)
        out, ref = prelu(ours_x), theirs(their_x)
        assert_same_as_torch(out, ref, np.float64, magnitude(x))
        upstream = rng(14).standard_normal(SHAPE)
        out.backward(minigrad.tensor(upstream))
        ref.backward(torch.tensor(upstream))
        assert_same_as_torch(ours_x.grad, their_x.grad, np.float64, magnitude(upstream))
        assert_same_as_torch(prelu.weight.grad, theirs.weight.grad, np.float64, magnitude(x, upstream), x.size)
        assert repr(prelu) == repr(theirs)


def test_activation_errors_name_the_op_and_shapes():
    x = minigrad.tensor(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError) as info:
        F.prelu(x, minigrad.tensor(np.ones(4)))
    has_all(str(info.value), "prelu", "4 slopes", "(2, 3, 4)")
    with pytest.raises(ValueError) as info:
        nn.PReLU(5)(x)
    has_all(str(info.value), "prelu", "5 slopes", "(2, 3, 4)")
    with pytest.raises(ValueError, match=r"hardtanh: min_val \(2\) must not be larger than max_val \(1\)"):
        F.hardtanh(x, 2, 1)
    with pytest.raises(ValueError, match="Hardtanh: min_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError) as info:
        F.cosine_similarity(x, minigrad.tensor(np.zeros((3, 3))))
    has_all(str(info.value), "cosine_similarity", "(2, 3, 4)", "(3, 3)", "broadcast")
    with pytest.raises(ValueError, match="normalize: p must be > 0"):
        F.normalize(x, p=0)
    with pytest.raises(ValueError, match="softmin"):
        F.softmin(x, dim=3)


# ============================================================================ ParameterList and ParameterDict
def fill(module, nn, make):
    """A Linear, then a ParameterList and a ParameterDict, in either library's module."""
    module.fc = nn.Linear(2, 3)
    module.plist = nn.ParameterList([nn.Parameter(make((2, 2))), make((3,))])  # (the tensor becomes a Parameter)
    module.pdict = nn.ParameterDict({"scale": nn.Parameter(make((3,))), "shift": make((1,))})


class Holder(nn.Module):
    def __init__(self, make):
        super().__init__()
        fill(self, nn, make)


def test_parameter_containers_register_their_parameters_with_pytorchs_names():
    holder = Holder(lambda shape: minigrad.zeros(*shape))
    names = ["fc.weight", "fc.bias", "plist.0", "plist.1", "pdict.scale", "pdict.shift"]
    assert [n for n, _ in holder.named_parameters()] == names
    assert list(holder.state_dict()) == names
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in holder.parameters())
    assert holder.num_parameters() == 6 + 3 + 4 + 3 + 3 + 1
    if (torch := _torch()) is not None:
        theirs = torch.nn.Module()
        fill(theirs, torch.nn, lambda shape: torch.zeros(*shape))
        assert [n for n, _ in theirs.named_parameters()] == names
        assert list(theirs.state_dict()) == names
        assert {n: tuple(p.shape) for n, p in theirs.named_parameters()} == \
            {n: tuple(p.shape) for n, p in holder.named_parameters()}


def test_parameter_containers_load_convert_and_train():
    a = Holder(lambda shape: minigrad.randn(*shape))
    b = Holder(lambda shape: minigrad.zeros(*shape))
    b.load_state_dict(a.state_dict())
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=name)
    b.double()
    assert all(p.dtype == np.float64 for p in b.parameters())
    opt = minigrad.optim.SGD(b.parameters(), lr=0.1)
    loss = (b.plist[0].sum() + b.plist[1].sum() + b.pdict["scale"].sum() * 2) + b.pdict.shift.sum()
    loss.backward()
    before = b.pdict["scale"].numpy().copy()
    opt.step()
    np.testing.assert_allclose(b.pdict["scale"].numpy(), before - 0.2, rtol=1e-15)


def test_parameter_list_behaves_as_a_list():
    p0, p1, p2 = (nn.Parameter(np.full(2, float(i))) for i in range(3))
    plist = nn.ParameterList([p0])
    plist.append(p1).extend([p2])
    assert len(plist) == 3 and list(plist) == [p0, p1, p2]
    assert plist[0] is p0 and plist[-1] is p2
    assert list(plist[1:]) == [p1, p2] and isinstance(plist[1:], nn.ParameterList)
    q = nn.Parameter(np.ones(2))
    plist[1] = q
    assert plist[1] is q and [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    assert repr(nn.ParameterList([nn.Parameter(np.zeros((2, 3), dtype=np.float32))])) == \
        "ParameterList(\n  (0): Parameter containing: [float32 of size 2x3]\n)"
    with pytest.raises(IndexError, match="index 3 is out of range for a list of 3 parameters"):
        plist[3]
    with pytest.raises(TypeError, match="ParameterList.append: element 3 must be a Parameter.*got ndarray"):
        plist.append(np.zeros(2))


def test_parameter_dict_behaves_as_a_dict():
    pdict = nn.ParameterDict()
    pdict["w"] = nn.Parameter(np.ones(2))
    pdict.update({"b": minigrad.zeros(2)})
    assert list(pdict) == ["w", "b"] and len(pdict) == 2 and "b" in pdict
    assert isinstance(pdict["b"], nn.Parameter) and pdict.b is pdict["b"]
    assert list(pdict.keys()) == ["w", "b"] and pdict.get("missing") is None
    pdict["train"] = nn.Parameter(np.ones(1))  # a key that is a method's name does not hide it
    assert callable(pdict.train) and pdict["train"].shape == (1,)
    del pdict["train"]
    assert pdict.pop("w").shape == (2,) and list(pdict) == ["b"]
    with pytest.raises(KeyError, match="without '.'"):
        pdict["a.b"] = nn.Parameter(np.ones(1))
    with pytest.raises(TypeError, match="ParameterDict: 'c' must be a Parameter.*got list"):
        pdict["c"] = [1.0]
    with pytest.raises(AttributeError, match="no attribute or key 'missing'"):
        pdict.missing


# ============================================================================ Embedding(padding_idx)
@pytest.mark.parametrize("padding_idx", [0, 3, -1])
def test_the_padding_row_gets_no_gradient_and_the_others_their_usual_one(padding_idx):
    """With padding_idx, the weight's gradient is the plain embedding's gradient (gradient-checked
    in the op tests) with the padding row set to 0; the output does not change."""
    weight = minigrad.tensor(rng(30).standard_normal((5, 3)), requires_grad=True)
    ids = np.array([[0, 1, 3], [4, 0, 3]])
    upstream = rng(31).standard_normal((2, 3, 3))
    plain = F.embedding(ids, weight)
    (plain * minigrad.tensor(upstream)).sum().backward()
    expected = weight.grad.numpy().copy()
    expected[padding_idx] = 0
    weight.grad = None
    padded = F.embedding(ids, weight, padding_idx=padding_idx)
    (padded * minigrad.tensor(upstream)).sum().backward()
    np.testing.assert_array_equal(padded.numpy(), plain.numpy())
    np.testing.assert_array_equal(weight.grad.numpy(), expected)
    assert expected[padding_idx].sum() == 0 and np.abs(expected).sum() > 0


def test_an_embedding_with_padding_idx_starts_and_stays_zero_there():
    minigrad.manual_seed(0)
    emb = nn.Embedding(6, 4, padding_idx=-2)
    assert emb.padding_idx == 4 and "padding_idx=4" in repr(emb)
    assert not emb.weight.numpy()[4].any() and emb.weight.numpy()[[0, 1, 2, 3, 5]].all()
    opt = minigrad.optim.SGD(emb.parameters(), lr=0.5)
    before = emb.weight.numpy().copy()
    for _ in range(3):
        emb(np.array([[4, 1, 4], [2, 4, 5]])).square().sum().backward()
        opt.step()
        opt.zero_grad()
    after = emb.weight.numpy()
    assert not after[4].any()  # the padding row: still zeros
    assert (after[[1, 2, 5]] != before[[1, 2, 5]]).all() and (after[[0, 3]] == before[[0, 3]]).all()


@pytest.mark.parametrize("bad", [6, -7, 1.5, "0"])
def test_a_padding_idx_outside_the_table_is_refused(bad):
    with pytest.raises(ValueError, match="Embedding: padding_idx must be an integer in"):
        nn.Embedding(6, 4, padding_idx=bad)
    with pytest.raises(ValueError, match="embedding: padding_idx must be an integer in"):
        F.embedding(np.array([0]), minigrad.zeros(6, 4), padding_idx=bad)


def test_a_compiled_step_with_a_padding_row_replays_it():
    results = []
    for compiled in (False, True):
        minigrad.manual_seed(0)
        emb = nn.Embedding(7, 3, padding_idx=0)
        opt = minigrad.optim.Adam(emb.parameters(), lr=0.1)

        def step(ids):
            loss = emb(ids).tanh().sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        run = minigrad.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [run(minigrad.tensor(rng(k).integers(0, 7, (4, 5)))).item() for k in range(4)]
        assert not emb.weight.numpy()[0].any()
        results.append((losses, emb.weight.numpy().copy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_padding_idx_as_pytorch():
    torch = pytest.importorskip("torch")
    weight = rng(32).standard_normal((5, 3))
    ids = np.array([[0, 2, 2], [4, 0, 1]])
    upstream = rng(33).standard_normal((2, 3, 3))
    ours = minigrad.tensor(weight, requires_grad=True)
    (F.embedding(ids, ours, padding_idx=2) * minigrad.tensor(upstream)).sum().backward()
    theirs = torch.tensor(weight, requires_grad=True)
    (torch.nn.functional.embedding(torch.tensor(ids), theirs, padding_idx=2) * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-15, atol=0)
    torch_layer = torch.nn.Embedding(5, 3, padding_idx=-1)
    assert nn.Embedding(5, 3, padding_idx=-1).padding_idx == torch_layer.padding_idx == 4
