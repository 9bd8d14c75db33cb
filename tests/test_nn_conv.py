"""Convolutions (minigrad/nn/conv.py, ops_conv.py): every argument combination gradient-checked in
float64; forward, input, weight and bias gradients compared with PyTorch in float32; PyTorch's own
docs examples (made smaller) give the same shapes; layers, initialisation and errors.

The float32 tolerance, derived: an output (or a gradient) is a sum of K products. Computed in
float32 in any order, each product and each addition rounds by at most u = 2^-24 relative, so a sum
is off by at most (K + 1) u times the sum of |terms| (Higham, Accuracy and Stability, 3.1). Both
frameworks err so, hence |ours - torch| <= 2 (K + 1) u S, where S is the same computation on
|x|, |w|, |g| (every term counted positive), done in float64. `assert_float32_close` checks this
bound element by element."""
import math

import numpy as np
import pytest

import minigrad as mg
from helpers import has_all
from minigrad import nn
from minigrad.kernels import use_backend
from minigrad.nn import functional as F

U32 = 2.0 ** -24


def t64(a, requires_grad=True):
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def assert_float32_close(ours, theirs, magnitude, terms):
    """|ours - theirs| <= 2 (terms + 1) u * magnitude, element by element (see the module docstring)."""
    ours, theirs, magnitude = np.asarray(ours), np.asarray(theirs, dtype=np.float64), np.asarray(magnitude)
    assert ours.shape == theirs.shape
    bound = 2 * (terms + 1) * U32 * magnitude + 1e-30
    worst = np.max(np.abs(ours - theirs) - bound, initial=-1)
    assert worst <= 0, f"off by {np.max(np.abs(ours - theirs))}, bound {bound.max()}"


# (input shape, weight shape, keyword arguments): every argument of conv2d
CONV2D_CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 4, 9, 8), (6, 4, 3, 5), {"stride": (2, 1), "padding": (4, 2), "dilation": (3, 1)}),  # PyTorch's docs
    ((2, 4, 6, 7), (6, 2, 3, 3), {"groups": 2, "padding": "same"}),
    ((2, 4, 6, 5), (4, 1, 2, 3), {"groups": 4, "padding": "same", "dilation": (2, 1)}),  # depthwise, even kernel
    ((2, 3, 6, 6), (2, 3, 3, 3), {"padding": "valid", "bias": False}),
    ((1, 2, 5, 5), (3, 2, 5, 5), {}),  # the kernel as large as the input
    ((2, 3, 8, 8), (4, 3, 1, 1), {"stride": 3}),
]


def _conv2d_args(x_shape, w_shape, kwargs, rng):
    kwargs = dict(kwargs)
    bias = kwargs.pop("bias", True)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape) / math.sqrt(np.prod(w_shape[1:]))
    b = rng.standard_normal(w_shape[0]) if bias else None
    return x, w, b, kwargs


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV2D_CASES)
def test_conv2d_gradcheck(x_shape, w_shape, kwargs):
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(0))
    inputs = [t64(x), t64(w)] + ([] if b is None else [t64(b)])
    assert mg.gradcheck(lambda *t: F.conv2d(*t, **kwargs).tanh(), inputs)


def compare_float32_with_pytorch(ours_fn, torch_fn, arrays, terms):
    """Forward and every input's gradient of ours_fn and torch_fn on float32 copies of `arrays`, for a
    random output gradient, each within the bound of the module docstring; terms[i] is the most
    products a number of output i sums (output 0 the forward, then one per input's gradient)."""
    torch = pytest.importorskip("torch")
    arrays = [a.astype(np.float32) for a in arrays]
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = ours_fn(*ours), torch_fn(*theirs)
    assert y.shape == tuple(ty.shape)
    g = np.random.default_rng(2).standard_normal(ty.shape).astype(np.float32)
    y.backward(mg.tensor(g))
    ty.backward(torch.tensor(g))
    # the same computation on |x|, |w|, |b|, |g| in float64 bounds every sum's terms (module docstring)
    absolute = [torch.tensor(np.abs(a).astype(np.float64), requires_grad=True) for a in arrays]
    ay = torch_fn(*absolute)
    ay.backward(torch.tensor(np.abs(g).astype(np.float64)))
    assert_float32_close(y, ty.detach(), ay.detach(), terms[0])
    for a, ta, aa, k in zip(ours, theirs, absolute, terms[1:]):
        assert_float32_close(a.grad, ta.grad, aa.grad, k)


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV2D_CASES)
def test_conv2d_matches_pytorch(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(1))
    o, cg, kh, kw = w_shape
    n, _, oh, ow = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kwargs).shape
    # an output sums C_in/groups kh kw products and the bias; an input's gradient at most (C_out/groups)
    # kh kw; a weight's and a bias's gradient sum over the N OH OW output positions
    terms = [cg * kh * kw + 1, (o // kwargs.get("groups", 1)) * kh * kw, n * oh * ow, n * oh * ow]
    compare_float32_with_pytorch(lambda *t: F.conv2d(*t, **kwargs),
                                 lambda *t: torch.nn.functional.conv2d(*t, **kwargs),
                                 (x, w) + (() if b is None else (b,)), terms)


def test_conv2d_on_the_numpy_twins_equals_the_kernels():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 4, 9, 8)).astype(np.float32), rng.standard_normal((6, 2, 3, 3)).astype(np.float32)

    def run():
        xt, wt = mg.tensor(x, requires_grad=True), mg.tensor(w, requires_grad=True)
        y = F.conv2d(xt, wt, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
        (y * y).sum().backward()
        return [y.numpy(), np.asarray(xt.grad), np.asarray(wt.grad)]

    compiled = run()
    with use_backend("numpy"):
        reference = run()
    for a, b in zip(compiled, reference):  # sums of up to 2 * 8 * 8 = 128 terms of size ~10 in two orders
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())


# ----------------------------------------------------------------------------- conv1d
CONV1D_CASES = [
    ((2, 4, 9), (6, 4, 3), {"stride": 2}),  # PyTorch's docs: (20, 16, 50) input, (33, 16, 3) weight, stride 2
    ((2, 4, 9), (4, 2, 2), {"groups": 2, "padding": "same", "dilation": 2}),
    ((1, 3, 7), (2, 3, 3), {"padding": 2, "bias": False}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV1D_CASES)
def test_conv1d_gradcheck(x_shape, w_shape, kwargs):
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(4))
    arrays = (x, w) + (() if b is None else (b,))
    assert mg.gradcheck(lambda *t: F.conv1d(*t, **kwargs).tanh(), [t64(a) for a in arrays])


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV1D_CASES)
def test_conv1d_matches_pytorch_in_float64(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(4))
    arrays = (x, w) + (() if b is None else (b,))
    ours = [t64(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = F.conv1d(*ours, **kwargs), torch.nn.functional.conv1d(*theirs, **kwargs)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    # float64 on both sides: sums of at most 12 terms of size < 10 differ by far less than 1e-12
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, ta in zip(ours, theirs):
        np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-11, atol=1e-11)


# ----------------------------------------------------------------------------- conv_transpose2d
TRANSPOSE_CASES = [
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 5), {"stride": (2, 1), "padding": (4, 2)}),  # PyTorch's docs, smaller
    ((1, 4, 3, 3), (4, 1, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ((2, 2, 3, 4), (2, 3, 2, 2), {"stride": 2, "dilation": 2, "output_padding": (1, 0), "bias": False}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV1D_CASES)
def test_conv1d_matches_pytorch_in_float32(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(12))
    o, cg, k = w_shape
    n, _, length = torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w), **kwargs).shape
    positions = n * length  # (the terms as for conv2d, with a height of 1)
    compare_float32_with_pytorch(lambda *t: F.conv1d(*t, **kwargs), lambda *t: torch.nn.functional.conv1d(*t, **kwargs),
                                 (x, w) + (() if b is None else (b,)),
                                 [cg * k + 1, (o // kwargs.get("groups", 1)) * k, positions, positions])


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSE_CASES)
def test_conv_transpose2d_matches_pytorch_in_float32(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(13))
    cin, og, kh, kw = w_shape
    groups = kwargs.get("groups", 1)
    if b is not None:
        b = np.random.default_rng(14).standard_normal(og * groups)
    # an output sums at most (C_in / groups) kh kw products (+ the bias); dx is a convolution of g
    # with (C_out / groups) kh kw taps; dW sums over the N H W input positions, db over the N OH OW outputs
    positions = x_shape[0] * x_shape[2] * x_shape[3]
    n, _, oh, ow = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), **kwargs).shape
    compare_float32_with_pytorch(lambda *t: F.conv_transpose2d(*t, **kwargs),
                                 lambda *t: torch.nn.functional.conv_transpose2d(*t, **kwargs),
                                 (x, w) + (() if b is None else (b,)),
                                 [cin // groups * kh * kw + 1, og * kh * kw, positions, n * oh * ow])


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSE_CASES)
def test_conv_transpose2d_gradcheck(x_shape, w_shape, kwargs):
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(5))
    if b is not None:
        b = np.random.default_rng(6).standard_normal(w_shape[1] * kwargs.get("groups", 1))
    arrays = (x, w) + (() if b is None else (b,))
    assert mg.gradcheck(lambda *t: F.conv_transpose2d(*t, **kwargs).tanh(), [t64(a) for a in arrays])


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSE_CASES)
def test_conv_transpose2d_matches_pytorch_in_float64(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    x, w, b, kwargs = _conv2d_args(x_shape, w_shape, kwargs, np.random.default_rng(5))
    if b is not None:
        b = np.random.default_rng(6).standard_normal(w_shape[1] * kwargs.get("groups", 1))
    arrays = (x, w) + (() if b is None else (b,))
    ours = [t64(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = F.conv_transpose2d(*ours, **kwargs), torch.nn.functional.conv_transpose2d(*theirs, **kwargs)
    assert y.shape == tuple(ty.shape)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, ta in zip(ours, theirs):
        np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_transpose2d_is_the_input_gradient_of_conv2d():
    rng = np.random.default_rng(7)
    x, w, g = t64(rng.standard_normal((2, 3, 7, 7))), t64(rng.standard_normal((4, 3, 3, 3))), None
    y = F.conv2d(x, w, stride=2, padding=1)
    g = rng.standard_normal(y.shape)
    y.backward(mg.tensor(g))
    back = F.conv_transpose2d(mg.tensor(g), w.detach(), stride=2, padding=1, output_padding=0)
    np.testing.assert_allclose(back.numpy(), x.grad, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- unfold / fold
def test_unfold_and_fold_docs_shapes_and_gradcheck():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 3, 4))
    assert F.unfold(t64(x), kernel_size=(2, 3)).shape == (2, 30, 4)  # PyTorch's docs
    cols = rng.standard_normal((1, 3 * 2 * 2, 12))
    assert F.fold(t64(cols), output_size=(4, 5), kernel_size=(2, 2)).shape == (1, 3, 4, 5)  # PyTorch's docs
    args = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    assert mg.gradcheck(lambda t: F.unfold(t, **args).tanh(), [t64(x)])
    folded_input = rng.standard_normal(F.unfold(t64(x), **args).shape)
    assert mg.gradcheck(lambda t: F.fold(t, (3, 4), **args).tanh(), [t64(folded_input)])


def test_unfold_and_fold_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 3, 4))
    rng.standard_normal((1, 3 * 2 * 2, 12))  # (the same draws as above, so the same folded_input)
    args = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    folded_input = rng.standard_normal(F.unfold(t64(x), **args).shape)
    tf = torch.nn.functional
    np.testing.assert_array_equal(F.unfold(t64(x), **args).numpy(), tf.unfold(torch.tensor(x), **args).numpy())
    np.testing.assert_allclose(F.fold(t64(folded_input), (3, 4), **args).numpy(),
                               tf.fold(torch.tensor(folded_input), (3, 4), **args).numpy(), rtol=1e-12, atol=1e-12)


def test_conv2d_is_unfold_then_one_product():
    """The textbook identity the op is built on."""
    rng = np.random.default_rng(9)
    x, w = t64(rng.standard_normal((2, 3, 6, 5)), False), t64(rng.standard_normal((4, 3, 3, 2)), False)
    cols = F.unfold(x, (3, 2), padding=1)  # (N, C kh kw, L)
    y = (w.reshape(4, -1) @ cols).reshape(2, 4, 6, 6)
    np.testing.assert_allclose(F.conv2d(x, w, padding=1).numpy(), y.numpy(), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- layers
def test_conv_layers_shapes_and_pytorch_init():
    mg.manual_seed(0)
    conv = nn.Conv2d(16, 33, (3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))  # PyTorch's docs
    assert conv.weight.shape == (33, 16, 3, 5) and conv.bias.shape == (33,)
    assert conv(mg.randn(2, 16, 10, 12)).shape == (2, 33, 6, 12)  # (10 + 8 - 3 * 2 - 1) // 2 + 1
    bound = 1 / math.sqrt(16 * 3 * 5)  # kaiming_uniform with a = sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    for p in (conv.weight, conv.bias):
        values = p.numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound
    assert np.std(conv.weight.numpy()) == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert nn.Conv1d(16, 33, 3, stride=2)(mg.randn(2, 16, 50)).shape == (2, 33, 24)  # PyTorch's docs
    up = nn.ConvTranspose2d(16, 33, (3, 5), stride=(2, 1), padding=(4, 2))
    assert up.weight.shape == (16, 33, 3, 5)
    assert up(mg.randn(2, 16, 10, 12)).shape == (2, 33, 13, 12)
    assert np.abs(up.weight.numpy()).max() <= 1 / math.sqrt(33 * 15)  # PyTorch's fan_in: weight.shape[1] * k
    assert nn.Conv2d(3, 6, 3, groups=3, bias=False).weight.shape == (6, 1, 3, 3)
    assert "kernel_size=(3, 5)" in repr(conv) and "groups=3" in repr(nn.Conv2d(3, 6, 3, groups=3))
    assert conv(mg.randn(16, 10, 12)).shape == (33, 6, 12)  # unbatched


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding, kernel", [((1, 2), 3), ("same", (4, 3))])
def test_conv2d_layer_padding_modes_match_pytorch(mode, padding, kernel):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    ours = nn.Conv2d(2, 3, kernel, padding=padding, padding_mode=mode, dtype=np.float64)
    theirs = torch.nn.Conv2d(2, 3, kernel, padding=padding, padding_mode=mode, dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    x = rng.standard_normal((2, 2, 5, 6))
    np.testing.assert_allclose(ours(mg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12,
                               atol=1e-12)


def test_conv_layer_gradcheck_as_module():
    conv = nn.Conv2d(2, 4, 3, stride=2, padding="valid", groups=2).double()
    assert mg.gradcheck(conv, [t64(np.random.default_rng(11).standard_normal((2, 2, 5, 5)))])


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, parts", [
    (lambda: F.conv2d(mg.randn(2, 3, 8, 8), mg.randn(4, 2, 3, 3)), ["conv2d", "(2, 3, 8, 8)", "(4, 2, 3, 3)"]),
    (lambda: F.conv2d(mg.randn(2, 4, 8, 8), mg.randn(6, 2, 3, 3), groups=3), ["conv2d", "groups=3", "(6, 2, 3, 3)"]),
    (lambda: F.conv2d(mg.randn(2, 3, 4, 4), mg.randn(4, 3, 7, 3)), ["conv2d", "larger than the padded input",
                                                                    "(2, 3, 4, 4)", "(7, 3)"]),
    (lambda: F.conv2d(mg.randn(2, 3, 4, 4), mg.randn(4, 3, 3, 3), padding=1, dilation=3),
     ["conv2d", "dilation", "(6, 6)"]),
    (lambda: F.conv2d(mg.randn(3, 8), mg.randn(4, 3, 3, 3)), ["conv2d", "(N, C, H, W)", "(3, 8)"]),
    (lambda: F.conv2d(mg.randn(2, 3, 8, 8), mg.randn(4, 3, 3, 3), mg.randn(5)), ["conv2d", "bias", "(5,)"]),
    (lambda: F.conv2d(mg.randn(2, 3, 8, 8), mg.randn(4, 3, 3, 3), stride=2, padding="same"),
     ["conv2d", "'same'", "strided"]),
    (lambda: F.conv1d(mg.randn(2, 3, 4), mg.randn(4, 3, 5)), ["conv1d", "larger than the padded input", "(2, 3, 4)"]),
    (lambda: F.conv1d(mg.randn(2, 3, 4, 4), mg.randn(4, 3, 3)), ["conv1d", "(N, C, L)", "(2, 3, 4, 4)"]),
    (lambda: F.conv_transpose2d(mg.randn(2, 3, 4, 4), mg.randn(4, 2, 3, 3)), ["conv_transpose2d", "(2, 3, 4, 4)",
                                                                              "(4, 2, 3, 3)"]),
    (lambda: F.conv_transpose2d(mg.randn(2, 3, 4, 4), mg.randn(3, 2, 3, 3), stride=2, output_padding=2),
     ["conv_transpose2d", "output_padding"]),
    (lambda: F.fold(mg.randn(1, 12, 10), (4, 5), 2), ["fold", "(1, 12, 10)", "12"]),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ["Conv2d", "groups=2", "in_channels=3"]),
])
def test_conv_errors_name_the_op_and_the_shapes(call, parts):
    with pytest.raises(ValueError) as error:
        call()
    has_all(str(error.value), *parts)


def test_conv2d_input_dtype_must_match_the_weight():
    with pytest.raises(TypeError, match="conv2d: input is float64 but the weight is float32"):
        nn.Conv2d(1, 1, 3)(mg.randn(1, 1, 5, 5, dtype="float64"))


@pytest.mark.parametrize("op", [
    lambda x: F.conv2d(x, mg.randn(6, 2, 3, 3), padding=1, groups=2),
    lambda x: F.conv1d(x[:, :, 0], mg.randn(4, 4, 3)),
    lambda x: F.conv_transpose2d(x, mg.randn(4, 3, 3, 3), stride=2),
    lambda x: F.unfold(x, 2),
    lambda x: F.fold(F.unfold(x, 2), (5, 5), 2),
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.avg_pool2d(x, 2, ceil_mode=True),
    lambda x: F.adaptive_avg_pool2d(x, 2),
    lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    lambda x: F.pad(x, (1, 1, 2, 0), mode="reflect"),
])
def test_an_empty_batch_goes_forward_and_backward(op):
    x = mg.randn(0, 4, 5, 5, requires_grad=True)
    y = op(x)
    assert y.shape[0] == 0
    y.sum().backward()
    assert x.grad.shape == x.shape
