"""Image datasets for the lessons, read from files on this machine: nothing is ever downloaded.

    from minigrad.datasets import load_digits, MNIST

    digits = load_digits()              # 1,797 images (1, 8, 8) in [0, 1] and labels 0..9
    image, label = digits[0]
    mnist = MNIST("~/data/mnist", train=True)     # the idx files you have, .gz or not

- `load_digits()`: the 8x8 handwritten digits of UCI's optical-recognition set, 1,797 of them,
  which scikit-learn ships inside its own package (`pip install scikit-learn`, or the demos extra).
- `MNIST(root)` and `FashionMNIST(root)`: 28x28 images in the idx format of the original files
  (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-...`), plain or gzipped, in the
  folder `root` or in torchvision's layout below it (`root/MNIST/raw/`).

Each is a `TensorDataset` of float32 images (N, 1, H, W) scaled to [0, 1] and int64 labels (N,),
so `DataLoader` batches it by indexing the two tensors.
"""
import gzip
import importlib.util
import os

import numpy as np

from .tensor import Tensor
from .utils.data import TensorDataset

__all__ = ["load_digits", "Digits", "MNIST", "FashionMNIST", "read_idx", "ImageDataset"]


class ImageDataset(TensorDataset):
    """Images (N, 1, H, W) float32 in [0, 1] and labels (N,) int64: item i is (image, label).
    `images` and `targets` are the two Tensors; `classes` names the labels."""

    def __init__(self, images, targets, classes):
        super().__init__(Tensor(images), Tensor(targets))
        self.images, self.targets = self.tensors
        self.classes = list(classes)

    def __repr__(self):
        return (f"{type(self).__name__}({len(self)} images of shape {tuple(self.images.shape[1:])}, "
                f"{len(self.classes)} classes)")


class Digits(ImageDataset):
    """What `load_digits()` returns: scikit-learn's 8x8 digits."""


def load_digits():
    """The 1,797 8x8 digits that scikit-learn ships, as an ImageDataset: images (1797, 1, 8, 8)
    scaled from the 0..16 of the original counts to [0, 1], labels 0..9. The same numbers as
    `sklearn.datasets.load_digits()`, read straight from the file inside scikit-learn's package
    (importing scikit-learn takes seconds; reading the file, milliseconds)."""
    table = _digits_table()
    images = (table[:, :64].astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)  # each pixel counts 0..16 dots
    return Digits(images, table[:, 64].astype(np.int64), [str(d) for d in range(10)])


def _digits_table():
    """(1797, 65): 64 pixels then the label, per row."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None:
        raise ImportError("load_digits: the 8x8 digits come inside scikit-learn, which is not installed: "
                          "pip install scikit-learn (or pip install -e \".[demos]\")")
    for folder in spec.submodule_search_locations or ():
        path = os.path.join(folder, "datasets", "data", "digits.csv.gz")
        if os.path.isfile(path):
            return np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    from sklearn.datasets import load_digits as sklearn_load_digits  # a scikit-learn that keeps it elsewhere

    bunch = sklearn_load_digits()
    return np.column_stack([bunch.data, bunch.target])


# ---------------------------------------------------------------------------- idx files
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """The array in an idx file (the format of MNIST's files), plain or gzipped (by its first bytes,
    whatever its name). The header: two zero bytes, a type byte (0x08 unsigned bytes, 0x09 signed
    bytes, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of dims, then each
    dim as a big-endian int32; then the values, big-endian, in C order."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"read_idx: {path} is not an idx file (it should start with two zero bytes and a type "
                         f"byte in {sorted(hex(t) for t in _IDX_TYPES)}, got {raw[:4]!r})")
    dtype, ndim = np.dtype(_IDX_TYPES[raw[2]]), raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"read_idx: {path} is cut short inside its header ({len(raw)} bytes)")
    shape = tuple(int(n) for n in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    count = int(np.prod(shape))
    if len(raw) - 4 - 4 * ndim != count * dtype.itemsize:
        raise ValueError(f"read_idx: {path} declares shape {shape} of {dtype} ({count * dtype.itemsize} bytes of "
                         f"values) but holds {len(raw) - 4 - 4 * ndim}")
    values = np.frombuffer(raw, dtype=dtype, count=count, offset=4 + 4 * ndim)
    return values.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


class MNIST(ImageDataset):
    """MNIST's 28x28 handwritten digits from the idx files in the folder `root` (you download them;
    this never does): train=True reads the 60,000 `train-*` images, train=False the 10,000
    `t10k-*`. Images (N, 1, 28, 28) float32 in [0, 1], labels (N,) int64."""

    classes = [str(d) for d in range(10)]
    _folder = "MNIST"

    def __init__(self, root, train=True):
        root = os.path.expanduser(os.fspath(root))
        prefix = "train" if train else "t10k"
        images = read_idx(self._find(root, f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(self._find(root, f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"{type(self).__name__}: the {prefix} images have shape {images.shape} and the labels "
                             f"{labels.shape}; expected (N, H, W) and (N,)")
        super().__init__((images.astype(np.float32) / 255.0)[:, None], labels.astype(np.int64), type(self).classes)
        self.root, self.train = root, train

    @classmethod
    def _find(cls, root, name):
        folders = [root, os.path.join(root, cls._folder, "raw"), os.path.join(root, cls._folder)]
        candidates = [os.path.join(folder, name + ending) for folder in folders for ending in ("", ".gz")]
        for path in candidates:
            if os.path.isfile(path):
                return path
        raise FileNotFoundError(f"{cls.__name__}: no {name} (or {name}.gz) in {root} or {folders[1]}; put the "
                                f"dataset's four idx files there (minigrad never downloads them)")


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando's 28x28 clothing images, ten classes) from its idx files in `root`,
    which have MNIST's names and format (see MNIST); torchvision's layout is root/FashionMNIST/raw/."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
    _folder = "FashionMNIST"
