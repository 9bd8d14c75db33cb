"""Save and load weights as .safetensors, the weight format of Hugging Face, tinygrad and most of
the field, through the `safetensors` package's numpy API (pip install safetensors; no PyTorch).

    minigrad.save_safetensors(model.state_dict(), "model.safetensors",
                              metadata={"config": json.dumps(dataclasses.asdict(model.config))})
    weights = minigrad.load_safetensors("model.safetensors")
    weights, metadata = minigrad.load_safetensors("model.safetensors", with_metadata=True)

Why functions of their own and not a format= switch on `minigrad.save`: a .safetensors file holds
one flat dict of named arrays and a dict of str -> str metadata, nothing else, while `minigrad.save`
takes any tree of dicts, lists, numbers and strings (a whole training run). Same name, narrower
contents would surprise; the field's own API (safetensors.numpy.save_file) is a flat dict too.

The file (see github.com/huggingface/safetensors):

    8 bytes     N, the length of the header, a little-endian unsigned 64-bit integer
    N bytes     the header, UTF-8 JSON: {"__metadata__": {str: str},
                                         name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
    the rest    the arrays' bytes, little-endian, C order; tensor i at [begin, end) of this part

Loading is safe for files from strangers: before a byte of tensor data is touched, the header
length is checked against the file's size (and a cap of 100 MB), the JSON against the layout above
(known dtypes only, shapes of non-negative integers, offsets inside the data that cover it exactly,
without gaps or overlaps, and each the size its shape and dtype declare). Whatever is wrong comes out
as `CheckpointError`, as for `minigrad.load`. Never unpickles (the format has no pickle in it).
"""
import json
import math
import os
import struct

import numpy as np

from .serialization import CheckpointError, write_atomically
from .tensor import Tensor

__all__ = ["save_safetensors", "load_safetensors"]

MAX_HEADER_BYTES = 100_000_000  # the safetensors package's own limit

# the format's dtype names for the numpy dtypes it shares with numpy (numpy has no bfloat16 or float8)
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
          "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
          "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_}
NAMES = {np.dtype(t): name for name, t in DTYPES.items()}
INSTALL = 'pip install safetensors (or, in a clone of minigrad: pip install -e ".[export]")'


def _package():
    try:
        import safetensors.numpy
    except ImportError:
        raise ImportError(f"reading and writing .safetensors needs the safetensors package: {INSTALL}") from None
    return safetensors.numpy


# ---------------------------------------------------------------------------- save
def save_safetensors(tensors, path, metadata=None):
    """Write `tensors`, a flat dict {str: Tensor or numpy array} such as `model.state_dict()`, to
    `path` as .safetensors, atomically (as `minigrad.save`). metadata: {str: str}, stored in the
    header (a model's config, say, as a JSON string). Tensors are saved as their arrays (no
    gradient, no graph); dtypes: float16/32/64, signed and unsigned ints, bool."""
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors: expected a dict of named arrays, got {type(tensors).__name__}")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise TypeError(f"save_safetensors: the key {name!r} is not a tensor name "
                            "(a str other than '__metadata__')")
        if isinstance(value, Tensor):
            value = value.numpy()
        if not isinstance(value, (np.ndarray, np.generic)):
            raise TypeError(f"save_safetensors: {name!r} is a {type(value).__name__}; a .safetensors file holds only "
                            "arrays (put numbers and strings in metadata, as str)")
        array = np.asarray(value, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        if array.dtype.byteorder == ">":  # the format is little-endian
            array = array.astype(array.dtype.newbyteorder("<"))
        if array.dtype not in NAMES:
            raise TypeError(f"save_safetensors: {name!r} has dtype {array.dtype}, which .safetensors cannot hold "
                            f"(it holds {', '.join(str(np.dtype(t)) for t in DTYPES.values())})")
        arrays[name] = array
    metadata = {} if metadata is None else metadata
    if not (isinstance(metadata, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("save_safetensors: metadata must be a dict of str -> str (encode other values, "
                        "e.g. with json.dumps)")
    data = _package().save(arrays, metadata=metadata or None)
    write_atomically(path, lambda f: f.write(data))


# ---------------------------------------------------------------------------- load
def load_safetensors(path, with_metadata=False):
    """The arrays of a .safetensors file, {name: numpy array} in the file's order; with
    with_metadata=True, (arrays, metadata) where metadata is the header's {str: str} ({} if none).

    Raises FileNotFoundError (or another OSError) if the file cannot be opened, CheckpointError for
    anything wrong with its contents (see the module docstring), ImportError without the package."""
    package = _package()
    path = os.fspath(path)
    with open(path, "rb") as f:
        try:
            header, metadata, data = _read_checked(f)
            loaded = package.load(data)
        except CheckpointError as error:
            raise CheckpointError(f"{path}: {error}") from error.__cause__
        except Exception as error:  # noqa: BLE001  (the bytes are to blame, not the caller)
            raise CheckpointError(f"{path}: not a valid .safetensors file: {error}") from error
    arrays = {name: loaded[name] for name in header}
    return (arrays, metadata) if with_metadata else arrays


def _read_checked(f):
    """(header without __metadata__, metadata, the file's bytes), once the header is checked."""
    file_size = os.fstat(f.fileno()).st_size
    start = f.read(8)
    if len(start) < 8:
        raise CheckpointError(f"only {len(start)} bytes long; a .safetensors file starts with an 8-byte header length")
    (n,) = struct.unpack("<Q", start)
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(f"declares a header of {n:,} bytes; at most {MAX_HEADER_BYTES:,} are allowed")
    if n > file_size - 8:
        raise CheckpointError(f"declares a header of {n:,} bytes, but the file holds only {file_size - 8:,} after "
                              "the header length (truncated, or not a .safetensors file)")
    text = f.read(n)
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"its header is not UTF-8 JSON: {str(error)[:200]}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"its header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CheckpointError("its __metadata__ is not an object of str -> str")
    data_size = file_size - 8 - n
    spans = []
    for name, entry in header.items():
        spans.append((*_check_entry(name, entry, data_size), name))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            raise CheckpointError(f"tensor {name!r} starts at byte {begin} of the data, but the data before it ends "
                                  f"at {end} ({'overlapping' if begin < end else 'a gap'}); tensors must tile the data")
        end = stop
    if end != data_size:
        raise CheckpointError(f"the tensors cover {end:,} bytes of data, but the file holds {data_size:,}")
    f.seek(0)
    data = f.read()
    if len(data) != file_size:
        raise CheckpointError(f"the file changed size while being read ({file_size} bytes, then {len(data)})")
    return header, metadata, data


def _check_entry(name, entry, data_size):
    """(begin, end) of a header entry whose dtype, shape and offsets fit each other and the data."""
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise CheckpointError(f"tensor {name!r}: expected {{'dtype', 'shape', 'data_offsets'}}, got {str(entry)[:100]}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        lacking = ("BF16", "F8_E4M3", "F8_E5M2")
        hint = " (numpy has no such dtype: convert it to F32 before saving)" if dtype in lacking else ""
        raise CheckpointError(f"tensor {name!r} has dtype {str(dtype)[:40]!r}; minigrad reads "
                              f"{', '.join(DTYPES)}{hint}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise CheckpointError(f"tensor {name!r}: its shape {str(shape)[:100]} is not a list of integers >= 0")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_size):
        raise CheckpointError(f"tensor {name!r}: data_offsets {str(offsets)[:100]} are not [begin, end] within the "
                              f"{data_size:,} bytes of data")
    declared = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize
    if declared != offsets[1] - offsets[0]:
        raise CheckpointError(f"tensor {name!r} declares shape {tuple(shape)} of {dtype}, {declared:,} bytes, but "
                              f"its data_offsets span {offsets[1] - offsets[0]:,}")
    return offsets[0], offsets[1]
