"""`.grad` and `.data` are Tensors, as in PyTorch; integer tensors keep their dtype through in-place
updates; a one-element tensor formats as its number.

Course code reads the gradient and the values of a weight as tensors: `p.grad.std()`, the
update-to-data ratio `((lr * p.grad).std() / p.data.std()).log10()`, and the hand-written SGD step
`p.data += -lr * p.grad`, which must write into the weight's own memory."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def weight(values=((1.0, -2.0, 3.0), (0.5, 0.25, -4.0))):
    return mg.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def loss_of(p):
    return (p * p * mg.tensor(np.array([1.0, 2.0, 3.0]))).sum()  # d/dp = 2 p [1, 2, 3]


# ----------------------------------------------------------------------------- .grad
def test_grad_is_a_tensor_that_does_not_require_grad():
    p = weight()
    assert p.grad is None
    loss_of(p).backward()
    assert isinstance(p.grad, mg.Tensor)
    assert not p.grad.requires_grad and p.grad.grad_fn is None and p.grad.is_leaf
    assert p.grad.shape == p.shape and p.grad.dtype == p.dtype
    np.testing.assert_array_equal(p.grad.numpy(), 2 * p.numpy() * [1.0, 2.0, 3.0])
    assert isinstance(p.grad.std(), mg.Tensor)  # a Tensor method, not numpy's


def test_grad_is_one_object_that_backward_adds_into():
    p = weight()
    loss_of(p).backward()
    g = p.grad
    assert p.grad is g and p.grad is g  # the same object on every read
    first = g.numpy().copy()
    loss_of(p).backward()
    assert p.grad is g  # accumulated into the same Tensor, not a new one
    np.testing.assert_array_equal(g.numpy(), 2 * first)


def test_grad_can_be_set_to_none_a_tensor_or_an_array():
    p = weight()
    loss_of(p).backward()
    p.grad = None
    assert p.grad is None
    loss_of(p).backward()  # starts afresh
    np.testing.assert_array_equal(p.grad.numpy(), 2 * p.numpy() * [1.0, 2.0, 3.0])

    start = mg.ones(2, 3, dtype=mg.float64)
    p.grad = start
    assert p.grad is start  # kept as it is, as PyTorch does
    loss_of(p).backward()
    assert p.grad is start
    np.testing.assert_array_equal(start.numpy(), 1 + 2 * p.numpy() * [1.0, 2.0, 3.0])

    given = np.full((2, 3), 0.5)
    p.grad = given  # a numpy array becomes a Tensor, of a copy: backward adds into it, not into `given`
    assert isinstance(p.grad, mg.Tensor) and not np.shares_memory(p.grad.numpy(), given)
    loss_of(p).backward()
    np.testing.assert_array_equal(given, np.full((2, 3), 0.5))
    np.testing.assert_array_equal(p.grad.numpy(), 0.5 + 2 * p.numpy() * [1.0, 2.0, 3.0])


def test_zero_grad_and_in_place_zero_of_the_grad():
    model = nn.Linear(3, 2)
    model(mg.randn(4, 3)).sum().backward()
    g = model.weight.grad
    g.zero_()  # PyTorch's zero_grad(set_to_none=False)
    assert model.weight.grad is g and not g.numpy().any()
    model.zero_grad()
    assert model.weight.grad is None


# ----------------------------------------------------------------------------- .data
def test_data_is_a_tensor_outside_the_graph_sharing_memory():
    p = weight()
    d = p.data
    assert isinstance(d, mg.Tensor)
    assert not d.requires_grad and d.grad_fn is None
    assert np.shares_memory(d.numpy(), p.numpy())
    y = p * 2
    assert y.data.grad_fn is None and not y.data.requires_grad and y.grad_fn == "Mul"


@pytest.mark.parametrize("update", [
    lambda p, g: p.data.__iadd__(-0.1 * g),  # what `p.data += -0.1 * g` calls first
    lambda p, g: p.data.sub_(0.1 * g),
    lambda p, g: p.data.add_(g, alpha=-0.1),
    lambda p, g: p.data.copy_(p.data - 0.1 * g),
])
def test_sgd_through_data_writes_into_the_parameter(update):
    p = weight()
    memory, version = p.numpy(), p._version
    loss_of(p).backward()
    expected = memory - 0.1 * p.grad.numpy()
    update(p, p.grad)
    assert p.numpy() is memory  # written in place: the parameter's own array
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-15)
    assert p._version == version  # a change through .data is not counted (PyTorch's rule)
    assert p.is_leaf and p.requires_grad


def test_augmented_assignment_to_data_then_the_next_step_works():
    """The course's loop: `p.data += -lr * p.grad`, then the next forward and backward on p."""
    mg.manual_seed(0)
    model = nn.Linear(3, 2)
    x = mg.randn(5, 3)
    losses = []
    for _ in range(3):
        loss = (model(x) ** 2).mean()
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            memory = p.numpy()
            p.data += -0.1 * p.grad  # Python: p.data = p.data.__iadd__(...): the same view assigned back
            assert p.numpy() is memory and isinstance(p.data, mg.Tensor)
    assert losses[2] < losses[1] < losses[0]  # gradient descent on a convex loss with a small step


def test_data_mul_and_setitem_write_into_the_parameter_without_a_version_change():
    p = weight()
    version = p._version
    p.data.mul_(0.5)
    p.data[0] = 1.0
    p.data[1, 2] = -7.0
    np.testing.assert_array_equal(p.numpy(), [[1.0, 1.0, 1.0], [0.25, 0.125, -7.0]])
    assert p._version == version
    with mg.no_grad():
        p.mul_(2.0)  # through the parameter itself: counted
    assert p._version == version + 1


def test_data_change_after_the_forward_is_not_seen_by_autograd():
    """As in PyTorch: a change through .data bypasses the version check, so the backward computes
    with the new values (d(p*p)/dp = 2p, with p as it is at backward time)."""
    p = weight()
    y = (p * p).sum()
    p.data.mul_(3.0)
    y.backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * p.numpy(), rtol=1e-15)
    torch = pytest.importorskip("torch")
    q = torch.tensor(np.array(weight().numpy()), requires_grad=True)
    z = (q * q).sum()
    q.data.mul_(3.0)
    z.backward()
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-15)


def test_assigning_data_replaces_the_values():
    p = weight()
    new = mg.tensor(np.arange(4.0))
    p.data = new  # a different shape is allowed, as in PyTorch
    assert p.shape == (4,) and p.requires_grad and p.is_leaf
    assert np.shares_memory(p.numpy(), new.numpy())
    (p * p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), 2 * np.arange(4.0))
    p.data = np.ones(4)  # a numpy array too
    np.testing.assert_array_equal(p.numpy(), np.ones(4))
    with pytest.raises(TypeError, match="requires grad.*floating-point"):
        p.data = mg.tensor([1, 2, 3])


def test_update_to_data_ratio_of_the_course():
    """`((lr * p.grad).std() / p.data.std()).log10()`: the ratio of two stds over the same number
    of elements does not depend on the std's correction (n or n - 1), so numpy's std gives the
    expected value; log10 is written as log / ln 10 here."""
    mg.manual_seed(1)
    model = nn.Linear(8, 4)
    (model(mg.randn(16, 8)) ** 2).mean().backward()
    lr = 0.1
    for p in (model.weight,):
        ratio = (lr * p.grad).std() / p.data.std()
        assert isinstance(ratio, mg.Tensor)
        log10 = ratio.log() / math.log(10)
        expected = np.log10(lr * np.std(p.grad.numpy()) / np.std(p.numpy()))
        np.testing.assert_allclose(log10.item(), expected, rtol=1e-5)  # float32 std and log: a few ulps


def test_optimizer_steps_still_update_the_same_array():
    mg.manual_seed(2)
    model = nn.Linear(3, 2)
    opt = mg.optim.AdamW(model.parameters(), lr=0.01)
    memory = model.weight.numpy()
    (model(mg.randn(4, 3)) ** 2).sum().backward()
    before = memory.copy()
    opt.step()
    assert model.weight.numpy() is memory and not np.array_equal(memory, before)
    total = mg.optim.clip_grad_norm_(model.parameters(), 1e-3)
    norm = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in model.parameters()))
    assert total > 1e-3 and norm == pytest.approx(1e-3, rel=1e-4)  # clipped in place, into the grad Tensors


# ----------------------------------------------------------------------------- integer tensors in place
@pytest.mark.parametrize("dtype", ["int32", np.int32, np.int64, np.uint8])
def test_counts_updated_in_place_keep_their_dtype(dtype):
    N = mg.zeros((27, 27), dtype=dtype)
    memory = N.numpy()
    for i, j in [(0, 1), (0, 1), (26, 3), (0, 1)]:
        N[i, j] += 1
    N += 2
    N.add_(1)
    assert N.dtype == np.dtype(dtype) and N.numpy() is memory
    expected = np.full((27, 27), 3, dtype=np.dtype(dtype))
    expected[0, 1] += 3
    expected[26, 3] += 1
    np.testing.assert_array_equal(N.numpy(), expected)
    assert (N + 1).dtype == np.dtype(dtype)  # a Python int keeps an integer tensor's dtype (PyTorch's rule)


def test_counts_match_pytorch():
    torch = pytest.importorskip("torch")
    N, T = mg.zeros((4, 4), dtype="int32"), torch.zeros((4, 4), dtype=torch.int32)
    for i, j in [(0, 1), (2, 3), (0, 1)]:
        N[i, j] += 1
        T[i, j] += 1
    N += 5
    T += 5
    assert str(N.dtype) == str(T.dtype).replace("torch.", "")
    np.testing.assert_array_equal(N.numpy(), T.numpy())
    assert (N * 2).dtype == np.int32 and (T * 2).dtype == torch.int32


def test_a_float_into_an_integer_tensor_in_place_is_refused():
    N = mg.zeros(3, dtype="int32")
    with pytest.raises(TypeError, match="keeps the tensor's dtype"):
        N += 0.5


# ----------------------------------------------------------------------------- __format__
def test_one_element_tensor_formats_as_its_number():
    assert f"{mg.tensor(3.14159):.4f}" == "3.1416"
    assert f"{mg.tensor([2.5]):.2f}" == "2.50"
    assert f"{mg.tensor([[7]]):>4d}" == "   7"
    assert f"{mg.tensor(-1.0, requires_grad=True) * 2:+.1e}" == "-2.0e+00"
    assert format(mg.tensor(0.5)) == "0.5"


def test_formatting_matches_pytorch_for_zero_dim():
    torch = pytest.importorskip("torch")
    for value in (3.14159, -0.001, 12345.678):
        for spec in (".4f", ".2e", "", "10.3g"):
            assert format(mg.tensor(value, dtype="float64"), spec) == format(torch.tensor(value, dtype=torch.float64),
                                                                             spec)


def test_larger_tensor_formats_like_its_repr_or_refuses_a_spec():
    t = mg.tensor([1.0, 2.0])
    assert f"{t}" == repr(t)
    with pytest.raises(TypeError, match=r"format: the spec '\.4f' formats one number.*shape \(2,\)"):
        f"{t:.4f}"
