"""Datasets and batches, as `torch.utils.data` spells them.

    from minigrad.utils.data import DataLoader, TensorDataset, random_split

    dataset = TensorDataset(images, labels)                  # item i: (images[i], labels[i])
    train, test = random_split(dataset, [0.8, 0.2], generator=minigrad.Generator().manual_seed(0))
    for x, y in DataLoader(train, batch_size=32, shuffle=True):
        ...                                                  # x (32, ...) and y (32,): Tensors

A `Dataset` is anything with `__getitem__(i)` and `__len__()`. A `DataLoader` walks it in batches
(shuffled anew at every pass when shuffle=True) and `collate_fn` turns each list of items into
one batch: by default `default_collate`, which stacks tensors, arrays and numbers into Tensors.
Batches are made in the calling process (there are no worker processes).
"""
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .. import random
from ..creation import stack
from ..tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "default_collate", "random_split"]


class Dataset:
    """The base of every dataset: a subclass defines `__getitem__(index)` (one item) and
    `__len__()` (how many there are)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__()")


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
    position (a tuple gives a list, as in PyTorch; a namedtuple stays one); strings stay a list."""
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
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([item[key] for item in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(item) != len(elem) for item in batch):
            raise ValueError(f"default_collate: the items of a batch must have the same length, got lengths "
                             f"{sorted({len(item) for item in batch})}")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(f"default_collate: cannot batch items of type {type(elem).__name__} (it batches Tensors, "
                    "numpy arrays, numbers, strings, and dicts, tuples and lists of them); pass collate_fn=")


# ---------------------------------------------------------------------------- the loader
class DataLoader:
    """Batches of `dataset`, as `torch.utils.data.DataLoader`:

    batch_size  items per batch (the last batch may be smaller, unless drop_last=True drops it)
    shuffle     a new random order at every pass over the data, drawn from `generator` (a
                minigrad.Generator) or the default generator (`minigrad.manual_seed` fixes it)
    collate_fn  list of items -> batch (default: `default_collate`)

    `len(loader)` is the number of batches. num_workers is accepted for PyTorch's scripts, but
    every batch is made in this process."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None,
                 num_workers=0, pin_memory=False):
        if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if generator is not None and not isinstance(generator, random.Generator):
            raise TypeError(f"DataLoader: generator must be a minigrad.Generator, got {type(generator).__name__}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, int(batch_size), shuffle, drop_last
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self.generator, self.num_workers, self.pin_memory = generator, num_workers, pin_memory

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches_of_indices(self):
        n = len(self.dataset)
        order = random.rng(self.generator).permutation(n) if self.shuffle else np.arange(n)
        stop = n - n % self.batch_size if self.drop_last else n
        for start in range(0, stop, self.batch_size):
            yield order[start:start + self.batch_size]

    def __iter__(self):
        tensors, rows = _tensor_rows(self.dataset) if self.collate_fn is default_collate else (None, None)
        for indices in self._batches_of_indices():
            if tensors is not None:  # the batch that stacking the items would give, in one indexing per tensor
                yield [t[rows[indices]] for t in tensors]
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in indices])


def _tensor_rows(dataset):
    """For a TensorDataset, or Subsets of one: its tensors and the row of each item (an array);
    otherwise (None, None)."""
    rows = np.arange(len(dataset))
    while type(dataset) is Subset:
        rows = np.asarray(dataset.indices, dtype=np.int64)[rows]
        dataset = dataset.dataset
    plain = isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__
    return (dataset.tensors, rows) if plain else (None, None)
