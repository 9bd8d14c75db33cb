"""The CNN and RNN names course code takes from torch.nn that came last: channel dropout
(Dropout1d/2d/3d, F.dropout1d/2d/3d), AvgPool1d, the adaptive poolings AdaptiveAvgPool1d,
AdaptiveMaxPool1d/2d (with return_indices), the padding layers (ZeroPad, ConstantPad,
ReflectionPad, ReplicationPad, CircularPad in 1, 2 and 3 d), PixelShuffle and PixelUnshuffle, and
nn.utils.rnn.pad_sequence.

Each deterministic one: values against a numpy formula written here (loops over PyTorch's
definitions, not the library's code path) in float32 and float64, a float64 gradient check of
every element, and the same against PyTorch when it is installed (value, dtype, shape, gradient;
max pooling's indices too). Channel dropout is random: its structure (whole channels zeroed or
scaled), the fraction dropped (within a binomial bound), eval mode, seeded generators and a
compiled step's replay are checked instead. Then the errors.

Tolerances come from course_compare: the poolings sum at most `terms` numbers per output (a
window) or per input gradient (the windows that share it); copies (padding, shuffles, max) are
exact."""
import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from course_compare import DTYPES, assert_close, assert_same_as_torch, magnitude
from helpers import has_all
from minigrad import nn
from strategies import TIGHT, leaf


def rng(seed):
    return np.random.default_rng(seed)


def distinct(shape, seed):
    """Values in [-2, 2) at least 4 / size apart (no ties: a max and its gradient are well defined)."""
    size = math.prod(shape)
    return (rng(seed).permutation(size).reshape(shape) / size * 4.0 - 2.0) if size else np.zeros(shape)


def normal(shape, seed):
    return rng(seed).standard_normal(shape)


# ============================================================================ numpy references
def pool_out(n, k, s, p, ceil_mode):
    """PyTorch's output length: floor((n + 2p - k) / s) + 1 (ceil with ceil_mode, but the last window
    must start inside the input or the front padding)."""
    span = n + 2 * p - k
    o = (math.ceil(span / s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def avg_pool1d_ref(x, k, s=None, p=0, ceil_mode=False, count_include_pad=True):
    """Window o covers [o s - p, o s - p + k) clipped to the padded input [-p, n + p); its mean
    divides by that span (count_include_pad) or by the part inside [0, n)."""
    s = k if s is None else s
    n = x.shape[-1]
    out = np.zeros(x.shape[:-1] + (pool_out(n, k, s, p, ceil_mode),))
    for o in range(out.shape[-1]):
        start = o * s - p
        end = min(start + k, n + p)
        lo, hi = max(start, 0), min(end, n)
        out[..., o] = x[..., lo:hi].sum(-1) / (end - start if count_include_pad else hi - lo)
    return out


def windows(n, out):
    """PyTorch's adaptive windows: [floor(i n / out), ceil((i + 1) n / out))."""
    return [(math.floor(i * n / out), math.ceil((i + 1) * n / out)) for i in range(out)]


def adaptive_ref(x, sizes, how):
    """Adaptive pooling over the last len(sizes) axes (None keeps an axis): the mean or max of each
    product of windows; for max also the index of the first max in the pooled (H, W) plane."""
    dims = len(sizes)
    spatial = x.shape[-dims:]
    sizes = [n if s is None else s for s, n in zip(sizes, spatial)]
    out = np.zeros(x.shape[:-dims] + tuple(sizes))
    index = np.zeros(out.shape, dtype=np.int64)
    for cell in np.ndindex(*sizes):
        bounds = [windows(n, o)[i] for n, o, i in zip(spatial, sizes, cell)]
        block = x[(...,) + tuple(slice(a, b) for a, b in bounds)]
        flat = block.reshape(block.shape[:-dims] + (-1,))
        if how == "avg":
            out[(...,) + cell] = flat.mean(-1)
        else:
            arg = flat.argmax(-1)
            out[(...,) + cell] = flat.max(-1)
            local = np.unravel_index(arg, block.shape[-dims:])
            pos = [a + lo for a, (lo, _) in zip(local, bounds)]
            index[(...,) + cell] = pos[0] if dims == 1 else pos[0] * spatial[1] + pos[1]
    return out, index


def pad_ref(x, pads, mode, value=0.0):
    """Each padded position j of an axis of n (j from -before to n + after) reads the input at
    j (constant: value outside [0, n)), |j| mirrored at both ends (reflect), j clipped (replicate),
    or j mod n (circular). pads: PyTorch's order, the last axis first."""
    for i in range(len(pads) // 2):
        axis = x.ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        n = x.shape[axis]
        j = np.arange(-before, n + after)
        if mode == "reflect":
            source = np.abs(j)
            source = np.where(source > n - 1, 2 * (n - 1) - source, source)
        elif mode == "replicate":
            source = np.clip(j, 0, n - 1)
        elif mode == "circular":
            source = j % n
        else:
            source = np.clip(j, 0, n - 1)
        taken = np.take(x, source, axis=axis)
        if mode == "constant":
            outside = ((j < 0) | (j >= n)).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
            taken = np.where(outside, value, taken)
        x = taken
    return x


def pixel_shuffle_ref(x, r):
    """y[..., c, h r + i, w r + j] = x[..., c r^2 + i r + j, h, w]."""
    *batch, c, h, w = x.shape
    y = np.zeros((*batch, c // (r * r), h * r, w * r))
    for c2, i, j in np.ndindex(c // (r * r), r, r):
        y[..., c2, i::r, j::r] = x[..., c2 * r * r + i * r + j, :, :]
    return y


def pixel_unshuffle_ref(x, r):
    """y[..., c r^2 + i r + j, h, w] = x[..., c, h r + i, w r + j]."""
    *batch, c, h, w = x.shape
    y = np.zeros((*batch, c * r * r, h // r, w // r))
    for c2, i, j in np.ndindex(c, r, r):
        y[..., c2 * r * r + i * r + j, :, :] = x[..., c2, i::r, j::r]
    return y


# ============================================================================ the cases
@dataclass
class Case:
    """`make(nn, F)` gives the function to call, from minigrad's or PyTorch's nn and F; `formula(x)`
    its numpy value; `shape` the input's; `data` distinct values (max pooling) or normal ones;
    `terms`: how many numbers an output (or an input's gradient) adds up."""
    make: Callable
    formula: Callable
    shape: tuple
    terms: int = 1
    data: Callable = field(default=normal)


def adaptive(sizes, how):
    return lambda x: adaptive_ref(x, sizes, how)[0]


CASES = {
    # AvgPool1d: PyTorch's docs, nn.AvgPool1d(3, stride=2) on (1, 1, 7), then the options
    "avg_pool1d_docs": Case(lambda nn, F: nn.AvgPool1d(3, stride=2), lambda x: avg_pool1d_ref(x, 3, 2), (1, 1, 7), 3),
    "avg_pool1d": Case(lambda nn, F: (lambda x: F.avg_pool1d(x, 2)), lambda x: avg_pool1d_ref(x, 2), (2, 3, 9), 2),
    "avg_pool1d_pad": Case(lambda nn, F: nn.AvgPool1d(3, 2, 1), lambda x: avg_pool1d_ref(x, 3, 2, 1), (2, 3, 8), 3),
    "avg_pool1d_exclude_pad": Case(lambda nn, F: nn.AvgPool1d(3, 2, 1, count_include_pad=False),
                                   lambda x: avg_pool1d_ref(x, 3, 2, 1, count_include_pad=False), (2, 3, 8), 3),
    "avg_pool1d_ceil": Case(lambda nn, F: nn.AvgPool1d(3, 2, 1, ceil_mode=True),
                            lambda x: avg_pool1d_ref(x, 3, 2, 1, ceil_mode=True), (2, 3, 8), 3),
    "avg_pool1d_ceil_exclude": Case(lambda nn, F: (lambda x: F.avg_pool1d(x, 4, 3, 2, True, False)),
                                    lambda x: avg_pool1d_ref(x, 4, 3, 2, True, False), (2, 2, 10), 4),
    "avg_pool1d_unbatched": Case(lambda nn, F: nn.AvgPool1d(2), lambda x: avg_pool1d_ref(x, 2), (3, 7), 2),
    # AdaptiveAvgPool1d: PyTorch's docs, nn.AdaptiveAvgPool1d(5) on (1, 64, 8), made smaller
    "adaptive_avg_pool1d_docs": Case(lambda nn, F: nn.AdaptiveAvgPool1d(5), adaptive((5,), "avg"), (1, 4, 8), 2),
    "adaptive_avg_pool1d_3": Case(lambda nn, F: (lambda x: F.adaptive_avg_pool1d(x, 3)), adaptive((3,), "avg"),
                                  (2, 3, 7), 3),
    "adaptive_avg_pool1d_global": Case(lambda nn, F: nn.AdaptiveAvgPool1d(1), adaptive((1,), "avg"), (2, 3, 7), 7),
    "adaptive_avg_pool1d_bigger": Case(lambda nn, F: nn.AdaptiveAvgPool1d((10,)), adaptive((10,), "avg"), (2, 3, 4),
                                       2),
    "adaptive_avg_pool1d_unbatched": Case(lambda nn, F: nn.AdaptiveAvgPool1d(4), adaptive((4,), "avg"), (3, 9), 3),
    # AdaptiveMaxPool2d: PyTorch's docs, (5, 7), 7 and (None, 7) on (1, 64, 8, 9), made smaller
    "adaptive_max_pool2d_docs": Case(lambda nn, F: nn.AdaptiveMaxPool2d((5, 7)), adaptive((5, 7), "max"),
                                     (1, 3, 8, 9), data=distinct),
    "adaptive_max_pool2d_int": Case(lambda nn, F: nn.AdaptiveMaxPool2d(7), adaptive((7, 7), "max"), (1, 3, 10, 9),
                                    data=distinct),
    "adaptive_max_pool2d_none": Case(lambda nn, F: nn.AdaptiveMaxPool2d((None, 7)), adaptive((None, 7), "max"),
                                     (1, 3, 8, 9), data=distinct),
    "adaptive_max_pool2d_even": Case(lambda nn, F: (lambda x: F.adaptive_max_pool2d(x, (3, 2))),
                                     adaptive((3, 2), "max"), (2, 3, 6, 8), data=distinct),
    "adaptive_max_pool2d_global": Case(lambda nn, F: nn.AdaptiveMaxPool2d(1), adaptive((1, 1), "max"), (2, 3, 5, 7),
                                       data=distinct),
    "adaptive_max_pool2d_bigger": Case(lambda nn, F: nn.AdaptiveMaxPool2d((6, 4)), adaptive((6, 4), "max"),
                                       (2, 2, 4, 3), data=distinct),
    "adaptive_max_pool2d_unbatched": Case(lambda nn, F: nn.AdaptiveMaxPool2d((2, 4)), adaptive((2, 4), "max"),
                                          (3, 5, 7), data=distinct),
    # AdaptiveMaxPool1d: PyTorch's docs, nn.AdaptiveMaxPool1d(5) on (1, 64, 8), made smaller
    "adaptive_max_pool1d_docs": Case(lambda nn, F: nn.AdaptiveMaxPool1d(5), adaptive((5,), "max"), (1, 4, 8),
                                     data=distinct),
    "adaptive_max_pool1d_3": Case(lambda nn, F: (lambda x: F.adaptive_max_pool1d(x, 3)), adaptive((3,), "max"),
                                  (2, 3, 7), data=distinct),
    "adaptive_max_pool1d_bigger": Case(lambda nn, F: nn.AdaptiveMaxPool1d(9), adaptive((9,), "max"), (2, 3, 5),
                                       data=distinct),
    "adaptive_max_pool1d_unbatched": Case(lambda nn, F: nn.AdaptiveMaxPool1d(2), adaptive((2,), "max"), (3, 7),
                                          data=distinct),
    # padding layers: PyTorch's docs shapes, (1, 1, 3, 3) and (1, 2, 4), with their paddings
    "zero_pad2d_docs": Case(lambda nn, F: nn.ZeroPad2d(2), lambda x: pad_ref(x, (2,) * 4, "constant"), (1, 1, 3, 3)),
    "zero_pad2d_tuple": Case(lambda nn, F: nn.ZeroPad2d((1, 1, 2, 0)), lambda x: pad_ref(x, (1, 1, 2, 0), "constant"),
                             (1, 1, 3, 3)),
    "zero_pad2d_crop": Case(lambda nn, F: nn.ZeroPad2d((-1, 2, 1, -2)),
                            lambda x: pad_ref(x, (-1, 2, 1, -2), "constant"), (2, 2, 4, 5)),
    "zero_pad1d": Case(lambda nn, F: nn.ZeroPad1d((3, 1)), lambda x: pad_ref(x, (3, 1), "constant"), (1, 2, 4)),
    "zero_pad3d": Case(lambda nn, F: nn.ZeroPad3d((1, 0, 0, 2, 1, 1)),
                       lambda x: pad_ref(x, (1, 0, 0, 2, 1, 1), "constant"), (1, 2, 2, 3, 2)),
    "constant_pad1d_docs": Case(lambda nn, F: nn.ConstantPad1d(2, 3.5), lambda x: pad_ref(x, (2, 2), "constant", 3.5),
                                (1, 2, 4)),
    "constant_pad1d_tuple": Case(lambda nn, F: nn.ConstantPad1d((3, 1), 3.5),
                                 lambda x: pad_ref(x, (3, 1), "constant", 3.5), (1, 2, 3)),
    "constant_pad2d_docs": Case(lambda nn, F: nn.ConstantPad2d((3, 0, 2, 1), 3.5),
                                lambda x: pad_ref(x, (3, 0, 2, 1), "constant", 3.5), (1, 2, 2)),
    "constant_pad3d": Case(lambda nn, F: nn.ConstantPad3d(1, -1.0), lambda x: pad_ref(x, (1,) * 6, "constant", -1.0),
                           (1, 2, 2, 2, 3)),
    "reflection_pad1d_docs": Case(lambda nn, F: nn.ReflectionPad1d(2), lambda x: pad_ref(x, (2, 2), "reflect"),
                                  (1, 2, 4)),
    "reflection_pad1d_tuple": Case(lambda nn, F: nn.ReflectionPad1d((3, 1)), lambda x: pad_ref(x, (3, 1), "reflect"),
                                   (1, 2, 4)),
    "reflection_pad1d_unbatched": Case(lambda nn, F: nn.ReflectionPad1d((1, 3)),
                                       lambda x: pad_ref(x, (1, 3), "reflect"), (3, 4)),
    "reflection_pad2d_docs": Case(lambda nn, F: nn.ReflectionPad2d(2), lambda x: pad_ref(x, (2,) * 4, "reflect"),
                                  (1, 1, 3, 3)),
    "reflection_pad2d_tuple": Case(lambda nn, F: nn.ReflectionPad2d((1, 1, 2, 0)),
                                   lambda x: pad_ref(x, (1, 1, 2, 0), "reflect"), (1, 1, 3, 3)),
    "reflection_pad2d_wide": Case(lambda nn, F: nn.ReflectionPad2d((3, 2, 1, 2)),
                                  lambda x: pad_ref(x, (3, 2, 1, 2), "reflect"), (2, 3, 4, 5)),
    "reflection_pad2d_unbatched": Case(lambda nn, F: nn.ReflectionPad2d(1), lambda x: pad_ref(x, (1,) * 4, "reflect"),
                                       (2, 3, 3)),
    "reflection_pad3d": Case(lambda nn, F: nn.ReflectionPad3d((1, 0, 1, 1, 0, 1)),
                             lambda x: pad_ref(x, (1, 0, 1, 1, 0, 1), "reflect"), (1, 2, 2, 3, 3)),
    "replication_pad1d_docs": Case(lambda nn, F: nn.ReplicationPad1d(2), lambda x: pad_ref(x, (2, 2), "replicate"),
                                   (1, 2, 4)),
    "replication_pad1d_tuple": Case(lambda nn, F: nn.ReplicationPad1d((3, 1)),
                                    lambda x: pad_ref(x, (3, 1), "replicate"), (1, 2, 4)),
    "replication_pad2d_docs": Case(lambda nn, F: nn.ReplicationPad2d(2), lambda x: pad_ref(x, (2,) * 4, "replicate"),
                                   (1, 1, 3, 3)),
    "replication_pad2d_tuple": Case(lambda nn, F: nn.ReplicationPad2d((1, 1, 2, 0)),
                                    lambda x: pad_ref(x, (1, 1, 2, 0), "replicate"), (1, 1, 3, 3)),
    "replication_pad2d_wide": Case(lambda nn, F: nn.ReplicationPad2d((4, 0, 3, 5)),
                                   lambda x: pad_ref(x, (4, 0, 3, 5), "replicate"), (2, 2, 2, 3)),
    "replication_pad3d": Case(lambda nn, F: nn.ReplicationPad3d(1), lambda x: pad_ref(x, (1,) * 6, "replicate"),
                              (2, 2, 3, 2)),
    "circular_pad1d": Case(lambda nn, F: nn.CircularPad1d((2, 3)), lambda x: pad_ref(x, (2, 3), "circular"),
                           (1, 2, 4)),
    "circular_pad2d_docs": Case(lambda nn, F: nn.CircularPad2d((1, 1, 2, 0)),
                                lambda x: pad_ref(x, (1, 1, 2, 0), "circular"), (1, 1, 3, 3)),
    "circular_pad3d": Case(lambda nn, F: nn.CircularPad3d((1, 2, 0, 1, 1, 0)),
                           lambda x: pad_ref(x, (1, 2, 0, 1, 1, 0), "circular"), (1, 1, 2, 3, 3)),
    # PixelShuffle: PyTorch's docs, nn.PixelShuffle(3) on (1, 9, 4, 4), and the way back
    "pixel_shuffle_docs": Case(lambda nn, F: nn.PixelShuffle(3), lambda x: pixel_shuffle_ref(x, 3), (1, 9, 4, 4)),
    "pixel_shuffle_2": Case(lambda nn, F: (lambda x: F.pixel_shuffle(x, 2)), lambda x: pixel_shuffle_ref(x, 2),
                            (2, 8, 3, 2)),
    "pixel_shuffle_batch_dims": Case(lambda nn, F: nn.PixelShuffle(2), lambda x: pixel_shuffle_ref(x, 2),
                                     (2, 1, 4, 2, 3)),
    "pixel_shuffle_unbatched": Case(lambda nn, F: nn.PixelShuffle(2), lambda x: pixel_shuffle_ref(x, 2), (8, 2, 3)),
    "pixel_unshuffle_docs": Case(lambda nn, F: nn.PixelUnshuffle(3), lambda x: pixel_unshuffle_ref(x, 3),
                                 (1, 1, 12, 12)),
    "pixel_unshuffle_2": Case(lambda nn, F: (lambda x: F.pixel_unshuffle(x, 2)), lambda x: pixel_unshuffle_ref(x, 2),
                              (2, 3, 4, 6)),
    "pixel_unshuffle_batch_dims": Case(lambda nn, F: nn.PixelUnshuffle(2), lambda x: pixel_unshuffle_ref(x, 2),
                                       (3, 1, 2, 4, 2)),
}


def ours(case):
    return case.make(nn, F)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_matches_formula(name, dtype):
    case = CASES[name]
    x = case.data(case.shape, 1).astype(dtype)
    out = ours(case)(minigrad.tensor(x))
    expected = case.formula(x.astype(np.float64))
    assert out.dtype == dtype and out.shape == expected.shape
    assert_close(out, expected, dtype, magnitude(x, expected), case.terms)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_every_element(name):
    case = CASES[name]
    fn = ours(case)  # (in a lambda: gradcheck of a Module itself checks at most 64 elements)
    report = minigrad.gradcheck(lambda x: fn(x), [leaf(case.data(case.shape, 2))], **TIGHT)
    assert all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    x = case.data(case.shape, 3).astype(dtype)
    ours_x, their_x = minigrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(case)(ours_x), case.make(torch.nn, torch.nn.functional)(their_x)
    assert_same_as_torch(out, ref, dtype, magnitude(x), case.terms)
    upstream = rng(4).standard_normal(tuple(ref.shape)).astype(dtype)
    out.backward(minigrad.tensor(upstream))
    ref.backward(torch.tensor(upstream))
    assert_same_as_torch(ours_x.grad, their_x.grad, dtype, magnitude(upstream), case.terms)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("adaptive_max") and isinstance(ours(CASES[n]),
                                                                                                  nn.Module)])
def test_adaptive_max_pool_indices_are_pytorchs_and_the_formulas(name):
    """return_indices: the position of each max, h W + w in its plane (1-d: along L), int64, no grad."""
    case = CASES[name]
    x = case.data(case.shape, 5)
    layer = ours(case)
    layer.return_indices = True
    dims = 2 if "2d" in name else 1
    y, indices = layer(leaf(x))
    sizes = tuple(layer.output_size) if isinstance(layer.output_size, tuple) else (layer.output_size,) * dims
    expected, expected_indices = adaptive_ref(x, sizes, "max")
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(indices.numpy(), expected_indices)
    assert indices.dtype == np.int64 and not indices.requires_grad
    functional = F.adaptive_max_pool2d if dims == 2 else F.adaptive_max_pool1d
    np.testing.assert_array_equal(functional(leaf(x), layer.output_size, return_indices=True)[1].numpy(),
                                  expected_indices)
    try:
        import torch
    except ImportError:
        return
    their = getattr(torch.nn.functional, functional.__name__)(torch.tensor(x), layer.output_size, return_indices=True)
    np.testing.assert_array_equal(indices.numpy(), their[1].numpy())


def test_adaptive_max_pool_shares_the_gradient_of_overlapping_windows():
    """n = 5 into 3 windows: [0, 2), [1, 4), [3, 5); the max 9 at position 1 is in the first two
    windows, so it gets both their gradients, as PyTorch's."""
    x = leaf([[[0.0, 9.0, 1.0, 2.0, 3.0]]])
    y = F.adaptive_max_pool1d(x, 3)
    np.testing.assert_array_equal(y.numpy(), [[[9.0, 9.0, 3.0]]])
    y.backward(minigrad.tensor([[[1.0, 10.0, 100.0]]]).double())
    np.testing.assert_array_equal(x.grad.numpy(), [[[0.0, 11.0, 0.0, 0.0, 100.0]]])


def test_reflection_pad_gradient_adds_the_mirrored_copies_back():
    """[a b c] reflected by 2 is c b [a b c] b a: b is read three times, a and c twice."""
    x = leaf([[[1.0, 2.0, 3.0]]])
    y = nn.ReflectionPad1d(2)(x)
    np.testing.assert_array_equal(y.numpy(), [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]])
    y.backward(minigrad.tensor(np.array([[[1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]]])))
    np.testing.assert_array_equal(x.grad.numpy(), [[[100.0 + 1e6, 10.0 + 1e3 + 1e5, 1.0 + 1e4]]])


def test_pixel_unshuffle_undoes_pixel_shuffle():
    x = minigrad.tensor(normal((2, 12, 3, 4), 6))
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(), x.numpy())
    y = minigrad.tensor(normal((2, 3, 6, 9), 7))
    np.testing.assert_array_equal(F.pixel_shuffle(F.pixel_unshuffle(y, 3), 3).numpy(), y.numpy())


# ============================================================================ layers: attributes, reprs
LAYERS = [
    ("AvgPool1d", (3,), {}), ("AvgPool1d", (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("AdaptiveAvgPool1d", (5,), {}), ("AdaptiveMaxPool1d", (5,), {}), ("AdaptiveMaxPool2d", ((5, None),), {}),
    ("AdaptiveMaxPool2d", (7,), {"return_indices": True}),
    ("ZeroPad1d", (2,), {}), ("ZeroPad2d", (2,), {}), ("ZeroPad2d", ((1, 1, 2, 0),), {}), ("ZeroPad3d", (1,), {}),
    ("ConstantPad1d", (2, 3.5), {}), ("ConstantPad2d", ((3, 0, 2, 1), 3.5), {}), ("ConstantPad3d", (1, 2), {}),
    ("ReflectionPad1d", (2,), {}), ("ReflectionPad2d", ((1, 1, 2, 0),), {}), ("ReflectionPad3d", (1,), {}),
    ("ReplicationPad1d", ((3, 1),), {}), ("ReplicationPad2d", (2,), {}), ("ReplicationPad3d", (1,), {}),
    ("CircularPad1d", (1,), {}), ("CircularPad2d", ((1, 1, 2, 0),), {}), ("CircularPad3d", (2,), {}),
    ("PixelShuffle", (3,), {}), ("PixelUnshuffle", (2,), {}),
]
ATTRIBUTES = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "output_size", "return_indices",
              "value", "upscale_factor", "downscale_factor"]


def test_layer_attributes():
    assert nn.AvgPool1d(3).kernel_size == (3,) and nn.AvgPool1d(3).stride == (3,) and nn.AvgPool1d(3).padding == (0,)
    assert nn.ZeroPad2d(2).padding == (2, 2, 2, 2) and nn.ZeroPad2d(2).value == 0.0
    assert nn.ConstantPad1d(2, 3.5).padding == (2, 2) and nn.ConstantPad1d(2, 3.5).value == 3.5
    assert nn.ReflectionPad2d((1, 2, 3, 4)).padding == (1, 2, 3, 4)
    assert repr(nn.ReflectionPad1d(2)) == "ReflectionPad1d((2, 2))"
    assert repr(nn.Dropout2d(0.25)) == "Dropout2d(p=0.25, inplace=False)"  # (PyTorch's repr)


@pytest.mark.parametrize("name, args, kwargs", LAYERS)
def test_layer_attributes_and_repr_are_pytorchs(name, args, kwargs):
    torch = pytest.importorskip("torch")
    layer, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(layer) == repr(theirs)
    for attribute in ATTRIBUTES:
        if hasattr(theirs, attribute):
            assert getattr(layer, attribute) == getattr(theirs, attribute), attribute
    assert not list(layer.parameters()) and layer.state_dict() == {}


# ============================================================================ channel dropout
DROPOUTS = {  # name: (F function, layer, batched input shape, unbatched shape or None)
    "dropout1d": (F.dropout1d, nn.Dropout1d, (64, 32, 5), (32, 5)),
    "dropout2d": (F.dropout2d, nn.Dropout2d, (64, 32, 3, 2), None),
    "dropout3d": (F.dropout3d, nn.Dropout3d, (32, 16, 2, 2, 3), (16, 2, 2, 3)),
}


def kept_channels(x, y, p, channel_axes):
    """Whether each channel of y (one per (sample, channel), the first `channel_axes` axes) was kept;
    asserts that each channel is either all zeros or all x / (1 - p) (to a rounding: x is nonzero)."""
    dropped = (y == 0).reshape(y.shape[:channel_axes] + (-1,))
    assert np.all(dropped == dropped[..., :1]), "a channel was neither dropped nor kept whole"
    kept = ~dropped[..., 0]
    at = kept.reshape(kept.shape + (1,) * (y.ndim - channel_axes)) & np.ones(y.shape, dtype=bool)
    eps = np.finfo(y.dtype).eps
    np.testing.assert_allclose(y[at], x[at].astype(np.float64) / (1 - p), rtol=2 * eps)
    return kept


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("name", list(DROPOUTS))
def test_channel_dropout_zeroes_or_scales_whole_channels(name, p, dtype):
    fn, _, shape, unbatched = DROPOUTS[name]
    x = rng(8).uniform(0.5, 2.0, shape).astype(dtype)
    for x_in, channel_axes in [(x, 2)] + ([(x[0], 1)] if unbatched else []):
        y = fn(minigrad.tensor(x_in), p, generator=minigrad.Generator().manual_seed(1))
        assert y.dtype == dtype and y.shape == x_in.shape
        kept = kept_channels(x_in, y.numpy(), p, channel_axes)
        # each channel is dropped with probability p, independently: the count is Binomial(m, p),
        # within 5 standard deviations of m p but once in 3 million runs (and the generator is seeded)
        m = kept.size
        dropped = int((~kept).sum())
        assert abs(dropped - m * p) <= 5 * math.sqrt(m * p * (1 - p)), (dropped, m, p)


@pytest.mark.parametrize("name", list(DROPOUTS))
def test_channel_dropout_gradient_is_the_mask(name):
    """y = x m: dx = g m, with the mask of the forward; gradcheck with a generator seeded afresh at
    each call, so every evaluation draws the same mask."""
    fn, layer, shape, _ = DROPOUTS[name]
    shape = (3, 4) + shape[2:]
    report = minigrad.gradcheck(lambda t: fn(t, 0.4, generator=minigrad.Generator().manual_seed(3)),
                                [leaf(normal(shape, 9))], **TIGHT)
    assert all(r.checked == r.size for r in report.inputs)
    x = leaf(rng(10).uniform(0.5, 2.0, shape))
    y = layer(0.4, generator=minigrad.Generator().manual_seed(3))(x)
    g = normal(shape, 11)
    y.backward(minigrad.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), g * (y.numpy() / x.numpy()), rtol=1e-15)


@pytest.mark.parametrize("name", list(DROPOUTS))
def test_channel_dropout_eval_p0_p1(name):
    fn, layer, shape, _ = DROPOUTS[name]
    x = minigrad.tensor(normal(shape, 12).astype(np.float32))
    module = layer(0.5).eval()
    np.testing.assert_array_equal(module(x).numpy(), x.numpy())
    np.testing.assert_array_equal(fn(x, 0.5, training=False).numpy(), x.numpy())
    np.testing.assert_array_equal(fn(x, 0.0).numpy(), x.numpy())
    assert np.all(fn(x, 1.0).numpy() == 0)
    assert module.train().training and not np.array_equal(module(x).numpy(), x.numpy())


@pytest.mark.parametrize("name", list(DROPOUTS))
def test_channel_dropout_seeded_generator_reproduces_the_masks(name):
    _, layer, shape, _ = DROPOUTS[name]
    x = minigrad.tensor(np.ones(shape, dtype=np.float32))
    a, b = layer(0.5, generator=minigrad.Generator().manual_seed(7)), layer(0.5, generator=minigrad.Generator()
                                                                             .manual_seed(7))
    first, again = a(x).numpy(), b(x).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(a(x).numpy(), first)  # the next draw: another mask
    minigrad.manual_seed(5)
    c = layer(0.5)(x).numpy()
    minigrad.manual_seed(5)
    np.testing.assert_array_equal(layer(0.5)(x).numpy(), c)  # the default generator, seeded


def test_dropout2d_takes_a_3d_input_as_pytorch_does():
    """PyTorch's dropout2d takes (A, B, L) as (N, C, L), with a warning: whole rows of B are dropped."""
    x = np.ones((8, 16, 5), dtype=np.float32)
    with pytest.warns(UserWarning, match="dropout2d: a 3-D input is taken as \\(N, C, L\\)"):
        y = F.dropout2d(minigrad.tensor(x), 0.5, generator=minigrad.Generator().manual_seed(0)).numpy()
    kept = kept_channels(x, y, 0.5, 2)
    assert 0 < kept.sum() < kept.size
    try:
        import torch
    except ImportError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.functional.dropout2d(torch.tensor(x), 0.5).numpy()
    their_kept = kept_channels(x, theirs, 0.5, 2)  # the same structure in PyTorch
    assert 0 < their_kept.sum() < their_kept.size


@pytest.mark.parametrize("name", list(DROPOUTS))
def test_channel_dropout_the_same_in_pytorch_where_not_random(name):
    """Eval mode, p = 0 and p = 1 give PyTorch's values, dtype and shape."""
    torch = pytest.importorskip("torch")
    fn, layer, shape, unbatched = DROPOUTS[name]
    x = normal(shape, 13).astype(np.float32)
    theirs = getattr(torch.nn.functional, name)
    for p, training in [(0.5, False), (0.0, True), (1.0, True)]:
        for x_in in [x] + ([x[0]] if unbatched else []):
            assert_same_as_torch(fn(minigrad.tensor(x_in), p, training), theirs(torch.tensor(x_in), p, training),
                                 np.float32)


def test_a_compiled_step_with_dropout2d_replays_fresh_masks():
    """The masks are drawn inside an op (ops.Dropout on ones (N, C, 1, 1)): a replayed step draws new
    ones, the same as the eager step's for the same seed, and nothing falls back to eager."""
    x = minigrad.tensor(normal((6, 2, 5, 5), 14).astype(np.float32))
    y = minigrad.tensor(np.arange(6) % 3)

    def make():
        minigrad.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Dropout2d(0.5), nn.AdaptiveMaxPool2d((3, 2)),
                              nn.Flatten(), nn.Linear(24, 3))
        opt = minigrad.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step

    losses = []
    for compiled in (False, True):
        step = make()
        step = minigrad.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a compiled step that fell back to eager would warn
            losses.append([step(x, y).item() for _ in range(8)])
    assert step.stats == {"eager": 1, "recorded": 1, "replayed": 6}
    assert losses[1] == losses[0]
    assert len(set(losses[0])) == len(losses[0])  # a new mask (and new weights) at every step


# ============================================================================ pad_sequence
def pad_sequence_ref(arrays, batch_first, value, side):
    longest = max(len(a) for a in arrays)
    out = np.full((len(arrays), longest) + arrays[0].shape[1:], value, dtype=np.float64)
    for b, a in enumerate(arrays):
        if side == "right":
            out[b, :len(a)] = a
        else:
            out[b, longest - len(a):] = a
    return out if batch_first else out.swapaxes(0, 1)


SEQUENCE_SHAPES = [[(5, 3), (2, 3), (4, 3)], [(1,), (4,), (3,)], [(3, 2, 2), (3, 2, 2)], [(0, 2), (2, 2)]]
PAD_OPTIONS = [(False, 0.0, "right"), (True, 0.0, "right"), (True, -1.5, "left"), (False, 2.0, "left")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first, value, side", PAD_OPTIONS)
@pytest.mark.parametrize("shapes", SEQUENCE_SHAPES)
def test_pad_sequence_matches_formula(shapes, batch_first, value, side, dtype):
    from minigrad.nn.utils.rnn import pad_sequence

    arrays = [normal(s, i).astype(dtype) for i, s in enumerate(shapes)]
    out = pad_sequence([minigrad.tensor(a) for a in arrays], batch_first, value, side)
    expected = pad_sequence_ref(arrays, batch_first, value, side)
    assert out.dtype == dtype
    assert_close(out, expected, dtype)
    kwargs = pad_sequence([minigrad.tensor(a) for a in arrays], batch_first=batch_first, padding_value=value,
                          padding_side=side)
    np.testing.assert_array_equal(kwargs.numpy(), out.numpy())


@pytest.mark.parametrize("batch_first, value, side", PAD_OPTIONS)
@pytest.mark.parametrize("shapes", SEQUENCE_SHAPES)
def test_pad_sequence_gradcheck(shapes, batch_first, value, side):
    seqs = [leaf(normal(s, i)) for i, s in enumerate(shapes)]
    report = minigrad.gradcheck(lambda *s: nn.utils.rnn.pad_sequence(list(s), batch_first, value, side), seqs, **TIGHT)
    assert all(r.checked == r.size for r in report.inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first, value, side", PAD_OPTIONS)
@pytest.mark.parametrize("shapes", SEQUENCE_SHAPES)
def test_pad_sequence_matches_torch(shapes, batch_first, value, side, dtype):
    torch = pytest.importorskip("torch")
    from minigrad.nn.utils.rnn import pad_sequence

    arrays = [normal(s, i).astype(dtype) for i, s in enumerate(shapes)]
    ours_in = [minigrad.tensor(a, requires_grad=True) for a in arrays]
    their_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = pad_sequence(ours_in, batch_first, value, side)
    ref = torch.nn.utils.rnn.pad_sequence(their_in, batch_first, value, side)
    assert_same_as_torch(out, ref, dtype, magnitude(*arrays, value))
    upstream = normal(tuple(ref.shape), 15).astype(dtype)
    out.backward(minigrad.tensor(upstream))
    ref.backward(torch.tensor(upstream))
    for a, b in zip(ours_in, their_in):
        assert_same_as_torch(a.grad, b.grad, dtype, magnitude(upstream))


def test_pad_sequence_docs_example_and_inputs_pytorch_takes():
    from minigrad.nn.utils.rnn import pad_sequence

    a, b, c = minigrad.ones(25, 30), minigrad.ones(22, 30), minigrad.ones(15, 30)  # PyTorch's docs, 300 -> 30
    assert pad_sequence([a, b, c]).shape == (25, 3, 30)
    assert pad_sequence((a, b, c), batch_first=True).shape == (3, 25, 30)
    rows = minigrad.tensor(np.arange(6.0).reshape(3, 2))  # a tensor: its rows are the sequences
    np.testing.assert_array_equal(pad_sequence(rows).numpy(), np.arange(6.0).reshape(3, 2).T)
    ints = pad_sequence([minigrad.tensor([1, 2, 3]), minigrad.tensor([4])], padding_value=-1)
    assert ints.dtype == np.int64 and ints.numpy().tolist() == [[1, 4], [2, -1], [3, -1]]
    mixed = pad_sequence([minigrad.ones(2, dtype=minigrad.float64), minigrad.ones(1)])  # the first one's dtype
    assert mixed.dtype == np.float64


def test_nn_utils_is_a_package_and_still_what_it_was():
    import minigrad.nn.utils.rnn as rnn
    from minigrad import optim
    from minigrad.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
    from minigrad.nn.utils.rnn import pad_sequence

    assert nn.utils.rnn is rnn and rnn.pad_sequence is pad_sequence
    assert nn.utils.clip_grad_norm_ is clip_grad_norm_
    assert all(callable(f) for f in (clip_grad_value_, parameters_to_vector, vector_to_parameters))
    w = nn.Parameter(np.ones(4, dtype=np.float32))
    w.grad = np.full(4, 2.0, dtype=np.float32)
    assert optim.clip_grad_norm_([w], 1.0) == pytest.approx(4.0)  # optim's uses nn.utils'
    np.testing.assert_allclose(w.grad.numpy(), 0.5, rtol=1e-6)


# ============================================================================ errors
@pytest.mark.parametrize("call, error, parts", [
    (lambda: F.avg_pool1d(minigrad.randn(2, 3, 4), 5), ValueError, ["avg_pool1d", "(2, 3, 4)", "(5,)"]),
    (lambda: F.avg_pool1d(minigrad.randn(2, 3, 4, 5), 2), ValueError, ["avg_pool1d", "(N, C, L)", "(2, 3, 4, 5)"]),
    (lambda: F.avg_pool1d(minigrad.randn(1, 6), 4, padding=3), ValueError, ["avg_pool1d", "padding", "half"]),
    (lambda: F.adaptive_avg_pool1d(minigrad.randn(5), 2), ValueError, ["adaptive_avg_pool1d", "(N, C, L)", "(5,)"]),
    (lambda: F.adaptive_avg_pool1d(minigrad.randn(2, 3, 4), (2, 2)), ValueError,
     ["adaptive_avg_pool1d", "output_size", "(2, 2)"]),
    (lambda: F.adaptive_max_pool2d(minigrad.randn(2, 3), 2), ValueError,
     ["adaptive_max_pool2d", "(N, C, H, W)", "(2, 3)"]),
    (lambda: F.adaptive_max_pool2d(minigrad.randn(2, 3, 0, 3), 2), ValueError,
     ["adaptive_max_pool2d", "empty", "(2, 3, 0, 3)"]),
    (lambda: F.adaptive_max_pool2d(minigrad.randn(2, 3, 4, 4), (2, 0)), ValueError,
     ["adaptive_max_pool2d", "output_size", "(2, 0)", "positive"]),
    (lambda: F.adaptive_max_pool1d(minigrad.randn(2, 3, 4, 5), 2), ValueError,
     ["adaptive_max_pool1d", "(N, C, L)", "(2, 3, 4, 5)"]),
    (lambda: F.adaptive_max_pool2d(minigrad.tensor(np.ones((1, 2, 4, 4), dtype=np.int64)), 2), TypeError,
     ["adaptive_max_pool2d", "float", "int64"]),
    (lambda: nn.ReflectionPad2d(3)(minigrad.randn(1, 2, 3, 4)), ValueError, ["reflect", "(3, 3)", "smaller", "3"]),
    (lambda: nn.ReflectionPad1d((1, 4))(minigrad.randn(2, 4)), ValueError, ["reflect", "(1, 4)", "smaller", "4"]),
    (lambda: nn.ReflectionPad1d(1)(minigrad.randn(2, 3, 4, 5)), ValueError,
     ["ReflectionPad1d", "(N, C, L)", "(2, 3, 4, 5)"]),
    (lambda: nn.ReplicationPad2d(1)(minigrad.randn(3, 4)), ValueError,
     ["ReplicationPad2d", "(N, C, H, W)", "(3, 4)"]),
    (lambda: nn.CircularPad2d(4)(minigrad.randn(1, 1, 3, 3)), ValueError, ["circular", "(4, 4)", "at most"]),
    (lambda: nn.ReflectionPad1d(-1)(minigrad.randn(1, 2, 4)), ValueError, ["pad", "negative", "constant"]),
    (lambda: nn.ZeroPad2d((1, 2)), ValueError, ["ZeroPad2d", "padding", "4 ints", "(1, 2)"]),
    (lambda: nn.ConstantPad1d("2", 0.0), ValueError, ["ConstantPad1d", "padding", "'2'"]),
    (lambda: nn.ConstantPad2d(1, 2.0)(minigrad.randn(3)), ValueError, ["pad", "at most 2 per axis", "(3,)"]),
    (lambda: F.pixel_shuffle(minigrad.randn(2, 3, 4, 4), 2), ValueError,
     ["pixel_shuffle", "channels (3", "divisible", "4"]),
    (lambda: F.pixel_shuffle(minigrad.randn(4, 4), 2), ValueError, ["pixel_shuffle", "at least 3-D", "(4, 4)"]),
    (lambda: F.pixel_shuffle(minigrad.randn(1, 4, 2, 2), 0), ValueError, ["pixel_shuffle", "upscale_factor", "0"]),
    (lambda: F.pixel_unshuffle(minigrad.randn(2, 3, 5, 4), 2), ValueError,
     ["pixel_unshuffle", "(5, 4)", "divisible", "2"]),
    (lambda: F.dropout1d(minigrad.randn(3), 0.5), ValueError, ["dropout1d", "(N, C, L)", "(3,)"]),
    (lambda: F.dropout2d(minigrad.randn(3, 4), 0.5), ValueError, ["dropout2d", "(N, C, H, W)", "(3, 4)"]),
    (lambda: F.dropout3d(minigrad.randn(1, 2, 3), 0.5, training=False), ValueError, ["dropout3d", "(1, 2, 3)"]),
    (lambda: F.dropout2d(minigrad.randn(1, 2, 3, 3), 1.5), ValueError, ["dropout2d", "p", "[0, 1]", "1.5"]),
    (lambda: F.dropout1d(minigrad.randn(1, 2, 3), -0.1, training=False), ValueError, ["dropout1d", "-0.1"]),
    (lambda: nn.Dropout2d(2.0), ValueError, ["Dropout2d", "p", "[0, 1]", "2.0"]),
    (lambda: F.dropout2d(minigrad.tensor(np.ones((1, 2, 3, 3), dtype=np.int64))), TypeError,
     ["dropout2d", "float", "int64"]),
    (lambda: nn.utils.rnn.pad_sequence([]), ValueError, ["pad_sequence", "empty"]),
    (lambda: nn.utils.rnn.pad_sequence([minigrad.ones(3, 2), minigrad.ones(2, 3)]), ValueError,
     ["pad_sequence", "trailing", "(2, 3)", "(3, 2)"]),
    (lambda: nn.utils.rnn.pad_sequence([minigrad.tensor(1.0)]), ValueError, ["pad_sequence", "()"]),
    (lambda: nn.utils.rnn.pad_sequence([minigrad.ones(3)], padding_side="middle"), ValueError,
     ["pad_sequence", "'left' or 'right'", "'middle'"]),
    (lambda: nn.utils.rnn.pad_sequence(5), TypeError, ["pad_sequence", "list of tensors", "int"]),
])
def test_errors_name_the_function_and_the_problem(call, error, parts):
    with pytest.raises(error) as info:
        call()
    has_all(str(info.value), *parts)


@pytest.mark.parametrize("call", [
    lambda F, t: F.adaptive_max_pool2d(t.randn(2, 3), 2),
    lambda F, t: F.adaptive_avg_pool1d(t.randn(5), 2),
    lambda F, t: F.pixel_shuffle(t.randn(2, 3, 4, 4), 2),
    lambda F, t: F.pixel_unshuffle(t.randn(2, 3, 5, 4), 2),
    lambda F, t: F.dropout1d(t.randn(3), 0.5),
    lambda F, t: F.avg_pool1d(t.randn(2, 3, 4), 5),
    lambda F, t: t.nn.ReflectionPad2d(3)(t.randn(1, 2, 3, 4)),
    lambda F, t: t.nn.ReplicationPad2d(1)(t.randn(3, 4)),
    lambda F, t: t.nn.utils.rnn.pad_sequence([t.ones(3, 2), t.ones(2, 3)]),
])
def test_pytorch_refuses_the_same_calls(call):
    """Each call refused above is refused by PyTorch too (with its RuntimeError or NotImplementedError)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception):
        call(torch.nn.functional, torch)
    with pytest.raises((ValueError, TypeError)):
        call(F, minigrad)
