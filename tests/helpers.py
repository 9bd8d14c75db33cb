"""Helpers the test files share (the hypothesis strategies and the op table are in strategies.py).

- gradient checks of whole modules, and float64 tensors;
- a small classifier and its data, for training and checkpoint tests;
- a tiny GPT and random token ids, for the model-level error and reliability tests;
- `has_all`: an error message names everything it should;
- a block run with the kernels on a given number of threads;
- the kernel tests' comparisons: tolerances per dtype, central differences.
"""
import contextlib

import numpy as np

import minigrad
from minigrad import nn
from strategies import TIGHT
from transformer import GPT

BACKENDS = ["numba", "numpy"]


# ----------------------------------------------------------------------------- gradient checks
def t64(values, requires_grad=False):
    """A float64 tensor of `values`."""
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def gradcheck_module(module, fn, inputs):
    """gradcheck `fn(*inputs)` w.r.t. the inputs and every parameter of `module` (made float64)."""
    module.double()
    params = list(module.parameters())
    assert params and all(p.dtype == np.float64 for p in params)
    n = len(inputs)
    report = minigrad.gradcheck(lambda *args: fn(*args[:n]), [*inputs, *params], **TIGHT)
    assert report
    return report


# ----------------------------------------------------------------------------- a small classifier
def two_spirals(n=200, noise=0.05, seed=0):
    """Two interleaved spirals of 1.5 turns each (class 0 and its point reflection, class 1):
    not separable by a line (a linear model gets ~70%), easy for a small MLP."""
    rng = np.random.default_rng(seed)
    half = n // 2
    t = np.sqrt(rng.uniform(0, 1, half)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    x = np.concatenate([arm, -arm]) + noise * rng.standard_normal((2 * half, 2))
    y = np.repeat(np.array([0, 1], dtype=np.int64), half)
    return x.astype(np.float32), y


class MLP(nn.Module):
    """2 -> 32 -> 32 -> 2, with dropout `p` after the second layer."""

    def __init__(self, p=0.0):
        super().__init__()
        self.fc1 = nn.Linear(2, 32)
        self.fc2 = nn.Linear(32, 32)
        self.drop = nn.Dropout(p)
        self.fc3 = nn.Linear(32, 2)

    def forward(self, x):
        h = self.fc1(x).tanh()
        h = self.drop(self.fc2(h).relu())
        return self.fc3(h)


def train_steps(model, opt, x, y, steps, batch=32):
    """`steps` steps of cross-entropy on random batches drawn from minigrad's generator; the losses."""
    losses = []
    for _ in range(steps):
        idx = minigrad.random.generator().integers(0, len(x), batch)
        loss = nn.functional.cross_entropy(model(minigrad.tensor(x[idx])), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# ----------------------------------------------------------------------------- a tiny GPT
def tiny_gpt(seed=0, **overrides):
    minigrad.manual_seed(seed)
    config = dict(vocab_size=16, block_size=8, n_layer=1, n_head=2, d_model=16)
    config.update(overrides)
    return GPT(**config)


def token_ids(*shape, high=16, seed=0):
    """A tensor of random ids in [0, high)."""
    return minigrad.tensor(np.random.default_rng(seed).integers(0, high, shape))


# ----------------------------------------------------------------------------- error messages
def has_all(message, *parts):
    """Assert that `message` contains every one of `parts`."""
    missing = [p for p in parts if p not in message]
    assert not missing, f"{missing} not in message: {message!r}"


# ----------------------------------------------------------------------------- threads
@contextlib.contextmanager
def num_threads(n):
    """Run the block with the kernels on `n` threads, then restore the previous count."""
    previous = minigrad.get_num_threads()
    minigrad.set_num_threads(n)
    try:
        yield
    finally:
        minigrad.set_num_threads(previous)


# ----------------------------------------------------------------------------- kernel comparisons
DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 1e-5, np.float64: 1e-12}
ATOL = {np.float32: 1e-6, np.float64: 1e-12}


def assert_close(got, expected, scale=1.0):
    """got == expected to the tolerance of its dtype; ``scale`` widens atol for large values."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    dtype = got.dtype.type
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=ATOL[dtype] * scale)


def magnitude(*arrays):
    """The largest finite |value| in the arrays, at least 1."""
    return max(1.0, *(float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0)) for a in arrays))


def central_difference(f, x, h=1e-6):
    """d f(x) / dx (same shape as x) for a scalar function f of a float64 array, by central differences."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + h
        up = f(x)
        x[index] = saved - h
        down = f(x)
        x[index] = saved
        grad[index] = (up - down) / (2 * h)
    return grad
