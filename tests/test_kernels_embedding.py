"""The embedding backward kernel (minigrad/kernels/embedding.py): the compiled kernel adds each
use of an id to its row, as the numpy twin and a plain loop do, for int32 and int64 ids."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import DTYPES, assert_close
from minigrad.kernels.embedding import embedding_backward_numba, embedding_backward_numpy
from strategies import seeds


@pytest.mark.parametrize("dtype", DTYPES)
@given(n=st.integers(0, 300), rows=st.integers(1, 40), dim=st.sampled_from([1, 5, 16, 33]), seed=seeds)
def test_embedding_backward_numba_matches_numpy(dtype, n, rows, dim, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, rows, size=n)  # ids repeat: each use adds to its row
    g = rng.standard_normal((n, dim)).astype(dtype)
    expected = embedding_backward_numpy(ids, g, rows)
    assert_close(embedding_backward_numba(ids.astype(np.int32), g, rows), expected)
    assert_close(embedding_backward_numba(ids, g[::-1][::-1], rows), expected)
    manual = np.zeros((rows, dim))
    for i, r in enumerate(ids):
        manual[r] += g[i]
    np.testing.assert_allclose(expected, manual, rtol=1e-5, atol=1e-5)
