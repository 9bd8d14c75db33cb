"""Course code written for PyTorch, run with `import minigrad as torch`: its statistics (std and var
with n - 1, var_mean, histogram, histc, all, any, allclose), its random sampling (Generator,
generator=, randint, randperm, multinomial, normal_, uniform_, dropout), and its names and habits
(dtype attributes, nelement, log10, log1p, expm1, x.max(1) with .values and .indices, sort,
argsort, topk, cat and stack of lists).

When PyTorch is installed, property tests give both libraries the same inputs and compare value,
dtype and shape. Random draws cannot be compared value for value (minigrad's bit generator is
numpy's PCG64, not PyTorch's Mersenne Twister), so those tests compare shapes, dtypes, ranges and
statistics, and check that one seed gives one stream on every backend and thread count.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from strategies import seeds

SETTINGS = dict(max_examples=25, deadline=None)
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
float_dtypes = st.sampled_from(["float32", "float64"])


def values(shape, seed, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def torch_dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def assert_same(ours, theirs, rtol=0.0, atol=0.0):
    """minigrad's tensor and PyTorch's: the same shape, the same dtype and (within rtol, atol) the
    same values. A tolerance of 0 means bit for bit."""
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert str(ours.dtype) == torch_dtype_name(theirs), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=np.float64),
                               theirs.detach().numpy().astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


@st.composite
def dims(draw, shape):
    """None, one axis or a tuple of axes of `shape`, negatives included."""
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "one", "tuple"]))
    if kind == "none":
        return None
    if kind == "one":
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(axes)


# ============================================================================ statistics
# float32 sums of up to 125 values in a different order (numpy's pairwise against PyTorch's
# vectorised sum): a few ulps of the result, 1e-5 relative is about 100 ulps of float32
STAT_RTOL = {"float32": 1e-5, "float64": 1e-12}


@settings(**SETTINGS)
@given(data=st.data(), shape=shapes, seed=seeds, dtype=float_dtypes,
       spelling=st.sampled_from(["default", "unbiased", "correction", "ddof", "positional"]),
       unbiased=st.booleans(), keepdim=st.booleans(), op=st.sampled_from(["var", "std"]))
def test_var_and_std_are_pytorchs(data, shape, seed, dtype, spelling, unbiased, keepdim, op):
    torch = pytest.importorskip("torch")
    dim = data.draw(dims(shape))
    x = values(shape, seed, dtype)
    n = x.size if dim is None else np.prod([shape[d] for d in ((dim,) if isinstance(dim, int) else dim)])
    reference_kw = {"dim": dim, "keepdim": keepdim}
    if n - (1 if spelling == "default" else int(unbiased)) <= 0:
        return  # no degrees of freedom: tested below
    if spelling == "default":
        ours = getattr(mg.tensor(x), op)(dim, keepdim=keepdim)
    elif spelling == "unbiased":
        ours, reference_kw["unbiased"] = getattr(mg.tensor(x), op)(dim, unbiased=unbiased, keepdim=keepdim), unbiased
    elif spelling == "correction":
        ours, reference_kw["correction"] = getattr(mg.tensor(x), op)(dim=dim, correction=int(unbiased),
                                                                     keepdim=keepdim), int(unbiased)
    elif spelling == "ddof":
        ours, reference_kw["correction"] = getattr(mg.tensor(x), op)(axis=dim, ddof=int(unbiased),
                                                                     keepdims=keepdim), int(unbiased)
    else:  # torch.var(x, dim, unbiased, keepdim)
        if dim is None:
            return
        ours, reference_kw["unbiased"] = getattr(mg, op)(mg.tensor(x), dim, unbiased, keepdim), unbiased
    theirs = getattr(torch, op)(torch.tensor(x), **reference_kw)
    assert_same(ours, theirs, rtol=STAT_RTOL[dtype], atol=STAT_RTOL[dtype])


def test_std_and_var_divide_by_n_minus_1_by_default():
    """The silent case: a BatchNorm by hand, `x.std(0, keepdim=True)`, gets PyTorch's number."""
    x = mg.tensor([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(x.var().item(), np.var([1, 2, 3, 6], ddof=1), rtol=1e-6)
    np.testing.assert_allclose(x.std(0, keepdim=True).numpy(), [[np.sqrt(2.0), np.sqrt(8.0)]], rtol=1e-6)
    np.testing.assert_allclose(x.var(0, False).numpy(), [1.0, 4.0])  # PyTorch's (dim, unbiased)
    np.testing.assert_allclose(x.var(False).item(), np.var([1, 2, 3, 6]), rtol=1e-6)  # PyTorch's (unbiased)
    np.testing.assert_allclose(x.var(ddof=0).item(), np.var([1, 2, 3, 6]), rtol=1e-6)


@pytest.mark.parametrize("given", [dict(unbiased=True, correction=1), dict(unbiased=False, ddof=0),
                                   dict(correction=0, ddof=0)])
@pytest.mark.parametrize("op", ["var", "std"])
def test_two_spellings_of_the_correction_are_refused_naming_both(given, op):
    first, second = given
    with pytest.raises(TypeError, match=f"{op}: got both {first}=.* and {second}="):
        getattr(mg.tensor([1.0, 2.0, 4.0]), op)(**given)
    with pytest.raises(TypeError, match=f"{op}_mean: got both {first}=.* and {second}="):
        getattr(mg, f"{op}_mean")(mg.tensor([1.0, 2.0, 4.0]), **given)


def test_keepdims_in_unbiased_place_is_refused():
    with pytest.raises(TypeError, match="var: the second argument is PyTorch's unbiased"):
        mg.tensor([1.0, 2.0]).var(0, 1)


def test_var_of_one_value_has_no_degrees_of_freedom():
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        assert np.isnan(mg.tensor([2.0]).var().item())
    assert mg.tensor([2.0]).var(correction=0).item() == 0.0


def test_var_and_std_gradients():
    x = mg.tensor(values((3, 4), 0, "float64"), requires_grad=True)
    assert mg.gradcheck(lambda t: t.var(1) + t.std(1, correction=0), [x])
    assert mg.gradcheck(lambda t: mg.var_mean(t, 0)[0].sum() + mg.std_mean(t, 0)[1].sum(), [x])


@settings(**SETTINGS)
@given(data=st.data(), shape=shapes, seed=seeds, keepdim=st.booleans(), op=st.sampled_from(["var_mean", "std_mean"]),
       correction=st.sampled_from([None, 0, 1]))
def test_var_mean_and_std_mean_are_pytorchs(data, shape, seed, keepdim, op, correction):
    torch = pytest.importorskip("torch")
    dim = data.draw(dims(shape))
    x = values(shape, seed, "float64")
    n = x.size if dim is None else np.prod([shape[d] for d in ((dim,) if isinstance(dim, int) else dim)])
    if n <= (1 if correction is None else correction):
        return
    ours = getattr(mg, op)(mg.tensor(x), dim, keepdim=keepdim, correction=correction)
    theirs = getattr(torch, op)(torch.tensor(x), dim, keepdim=keepdim, correction=correction)
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, theirs):
        assert_same(a, b, rtol=1e-12, atol=1e-12)


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds, dtype=float_dtypes, bins=st.integers(1, 12),
       bounds=st.sampled_from([None, (0.0, 0.0), (-1.0, 1.0), (0.5, 0.5), (-0.3, 2.0)]),
       repeats=st.booleans())
def test_histc_is_pytorchs(shape, seed, dtype, bins, bounds, repeats):
    torch = pytest.importorskip("torch")
    x = values(shape, seed, dtype)
    if repeats:  # values on the edges: ties and exact edge hits
        x = np.round(x * 2) / 2
    kw = {} if bounds is None else {"min": bounds[0], "max": bounds[1]}
    assert_same(mg.histc(mg.tensor(x), bins, **kw), torch.histc(torch.tensor(x), bins, **kw))  # counts: exact
    assert_same(mg.tensor(x).histc(bins=bins, **kw), torch.tensor(x).histc(bins=bins, **kw))


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds, dtype=float_dtypes, bins=st.integers(1, 12), weighted=st.booleans(),
       density=st.booleans(), bounds=st.sampled_from([None, (-1.0, 1.0), (0.5, 0.5)]), edges=st.booleans(),
       repeats=st.booleans())
def test_histogram_is_pytorchs(shape, seed, dtype, bins, weighted, density, bounds, edges, repeats):
    torch = pytest.importorskip("torch")
    x = values(shape, seed, dtype)
    if repeats:
        x = np.round(x * 2) / 2
    weight = np.random.default_rng(seed + 1).uniform(0, 2, shape).astype(dtype) if weighted else None
    kw = dict(density=density)
    if edges:  # the bins as a tensor of increasing edges
        e = np.sort(np.random.default_rng(seed + 2).uniform(-2, 2, bins + 1)).astype(dtype)
        ours_bins, their_bins = mg.tensor(e), torch.tensor(e)
    else:
        ours_bins = their_bins = bins
        if bounds is not None:
            kw["range"] = bounds
    ours = mg.histogram(mg.tensor(x), ours_bins, weight=None if weight is None else mg.tensor(weight), **kw)
    theirs = torch.histogram(torch.tensor(x), their_bins, weight=None if weight is None else torch.tensor(weight),
                             **kw)
    assert ours.hist is ours[0] and ours.bin_edges is ours[1]
    assert_same(ours.bin_edges, theirs.bin_edges)  # the edges bit for bit: computed as PyTorch's linspace
    # counts are exact; weighted sums and densities add floats in another order: a few ulps
    tol = 0.0 if not (weighted or density) else STAT_RTOL[dtype]
    assert_same(ours.hist, theirs.hist, rtol=tol, atol=tol)


def test_histogram_and_histc_refuse_integers_and_bad_ranges():
    with pytest.raises(TypeError, match="histc: needs a float tensor, got int64"):
        mg.histc(mg.arange(4), 3)
    with pytest.raises(TypeError, match="histogram: needs a float tensor"):
        mg.histogram(mg.arange(4), 3)
    with pytest.raises(ValueError, match="histc: max must be larger than min"):
        mg.histc(mg.tensor([1.0]), 3, min=2, max=1)
    with pytest.raises(ValueError, match="histogram: bins must be a positive integer"):
        mg.histogram(mg.tensor([1.0]), 0)


@settings(**SETTINGS)
@given(data=st.data(), shape=shapes, seed=seeds, keepdim=st.booleans(), op=st.sampled_from(["all", "any"]),
       dtype=st.sampled_from(["bool", "int64", "float32", "uint8"]), style=st.sampled_from(["method", "function"]))
def test_all_and_any_are_pytorchs(data, shape, seed, keepdim, op, dtype, style):
    torch = pytest.importorskip("torch")
    dim = data.draw(dims(shape))
    x = (np.random.default_rng(seed).uniform(size=shape) < data.draw(st.sampled_from([0.1, 0.5, 0.9]))).astype(dtype)
    if dim is None:
        ours = getattr(mg.tensor(x), op)() if style == "method" else getattr(mg, op)(mg.tensor(x))
        theirs = getattr(torch.tensor(x), op)()
    else:
        ours = (getattr(mg.tensor(x), op)(dim, keepdim) if style == "method" else
                getattr(mg, op)(mg.tensor(x), dim=dim, keepdim=keepdim))
        theirs = getattr(torch, op)(torch.tensor(x), dim=dim, keepdim=keepdim)
    assert_same(ours, theirs)


def test_all_and_any_item_and_truth():
    """`torch.all(x).item()` and `if x.any():`, as course code writes them."""
    x = mg.tensor([[1, 0], [1, 1]])
    assert mg.all(x).item() is False and mg.any(x).item() is True
    assert bool(x.all(1).any()) and not x.all()
    assert x.all(dim=1).numpy().tolist() == [False, True]


@settings(**SETTINGS)
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4), seed=seeds,
       dtype=float_dtypes, scale=st.sampled_from([0.0, 1e-9, 1e-6, 1e-4, 1e-2]), equal_nan=st.booleans(),
       rtol=st.sampled_from([1e-5, 1e-3]), atol=st.sampled_from([1e-8, 1e-5]))
def test_isclose_and_allclose_are_pytorchs(shapes_, seed, dtype, scale, equal_nan, rtol, atol):
    torch = pytest.importorskip("torch")
    shape_a, shape_b = shapes_.input_shapes
    a = values(shape_a, seed, dtype)
    # the same seed: where the shapes agree b is a, moved by `scale` (about the tolerances)
    b = (values(shape_b, seed, dtype) + scale * values(shape_b, seed + 1, dtype)).astype(dtype)
    if a.size:
        a.flat[0] = np.nan
    if b.size:
        b.flat[0] = np.nan
    kw = dict(rtol=rtol, atol=atol, equal_nan=equal_nan)
    assert_same(mg.isclose(mg.tensor(a), mg.tensor(b), **kw), torch.isclose(torch.tensor(a), torch.tensor(b), **kw))
    assert mg.allclose(mg.tensor(a), mg.tensor(b), **kw) == torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
    assert mg.tensor(a).allclose(mg.tensor(a), equal_nan=True)


# ============================================================================ random numbers
def _draws(generator):
    """One of each random function, all from `generator` (None: the default generator)."""
    g = dict(generator=generator)
    w = mg.zeros(4, 3)
    weights = mg.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 2.0, 3.0, 4.0]])
    return [
        mg.randn(2, 3, **g), mg.rand((4,), **g), mg.randint(10, (5,), **g), mg.randint(-3, 3, (2, 2), **g),
        mg.randperm(7, **g), mg.multinomial(weights, 3, **g), weights.multinomial(6, replacement=True, **g),
        mg.zeros(3).normal_(**g), mg.zeros(3).uniform_(-1, 1, **g), mg.nn.init.normal_(w, 0.0, 0.02, **g),
        mg.nn.init.uniform_(mg.zeros(2), **g), mg.nn.functional.dropout(mg.ones(8), 0.5, **g),
        mg.nn.Dropout(0.3, generator=generator)(mg.ones(2, 4)),
    ]


def _same(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_one_seed_one_stream_from_a_generator_and_from_the_default():
    _same(_draws(mg.Generator().manual_seed(2147483647)), _draws(mg.Generator().manual_seed(2147483647)))
    mg.manual_seed(7)
    first = _draws(None)
    mg.manual_seed(7)
    _same(first, _draws(None))
    # another seed, other numbers
    assert not np.array_equal(_draws(mg.Generator().manual_seed(1))[0].numpy(), first[0].numpy())


def test_a_generator_of_its_own_leaves_the_default_alone():
    mg.manual_seed(3)
    expected = mg.randn(5).numpy()
    mg.manual_seed(3)
    _draws(mg.Generator().manual_seed(0))
    np.testing.assert_array_equal(mg.randn(5).numpy(), expected)


def test_get_state_and_set_state_replay_a_generator():
    g = mg.Generator().manual_seed(11)
    mg.randn(3, generator=g)
    state = g.get_state()
    first = _draws(g)
    g.set_state(state)
    _same(first, _draws(g))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("threads", [1, 2])
def test_one_seed_gives_the_same_numbers_on_every_backend_and_thread_count(backend, threads):
    reference = _draws(mg.Generator().manual_seed(5))
    before = mg.get_num_threads()
    try:
        mg.set_num_threads(threads)
        with mg.use_backend(backend):
            _same(reference, _draws(mg.Generator().manual_seed(5)))
            mg.manual_seed(5)
            by_default = _draws(None)
    finally:
        mg.set_num_threads(before)
    _same(reference, by_default)


# 100,000 draws: a mean within 5 standard errors (sigma / sqrt(N)) of the distribution's, and a
# frequency p within 5 sqrt(p (1 - p) / N); a false alarm about once in 3 million per check
def test_random_draws_have_their_distributions_moments():
    g, n = mg.Generator().manual_seed(123), 100_000
    z = mg.randn(n, generator=g, dtype=mg.float64).numpy()
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.var() - 1) < 5 * np.sqrt(2 / n)  # var of s^2: 2 sigma^4 / N
    u = mg.rand(n, generator=g, dtype=mg.float64).numpy()
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    counts = np.bincount(mg.randint(-2, 3, (n,), generator=g).numpy() + 2, minlength=5) / n
    np.testing.assert_array_less(np.abs(counts - 0.2), 5 * np.sqrt(0.2 * 0.8 / n))
    kept = (mg.nn.functional.dropout(mg.ones(n), 0.3, generator=g).numpy() != 0).mean()
    assert abs(kept - 0.7) < 5 * np.sqrt(0.3 * 0.7 / n)
    first = np.array([mg.randperm(4, generator=g).numpy()[0] for _ in range(4000)])  # 4000 draws
    np.testing.assert_array_less(np.abs(np.bincount(first, minlength=4) / 4000 - 0.25), 5 * np.sqrt(0.25 * 0.75 / 4000))


def test_randint_takes_pytorchs_spellings():
    g = mg.Generator().manual_seed(0)
    for x, low, high, shape in ((mg.randint(5, (3, 2), generator=g), 0, 5, (3, 2)),
                                (mg.randint(2, 4, (6,), generator=g), 2, 4, (6,)),
                                (mg.randint(low=-2, high=0, size=(4,)), -2, 0, (4,)),
                                (mg.randint(3, size=(2,)), 0, 3, (2,)),
                                (mg.randint(1, 3, size=(2,), dtype=mg.int32), 1, 3, (2,))):
        assert x.shape == shape and low <= x.numpy().min() and x.numpy().max() < high
    assert mg.randint(1, 3, (2,), dtype=mg.int32).dtype == np.int32
    with pytest.raises(ValueError, match="randint: high \\(2\\) must be larger than low \\(2\\)"):
        mg.randint(2, 2, (3,))
    with pytest.raises(TypeError, match="randint: missing high or size"):
        mg.randint(5)


@settings(**SETTINGS)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), seed=seeds,
       name=st.sampled_from(["randn", "rand"]), dtype=st.sampled_from([None, "float32", "float64"]))
def test_randn_and_rand_have_pytorchs_shape_and_dtype(shape, seed, name, dtype):
    torch = pytest.importorskip("torch")
    kw = {} if dtype is None else {"dtype": getattr(mg, dtype)}
    ours = getattr(mg, name)(*shape, generator=mg.Generator().manual_seed(seed), **kw)
    theirs = getattr(torch, name)(shape, generator=torch.Generator().manual_seed(seed),
                                  **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == torch_dtype_name(theirs)
    if name == "rand":
        assert ((ours.numpy() >= 0) & (ours.numpy() < 1)).all()


@settings(**SETTINGS)
@given(low=st.integers(-5, 5), span=st.integers(1, 6), shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
       n=st.integers(0, 9), seed=seeds)
def test_randint_and_randperm_have_pytorchs_shape_dtype_and_range(low, span, shape, n, seed):
    torch = pytest.importorskip("torch")
    g, tg = mg.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    ours, theirs = mg.randint(low, low + span, shape, generator=g), torch.randint(low, low + span, shape, generator=tg)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == torch_dtype_name(theirs)
    assert low <= ours.numpy().min() and ours.numpy().max() < low + span
    ours, theirs = mg.randperm(n, generator=g), torch.randperm(n, generator=tg)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == torch_dtype_name(theirs)
    assert sorted(ours.tolist()) == list(range(n))


@settings(**SETTINGS)
@given(rows=st.sampled_from([None, 1, 3]), n=st.integers(1, 6), replacement=st.booleans(), seed=seeds,
       data=st.data(), dtype=float_dtypes)
def test_multinomial_has_pytorchs_shape_dtype_and_support(rows, n, replacement, seed, data, dtype):
    torch = pytest.importorskip("torch")
    shape = (n,) if rows is None else (rows, n)
    weights = np.random.default_rng(seed).uniform(0, 3, shape).astype(dtype)
    weights[..., data.draw(st.integers(0, n - 1))] = 0.0  # a category that cannot come up (while others can)
    if n == 1:
        weights[...] = 1.0
    k = data.draw(st.integers(1, n if not replacement else 8))
    ours = mg.multinomial(mg.tensor(weights), k, replacement, generator=mg.Generator().manual_seed(seed))
    theirs = torch.multinomial(torch.tensor(weights), k, replacement, generator=torch.Generator().manual_seed(seed))
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == torch_dtype_name(theirs)
    picked = ours.numpy().reshape(-1, k)
    for row, w in zip(picked, weights.reshape(-1, n)):
        positive = int((w > 0).sum())
        assert (w[row[:positive]] > 0).all()  # weight 0 only once the others are used up
        if not replacement:
            assert len(set(row.tolist())) == k


# the frequencies of 40,000 draws: each within 5 standard deviations sqrt(p (1 - p) / N) of p
# (a false alarm about once in 3 million per category)
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_draws_in_proportion_to_the_weights(replacement):
    weights = np.array([1.0, 0.0, 3.0, 6.0])
    p = weights / weights.sum()
    rows = 40_000
    draws = mg.multinomial(mg.tensor(np.tile(weights, (rows, 1))), 1 if replacement else 2, replacement,
                           generator=mg.Generator().manual_seed(0)).numpy()
    first = np.bincount(draws[:, 0], minlength=4) / rows
    np.testing.assert_array_less(np.abs(first - p), 5 * np.sqrt(p * (1 - p) / rows) + 1e-12)
    if not replacement:  # the second draw, among the others: P(second = j) = sum_i p_i p_j / (1 - p_i)
        second_p = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j) for j in range(4)])
        second = np.bincount(draws[:, 1], minlength=4) / rows
        np.testing.assert_array_less(np.abs(second - second_p), 5 * np.sqrt(second_p * (1 - second_p) / rows) + 1e-12)
        assert (draws[:, 0] != draws[:, 1]).all()
    one_row = mg.multinomial(mg.tensor(weights), rows, replacement=True).numpy()  # 1-D weights: (num_samples,)
    np.testing.assert_array_less(np.abs(np.bincount(one_row, minlength=4) / rows - p),
                                 5 * np.sqrt(p * (1 - p) / rows) + 1e-12)


@pytest.mark.parametrize("weights, k, replacement, message", [
    ([-0.5, 1.0], 1, True, "contain a negative number"),
    ([1.0, np.nan], 1, True, "contain a negative number, inf or NaN"),
    ([[1.0, 1.0], [0.0, 0.0]], 1, True, "row 1 of the weights .* adds up to 0"),
    ([1.0, 2.0], 3, False, "cannot draw 3 samples without replacement from 2 categories"),
    ([1.0, 2.0], 0, True, "num_samples must be a positive integer"),
    ([[[1.0]]], 1, True, "must be 1-D or 2-D"),
])
def test_multinomial_refuses_what_pytorch_refuses(weights, k, replacement, message):
    with pytest.raises(ValueError, match=f"multinomial: .*{message}"):
        mg.multinomial(mg.tensor(weights), k, replacement)
    with pytest.raises(TypeError, match="multinomial: the weights must be a float tensor, got int64"):
        mg.multinomial(mg.tensor([1, 2]), 1)


def test_multinomial_without_replacement_uses_weight_0_last_as_pytorch():
    draws = mg.multinomial(mg.tensor([1.0, 0.0, 2.0]), 3).tolist()
    assert sorted(draws[:2]) == [0, 2] and draws[2] == 1


def test_normal_and_uniform_in_place_follow_the_in_place_rules():
    w = mg.zeros(1000, requires_grad=True)
    with pytest.raises(RuntimeError, match="normal_: a leaf tensor that requires grad"):
        w.normal_()
    with mg.no_grad():
        assert w.normal_(2.0, 0.5) is w and w.requires_grad and w.dtype == np.float32
    assert abs(w.numpy().mean() - 2.0) < 0.1 and abs(w.numpy().std() - 0.5) < 0.05  # 1000 draws: 5 sigma
    u = mg.zeros(1000, dtype=mg.float64).uniform_(-2, 3)
    assert u.dtype == np.float64 and -2 <= u.numpy().min() and u.numpy().max() < 3


# ============================================================================ names and habits
DTYPE_NAMES = ("float16 float32 float64 half float double int8 int16 int32 int64 short int long uint8 bool "
               "complex64 complex128 cfloat cdouble").split()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_attributes_are_pytorchs(name):
    torch = pytest.importorskip("torch")
    ours, theirs = mg.tensor([1, 0, 2], dtype=getattr(mg, name)), torch.tensor([1, 0, 2], dtype=getattr(torch, name))
    assert str(ours.dtype) == torch_dtype_name(theirs)
    assert ours.dtype == getattr(mg, name)
    assert mg.zeros(2, dtype=getattr(mg, name)).dtype == ours.dtype
    assert mg.ones(3).to(getattr(mg, name)).dtype == ours.dtype


def test_dtype_names_do_not_shadow_builtins_on_star_import():
    namespace = {}
    exec("from minigrad import *", namespace)
    assert not {"int", "float", "bool", "all", "any"} & set(namespace)
    assert "int32" in namespace and "histogram" in namespace


@pytest.mark.parametrize("method, dtype", [("int", "int32"), ("short", "int16"), ("byte", "uint8"), ("bool", "bool"),
                                           ("half", "float16"), ("long", "int64"), ("float", "float32"),
                                           ("double", "float64")])
def test_dtype_conversion_methods_are_pytorchs(method, dtype):
    torch = pytest.importorskip("torch")
    x = np.array([1.5, -0.0, 2.7, 0.2], dtype=np.float32)
    assert_same(getattr(mg.tensor(x), method)(), getattr(torch.tensor(x), method)())


@settings(**SETTINGS)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
def test_nelement_is_numel(shape):
    torch = pytest.importorskip("torch")
    x = np.zeros(shape, np.float32)
    assert mg.tensor(x).nelement() == mg.tensor(x).numel() == torch.tensor(x).nelement()


# float32 against PyTorch's vectorised (SLEEF) log10, log1p and expm1: both round to within an ulp
# or two of the exact value, so they agree within a few ulps of float32 (2e-7 each): 1e-6 relative
ELEMENTWISE = {"log10": lambda v: np.abs(v) + 0.01, "log1p": lambda v: np.abs(v) - 0.99, "expm1": lambda v: 3 * v}


@settings(**SETTINGS)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5), seed=seeds,
       name=st.sampled_from(sorted(ELEMENTWISE)), dtype=float_dtypes, style=st.sampled_from(["method", "function"]))
def test_log10_log1p_expm1_are_pytorchs(shape, seed, name, dtype, style):
    torch = pytest.importorskip("torch")
    x = ELEMENTWISE[name](values(shape, seed, "float64")).astype(dtype)
    ours = getattr(mg.tensor(x), name)() if style == "method" else getattr(mg, name)(mg.tensor(x))
    tol = {"float32": 1e-6, "float64": 1e-14}[dtype]
    assert_same(ours, getattr(torch, name)(torch.tensor(x)), rtol=tol, atol=tol)


def test_log10_log1p_expm1_of_integers_are_float32_as_pytorch():
    torch = pytest.importorskip("torch")
    for name in ELEMENTWISE:
        assert_same(getattr(mg.tensor([1, 2, 10]), name)(), getattr(torch.tensor([1, 2, 10]), name)(), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_log10_log1p_expm1_gradients(name):
    x = mg.tensor(ELEMENTWISE[name](values((3, 4), 1, "float64")), requires_grad=True)
    assert mg.gradcheck(lambda t: getattr(t, name)(), [x])


def test_log1p_and_expm1_keep_the_digits_of_small_values():
    tiny = mg.tensor([1e-10], dtype=mg.float64)
    assert tiny.log1p().item() == pytest.approx(1e-10, rel=1e-9)
    assert tiny.expm1().item() == pytest.approx(1e-10, rel=1e-9)
    assert mg.tensor([1000.0]).log10().item() == pytest.approx(3.0)


@settings(**SETTINGS)
@given(data=st.data(), shape=shapes, seed=seeds, keepdim=st.booleans(), op=st.sampled_from(["max", "min"]),
       style=st.sampled_from(["positional", "dim", "function"]), dtype=st.sampled_from(["float32", "int64"]))
def test_max_and_min_with_a_dim_are_pytorchs(data, shape, seed, keepdim, op, style, dtype):
    torch = pytest.importorskip("torch")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape).astype(dtype)  # no ties
    t = mg.tensor(x)
    ours = {"positional": lambda: getattr(t, op)(dim, keepdim), "dim": lambda: getattr(t, op)(dim=dim, keepdim=keepdim),
            "function": lambda: getattr(mg, op)(t, dim, keepdim)}[style]()
    theirs = getattr(torch, op)(torch.tensor(x), dim, keepdim)
    values_, indices = ours
    assert ours.values is values_ and ours.indices is indices
    assert_same(ours.values, theirs.values)
    assert_same(ours.indices, theirs.indices)
    # without a dim: the value alone, as PyTorch
    assert_same(getattr(t, op)(), getattr(torch.tensor(x), op)())


def test_max_of_one_positional_dim_is_values_and_indices_and_axis_stays_numpys():
    """The silent case: x.max(1) is PyTorch's (values, indices), not numpy's values."""
    x = mg.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 0.0]], requires_grad=True)
    result = x.max(1)
    assert isinstance(result, tuple) and result.values.tolist() == [5.0, 4.0] and result.indices.tolist() == [1, 0]
    assert x.min(0).indices.tolist() == [0, 1, 1]
    assert x.max(axis=1).tolist() == [5.0, 4.0]  # numpy's keyword: the values alone
    assert x.max(axis=(0, 1)).item() == 5.0
    assert mg.max(x, mg.tensor([2.0, 2.0, 4.0])).tolist() == [[2.0, 5.0, 4.0], [4.0, 2.0, 4.0]]  # torch.max(a, b)
    result.values.sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[0, 1, 0], [1, 0, 0]])


@settings(**SETTINGS)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5), seed=seeds,
       descending=st.booleans(), dtype=st.sampled_from(["float32", "float64", "int64", "int32", "uint8", "bool"]),
       ties=st.booleans(), nan=st.booleans())
def test_sort_and_argsort_are_pytorchs(data, shape, seed, descending, dtype, ties, nan):
    torch = pytest.importorskip("torch")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1)) if shape else -1
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, shape) if ties or dtype == "bool" else rng.permutation(int(np.prod(shape))).reshape(shape)
    x = x.astype(dtype)
    if nan and dtype.startswith("float") and x.size:
        x.flat[rng.integers(0, x.size)] = np.nan
    ours = mg.tensor(x).sort(dim, descending=descending)
    theirs = torch.tensor(x).sort(dim=dim, descending=descending, stable=True)  # ties: in their order, as ours
    assert_same(ours.values, theirs.values)
    assert_same(ours.indices, theirs.indices)
    assert_same(mg.argsort(mg.tensor(x), dim, descending), torch.argsort(torch.tensor(x), dim=dim,
                                                                           descending=descending, stable=True))


def test_sort_gradient():
    x = mg.tensor(values((3, 5), 2, "float64"), requires_grad=True)
    assert mg.gradcheck(lambda t: t.sort(1).values * mg.arange(5, dtype=mg.float64), [x])
    assert mg.gradcheck(lambda t: t.sort(0, descending=True)[0].cumsum(0), [x])


@settings(**SETTINGS)
@given(data=st.data(), shape=shapes, seed=seeds, largest=st.booleans(), dtype=st.sampled_from(["float32", "int64"]))
def test_topk_is_pytorchs(data, shape, seed, largest, dtype):
    torch = pytest.importorskip("torch")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, shape[dim]))
    x = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
    ours, theirs = mg.tensor(x).topk(k, dim, largest), torch.tensor(x).topk(k, dim, largest)
    assert ours.values is ours[0] and ours.indices is ours[1]
    assert_same(ours.values, theirs.values)
    assert_same(ours.indices, theirs.indices)


@settings(**SETTINGS)
@given(shape=shapes, n=st.integers(1, 3), seed=seeds, data=st.data(), container=st.sampled_from([list, tuple]),
       op=st.sampled_from(["cat", "stack"]))
def test_cat_and_stack_of_lists_and_tuples_are_pytorchs(shape, n, seed, data, container, op):
    torch = pytest.importorskip("torch")
    ndim = len(shape) + (op == "stack")
    dim = data.draw(st.integers(-ndim, ndim - 1))
    arrays = [values(shape, seed + i) for i in range(n)]
    ours = getattr(mg, op)(container(mg.tensor(a) for a in arrays), dim)
    theirs = getattr(torch, op)(container(torch.tensor(a) for a in arrays), dim)
    assert_same(ours, theirs)
    assert_same(getattr(mg, op)(container(mg.tensor(a) for a in arrays), dim=dim), theirs)
