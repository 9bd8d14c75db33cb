"""Recurrent networks with PyTorch's names, shapes, parameters and gate order: the cells `RNNCell`,
`GRUCell` and `LSTMCell` (one time step) and the layers `RNN`, `GRU` and `LSTM` (a whole sequence,
`num_layers` deep, in one or both directions).

Shapes: L = sequence length, N = batch, I = input_size, H = hidden_size, D = 2 if bidirectional
else 1, S = num_layers * D (one initial and one final state per layer and direction).

    layer                       input                     output                 state (h0 in, h_n out)
    RNN, GRU                    (L, N, I)                 (L, N, D*H)            (S, N, H)
    LSTM                        (L, N, I)                 (L, N, D*H)            (h, c), each (S, N, H)
    batch_first=True            (N, L, I)                 (N, L, D*H)            (S, N, H) still
    unbatched                   (L, I)                    (L, D*H)               (S, H)

Every one is written with minigrad's ops (linear, sigmoid, tanh, chunk, indexing, stack; the tanh
RNN's step is the one fused op `ops.RNNTanhCell`), so the gradient through time, from the last
step back to the first, is the autograd walk's: no backward is written in this file. The layers
`RNN`, `LSTM` and `GRU` run each layer and direction as one op instead (ops_rnn.py: the same cell,
its backpropagation through time written out, a fraction of the time); `_step` is the same step as
ops, and the tests check that both give the same numbers.

The parameters of layer k have PyTorch's names and shapes, with the gates stacked in PyTorch's
order, so `state_dict()` loads into `torch.nn.GRU(...)` of the same settings, and back:

    weight_ih_l{k}   (G*H, I) for k = 0, (G*H, D*H) above     G = 1 (RNN), 3 (GRU: r, z, n),
    weight_hh_l{k}   (G*H, H)                                  4 (LSTM: i, f, g, o)
    bias_ih_l{k}, bias_hh_l{k}   (G*H,)   only with bias=True
    the same with the suffix _reverse for the backward direction (bidirectional=True)

All start from U(-1/sqrt(H), 1/sqrt(H)), PyTorch's default. LSTM's proj_size is not supported.

The layers also take a PackedSequence (nn/utils/rnn.py: sequences of different lengths) and give
their output as one: each sequence then runs for its own length only. The steps past a sequence's
end keep its state as it was (h_t = h_{t-1} there, through a mask), so h_n is the state after its
own last step, and the reverse direction starts from h0 at that step. That takes the step loop
(`_step`, one op per step) instead of the layer op.
"""
import math
import numbers
import warnings

import numpy as np

from .. import devices, ops, ops_rnn
from ..creation import as_tensor, cat, dropout, stack, zeros
from ..kernels import _warm
from ..tensor import Tensor, default_float
from . import functional as F
from . import init
from .module import Module, Parameter
from .utils import rnn as rnn_utils


# ============================================================================ one time step
def rnn_tanh_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)    (Elman 1990)

    x (..., I), h (..., H) -> h' (..., H). One fused op, ops.RNNTanhCell, whose backward is the
    `rnn_cell` exercise."""
    if x.dtype != w_ih.dtype or h.dtype != w_ih.dtype:
        raise TypeError(f"rnn_tanh_cell: input is {x.dtype} and hidden state {h.dtype}, but the weights are "
                        f"{w_ih.dtype}; convert one (model.to(dtype))")
    return ops.RNNTanhCell.apply(x, h, w_ih, w_hh) if b_ih is None else \
        ops.RNNTanhCell.apply(x, h, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)"""
    return _rnn_relu_step(F.linear(x, w_ih, b_ih), h, w_hh, b_hh)


def _rnn_relu_step(gi, h, w_hh, b_hh):
    """The relu step from the input's part gi = x W_ih^T + b_ih, computed already."""
    return (gi + F.linear(h, w_hh, b_hh)).relu()


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (Cho et al. 2014, in PyTorch's form: the reset gate r multiplies the hidden
    state's part of n after its bias), gates stacked in the order r, z, n:

        r  = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)        reset gate
        z  = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)        update gate
        n  = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))     candidate
        h' = (1 - z) * n + z * h

    x (..., I), h (..., H) -> h' (..., H)."""
    return _gru_step(F.linear(x, w_ih, b_ih), h, w_hh, b_hh)


def _gru_step(gi, h, w_hh, b_hh):
    """The GRU step from the input's part gi = x W_ih^T + b_ih (..., 3H), computed already."""
    gh = F.linear(h, w_hh, b_hh)  # (..., 3H)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)  # = (1 - z) n + z h


def lstm_cell(x, state, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al. 2000),
    gates stacked in the order i, f, g, o:

        i  = sigmoid(x W_ii^T + b_ii + h W_hi^T + b_hi)        input gate
        f  = sigmoid(x W_if^T + b_if + h W_hf^T + b_hf)        forget gate
        g  = tanh(x W_ig^T + b_ig + h W_hg^T + b_hg)           candidate cell
        o  = sigmoid(x W_io^T + b_io + h W_ho^T + b_ho)        output gate
        c' = f * c + i * g
        h' = o * tanh(c')

    x (..., I), state = (h, c) each (..., H) -> (h', c')."""
    return _lstm_step(F.linear(x, w_ih, b_ih), state, w_hh, b_hh)


def _lstm_step(gi, state, w_hh, b_hh):
    """The LSTM step from the input's part gi = x W_ih^T + b_ih (..., 4H), computed already."""
    h, c = state
    i, f, g, o = (gi + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return h, c


_TANH_CELL_BACKWARD = ops.RNNTanhCell.backward  # (see RNN._layer_op)


# ============================================================================ shared by the cells and the layers
def _uniform(shape, hidden_size, dtype):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    return init.uniform_(Parameter(np.empty(shape, dtype=dtype)), -bound, bound)


def _check_sizes(name, input_size, hidden_size):
    for what, n in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"{name}: {what} must be a positive whole number, got {n!r}")


def _state(name, hx, expected, dtype, what="hidden state"):
    """hx as a Tensor of shape `expected`, or zeros of that shape if hx is None."""
    if hx is None:
        return zeros(*expected, dtype=dtype)
    hx = as_tensor(hx)
    if hx.shape != tuple(expected):
        raise ValueError(f"{name}: expected the {what} of shape {tuple(expected)}, got {hx.shape}")
    return hx


class RNNCellBase(Module):
    """What the three cells share: the parameters weight_ih (G*H, I), weight_hh (G*H, H),
    bias_ih and bias_hh (G*H,), and the checks of the input and the state."""

    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=None, device=None):
        super().__init__()
        devices.check_device(device, type(self).__name__)
        _check_sizes(type(self).__name__, input_size, hidden_size)
        dtype = default_float() if dtype is None else dtype
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = self.gates * hidden_size
        self.weight_ih = _uniform((rows, input_size), hidden_size, dtype)
        self.weight_hh = _uniform((rows, hidden_size), hidden_size, dtype)
        if bias:
            self.bias_ih = _uniform((rows,), hidden_size, dtype)
            self.bias_hh = _uniform((rows,), hidden_size, dtype)
        else:
            self.bias_ih = self.bias_hh = None

    def _input(self, x):
        """x as a Tensor (N, I) or (I,) (unbatched), and whether it is batched."""
        name = type(self).__name__
        x = as_tensor(x, dtype=None if isinstance(x, (Tensor, np.ndarray)) else self.weight_ih.dtype)
        if x.ndim not in (1, 2):
            raise ValueError(f"{name}: expected an input of shape (N, {self.input_size}) or ({self.input_size},) "
                             f"(unbatched), got {x.ndim}-D of shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: the input of shape {x.shape} has {x.shape[-1]} features (its last axis), "
                             f"but input_size is {self.input_size}")
        return x, x.ndim == 2

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        text += "" if self.bias else ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity!r}"
        return text


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)   (or relu: nonlinearity="relu")

    input (N, I) or (I,), hx (N, H) or (H,) (default zeros) -> h' (N, H) or (H,).
    Parameters: weight_ih (H, I), weight_hh (H, H), bias_ih (H,), bias_hh (H,)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None, device=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, dtype, device)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        h = _state("RNNCell", hx, x.shape[:-1] + (self.hidden_size,), x.dtype)
        cell = rnn_tanh_cell if self.nonlinearity == "tanh" else rnn_relu_cell
        return cell(x, h, *self._weights())


class GRUCell(RNNCellBase):
    """One GRU step (see `gru_cell` for the equations; gates r, z, n).

    input (N, I) or (I,), hx (N, H) or (H,) (default zeros) -> h' (N, H) or (H,).
    Parameters: weight_ih (3H, I), weight_hh (3H, H), bias_ih (3H,), bias_hh (3H,)."""

    gates = 3

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        h = _state("GRUCell", hx, x.shape[:-1] + (self.hidden_size,), x.dtype)
        return gru_cell(x, h, *self._weights())


class LSTMCell(RNNCellBase):
    """One LSTM step (see `lstm_cell` for the equations; gates i, f, g, o).

    input (N, I) or (I,), hx = (h, c) each (N, H) or (H,) (default zeros) -> (h', c').
    Parameters: weight_ih (4H, I), weight_hh (4H, H), bias_ih (4H,), bias_hh (4H,)."""

    gates = 4

    def forward(self, input, hx=None):
        x, batched = self._input(input)
        shape = x.shape[:-1] + (self.hidden_size,)
        if hx is None:
            hx = (None, None)
        elif not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTMCell: hx must be a pair (h, c), each of shape {shape}, got {type(hx).__name__}")
        h = _state("LSTMCell", hx[0], shape, x.dtype, "hidden state h")
        c = _state("LSTMCell", hx[1], shape, x.dtype, "cell state c")
        return lstm_cell(x, (h, c), *self._weights())


# ============================================================================ whole sequences
class RNNBase(Module):
    """What RNN, GRU and LSTM share: the parameters of every layer and direction, the checks of
    the input and the initial state, and the loop over layers, directions and time steps.

    The input's part of every gate, x_t W_ih^T + b_ih, is computed for all L steps at once, one
    product (L*N, I) @ (I, G*H) per layer and direction; only h_{t-1} W_hh^T waits for the step
    before (the tanh RNN, one fused op per step, does both in its step)."""

    gates = 1
    kernels = "rnn"  # its layer's kernels in kernels/rnn.py (the tanh or ReLU RNN's)

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, dtype=None, device=None):
        super().__init__()
        name = type(self).__name__
        devices.check_device(device, name)
        _check_sizes(name, input_size, hidden_size)
        if not isinstance(num_layers, numbers.Integral) or isinstance(num_layers, bool) or num_layers < 1:
            raise ValueError(f"{name}: num_layers must be a whole number >= 1, got {num_layers!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout must be a probability in [0, 1], got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout={dropout} acts between layers, so with num_layers=1 it does nothing",
                          UserWarning, stacklevel=2)
        dtype = default_float() if dtype is None else dtype
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bool(bidirectional)
        self.num_directions = 2 if self.bidirectional else 1
        rows = self.gates * hidden_size
        self._flat_weights_names = []
        _warm.expect(f"rnn:{self.kernels}")  # (on a first start, the second process compiles its kernels)
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in self._suffixes(layer):
                self._add(f"weight_ih{suffix}", (rows, layer_input), dtype)
                self._add(f"weight_hh{suffix}", (rows, hidden_size), dtype)
                if bias:
                    self._add(f"bias_ih{suffix}", (rows,), dtype)
                    self._add(f"bias_hh{suffix}", (rows,), dtype)

    def _suffixes(self, layer):
        return [f"_l{layer}", f"_l{layer}_reverse"][:self.num_directions]

    def _add(self, name, shape, dtype):
        setattr(self, name, _uniform(shape, self.hidden_size, dtype))
        self._flat_weights_names.append(name)

    def _weights(self, suffix):
        """(W_ih, W_hh, b_ih, b_hh) of one layer and direction; the biases are None without bias."""
        get = lambda kind: getattr(self, kind + suffix, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    @property
    def all_weights(self):
        """[[weight_ih, weight_hh, bias_ih, bias_hh] of each layer and direction], as PyTorch."""
        per = 4 if self.bias else 2
        flat = [getattr(self, n) for n in self._flat_weights_names]
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def flatten_parameters(self):
        """Nothing to do here (PyTorch packs the weights for cuDNN); kept so that code calling it runs."""

    # ------------------------------------------------------------------ input and state
    def _input(self, x):
        """x as a Tensor (L, N, I), whether it was batched, and for a PackedSequence the mask (L, N, 1)
        of the steps inside each sequence (1) and past its end (0); None otherwise."""
        name = type(self).__name__
        if isinstance(x, rnn_utils.PackedSequence):
            if x.data.ndim != 2 or x.data.shape[-1] != self.input_size:
                raise ValueError(f"{name}: the PackedSequence's data has shape {x.data.shape}, expected "
                                 f"(steps, input_size = {self.input_size})")
            padded, lengths = rnn_utils.pad_packed_sequence(x)  # (L, N, I), the batch's own order
            inside = np.arange(padded.shape[0])[:, None] < lengths.numpy()[None, :]
            return padded, True, Tensor(inside[..., None].astype(padded.dtype))
        x = as_tensor(x, dtype=None if isinstance(x, (Tensor, np.ndarray)) else self.weight_ih_l0.dtype)
        layout = "(N, L, I)" if self.batch_first else "(L, N, I)"
        if x.ndim not in (2, 3):
            raise ValueError(f"{name}: expected an input of shape {layout} or (L, I) (unbatched), with "
                             f"I = input_size = {self.input_size}; got {x.ndim}-D of shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: the input of shape {x.shape} has {x.shape[-1]} features (its last axis), "
                             f"but input_size is {self.input_size}")
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)  # (L, 1, I)
        elif self.batch_first:
            x = x.transpose(0, 1)  # (L, N, I)
        if x.shape[0] == 0:
            raise ValueError(f"{name}: the input of shape {x.shape} has no time steps")
        return x, batched, None

    def _initial(self, hx, batch, batched, dtype, what="hidden state"):
        """An initial state (S, N, H) (zeros if hx is None), from (S, N, H), or (S, H) unbatched."""
        states = self.num_layers * self.num_directions
        if hx is None:
            return zeros(states, batch, self.hidden_size, dtype=dtype)
        expected = (states, batch, self.hidden_size) if batched else (states, self.hidden_size)
        hx = _state(type(self).__name__, hx, expected, dtype, f"{what} (num_layers * num_directions, "
                    f"{'N, ' if batched else ''}hidden_size)")
        if hx.dtype != dtype:
            raise TypeError(f"{type(self).__name__}: the input is {dtype} but the {what} is {hx.dtype}")
        return hx if batched else hx.unsqueeze(1)

    def forward(self, input, hx=None):
        """RNN and GRU: one state h per layer and direction (LSTM carries (h, c) and has its own)."""
        x, batched, mask = self._input(input)
        h0 = self._initial(hx, x.shape[1], batched, x.dtype)
        out, final = self._run(x, list(h0.unbind(0)), mask)
        h_n = stack(final, dim=0)
        return self._output(out, batched, input), (h_n if batched else h_n.squeeze(1))

    def _output(self, out, batched, input):
        if isinstance(input, rnn_utils.PackedSequence):
            return rnn_utils._repack(out, input)
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out

    # ------------------------------------------------------------------ the loop
    def _run(self, x, states, mask=None):
        """x (L, N, I); states: per layer and direction, the initial state (for the LSTM a pair);
        mask (L, N, 1) or None (see _input). Returns the last layer's output (L, N, D*H) and the
        final states, in the same order."""
        final = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout and self.training:
                x = dropout(x, self.dropout, True)  # between layers, not after the last one
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                state = states[layer * self.num_directions + direction]
                out, state = self._direction(x, state, self._weights(suffix), direction == 1, mask)
                outputs.append(out)
                final.append(state)
            x = outputs[0] if len(outputs) == 1 else cat(outputs, dim=-1)
        return x, final

    def _direction(self, x, state, weights, reverse, mask=None):
        """One layer in one direction over the L steps of x (L, N, I_layer): (L, N, H) and the last
        state. With a mask (L, N, 1), a step past a sequence's end keeps its state and outputs 0."""
        w_ih, w_hh, b_ih, b_hh = weights
        if self._layer_op and mask is None:  # LSTM and GRU: one op for the whole sequence (ops_rnn.py)
            return self._sequence(F.linear(x, w_ih, b_ih), state, w_hh, b_hh, reverse)
        length = x.shape[0]
        if self._fused:  # the tanh RNN: one fused op per step, input's part included
            step, inputs = (lambda x_t, s: rnn_tanh_cell(x_t, s, w_ih, w_hh, b_ih, b_hh)), x
        else:
            step, inputs = (lambda gi_t, s: self._step(gi_t, s, w_hh, b_hh)), F.linear(x, w_ih, b_ih)
        hs = [None] * length
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            new = step(inputs[t], state)
            if mask is not None:  # state = m * new + (1 - m) * state, for h (and c)
                m = mask[t]
                new = tuple(s + m * (n - s) for n, s in zip(new, state)) if isinstance(new, tuple) else \
                    state + m * (new - state)
            state = new
            h = state[0] if isinstance(state, tuple) else state
            hs[t] = h if mask is None else h * mask[t]
        return stack(hs, dim=0), state

    _fused = False
    _layer_op = False

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity!r}"
        for flag, default in (("bias", True), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, flag) != default:
                text += f", {flag}={getattr(self, flag)}"
        return text


class RNN(RNNBase):
    """An Elman RNN, num_layers deep: at each step t and layer k,

        h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)     (relu with nonlinearity="relu")

    where x_t is the input for layer 0 and the output h_t of layer k - 1 (after dropout while
    training) above. `RNN(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)`.

    rnn(input, h0=None) -> (output, h_n): output (L, N, D*H) is the last layer's h_t at every step,
    h_n (S, N, H) every layer's last h (for the reverse direction: its state after step 0).
    Parameters weight_ih_l{k} (H, I or D*H), weight_hh_l{k} (H, H), bias_ih_l{k}, bias_hh_l{k} (H,)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=None, device=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype, device)
        self.nonlinearity = nonlinearity
        self._fused = nonlinearity == "tanh"

    def _step(self, gi, h, w_hh, b_hh):
        return _rnn_relu_step(gi, h, w_hh, b_hh)

    @property
    def _layer_op(self):
        """One op for the whole sequence (ops_rnn.py), unless the tanh step's backward was replaced:
        the rnn_cell exercise trains nn.RNN with the learner's backward of ops.RNNTanhCell."""
        return self.nonlinearity == "relu" or ops.RNNTanhCell.backward is _TANH_CELL_BACKWARD

    def _sequence(self, gi, h0, w_hh, b_hh, reverse):
        """All the steps of one layer and direction as one op (the same numbers as the step loop)."""
        args = (gi, h0, w_hh) if b_hh is None else (gi, h0, w_hh, b_hh)
        hs = ops_rnn.RNNLayer.apply(*args, relu=self.nonlinearity == "relu", reverse=reverse)
        return hs, hs[0] if reverse else hs[-1]


class GRU(RNNBase):
    """A GRU, num_layers deep (Cho et al. 2014; equations in `gru_cell`, gates r, z, n), over each
    step of the sequence; layer k > 0 reads the output of layer k - 1 (after dropout while training).
    `GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)`.

    gru(input, h0=None) -> (output, h_n), shaped as for `RNN`. Parameters weight_ih_l{k}
    (3H, I or D*H), weight_hh_l{k} (3H, H), bias_ih_l{k}, bias_hh_l{k} (3H,)."""

    gates = 3
    kernels = "gru"  # its layer's kernels in kernels/rnn.py
    _layer_op = True

    def _step(self, gi, h, w_hh, b_hh):
        return _gru_step(gi, h, w_hh, b_hh)

    def _sequence(self, gi, h0, w_hh, b_hh, reverse):
        """All the steps of one layer and direction as one op (the same numbers as _step's loop)."""
        args = (gi, h0, w_hh) if b_hh is None else (gi, h0, w_hh, b_hh)
        hs = ops_rnn.GRULayer.apply(*args, reverse=reverse)
        return hs, hs[0] if reverse else hs[-1]


class LSTM(RNNBase):
    """An LSTM, num_layers deep (Hochreiter & Schmidhuber 1997; equations in `lstm_cell`, gates
    i, f, g, o), over each step of the sequence; layer k > 0 reads the output h of layer k - 1
    (after dropout while training). `LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)`.

    lstm(input, (h0, c0)=None) -> (output, (h_n, c_n)): output (L, N, D*H) is the last layer's h_t
    at every step; h_n, c_n (S, N, H) every layer's last states. Parameters weight_ih_l{k}
    (4H, I or D*H), weight_hh_l{k} (4H, H), bias_ih_l{k}, bias_hh_l{k} (4H,)."""

    gates = 4
    kernels = "lstm"  # its layer's kernels in kernels/rnn.py

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, dtype=None, device=None):
        if proj_size:
            raise NotImplementedError(f"LSTM: proj_size={proj_size} is not supported (only proj_size=0)")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype, device)

    _layer_op = True

    def _step(self, gi, state, w_hh, b_hh):
        return _lstm_step(gi, state, w_hh, b_hh)

    def _sequence(self, gi, state, w_hh, b_hh, reverse):
        """All the steps of one layer and direction as one op (the same numbers as _step's loop)."""
        h0, c0 = state
        args = (gi, h0, c0, w_hh) if b_hh is None else (gi, h0, c0, w_hh, b_hh)
        hs, c_n = ops_rnn.LSTMLayer.apply(*args, reverse=reverse)
        return hs, (hs[0] if reverse else hs[-1], c_n)

    def forward(self, input, hx=None):
        x, batched, mask = self._input(input)
        if hx is None:
            hx = (None, None)
        elif not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTM: hx must be a pair (h0, c0), got {type(hx).__name__}")
        h0 = self._initial(hx[0], x.shape[1], batched, x.dtype, "hidden state h0")
        c0 = self._initial(hx[1], x.shape[1], batched, x.dtype, "cell state c0")
        out, final = self._run(x, list(zip(h0.unbind(0), c0.unbind(0))), mask)
        h_n, c_n = stack([h for h, _ in final], dim=0), stack([c for _, c in final], dim=0)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._output(out, batched, input), (h_n, c_n)
