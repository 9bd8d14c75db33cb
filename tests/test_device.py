"""The CPU device that PyTorch code passes around: minigrad.device, device= on the creation
functions, .to(device) / .cpu() / .device, minigrad.cuda, set_default_device; any other device
is refused with one clear message."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

CPU_ONLY = "minigrad runs on the CPU only"


def test_device_names_the_cpu_as_pytorch_does():
    d = mg.device("cpu")
    assert d.type == "cpu" and d.index is None
    assert repr(d) == "device(type='cpu')" and str(d) == "cpu"
    assert d == "cpu" and d == mg.device(d) and hash(d) == hash(mg.device("cpu"))
    indexed = mg.device("cpu:0")
    assert indexed == mg.device("cpu", 0) and indexed.index == 0 and str(indexed) == "cpu:0"
    assert indexed != d


@pytest.mark.parametrize("name", ["cuda", "cuda:0", "mps", "xpu"])
def test_other_devices_are_refused_with_one_clear_message(name):
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        mg.device(name)


@pytest.mark.parametrize("bad, error", [("gpu", ValueError), ("cpu:x", ValueError), (3.0, TypeError)])
def test_what_is_no_device_name_is_refused(bad, error):
    with pytest.raises(error, match="device"):
        mg.device(bad)


def test_cuda_answers_for_a_cpu_only_library():
    assert mg.cuda.is_available() is False and mg.cuda.device_count() == 0
    mg.cuda.manual_seed_all(0)  # does nothing, as PyTorch without a GPU
    device = mg.device("cuda" if mg.cuda.is_available() else "cpu")
    assert device == "cpu"


def test_default_device():
    mg.set_default_device("cpu")
    mg.set_default_device(mg.device("cpu"))
    mg.set_default_device(None)
    assert mg.get_default_device() == "cpu"
    with pytest.raises(RuntimeError, match="set_default_device: " + CPU_ONLY):
        mg.set_default_device("cuda")


CREATORS = {
    "tensor": lambda **kw: mg.tensor([1.0, 2.0], **kw),
    "as_tensor": lambda **kw: mg.as_tensor([1.0, 2.0], **kw),
    "zeros": lambda **kw: mg.zeros(2, 3, **kw),
    "ones": lambda **kw: mg.ones((2, 3), **kw),
    "full": lambda **kw: mg.full((2,), 4.0, **kw),
    "zeros_like": lambda **kw: mg.zeros_like(mg.ones(2), **kw),
    "ones_like": lambda **kw: mg.ones_like(mg.ones(2), **kw),
    "full_like": lambda **kw: mg.full_like(mg.ones(2), 3.0, **kw),
    "eye": lambda **kw: mg.eye(3, **kw),
    "linspace": lambda **kw: mg.linspace(0, 1, 5, **kw),
    "arange": lambda **kw: mg.arange(4, **kw),
    "randn": lambda **kw: mg.randn(2, 2, **kw),
    "rand": lambda **kw: mg.rand(2, 2, **kw),
}


@pytest.mark.parametrize("name", list(CREATORS))
def test_creation_functions_take_the_cpu_and_refuse_other_devices(name):
    make = CREATORS[name]
    mg.manual_seed(0)
    plain = make()
    for device in ("cpu", mg.device("cpu"), mg.device("cpu:0")):
        mg.manual_seed(0)
        t = make(device=device)
        assert t.device == "cpu"
        np.testing.assert_array_equal(t.numpy(), plain.numpy())
    with pytest.raises(RuntimeError, match=f"{name}: {CPU_ONLY}"):
        make(device="cuda")
    with pytest.raises(RuntimeError, match=f"{name}: {CPU_ONLY}"):
        make(device=0)  # PyTorch reads an int as a CUDA device number


def test_tensor_to_cpu_and_device_are_no_ops():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    assert x.device == mg.device("cpu") and x.is_cuda is False
    for same in (x.to("cpu"), x.to(mg.device("cpu")), x.to(device="cpu"), x.cpu(), x.to(x.dtype), x.to("cpu:0")):
        assert same is x
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        x.to("cuda")
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        x.cuda()


def test_tensor_to_dtype_in_every_form():
    x = mg.tensor([1.5, 2.5], requires_grad=True)
    for converted in (x.to(mg.double), x.to("cpu", mg.float64), x.to(dtype="float64"),
                      x.to(mg.zeros(1, dtype="float64")), x.to(device="cpu", dtype=np.float64)):
        assert converted.dtype == np.float64 and converted is not x
        np.testing.assert_array_equal(converted.numpy(), [1.5, 2.5])
    y = x.to(mg.double)
    (y * y).sum().backward()  # the cast is in the graph
    np.testing.assert_array_equal(x.grad, [3.0, 5.0])
    copy = x.to("cpu", copy=True)
    assert copy is not x and not np.shares_memory(copy.data, x.data)


def test_module_to_device():
    model = nn.Sequential(nn.Linear(2, 3, device="cpu"), nn.LayerNorm(3, device=mg.device("cpu")))
    params = list(model.parameters())
    assert model.to("cpu") is model and model.cpu() is model
    assert model.to(mg.device("cpu")) is model and all(p.dtype == np.float32 for p in model.parameters())
    model.to("cpu", mg.double)
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert all(a is b for a, b in zip(params, model.parameters()))
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        model.to("cuda")
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        model.cuda()
    with pytest.raises(RuntimeError, match=f"Linear: {CPU_ONLY}"):
        nn.Linear(2, 3, device="cuda")
    with pytest.raises(RuntimeError, match=f"Embedding: {CPU_ONLY}"):
        nn.Embedding(4, 3, device="cuda:0")


def test_pytorch_device_code_runs_unchanged():
    import minigrad as torch

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    torch.set_default_device(device)
    x = torch.linspace(-1, 1, 10, device=device, dtype=torch.float)
    model = torch.nn.Linear(1, 1).to(device)
    y = model(x.unsqueeze(-1).to(device)).cpu()
    assert y.shape == (10, 1) and y.device == device
