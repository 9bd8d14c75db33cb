"""The whole-sequence RNN, LSTM and GRU ops (minigrad/ops_rnn.py): the same numbers as the step-by-step
composition of the cells' ops (tanh or relu of two linears, nn/rnn.py's _lstm_step, _gru_step), outputs
and every gradient, in
float64, forwards and in reverse; gradient checks of every element; float32 on the compiled kernels
against the numpy backend; and the error for shapes that do not fit."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import ops_rnn
from minigrad.nn import functional as F
from minigrad.nn.rnn import _gru_step, _lstm_step
from helpers import num_threads
from strategies import TIGHT


KINDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


def _tensors(rng, kind, length=4, batch=3, size=2, hidden=5, dtype=np.float64):
    gates = {"lstm": 4, "gru": 3}.get(kind, 1)
    shapes = {"x": (length, batch, size), "h0": (batch, hidden), "c0": (batch, hidden),
              "w_ih": (gates * hidden, size), "w_hh": (gates * hidden, hidden), "b_ih": (gates * hidden,),
              "b_hh": (gates * hidden,)}
    if kind != "lstm":
        del shapes["c0"]
    return {k: mg.tensor((rng.standard_normal(s) * 0.7).astype(dtype), requires_grad=True) for k, s in shapes.items()}


def _by_op(kind, t, reverse):
    gi = F.linear(t["x"], t["w_ih"], t["b_ih"])
    if kind.startswith("rnn"):
        return [ops_rnn.RNNLayer.apply(gi, t["h0"], t["w_hh"], t["b_hh"], relu=kind == "rnn_relu", reverse=reverse)]
    if kind == "lstm":
        hs, c_n = ops_rnn.LSTMLayer.apply(gi, t["h0"], t["c0"], t["w_hh"], t["b_hh"], reverse=reverse)
        return [hs, c_n]
    return [ops_rnn.GRULayer.apply(gi, t["h0"], t["w_hh"], t["b_hh"], reverse=reverse)]


def _by_steps(kind, t, reverse):
    gi = F.linear(t["x"], t["w_ih"], t["b_ih"])
    state = (t["h0"], t["c0"]) if kind == "lstm" else t["h0"]
    hs = [None] * gi.shape[0]
    for step in (range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])):
        if kind.startswith("rnn"):
            pre = gi[step] + F.linear(state, t["w_hh"], t["b_hh"])
            state = hs[step] = pre.relu() if kind == "rnn_relu" else pre.tanh()
        elif kind == "lstm":
            state = _lstm_step(gi[step], state, t["w_hh"], t["b_hh"])
            hs[step] = state[0]
        else:
            state = hs[step] = _gru_step(gi[step], state, t["w_hh"], t["b_hh"])
    return [mg.stack(hs, dim=0)] + ([state[1]] if kind == "lstm" else [])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reverse", [False, True], ids=["forwards", "reverse"])
def test_the_layer_op_is_the_composition_of_its_steps(kind, reverse):
    rng = np.random.default_rng(0)
    t = _tensors(rng, kind)
    results = []
    for run in (_by_op, _by_steps):
        for v in t.values():
            v.grad = None
        outs = run(kind, t, reverse)
        weights = [mg.tensor(rng.standard_normal(o.shape)) for o in outs] if not results else results[0][2]
        sum(((o * w).sum() for o, w in zip(outs, weights)), mg.tensor(0.0)).backward()
        results.append(([o.numpy() for o in outs], {k: v.grad.numpy() for k, v in t.items()}, weights))
    # the same arithmetic in another order, over 4 steps of values of size ~1: a few float64 ulp each
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    for name in t:
        np.testing.assert_allclose(results[0][1][name], results[1][1][name], rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_layer_op_gradcheck_every_element(kind):
    rng = np.random.default_rng(1)
    t = _tensors(rng, kind, length=3, batch=2, hidden=3)
    names = list(t)

    def fn(*tensors):
        outs = _by_op(kind, dict(zip(names, tensors)), reverse=kind == "gru")
        return mg.cat([o.reshape(-1) for o in outs])

    report = mg.gradcheck(fn, [t[n] for n in names], **TIGHT)
    assert report and all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch, threads, reverse", [(8, 1, False), (37, 2, True)])
def test_float32_on_the_kernels_matches_the_numpy_backend(kind, batch, threads, reverse):
    """The compiled layers (with 37 rows on two threads: 18 and 19 rows each) against the twins."""
    rng = np.random.default_rng(2)
    t = _tensors(rng, kind, length=16, batch=batch, size=6, hidden=32, dtype=np.float32)
    # W_hh at PyTorch's initial scale (entries ~ 1/sqrt(H)): its norm stays below 1, so that the
    # recurrence shrinks the rounding differences of each step rather than amplifying them
    t["w_hh"] = mg.tensor(t["w_hh"].numpy() / np.float32(np.sqrt(32)), requires_grad=True)
    results = []
    for backend in ("numba", "numpy"):
        with mg.use_backend(backend), num_threads(threads):
            for v in t.values():
                v.grad = None
            outs = _by_op(kind, t, reverse=reverse)
            sum((o.sum() for o in outs), mg.tensor(np.float32(0))).backward()
            results.append(([o.numpy() for o in outs], {k: v.grad.numpy() for k, v in t.items()}))
    # per step, sums of ~40 products of size ~1 (40 eps) and a few ulp from the kernels' sigmoid and
    # tanh; over 16 steps the differences add up: 16 * 50 eps = 1e-4 of each result's largest value
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-4 * np.abs(b).max())
    for name, b in results[1][1].items():
        np.testing.assert_allclose(results[0][1][name], b, rtol=0, atol=1e-4 * np.abs(b).max(), err_msg=name)


def test_layer_ops_reject_shapes_that_do_not_fit():
    gi, h0, w = np.zeros((4, 2, 12)), np.zeros((2, 3)), np.zeros((12, 3))
    with pytest.raises(ValueError, match=r"lstm_layer: expected gi \(L, N, 4H\).*gi \(4, 2, 12\), w_hh \(12, 4\)"):
        ops_rnn.LSTMLayer.apply(gi, h0, h0, np.zeros((12, 4)))
    with pytest.raises(ValueError, match=r"gru_layer: expected gi \(L, N, 3H\)"):
        ops_rnn.GRULayer.apply(gi, h0, w)
    with pytest.raises(ValueError, match=r"rnn_layer: expected gi \(L, N, H\), w_hh \(H, H\)"):
        ops_rnn.RNNLayer.apply(gi, h0, w)
    with pytest.raises(TypeError, match=r"lstm_layer: gi, the states and w_hh must share one dtype, got float32"):
        ops_rnn.LSTMLayer.apply(gi.astype(np.float32), h0, h0, np.zeros((12, 3)))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_changing_the_output_in_place_is_refused(kind):
    """The backward reads the layer's output h at every step: a change in place must not go unseen."""
    from minigrad import nn
    layer = getattr(nn, kind)(3, 4)
    out, _ = layer(mg.randn(5, 2, 3))
    with pytest.raises(RuntimeError, match="in ?place"):
        out.add_(1.0)  # (LSTM's output is one of two: refused here; the others' at the backward)
        out.sum().backward()
