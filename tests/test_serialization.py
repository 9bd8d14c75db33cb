"""minigrad.save / minigrad.load: round trips, the file format, bad files, atomic writes, and model
checkpoints: a trained model's state dict reloads bit for bit, and training resumed from a
checkpoint (model, optimizer and random generator) repeats the uninterrupted run exactly."""
import math
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minigrad as mg
from helpers import MLP, train_steps, two_spirals
from minigrad import optim
from minigrad.nn import functional as F
from minigrad.serialization import CheckpointError, load, save

ROOT = pathlib.Path(__file__).resolve().parents[1]


def assert_same(loaded, original):
    """Equal values and equal types (arrays: same dtype and shape; Tensors come back as Tensors, with
    their requires_grad, as from torch.load)."""
    if isinstance(original, mg.Tensor):
        assert isinstance(loaded, mg.Tensor) and loaded.requires_grad == original.requires_grad
        loaded, original = loaded.numpy(), original.numpy()
    if isinstance(original, np.ndarray):
        assert isinstance(loaded, np.ndarray)
        assert loaded.dtype == original.dtype and loaded.shape == original.shape
        np.testing.assert_array_equal(loaded, original)
    elif isinstance(original, dict):
        assert isinstance(loaded, dict) and list(loaded) == list(original)
        for key in original:
            assert_same(loaded[key], original[key])
    elif isinstance(original, (list, tuple)):
        assert type(loaded) is type(original) and len(loaded) == len(original)
        for a, b in zip(loaded, original):
            assert_same(a, b)
    elif isinstance(original, float) and math.isnan(original):
        assert isinstance(loaded, float) and math.isnan(loaded)
    else:
        assert type(loaded) is type(original) and loaded == original


def example():
    return {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64": np.array([0.1, -1e300, np.inf]),
        "f16": np.zeros((0, 3), dtype=np.float16),
        "i64": np.array([1, -2 ** 40], dtype=np.int64),
        "u8": np.arange(5, dtype=np.uint8),
        "bool": np.array([[True, False]]),
        "zero_d": np.array(3.5, dtype=np.float32),
        "numpy_scalar": np.int64(7),
        "int": 3,
        "big_int": 2 ** 70,
        "float": 0.1,
        "nan": float("nan"),
        "flag": True,
        "text": "héllo ✓",
        "nothing": None,
        "list": [1, "two", np.ones(2), [None, False]],
        "tuple": (1, 2.5),
        "nested": {"a": {"b": [{"c": np.eye(2, dtype=np.float32)}]}, "": "empty key", "x/y.npy": 1},
        "tensor": mg.tensor([[1.0, 2.0]], requires_grad=True),
    }


def leftovers(directory, keep):
    return sorted(name for name in os.listdir(directory) if name not in keep)


# ---------------------------------------------------------------------------- round trips and format
def test_round_trip_nested(tmp_path):
    path = tmp_path / "ckpt.npz"
    obj = example()
    save(obj, path)
    loaded = load(path)
    assert_same(loaded, obj)
    assert isinstance(loaded["tensor"], mg.Tensor) and loaded["tensor"].requires_grad
    assert isinstance(loaded["numpy_scalar"], np.int64)
    assert leftovers(tmp_path, {"ckpt.npz"}) == []


def test_file_is_a_plain_npz_readable_without_pickle(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"w": np.ones(3, dtype=np.float32)}, str(path))
    with np.load(path, allow_pickle=False) as npz:
        assert "minigrad_structure" in npz.files
        arrays = [npz[k] for k in npz.files if k != "minigrad_structure"]
    assert len(arrays) == 1 and arrays[0].dtype == np.float32


def test_path_without_npz_suffix(tmp_path):
    path = tmp_path / "checkpoint"
    save({"x": np.arange(3)}, path)
    assert os.listdir(tmp_path) == ["checkpoint"]
    np.testing.assert_array_equal(load(path)["x"], np.arange(3))


def test_overwrite_existing_checkpoint(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"step": 1, "w": np.zeros(4)}, path)
    save({"step": 2, "w": np.ones(2)}, path)
    loaded = load(path)
    assert loaded["step"] == 2
    np.testing.assert_array_equal(loaded["w"], np.ones(2))
    assert leftovers(tmp_path, {"ckpt.npz"}) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_new_file_gets_ordinary_permissions(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_optimizer_state_dict_round_trip(tmp_path):
    params = [mg.tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)]
    opt = optim.AdamW(params, lr=0.01, betas=(0.8, 0.9))
    params[0].grad = np.full((2, 3), 0.5, dtype=np.float32)
    opt.step()
    save({"optim": opt.state_dict()}, tmp_path / "ckpt.npz")
    fresh = optim.AdamW([mg.tensor(params[0].numpy().copy(), requires_grad=True)])
    fresh.load_state_dict(load(tmp_path / "ckpt.npz")["optim"])
    assert fresh.param_groups[0]["betas"] == (0.8, 0.9) and fresh.param_groups[0]["lr"] == 0.01
    state = next(iter(fresh.state.values()))
    assert state["step"] == 1
    np.testing.assert_array_equal(state["exp_avg"], opt.state[params[0]]["exp_avg"])


@pytest.mark.parametrize("bad, match", [
    ({1: "int key"}, "keys must be str"),
    ({"s": {1, 2}}, "set"),
    ({"o": np.array([None, 1], dtype=object)}, "dtype object"),
])
def test_unsupported_objects_raise_and_write_nothing(tmp_path, bad, match):
    with pytest.raises(TypeError, match=match):
        save(bad, tmp_path / "ckpt.npz")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- bad files
@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"w": np.arange(1000, dtype=np.float64), "step": 5}, path)
    return path


@pytest.mark.parametrize("keep", [2, 100, 0.5, -1])
def test_truncated_file(good_file, keep):
    data = good_file.read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else keep % len(data)
    good_file.write_bytes(data[:n])
    with pytest.raises(CheckpointError, match=str(good_file).replace("\\", "\\\\")):
        load(good_file)


def test_corrupted_array_bytes_fail_the_checksum(good_file):
    data = bytearray(good_file.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside the 8000 bytes of "w"
    good_file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt"):
        load(good_file)


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(CheckpointError, match="not an .npz"):
        load(path)


def test_plain_numpy_npz_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, w=np.ones(3))
    with pytest.raises(CheckpointError, match="not a minigrad checkpoint"):
        load(path)


@pytest.mark.parametrize("info, match", [
    (b'{"format": "minigrad-checkpoint", "version": 99, "tree": {"type": "none"}}', "version 99"),
    (b'{"format": "something-else", "version": 1, "tree": {"type": "none"}}', "not a minigrad checkpoint"),
    (b'{"format": "minigrad-checkpoint", "version": 1, "tree": {"type": "array", "key": "a7"}}', "structure"),
    (b"not json", "corrupt"),
])
def test_bad_structure_entry(tmp_path, info, match):
    path = tmp_path / "ckpt.npz"
    np.savez(path, minigrad_structure=np.frombuffer(info, dtype=np.uint8))
    with pytest.raises(CheckpointError, match=match):
        load(path)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.npz")


# ---------------------------------------------------------------------------- atomic writes
@pytest.mark.parametrize("failure", ["savez", "savez_interrupt", "replace"])
def test_failure_while_writing_keeps_previous_file(good_file, monkeypatch, failure):
    def broken_savez(file, **arrays):
        file.write(b"PK\x03\x04 half a checkpoint")
        raise KeyboardInterrupt if failure == "savez_interrupt" else OSError("disk full")

    def broken_replace(src, dst):
        raise OSError("rename failed")

    if failure.startswith("savez"):
        monkeypatch.setattr(np, "savez", broken_savez)
    else:
        monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises((OSError, KeyboardInterrupt)):
        save({"w": np.zeros(10), "step": 6}, good_file)
    monkeypatch.undo()
    loaded = load(good_file)
    assert loaded["step"] == 5
    np.testing.assert_array_equal(loaded["w"], np.arange(1000, dtype=np.float64))
    assert leftovers(good_file.parent, {good_file.name}) == []


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from minigrad.serialization import save

    big = np.zeros(25_000_000)  # 200 MB
    print("ready", flush=True)
    for k in range(1, 1000):
        big[0] = big[-1] = k
        save({"id": k, "big": big}, sys.argv[1])
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_while_saving_leaves_a_complete_checkpoint(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"id": 0, "big": np.zeros(3)}, path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, env=env)
    try:
        assert writer.stdout.readline().strip() == b"ready"
        time.sleep(0.4)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL

    loaded = load(path)
    if loaded["id"] == 0:
        np.testing.assert_array_equal(loaded["big"], np.zeros(3))
    else:  # a later save completed before the kill: it must be whole
        big = loaded["big"]
        assert big.shape == (25_000_000,) and big[0] == big[-1] == loaded["id"]


# ---------------------------------------------------------------------------- model checkpoints
def test_state_dict_round_trip_bit_identical(tmp_path):
    x, y = two_spirals(64)
    model = MLP(p=0.2)
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(5):
        loss = F.cross_entropy(model(mg.tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    mg.manual_seed(999)
    other = MLP(p=0.2).eval()
    assert not np.array_equal(other(mg.tensor(x)).numpy(), model(mg.tensor(x)).numpy())
    other.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(other(mg.tensor(x)).numpy(), model(mg.tensor(x)).numpy())
    # through a file as well
    mg.save(model.state_dict(), tmp_path / "model.npz")
    third = MLP(p=0.2).eval()
    third.load_state_dict(mg.load(tmp_path / "model.npz"))
    np.testing.assert_array_equal(third(mg.tensor(x)).numpy(), model(mg.tensor(x)).numpy())


def test_resume_from_checkpoint_is_exact(tmp_path):
    x, y = two_spirals()
    N, k = 30, 12

    mg.manual_seed(5)
    model = MLP(p=0.3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    uninterrupted = train_steps(model, opt, x, y, N)

    mg.manual_seed(5)
    model = MLP(p=0.3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    first = train_steps(model, opt, x, y, k)
    path = tmp_path / "ckpt.npz"
    mg.save({"model": model.state_dict(), "optim": opt.state_dict(), "rng": mg.random.get_state()}, path)
    del model, opt

    mg.manual_seed(123)  # a fresh model with other weights, and a generator elsewhere
    model = MLP(p=0.3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    ckpt = mg.load(path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optim"])
    mg.random.set_state(ckpt["rng"])
    rest = train_steps(model, opt, x, y, N - k)

    assert first + rest == uninterrupted
    assert len(set(uninterrupted)) > N // 2  # the losses do change from step to step


def test_resume_without_rng_state_differs(tmp_path):
    """The control for the test above: with dropout, not restoring the RNG changes the losses
    (so the equality there is evidence that the RNG state is restored, not a coincidence)."""
    x, y = two_spirals()
    mg.manual_seed(5)
    model = MLP(p=0.3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    train_steps(model, opt, x, y, 3)
    state = mg.random.get_state()
    sd, osd = model.state_dict(), opt.state_dict()
    reference = train_steps(model, opt, x, y, 3)
    model.load_state_dict(sd)
    opt.load_state_dict(osd)
    mg.manual_seed(6)
    assert train_steps(model, opt, x, y, 3) != reference
    model.load_state_dict(sd)
    opt.load_state_dict(osd)
    mg.random.set_state(state)
    assert train_steps(model, opt, x, y, 3) == reference
