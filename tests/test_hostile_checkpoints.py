"""Checkpoints from strangers: `minigrad.load` on a file crafted to hurt the reader, or damaged at
random, raises CheckpointError (or loads something), and nothing else: no RecursionError from a
deep structure, no MemoryError (or a huge allocation that happens to succeed) from an array
header that promises more data than the file holds, never an unpickled object.

The fuzz tests mutate a valid checkpoint three ways: its raw bytes (the zip's own checksums catch
most of those), the bytes of its members repacked into a well-formed zip (so the .npy headers and
the JSON reach the parser), and the JSON structure itself."""
import io
import json
import os
import tempfile
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.serialization import MAX_DEPTH, CheckpointError, load, save

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------- building files by hand
def npy(array):
    """The bytes of `array` as a .npy file."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def npy_header(shape, descr="<f4", fortran_order=False):
    """Just the header of a .npy file, declaring an array it does not go on to hold."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": fortran_order, "shape": shape})
    return buffer.getvalue()


def structure(tree):
    info = {"format": "minigrad-checkpoint", "version": 1, "tree": tree}
    return npy(np.frombuffer(json.dumps(info).encode("utf-8"), dtype=np.uint8))


def zip_of(members, compression=zipfile.ZIP_STORED):
    """A zip file (bytes) of {name: bytes}, with correct checksums."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def write(tmp_path, data, name="ckpt.npz"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def load_reporting_peak_memory(path):
    """(the error load raised, the most memory Python and numpy held meanwhile, in bytes)."""
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as info:
            load(path)
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------- deep structures
def nested_list_tree(depth):
    tree = {"type": "none"}
    for _ in range(depth):
        tree = {"type": "list", "items": [tree]}
    return tree


@pytest.mark.parametrize("depth", [1000, 5000])
def test_a_structure_nested_thousands_deep_is_refused_before_parsing(tmp_path, depth):
    # built as text: json.dumps itself would hit the recursion limit
    text = '{"type": "list", "items": [' * depth + '{"type": "none"}' + "]}" * depth
    info = f'{{"format": "minigrad-checkpoint", "version": 1, "tree": {text}}}'.encode()
    path = write(tmp_path, zip_of({"minigrad_structure.npy": npy(np.frombuffer(info, dtype=np.uint8))}))
    with pytest.raises(CheckpointError, match="nests .* deep"):
        load(path)


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"text": "[" * 5000 + "{" * 5000}, path)
    assert load(path)["text"] == "[" * 5000 + "{" * 5000


def test_the_deepest_tree_save_writes_loads_and_one_deeper_is_refused_by_save(tmp_path):
    obj = np.arange(3)
    for i in range(MAX_DEPTH):
        obj = {"k": obj} if i % 2 else [obj]
    save(obj, tmp_path / "deep.npz")
    loaded = load(tmp_path / "deep.npz")
    for i in reversed(range(MAX_DEPTH)):
        loaded = loaded["k"] if i % 2 else loaded[0]
    np.testing.assert_array_equal(loaded, np.arange(3))
    with pytest.raises(ValueError, match="nested more than"):
        save([obj], tmp_path / "deeper.npz")


def test_a_list_that_contains_itself_is_refused_by_save(tmp_path):
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contain itself"):
        save(loop, tmp_path / "loop.npz")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- arrays larger than the file
def test_a_300_byte_file_declaring_a_million_by_million_array(tmp_path):
    members = {"minigrad_structure.npy": structure({"type": "array", "key": "a0"}),
               "a0.npy": npy_header((10 ** 6, 10 ** 6)) + b"\0" * 16}
    path = write(tmp_path, zip_of(members))
    assert os.path.getsize(path) < 700
    error, peak = load_reporting_peak_memory(path)
    assert "(1000000, 1000000)" in str(error)
    assert peak < 1 << 20


def test_a_header_declaring_an_array_that_would_fit_in_memory_is_still_refused_before_allocating(tmp_path):
    # 128 MB could be allocated; it must not be, for 16 bytes of data
    members = {"minigrad_structure.npy": structure({"type": "array", "key": "a0"}),
               "a0.npy": npy_header((4000, 4000), descr="<f8") + b"\0" * 16}
    error, peak = load_reporting_peak_memory(write(tmp_path, zip_of(members)))
    assert "holds 16" in str(error)
    assert peak < 1 << 20


@pytest.mark.parametrize("shape", [(-1,), (2, -3), (-2, -2)])
def test_negative_dimensions_are_refused(tmp_path, shape):
    members = {"minigrad_structure.npy": structure({"type": "array", "key": "a0"}),
               "a0.npy": npy_header(shape) + b"\0" * 16}
    with pytest.raises(CheckpointError):
        load(write(tmp_path, zip_of(members)))


def test_an_object_array_is_refused_not_unpickled(tmp_path):
    members = {"minigrad_structure.npy": structure({"type": "array", "key": "a0"}),
               "a0.npy": npy_header((1,), descr="|O") + b"\x80\x04N."}  # a pickle of None
    with pytest.raises(CheckpointError, match="pickle"):
        load(write(tmp_path, zip_of(members)))


def test_a_compressed_member_is_refused(tmp_path):
    # deflate can expand a small file a thousandfold; minigrad writes (and reads) stored members only
    path = tmp_path / "ckpt.npz"
    save({"w": np.zeros(1000)}, path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    with pytest.raises(CheckpointError, match="compressed"):
        load(write(tmp_path, zip_of(members, zipfile.ZIP_DEFLATED), "deflated.npz"))


# ---------------------------------------------------------------------------- structures that save cannot write
@pytest.mark.parametrize("tree", [
    {"type": "int", "value": "seven"},
    {"type": "str", "value": 7},
    {"type": "bool", "value": 1},
    {"type": "float", "value": None},
    {"type": "dict", "items": [["k"]]},
    {"type": "dict", "items": [[1, {"type": "none"}]]},
    {"type": "dict", "items": {"k": {"type": "none"}}},
    {"type": "list", "items": "abc"},
    {"type": "list", "items": [5]},
    {"type": "array", "key": ["a0"]},
    {"type": "array", "key": "minigrad_structure"},
    {"type": "scalar", "key": None},
    {"type": "set", "items": []},
    {"items": []},
    [],
    "none",
    None,
])
def test_a_structure_that_save_cannot_have_written(tmp_path, tree):
    path = write(tmp_path, zip_of({"minigrad_structure.npy": structure(tree), "a0.npy": npy(np.ones(2))}))
    with pytest.raises(CheckpointError, match="structure"):
        load(path)


@pytest.mark.parametrize("info", [b"[]", b"null", b'"text"', b"1e999999", b"\xff\xfe", b"{" * 100000])
def test_structure_entries_that_are_not_an_object(tmp_path, info):
    path = write(tmp_path, zip_of({"minigrad_structure.npy": npy(np.frombuffer(info, dtype=np.uint8))}))
    with pytest.raises(CheckpointError):
        load(path)


# ---------------------------------------------------------------------------- fuzz
def valid_checkpoint():
    """The bytes of a small checkpoint with a bit of everything."""
    obj = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.zeros(3, dtype=np.float64),
           "step": 7, "lr": 1e-3, "name": "model", "flags": [True, None, (1, 2.5)], "ids": np.arange(4),
           "scalar": np.float32(2.0), "t": mg.tensor([1.0, 2.0]).T, "f": np.asfortranarray(np.eye(3))}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ckpt.npz")
        save(obj, path)
        with open(path, "rb") as f:
            return f.read()


VALID = valid_checkpoint()
with zipfile.ZipFile(io.BytesIO(VALID)) as _archive:
    MEMBERS = {name: _archive.read(name) for name in _archive.namelist()}
STRUCTURE_JSON = json.loads(np.lib.format.read_array(io.BytesIO(MEMBERS["minigrad_structure.npy"])).tobytes())


def load_bytes(data):
    """Load `data` as a checkpoint file: only success or CheckpointError may come out."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ckpt.npz")
        with open(path, "wb") as f:
            f.write(data)
        try:
            load(path)
        except CheckpointError:
            pass


def mutations(size):
    """Edits of a byte string of length `size`: (kind, position, bytes)."""
    position = st.integers(0, max(size - 1, 0))
    return st.lists(st.tuples(st.sampled_from(["flip", "overwrite", "insert", "delete", "truncate"]),
                              position, st.binary(min_size=1, max_size=8)), min_size=1, max_size=4)


def mutate(data, edits):
    data = bytearray(data)
    for kind, position, payload in edits:
        position = min(position, max(len(data) - 1, 0))
        if kind == "flip" and data:
            data[position] ^= payload[0] or 1
        elif kind == "overwrite":
            data[position:position + len(payload)] = payload
        elif kind == "insert":
            data[position:position] = payload
        elif kind == "delete":
            del data[position:position + len(payload)]
        else:
            del data[position:]
    return bytes(data)


def test_the_fuzz_starts_from_a_checkpoint_that_loads():
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ckpt.npz")
        with open(path, "wb") as f:
            f.write(VALID)
        assert load(path)["step"] == 7


@FUZZ
@given(mutations(len(VALID)))
def test_fuzz_the_raw_bytes(edits):
    load_bytes(mutate(VALID, edits))


@FUZZ
@given(st.sampled_from(sorted(MEMBERS)), st.data())
def test_fuzz_a_member_in_a_well_formed_zip(name, data):
    # the header region of a .npy (its first 128 bytes) is where the shape and dtype are
    edits = data.draw(mutations(min(len(MEMBERS[name]), 160)))
    members = dict(MEMBERS, **{name: mutate(MEMBERS[name], edits)})
    load_bytes(zip_of(members))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.sampled_from(["dict", "list", "tuple", "array", "scalar", "int", "a0", "a1", "type", "items", "key"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(
        ["type", "items", "key", "value", "format", "version", "tree"]), children, max_size=3),
    max_leaves=10)


def replace_somewhere(node, path, value):
    """A copy of the JSON `node` with the part that `path` (a list of choices) leads to replaced."""
    if not path or not isinstance(node, (dict, list)) or not node:
        return value
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    key = keys[path[0] % len(keys)]
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[key] = replace_somewhere(node[key], path[1:], value)
    return copy


@FUZZ
@given(st.lists(st.integers(0, 50), max_size=8), JSON_VALUES)
def test_fuzz_the_structure(path, value):
    info = replace_somewhere(STRUCTURE_JSON, path, value)
    text = json.dumps(info).encode("utf-8")
    members = dict(MEMBERS, **{"minigrad_structure.npy": npy(np.frombuffer(text, dtype=np.uint8))})
    load_bytes(zip_of(members))
