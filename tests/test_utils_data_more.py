"""minigrad.utils.data beyond the basics (test_utils_data.py): ConcatDataset (and dataset + dataset),
the samplers (SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
BatchSampler), the DataLoader's sampler=, batch_sampler= and batch_size=None (default_convert),
with PyTorch's rules for which options go together. Where PyTorch's answer is not random (the
order of a SequentialSampler, a BatchSampler's lists, ConcatDataset's items, len(loader)) it is
compared with PyTorch's when installed; random draws (which cannot match PyTorch's stream) are
checked for what they must be: a permutation, the right counts, frequencies within a binomial
bound, reproducible with a seeded generator and new at every pass."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, RandomSampler, Sampler, SequentialSampler, Subset,
    SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_convert,
)


def numbered(n=10, start=0):
    """Item i: (features [start + i, 10 (start + i)], label start + i)."""
    ids = np.arange(start, start + n)
    return TensorDataset(mg.tensor(np.stack([ids, 10 * ids], axis=1).astype(np.float32)), mg.tensor(ids))


class Items(Dataset):
    """A dataset that is not a TensorDataset: item i is make(i)."""

    def __init__(self, make, n):
        self.make, self.n = make, n

    def __getitem__(self, i):
        return self.make(i)

    def __len__(self):
        return self.n


def labels(loader):
    return [int(v) for _, y in loader for v in y.numpy()]


def _torch_data():
    try:
        import torch.utils.data as data
    except ImportError:
        return None
    return data


# ============================================================================ ConcatDataset
def test_concat_dataset_puts_datasets_one_after_the_other():
    a, b, c = numbered(3), numbered(0), Items(lambda i: (mg.tensor([100.0 + i, 0.0]), mg.tensor(100 + i)), 2)
    both = ConcatDataset([a, b, c])
    assert len(both) == 5 and both.cumulative_sizes == [3, 3, 5]
    assert [int(both[i][1].item()) for i in range(5)] == [0, 1, 2, 100, 101]
    assert [int(both[i][1].item()) for i in range(-5, 0)] == [0, 1, 2, 100, 101]  # negative: from the end
    for index in (5, -6):
        with pytest.raises(IndexError, match=f"index {index} is out of range for 5 items"):
            both[index]
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    added = numbered(2) + numbered(3, start=10)
    assert isinstance(added, ConcatDataset) and [int(added[i][1].item()) for i in range(5)] == [0, 1, 10, 11, 12]
    x, y = next(iter(DataLoader(both, batch_size=5)))
    assert y.tolist() == [0, 1, 2, 100, 101] and x.shape == (5, 2)


def test_concat_dataset_is_pytorchs():
    data = _torch_data()
    if data is None:
        pytest.skip("torch is not installed")
    sizes = [4, 0, 3, 1]
    ours = ConcatDataset([Items(lambda i, k=k: (k, i), n) for k, n in enumerate(sizes)])
    theirs = data.ConcatDataset([Items(lambda i, k=k: (k, i), n) for k, n in enumerate(sizes)])
    assert ours.cumulative_sizes == theirs.cumulative_sizes and len(ours) == len(theirs)
    assert [ours[i] for i in range(-len(ours), len(ours))] == [theirs[i] for i in range(-len(ours), len(ours))]


# ============================================================================ samplers
def test_sequential_sampler_and_the_base_class():
    assert list(SequentialSampler(numbered(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(7))) == 7

    class Evens(Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

        def __len__(self):
            return (self.n + 1) // 2

    assert labels(DataLoader(numbered(7), batch_size=3, sampler=Evens(7))) == [0, 2, 4, 6]
    with pytest.raises(NotImplementedError, match="must define __iter__"):
        iter(Sampler())


def test_batch_sampler_pytorch_docs_example():
    assert list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3
    assert len(BatchSampler(range(9), 3, False)) == len(BatchSampler(range(9), 3, True)) == 3
    assert list(BatchSampler([5, 1, 4], 2, False)) == [[5, 1], [4]]  # any iterable of indices


@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                                      (2, 5, True), (0, 4, False)])
def test_batch_and_sequential_samplers_are_pytorchs(n, batch_size, drop_last):
    data = _torch_data()
    if data is None:
        pytest.skip("torch is not installed")
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    theirs = data.BatchSampler(data.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    source = numbered(n) if n else Items(lambda i: i, 0)
    loader = DataLoader(source, batch_size=batch_size, drop_last=drop_last)
    assert len(loader) == len(data.DataLoader(range(n), batch_size=batch_size, drop_last=drop_last))


def test_random_sampler_is_a_new_permutation_at_every_pass_reproducible_with_a_generator():
    sampler = RandomSampler(range(20), generator=mg.Generator().manual_seed(4))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second and len(sampler) == 20
    # the same draws as the numpy generator a seeded minigrad.Generator wraps, so a DataLoader's shuffle
    # gives the same orders it always did
    reference = np.random.default_rng(4)
    assert first == reference.permutation(20).tolist() and second == reference.permutation(20).tolist()
    again = RandomSampler(range(20), generator=mg.Generator().manual_seed(4))
    assert list(again) == first
    assert all(isinstance(i, int) for i in first)


def test_random_sampler_num_samples_and_replacement():
    n = 7
    whole = list(RandomSampler(range(n), num_samples=17, generator=mg.Generator().manual_seed(0)))
    # without replacement: two whole permutations, then 3 of a third
    assert len(whole) == 17 and sorted(whole[:7]) == sorted(whole[7:14]) == list(range(7))
    assert len(set(whole[14:])) == 3
    draws = 7000
    picks = list(RandomSampler(range(n), replacement=True, num_samples=draws, generator=mg.Generator().manual_seed(1)))
    assert len(picks) == draws and set(picks) <= set(range(n))
    counts = np.bincount(picks, minlength=n)
    p = 1 / n  # each count is Binomial(draws, 1/n): within 5 standard deviations but once in 3 million
    assert np.all(np.abs(counts - draws * p) <= 5 * math.sqrt(draws * p * (1 - p))), counts
    assert RandomSampler(range(n), replacement=True).num_samples == n


def test_subset_random_sampler_gives_the_indices_in_a_new_order_each_pass():
    indices = [3, 9, 4, 12, 0]
    sampler = SubsetRandomSampler(indices, generator=mg.Generator().manual_seed(2))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == sorted(indices) and len(sampler) == 5
    assert first != second  # (the seeded draws: two of the 120 orders)
    loader = DataLoader(numbered(13), batch_size=2, sampler=SubsetRandomSampler(indices))
    assert sorted(labels(loader)) == sorted(indices) and len(loader) == 3


def test_weighted_random_sampler_draws_in_proportion_to_the_weights():
    weights = [0.1, 0.0, 0.4, 0.2, 0.3]  # (need not add up to 1: scaled by 10, the same law)
    draws = 20000
    for scale in (1.0, 10.0):
        picks = list(WeightedRandomSampler([w * scale for w in weights], draws,
                                           generator=mg.Generator().manual_seed(3)))
        counts = np.bincount(picks, minlength=5)
        assert counts[1] == 0  # weight 0: never
        for count, p in zip(counts, weights):  # Binomial(draws, p): within 5 standard deviations
            assert abs(count - draws * p) <= 5 * math.sqrt(draws * p * (1 - p)) + 1e-9, (counts, p)
    unique = list(WeightedRandomSampler(mg.tensor([1.0, 5.0, 2.0, 0.5]), 3, replacement=False,
                                        generator=mg.Generator().manual_seed(0)))
    assert len(set(unique)) == 3 and set(unique) <= {0, 1, 2, 3}
    sampler = WeightedRandomSampler([1.0, 2.0], 20, generator=mg.Generator().manual_seed(5))
    assert len(sampler) == 20 and list(sampler) != list(sampler)  # drawn anew at every pass
    a = list(WeightedRandomSampler([1.0, 2.0, 3.0], 30, generator=mg.Generator().manual_seed(5)))
    b = list(WeightedRandomSampler([1.0, 2.0, 3.0], 30, generator=mg.Generator().manual_seed(5)))
    assert a == b and all(isinstance(i, int) for i in a)


def test_oversampling_a_rare_class_with_a_weighted_sampler():
    """The course use: weight each item by 1 / (its class's count), so that batches are balanced."""
    y = np.array([0] * 90 + [1] * 10)
    data = TensorDataset(mg.tensor(np.arange(100.0).reshape(100, 1)), mg.tensor(y))
    weights = 1.0 / np.bincount(y)[y]
    loader = DataLoader(data, batch_size=50, sampler=WeightedRandomSampler(weights, 2000,
                                                                           generator=mg.Generator().manual_seed(0)))
    assert len(loader) == 40
    rare = sum(int(batch_y.numpy().sum()) for _, batch_y in loader)
    assert abs(rare - 1000) <= 5 * math.sqrt(2000 * 0.25)  # Binomial(2000, 1/2)


# ============================================================================ the DataLoader's options
def test_sampler_and_batch_sampler_options():
    data = numbered(10)
    loader = DataLoader(data, batch_size=4, sampler=[9, 8, 7, 1, 0])
    assert labels(loader) == [9, 8, 7, 1, 0] and len(loader) == 2
    loader = DataLoader(data, batch_size=2, sampler=SequentialSampler(range(5)), drop_last=True)
    assert labels(loader) == [0, 1, 2, 3] and len(loader) == 2
    loader = DataLoader(data, batch_sampler=[[3, 1], [0], [9, 8, 7]])
    assert [y.tolist() for _, y in loader] == [[3, 1], [0], [9, 8, 7]] and len(loader) == 3
    loader = DataLoader(data, batch_sampler=BatchSampler(RandomSampler(data), 4, drop_last=True))
    assert len(loader) == 2 and loader.batch_size is None and loader.drop_last is False
    generic = Items(lambda i: (np.float32(i), i), 10)  # the path without TensorDataset's fast indexing
    assert [y.tolist() for _, y in DataLoader(generic, batch_sampler=[[3, 1], [0]])] == [[3, 1], [0]]
    default = DataLoader(data, batch_size=3, shuffle=True)
    assert isinstance(default.sampler, RandomSampler) and isinstance(default.batch_sampler, BatchSampler)
    assert isinstance(DataLoader(data).sampler, SequentialSampler) and DataLoader(data).batch_size == 1


def test_shuffle_through_the_random_sampler_gives_the_orders_it_always_did():
    """shuffle=True: one permutation per pass, drawn from the generator, cut into batches."""
    g, reference = mg.Generator().manual_seed(11), np.random.default_rng(11)
    loader = DataLoader(numbered(23), batch_size=5, shuffle=True, generator=g)
    for _ in range(3):
        assert labels(loader) == reference.permutation(23).tolist()


def test_batch_size_none_gives_each_item_converted():
    data = Items(lambda i: {"x": np.full(2, i, dtype=np.float32), "y": i, "name": f"n{i}"}, 3)
    items = list(DataLoader(data, batch_size=None))
    assert len(items) == 3 and len(DataLoader(data, batch_size=None)) == 3
    assert items[2]["x"].dtype == np.float32 and items[2]["x"].tolist() == [2.0, 2.0]
    assert items[2]["y"] == 2 and items[2]["name"] == "n2"
    rows = list(DataLoader(numbered(3), batch_size=None, shuffle=True))
    assert sorted(int(y.item()) for _, y in rows) == [0, 1, 2] and rows[0][0].shape == (2,)


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float32(1.5), [np.ones(2, dtype=np.float64)]), "c": 4,
                           "s": "text"})
    assert isinstance(out["a"], mg.Tensor) and out["a"].dtype == np.int64
    assert isinstance(out["b"], list) and out["b"][0].dtype == np.float32 and out["b"][0].item() == 1.5
    assert out["b"][1][0].dtype == np.float64 and out["c"] == 4 and out["s"] == "text"
    data = _torch_data()
    if data is not None:  # PyTorch's: the same types and dtypes
        theirs = data.default_convert({"a": np.arange(3), "b": (np.float32(1.5), [np.ones(2)]), "c": 4, "s": "text"})
        assert str(theirs["a"].dtype) == "torch.int64" and isinstance(theirs["b"], list)
        assert str(theirs["b"][0].dtype) == "torch.float32" and theirs["c"] == 4 and theirs["s"] == "text"


@pytest.mark.parametrize("kwargs, parts", [
    ({"batch_size": 2, "sampler": [0, 1], "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive with batch_size"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "sampler": [0]}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching"),
])
def test_options_that_do_not_go_together_are_refused_as_pytorch_refuses_them(kwargs, parts):
    with pytest.raises(ValueError, match=parts):
        DataLoader(numbered(4), **kwargs)
    data = _torch_data()
    if data is not None:
        with pytest.raises(ValueError, match=parts):
            data.DataLoader(range(4), **kwargs)


@pytest.mark.parametrize("call, error, message", [
    (lambda: RandomSampler(range(3), replacement=1), TypeError, "replacement must be True or False"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError, "num_samples must be a positive int, got 0"),
    (lambda: RandomSampler([]), ValueError, "the dataset is empty"),
    (lambda: DataLoader(numbered(0), shuffle=True), ValueError, "the dataset is empty"),
    (lambda: WeightedRandomSampler([1.0, 2.0], 0), ValueError, "num_samples must be a positive int, got 0"),
    (lambda: WeightedRandomSampler([[1.0, 2.0]], 3), ValueError, r"weights must be a 1-D sequence.*\(1, 2\)"),
    (lambda: list(WeightedRandomSampler([1.0, -2.0], 3)), ValueError, "negative"),
    (lambda: list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False)), ValueError, "without replacement"),
    (lambda: BatchSampler(range(3), 0, False), ValueError, "batch_size must be a positive int, got 0"),
    (lambda: BatchSampler(range(3), True, False), ValueError, "batch_size must be a positive int, got True"),
    (lambda: BatchSampler(range(3), 2, None), TypeError, "drop_last must be True or False"),
    (lambda: DataLoader(numbered(3), sampler=5), TypeError, "sampler must be a Sampler or an iterable"),
])
def test_sampler_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_subset_of_a_concat_dataset_and_a_loader_over_it():
    both = numbered(4) + numbered(4, start=10)
    picked = Subset(both, [7, 0, 4])
    assert labels(DataLoader(picked, 3)) == [13, 0, 10]
    assert sorted(labels(DataLoader(both, 3, sampler=SubsetRandomSampler([7, 0, 4])))) == [0, 10, 13]


# ---------------------------------------------------------------------- streams: IterableDataset
class Stream(mg.utils.data.IterableDataset):
    """Item i: (tensor [i, i^2] as float32, label i), for i < n; `sized` says whether it has a len."""

    def __init__(self, n, start=0, sized=True):
        self.n, self.start, self.sized = n, start, sized

    def __iter__(self):
        for i in range(self.start, self.start + self.n):
            yield mg.tensor([float(i), float(i * i)]), i

    def __len__(self):
        if not self.sized:
            raise TypeError("this stream has no length")
        return self.n


@pytest.mark.parametrize("n, batch_size, drop_last", [(7, 3, False), (7, 3, True), (6, 3, False), (2, 5, False),
                                                      (2, 5, True)])
def test_a_stream_is_batched_in_its_order_and_len_counts_its_batches(n, batch_size, drop_last):
    loader = DataLoader(Stream(n), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    kept = n - n % batch_size if drop_last else n
    labels = [int(i) for _, y in batches for i in y.numpy()]
    assert labels == list(range(kept)) and len(loader) == len(batches)
    assert len(batches) == (n // batch_size if drop_last else math.ceil(n / batch_size))
    for x, y in batches:
        assert x.shape == (len(y), 2) and x.dtype == np.float32 and y.dtype == np.int64
        np.testing.assert_array_equal(x.numpy()[:, 1], y.numpy() ** 2)


def test_a_stream_without_batching_gives_each_item_converted_and_chains_with_plus():
    items = list(DataLoader(Stream(3), batch_size=None))
    assert [y for _, y in items] == [0, 1, 2] and all(isinstance(x, mg.Tensor) for x, _ in items)
    chained = Stream(2) + Stream(3, start=10)
    assert isinstance(chained, mg.utils.data.ChainDataset) and len(chained) == 5
    assert [int(i) for _, y in DataLoader(chained, batch_size=2) for i in y.numpy()] == [0, 1, 10, 11, 12]


def test_a_stream_refuses_shuffle_and_samplers_and_an_unsized_one_has_no_len():
    for option in ({"shuffle": True}, {"sampler": SequentialSampler(range(3))},
                   {"batch_sampler": [[0, 1]], "batch_size": 1}):
        with pytest.raises(ValueError, match="with IterableDataset: expected unspecified"):
            DataLoader(Stream(3), **option)
    DataLoader(Stream(3), shuffle=False)  # (False and None are "unspecified")
    loader = DataLoader(Stream(4, sized=False), batch_size=2)
    with pytest.raises(TypeError):
        len(loader)
    assert sum(len(y) for _, y in loader) == 4
    with pytest.raises(NotImplementedError, match="must define __iter__"):
        iter(mg.utils.data.IterableDataset()).__next__()
    assert mg.utils.data.get_worker_info() is None


def test_a_stream_gives_pytorchs_batches():
    torch = pytest.importorskip("torch")

    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(7):
                yield torch.tensor([float(i), float(i * i)]), i

    for batch_size, drop_last in ((3, False), (3, True), (None, False)):
        ours = list(DataLoader(Stream(7), batch_size=batch_size, drop_last=drop_last))
        theirs = list(torch.utils.data.DataLoader(TorchStream(), batch_size=batch_size, drop_last=drop_last))
        assert len(ours) == len(theirs)
        for (x, y), (tx, ty) in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(x.numpy()), tx.numpy())
            np.testing.assert_array_equal(np.asarray(y.numpy() if isinstance(y, mg.Tensor) else y), np.asarray(ty))
