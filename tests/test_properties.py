"""Property tests: random shapes and random small graphs of ops.

- binary ops on random broadcastable float32 shapes (with Python-number and integer operands):
  the forward is numpy's, bit for bit, and stays float32 (test_ops.py checks float64);
- random expressions of 3-6 ops (unary, binary, reductions, shape ops, softmax, layer norm,
  matmul...) on 1-3 float64 inputs: the forward equals the same expression evaluated by numpy,
  the gradient passes a gradient check, and the numba backend equals the numpy backend in values
  and gradients.

The elementwise ops, and where their inputs may lie, come from the op table in strategies.py.

A program is a list of steps; one interpreter runs it on minigrad tensors or on numpy arrays, so
each op is written once for each library, side by side.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.nn import functional as F
from strategies import BINARY_OPS, UNARY_OPS, log_softmax_reference, softmax_reference

SETTINGS = dict(max_examples=20, deadline=None)


# ============================================================================ binary ops, float32
# the rows of strategies.OPS with two inputs, on values from their domains made float32
@settings(**SETTINGS)
@given(pair=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=4),
       name=st.sampled_from(sorted(BINARY_OPS)), seed=st.integers(0, 2**31),
       other=st.sampled_from(["tensor", "python float", "int tensor"]))
def test_binary_ops_on_broadcast_float32_shapes_equal_numpy(pair, name, seed, other):
    op = BINARY_OPS[name]
    shape_a, shape_b = pair.input_shapes
    a, b = op.domain.sample(shape_a, shape_b, seed)
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if other == "tensor":
        b_mg, b_np = mg.tensor(b, requires_grad=True), b
    elif other == "python float":
        b_mg = float(b.flat[0])
        b_np = np.float32(b_mg)  # a Python number takes the tensor's dtype
    else:
        b = np.random.default_rng(seed).integers(1, 4, shape_b)
        b_mg, b_np = mg.tensor(b), b.astype(np.float32)  # an integer tensor takes the float's dtype
    x = mg.tensor(a, requires_grad=True)
    with np.errstate(all="ignore"):
        out = op.fn(x, b_mg)
        expected = op.reference(a, b_np)
    assert out.dtype == np.float32 and out.shape == np.shape(expected)
    np.testing.assert_array_equal(out.numpy(), expected)
    out.backward(np.ones(out.shape, np.float32))
    assert x.grad.shape == shape_a and x.grad.dtype == np.float32
    if other == "tensor":
        assert b_mg.grad.shape == shape_b and b_mg.grad.dtype == np.float32


# ============================================================================ random op graphs
# The ops: the elementwise rows of the op table (strategies.OPS), offered only where their values
# lie inside the row's domain, and below the ops that take parameters or join shapes. Each entry
# has a check `applicable(value(s))`, for shaped ops a parameter drawer `params(draw, shape)`, and
# the op written for minigrad and for numpy. The checks see the float64 values of the current
# nodes: an op is offered only where it is smooth and well conditioned (log of values > 0.2,
# division by |b| > 0.3, no ties for maximum, ...), so that a central difference measures the true
# gradient.


def _layer_norm(x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)


def _always(*values):
    return True


def _no_params(draw, shape):
    return {}


def _axis_param(draw, shape):
    return {"axis": draw(st.integers(-len(shape), len(shape) - 1), label="axis")}


def _reduce_params(draw, shape):
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                          hnp.valid_tuple_axes(len(shape), min_size=1)), label="axis")
    return {"axis": axis, "keepdims": draw(st.booleans(), label="keepdims")}


def _permute_params(draw, shape):
    return {"axes": tuple(draw(st.permutations(range(len(shape))), label="axes"))}


def _index_params(draw, shape):
    kind = draw(st.sampled_from(["first", "step", "repeat"]), label="index")
    if kind == "first":
        return {"index": 0}
    if kind == "step":
        return {"index": (Ellipsis, slice(None, None, 2))}
    return {"index": np.array([0, shape[0] - 1, 0])}  # repeated rows: gradients must add up


def _expand_params(draw, shape):
    return {"shape": tuple(3 if n == 1 else n for n in shape)}


def _mask_params(draw, shape):
    seed = draw(st.integers(0, 2**31), label="mask seed")
    return {"mask": np.random.default_rng(seed).random(shape) < 0.3}


# name: (applicable(value), minigrad fn(x), numpy fn(x))
UNARY = {name: (op.domain.contains, op.fn, op.reference) for name, op in UNARY_OPS.items()}

# name: (applicable(value), params(data, shape), minigrad fn(x, **p), numpy fn(x, **p))
SHAPED = {
    "softmax": (lambda v: v.ndim >= 1, _axis_param, lambda x, axis: x.softmax(axis), softmax_reference),
    "log_softmax": (lambda v: v.ndim >= 1, _axis_param, lambda x, axis: x.log_softmax(axis), log_softmax_reference),
    # over 2 features layer norm is degenerate: the output is +-1 whatever the input, so the gradient
    # is O(eps) = 1e-5, the rounding residue of O(1) terms that cancel; hence 3 features or more
    "layer_norm": (lambda v: v.ndim >= 1 and v.shape[-1] >= 3 and (v.std(-1) > 0.1).all(), _no_params,
                   lambda x: F.layer_norm(x, x.shape[-1]), _layer_norm),
    "sum": (lambda v: v.ndim >= 1, _reduce_params, lambda x, axis, keepdims: x.sum(axis, keepdims),
            lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims)),
    "mean": (lambda v: v.ndim >= 1, _reduce_params, lambda x, axis, keepdims: x.mean(axis, keepdims),
             lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims)),
    "var": (lambda v: v.ndim >= 1, _reduce_params,
            lambda x, axis, keepdims: x.var(axis, keepdim=keepdims, correction=0),
            lambda x, axis, keepdims: np.var(x, axis=axis, keepdims=keepdims)),
    "transpose": (lambda v: v.ndim >= 2, _no_params, lambda x: x.transpose(-2, -1), lambda x: np.swapaxes(x, -2, -1)),
    "permute": (lambda v: v.ndim >= 2, _permute_params, lambda x, axes: x.permute(axes),
                lambda x, axes: np.transpose(x, axes)),
    "unsqueeze": (lambda v: v.ndim <= 3, _no_params, lambda x: x.unsqueeze(0), lambda x: x[None]),
    "squeeze": (lambda v: 1 in v.shape, _no_params, lambda x: x.squeeze(), np.squeeze),
    "index": (lambda v: v.ndim >= 1, _index_params, lambda x, index: x[index], lambda x, index: x[index]),
    "expand": (lambda v: 1 in v.shape, _expand_params, lambda x, shape: x.expand(shape),
               lambda x, shape: np.broadcast_to(x, shape)),
    "masked_fill": (lambda v: v.ndim >= 1, _mask_params, lambda x, mask: x.masked_fill(mask, 0.5),
                    lambda x, mask: np.where(mask, 0.5, x)),
    "tril": (lambda v: v.ndim >= 2, _no_params, lambda x: x.tril(), np.tril),
    "split_cat": (lambda v: v.ndim >= 1 and v.shape[-1] >= 2, _no_params,
                  lambda x: mg.cat(list(reversed(x.split(1, axis=-1))), axis=-1), lambda x: x[..., ::-1]),
    "reshape_flat": (lambda v: True, _no_params, lambda x: x.reshape(-1), lambda x: x.reshape(-1)),
}

# name: (applicable(a, b), minigrad fn(a, b), numpy fn(a, b)); a and b broadcast together
BINARY = {
    **{name: (op.domain.contains, op.fn, op.reference) for name, op in BINARY_OPS.items()},
    "where": (_always, None, None),  # fixed random condition: see _apply
    "stack": (lambda a, b: a.shape == b.shape, lambda a, b: mg.stack([a, b], axis=-1),
              lambda a, b: np.stack([a, b], axis=-1)),
    "matmul_t": (lambda a, b: a.ndim >= 1 and a.shape == b.shape and np.abs(a).max() * np.abs(b).max() < 50,
                 lambda a, b: a @ (b.transpose(-2, -1) if b.ndim >= 2 else b),
                 lambda a, b: a @ (np.swapaxes(b, -2, -1) if b.ndim >= 2 else b)),
}


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


# families of ops; each random-graph test runs once per family, and that family's ops are
# preferred at every other step, so that 20 examples per family reach every op
FAMILIES = {
    "elementwise": sorted(UNARY),
    "softmax_layer_norm": ["softmax", "log_softmax", "layer_norm"],
    "reduction_indexing": ["sum", "mean", "var", "index", "masked_fill"],
    "shape": ["reshape_flat", "transpose", "permute", "unsqueeze", "squeeze", "expand", "tril", "split_cat",
              "stack"],
    "binary": sorted(set(BINARY) - {"stack"}),
}


def _candidates(values):
    """Every (kind, name) that applies to the last node (with some partner node, for binary ops)."""
    x = values[-1]
    found = [("unary", n) for n, (ok, _, _) in UNARY.items() if ok(x)]
    found += [("shaped", n) for n, (ok, _, _, _) in SHAPED.items() if ok(x)]
    found += [("binary", n) for n, (ok, _, _) in BINARY.items()
              if any(_broadcasts(x.shape, y.shape) and ok(x, y) for y in values)]
    return found


@st.composite
def programs(draw, family=None):
    """(input arrays, steps): 1-3 inputs of broadcastable shapes, then 3-6 ops, each applied to
    the newest node (and, for a binary op, to any node it broadcasts with: graphs reuse nodes).
    A step is (kind, name, operand node ids, params); node i is input i, then one per step."""
    n_inputs = draw(st.integers(1, 3), label="inputs")
    # at least 2 dims where the family needs axes to work on (layer norm wants 3+ features)
    min_dims = 2 if family in ("softmax_layer_norm", "shape") else 0
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=n_inputs, min_dims=min_dims, max_dims=3,
                                                     min_side=1, max_side=4), label="shapes").input_shapes
    seed = draw(st.integers(0, 2**31), label="value seed")
    rng = np.random.default_rng(seed)
    # values in +-[0.5, 1.5]: away from 0 (abs, relu, division) and small enough to stay in range
    inputs = [rng.uniform(0.5, 1.5, s) * rng.choice([-1.0, 1.0], s) for s in shapes]
    values = [np.asarray(v) for v in inputs]
    steps = []
    for position in range(draw(st.integers(3, 6), label="ops")):
        last = len(values) - 1
        x = values[last]
        candidates = _candidates(values)
        preferred = [c for c in candidates if family and c[1] in FAMILIES[family]]
        kind, name = draw(st.sampled_from(preferred if preferred and position % 2 == 0 else candidates), label="op")
        if kind == "unary":
            step = ("unary", name, (last,), {})
        elif kind == "shaped":
            step = ("shaped", name, (last,), SHAPED[name][1](draw, x.shape))
        else:
            ok = BINARY[name][0]
            partner = draw(st.sampled_from([i for i, y in enumerate(values)
                                            if _broadcasts(x.shape, y.shape) and ok(x, y)]), label="partner")
            params = {}
            if name == "where":
                condition_seed = draw(st.integers(0, 2**31), label="condition seed")
                shape = np.broadcast_shapes(x.shape, values[partner].shape)
                params["condition"] = np.random.default_rng(condition_seed).random(shape) < 0.5
            # swap the operands only where they are valid the other way round too (not so for pow, div)
            swap = draw(st.booleans(), label="swap") and ok(values[partner], x)
            step = ("binary", name, (partner, last) if swap else (last, partner), params)
        steps.append(step)
        values.append(np.asarray(_apply_np(step, values)))
    return inputs, steps


def _apply_np(step, nodes):
    kind, name, operands, params = step
    args = [nodes[i] for i in operands]
    if kind == "unary":
        return UNARY[name][2](*args)
    if kind == "shaped":
        return SHAPED[name][3](*args, **params)
    if name == "where":
        return np.where(params["condition"], *args)
    return BINARY[name][2](*args)


def _apply_mg(step, nodes):
    kind, name, operands, params = step
    args = [nodes[i] for i in operands]
    if kind == "unary":
        return UNARY[name][1](*args)
    if kind == "shaped":
        return SHAPED[name][2](*args, **params)
    if name == "where":
        return mg.where(params["condition"], *args)
    return BINARY[name][1](*args)


def run(steps, inputs, apply):
    nodes = list(inputs)
    for step in steps:
        nodes.append(apply(step, nodes))
    return nodes[-1]


def describe(inputs, steps):
    lines = [f"inputs: {[np.shape(x) for x in inputs]}"]
    for i, (kind, name, operands, params) in enumerate(steps, start=len(inputs)):
        shown = {k: (v.shape if isinstance(v, np.ndarray) and v.dtype == bool else v) for k, v in params.items()}
        lines.append(f"  node {i} = {name}({', '.join(f'node {j}' for j in operands)}) {shown or ''}")
    return "\n".join(lines)


def _forward_and_grads(steps, inputs, backend, upstream_seed=0):
    with mg.use_backend(backend):
        leaves = [mg.tensor(np.array(x, dtype=np.float64), requires_grad=True) for x in inputs]
        out = run(steps, leaves, _apply_mg)
        v = np.random.default_rng(upstream_seed).standard_normal(out.shape)
        out.backward(v)
        grads = [np.zeros(x.shape) if x.grad is None else x.grad for x in leaves]
    return out, leaves, grads


def _close_to_scale(actual, expected, rtol, what):
    """|actual - expected| <= rtol * max(max|expected|, 1): relative to the array's scale, so that
    an entry that cancels to nearly 0 is not held to a relative error it cannot have. The floor 1:
    inputs, values and upstream gradients here are O(1), so a result far below 1 is the residue of
    O(1) terms that cancel (e.g. the gradient of softmax of equal entries, 0 in exact arithmetic)
    and is compared at rtol absolute."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(**SETTINGS)
@given(data=st.data())
def test_random_graph_forward_equals_numpy_and_gradcheck_passes(family, data):
    inputs, steps = data.draw(programs(family), label="program")
    text = describe(inputs, steps)
    out, leaves, _ = _forward_and_grads(steps, inputs, mg.get_backend())
    expected = run(steps, [np.array(x) for x in inputs], _apply_np)
    assert out.dtype == np.float64, text
    _close_to_scale(out.numpy(), expected, 1e-10, "forward\n" + text)
    for x in leaves:
        x.grad = None
    report = mg.gradcheck(lambda *xs: run(steps, xs, _apply_mg), leaves, atol=1e-6, rtol=1e-4,
                          raise_exception=False)
    assert report, text + "\n" + str(report)


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(**SETTINGS)
@given(data=st.data())
def test_random_graph_numba_equals_numpy_backend(family, data):
    inputs, steps = data.draw(programs(family), label="program")
    text = describe(inputs, steps)
    out_numba, _, grads_numba = _forward_and_grads(steps, inputs, "numba")
    out_numpy, _, grads_numpy = _forward_and_grads(steps, inputs, "numpy")
    _close_to_scale(out_numba.numpy(), out_numpy.numpy(), 1e-12, "forward\n" + text)
    for i, (a, b) in enumerate(zip(grads_numba, grads_numpy)):
        _close_to_scale(a, b, 1e-12, f"gradient of input {i}\n" + text)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_fixed_graph_with_every_kind_of_op(backend):
    """One hand-written program through softmax, layer norm, matmul, a reduction, indexing and a
    broadcast binary op: a readable smoke test of the machinery above."""
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(0.5, 1.5, (2, 3, 4)), rng.uniform(0.5, 1.5, (4,))]
    steps = [
        ("binary", "mul", (0, 1), {}),
        ("shaped", "layer_norm", (2,), {}),
        ("shaped", "softmax", (3,), {"axis": 1}),
        ("binary", "matmul_t", (4, 4), {}),
        ("shaped", "index", (5,), {"index": np.array([0, 1, 0])}),
        ("shaped", "sum", (6,), {"axis": -1, "keepdims": True}),
    ]
    with mg.use_backend(backend):
        out, leaves, _ = _forward_and_grads(steps, inputs, backend)
        _close_to_scale(out.numpy(), run(steps, inputs, _apply_np), 1e-10, describe(inputs, steps))
        for x in leaves:
            x.grad = None
        assert mg.gradcheck(lambda *xs: run(steps, xs, _apply_mg), leaves, atol=1e-6, rtol=1e-4)
