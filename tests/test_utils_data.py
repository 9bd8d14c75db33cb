"""minigrad.utils.data (Dataset, TensorDataset, DataLoader, random_split, Subset, default_collate)
and minigrad.datasets (the 8x8 digits, the MNIST idx reader), on data the tests make."""
import gzip
import importlib.util
import struct

import numpy as np
import pytest

import minigrad as mg
from minigrad import datasets
from minigrad.utils.data import DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split


def numbered(n=10):
    """Item i: (features [i, 10 i], label i)."""
    x = np.stack([np.arange(n), 10 * np.arange(n)], axis=1).astype(np.float32)
    return TensorDataset(mg.tensor(x), mg.arange(n))


class Items(Dataset):
    """A dataset that is not a TensorDataset: items made one at a time."""

    def __init__(self, make, n):
        self.make, self.n = make, n

    def __getitem__(self, i):
        return self.make(i)

    def __len__(self):
        return self.n


# ============================================================================ DataLoader
def test_batches_in_order_and_the_last_one_smaller():
    loader = DataLoader(numbered(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    assert [y.shape for _, y in batches] == [(4,), (4,), (2,)]
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in batches]), np.arange(10))
    x, y = batches[1]
    assert x.dtype == np.float32 and y.dtype == np.int64
    np.testing.assert_array_equal(x.numpy(), [[4, 40], [5, 50], [6, 60], [7, 70]])


def test_drop_last():
    loader = DataLoader(numbered(10), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [y.shape for _, y in loader] == [(4,), (4,)]
    assert len(DataLoader(numbered(8), batch_size=4, drop_last=True)) == 2


def test_shuffle_is_reproducible_with_a_seeded_generator_and_new_each_pass():
    def labels(loader):
        return np.concatenate([y.numpy() for _, y in loader])

    a = DataLoader(numbered(20), batch_size=6, shuffle=True, generator=mg.Generator().manual_seed(7))
    b = DataLoader(numbered(20), batch_size=6, shuffle=True, generator=mg.Generator().manual_seed(7))
    first, second = labels(a), labels(a)
    np.testing.assert_array_equal(first, labels(b))           # same seed, same order
    np.testing.assert_array_equal(second, labels(b))          # ... pass after pass
    assert sorted(first) == list(range(20)) and not np.array_equal(first, np.arange(20))
    assert not np.array_equal(first, second)                  # a new order at each pass
    mg.manual_seed(3)
    c = labels(DataLoader(numbered(20), batch_size=6, shuffle=True))
    mg.manual_seed(3)
    np.testing.assert_array_equal(c, labels(DataLoader(numbered(20), batch_size=6, shuffle=True)))


def test_items_of_features_and_label_batch_as_stacking_them_would():
    base = numbered(9)
    generic = Items(lambda i: base[i], 9)  # the same items, without TensorDataset's whole-tensor indexing
    g1, g2 = mg.Generator().manual_seed(1), mg.Generator().manual_seed(1)
    for (xa, ya), (xb, yb) in zip(DataLoader(base, 4, shuffle=True, generator=g1),
                                  DataLoader(generic, 4, shuffle=True, generator=g2)):
        np.testing.assert_array_equal(xa.numpy(), xb.numpy())
        np.testing.assert_array_equal(ya.numpy(), yb.numpy())
        assert xa.dtype == xb.dtype and ya.dtype == yb.dtype


def test_default_collate_of_dicts_tuples_arrays_and_numbers():
    data = Items(lambda i: {"image": np.full((2, 3), i, dtype=np.float32), "label": i, "weight": 0.5 * i,
                            "pair": (mg.tensor([i, -i]), True), "name": f"item{i}"}, 5)
    batch = next(iter(DataLoader(data, batch_size=3)))
    assert set(batch) == {"image", "label", "weight", "pair", "name"}
    assert batch["image"].shape == (3, 2, 3) and batch["image"].dtype == np.float32
    np.testing.assert_array_equal(batch["image"].numpy()[:, 0, 0], [0, 1, 2])
    assert batch["label"].dtype == np.int64 and batch["label"].tolist() == [0, 1, 2]
    assert batch["weight"].dtype == np.float64 and batch["weight"].tolist() == [0.0, 0.5, 1.0]  # as PyTorch
    pair = batch["pair"]
    assert isinstance(pair, list) and len(pair) == 2  # a tuple of fields collates to a list, as PyTorch's
    np.testing.assert_array_equal(pair[0].numpy(), [[0, 0], [1, -1], [2, -2]])
    assert pair[1].dtype == np.bool_ and pair[1].tolist() == [True, True, True]
    assert batch["name"] == ["item0", "item1", "item2"]


def test_collate_fn_and_errors():
    loader = DataLoader(numbered(5), batch_size=2, collate_fn=lambda items: len(items))
    assert list(loader) == [2, 2, 1]
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        DataLoader(numbered(5), batch_size=0)
    with pytest.raises(TypeError, match="generator must be a minigrad.Generator"):
        DataLoader(numbered(5), shuffle=True, generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="same length"):
        default_collate([(1, 2), (3,)])
    with pytest.raises(TypeError, match="cannot batch items of type object"):
        default_collate([object(), object()])
    with pytest.raises(ValueError, match=r"same first dim.*\(3, 2\), \(4,\)"):
        TensorDataset(mg.zeros(3, 2), mg.zeros(4))


# ============================================================================ random_split, Subset
def test_random_split_lengths_disjoint_and_reproducible():
    data = numbered(10)
    parts = random_split(data, [6, 3, 1], generator=mg.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [6, 3, 1]
    seen = [int(p[i][1].item()) for p in parts for i in range(len(p))]
    assert sorted(seen) == list(range(10))                    # disjoint, and together all of it
    again = random_split(data, [6, 3, 1], generator=mg.Generator().manual_seed(0))
    assert [p.indices for p in parts] == [p.indices for p in again]
    other = random_split(data, [6, 3, 1], generator=mg.Generator().manual_seed(1))
    assert [p.indices for p in parts] != [p.indices for p in other]


def test_random_split_fractions_give_the_remainder_to_the_first_subsets():
    # floor(10 * 0.33) = 3 each and 1 left over, which goes to the first: PyTorch's rule
    assert [len(p) for p in random_split(numbered(10), [0.33, 0.33, 0.34])] == [4, 3, 3]
    assert [len(p) for p in random_split(numbered(9), [0.8, 0.2])] == [8, 1]
    with pytest.raises(ValueError, match=r"add up to the dataset's length 10"):
        random_split(numbered(10), [5, 4])
    with pytest.raises(ValueError, match="fractions that add up to 1"):
        random_split(numbered(10), [0.5, 0.2])


def test_a_loader_over_a_subset_gives_its_items():
    subset = Subset(numbered(10), [7, 2, 9])
    assert int(subset[0][1].item()) == 7
    (x, y), = list(DataLoader(subset, batch_size=3))
    assert y.tolist() == [7, 2, 9]
    np.testing.assert_array_equal(x.numpy()[:, 1], [70, 20, 90])
    nested = Subset(subset, [2, 0])
    assert next(iter(DataLoader(nested, batch_size=2)))[1].tolist() == [9, 7]


# ============================================================================ the digits
def test_load_digits_are_scikit_learns_digits_scaled_to_0_1():
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed (pip install scikit-learn)")
    digits = datasets.load_digits()
    assert len(digits) == 1797 and digits.images.shape == (1797, 1, 8, 8)
    assert digits.images.dtype == np.float32 and digits.targets.dtype == np.int64
    images = digits.images.numpy()
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.bincount(digits.targets.numpy()).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    image, label = digits[5]
    assert image.shape == (1, 8, 8) and label.item() == 5
    from sklearn.datasets import load_digits

    reference = load_digits()
    np.testing.assert_array_equal(images[:, 0] * 16, reference.images)  # k/16 * 16 is exact in float32
    np.testing.assert_array_equal(digits.targets.numpy(), reference.target)
    x, y = next(iter(DataLoader(digits, batch_size=64, shuffle=True, generator=mg.Generator().manual_seed(0))))
    assert x.shape == (64, 1, 8, 8) and y.shape == (64,)


def test_an_mlp_with_batch_norm_learns_the_digits_through_the_loader():
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed (pip install scikit-learn)")
    from minigrad import nn, optim
    from minigrad.nn import functional as F

    g = mg.Generator().manual_seed(0)
    mg.manual_seed(0)
    train, test = random_split(datasets.load_digits(), [0.8, 0.2], generator=g)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(5):
        for x, y in DataLoader(train, batch_size=64, shuffle=True, generator=g):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()  # the running statistics from here on
    with mg.no_grad():
        correct = sum(int((model(x).argmax(axis=-1).numpy() == y.numpy()).sum())
                      for x, y in DataLoader(test, batch_size=128))
    # 98.9% in our runs (seeded); a model that learned nothing gets about 10%
    assert correct / len(test) >= 0.95


def test_load_digits_without_scikit_learn_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        datasets.load_digits()


# ============================================================================ idx files
def write_idx(path, array, code=0x08, compress=False):
    array = np.ascontiguousarray(array)
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    body = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.write_bytes(gzip.compress(body) if compress else body)


def small_mnist(folder, n=5, compress=False, prefix="train"):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    ending = ".gz" if compress else ""
    write_idx(folder / f"{prefix}-images-idx3-ubyte{ending}", images, compress=compress)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte{ending}", labels, compress=compress)
    return images, labels


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_reads_idx_files_plain_or_gzipped(tmp_path, compress):
    images, labels = small_mnist(tmp_path, compress=compress)
    mnist = datasets.MNIST(tmp_path, train=True)
    assert len(mnist) == 5 and mnist.images.shape == (5, 1, 28, 28)
    assert mnist.images.dtype == np.float32 and mnist.targets.dtype == np.int64
    np.testing.assert_array_equal(mnist.images.numpy()[:, 0] * 255, images.astype(np.float32))
    np.testing.assert_array_equal(mnist.targets.numpy(), labels)
    x, y = next(iter(DataLoader(mnist, batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and y.tolist() == labels[:4].tolist()


def test_fashion_mnist_in_torchvisions_layout_and_the_test_split(tmp_path):
    _, labels = small_mnist(tmp_path / "FashionMNIST" / "raw", n=3, compress=True, prefix="t10k")
    fashion = datasets.FashionMNIST(tmp_path, train=False)
    assert fashion.targets.tolist() == labels.tolist() and fashion.classes[9] == "Ankle boot"
    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte.*never downloads"):
        datasets.FashionMNIST(tmp_path, train=True)


def test_read_idx_types_and_broken_files(tmp_path):
    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    write_idx(tmp_path / "f.idx", values, code=0x0D)
    read = datasets.read_idx(tmp_path / "f.idx")
    assert read.dtype == np.float32 and read.dtype.isnative
    np.testing.assert_array_equal(read, values)
    write_idx(tmp_path / "i.idx", np.array([-3, 70000], dtype=np.int32), code=0x0C)
    assert datasets.read_idx(tmp_path / "i.idx").tolist() == [-3, 70000]
    (tmp_path / "bad.idx").write_bytes(b"PK\x03\x04 not idx")
    with pytest.raises(ValueError, match="not an idx file"):
        datasets.read_idx(tmp_path / "bad.idx")
    (tmp_path / "short.idx").write_bytes((tmp_path / "f.idx").read_bytes()[:-4])
    with pytest.raises(ValueError, match=r"declares shape \(3, 4\)"):
        datasets.read_idx(tmp_path / "short.idx")
