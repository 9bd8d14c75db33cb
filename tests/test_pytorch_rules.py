"""Where minigrad follows PyTorch's rules on inputs that numpy would take differently: a clip with
no bound, float32 meeting float64, an integer index and an index array separated by a slice."""
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg


# ============================================================================ clip / clamp
@pytest.mark.parametrize("call", [lambda x: x.clip(None, None), lambda x: x.clamp(), lambda x: mg.clip(x),
                                  lambda x: mg.clamp(x, None, None), lambda x: x.clamp_(None, None)],
                         ids=["clip", "clamp", "mg.clip", "mg.clamp", "clamp_"])
def test_a_clip_with_neither_bound_raises_as_in_pytorch(call):
    x = mg.tensor([-2.0, 0.5, 3.0])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        call(x)
    np.testing.assert_array_equal(x.numpy(), [-2.0, 0.5, 3.0])  # clamp_ changed nothing


def test_a_clip_with_one_bound_still_works():
    x = mg.tensor([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(x.clip(None, 1.0).numpy(), [-2.0, 0.5, 1.0])
    np.testing.assert_array_equal(x.clamp(min=0.0).numpy(), [0.0, 0.5, 3.0])


# ============================================================================ float32 meeting float64
F32 = np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 4
F64 = np.linspace(-1.5, 2.0, 6).reshape(2, 3)

PROMOTING = {  # op on (float32 tensor a, float64 tensor b)
    "add": lambda m, a, b: a + b, "radd": lambda m, a, b: b + a, "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b, "div": lambda m, a, b: a / b, "pow": lambda m, a, b: a ** b,
    "maximum": lambda m, a, b: m.maximum(a, b), "minimum": lambda m, a, b: m.minimum(a, b),
    "where": lambda m, a, b: m.where(a > 0.6, a, b),
    "cat": lambda m, a, b: m.cat([a, b], dim=0), "stack": lambda m, a, b: m.stack([a, b], dim=0),
}


@pytest.mark.parametrize("name", PROMOTING)
def test_float32_with_float64_promotes_and_each_gradient_keeps_its_inputs_dtype(name):
    a = mg.tensor(F32, requires_grad=True)
    b = mg.tensor(F64, requires_grad=True)
    y = PROMOTING[name](mg, a, b)
    assert y.dtype == np.float64
    weights = np.random.default_rng(0).standard_normal(y.shape)
    (y * mg.tensor(weights)).sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    # the same in float64 throughout: the values agree to float64 rounding (a's values are exact
    # in float32), a's gradient to float32 rounding (it was cast once)
    a64, b64 = mg.tensor(F32.astype(np.float64), requires_grad=True), mg.tensor(F64, requires_grad=True)
    y64 = PROMOTING[name](mg, a64, b64)
    (y64 * mg.tensor(weights)).sum().backward()
    np.testing.assert_allclose(y.numpy(), y64.numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(a.grad, np.asarray(a64.grad).astype(np.float32), rtol=1e-7, atol=0)
    np.testing.assert_allclose(b.grad, b64.grad, rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", PROMOTING)
def test_float32_with_float64_as_in_pytorch(name):
    torch = pytest.importorskip("torch")
    a, b = mg.tensor(F32, requires_grad=True), mg.tensor(F64, requires_grad=True)
    ta, tb = torch.tensor(F32, requires_grad=True), torch.tensor(F64, requires_grad=True)
    y, ty = PROMOTING[name](mg, a, b), PROMOTING[name](torch, ta, tb)
    assert str(ty.dtype) == f"torch.{y.dtype}"
    y.sum().backward()
    ty.sum().backward()
    assert str(ta.grad.dtype) == f"torch.{a.grad.dtype}" and str(tb.grad.dtype) == f"torch.{b.grad.dtype}"
    # float64 math on both sides; float32 gradients rounded once from float64 sums
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad, tb.grad.numpy(), rtol=1e-14)


def test_the_examples_from_pytorch_code_run():
    assert (mg.eye(3) + mg.ones(3, 3, dtype="float64")).dtype == np.float64
    assert (mg.linspace(0, 1, 5) * mg.ones(5, dtype=mg.float64)).dtype == np.float64
    comparison = mg.ones(3) < mg.tensor([0.5, 1.5, 2.0], dtype="float64")
    np.testing.assert_array_equal(comparison.numpy(), [False, True, True])


def test_an_in_place_op_keeps_its_tensors_dtype_as_in_pytorch():
    w = mg.tensor([1.0, 2.0, 3.0])
    with mg.no_grad():
        w -= mg.tensor([0.1, 0.2, 0.3], dtype="float64")
        w.mul_(mg.tensor(2.0, dtype="float64"))
    assert w.dtype == np.float32
    np.testing.assert_allclose(w.numpy(), [1.8, 3.6, 5.4], rtol=1e-6)
    x = mg.ones(3, requires_grad=True)
    y = x * 1.0
    y.add_(mg.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True))  # in the graph: cast, then added
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


@pytest.mark.parametrize("name, call", [
    ("matmul", lambda a, b: a @ b.T),
    ("matmul", lambda a, b: mg.matmul(a, b.T)),
    ("linear", lambda a, b: mg.nn.Linear(3, 2)(b)),
    ("layer_norm", lambda a, b: mg.nn.LayerNorm(3)(b)),
    ("scaled_dot_product_attention", lambda a, b: mg.nn.functional.scaled_dot_product_attention(a, b, b)),
])
def test_matmul_linear_layer_norm_and_attention_refuse_a_mix_and_say_what_to_write(name, call):
    a, b = mg.tensor(F32), mg.tensor(F64)
    with pytest.raises(TypeError) as info:
        call(a, b)
    message = str(info.value)
    assert message.startswith(f"{name}: expected the same float dtype") and "float32" in message
    assert "float64" in message and ".float() or .double()" in message


def test_pytorch_refuses_the_same_mixes():
    torch = pytest.importorskip("torch")
    a, b = torch.tensor(F32), torch.tensor(F64)
    for call in (lambda: a @ b.T, lambda: torch.nn.functional.linear(b, a),
                 lambda: torch.nn.functional.layer_norm(b, (3,), a[0]),
                 lambda: torch.nn.functional.scaled_dot_product_attention(a, b, b)):
        with pytest.raises(RuntimeError):
            call()


# ============================================================================ index arrays apart
X = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)


def test_index_arrays_separated_by_a_slice_follow_numpy_and_say_so_in_the_readme():
    x = mg.tensor(X, requires_grad=True)
    for index in (([0, 1], slice(None), [1, 2]), (0, slice(None), [1, 2])):
        y = x[index]
        np.testing.assert_array_equal(y.numpy(), X[index])  # numpy's axis order: (2, 3) for both
        with mg.no_grad():
            x[index] = y.detach()  # reading and writing use one rule: the value fits where it came from
        np.testing.assert_array_equal(x.numpy(), X)
    g = np.random.default_rng(0).standard_normal((2, 3))
    x.grad = None
    x[0, :, [1, 2]].backward(g)
    expected = np.zeros_like(X)
    np.add.at(expected, (0, slice(None), [1, 2]), g)
    np.testing.assert_array_equal(x.grad, expected)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `x[[0, 1], :, [1, 2]]` |"))
    assert "follows numpy" in row and "`x[0, :, [1, 2]]`" in row


def test_index_arrays_separated_by_a_slice_against_pytorch():
    torch = pytest.importorskip("torch")
    x, t = mg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    same = ([0, 1], slice(None), [1, 2])  # both put the indexed axis first: (2, 3)
    np.testing.assert_array_equal(x[same].numpy(), t[same].detach().numpy())
    g = np.random.default_rng(1).standard_normal((2, 3))
    x[same].backward(g)
    t[same].backward(torch.tensor(g))
    np.testing.assert_array_equal(x.grad, t.grad.numpy())
    apart = (0, slice(None), [1, 2])  # the README's difference: numpy (2, 3), PyTorch (3, 2)
    assert x[apart].shape == (2, 3) and tuple(t[apart].shape) == (3, 2)
    np.testing.assert_array_equal(x[apart].numpy(), t[apart].detach().numpy().T)
