"""Save and load checkpoints: nested dicts and lists of arrays, numbers and strings, in one .npz file.

    minigrad.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "step": 1000}, "ckpt.npz")
    checkpoint = minigrad.load("ckpt.npz")

What can be saved: dicts with str keys, lists, tuples, numpy arrays and numpy scalars, Tensors,
and Python int, float, bool, str and None, nested in any way up to MAX_DEPTH (100) containers
deep. A Tensor comes back as a Tensor (its values and requires_grad; not its gradient or graph),
as from torch.load; a numpy array as a numpy array. (A model's state_dict() holds numpy arrays.)

The file format is an ordinary numpy .npz (a zip of uncompressed .npy files, as numpy.savez
writes it), readable without pickle: each array is stored under a key "a0", "a1", ...; the entry
"minigrad_structure" holds, as UTF-8 JSON bytes, the tree with the arrays replaced by their keys,
e.g.

    {"format": "minigrad-checkpoint", "version": 1,
     "tree": {"type": "dict", "items": [["step", {"type": "int", "value": 1000}],
                                        ["w", {"type": "array", "key": "a0"}]]}}

Saving is atomic: the file is written under a temporary name in the same directory and renamed
onto `path` only when complete, so a crash or a kill while saving leaves the previous checkpoint.

Loading is safe for files from strangers: it never unpickles, it sets memory aside for an array
only after checking that the file holds the bytes the array's header declares, it refuses trees
nested more than MAX_DEPTH containers deep before parsing them, and whatever a broken or hostile
file makes go wrong comes out as CheckpointError, the only error besides those of opening the file.
"""
import json
import math
import os
import re
import tempfile
import zipfile

import numpy as np

from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

FORMAT_NAME = "minigrad-checkpoint"
FORMAT_VERSION = 2  # 2: a Tensor is a "tensor" node (version 1 had arrays only; files without Tensors say 1)
STRUCTURE_KEY = "minigrad_structure"
MAX_DEPTH = 100  # containers (dicts, lists, tuples) inside one another, at most


class CheckpointError(ValueError):
    """A file that is not a complete minigrad checkpoint (truncated, corrupt, or another format)."""


# ---------------------------------------------------------------------------- tree <-> JSON
def _encode(obj, arrays, where, depth=0):
    """The JSON node for `obj`; arrays are appended to `arrays` and referred to by key."""
    if depth > MAX_DEPTH:
        raise ValueError(f"save: the object is nested more than {MAX_DEPTH} containers deep, at "
                         f"{where if len(where) < 80 else where[:40] + ' ... ' + where[-30:]} (does it contain itself?)")
    if obj is None:
        return {"type": "none"}
    if isinstance(obj, bool):  # before int: True is an int too
        return {"type": "bool", "value": obj}
    if isinstance(obj, int):
        return {"type": "int", "value": obj}
    if isinstance(obj, float):
        return {"type": "float", "value": obj}
    if isinstance(obj, str):
        return {"type": "str", "value": obj}
    if isinstance(obj, (Tensor, np.ndarray, np.generic)):
        is_scalar = isinstance(obj, np.generic)
        array = np.asarray(obj.numpy() if isinstance(obj, Tensor) else obj)
        if array.dtype.hasobject:
            raise TypeError(f"save: {where} is an array of Python objects (dtype object), which needs pickle; "
                            "convert it to a numeric array or a list")
        key = f"a{len(arrays)}"
        arrays[key] = array
        if isinstance(obj, Tensor):
            return {"type": "tensor", "key": key, "requires_grad": obj.requires_grad}
        return {"type": "scalar" if is_scalar else "array", "key": key}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"save: {where} has a key {k!r} of type {type(k).__name__}; keys must be str")
        items = [[k, _encode(v, arrays, f"{where}[{k!r}]", depth + 1)] for k, v in obj.items()]
        return {"type": "dict", "items": items}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
        return {"type": type(obj).__name__, "items": items}
    raise TypeError(f"save: {where} has type {type(obj).__name__}, which cannot be saved "
                    "(use dicts with str keys, lists, tuples, arrays, Tensors, int, float, bool, str, None)")


_VALUE_TYPES = {"bool": bool, "int": int, "float": float, "str": str}


def _decode(node, arrays):
    """The object that a JSON node stands for: the inverse of `_encode`. A node that `_encode`
    cannot have written raises CheckpointError. (Its depth is bounded: see `_check_nesting`.)"""
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "none":
        return None
    if kind in _VALUE_TYPES:
        value = node.get("value")
        if type(value) is not _VALUE_TYPES[kind]:
            raise CheckpointError(f"corrupt checkpoint structure: a {kind} node holds {value!r}")
        return value
    if kind in ("array", "scalar", "tensor"):
        key = node.get("key")
        if not isinstance(key, str) or key not in arrays:
            raise CheckpointError(f"corrupt checkpoint structure: no array {key!r} in the file")
        if kind == "tensor":
            requires_grad = node.get("requires_grad")
            if type(requires_grad) is not bool or (requires_grad and arrays[key].dtype.kind not in "fc"):
                raise CheckpointError(f"corrupt checkpoint structure: a tensor node with requires_grad="
                                      f"{requires_grad!r}")
            return Tensor(arrays[key], requires_grad=requires_grad)
        return arrays[key] if kind == "array" else arrays[key][()]
    items = node.get("items") if kind in ("dict", "list", "tuple") else None
    if not isinstance(items, list):
        raise CheckpointError(f"corrupt checkpoint structure: unknown node {str(node)[:80]}")
    if kind == "dict":
        if not all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) for item in items):
            raise CheckpointError("corrupt checkpoint structure: a dict item is not a [str key, node] pair")
        return {k: _decode(v, arrays) for k, v in items}
    values = [_decode(v, arrays) for v in items]
    return values if kind == "list" else tuple(values)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _check_nesting(text):
    """Refuse JSON whose brackets nest deeper than a tree of MAX_DEPTH containers can, before
    parsing it (the parser, and `_decode`, recurse once per level). Each container adds at most
    3 levels of brackets (a dict: its node, its items, an item), and the outer object 2 more."""
    skeleton = _JSON_STRING.sub("", text).encode("utf-8")  # brackets inside strings do not nest
    codes = np.frombuffer(skeleton, dtype=np.uint8)
    steps = np.isin(codes, list(b"[{")).astype(np.int64) - np.isin(codes, list(b"]}"))
    depth = int(np.cumsum(steps).max(initial=0))
    if depth > 3 * MAX_DEPTH + 2:
        raise CheckpointError(f"the structure nests {depth} brackets deep; a checkpoint nests at most "
                              f"{MAX_DEPTH} containers ({3 * MAX_DEPTH + 2} brackets)")


# ---------------------------------------------------------------------------- save
def save(obj, f=None, *, path=None):
    """Write `obj` (see the module docstring for what it may contain) to `path`, atomically.

    The file lands exactly at `path`, with or without a .npz suffix. It is first written to a
    temporary file in the same directory, flushed to disk, then renamed onto `path` (a rename
    within a directory replaces the old file in one step). If anything fails, the temporary file
    is removed and the old file at `path` is untouched. (A process killed while saving cannot clean
    up: it leaves the old checkpoint intact and a stray hidden `.<name>.*.tmp` file beside it.)"""
    from . import _arguments as check

    path = f if path is None else path  # (PyTorch names it f: torch.save(obj=..., f=...))
    if hasattr(path, "write"):  # an open file (torch.save(points, f) inside `with open(...) as f`)
        np.savez(path, **_arrays_and_structure(obj))
        return
    if check.is_path(obj) and not check.is_path(path):
        raise TypeError(f"save(obj, path): the object comes first, then the path (as in torch.save), got a path "
                        f"{obj!r} first and {type(path).__name__} second")
    path = os.fspath(check.path("save(obj, path)", "path", path))
    arrays = _arrays_and_structure(obj)
    write_atomically(path, lambda f: np.savez(f, **arrays))  # a file object: numpy adds no ".npz" to the name


def _arrays_and_structure(obj):
    """The members of the .npz: each array under its key, and the structure entry."""
    arrays = {}
    tree = _encode(obj, arrays, "checkpoint")
    text = json.dumps(tree)
    version = FORMAT_VERSION if '"type": "tensor"' in text else 1  # (a file without Tensors: any minigrad reads it)
    structure = json.dumps({"format": FORMAT_NAME, "version": version, "tree": tree})
    arrays[STRUCTURE_KEY] = np.frombuffer(structure.encode("utf-8"), dtype=np.uint8)
    return arrays


def write_atomically(path, write):
    """Call write(f) on a temporary file beside `path`, flush it to disk, then rename it onto
    `path`; if anything fails, remove it and leave the old file at `path` untouched."""
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    temp = tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", suffix=".tmp", delete=False)
    try:
        with temp:
            write(temp)
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp.name, _new_file_mode(path))
        os.replace(temp.name, path)
    except BaseException:
        try:
            os.remove(temp.name)
        except FileNotFoundError:
            pass
        raise
    _sync_directory(directory)


def _new_file_mode(path):
    """The permissions a checkpoint gets: those of the file it replaces, else the usual ones for a
    new file (temporary files are created private, readable by their owner only)."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _sync_directory(directory):
    """Flush the rename itself to disk (POSIX); not possible, nor needed, on every system."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- load
def load(f=None, map_location=None, *, weights_only=None, mmap=None, path=None):
    """Read a checkpoint written by `save`. Tensors come back as Tensors, arrays as numpy arrays,
    numpy scalars as numpy scalars, tuples as tuples. (map_location, weights_only and mmap are
    PyTorch's: accepted; there is one device, and nothing is ever unpickled.)

    Raises FileNotFoundError (or another OSError) if the file cannot be opened, and
    CheckpointError for anything wrong with its contents: not an .npz, truncated or corrupt, an
    .npz without minigrad's structure entry, a format version newer than this minigrad reads,
    an array whose header declares more bytes than the file holds, a tree nested deeper than
    MAX_DEPTH. Never unpickles. A server that catches CheckpointError sees no other error from a
    bad file (any other failure while reading is reported as CheckpointError, caused by it)."""
    from . import _arguments as check

    path = f if path is None else path  # (PyTorch names it f: torch.load(f=...))
    if hasattr(path, "read"):  # an open file
        try:
            return _load(path)
        except CheckpointError:
            raise
        except Exception as error:  # noqa: BLE001  (the bytes are to blame, not the caller)
            raise CheckpointError(f"truncated or corrupt checkpoint: {error!r}") from error
    path = os.fspath(check.path("load(path)", "path", path))
    with open(path, "rb") as f:
        try:
            return _load(f)
        except CheckpointError as error:
            raise CheckpointError(f"{path}: {error}") from error.__cause__
        except Exception as error:  # noqa: BLE001  (the bytes are to blame, not the caller)
            raise CheckpointError(f"{path}: truncated or corrupt checkpoint: {error!r}") from error


def _load(f):
    header = f.read(4)
    if len(header) < 4:
        raise CheckpointError(f"truncated or corrupt checkpoint: only {len(header)} bytes long")
    if header != b"PK\x03\x04":
        raise CheckpointError("not a minigrad checkpoint: not an .npz file (no zip header)")
    f.seek(0)
    arrays = _read_npz(f)
    if STRUCTURE_KEY not in arrays:
        raise CheckpointError(f"not a minigrad checkpoint: an .npz file without the '{STRUCTURE_KEY}' entry "
                              "(was it written by numpy.savez?)")
    text = arrays.pop(STRUCTURE_KEY).tobytes().decode("utf-8")
    _check_nesting(text)
    info = json.loads(text)
    if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
        raise CheckpointError("not a minigrad checkpoint: its structure entry names format "
                              f"{info.get('format') if isinstance(info, dict) else None!r}")
    version = info.get("version")
    if version not in (1, FORMAT_VERSION):
        raise CheckpointError(f"checkpoint format version {version!r}; this minigrad reads version "
                              f"{FORMAT_VERSION} (saved by a newer minigrad?)")
    return _decode(info.get("tree"), arrays)


def _read_npz(f):
    """{key: array} for every member "key.npy" of the zip file `f`. A member is read only if its
    sizes fit the file: stored uncompressed (as numpy.savez, and so `save`, writes), and no larger
    than the whole file on disk."""
    try:
        file_size = os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, ValueError):  # (an in-memory file, io.BytesIO: its length)
        here = f.tell()
        file_size = f.seek(0, os.SEEK_END)
        f.seek(here)
    arrays = {}
    with zipfile.ZipFile(f) as archive:
        for info in archive.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise CheckpointError(f"not a minigrad checkpoint: member {name!r} is not an .npy array")
            if info.compress_type != zipfile.ZIP_STORED:
                raise CheckpointError(f"member {name!r} is compressed (zip method {info.compress_type}); "
                                      "minigrad checkpoints are stored uncompressed")
            if info.file_size != info.compress_size or info.compress_size > file_size:
                raise CheckpointError(f"truncated or corrupt checkpoint: member {name!r} claims "
                                      f"{info.file_size} bytes in a file of {file_size}")
            with archive.open(info) as member:
                arrays[name[:-len(".npy")]] = _read_npy(member, info.file_size, name)
    return arrays


def _read_npy(member, size, name):
    """The array in a .npy member of `size` bytes. Its header declares a shape and a dtype; they
    must account for exactly the bytes that follow the header before memory is set aside."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise CheckpointError(f"member {name!r}: .npy format version {version} is not one numpy.savez writes")
    if dtype.hasobject:
        raise CheckpointError(f"member {name!r} holds Python objects, which would need pickle")
    data_size = size - member.tell()
    needed = math.prod(shape) * dtype.itemsize
    if any(n < 0 for n in shape) or needed != data_size:
        raise CheckpointError(f"truncated or corrupt checkpoint: member {name!r} declares shape {shape} of "
                              f"{dtype}, {needed} bytes, but holds {data_size}")
    array = np.empty(math.prod(shape), dtype=dtype)
    if needed:
        _read_into(member, array.view(np.uint8), name)
    return array.reshape(shape, order="F" if fortran_order else "C")


def _read_into(member, buffer, name, chunk=1 << 20):
    """Fill the uint8 array `buffer` from `member`, a chunk at a time (reading it all at once would
    hold a second copy of it in memory); the zip checks the CRC at the end."""
    view = memoryview(buffer)
    for start in range(0, len(view), chunk):
        part = view[start:start + chunk]
        if member.readinto(part) != len(part):
            raise CheckpointError(f"truncated or corrupt checkpoint: member {name!r} ends early")
