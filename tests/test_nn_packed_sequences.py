"""Packed sequences (nn.utils.rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, unpack_sequence, unpad_sequence) and the recurrent layers that take them.

What packing must mean: an RNN, GRU or LSTM run on a packed batch gives each sequence exactly what
it gives that sequence run alone, unpadded (its outputs, and h_n after its own last step, also in
the reverse direction). That is checked without PyTorch; with PyTorch installed, the packing, the
outputs and every gradient are compared with its own too."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.utils.rnn import (
    PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence, pad_sequence, unpack_sequence,
    unpad_sequence,
)

F32 = dict(rtol=1e-5, atol=1e-6)  # float32 steps of the same recurrence, summed in another order at most


def _layer(kind, **kw):
    mg.manual_seed(0)
    if kind == "RNN_relu":
        return nn.RNN(3, 4, nonlinearity="relu", **kw)
    return getattr(nn, kind)(3, 4, **kw)


def _batch(lengths, batch_first, seed=0, dtype=np.float32):
    x = np.random.default_rng(seed).standard_normal((len(lengths), max(lengths) + 1, 3)).astype(dtype)
    return x if batch_first else x.transpose(1, 0, 2).copy()


# ---------------------------------------------------------------------- packing itself
def test_packing_keeps_the_real_steps_time_major_longest_first():
    seqs = [mg.tensor([[1.0], [2.0], [3.0]]), mg.tensor([[10.0]]), mg.tensor([[20.0], [21.0]])]
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert packed.data.numpy().ravel().tolist() == [1, 20, 10, 2, 21, 3]
    assert packed.batch_sizes.numpy().tolist() == [3, 2, 1] and packed.batch_sizes.dtype == np.int64
    assert packed.sorted_indices.numpy().tolist() == [0, 2, 1]
    assert packed.unsorted_indices.numpy().tolist() == [0, 2, 1]
    padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
    assert padded.numpy()[..., 0].tolist() == [[1, 2, 3], [10, -1, -1], [20, 21, -1]]
    assert lengths.numpy().tolist() == [3, 1, 2]
    for a, b in zip(unpack_sequence(packed), seqs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("lengths, enforce_sorted", [([4, 4, 2, 1], True), ([2, 4, 1, 3], False)])
def test_pad_packed_sequence_undoes_pack_padded_sequence_and_gradients_flow_back(lengths, enforce_sorted,
                                                                                 batch_first):
    x = mg.tensor(_batch(lengths, batch_first), requires_grad=True)
    packed = pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert packed.data.shape == (sum(lengths), 3)
    padded, got = pad_packed_sequence(packed, batch_first=batch_first, total_length=x.shape[1 if batch_first else 0])
    assert got.numpy().tolist() == lengths
    steps = np.arange(x.shape[1 if batch_first else 0])
    inside = (steps[None, :] < np.array(lengths)[:, None]) if batch_first else (steps[:, None] < np.array(lengths))
    np.testing.assert_array_equal(padded.numpy(), np.where(inside[..., None], x.numpy(), 0.0))
    (padded * 2.0).sum().backward()
    expected = np.broadcast_to(np.where(inside[..., None], 2.0, 0.0), x.shape)
    np.testing.assert_array_equal(x.grad.numpy(), expected)  # the padding gets none


def test_unpad_sequence_undoes_pad_sequence():
    seqs = [mg.randn(n, 2) for n in (3, 5, 1)]
    for batch_first in (True, False):
        back = unpad_sequence(pad_sequence(seqs, batch_first=batch_first), mg.tensor([3, 5, 1]), batch_first)
        for a, b in zip(back, seqs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_packing_refuses_what_it_cannot_pack():
    x = mg.randn(5, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted`"):
        pack_padded_sequence(x, [2, 5, 1])
    with pytest.raises(ValueError, match=r"every length must be in 1\.\.5"):
        pack_padded_sequence(x, [5, 3, 0])
    with pytest.raises(ValueError, match=r"every length must be in 1\.\.5"):
        pack_padded_sequence(x, [6, 3, 1])
    with pytest.raises(ValueError, match="one whole-number length per sequence, 3 of them"):
        pack_padded_sequence(x, [5, 3])
    with pytest.raises(ValueError, match="total_length to be at least"):
        pad_packed_sequence(pack_padded_sequence(x, [5, 3, 1]), total_length=4)
    with pytest.raises(TypeError, match="expected a PackedSequence"):
        pad_packed_sequence(x)
    with pytest.raises(ValueError, match=r"the PackedSequence's data has shape \(9, 2\), expected"):
        nn.GRU(3, 4)(pack_padded_sequence(x, [5, 3, 1]))


# ---------------------------------------------------------------------- the layers on packed batches
KINDS = ["RNN", "RNN_relu", "GRU", "LSTM"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_a_packed_batch_gives_each_sequence_what_it_gives_alone(kind, bidirectional, num_layers):
    lengths = [2, 5, 1, 4]
    layer = _layer(kind, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    x = _batch(lengths, batch_first=True)
    out, state = layer(pack_padded_sequence(mg.tensor(x), lengths, batch_first=True, enforce_sorted=False))
    assert isinstance(out, PackedSequence)
    out, got = pad_packed_sequence(out, batch_first=True)
    assert got.numpy().tolist() == lengths and out.shape == (4, 5, 4 * (2 if bidirectional else 1))
    states = state if kind == "LSTM" else (state,)
    for b, n in enumerate(lengths):
        alone, alone_state = layer(mg.tensor(x[b:b + 1, :n]))
        np.testing.assert_allclose(out.numpy()[b, :n], alone.numpy()[0], **F32)
        np.testing.assert_array_equal(out.numpy()[b, n:], 0.0)
        for s, s_alone in zip(states, alone_state if kind == "LSTM" else (alone_state,)):
            np.testing.assert_allclose(s.numpy()[:, b], s_alone.numpy()[:, 0], **F32)


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_the_gradient_through_a_packed_bidirectional_layer_passes_a_float64_check(kind):
    lengths = [3, 1, 2]
    layer = _layer(kind, bidirectional=True).double()
    x = mg.tensor(_batch(lengths, batch_first=False, dtype=np.float64)[:3], requires_grad=True)

    def f(x, w_hh, w_ih_reverse):
        out, state = layer(pack_padded_sequence(x, lengths, enforce_sorted=False))
        h = state[0] if kind == "LSTM" else state
        return pad_packed_sequence(out)[0].tanh().sum() + (h * h).sum()

    # the weights are parameters of `layer`; gradcheck perturbs them in place
    assert mg.gradcheck(f, (x, layer.weight_hh_l0, layer.weight_ih_l0_reverse))


def test_an_initial_state_is_taken_in_the_batchs_own_order():
    lengths = [1, 3, 2]
    layer = _layer("GRU")
    x = _batch(lengths, batch_first=False)[:3]
    h0 = mg.randn(1, 3, 4)
    _, h_n = layer(pack_padded_sequence(mg.tensor(x), lengths, enforce_sorted=False), h0)
    for b, n in enumerate(lengths):
        _, alone = layer(mg.tensor(x[:n, b:b + 1]), h0[:, b:b + 1])
        np.testing.assert_allclose(h_n.numpy()[:, b], alone.numpy()[:, 0], **F32)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_layers_match_pytorch(kind, bidirectional, enforce_sorted):
    torch = pytest.importorskip("torch")
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 4]
    kw = dict(num_layers=2, bidirectional=bidirectional, batch_first=True)
    ours = _layer(kind, **kw)
    theirs = torch.nn.RNN(3, 4, nonlinearity="relu", **kw) if kind == "RNN_relu" else getattr(torch.nn, kind)(3, 4,
                                                                                                             **kw)
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()})
    x = _batch(lengths, batch_first=True)
    a, b = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    pa = pack_padded_sequence(a, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    pb = torch.nn.utils.rnn.pack_padded_sequence(b, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(pa.data.numpy(), pb.data.detach().numpy())
    np.testing.assert_array_equal(pa.batch_sizes.numpy(), pb.batch_sizes.numpy())
    (oa, sa), (ob, sb) = ours(pa), theirs(pb)
    np.testing.assert_allclose(oa.data.numpy(), ob.data.detach().numpy(), **F32)
    sa, sb = (sa, sb) if kind == "LSTM" else ((sa,), (sb,))
    loss_a = (oa.data ** 2).sum() + sum((s ** 3).sum() for s in sa)
    loss_b = (ob.data ** 2).sum() + sum((s ** 3).sum() for s in sb)
    for s, t in zip(sa, sb):
        np.testing.assert_allclose(s.numpy(), t.detach().numpy(), **F32)
    loss_a.backward()
    loss_b.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), getattr(theirs, name).grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
