"""Save and load checkpoints: nested dicts and lists of arrays, numbers and strings, in one .npz file.

    minigrad.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "step": 1000}, "ckpt.npz")
    checkpoint = minigrad.load("ckpt.npz")

What can be saved: dicts with str keys, lists, tuples, numpy arrays and numpy scalars, Tensors,
and Python int, float, bool, str and None, nested in any way. A Tensor is saved as its array and
comes back as a numpy array (the gradient and the graph are not saved).

The file format is an ordinary numpy .npz (a zip of .npy files), readable without pickle:
each array is stored under a key "a0", "a1", ...; the entry "minigrad_structure" holds, as UTF-8
JSON bytes, the tree with the arrays replaced by their keys, e.g.

    {"format": "minigrad-checkpoint", "version": 1,
     "tree": {"type": "dict", "items": [["step", {"type": "int", "value": 1000}],
                                        ["w", {"type": "array", "key": "a0"}]]}}

Saving is atomic: the file is written under a temporary name in the same directory and renamed
onto `path` only when complete, so a crash or a kill while saving leaves the previous checkpoint.
"""
import json
import os
import tempfile
import zipfile
import zlib

import numpy as np

from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

FORMAT_NAME = "minigrad-checkpoint"
FORMAT_VERSION = 1
STRUCTURE_KEY = "minigrad_structure"


class CheckpointError(ValueError):
    """A file that is not a complete minigrad checkpoint (truncated, corrupt, or another format)."""


# ---------------------------------------------------------------------------- tree <-> JSON
def _encode(obj, arrays, where):
    """The JSON node for `obj`; arrays are appended to `arrays` and referred to by key."""
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
        array = np.asarray(obj.data if isinstance(obj, Tensor) else obj)
        if array.dtype.hasobject:
            raise TypeError(f"save: {where} is an array of Python objects (dtype object), which needs pickle; "
                            "convert it to a numeric array or a list")
        key = f"a{len(arrays)}"
        arrays[key] = array
        return {"type": "scalar" if is_scalar else "array", "key": key}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"save: {where} has a key {k!r} of type {type(k).__name__}; keys must be str")
        return {"type": "dict", "items": [[k, _encode(v, arrays, f"{where}[{k!r}]")] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"type": type(obj).__name__, "items": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(f"save: {where} has type {type(obj).__name__}, which cannot be saved "
                    "(use dicts with str keys, lists, tuples, arrays, Tensors, int, float, bool, str, None)")


def _decode(node, arrays):
    kind = node["type"]
    if kind == "none":
        return None
    if kind in ("bool", "int", "float", "str"):
        return node["value"]
    if kind == "array":
        return arrays[node["key"]]
    if kind == "scalar":
        return arrays[node["key"]][()]
    if kind == "dict":
        return {k: _decode(v, arrays) for k, v in node["items"]}
    if kind == "list":
        return [_decode(v, arrays) for v in node["items"]]
    if kind == "tuple":
        return tuple(_decode(v, arrays) for v in node["items"])
    raise KeyError(f"unknown node type {kind!r}")


# ---------------------------------------------------------------------------- save
def save(obj, path):
    """Write `obj` (see the module docstring for what it may contain) to `path`, atomically.

    The file lands exactly at `path`, with or without a .npz suffix. It is first written to a
    temporary file in the same directory, flushed to disk, then renamed onto `path` (a rename
    within a directory replaces the old file in one step). If anything fails, the temporary file
    is removed and the old file at `path` is untouched. (A process killed while saving cannot clean
    up: it leaves the old checkpoint intact and a stray hidden `.<name>.*.tmp` file beside it.)"""
    path = os.fspath(path)
    arrays = {}
    tree = _encode(obj, arrays, "checkpoint")
    structure = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION, "tree": tree})
    arrays[STRUCTURE_KEY] = np.frombuffer(structure.encode("utf-8"), dtype=np.uint8)

    directory, name = os.path.split(os.path.abspath(path))
    temp = tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", suffix=".tmp", delete=False)
    try:
        with temp:
            np.savez(temp, **arrays)  # a file object: numpy adds no ".npz" to the name
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
def load(path):
    """Read a checkpoint written by `save`. Arrays (and saved Tensors) come back as numpy arrays,
    numpy scalars as numpy scalars, tuples as tuples.

    Raises FileNotFoundError if there is no file, and CheckpointError if the file is not a
    complete minigrad checkpoint: not an .npz, truncated or corrupt, an .npz without minigrad's
    structure entry, or a format version newer than this minigrad reads. Never unpickles."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        header = f.read(4)
        if len(header) < 4:
            raise CheckpointError(f"{path}: truncated or corrupt checkpoint: only {len(header)} bytes long")
        if header != b"PK\x03\x04":
            raise CheckpointError(f"{path}: not a minigrad checkpoint: not an .npz file (no zip header)")
        f.seek(0)
        try:
            with np.load(f, allow_pickle=False) as npz:
                if STRUCTURE_KEY not in npz.files:
                    raise CheckpointError(f"{path}: not a minigrad checkpoint: an .npz file without the "
                                          f"'{STRUCTURE_KEY}' entry (was it written by numpy.savez?)")
                info = json.loads(npz[STRUCTURE_KEY].tobytes().decode("utf-8"))
                if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
                    raise CheckpointError(f"{path}: not a minigrad checkpoint: its structure entry "
                                          f"names format {info.get('format') if isinstance(info, dict) else None!r}")
                version = info.get("version")
                if version != FORMAT_VERSION:
                    raise CheckpointError(f"{path}: checkpoint format version {version!r}; this minigrad "
                                          f"reads version {FORMAT_VERSION} (saved by a newer minigrad?)")
                arrays = {key: npz[key] for key in npz.files if key != STRUCTURE_KEY}
        except CheckpointError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError) as error:
            raise CheckpointError(f"{path}: truncated or corrupt checkpoint: {error}") from error
    try:
        return _decode(info["tree"], arrays)
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: corrupt checkpoint structure: {error!r}") from error
