"""The compiled matmul must agree with the numpy reference on every shape and memory layout.

The kernel works on 8 x 32 tiles of the output and on blocks of at most 256 steps of the inner
axis, so the shapes below straddle those sizes: 1, 7, 8, 9, 31, 33, 65, 129, and K above 256.
The kernels that run products (here and in attention, conv2d and rnn) call matmul_block at its
address and hold no compiled copy of it.
"""

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.kernels.matmul import BLAS_BELOW, EDGE_ROWS, KC, MR, NR, matmul_compiled, matmul_numba, matmul_numpy

# the module itself (the attribute minigrad.kernels.matmul is the dispatching function)
matmul_module = importlib.import_module("minigrad.kernels.matmul")

DTYPES = [np.float32]  # the compiled kernel's dtype (float64 takes the numpy twin, tested below)


def random(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def assert_matches_reference(a, b):
    """matmul_compiled(a, b) == matmul_numpy(a, b) up to rounding, and has the promised form."""
    expected = matmul_numpy(a, b)
    got = matmul_compiled(a, b)
    assert got.shape == expected.shape
    assert got.dtype == a.dtype
    assert got.flags.c_contiguous
    # rounding error grows with the sum of |a_ik * b_kj| over k, not with the result itself
    magnitude = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    rtol = 1e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_array_less(np.abs(got - expected), rtol * magnitude + 1e-30)


# --- fixed shapes that hit the edges of tiles and blocks -----------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, k, n",
    [
        (1, 1, 1),
        (1, 5, 1),
        (MR, 3, NR),  # exactly one tile
        (MR - 1, 7, NR - 1),  # one partial tile
        (MR + 1, 33, NR + 1),  # one full tile plus slivers
        (65, 129, 33),
        (129, KC, 65),  # one whole k block
        (33, KC + 1, 7),  # a second k block of one step
        (40, 2 * KC + 88, 70),  # several k blocks
        (2 * EDGE_ROWS + MR + 3, 2 * KC + 5, NR // 2 + 1),  # more tiles past c's last column than the edge
        # buffer holds at once, over several k blocks
        (768, 128, 384),  # sizes of the GPT's layers
    ],
)
def test_2d_shapes(m, k, n, dtype):
    rng = np.random.default_rng(m * 10_000 + k * 100 + n)
    assert_matches_reference(random(rng, (m, k), dtype), random(rng, (k, n), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a, shape_b", [((0, 4), (4, 5)), ((3, 4), (4, 0)), ((2, 0, 4), (2, 4, 3))])
def test_empty_output(shape_a, shape_b, dtype):
    a, b = np.ones(shape_a, dtype), np.ones(shape_b, dtype)
    got = matmul_compiled(a, b)
    assert got.shape == shape_a[:-1] + shape_b[-1:] and got.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_inner_axis_gives_zeros(dtype):
    got = matmul_compiled(np.ones((2, 3, 0), dtype), np.ones((2, 0, 5), dtype))
    assert got.shape == (2, 3, 5)
    assert not got.any()


# --- memory layouts: transposes, slices, broadcasts ----------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_views(dtype):
    rng = np.random.default_rng(1)
    x, w, g = random(rng, (77, 45), dtype), random(rng, (45, 70), dtype), random(rng, (77, 70), dtype)
    assert_matches_reference(x.T, g)  # weight gradient: (45, 77) @ (77, 70), a transposed
    assert_matches_reference(g, w.T)  # input gradient: (77, 70) @ (70, 45), b transposed
    assert_matches_reference(w.T, x.T)  # both transposed


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliced_views(dtype):
    rng = np.random.default_rng(2)
    big_a, big_b = random(rng, (90, 140), dtype), random(rng, (130, 150), dtype)
    a = big_a[3:70:2, 5:129]  # strided rows, offset columns: (34, 124)
    b = big_b[::-1][:124, 10:143:3]  # reversed rows, strided columns: (124, 45)
    assert_matches_reference(a, b)
    assert_matches_reference(a[:, ::-1], b[::-1, :])  # negative strides on the inner axis


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_attention_layouts(dtype):
    rng = np.random.default_rng(3)
    q, k, v = (random(rng, (2, 3, 19, 8), dtype) for _ in range(3))
    scores = matmul_compiled(q, k.swapaxes(-1, -2))  # (2, 3, 19, 19), b transposed
    assert_matches_reference(q, k.swapaxes(-1, -2))
    assert_matches_reference(scores, v)
    assert_matches_reference(scores.swapaxes(-1, -2), v)  # gradient of v: a transposed


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_batch_axes(dtype):
    rng = np.random.default_rng(4)
    x, w = random(rng, (4, 3, 10, 33), dtype), random(rng, (33, 40), dtype)
    # a weight shared by every batch slice: zero strides on both batch axes
    assert_matches_reference(x, np.broadcast_to(w, (4, 3, 33, 40)))
    # and the other way round
    assert_matches_reference(np.broadcast_to(w.T, (4, 3, 40, 33)), x.swapaxes(-1, -2))
    # broadcast along the inner batch axis only: the two batch axes cannot be merged into one
    per_outer = random(rng, (4, 1, 33, 40), dtype)
    assert_matches_reference(x, np.broadcast_to(per_outer, (4, 3, 33, 40)))
    # a strided batch axis (every other slice) combined with a broadcast one
    assert_matches_reference(random(rng, (8, 3, 10, 33), dtype)[::2], np.broadcast_to(w, (4, 3, 33, 40)))


@pytest.mark.parametrize("transpose_a", [False, True])
def test_large_blocks_of_a_are_packed(transpose_a):
    """Blocks of a of at least PACK_A_BYTES read by at least PACK_A_STRIPS strips are copied
    before use. Run as a single task, so that the test does not depend on the thread count."""
    rng = np.random.default_rng(5)
    m, k, n = 1030, 300, 9 * NR - NR // 2  # k: two blocks of 150 steps; n: 9 strips, the last half full
    assert n // NR + 1 >= matmul_module.PACK_A_STRIPS
    assert min(m, matmul_module.MC) * (k // 2) * 4 >= matmul_module.PACK_A_BYTES
    a = random(rng, (k, m), np.float32).T if transpose_a else random(rng, (m, k), np.float32)
    b = random(rng, (k, n), np.float32)
    out = np.empty((1, m, n), np.float32)
    kernel = matmul_module._run_tasks.for_dtype(a.dtype)
    kernel(a[np.newaxis], b[np.newaxis], out, np.zeros(0, a.dtype), matmul_module.block_address(a.dtype), 1, 1, 1, 0, 1)
    # within the rounding bound of a float32 sum of k products: k eps (|a| @ |b|)
    bound = k * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    np.testing.assert_array_less(np.abs(out[0] - a.astype(np.float64) @ b), bound)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((1, 1), (1, 1)),
        ((MR + 1, 33), (33, NR + 1)),  # edge tiles: the bias is padded to whole strips
        ((40, 2 * KC + 88), (2 * KC + 88, 70)),  # several k blocks: the bias is added once
        ((3, 5, 65), (3, 65, 3 * NR - 5)),  # batched, the last strip partial
        ((4, 9, 20), (4, 20, 33)),  # one product per batch slice
        ((768, 128), (128, 384)),
        ((6, 0), (0, 7)),  # empty inner axis: the result is the bias
    ],
)
def test_bias_is_added_to_every_row(shape_a, shape_b, dtype):
    rng = np.random.default_rng(11)
    a, b = random(rng, shape_a, dtype), random(rng, shape_b, dtype)
    bias = random(rng, shape_b[-1:], dtype) * 10
    for b_view in (b, np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)):  # row-major, transposed
        got, expected = matmul_compiled(a, b_view, bias), matmul_numpy(a, b_view, bias)
        assert got.shape == expected.shape and got.dtype == dtype
        np.testing.assert_allclose(got, np.matmul(a, b) + bias, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-4 if dtype == np.float32 else 1e-11)
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-4 if dtype == np.float32 else 1e-11)


@pytest.mark.parametrize("k", [3, 64, 100])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_short_inner_axis_takes_more_rows_per_pass(k, transpose_b):
    """With k blocks shorter than KC a pass over the strips takes more rows of a than MC (the same
    bytes of a): rows past MC, and passes that end inside a tile row, must still all be computed."""
    rng = np.random.default_rng(k)
    rows = matmul_module.MC * KC // k + 5 * MR + 3  # more than one pass, the last one short and ragged
    a = random(rng, (rows, k), np.float32)
    b = random(rng, (70, k), np.float32).T if transpose_b else random(rng, (k, 70), np.float32)
    assert_matches_reference(a, b)
    assert_matches_reference(a[None].repeat(2, axis=0), np.broadcast_to(b, (2,) + b.shape))


@pytest.mark.parametrize("transpose_b", [False, True])
def test_wide_b_is_packed_in_several_panels(transpose_b):
    """More columns than one panel of packed strips holds (PANEL_STRIPS x NR): the panels side by
    side, the last one short and ragged, with k in two blocks and a bias."""
    rng = np.random.default_rng(5)
    n = matmul_module.PANEL_STRIPS * NR + NR + 7
    a = random(rng, (2 * MR + 3, KC + 9), np.float32)
    b = random(rng, (n, KC + 9), np.float32).T if transpose_b else random(rng, (KC + 9, n), np.float32)
    assert_matches_reference(a, b)
    bias = random(rng, (n,), np.float32)
    got, expected = matmul_compiled(a, b, bias), matmul_numpy(a, b, bias)
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + np.abs(bias)
    np.testing.assert_array_less(np.abs(got - expected), 1e-5 * magnitude)  # (as assert_matches_reference)


@pytest.mark.parametrize("n_threads", [2, 3])
@pytest.mark.parametrize("layout", ["transposed", "row-major", "strided"])
def test_tasks_that_cut_the_rows_and_pack_b_are_one_per_thread(n_threads, layout, monkeypatch):
    """Tasks that cut the rows of one product each pack all of b they read: then there is one task
    per thread, not several. With a bias, k in two blocks, a ragged last strip."""
    import minigrad

    rng = np.random.default_rng(n_threads)
    m, k, n = 37 * MR + 5, KC + 40, 5 * NR + 3
    base = random(rng, (n, k), np.float32) if layout == "transposed" else random(rng, (k, 2 * n), np.float32)
    b = {"transposed": base.T, "row-major": np.ascontiguousarray(base[:, :n]), "strided": base[:, ::2]}[layout]
    a, bias = random(rng, (m, k), np.float32), random(rng, (n,), np.float32)
    launches, parallel_for = [], matmul_module.parallel_for
    monkeypatch.setattr(matmul_module, "parallel_for", lambda kernel, n_tasks, *args: launches.append(
        (n_tasks, args[-3:])) or parallel_for(kernel, n_tasks, *args))
    before = minigrad.get_num_threads()
    try:
        minigrad.set_num_threads(n_threads)
        got = matmul_compiled(a, b, bias)
    finally:
        minigrad.set_num_threads(before)
    assert launches == [(n_threads, (1, 1, n_threads))]  # rows cut into one task per thread
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + np.abs(bias)
    np.testing.assert_array_less(np.abs(got - matmul_numpy(a, b, bias)), 1e-5 * magnitude)  # (as above)


def _pair_launches(monkeypatch):
    """Record the kernels matmul.py hands to the pool (and still run them)."""
    launches, parallel_for = [], matmul_module.parallel_for

    def recording(kernel, n_items, *args, **kwargs):
        launches.append((getattr(kernel, "__name__", ""), n_items))
        return parallel_for(kernel, n_items, *args, **kwargs)

    monkeypatch.setattr(matmul_module, "parallel_for", recording)
    return launches


def assert_close_to_reference(got, a, b):
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    np.testing.assert_array_less(np.abs(got - matmul_numpy(a, b)), 1e-5 * magnitude + 1e-30)
    assert got.flags.c_contiguous and got.dtype == a.dtype


@pytest.mark.parametrize("m, k, n", [(768, 128, 512), (12 * MR + 3, KC + 9, 4 * NR + 5), (300, 37, 61)])
@pytest.mark.parametrize("n_threads", [2, 3])
def test_a_layers_two_backward_products_run_side_by_side(m, k, n, n_threads, monkeypatch):
    """dx = g W and dW = g^T x (equal work) as one launch of two items, one whole product per thread,
    each equal to the reference: transposed g, ragged tiles and strips, k over one block. The bias
    gradient, summed beside them, has the bits of numpy's sum (rows added in order)."""
    import minigrad

    assert 2 * m * k * n >= matmul_module.SERIAL_FLOPS  # (each product worth a thread, whatever this CPU's tile)
    rng = np.random.default_rng(m)
    g, weight, x = random(rng, (m, n), np.float32), random(rng, (n, k), np.float32), random(rng, (m, k), np.float32)
    ahead = matmul_module._warm._ahead
    if ahead is not None:  # on an empty cache, the pair runs once the compile-ahead process has compiled it
        ahead.wait_for(matmul_module._warm.POOL_LAST)
    launches = _pair_launches(monkeypatch)
    before = minigrad.get_num_threads()
    try:
        minigrad.set_num_threads(n_threads)
        dx, dw, db = matmul_module.matmul_pair_numba(g, weight, g.T, x, g)
        dx_alone, dw_alone, no_sum = matmul_module.matmul_pair_numba(g, weight, g.T, x)
    finally:
        minigrad.set_num_threads(before)
    assert launches == [("_product_pair", 2)] * 2
    assert_close_to_reference(dx, g, weight)
    assert_close_to_reference(dw, g.T, x)
    np.testing.assert_array_equal(db, g.sum(axis=0))
    np.testing.assert_array_equal(dx_alone, dx)
    np.testing.assert_array_equal(dw_alone, dw)
    assert no_sum is None


@pytest.mark.parametrize("case", ["one thread", "small", "unequal", "float64", "batched"])
def test_products_not_worth_a_thread_each_run_one_after_the_other(case, monkeypatch):
    """One thread, products below SERIAL_FLOPS, work that differs more than twofold, float64 (the
    numpy twin), batched operands: each product runs as matmul_numba runs it alone, never as a pair."""
    import minigrad

    rng = np.random.default_rng(1)
    m, k, n = {"small": (20, 8, 16), "unequal": (300, 64, 64)}.get(case, (256, 64, 96))
    dtype = np.float64 if case == "float64" else np.float32
    a1, b1 = random(rng, (m, k), dtype), random(rng, (k, n), dtype)
    a2, b2 = (random(rng, (k, 3 * m), dtype), random(rng, (3 * m, n), dtype)) if case == "unequal" else (a1, b1)
    if case == "batched":
        a1, b1, a2, b2 = a1[None], b1[None], a2[None], b2[None]
    launches = _pair_launches(monkeypatch)
    before = minigrad.get_num_threads()
    try:
        minigrad.set_num_threads(1 if case == "one thread" else 2)
        *got, sums = matmul_module.matmul_pair_numba(a1, b1, a2, b2, a1[0] if case == "batched" else a1)
    finally:
        minigrad.set_num_threads(before)
    assert all(name != "_product_pair" for name, _ in launches)
    for c, a, b in zip(got, (a1, a2), (b1, b2)):
        np.testing.assert_allclose(c, matmul_numpy(a, b), rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    np.testing.assert_array_equal(sums, (a1[0] if case == "batched" else a1).sum(axis=0))


def test_the_pair_checks_its_operands_as_matmul_does():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(ValueError, match="matmul_pair_numba: shapes"):
        matmul_module.matmul_pair_numba(a, b, a, a)
    with pytest.raises(TypeError, match="matmul_pair_numba"):
        matmul_module.matmul_pair_numba(a, b, a.astype(np.int32), b)
    with pytest.raises(ValueError, match="matmul_pair_numba: rows"):
        matmul_module.matmul_pair_numba(a, b, a, b, rows=np.ones(4, np.float32))


def test_bias_of_the_wrong_shape_is_refused():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(ValueError, match="bias"):
        matmul_compiled(a, b, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="bias"):
        matmul_compiled(a, b, np.ones(5, np.float64))


def test_rejects_mismatched_inputs():
    with pytest.raises(TypeError):
        matmul_compiled(np.ones((2, 2), np.float32), np.ones((2, 2), np.float64))
    with pytest.raises(ValueError):
        matmul_compiled(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


# --- random shapes and layouts -------------------------------------------------------------

SIZES = st.sampled_from([1, 2, 7, 8, 9, 31, 32, 33, 65, 129])


@st.composite
def matmul_operands(draw):
    """Two operands with random sizes, 0-2 batch axes, and random layouts."""
    dtype = draw(st.sampled_from(DTYPES))
    m, k, n = draw(SIZES), draw(st.sampled_from([1, 3, 8, 33, 65, 257, 300])), draw(SIZES)
    batch = tuple(draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def operand(rows, cols):
        layout = draw(st.sampled_from(["contiguous", "transposed", "sliced", "broadcast"]))
        if layout == "transposed":
            return random(rng, batch + (cols, rows), dtype).swapaxes(-1, -2)
        if layout == "sliced":
            return random(rng, batch + (rows + 2, 2 * cols), dtype)[..., 1:-1, ::2]
        if layout == "broadcast":
            return np.broadcast_to(random(rng, (rows, cols), dtype), batch + (rows, cols))
        return random(rng, batch + (rows, cols), dtype)

    return operand(m, k), operand(k, n)


@settings(max_examples=40, deadline=None)
@given(matmul_operands())
def test_random_shapes_and_layouts(operands):
    assert_matches_reference(*operands)


def test_float64_takes_the_numpy_twin_on_the_numba_backend():
    """matmul_numba hands float64 (gradient checks) to BLAS: the same bits as the twin."""
    rng = np.random.default_rng(3)
    a, b, bias = random(rng, (5, 7), np.float64), random(rng, (7, 3), np.float64), random(rng, (3,), np.float64)
    np.testing.assert_array_equal(matmul_numba(a, b, bias), matmul_numpy(a, b, bias))
    with pytest.raises(ValueError, match="bias"):
        matmul_numba(a, b, bias[:2])


@pytest.mark.parametrize("shape_a, shape_b", [((16, 2), (2, 32)), ((2, 256), (256, 32)), ((1, 64), (64, 65)),
                                              ((256, 32), (32, 2))])
def test_small_products_take_blas_and_agree_with_the_kernel(shape_a, shape_b):
    """Below BLAS_BELOW multiply-adds, matmul_numba hands 2-D float32 products to numpy (the same
    bits as the twin); the compiled kernel agrees within float32 rounding of K-term sums."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b[::-1]).astype(np.float32).T  # a weight's transpose, as in Linear
    bias = rng.standard_normal(shape_b[1]).astype(np.float32)
    assert a.shape[0] * a.shape[1] * b.shape[1] <= BLAS_BELOW
    got = matmul_numba(a, b, bias)
    np.testing.assert_array_equal(got, matmul_numpy(a, b, bias))
    # each entry sums K products (each below 25: these normals stay within +-5) and the bias; two
    # summation orders differ by at most about (K + 1) * eps * 25 per entry
    atol = (a.shape[1] + 1) * np.finfo(np.float32).eps * 25
    np.testing.assert_allclose(got, matmul_compiled(a, b, bias), rtol=0, atol=atol)
    with pytest.raises(ValueError, match="matmul_numba"):
        matmul_numba(a, b, bias[:-1])


@pytest.mark.parametrize("module, kernel", [("matmul", "_run_tasks"), ("matmul", "_product_pair"),
                                            ("attention", "forward_slices"), ("attention", "backward_slices"),
                                            ("conv2d", "conv2d_images"), ("conv2d", "conv2d_grads"),
                                            ("rnn", "_lstm_rows"), ("rnn", "_gru_rows_backward")])
def test_kernels_that_multiply_call_matmul_block_at_its_address(module, kernel):
    """Every compiled kernel that runs products calls matmul_block through its address
    (matmul.call_block): none holds a compiled copy of it, so a process compiles matmul_block once,
    not once more inside each of them."""
    import numba

    from minigrad.kernels._jit import jit

    kernel = getattr(importlib.import_module(f"minigrad.kernels.{module}"), kernel)
    signature = kernel.signature_of(numba.from_dtype(np.dtype(np.float32)))
    # compiled afresh: numba shows no code of a kernel loaded from its cache
    compiled = jit([signature], **{**kernel.options, "cache": False})(kernel.py_func)
    llvm = compiled.inspect_llvm(compiled.signatures[0])
    defined = [line for line in llvm.splitlines() if line.startswith("define") and "matmul_block" in line]
    assert defined == [], f"{kernel.__name__} holds a copy of matmul_block"
    assert matmul_module.block_address(np.float32) == matmul_module.block_address(np.dtype(np.float32)) != 0


def test_call_block_passes_on_an_exception_of_the_function_it_calls():
    """call_block calls whatever compiled function sits at the address with matmul_block's argument
    types; an exception raised there reaches the caller as from a call by name (message and all)."""
    import numba

    from minigrad.kernels._jit import jit
    from minigrad.kernels.matmul import block_scratch, block_signature, call_block, strided

    def refuse(a, b, c, bias, strip_lo, strip_hi, block_lo, block_hi, packed_a, packed_b, edge):
        if strip_hi > strip_lo:
            raise ValueError("refused by the called function")

    signature = block_signature(numba.float32)
    refuse = jit([numba.types.none(*signature)], cache=False)(refuse)
    compiled = refuse.overloads[signature]
    address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)

    @jit(cache=False)
    def product(a, b, c, n_strips, address):
        packed_a, packed_b, edge, no_bias = block_scratch(c, c.shape[1])
        call_block(address, strided(a), strided(b), c, no_bias, np.intp(0), np.intp(n_strips), np.intp(0), np.intp(1),
                   packed_a, packed_b, edge)
        c[0, 0] = 1  # (reached only if the call returned)

    a, b, c = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32), np.zeros((4, 5), np.float32)
    product(a, b, c, 0, address)
    assert c[0, 0] == 1
    with pytest.raises(ValueError, match="refused by the called function"):
        product(a, b, c, 1, address)
