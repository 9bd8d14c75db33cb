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
