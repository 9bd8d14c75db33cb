"""Datasets and batches, as `torch.utils.data` spells them.

    from minigrad.utils.data import DataLoader, TensorDataset, random_split

    dataset = TensorDataset(images, labels)                  # item i: (images[i], labels[i])
    train, test = random_split(dataset, [0.8, 0.2], generator=minigrad.Generator().manual_seed(0))
    for x, y in DataLoader(train, batch_size=32, shuffle=True):
        ...                                                  # x (32, ...) and y (32,): Tensors

A `Dataset` is anything with `__getitem__(i)` and `__len__()`; `Subset` picks some of its items,
`ConcatDataset` (or `a + b`) puts datasets one after the other. An `IterableDataset` is a stream
instead: it defines `__iter__()` (lines of a file, samples made on the fly), and `ChainDataset`
puts streams one after the other. A `DataLoader` walks a dataset in batches, in three steps, as
PyTorch's:

    sampler         which items, in which order: SequentialSampler (0, 1, 2, ...), RandomSampler
                    (shuffle=True: a new random order at every pass), SubsetRandomSampler,
                    WeightedRandomSampler, or your own `sampler=`
    batch_sampler   the sampler's indices in lists of batch_size (BatchSampler; drop_last drops a
                    last short one), or your own `batch_sampler=`
    collate_fn      each list of items -> one batch: by default `default_collate`, which stacks
                    tensors, arrays and numbers into Tensors

Batches are made in the calling process (there are no worker processes). An IterableDataset skips
the sampler: its items are batched in the order they come, batch_size at a time.
"""
import bisect
import itertools
import math
import numbers
import sys
import types
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .. import random
from ..creation import multinomial, stack
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "DataLoader",
           "default_collate", "default_convert", "get_worker_info", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


class Dataset:
    """The base of every dataset: a subclass defines `__getitem__(index)` (one item) and
    `__len__()` (how many there are)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__()")

    def __add__(self, other):
        """a + b: the items of a, then those of b (a ConcatDataset)."""
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: a subclass defines `__iter__()`, which yields the items in order
    (lines read from a file, examples generated as they are needed), and no `__getitem__`. It may
    define `__len__()` too; then `len(loader)` works. A DataLoader batches its items as they come:
    no sampler, no shuffle (shuffle the stream itself, or buffer and shuffle inside `__iter__`)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__() (it yields the items)")

    def __add__(self, other):
        """a + b: the items of stream a, then those of stream b (a ChainDataset)."""
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Streams one after the other: the items of datasets[0], then of datasets[1], ..."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: expected IterableDatasets, got {type(d).__name__}")

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def get_worker_info():
    """None: batches are made in the calling process, so code that splits a stream among loader
    workers (`info = get_worker_info(); if info is None: ...`) takes its one-process branch."""
    return None


class TensorDataset(Dataset):
    """Tensors (or arrays) with the same first dim N: item i is the tuple (t[i] for each tensor)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)
        sizes = [t.shape[0] if t.ndim else None for t in self.tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: every tensor needs the same first dim (the number of items), got "
                             f"shapes {', '.join(str(t.shape) for t in self.tensors)}")

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order: Subset(d, [4, 0])[1] is d[0]."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, index):
        if isinstance(index, (list, np.ndarray)):
            return [self.dataset[self.indices[int(i)]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after the other: item i is item i - start of the dataset whose items start..stop
    hold i. `cumulative_sizes[k]` is how many items datasets 0..k hold together."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} items")
        index = index % n  # (a negative index counts from the end)
        which = bisect.bisect_right(self.cumulative_sizes, index)  # the first dataset that ends after index
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(dataset, lengths, generator=None):
    """Cut `dataset` into disjoint random Subsets of the given lengths, which add up to its length,
    or fractions that add up to 1 (as PyTorch: each gets floor(fraction * n) items, then the items
    left over go one each to the first subsets). `generator` (a minigrad.Generator) picks the order;
    without it, the default generator does."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) for x in lengths) \
            and math.isclose(sum(lengths), 1.0) and all(0 <= x <= 1 for x in lengths):
        counts = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(not isinstance(x, numbers.Integral) or x < 0 for x in lengths) or sum(lengths) != n:
        raise ValueError(f"random_split: lengths {lengths} must be counts that add up to the dataset's length {n}, "
                         "or fractions that add up to 1")
    order = random.rng(generator).permutation(n)
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start:start + length]))
        start += length
    return subsets


# ---------------------------------------------------------------------------- collate
def default_collate(batch):
    """A list of items -> one batch, as PyTorch's: Tensors are stacked along a new first dim, numpy
    arrays and numpy numbers become one Tensor of their dtype, Python floats a float64 Tensor, ints
    an int64 one and bools a bool one; dicts collate key by key, tuples and lists position by
    position (a tuple gives a list, as in PyTorch; a namedtuple stays one); strings stay as they
    are (a list of them, or a tuple of each position's strings)."""
    if not batch:
        raise ValueError("default_collate: the batch is empty")
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch)
    if isinstance(elem, (np.ndarray, np.generic)):
        if isinstance(elem, np.ndarray) and elem.dtype.kind not in "biuf":
            raise TypeError(f"default_collate: cannot make a Tensor of arrays of dtype {elem.dtype}")
        return Tensor(np.stack([np.asarray(b) for b in batch]), dtype=None)
    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=bool))
    if isinstance(elem, numbers.Integral):
        return Tensor(np.array(batch, dtype=np.int64))
    if isinstance(elem, numbers.Real):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return batch  # (as it came: a list, or a tuple from a batch of tuples, as in PyTorch)
    if isinstance(elem, Mapping):
        return {key: default_collate([item[key] for item in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(item) != len(elem) for item in batch):
            raise ValueError(f"default_collate: the items of a batch must have the same length, got lengths "
                             f"{sorted({len(item) for item in batch})}")
        return [default_collate(samples) for samples in zip(*batch)]
    raise TypeError(f"default_collate: cannot batch items of type {type(elem).__name__} (it batches Tensors, "
                    "numpy arrays, numbers, strings, and dicts, tuples and lists of them); pass collate_fn=")


def default_convert(data):
    """One item as it is, but numpy arrays and numbers made Tensors (through dicts, tuples and lists):
    what a DataLoader with batch_size=None returns for each item (no batching), as PyTorch's."""
    if isinstance(data, (np.ndarray, np.generic)) and not isinstance(data, (np.str_, np.bytes_)):
        return data if data.dtype.kind not in "biuf" else Tensor(np.asarray(data), dtype=None)
    if isinstance(data, Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


# ---------------------------------------------------------------------------- samplers
class Sampler:
    """The base of the samplers: `__iter__` yields the indices of the items to load (a batch sampler:
    lists of them), and `__len__`, where defined, says how many."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__()")


def _positive_int(name, what, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name}: {what} must be a positive int, got {value!r}")
    return int(value)


def _boolean(name, what, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name}: {what} must be True or False, got {value!r}")
    return value


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1: the items in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """The items in a random order, drawn anew at every pass from `generator` (a minigrad.Generator)
    or the default one. Without replacement: a permutation of the n items (num_samples > n: whole
    permutations one after the other, then part of one); with replacement: num_samples (default n)
    indices drawn uniformly and independently, so some come twice and some not at all."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        name = "RandomSampler"
        self.data_source, self.replacement = data_source, _boolean(name, "replacement", replacement)
        self._num_samples = None if num_samples is None else _positive_int(name, "num_samples", num_samples)
        self.generator = generator
        if self._num_samples is None and len(data_source) == 0:
            raise ValueError(f"{name}: the dataset is empty, so there is nothing to sample (num_samples=0)")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, count = len(self.data_source), self.num_samples
        draw = random.rng(self.generator)
        if self.replacement:
            yield from draw.integers(0, n, size=count).tolist()
            return
        for _ in range(count // n):
            yield from draw.permutation(n).tolist()
        if count % n:
            yield from draw.permutation(n)[:count % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given `indices` in a random order, a new one at every pass (e.g. a validation split of
    one dataset: DataLoader(dataset, sampler=SubsetRandomSampler(valid_indices)))."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in random.rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices, index i drawn with probability weights[i] / sum(weights) (weights >= 0,
    not necessarily adding up to 1): with replacement (the default) each draw independent, as for
    oversampling a rare class; without, no index twice. `multinomial` draws them, at every pass."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        name = "WeightedRandomSampler"
        self.num_samples = _positive_int(name, "num_samples", num_samples)
        self.replacement = _boolean(name, "replacement", replacement)
        weights = np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"{name}: weights must be a 1-D sequence (one weight per item), got shape {weights.shape}")
        self.weights, self.generator = Tensor(weights), generator

    def __iter__(self):
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """The indices of `sampler` (a Sampler or any iterable of indices) in lists of batch_size; the
    last list is shorter unless drop_last=True drops it."""

    def __init__(self, sampler, batch_size, drop_last):
        name = "BatchSampler"
        self.sampler, self.batch_size = sampler, _positive_int(name, "batch_size", batch_size)
        self.drop_last = _boolean(name, "drop_last", drop_last)

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# `from torch.utils.data import sampler; sampler.SubsetRandomSampler(...)`: the samplers under their
# module's name, as PyTorch's (torch.utils.data.sampler)
sampler = types.ModuleType(f"{__name__}.sampler", "The samplers (as torch.utils.data.sampler).")
for _cls in (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler, BatchSampler):
    setattr(sampler, _cls.__name__, _cls)
del _cls
sys.modules[sampler.__name__] = sampler


# ---------------------------------------------------------------------------- the loader
class DataLoader:
    """Batches of `dataset`, as `torch.utils.data.DataLoader`, with its arguments in its order:

    batch_size     items per batch (the last batch may be smaller, unless drop_last=True drops it);
                   None: no batching, each item alone (through `default_convert`)
    shuffle        a new random order at every pass over the data (RandomSampler), drawn from
                   `generator` (a minigrad.Generator) or the default generator (`minigrad.manual_seed`
                   fixes it)
    sampler        the indices to load, in order (a Sampler or any iterable with a len); not with shuffle
    batch_sampler  the batches of indices (lists); not with batch_size, shuffle, sampler or drop_last
    collate_fn     list of items -> batch (default: `default_collate`)

    `len(loader)` is the number of batches; `loader.sampler` and `loader.batch_sampler` are the
    samplers it uses. num_workers, pin_memory, timeout, worker_init_fn, multiprocessing_context,
    prefetch_factor and persistent_workers are accepted for PyTorch's scripts, but every batch is
    made in this process."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False):
        name = "DataLoader"
        if generator is not None and not isinstance(generator, random.Generator):
            raise TypeError(f"{name}: generator must be a minigrad.Generator, got {type(generator).__name__}")
        stream = isinstance(dataset, IterableDataset)
        if stream:
            for option, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value is not None and value is not False:  # (PyTorch's message)
                    raise ValueError(f"{name} with IterableDataset: expected unspecified {option} option, but got "
                                     f"{option}={value!r} (a stream has no indices to sample or shuffle)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(f"{name}: batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last (the batch sampler makes the batches)")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError(f"{name}: batch_size=None option disables auto-batching and is mutually exclusive "
                                 "with drop_last")
        else:
            batch_size = _positive_int(name, "batch_size", batch_size)
        if sampler is not None and shuffle:
            raise ValueError(f"{name}: sampler option is mutually exclusive with shuffle (the sampler sets the order)")
        if sampler is None and not stream:  # (a stream's items come in its own order: no sampler)
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        elif sampler is not None and not isinstance(sampler, (Sampler, Iterable)):
            raise TypeError(f"{name}: sampler must be a Sampler or an iterable of indices, got "
                            f"{type(sampler).__name__}")
        if batch_size is not None and batch_sampler is None and not stream:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, bool(shuffle), drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        batched = batch_size is not None if stream else batch_sampler is not None
        self.collate_fn = collate_fn if collate_fn is not None else default_collate if batched else default_convert
        self.generator, self.num_workers, self.pin_memory = generator, num_workers, pin_memory
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):  # only if the stream knows its length
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.sampler if self.batch_sampler is None else self.batch_sampler)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._stream()
            return
        if self.batch_sampler is None:  # batch_size=None: one item at a time
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])
            return
        tensors, rows = _tensor_rows(self.dataset) if self.collate_fn is default_collate else (None, None)
        for indices in self.batch_sampler:
            if tensors is not None:  # the batch that stacking the items would give, in one indexing per tensor
                yield [t[rows[np.asarray(indices, dtype=np.int64)]] for t in tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])


    def _stream(self):
        """The batches of an IterableDataset: its items as they come, batch_size at a time."""
        items = iter(self.dataset)
        if self.batch_size is None:
            for item in items:
                yield self.collate_fn(item)
            return
        while True:
            batch = list(itertools.islice(items, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)


def _tensor_rows(dataset):
    """For a TensorDataset, or Subsets of one: its tensors and the row of each item (an array);
    otherwise (None, None)."""
    rows = np.arange(len(dataset))
    while type(dataset) is Subset:
        rows = np.asarray(dataset.indices, dtype=np.int64)[rows]
        dataset = dataset.dataset
    plain = isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__
    return (dataset.tensors, rows) if plain else (None, None)
