"""nn.RNN, nn.GRU, nn.LSTM and their cells: gradient checks in float64 of every element of the
input, the initial state and every parameter (a cell, and several steps of several layers);
PyTorch's outputs and gradients on the same weights (state_dict copied over, both ways); the
layouts (batch_first, unbatched, bidirectional), dropout between layers, and the errors."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from strategies import TIGHT

KINDS = ["rnn_tanh", "rnn_relu", "gru", "lstm"]


def make(kind, *args, **kwargs):
    """The layer (or cell, cell=True) of `kind` with minigrad's names."""
    cell = kwargs.pop("cell", False)
    if kind.startswith("rnn"):
        kwargs["nonlinearity"] = kind[4:]
        return (nn.RNNCell if cell else nn.RNN)(*args, **kwargs)
    return {"gru": nn.GRUCell if cell else nn.GRU, "lstm": nn.LSTMCell if cell else nn.LSTM}[kind](*args, **kwargs)


def make_torch(torch, kind, *args, **kwargs):
    cell = kwargs.pop("cell", False)
    if kind.startswith("rnn"):
        kwargs["nonlinearity"] = kind[4:]
        return (torch.nn.RNNCell if cell else torch.nn.RNN)(*args, **kwargs)
    name = {"gru": "GRU", "lstm": "LSTM"}[kind] + ("Cell" if cell else "")
    return getattr(torch.nn, name)(*args, **kwargs)


def t64(rng, *shape):
    return mg.tensor(rng.standard_normal(shape), dtype=np.float64, requires_grad=True)


def flat(*tensors):
    """Every value a call returned, in one 1-D tensor: a gradient check then covers all of them."""
    return mg.cat([t.reshape(-1) for t in tensors])


def returned(kind, result):
    """(output, h_n) or (output, (h_n, c_n)) -> [output, h_n(, c_n)]; a cell's h' or (h', c') too."""
    if kind != "lstm":
        return list(result) if isinstance(result, tuple) else [result]
    if isinstance(result[1], tuple):
        return [result[0], *result[1]]
    return list(result)


# ============================================================================ gradient checks
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_cell_gradcheck_every_element(kind, batched):
    rng = np.random.default_rng(0)
    cell = make(kind, 2, 3, cell=True).double()
    lead = (2,) if batched else ()
    x, h = t64(rng, *lead, 2), t64(rng, *lead, 3)
    state = [h, t64(rng, *lead, 3)] if kind == "lstm" else [h]
    params = list(cell.parameters())
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]

    def fn(x, *rest):
        state = rest[:len(rest) - len(params)]
        return flat(*returned(kind, cell(x, tuple(state) if kind == "lstm" else state[0])))

    report = mg.gradcheck(fn, [x, *state, *params], **TIGHT)
    assert report and all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["two layers", "bidirectional, batch_first", "unbatched, no bias"])
def test_layer_gradcheck_through_time_every_element(kind, layout):
    """3 steps, 2 layers: the gradient of every output, final state and parameter element from
    the autograd walk through time, against central differences."""
    rng = np.random.default_rng(1)
    options = {"two layers": {}, "bidirectional, batch_first": {"bidirectional": True, "batch_first": True},
               "unbatched, no bias": {"bias": False}}[layout]
    model = make(kind, 2, 3, num_layers=2, **options).double()
    d = 2 if options.get("bidirectional") else 1
    shape = (3,) if layout.startswith("unbatched") else ((2, 3) if options.get("batch_first") else (3, 2))
    x = t64(rng, *shape, 2)
    lead = (2 * d,) + ((2,) if len(shape) == 2 else ())
    state = [t64(rng, *lead, 3) for _ in range(2 if kind == "lstm" else 1)]
    params = list(model.parameters())
    assert len(params) == 2 * d * (4 if options.get("bias", True) else 2)

    def fn(x, *rest):
        state = rest[:len(rest) - len(params)]
        return flat(*returned(kind, model(x, tuple(state) if kind == "lstm" else state[0])))

    report = mg.gradcheck(fn, [x, *state, *params], **TIGHT)
    assert report and all(r.checked == r.size for r in report.inputs)


def test_the_fused_tanh_step_is_the_composition_of_its_ops():
    rng = np.random.default_rng(2)
    x, h, w_ih, w_hh, b_ih, b_hh = (t64(rng, *s) for s in [(5, 3), (5, 4), (4, 3), (4, 4), (4,), (4,)])
    fused = nn.rnn.rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh)
    composed = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).tanh()
    # the same sums in another order: a few ulp of values of size ~ 3
    np.testing.assert_allclose(fused.numpy(), composed.numpy(), rtol=0, atol=1e-14)
    v = rng.standard_normal((5, 4))
    grads = []
    for out in (fused, composed):
        for t in (x, h, w_ih, w_hh, b_ih, b_hh):
            t.grad = None
        out.backward(v)
        grads.append([np.asarray(t.grad) for t in (x, h, w_ih, w_hh, b_ih, b_hh)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


# ============================================================================ PyTorch
# float32, the tolerance: a pre-activation is a dot product of K = I + H = 11 terms plus 2 biases,
# whose rounding error is at most K u sum|w_i x_i| (Higham, Accuracy and Stability, 3.1), u = 2^-24;
# with |w| <= 1/sqrt(H) = 0.41, |h| < 1 and |x| <= 3 (standard normal), sum|w_i x_i| <= 13 * 1.3 = 17,
# so 13 * 6e-8 * 17 = 1.3e-5 per step. tanh and sigmoid shrink an error, and so does W_hh (its
# norm is below 1 here), so the errors of L = 6 steps and 2 layers add up to at most ~12 times
# that, 1.6e-4 in the worst case, for each implementation: 3e-4 between the two. (Seen: ~2e-7.)
# The gradients run the same chain back once more: twice that, relative to their largest value.
# A wrong gate order or a missing bias moves outputs by ~0.1.
OUT_ATOL = 3e-4
GRAD_RTOL_OF_MAX = 6e-4


def to_torch(torch, state):
    return {k: torch.from_numpy(np.array(v)) for k, v in state.items()}


def assert_close_to_max(got, expected, rtol_of_max, what):
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, what
    scale = max(np.abs(expected).max(), 1e-3)
    np.testing.assert_allclose(got, expected, rtol=0, atol=rtol_of_max * scale, err_msg=what)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("options", [{}, {"batch_first": True, "bidirectional": True}, {"bias": False}],
                         ids=["default", "batch_first-bidirectional", "no-bias"])
def test_layer_matches_pytorch_outputs_and_gradients(kind, options):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    ours = make(kind, 5, 6, num_layers=2, **options)
    theirs = make_torch(torch, kind, 5, 6, num_layers=2, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())  # the same names, in the same order
    theirs.load_state_dict(to_torch(torch, ours.state_dict()))
    d = 2 if options.get("bidirectional") else 1
    x = rng.standard_normal((3, 6, 5) if options.get("batch_first") else (6, 3, 5)).astype(np.float32)
    states = [rng.standard_normal((2 * d, 3, 6)).astype(np.float32) for _ in range(2 if kind == "lstm" else 1)]

    def run(lib, model, tensor):
        xt = tensor(x)
        st = [tensor(s) for s in states]
        for t in [xt, *st]:
            t.requires_grad_(True)
        result = returned(kind, model(xt, tuple(st) if kind == "lstm" else st[0]))
        v = np.random.default_rng(4)  # the same upstream gradients for both libraries
        weights = [v.standard_normal(tuple(r.shape)).astype(np.float32) for r in result]
        loss = sum((r * tensor(w)).sum() for r, w in zip(result, weights))
        loss.backward()
        grads = {"input": xt.grad, **{f"state {i}": s.grad for i, s in enumerate(st)},
                 **{n: p.grad for n, p in model.named_parameters()}}
        return [r.detach().numpy() for r in result], {k: np.asarray(g) for k, g in grads.items()}

    ours_out, ours_grads = run(mg, ours, mg.tensor)
    theirs_out, theirs_grads = run(torch, theirs, torch.from_numpy)
    for a, b in zip(ours_out, theirs_out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=OUT_ATOL)
    assert set(ours_grads) == set(theirs_grads)
    for name in ours_grads:
        assert_close_to_max(ours_grads[name], theirs_grads[name], GRAD_RTOL_OF_MAX, name)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_matches_pytorch(kind):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    ours, theirs = make(kind, 5, 6, cell=True), make_torch(torch, kind, 5, 6, cell=True)
    theirs.load_state_dict(to_torch(torch, ours.state_dict()))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    hs = [rng.standard_normal((3, 6)).astype(np.float32) for _ in range(2 if kind == "lstm" else 1)]
    got = returned(kind, ours(mg.tensor(x), tuple(map(mg.tensor, hs)) if kind == "lstm" else mg.tensor(hs[0])))
    with torch.no_grad():
        want = returned(kind, theirs(torch.from_numpy(x),
                                     tuple(map(torch.from_numpy, hs)) if kind == "lstm" else torch.from_numpy(hs[0])))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=OUT_ATOL)
    # unbatched, and no state given (zeros): as PyTorch
    got = returned(kind, ours(mg.tensor(x[0])))
    with torch.no_grad():
        want = returned(kind, theirs(torch.from_numpy(x[0])))
    for a, b in zip(got, want):
        assert a.shape == tuple(b.shape) == (6,)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=OUT_ATOL)


@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_from_pytorch_loads_and_gives_its_numbers(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = make_torch(torch, kind, 4, 3, num_layers=2, bidirectional=True)
    ours = make(kind, 4, 3, num_layers=2, bidirectional=True)
    ours.load_state_dict(theirs.state_dict())  # torch tensors, as they come
    for name, p in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[name], p.numpy())
    x = np.random.default_rng(6).standard_normal((5, 2, 4)).astype(np.float32)
    with torch.no_grad():
        want = returned(kind, theirs(torch.from_numpy(x)))
    got = returned(kind, ours(mg.tensor(x)))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=OUT_ATOL)


def test_initialisation_is_pytorchs_uniform_range():
    model = nn.LSTM(10, 25, num_layers=2)
    bound = 1 / np.sqrt(25)
    for name, p in model.named_parameters():
        values = p.numpy()
        assert values.dtype == np.float32 and np.abs(values).max() <= bound, name
        assert np.abs(values).max() > 0.9 * bound, name  # the whole range, not a smaller one
    assert nn.GRU(3, 4, bias=False).state_dict().keys() == {"weight_ih_l0", "weight_hh_l0"}


# ============================================================================ layouts and dropout
@pytest.mark.parametrize("kind", KINDS)
def test_batch_first_and_unbatched_are_the_same_numbers(kind):
    rng = np.random.default_rng(7)
    model = make(kind, 3, 4, num_layers=2)
    first = make(kind, 3, 4, num_layers=2, batch_first=True)
    first.load_state_dict(model.state_dict())
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    out, _ = model(mg.tensor(x))
    out_first, _ = first(mg.tensor(x.transpose(1, 0, 2)))
    np.testing.assert_array_equal(out_first.numpy().transpose(1, 0, 2), out.numpy())
    single = returned(kind, model(mg.tensor(x[:, 0])))
    assert single[0].shape == (5, 4) and all(s.shape == (2, 4) for s in single[1:])
    batched = returned(kind, model(mg.tensor(x)))
    np.testing.assert_allclose(single[0].numpy(), batched[0].numpy()[:, 0], rtol=0, atol=1e-6)
    for s, b in zip(single[1:], batched[1:]):
        np.testing.assert_allclose(s.numpy(), b.numpy()[:, 0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_dropout_acts_between_layers_while_training_only(kind):
    rng = np.random.default_rng(8)
    model = make(kind, 3, 4, num_layers=2, dropout=1.0)
    plain = make(kind, 3, 4, num_layers=2)
    plain.load_state_dict(model.state_dict())
    x = mg.tensor(rng.standard_normal((5, 2, 3)).astype(np.float32))
    evaluated = returned(kind, model.eval()(x))
    for a, b in zip(evaluated, returned(kind, plain(x))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    trained = returned(kind, model.train()(x))
    # p = 1 drops every input of layer 1: it runs on zeros; layer 0 is untouched
    np.testing.assert_array_equal(trained[1].numpy()[0], evaluated[1].numpy()[0])
    top = make(kind, 4, 4)
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in model.state_dict().items() if "_l1" in k})
    on_zeros = returned(kind, top(mg.zeros(5, 2, 4)))
    np.testing.assert_allclose(trained[0].numpy(), on_zeros[0].numpy(), rtol=0, atol=1e-6)


def test_dropout_with_one_layer_warns_as_pytorch():
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(3, 4, dropout=0.5)


def test_modules_print_and_convert_like_other_modules():
    model = nn.LSTM(3, 4, num_layers=2, batch_first=True)
    assert repr(model) == "LSTM(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity='relu')"
    model.double()
    assert all(p.dtype == np.float64 for p in model.parameters())
    out, (h, c) = model(mg.zeros(2, 5, 3, dtype="float64"))
    assert out.dtype == h.dtype == c.dtype == np.float64 and out.shape == (2, 5, 4) and h.shape == (2, 2, 4)
    assert [len(w) for w in model.all_weights] == [4, 4]


# ============================================================================ errors
@pytest.mark.parametrize("call, error, words", [
    (lambda: nn.GRU(3, 4)(mg.zeros(5, 2, 7)), ValueError, ["GRU", "(5, 2, 7)", "7 features", "input_size is 3"]),
    (lambda: nn.LSTM(3, 4)(mg.zeros(3)), ValueError, ["LSTM", "(L, N, I)", "(L, I)", "1-D", "(3,)"]),
    (lambda: nn.RNN(3, 4, batch_first=True)(mg.zeros(1, 2, 3, 3)), ValueError, ["RNN", "(N, L, I)", "4-D"]),
    (lambda: nn.RNN(3, 4, num_layers=2)(mg.zeros(5, 2, 3), mg.zeros(1, 2, 4)), ValueError,
     ["RNN", "(2, 2, 4)", "(1, 2, 4)", "num_layers * num_directions"]),
    (lambda: nn.RNN(3, 4)(mg.zeros(5, 3), mg.zeros(1, 1, 4)), ValueError, ["(1, 4)", "(1, 1, 4)"]),
    (lambda: nn.LSTM(3, 4)(mg.zeros(5, 2, 3), mg.zeros(1, 2, 4)), TypeError, ["LSTM", "pair (h0, c0)"]),
    (lambda: nn.LSTM(3, 4)(mg.zeros(5, 2, 3), (mg.zeros(1, 2, 4), mg.zeros(1, 2, 5))), ValueError,
     ["cell state c0", "(1, 2, 4)", "(1, 2, 5)"]),
    (lambda: nn.GRU(3, 4)(mg.zeros(5, 2, 3, dtype="float64")), TypeError, ["float64", "float32"]),
    (lambda: nn.RNN(3, 4)(mg.zeros(5, 2, 3, dtype="float64")), TypeError, ["float64", "float32"]),
    (lambda: nn.RNN(3, 4)(mg.zeros(0, 2, 3)), ValueError, ["no time steps"]),
    (lambda: nn.GRUCell(3, 4)(mg.zeros(2, 5)), ValueError, ["GRUCell", "(2, 5)", "input_size is 3"]),
    (lambda: nn.RNNCell(3, 4)(mg.zeros(2, 3), mg.zeros(3, 4)), ValueError, ["RNNCell", "(2, 4)", "(3, 4)"]),
    (lambda: nn.LSTMCell(3, 4)(mg.zeros(2, 3), mg.zeros(2, 4)), TypeError, ["LSTMCell", "pair (h, c)"]),
    (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, ["'tanh' or 'relu'", "sigmoid"]),
    (lambda: nn.LSTM(3, 4, proj_size=2), NotImplementedError, ["proj_size"]),
    (lambda: nn.GRU(3, 0), ValueError, ["hidden_size", "positive"]),
    (lambda: nn.GRU(3, 4, num_layers=0), ValueError, ["num_layers"]),
    (lambda: nn.GRU(3, 4, num_layers=2, dropout=1.5), ValueError, ["dropout", "[0, 1]"]),
])
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
