"""Pooling, padding and resizing (minigrad/nn/pooling.py, padding.py, sampling.py): every argument
combination gradient-checked in float64 and compared with PyTorch, on PyTorch's docs shapes made
smaller, with the errors for windows that do not fit.

Comparisons with PyTorch run in float64: these ops add at most a few dozen numbers per element
(a window, or the windows that share an input), so the two differ by rounding only, far below
1e-12 for values of order 1. Max pooling adds nothing in its forward: the values and the indices
must be equal, in float32 too."""
import numpy as np
import pytest

import minigrad as mg
from helpers import has_all
from minigrad import nn
from minigrad.nn import functional as F

CLOSE = {"rtol": 1e-12, "atol": 1e-12}


def t64(a, requires_grad=True):
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def compare_with_pytorch(ours_fn, torch_fn, x, float32_exact=False):
    """Forward and input gradient of ours_fn and torch_fn on x (float64), for a random output gradient."""
    torch = pytest.importorskip("torch")
    ours, theirs = t64(x), torch.tensor(x, requires_grad=True)
    y, ty = ours_fn(ours), torch_fn(theirs)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), **CLOSE)
    g = np.random.default_rng(99).standard_normal(y.shape)
    y.backward(mg.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), **CLOSE)
    if float32_exact:
        x32 = x.astype(np.float32)
        np.testing.assert_array_equal(ours_fn(mg.tensor(x32)).numpy(), torch_fn(torch.tensor(x32)).numpy())


# ----------------------------------------------------------------------------- max pooling
MAX_POOL2D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2},  # PyTorch's docs: nn.MaxPool2d(3, stride=2)
    {"kernel_size": (3, 2), "stride": (2, 1)},  # PyTorch's docs: nn.MaxPool2d((3, 2), stride=(2, 1))
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "stride": 2, "padding": 1, "dilation": (2, 1)},
    {"kernel_size": (3, 3), "stride": (3, 2), "padding": (1, 0), "dilation": (2, 1), "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": 1, "padding": (1, 0)},  # overlapping windows share maxima
]


@pytest.mark.parametrize("kwargs", MAX_POOL2D_CASES)
def test_max_pool2d_gradcheck(kwargs):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    assert mg.gradcheck(lambda t: F.max_pool2d(t, **kwargs), [t64(x)])


@pytest.mark.parametrize("kwargs", MAX_POOL2D_CASES)
def test_max_pool2d_matches_pytorch(kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    compare_with_pytorch(lambda t: F.max_pool2d(t, **kwargs), lambda t: torch.nn.functional.max_pool2d(t, **kwargs),
                         x, float32_exact=True)
    y, indices = F.max_pool2d(t64(x), **kwargs, return_indices=True)
    ty, tindices = torch.nn.functional.max_pool2d(torch.tensor(x), **kwargs, return_indices=True)
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
    assert indices.dtype == np.int64 and not indices.requires_grad


@pytest.mark.parametrize("kwargs", [{"kernel_size": 3, "stride": 2}, {"kernel_size": 2, "padding": 1,
                                                                      "dilation": 2, "ceil_mode": True}])
def test_max_pool1d_gradcheck(kwargs):
    x = np.random.default_rng(1).standard_normal((2, 3, 9))  # PyTorch's docs: (20, 16, 50) and MaxPool1d(3, 2)
    assert mg.gradcheck(lambda t: F.max_pool1d(t, **kwargs), [t64(x)])


@pytest.mark.parametrize("kwargs", [{"kernel_size": 3, "stride": 2}, {"kernel_size": 2, "padding": 1,
                                                                      "dilation": 2, "ceil_mode": True}])
def test_max_pool1d_matches_pytorch(kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((2, 3, 9))  # PyTorch's docs: (20, 16, 50) and MaxPool1d(3, 2)
    compare_with_pytorch(lambda t: F.max_pool1d(t, **kwargs), lambda t: torch.nn.functional.max_pool1d(t, **kwargs),
                         x, float32_exact=True)
    _, indices = nn.MaxPool1d(**kwargs, return_indices=True)(t64(x))
    np.testing.assert_array_equal(indices.numpy(),
                                  torch.nn.functional.max_pool1d(torch.tensor(x), **kwargs, return_indices=True)[1])


def test_max_pool2d_passes_the_gradient_to_the_first_maximum_and_sums_shared_ones():
    x = t64([[[[1.0, 5.0, 2.0],
               [5.0, 0.0, 3.0]]]])
    F.max_pool2d(x, 2, stride=1).sum().backward()  # windows [1 5; 5 0] and [5 2; 0 3]: both pick the 5 at (0, 1)
    np.testing.assert_array_equal(x.grad, [[[[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]]])


# ----------------------------------------------------------------------------- average pooling
AVG_POOL2D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2},  # PyTorch's docs: nn.AvgPool2d(3, stride=2)
    {"kernel_size": (3, 2), "stride": (2, 1)},  # PyTorch's docs
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "stride": 3, "ceil_mode": True},  # windows that reach past the input
    {"kernel_size": (3, 3), "stride": (3, 2), "padding": (1, 0), "ceil_mode": True},
    {"kernel_size": 2, "divisor_override": 3},
]


@pytest.mark.parametrize("kwargs", AVG_POOL2D_CASES)
def test_avg_pool2d_gradcheck(kwargs):
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 6))
    assert mg.gradcheck(lambda t: F.avg_pool2d(t, **kwargs), [t64(x)])


@pytest.mark.parametrize("kwargs", AVG_POOL2D_CASES)
def test_avg_pool2d_matches_pytorch(kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((2, 3, 7, 6))
    compare_with_pytorch(lambda t: F.avg_pool2d(t, **kwargs), lambda t: torch.nn.functional.avg_pool2d(t, **kwargs), x)


@pytest.mark.parametrize("size", [(5, 7), 7, (None, 7), (3, 2), (1, 1), (7, 6), (10, 4)])
def test_adaptive_avg_pool2d_gradcheck(size):
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 6))  # PyTorch's docs: (1, 64, 8, 9) to (5, 7), 7, (None, 7)
    assert mg.gradcheck(lambda t: F.adaptive_avg_pool2d(t, size), [t64(x)])


@pytest.mark.parametrize("size", [(5, 7), 7, (None, 7), (3, 2), (1, 1), (7, 6), (10, 4)])
def test_adaptive_avg_pool2d_matches_pytorch(size):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 6))  # PyTorch's docs: (1, 64, 8, 9) to (5, 7), 7, (None, 7)
    compare_with_pytorch(lambda t: nn.AdaptiveAvgPool2d(size)(t),
                         lambda t: torch.nn.functional.adaptive_avg_pool2d(t, size), x)


# ----------------------------------------------------------------------------- padding
PAD_CASES = [
    ((1, 1), "constant", 0.0),  # PyTorch's docs: t4d (3, 3, 4, 2) with p1d, p2d, p3d
    ((1, 1, 2, 2), "constant", 0.0),
    ((0, 1, 2, 1, 3, 3), "constant", 0.5),
    ((2, -1, 0, 1), "constant", 0.0),  # a negative pad crops
    ((1, 1, 0, 0), "reflect", None),
    ((1, 0, 1, 1), "reflect", None),
    ((3, 2, 0, 4), "replicate", None),
    ((1, 2, 2, 1), "circular", None),
]


@pytest.mark.parametrize("pads, mode, value", PAD_CASES)
def test_pad_gradcheck(pads, mode, value):
    x = np.random.default_rng(4).standard_normal((3, 3, 4, 2))
    kwargs = {"mode": mode} if value is None else {"mode": mode, "value": value}
    assert mg.gradcheck(lambda t: F.pad(t, pads, **kwargs).tanh(), [t64(x)])


@pytest.mark.parametrize("pads, mode, value", PAD_CASES)
def test_pad_matches_pytorch(pads, mode, value):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((3, 3, 4, 2))
    kwargs = {"mode": mode} if value is None else {"mode": mode, "value": value}
    compare_with_pytorch(lambda t: F.pad(t, pads, **kwargs), lambda t: torch.nn.functional.pad(t, pads, **kwargs), x)


def test_pad_docs_shapes():
    x = mg.randn(3, 3, 4, 2)
    assert F.pad(x, (1, 1)).shape == (3, 3, 4, 4)
    assert F.pad(x, (1, 1, 2, 2)).shape == (3, 3, 8, 4)
    assert F.pad(x, (0, 1, 2, 1, 3, 3)).shape == (3, 9, 7, 3)


# ----------------------------------------------------------------------------- interpolation
INTERPOLATE_CASES = [
    ((2, 2, 4, 5), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 2, 4, 5), {"size": (7, 3), "mode": "nearest"}),
    ((2, 2, 5, 3), {"scale_factor": 1.5, "mode": "nearest"}),
    ((2, 2, 2, 7), {"scale_factor": 1.3, "mode": "nearest"}),  # 2 * 1.3 rounds down to 2: a copy, as in PyTorch
    ((2, 2, 4, 5), {"scale_factor": 2, "mode": "bilinear", "align_corners": False}),
    ((2, 2, 4, 5), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ((2, 2, 4, 5), {"size": (3, 8), "mode": "bilinear"}),
    ((2, 2, 5, 4), {"size": (1, 7), "mode": "bilinear", "align_corners": True}),
    ((2, 2, 5, 3), {"scale_factor": (1.7, 2.5), "mode": "bilinear"}),
    ((2, 3, 6), {"scale_factor": 2, "mode": "linear"}),
    ((2, 2, 2, 7), {"scale_factor": 1.3, "mode": "bilinear"}),  # the height keeps its size: copied
    ((2, 3, 6), {"size": 4, "mode": "nearest"}),
]


@pytest.mark.parametrize("shape, kwargs", INTERPOLATE_CASES)
def test_interpolate_gradcheck(shape, kwargs):
    x = np.random.default_rng(5).standard_normal(shape)
    assert mg.gradcheck(lambda t: F.interpolate(t, **kwargs), [t64(x)])


@pytest.mark.parametrize("shape, kwargs", INTERPOLATE_CASES)
def test_interpolate_matches_pytorch(shape, kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).standard_normal(shape)
    compare_with_pytorch(lambda t: nn.Upsample(**kwargs)(t), lambda t: torch.nn.functional.interpolate(t, **kwargs), x)


def test_interpolate_pytorch_docs_example():
    x = t64(np.arange(1, 5).reshape(1, 1, 2, 2), False)  # nn.Upsample's docs: [[1, 2], [3, 4]]
    np.testing.assert_array_equal(F.interpolate(x, scale_factor=2).numpy()[0, 0],
                                  [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    np.testing.assert_allclose(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).numpy()[0, 0, 0],
                               [1.0, 1.3333333333333333, 1.6666666666666667, 2.0], **CLOSE)


# ----------------------------------------------------------------------------- layers and errors
def test_pooling_layers():
    x = mg.randn(2, 3, 8, 9)
    assert nn.MaxPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.AvgPool2d(3, stride=2, padding=1)(x).shape == (2, 3, 4, 5)
    assert nn.MaxPool2d(2)(mg.randn(3, 8, 9)).shape == (3, 4, 4)  # unbatched
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 3, 1, 1)
    assert nn.Upsample(scale_factor=2)(x).shape == (2, 3, 16, 18)
    assert "kernel_size=2" in repr(nn.MaxPool2d(2))


@pytest.mark.parametrize("call, parts", [
    (lambda: F.max_pool2d(mg.randn(1, 2, 3, 3), 4), ["max_pool2d", "(1, 2, 3, 3)", "(4, 4)"]),
    (lambda: F.max_pool2d(mg.randn(1, 2, 6, 6), 2, padding=2), ["max_pool2d", "padding (2, 2)", "half"]),
    (lambda: F.max_pool2d(mg.randn(6, 6), 2), ["max_pool2d", "(6, 6)", "(N, C, H, W)"]),
    (lambda: F.max_pool1d(mg.randn(1, 2, 3), 5), ["max_pool1d", "(1, 2, 3)"]),
    (lambda: F.avg_pool2d(mg.randn(1, 2, 2, 5), 3), ["avg_pool2d", "(1, 2, 2, 5)", "(3, 3)"]),
    (lambda: F.avg_pool2d(mg.randn(1, 2, 6, 6), 2, divisor_override=0), ["avg_pool2d", "divisor_override"]),
    (lambda: F.adaptive_avg_pool2d(mg.randn(1, 2, 6, 6), (2, 2, 2)), ["adaptive_avg_pool2d", "output_size"]),
    (lambda: F.pad(mg.randn(1, 2, 3), (3, 3), mode="reflect"), ["pad", "reflect", "(3, 3)", "3"]),
    (lambda: F.pad(mg.randn(1, 2, 3), (1, 1, 1), mode="constant"), ["pad", "even", "(1, 1, 1)"]),
    (lambda: F.pad(mg.randn(2, 3), (1, 1), mode="wrap"), ["pad", "mode", "'wrap'"]),
    (lambda: F.interpolate(mg.randn(1, 2, 3, 3), scale_factor=2, mode="linear"), ["interpolate", "'linear'",
                                                                                 "(1, 2, 3, 3)"]),
    (lambda: F.interpolate(mg.randn(1, 2, 3, 3)), ["interpolate", "size", "scale_factor"]),
    (lambda: F.interpolate(mg.randn(1, 2, 3, 3), size=2, align_corners=True), ["interpolate", "align_corners"]),
])
def test_pooling_errors_name_the_op_and_the_shapes(call, parts):
    with pytest.raises(ValueError) as error:
        call()
    has_all(str(error.value), *parts)
