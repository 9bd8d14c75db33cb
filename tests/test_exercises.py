"""demos.exercises: for every exercise the untouched skeleton fails cleanly, the reference (the
engine's own op) passes, a learner's file written from the skeleton passes, and a planted mistake
fails with a report that names the input and an element where the gradient really is wrong;
`train` runs the learner's backward (also where the built-in one is a numba kernel) and matches
the built-in run; `grade` survives wrong, crashing and hanging files.

Checks run in this process; only the tests of the isolation (grade, the check command) start
child processes."""
import csv
import importlib.util
import textwrap

import numpy as np
import pytest

import demos.exercises as exercises
from demos.exercises import __main__ as cli
from demos.exercises import catalogue, checker, grading, training
from demos.exercises.catalogue import CompareCase, seeded, swapped
from minigrad import autograd, kernels, ops

HEAD = "import numpy as np\nfrom minigrad import ops, ops_conv\nfrom minigrad.autograd import unbroadcast\n\n"


def source(body):
    return HEAD + textwrap.dedent(body)


# ============================================================================ learners' files
# written from the skeletons' docstrings with numpy only: what a learner who got it right hands in
SOLVED = {
    "mul": """
        class Mul(ops.Mul):
            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a
    """,
    "div": """
        class Div(ops.Div):
            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g / b, -g * a / (b * b)
    """,
    "pow": """
        class PowScalar(ops.PowScalar):
            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                c = ctx.exponent
                return np.zeros_like(g) if c == 0 else g * c * a ** (c - 1)
    """,
    "exp_log_tanh": """
        class Exp(ops.Exp):
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        class Log(ops.Log):
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g / x

        class Tanh(ops.Tanh):
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * (1 - y * y)
    """,
    "sum_mean": """
        def spread(g, ctx):
            kept = [1 if i in ctx.axes else n for i, n in enumerate(ctx.shape)]
            return np.broadcast_to(np.reshape(g, kept), ctx.shape)

        class Sum(ops.Sum):
            @staticmethod
            def backward(ctx, g):
                return spread(g, ctx)

        class Mean(ops.Mean):
            @staticmethod
            def backward(ctx, g):
                return spread(g, ctx) / ctx.count
    """,
    "matmul": """
        class MatMul(ops.MatMul):
            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ g
    """,
    "rnn_cell": """
        class RNNTanhCell(ops.RNNTanhCell):
            @staticmethod
            def backward(ctx, g):
                x, h, w_ih, w_hh, y = ctx.saved_tensors
                x2, h2 = x.reshape(-1, x.shape[-1]), h.reshape(-1, h.shape[-1])
                g2, y2 = g.reshape(-1, y.shape[-1]), y.reshape(-1, y.shape[-1])
                da = g2 * (1 - y2 * y2)
                dx2, dh2 = da @ w_ih, da @ w_hh
                grads = (dx2.reshape(x.shape), dh2.reshape(h.shape), da.T @ x2, da.T @ h2)
                if len(ctx.needs_input_grad) == 4:
                    return grads
                db = da.sum(axis=0)
                return grads + (db, db)
    """,
    "softmax": """
        class Softmax(ops.Softmax):
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                g_rows = np.moveaxis(g, ctx.axis, -1).reshape(y.shape)
                dx_rows = y * (g_rows - (g_rows * y).sum(axis=-1, keepdims=True))
                return np.moveaxis(dx_rows.reshape(ctx.moved_shape), -1, ctx.axis)
    """,
    "cross_entropy": """
        class LogSoftmax(ops.LogSoftmax):
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                g_rows = np.moveaxis(g, ctx.axis, -1).reshape(y.shape)
                dx_rows = g_rows - np.exp(y) * g_rows.sum(axis=-1, keepdims=True)
                return np.moveaxis(dx_rows.reshape(ctx.moved_shape), -1, ctx.axis)

        class CrossEntropy(ops.CrossEntropy):
            @staticmethod
            def backward(ctx, g):
                rows, ids, lse = ctx.saved_tensors
                ignore_index, smoothing, reduction, shape = ctx.settings
                if reduction == "none":
                    per_row = np.reshape(g, -1)
                else:
                    per_row = np.full(len(ids), g / ctx.count if reduction == "mean" else g, dtype=rows.dtype)
                counted = ids != ignore_index
                target = np.full(rows.shape, smoothing / rows.shape[1])
                target[np.flatnonzero(counted), ids[counted]] += 1 - smoothing
                d = np.where(counted[:, None], np.exp(rows - lse[:, None]) - target, 0.0)
                return (d * per_row[:, None]).reshape(shape)
    """,
    "layer_norm": """
        class LayerNorm(ops.LayerNorm):
            @staticmethod
            def backward(ctx, g):
                x, weight, mean, rstd = ctx.saved_tensors
                d = x.shape[-1]
                x2, g2 = x.reshape(-1, d), g.reshape(-1, d)
                xhat = (x2 - mean[:, None]) * rstd[:, None]
                gh = g2 * weight
                dx2 = rstd[:, None] * (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True))
                return dx2.reshape(x.shape), (g2 * xhat).sum(axis=0), g2.sum(axis=0)
    """,
    "batch_norm": """
        class BatchNorm(ops.BatchNorm):
            @staticmethod
            def backward(ctx, g):
                xhat, weight, rstd = ctx.saved_tensors
                axes = (0,) + tuple(range(2, g.ndim))
                n = g.size // g.shape[1]
                w = weight.reshape((1, -1) + (1,) * (g.ndim - 2))
                gh = g * w
                dx = rstd / n * (n * gh - gh.sum(axis=axes, keepdims=True)
                                 - xhat * (gh * xhat).sum(axis=axes, keepdims=True))
                return dx, (g * xhat).sum(axis=axes), g.sum(axis=axes)
    """,
    "conv2d": """
        class Conv2d(ops_conv.Conv2d):
            @staticmethod
            def backward(ctx, g):
                cols, w2 = ctx.saved_tensors
                x_shape, w_shape, (kh, kw), (sh, sw), (top, left), (dh, dw), groups = ctx.shapes
                n, o, oh, ow = g.shape
                g2 = g.transpose(1, 0, 2, 3).reshape(groups, o // groups, n * oh * ow)
                dx = dweight = None
                if ctx.needs_input_grad[1]:
                    dweight = (g2 @ np.swapaxes(cols, 1, 2)).reshape(w_shape)
                if ctx.needs_input_grad[0]:
                    dcols = (np.swapaxes(w2, 1, 2) @ g2).reshape(-1, kh, kw, n, oh, ow)
                    c, h, w = x_shape[1:]
                    hp = max(top + h, (oh - 1) * sh + (kh - 1) * dh + 1)
                    wp = max(left + w, (ow - 1) * sw + (kw - 1) * dw + 1)
                    dxp = np.zeros((c, n, hp, wp))
                    for ki in range(kh):
                        for kj in range(kw):
                            dxp[:, :, ki * dh:ki * dh + (oh - 1) * sh + 1:sh,
                                kj * dw:kj * dw + (ow - 1) * sw + 1:sw] += dcols[:, ki, kj]
                    dx = dxp[:, :, top:top + h, left:left + w].transpose(1, 0, 2, 3)
                if len(ctx.needs_input_grad) == 2:
                    return dx, dweight
                return dx, dweight, g.sum(axis=(0, 2, 3))
    """,
    "max_pool2d": """
        class MaxPool2d(ops_conv.MaxPool2d):
            @staticmethod
            def backward(ctx, g, g_indices=None):
                n, c, h, w = ctx.shape
                dx = np.zeros((n * c, h * w))
                planes = np.arange(n * c)[:, None]
                np.add.at(dx, (planes, ctx.indices.reshape(n * c, -1)), g.reshape(n * c, -1))
                return dx.reshape(n, c, h, w)
    """,
    "embedding": """
        class Embedding(ops.Embedding):
            @staticmethod
            def backward(ctx, g):
                ids = ctx.ids.reshape(-1)
                g_rows = g.reshape(-1, ctx.shape[1])
                grad = np.zeros(ctx.shape, dtype=g.dtype)
                np.add.at(grad, ids, g_rows)
                return grad
    """,
    "attention": """
        class ScaledDotProductAttention(ops.ScaledDotProductAttention):
            @staticmethod
            def backward(ctx, g):
                q4, k4, v4, weights = ctx.saved_tensors
                g4 = g.reshape(q4.shape[:3] + v4.shape[3:])
                dv4 = np.swapaxes(weights, -1, -2) @ g4
                dw = g4 @ np.swapaxes(v4, -1, -2)
                ds = ctx.scale * weights * (dw - (dw * weights).sum(axis=-1, keepdims=True))
                dq4, dk4 = ds @ k4, np.swapaxes(ds, -1, -2) @ q4
                return tuple(d.reshape(ctx.batch + d.shape[-2:]) for d in (dq4, dk4, dv4))
    """,
    "backward_walk": """
        def topological_order(root):
            order, seen, stack = [], set(), [(root, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    order.append(node)
                elif id(node) not in seen:
                    seen.add(id(node))
                    stack.append((node, True))
                    if node._ctx is not None:
                        stack += [(p, False) for p in node._ctx.inputs if p.requires_grad and id(p) not in seen]
            return order

        def backward(root, grad=None, retain_graph=False):
            g = np.ones_like(root.data) if grad is None else np.asarray(getattr(grad, "data", grad), dtype=root.dtype)
            grads = {id(root): g}
            for node in reversed(topological_order(root)):
                g = grads.pop(id(node), None)
                if g is None:
                    continue
                ctx = node._ctx
                if ctx is None:
                    node.grad = np.array(g) if node.grad is None else node.grad + g
                    continue
                input_grads = ctx.fn.backward(ctx, g)
                if not isinstance(input_grads, tuple):
                    input_grads = (input_grads,)
                for parent, pg in zip(ctx.inputs, input_grads):
                    if pg is not None and parent.requires_grad:
                        pg = unbroadcast(np.asarray(pg), parent.shape)
                        grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
    """,
    "adam": """
        def adam_update(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
            if weight_decay and decoupled:
                param *= 1 - lr * weight_decay
            elif weight_decay:
                grad = grad + weight_decay * param
            exp_avg *= beta1
            exp_avg += (1 - beta1) * grad
            exp_avg_sq *= beta2
            exp_avg_sq += (1 - beta2) * grad * grad
            m_hat, v_hat = exp_avg / (1 - beta1 ** step), exp_avg_sq / (1 - beta2 ** step)
            param -= lr * m_hat / (np.sqrt(v_hat) + eps)
    """,
}

# one planted mistake per exercise (two for some): (exercise, what to replace in SOLVED, by what,
# the input the report must name)
PLANTED = [
    ("mul", "return g * b, g * a", "return g * b, g * b", "b"),  # the wrong factor for b
    ("div", "-g * a / (b * b)", "g * a / (b * b)", "b"),  # a sign error
    ("pow", "a ** (c - 1)", "a ** c", "a"),  # the exponent not lowered
    ("exp_log_tanh", "g * (1 - y * y)", "g * (1 - y)", "x"),  # tanh' as 1 - y
    ("sum_mean", "np.broadcast_to(np.reshape(g, kept), ctx.shape)", "np.broadcast_to(g, ctx.shape)", "x"),
    ("sum_mean", "spread(g, ctx) / ctx.count", "spread(g, ctx)", "x"),  # mean without 1/n
    ("matmul", "g @ np.swapaxes(b, -1, -2)", "g @ b", "a"),  # a missing transpose
    ("rnn_cell", "g2 * (1 - y2 * y2)", "g2 * (1 - y2)", "x"),  # tanh' as 1 - y
    ("rnn_cell", "da @ w_hh", "da @ w_hh.T", "h"),  # the recurrent weight the wrong way round
    ("rnn_cell", "da.T @ x2, da.T @ h2", "da.T @ x2, h2.T @ da", "w_hh"),  # dW_hh transposed (square: no error)
    ("rnn_cell", "db = da.sum(axis=0)", "db = g2.sum(axis=0)", "b_ih"),  # the bias skips the tanh
    ("softmax", "y * (g_rows - (g_rows * y).sum(axis=-1, keepdims=True))", "y * g_rows", "x"),
    ("cross_entropy", "np.exp(rows - lse[:, None]) - target", "np.exp(rows - lse[:, None])", "logits"),
    ("cross_entropy", "np.where(counted[:, None], np.exp(rows - lse[:, None]) - target, 0.0)",
     "np.exp(rows - lse[:, None]) - target", "logits"),  # ignored rows not zeroed
    ("cross_entropy", "g_rows - np.exp(y) * g_rows.sum(axis=-1, keepdims=True)", "g_rows - np.exp(y)", "x"),
    ("layer_norm", "(g2 * xhat).sum(axis=0)", "g2.sum(axis=0)", "weight"),
    ("layer_norm", "- xhat * (gh * xhat).mean(-1, keepdims=True)", "", "x"),  # the variance's path forgotten
    ("batch_norm", "- xhat * (gh * xhat).sum(axis=axes, keepdims=True)", "", "x"),  # the variance's path forgotten
    ("batch_norm", "n = g.size // g.shape[1]", "n = g.shape[0]", "x"),  # n as the batch size, not N * L
    ("batch_norm", "return dx, (g * xhat).sum(axis=axes)", "return dx, g.sum(axis=axes)", "weight"),  # xhat forgotten
    ("conv2d", "dxp[:, :, top:top + h, left:left + w]", "dxp[:, :, :h, :w]", "x"),  # the padding not cut off
    ("conv2d", "(oh - 1) * sh + 1:sh,", "oh,", "x"),  # the stride forgotten: windows taken as neighbours
    ("conv2d", "ki * dh:ki * dh", "ki:ki", "x"),  # the dilation forgotten
    ("conv2d", "return dx, dweight, g.sum(axis=(0, 2, 3))", "return dx, dweight, g.mean(axis=(0, 2, 3))", "bias"),
    ("conv2d", "g2 @ np.swapaxes(cols, 1, 2)", "g2 @ np.swapaxes(cols, 1, 2) / n", "weight"),  # a mean, not a sum
    ("max_pool2d", "np.add.at(dx, (planes, ctx.indices.reshape(n * c, -1)), g.reshape(n * c, -1))",
     "dx[planes, ctx.indices.reshape(n * c, -1)] = g.reshape(n * c, -1)", "x"),  # overlapping windows overwrite
    ("max_pool2d", "planes = np.arange(n * c)[:, None]", "planes = 0", "x"),  # every window into plane 0
    ("embedding", "np.add.at(grad, ids, g_rows)", "grad[ids] = g_rows", "weight"),  # repeats overwrite
    ("attention", "ds = ctx.scale * weights", "ds = weights", "q"),  # the scale forgotten
    ("attention", "(dw - (dw * weights).sum(axis=-1, keepdims=True))", "dw", "q"),  # softmax's row term forgotten
    ("attention", "np.swapaxes(weights, -1, -2) @ g4", "np.swapaxes(weights, -1, -2) @ g4 * 2", "v"),
    ("backward_walk", "grads[id(parent)] + pg if id(parent) in grads else pg", "pg", "x"),  # no accumulation
    ("backward_walk", "unbroadcast(np.asarray(pg), parent.shape)", "np.asarray(pg)", "x"),  # no un-broadcast
    ("adam", "m_hat, v_hat = exp_avg / (1 - beta1 ** step), exp_avg_sq / (1 - beta2 ** step)",
     "m_hat, v_hat = exp_avg, exp_avg_sq", "param"),  # no bias correction
    ("adam", "param *= 1 - lr * weight_decay", "grad = grad + weight_decay * param", "param"),  # AdamW as Adam
]


def write(tmp_path, name, text, folder="learner"):
    path = tmp_path / folder / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def planted_source(name, old, new):
    solved = source(SOLVED[name])
    assert old in solved, (name, old)  # the plant must change something
    return solved.replace(old, new)


def gradients(exercise, case, ns):
    """The gradients (or arrays) a case produces with the code in ns, as the checker computes them."""
    if isinstance(case, CompareCase):
        return case.run(ns)
    tensors = case.inputs(seeded(case.name))
    with swapped(exercise, ns, functions_only=True), np.errstate(all="ignore"):
        out = case.run(ns, *tensors.values())
        out.backward(np.random.default_rng(0).standard_normal(out.shape))
    return {name: t.grad for name, t in tensors.items()}


# ============================================================================ the catalogue
def test_at_least_ten_exercises_each_with_skeleton_hint_and_cases():
    names = [e.name for e in catalogue.EXERCISES]
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert set(SOLVED) == set(names)
    for e in catalogue.EXERCISES:
        assert e.skeleton.is_file() and e.cases and e.hint and e.minutes > 0
        text = e.skeleton.read_text()
        assert "NotImplementedError" in text and "python -m demos.exercises check " + e.name in text
        for part in e.parts:
            assert (f"class {part.name}({part.base})" if part.is_op
                    else f"def {part.name}(") in text


def test_the_reference_is_the_engines_own_code():
    ns = catalogue.get("softmax").reference()
    assert ns.Softmax is ops.Softmax
    assert catalogue.get("backward_walk").reference().backward is autograd.backward


# ============================================================================ check
@pytest.mark.parametrize("exercise", catalogue.EXERCISES, ids=lambda e: e.name)
def test_untouched_skeleton_fails_cleanly(exercise):
    result = checker.check_file(exercise, exercise.skeleton)
    assert not result.ok and result.error is None
    assert result.unfinished == exercise.parts[0].label
    report = checker.format_result(result, exercise)
    assert "\n" not in report and "not written yet" in report and "Traceback" not in report


@pytest.mark.parametrize("exercise", catalogue.EXERCISES, ids=lambda e: e.name)
def test_reference_solution_passes(exercise):
    result = checker.check_module(exercise, exercise.reference())
    assert result.ok, result.first_failure()
    assert result.passed == [c.name for c in exercise.cases]


@pytest.mark.parametrize("exercise", catalogue.EXERCISES, ids=lambda e: e.name)
def test_a_learners_solution_from_the_skeleton_passes(exercise, tmp_path):
    result = checker.check_file(exercise, write(tmp_path, exercise.name, source(SOLVED[exercise.name])))
    assert result.ok, result.first_failure()
    assert checker.format_result(result, exercise).splitlines()[-1].startswith(f"{exercise.name}: ok")


@pytest.mark.parametrize("name, old, new, input_name", PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)])
def test_planted_mistake_is_found_and_located(name, old, new, input_name, tmp_path):
    exercise = catalogue.get(name)
    path = write(tmp_path, name, planted_source(name, old, new))
    result = checker.check_file(exercise, path)
    assert not result.ok and result.error is None and result.unfinished is None
    first = result.failures[0]
    assert first.input == input_name, first.line()
    assert first.hint
    report = checker.format_result(result, exercise)
    assert f"first failure: {first.case}" in report and "hint:" in report
    if first.index is None:  # a gradient of the wrong shape: named, with both shapes
        assert "shape" in first.message and input_name in first.message
        return
    # the element named really is wrong: expected is the engine's gradient there, got the plant's
    case = next(c for c in exercise.cases if c.name == first.case)
    right = np.asarray(gradients(exercise, case, exercise.reference())[input_name], dtype=np.float64)
    wrong = np.asarray(gradients(exercise, case, checker.load(path))[input_name], dtype=np.float64)
    index = tuple(first.index)
    assert first.expected == pytest.approx(right[index], rel=1e-3, abs=1e-5)
    assert first.got == pytest.approx(wrong[index], rel=1e-9, abs=1e-12)
    assert not np.isclose(right[index], wrong[index], rtol=1e-3, atol=1e-5)
    assert f"element {index}" in report and f"input {input_name}" in report
    assert 0 < first.wrong <= first.total == right.size


def test_planted_embedding_and_ignore_index_point_at_the_right_rows(tmp_path):
    exercise = catalogue.get("embedding")
    result = checker.check_file(exercise, write(tmp_path, "embedding", planted_source(
        "embedding", "np.add.at(grad, ids, g_rows)", "grad[ids] = g_rows")))
    first = result.failures[0]
    assert first.case == "ids (2, 3) with repeats" and first.index[0] in (1, 4)  # the repeated ids
    exercise = catalogue.get("cross_entropy")
    result = checker.check_file(exercise, write(tmp_path, "cross_entropy", planted_source(
        "cross_entropy", "np.where(counted[:, None], np.exp(rows - lse[:, None]) - target, 0.0)",
        "np.exp(rows - lse[:, None]) - target")))
    first = result.failures[0]
    assert first.case.startswith("targets equal to ignore_index") and first.index[0] in (1, 3)  # ignored rows


def test_a_raising_backward_fails_its_case_and_the_check_goes_on(tmp_path):
    exercise = catalogue.get("exp_log_tanh")
    text = source(SOLVED["exp_log_tanh"]).replace("return g / x", "raise ValueError('bad idea')")
    result = checker.check_file(exercise, write(tmp_path, "exp_log_tanh", text))
    failed = [f.case for f in result.failures]
    assert failed == ["log of x (3, 4), x > 0", "tanh(log(exp(x))) of x (5,)"]
    assert "ValueError: bad idea" in result.failures[0].message and "in Log.backward" in result.failures[0].message
    assert "tanh of x (3, 4)" in result.passed


def test_a_case_of_several_ops_names_the_wrong_backward(tmp_path):
    pytest.importorskip("minigrad.opcheck")  # (minigrad's op-by-op check, where it exists)
    exercise = catalogue.get("exp_log_tanh")
    text = source(SOLVED["exp_log_tanh"]).replace("return g / x", "return g * x")
    result = checker.check_file(exercise, write(tmp_path, "exp_log_tanh", text))
    chain = next(f for f in result.failures if f.case.startswith("tanh(log(exp(x)))"))
    assert chain.blame == "Log.backward"


@pytest.mark.parametrize("text, expected", [
    ("x = 1 / 0\n", "the file raised at import: ZeroDivisionError: division by zero (line 5)"),
    ("def broken(:\n", "the file raised at import: SyntaxError"),
    ("import sys\nsys.exit(3)\n", "the file raised at import: SystemExit: 3"),
    ("class Mul:\n    pass\n", "Mul must be a subclass of minigrad.ops.Mul"),
    ("Mul = None\n", "the file defines no class Mul"),
    ("class Mul(ops.Mul):\n    @staticmethod\n    def forward(ctx, a, b):\n        return a\n", "redefines forward"),
])
def test_files_that_cannot_be_checked_say_why(tmp_path, text, expected):
    result = checker.check_file(catalogue.get("mul"), write(tmp_path, "mul", HEAD + text))
    assert not result.ok and expected in result.error


def test_an_op_of_ops_conv_is_named_by_its_own_module(tmp_path):
    result = checker.check_file(catalogue.get("conv2d"), write(tmp_path, "conv2d", HEAD + "class Conv2d:\n    pass\n"))
    assert result.error == "Conv2d must be a subclass of minigrad.ops_conv.Conv2d, whose forward it keeps"
    assert catalogue.get("conv2d").parts[0].base == "ops_conv.Conv2d" and catalogue.get("mul").parts[0].base == "ops.Mul"


# ============================================================================ train
def _runs_other_code(exercise):
    """True if the reference swapped in is another implementation than the one the engine runs:
    Adam's reference is the kernel's numpy twin, the engine's is the compiled kernel (on the numba
    backend). Every other reference is the engine's own function or op class."""
    return any(p.patch is not None and p.patch[0] is kernels
               and kernels.implementation(p.patch[1]) is not kernels.implementation(p.patch[1], "numpy")
               for p in exercise.parts)


# Two implementations of one float64 formula differ by rounding only: a compiled kernel may contract
# a * b + c into one FMA, numpy rounds twice. Each Adam update then differs by a few ulp of itself
# (|u| <= lr (1 - beta1) / sqrt(1 - beta2) ~ 0.03 here), so after s = 3 steps a weight differs by
# at most ~ 4 s eps |u| ~ 1e-16, and a loss of size L ~ 5 by |dL/dw|_1 (about 130 for the MLP)
# times that: ~ 1e-14, or 3e-15 relative. 1e-12 relative leaves a margin of 300 (seen: 2e-16 on
# AVX-512, 2e-16 on Zen 3); a wrong update (no bias correction, say) moves the losses by > 1e-4.
OTHER_CODE_RTOL = 1e-12


NO_DIGITS = importlib.util.find_spec("sklearn") is None  # the CNN trains on the digits scikit-learn ships


def test_train_with_the_reference_matches_the_builtin_run_for_every_exercise():
    for exercise in catalogue.EXERCISES:
        if exercise.model == "cnn" and NO_DIGITS:
            continue
        result = training.train(exercise, exercise.reference(), steps=3)
        assert result.agree, exercise.name
        if _runs_other_code(exercise):
            np.testing.assert_allclose(result.learner, result.builtin, rtol=OTHER_CODE_RTOL, atol=0,
                                       err_msg=exercise.name)
        else:  # the same code ran twice: the same bits
            assert result.builtin == result.learner, exercise.name
        assert all(n > 0 for n in result.calls.values()), (exercise.name, result.calls)


@pytest.mark.parametrize("name, steps", [("softmax", 40), ("cross_entropy", 20), ("layer_norm", 10),
                                         ("batch_norm", 10), ("attention", 10), ("backward_walk", 20), ("adam", 20),
                                         ("conv2d", 10), ("max_pool2d", 10), ("rnn_cell", 10)])
def test_train_runs_the_learners_code_in_place_of_the_kernel(name, steps, tmp_path):
    exercise = catalogue.get(name)
    if exercise.model == "cnn" and NO_DIGITS:
        pytest.skip("the CNN trains on the digits, which come with scikit-learn")
    originals = [p.reference.__dict__["backward"] for p in exercise.parts if p.is_op]
    learner = checker.load(write(tmp_path, name, source(SOLVED[name])))
    result = training.train(exercise, learner, steps=steps)
    per_step = 3 if exercise.model == "gpt" and name == "layer_norm" else \
        2 if exercise.model == "cnn" else 1  # ln_1, ln_2, ln_f; the CNN's two convolutions and two poolings
    for label, calls in result.calls.items():
        assert calls >= steps * per_step, (label, calls)
    assert result.agree, training.format_train(result, exercise)
    assert np.allclose(result.learner, result.builtin, rtol=1e-6)
    # restored afterwards
    assert [p.reference.__dict__["backward"] for p in exercise.parts if p.is_op] == originals
    assert autograd.backward is catalogue.get("backward_walk").parts[0].reference
    assert kernels.adam_update.__module__ == "minigrad.kernels"
    assert "agree" in training.format_train(result, exercise)


def test_train_with_a_wrong_backward_differs_and_the_swap_is_undone_after_an_error(tmp_path):
    exercise = catalogue.get("softmax")
    original = ops.Softmax.__dict__["backward"]
    wrong = checker.load(write(tmp_path, "softmax", planted_source(
        "softmax", "y * (g_rows - (g_rows * y).sum(axis=-1, keepdims=True))", "y * g_rows")))
    result = training.train(exercise, wrong, steps=20)
    assert not result.agree and "differ" in training.format_train(result, exercise)
    raising = checker.load(write(tmp_path, "softmax", planted_source(
        "softmax", "dx_rows = y *", "raise RuntimeError('mine'); dx_rows = y *")))
    with pytest.raises(RuntimeError, match="mine"):
        training.train(exercise, raising, steps=2)
    assert ops.Softmax.__dict__["backward"] is original


# ============================================================================ the command and grading
def test_commands_start_check_solution_and_list(tmp_path, capsys):
    folder = str(tmp_path / "mine")
    assert cli.main(["start", "mul", "--dir", folder]) == 0
    assert cli.main(["start", "mul", "--dir", folder]) == 1  # never overwrites without --force
    assert "exists already" in capsys.readouterr().err
    assert cli.main(["check", "mul", "--dir", folder]) == 1
    assert capsys.readouterr().out.strip() == \
        f"mul: not written yet: Mul.backward raises NotImplementedError ({folder}/mul.py)"
    (tmp_path / "mine" / "mul.py").write_text(source(SOLVED["mul"]))
    assert cli.main(["start", "mul", "--dir", folder]) == 1
    assert cli.main(["check", "mul", "--dir", folder]) == 0  # (in a child process, with a time limit)
    out = capsys.readouterr().out
    assert "mul: ok, all 4 cases pass" in out and out.count("  ok  ") == 4
    assert exercises.check("mul", folder).ok  # the same from Python, for a notebook cell
    assert capsys.readouterr().out == out
    assert cli.main(["start", "mul", "--dir", folder, "--force"]) == 0
    assert "NotImplementedError" in (tmp_path / "mine" / "mul.py").read_text()

    assert cli.main(["solution", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "class Softmax(ops.Softmax)" in out and "def softmax_backward_numpy" in out

    (tmp_path / "mine" / "div.py").write_text(source(SOLVED["div"]))
    assert cli.main(["list", "--dir", folder]) == 0
    lines = capsys.readouterr().out.splitlines()[1:1 + len(catalogue.EXERCISES)]
    rows = {line.split()[1]: line.split()[3] for line in lines}
    assert len(rows) == len(catalogue.EXERCISES)
    assert rows["mul"] == "not" and rows["div"] == "passes" and rows["softmax"] == "-"


def test_grade_a_correct_a_wrong_a_crashing_and_a_hanging_submission(tmp_path):
    subs = tmp_path / "submissions"
    write(subs, "mul", source(SOLVED["mul"]), "ada")
    write(subs, "div", source(SOLVED["div"]), "ada")
    write(subs, "mul", planted_source("mul", "return g * b, g * a", "return g * b, g * b"), "bo")
    write(subs, "mul", source(SOLVED["mul"]).replace("a, b = ctx", "import os; os._exit(3)\n        a, b = ctx"), "cy")
    write(subs, "div", source(SOLVED["div"]), "cy")  # after the crash: still checked
    write(subs, "mul", source(SOLVED["mul"]).replace("a, b = ctx", "while True: pass\n        a, b = ctx"), "dee")
    write(subs, "div", source(SOLVED["div"]), "dee")  # after the hang: still checked
    write(subs, "notes", "not an exercise", "dee")
    out = tmp_path / "grades.csv"
    rows = grading.grade(subs, out, timeout=8)
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    assert table == rows and list(table[0]) == ["learner", "exercise", "passed", "first_failure"]
    got = {(r["learner"], r["exercise"]): (r["passed"], r["first_failure"]) for r in table}
    assert len(got) == 7
    assert got["ada", "mul"] == ("true", "") and got["ada", "div"] == ("true", "")
    assert got["bo", "mul"][0] == "false" and "input b, element" in got["bo", "mul"][1]
    assert got["cy", "mul"][0] == "false" and "ended (exit code 3)" in got["cy", "mul"][1]
    assert got["dee", "mul"] == ("false", "timed out after 8 s (an endless loop?)")
    assert got["cy", "div"] == ("true", "") and got["dee", "div"] == ("true", "")
    assert "ada      2 of 2" in grading.summary(rows)
