"""find_bad_backward and gradcheck's report name the op whose backward is wrong, and the line of
the user's code that called it: a planted bug in a custom op inside a model, in a built-in op, and
in a kernel twin; ops with several outputs and with integer inputs; a whole GPT, sampled.
gradcheck of a Module: one row per parameter, by its dotted name."""
import inspect

import numpy as np
import pytest

import minigrad as mg
from minigrad import kernels, nn, ops
from minigrad.nn import functional as F
from minigrad.opcheck import find_bad_backward
from transformer import GPT, EncoderLayer
from transformer import attention as attention_module
from transformer import model as model_module


def line_of(module_or_fn, text):
    """'file:line' of the first source line of `module_or_fn` that contains `text`."""
    lines, start = inspect.getsourcelines(module_or_fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(module_or_fn)}:{start + offset}"


class Cube(mg.Function):
    rule = "d(x^3)/dx = 3x^2"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x ** 2  # wrong on purpose: 2x^2 instead of 3x^2


class CubeLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc1(x).tanh()
        return self.fc2(Cube.apply(h))  # the line the report must name


def test_custom_op_inside_a_model():
    mg.manual_seed(0)
    model = CubeLayer().double()
    x = mg.randn(5, 3, dtype="float64", requires_grad=True)
    location = find_bad_backward(model, [x])
    assert not location
    assert location.bad.name == "Cube"
    assert location.bad.call_site == line_of(CubeLayer.forward, "Cube.apply(h)")
    worst = location.bad.worst
    assert worst.position == 0 and worst.shape == (5, 4) and not worst.sampled
    np.testing.assert_allclose(worst.analytic, 2 / 3 * worst.numeric, rtol=1e-6)  # 2x^2 against 3x^2
    text = str(location)
    for part in ("Cube", "input 0", "(5, 4)", "analytic", "numeric", location.bad.call_site, "d(x^3)/dx = 3x^2"):
        assert part in text
    assert "the 2 ops before it" in text  # fc1's Linear and tanh passed first


def test_gradcheck_of_the_model_includes_the_located_op():
    mg.manual_seed(0)
    model = CubeLayer().double()
    x = mg.randn(2, 3, dtype="float64", requires_grad=True)
    with pytest.raises(mg.GradcheckError) as info:
        mg.gradcheck(model, [x])
    text = str(info.value)
    assert "FAIL" in text and "the backward of Cube is wrong" in text
    assert line_of(CubeLayer.forward, "Cube.apply(h)") in text
    report = mg.gradcheck(lambda t: model(t), [x], raise_exception=False, locate=False)
    assert report.location is None and "Cube" not in str(report)


@pytest.fixture
def tiny_gpt():
    mg.manual_seed(0)
    gpt = GPT(vocab_size=16, block_size=8, n_layer=2, n_head=2, d_model=16).double()
    idx = mg.tensor(np.random.default_rng(0).integers(0, 16, (2, 8)))
    return gpt, idx


def test_a_correct_gpt_passes_every_op(tiny_gpt):
    gpt, idx = tiny_gpt
    location = find_bad_backward(gpt, [idx, idx], max_elements=32)
    assert location, str(location)
    names = {op.name for op in location.checked}
    assert {"Embedding", "LayerNorm", "Linear", "ScaledDotProductAttention", "Split", "GELU",
            "CrossEntropy"} <= names
    sampled = [c for op in location.checked for c in op.inputs if c.sampled]
    assert sampled and all(c.checked == 32 < c.size for c in sampled)


def test_built_in_op_monkeypatched_inside_gpt(tiny_gpt, monkeypatch):
    gpt, idx = tiny_gpt
    right = ops.GELU.backward

    def off_by_one_percent(ctx, g):
        return right(ctx, g) * 1.01

    monkeypatch.setattr(ops.GELU, "backward", staticmethod(off_by_one_percent))
    location = find_bad_backward(gpt, [idx, idx])
    assert location.bad.name == "GELU"
    assert location.bad.call_site == line_of(model_module.MLP.forward, ".gelu()")
    assert location.bad.worst.sampled  # (2, 8, 64): 1024 elements, 128 checked
    assert "sampled at random" in str(location)
    first_mlp = [op.name for op in location.checked]
    assert first_mlp.count("GELU") == 1  # stops at the first block's GELU


def test_kernel_twin_planted_in_transformer_layer(monkeypatch):
    mg.manual_seed(0)
    layer = EncoderLayer(d_model=8, num_heads=2, d_ff=16, dropout=0.0).double()
    x = mg.randn(2, 3, 8, dtype="float64", requires_grad=True)
    right = kernels.implementation("masked_softmax_backward")

    def halved_scale(y, g, scale):
        return right(y, g, scale / 2)

    kernels.masked_softmax_backward(np.ones((1, 2)), np.ones((1, 2)), 1.0)  # fill the dispatcher's cache
    monkeypatch.setitem(kernels._chosen, "masked_softmax_backward", halved_scale)
    report = mg.gradcheck(layer, [x], raise_exception=False)
    assert not report
    bad = report.location.bad
    assert bad.name == "MaskedSoftmax"
    assert bad.call_site == line_of(attention_module.scaled_dot_product_attention, "scores.softmax(")
    assert bad.input_shapes == [(2, 2, 3, 3)]
    assert f"called at   {bad.call_site}" in str(report)


def test_op_with_several_outputs():
    class BadSinCos(mg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return np.sin(x), np.cos(x)

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            (x,) = ctx.saved_tensors
            return g_sin * np.cos(x) + g_cos * np.sin(x)  # d cos = -sin: wrong sign

    x = mg.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)

    def fn(t):
        a, b = t.split([1, 1], axis=0)  # a correct op with several outputs comes first
        s, c = BadSinCos.apply(a * b)
        return s + c

    location = find_bad_backward(fn, [x])
    assert [op.name for op in location.checked] == ["Split", "Mul", "BadSinCos"]
    assert location.bad.output_shapes == [(1, 3), (1, 3)]


def test_ops_with_integer_inputs_are_checked_on_their_float_inputs():
    class BadGather(mg.Function):
        @staticmethod
        def forward(ctx, a, index):
            ctx.save_for_backward(index)
            ctx.shape = a.shape
            return np.take_along_axis(a, index, axis=1)

        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            grad = np.zeros(ctx.shape)
            np.put_along_axis(grad, index, g, axis=1)  # loses repeated indices' sums
            return grad, None

    a = mg.randn(3, 4, dtype="float64", requires_grad=True)
    index = mg.tensor(np.array([[0, 0], [1, 2], [3, 3]]))
    targets = mg.tensor(np.array([1, 0, 1]))
    assert find_bad_backward(lambda t: F.cross_entropy(t.gather(1, index), targets), [a])
    location = find_bad_backward(lambda t: F.cross_entropy(BadGather.apply(t, index), targets), [a])
    assert location.bad.name == "BadGather" and [c.position for c in location.bad.inputs] == [0]


def test_everything_right_but_the_graph_broken():
    x = mg.randn(4, dtype="float64", requires_grad=True)

    def leaky(t):  # t * t, with one factor taken outside the graph: the gradient is half
        return t * mg.tensor(t.numpy().copy())

    report = mg.gradcheck(leaky, [x], raise_exception=False)
    assert not report and report.location
    assert "lost between ops" in str(report)


def test_dropout_is_checked_with_the_same_mask_each_call():
    mg.manual_seed(3)
    x = mg.randn(4, 5, dtype="float64", requires_grad=True)
    state = mg.random.get_state()
    location = find_bad_backward(lambda t: mg.dropout(t.tanh(), 0.5, True), [x])
    assert location and [op.name for op in location.checked] == ["Tanh", "Dropout"]
    assert mg.random.get_state() == state  # the check draws nothing from the user's stream


def test_module_gradcheck_names_every_parameter(tiny_gpt):
    gpt, idx = tiny_gpt
    report = mg.gradcheck(gpt, [idx])
    names = [r.name for r in report.inputs]
    assert names == [name for name, _ in gpt.named_parameters()]
    assert "h.0.attn.c_attn.weight" in names and "h.1.mlp.c_proj.bias" in names
    text = str(report)
    for name in names:
        assert name in text
    rows = {r.name: r for r in report.inputs}
    big = rows["h.0.attn.c_attn.weight"]
    assert big.size == 48 * 16 and big.checked == 64 and "64 of 768" in text
    assert rows["ln_f.bias"].checked == rows["ln_f.bias"].size == 16
    assert np.isnan(big.numeric).sum() == big.size - big.checked


def test_module_gradcheck_checks_inputs_and_can_check_everything():
    mg.manual_seed(1)
    layer = nn.Linear(3, 2).double()
    x = mg.randn(4, 3, dtype="float64", requires_grad=True)
    report = mg.gradcheck(layer, [x], max_elements=10**6)
    assert [r.label for r in report.inputs] == ["0", "weight", "bias"]
    assert all(r.checked == r.size for r in report.inputs)


def test_sampled_check_still_catches_a_wrong_parameter_gradient(monkeypatch):
    mg.manual_seed(2)
    layer = nn.Linear(40, 30).double()
    x = mg.randn(2, 40, dtype="float64")
    right = ops.Linear.backward

    def wrong_weight(ctx, g):
        dx, dw, db = right(ctx, g)
        return dx, 1.5 * dw, db

    monkeypatch.setattr(ops.Linear, "backward", staticmethod(wrong_weight))
    report = mg.gradcheck(layer, [x], raise_exception=False)
    assert [r.passed for r in report.inputs] == [False, True]
    assert report.inputs[0].checked == 64 and report.inputs[0].size == 1200
    assert report.location.bad.name == "Linear" and report.location.bad.worst.position == 1
