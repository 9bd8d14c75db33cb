"""The backend switch, and the numba kernels agreeing with their numpy twins inside real graphs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import kernels, ops

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ["numba", "numpy"]


def _python(code, **env_changes):
    env = dict(os.environ)
    env.pop("MINIGRAD_BACKEND", None)
    env.update(env_changes)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


# ----------------------------------------------------------------------------- the switch
def test_get_and_set_backend():
    assert mg.get_backend() in BACKENDS
    mg.set_backend("numpy")
    assert mg.get_backend() == "numpy"
    mg.set_backend("NUMBA")
    assert mg.get_backend() == "numba"


def test_set_backend_unknown_name():
    before = mg.get_backend()
    with pytest.raises(ValueError) as info:
        mg.set_backend("cuda")
    assert "cuda" in str(info.value) and "numba" in str(info.value) and "numpy" in str(info.value)
    assert mg.get_backend() == before


def test_use_backend_context_manager():
    mg.set_backend("numba")
    with mg.use_backend("numpy"):
        assert mg.get_backend() == "numpy"
        with mg.use_backend("numba"):
            assert mg.get_backend() == "numba"
        assert mg.get_backend() == "numpy"
    assert mg.get_backend() == "numba"


def test_use_backend_restores_after_exception():
    mg.set_backend("numba")
    with pytest.raises(ZeroDivisionError):
        with mg.use_backend("numpy"):
            1 / 0
    assert mg.get_backend() == "numba"
    with pytest.raises(ValueError):
        with mg.use_backend("tpu"):
            pass
    assert mg.get_backend() == "numba"


@pytest.mark.parametrize("backend", BACKENDS)
def test_ops_really_run_on_the_chosen_backend(backend, monkeypatch):
    import importlib

    module = importlib.import_module("minigrad.kernels.softmax")
    calls = []
    original = getattr(module, f"softmax_forward_{backend}")

    def counting(*args, **kwargs):
        calls.append(backend)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, f"softmax_forward_{backend}", counting)
    with mg.use_backend(backend):
        mg.tensor(np.ones((2, 3))).softmax(-1)
    assert calls == [backend]
    assert kernels.implementation("softmax_forward", backend) is counting


def test_kernel_dispatchers_stay_callable_after_use():
    a = mg.tensor(np.ones((2, 2)))
    for _ in range(2):
        for backend in BACKENDS:
            with mg.use_backend(backend):
                np.testing.assert_array_equal((a @ a).numpy(), np.full((2, 2), 2.0))
    for name in kernels.FILES:
        # (kernels.matmul is the file: its two kernels go by BLAS's name, gemm)
        dispatcher = getattr(kernels, name.replace("matmul", "gemm"))
        assert callable(dispatcher), name


def test_matmul_works_after_importing_the_matmul_kernel_module():
    result = _python(
        "import minigrad.kernels.matmul\n"
        "import minigrad as mg\n"
        "a = mg.ones(2, 2)\n"
        "print((a @ a).numpy().sum(), (a @ a).numpy().sum())\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["8.0", "8.0"]


# ----------------------------------------------------------------------------- environment variable
@pytest.mark.parametrize("value, expected", [("numpy", "numpy"), (" NumPy ", "numpy"), ("numba", "numba"),
                                             (None, "numba"), ("", "numba")])
def test_env_var_chooses_backend(value, expected):
    env = {} if value is None else {"MINIGRAD_BACKEND": value}
    result = _python("import minigrad; print(minigrad.get_backend())", **env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == expected


def test_env_var_invalid_value_fails_at_import():
    result = _python("import minigrad", MINIGRAD_BACKEND="fortran")
    assert result.returncode != 0
    assert "MINIGRAD_BACKEND" in result.stderr and "fortran" in result.stderr


# ----------------------------------------------------------------------------- numba == numpy
def _graph(dtype, batch, seq, dim, vocab, seed=0):
    """A small transformer-like step: matmul, layer norm, both gelus, attention softmax, batched
    matmuls, log-softmax and cross-entropy with label smoothing and an ignored target. Returns the
    loss, the logits and the gradient of every leaf."""
    g = np.random.default_rng(seed)

    def p(*shape, scale=1.0):
        return mg.tensor((g.standard_normal(shape) * scale).astype(dtype), requires_grad=True)

    x = p(batch, seq, dim)
    w1, b1 = p(dim, dim, scale=dim ** -0.5), p(dim, scale=0.1)
    ln_w, ln_b = mg.tensor(g.uniform(0.5, 1.5, dim).astype(dtype), requires_grad=True), p(dim, scale=0.1)
    w2 = p(dim, vocab, scale=dim ** -0.5)
    targets = g.integers(0, vocab, (batch, seq))
    targets[0, -1] = -100

    h = ops.LayerNorm.apply(x @ w1 + b1, ln_w, ln_b, eps=1e-5)
    h = h.gelu() + 0.5 * h.gelu(approximate="tanh")
    scores = (h @ h.transpose(-1, -2)) * dim ** -0.5
    attention = scores.softmax(-1)
    h = h + attention @ h
    logits = h @ w2
    loss = ops.CrossEntropy.apply(logits, targets=targets, ignore_index=-100, label_smoothing=0.1)
    loss = loss - 0.01 * logits.log_softmax(axis=1).mean()
    loss.backward()
    leaves = {"x": x, "w1": w1, "b1": b1, "ln_w": ln_w, "ln_b": ln_b, "w2": w2}
    out = {"loss": loss.numpy(), "logits": logits.numpy(), "attention": attention.numpy()}
    out.update({f"d{name}": t.grad for name, t in leaves.items()})
    for value in out.values():
        assert value.dtype == dtype
        assert np.all(np.isfinite(value))
    return out


# float64: both backends compute the same formulas, only the summation order and exp differ
# float32: single-precision rounding of each op, propagated through the graph
TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-6)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("sizes", [(2, 5, 8, 7), (4, 64, 128, 128)], ids=["small", "threaded"])
def test_numba_and_numpy_agree_on_a_graph(dtype, sizes):
    with mg.use_backend("numba"):
        fast = _graph(dtype, *sizes)
    with mg.use_backend("numpy"):
        reference = _graph(dtype, *sizes)
    assert fast.keys() == reference.keys()
    tol = TOLERANCE[dtype]
    for name in reference:
        scale = max(1.0, float(np.abs(reference[name]).max()))
        np.testing.assert_allclose(fast[name], reference[name], rtol=tol["rtol"], atol=tol["atol"] * scale,
                                   err_msg=name)


# ----------------------------------------------------------------------------- awkward arrays into kernels
KERNEL_OPS = {
    "matmul_transposed": lambda x, w: x.T @ w,
    "matmul_strided": lambda x, w: x.T[::2] @ w[:, ::-1],
    "matmul_folded_batch": lambda x, w: x.T.unsqueeze(1) @ w,
    "matmul_broadcast_batch": lambda x, w: x.reshape(2, 3, 5).transpose() @ w[:3].unsqueeze(0),
    "softmax_axis0": lambda x, w: x.softmax(axis=0),
    "softmax_strided": lambda x, w: x[:, ::2].softmax(-1),
    "log_softmax_axis0": lambda x, w: x.log_softmax(axis=0),
    "gelu": lambda x, w: x.T.gelu(),
    "gelu_tanh": lambda x, w: x[::-1].gelu(approximate="tanh"),
    "layer_norm": lambda x, w: ops.LayerNorm.apply(x.T, w[:, 0], w[:, 1], eps=1e-5),
    "cross_entropy": lambda x, w: ops.CrossEntropy.apply(x.T, targets=np.array([0, 5, 2, 1, 5]), label_smoothing=0.2),
    "cross_entropy_none": lambda x, w: ops.CrossEntropy.apply(x[:, ::2], targets=np.array([1, 0, 2, -100, 1, 2]),
                                                              reduction="none"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(KERNEL_OPS))
def test_kernels_on_views_and_broadcast_gradients(backend, name):
    """Transposed, strided and reversed inputs, and an upstream gradient that is a read-only
    zero-stride view (what `.sum()` sends back), on each backend; then a gradient check."""
    fn = KERNEL_OPS[name]
    g = np.random.default_rng(3)
    x = mg.tensor(g.standard_normal((6, 5)), requires_grad=True)
    w = mg.tensor(g.uniform(0.5, 1.5, (6, 4)), requires_grad=True)
    with mg.use_backend(backend):
        out = fn(x, w)
        (out * 1.0).sum().backward()  # Mul passes on a fresh gradient: the reference result
        expected_x = x.grad.numpy().copy()
        expected_w = None if w.grad is None else w.grad.numpy().copy()
        x.grad = w.grad = None
        fn(x, w).sum().backward()  # Sum passes on np.broadcast_to(1, shape): read-only, strides 0
        np.testing.assert_allclose(x.grad, expected_x, rtol=1e-12, atol=1e-14)
        if expected_w is not None:
            np.testing.assert_allclose(w.grad, expected_w, rtol=1e-12, atol=1e-14)
        assert mg.gradcheck(fn, [x, w])
    with mg.use_backend("numpy" if backend == "numba" else "numba"):
        np.testing.assert_allclose(fn(x, w).numpy(), out.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_kernels_keep_float32(backend):
    g = np.random.default_rng(4)
    x = mg.tensor(g.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    w = mg.tensor(g.standard_normal((4, 4)).astype(np.float32), requires_grad=True)
    with mg.use_backend(backend):
        outs = [x @ w, x.softmax(-1), x.log_softmax(0), x.gelu(), x.gelu(approximate="tanh"),
                ops.LayerNorm.apply(x, w[0], w[1], eps=1e-5),
                ops.CrossEntropy.apply(x, targets=np.array([0, 3, 1]), label_smoothing=0.1)]
        for out in outs:
            assert out.dtype == np.float32
        sum(((o * 1.0).sum() for o in outs), mg.tensor(np.float32(0))).backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32
