"""The exercises, easiest first: what the learner writes, the real code it comes from, and the
cases `check` runs.

An exercise's `parts` are the names the learner's file defines: a subclass of an op of
minigrad/ops.py or minigrad/ops_conv.py that inherits the op's forward and writes `backward`, or a function with the
signature of one of the engine's own (the backward walk, the Adam step). `reference()` is the
engine's own code under those same names, so the reference solution is the op itself and there is
no second copy to keep in step with it.

A case is either a `GradCase`, a float64 gradient check of every element of every input (the
learner's backward against central differences), or a `CompareCase`, arrays from the learner's
code against the same arrays from the reference (the Adam step has no gradient to check).
"""
import contextlib
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np

import minigrad
from minigrad import autograd, kernels, ops, ops_conv
from minigrad.ops_conv import output_size

SKELETONS = Path(__file__).with_name("skeletons")


# ============================================================================ what an exercise is
@dataclass(frozen=True)
class Part:
    """One thing the learner writes. `reference` is the engine's own: an op class (the learner
    subclasses it and writes `backward`) or a function (the learner writes one like it).
    `patch` (functions only): (module, attribute) where the engine looks the function up, so that
    `train` can put the learner's in its place. `shows`: more of the engine's code that the
    reference calls, printed by `solution` (after the reference itself, if `show_reference`): functions,
    or "module:name" strings, looked up when printed (a name the module lacks is left out)."""

    name: str
    reference: object
    patch: tuple = None
    shows: tuple = ()
    show_reference: bool = True

    @property
    def is_op(self):
        return isinstance(self.reference, type)

    @property
    def base(self):
        """How the learner's file names the op it subclasses: "ops.Softmax", "ops_conv.Conv2d"."""
        return f"{self.reference.__module__.rsplit('.', 1)[-1]}.{self.reference.__name__}"

    @property
    def label(self):
        """How reports name it: "Softmax.backward", or the function's name."""
        return f"{self.name}.backward" if self.is_op else self.name


@dataclass(frozen=True)
class GradCase:
    """inputs(rng) -> {name: float64 Tensor}; run(ns, *tensors) -> Tensor, using the learner's
    parts from the namespace `ns`. Every element of every input that requires grad is checked."""

    name: str
    inputs: Callable
    run: Callable
    hint: str = ""


@dataclass(frozen=True)
class CompareCase:
    """run(ns) -> {name: array}: the learner's arrays are compared with the reference's, element by
    element, |got - expected| <= atol + rtol |expected|."""

    name: str
    run: Callable
    hint: str = ""
    rtol: float = 1e-7
    atol: float = 1e-10


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str  # one line, for `list`
    parts: tuple
    cases: tuple
    hint: str  # printed under a failure
    minutes: int  # about how long a learner takes, for the teacher's guide
    model: str = None  # what `train` trains with the learner's code: "mlp", "gpt", "rnn" (see training.py)
    loss: str = "softmax"  # the mlp's loss (training.py)

    @property
    def skeleton(self):
        """The file `start` copies for the learner."""
        return SKELETONS / f"{self.name}.py"

    def reference(self):
        """The engine's own code under the names the learner's file uses: the reference solution."""
        return SimpleNamespace(**{p.name: p.reference for p in self.parts})


def seeded(case_name):
    """The random generator of a case: the same numbers in every process and every run."""
    return np.random.default_rng(zlib.crc32(case_name.encode()))


def leaf(array, requires_grad=True):
    return minigrad.tensor(np.asarray(array, dtype=np.float64), requires_grad=requires_grad)


def normal(rng, *shape):
    return leaf(rng.standard_normal(shape))


def positive(rng, *shape):
    return leaf(rng.uniform(0.5, 2.0, shape))


def away_from_zero(rng, *shape):
    """Values in [-2, -0.5] and [0.5, 2]: safe to divide by."""
    return leaf(rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape))


# ============================================================================ swapping the learner's code in
@contextlib.contextmanager
def swapped(exercise, ns, functions_only=False):
    """Within the block the engine runs the learner's code from namespace `ns` in place of its own:
    each op class of the exercise gets the learner's `backward` (so every `ops.Softmax.apply` in a
    model, whose backward would otherwise run a numba kernel, now runs the learner's numpy), and
    each function part replaces the engine's at `part.patch`. Yields {label: calls so far}, which
    counts the learner's code at work. Restored on exit, even after an error.

    Not thread-safe: the swap changes a class and a module for the whole process, so another thread
    that runs the op meanwhile gets the learner's backward too. `train` runs in one thread.
    """
    calls = {p.label: 0 for p in exercise.parts}
    restore = []

    def counting(label, fn):
        def counted(*args, **kwargs):
            calls[label] += 1
            return fn(*args, **kwargs)

        return counted

    try:
        for part in exercise.parts:
            mine = getattr(ns, part.name)
            if part.is_op:
                if functions_only:
                    continue
                original = part.reference.__dict__["backward"]
                mine = mine.__dict__.get("backward", original)
                mine = mine.__func__ if isinstance(mine, staticmethod) else mine
                restore.append((part.reference, "backward", original))
                setattr(part.reference, "backward", staticmethod(counting(part.label, mine)))
            else:
                module, attribute = part.patch
                restore.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, counting(part.label, mine))
        yield calls
    finally:
        for owner, attribute, original in reversed(restore):
            setattr(owner, attribute, original)


# ============================================================================ the exercises
def _x(shape, make=normal):
    return lambda rng: {"x": make(rng, *shape)}


def _ab(shape_a, shape_b, make_b=normal, b_grad=True):
    def inputs(rng):
        b = make_b(rng, *shape_b)
        return {"a": normal(rng, *shape_a), "b": b if b_grad else b.detach()}

    return inputs


MUL = Exercise(
    "mul", "a * b with broadcasting: the product rule, and where broadcast gradients go",
    parts=(Part("Mul", ops.Mul),),
    cases=(
        GradCase("a (3, 4) * b (3, 4)", _ab((3, 4), (3, 4)), lambda ns, a, b: ns.Mul.apply(a, b)),
        GradCase("a (3, 1) * b (4,): both broadcast to (3, 4)", _ab((3, 1), (4,)), lambda ns, a, b: ns.Mul.apply(a, b),
                 hint="return gradients shaped like the output; the walk sums each down to its input's shape"),
        GradCase("a (2, 3) * b (): a 0-d b", _ab((2, 3), ()), lambda ns, a, b: ns.Mul.apply(a, b)),
        GradCase("a (2, 3) * b (2, 3), b needs no gradient", _ab((2, 3), (2, 3), b_grad=False),
                 lambda ns, a, b: ns.Mul.apply(a, b), hint="ctx.needs_input_grad tells which inputs want one"),
    ),
    hint="nudge a by a small h: a * b moves by h * b. Which array multiplies g for a, which for b?",
    minutes=10, model="mlp",
)

DIV = Exercise(
    "div", "a / b with broadcasting: a quotient has two different derivatives",
    parts=(Part("Div", ops.Div),),
    cases=(
        GradCase("a (3, 4) / b (3, 4)", _ab((3, 4), (3, 4), away_from_zero), lambda ns, a, b: ns.Div.apply(a, b)),
        GradCase("a (3, 4) / b (4,): b broadcasts over the rows", _ab((3, 4), (4,), away_from_zero),
                 lambda ns, a, b: ns.Div.apply(a, b)),
        GradCase("a () / b (2, 3): a 0-d a", _ab((), (2, 3), away_from_zero), lambda ns, a, b: ns.Div.apply(a, b)),
    ),
    hint="a / b = a * b^-1: the a side is like mul; for b, differentiate b^-1 (mind the sign)",
    minutes=10, model="mlp",
)


def _power(make=normal, shape=(3, 4), zeros=False):
    def inputs(rng):
        x = make(rng, *shape)
        if zeros:
            x.data[0, :2] = 0.0
        return {"a": x}

    return inputs


POW = Exercise(
    "pow", "a ** c for a constant c, including c = 0 at a = 0",
    parts=(Part("PowScalar", ops.PowScalar),),
    cases=(
        GradCase("a (3, 4) ** 3", _power(), lambda ns, a: ns.PowScalar.apply(a, exponent=3)),
        GradCase("a (3, 4) ** 2", _power(), lambda ns, a: ns.PowScalar.apply(a, exponent=2)),
        GradCase("a (3, 4) ** 0.5, a > 0", _power(positive), lambda ns, a: ns.PowScalar.apply(a, exponent=0.5)),
        GradCase("a (3, 4) ** -1", _power(away_from_zero), lambda ns, a: ns.PowScalar.apply(a, exponent=-1)),
        GradCase("a (3, 4) ** 0 where some a are 0", _power(zeros=True),
                 lambda ns, a: ns.PowScalar.apply(a, exponent=0),
                 hint="a^0 = 1 for every a, so its gradient is 0 everywhere; 0 * 0^-1 is 0 * inf = NaN in numpy"),
    ),
    hint="the power rule; the exponent is in ctx.exponent",
    minutes=10, model="mlp",
)

EXP_LOG_TANH = Exercise(
    "exp_log_tanh", "exp, log and tanh: three one-line backwards, from what each forward saved",
    parts=(Part("Exp", ops.Exp), Part("Log", ops.Log), Part("Tanh", ops.Tanh)),
    cases=(
        GradCase("exp of x (3, 4)", _x((3, 4)), lambda ns, x: ns.Exp.apply(x)),
        GradCase("log of x (3, 4), x > 0", _x((3, 4), positive), lambda ns, x: ns.Log.apply(x)),
        GradCase("tanh of x (3, 4)", _x((3, 4)), lambda ns, x: ns.Tanh.apply(x)),
        GradCase("tanh of x (2, 3) far from 0 (saturated)", lambda rng: {"x": leaf(rng.choice([-1, 1], (2, 3)) * 6.0)},
                 lambda ns, x: ns.Tanh.apply(x)),
        GradCase("tanh(log(exp(x))) of x (5,)", _x((5,)), lambda ns, x: ns.Tanh.apply(ns.Log.apply(ns.Exp.apply(x)))),
    ),
    hint="each forward saved either its input or its output (look at ctx.saved_tensors in ops.py); "
         "write each derivative in terms of what was saved",
    minutes=10, model="mlp",
)


def _reduce_case(op, shape, axis, keepdims=False):
    name = f"{op.lower()} of x {shape} over " + ("everything" if axis is None else f"axis {axis}") + \
        (", keepdims" if keepdims else "")
    return GradCase(name, _x(shape), lambda ns, x: getattr(ns, op).apply(x, axis=axis, keepdims=keepdims))


SUM_MEAN = Exercise(
    "sum_mean", "sum and mean over axes: copying g back over the reduced axes",
    parts=(Part("Sum", ops.Sum), Part("Mean", ops.Mean)),
    cases=(
        _reduce_case("Sum", (4, 4), 1),
        _reduce_case("Sum", (3, 4, 5), 1),
        _reduce_case("Sum", (3, 4, 5), (0, 2), keepdims=True),
        _reduce_case("Sum", (2, 3), None),
        _reduce_case("Mean", (3, 4, 5), -1),
        _reduce_case("Mean", (4, 4), 1),
        _reduce_case("Mean", (2, 3, 4), (0, 1), keepdims=True),
        _reduce_case("Mean", (2, 3), None),
    ),
    hint="g has the reduced shape; put the reduced axes back as size 1 (ctx.axes, ctx.shape) so that g "
         "lines up with the axes it came from, then spread it over the input's shape",
    minutes=15, model="mlp",
)

MATMUL = Exercise(
    "matmul", "a @ b, batched: which transpose goes where",
    parts=(Part("MatMul", ops.MatMul),),
    cases=(
        GradCase("a (2, 3, 4) @ b (4, 4): a batch against one matrix", _ab((2, 3, 4), (4, 4)),
                 lambda ns, a, b: ns.MatMul.apply(a, b)),
        GradCase("a (3, 4) @ b (4, 5)", _ab((3, 4), (4, 5)), lambda ns, a, b: ns.MatMul.apply(a, b)),
        GradCase("a (2, 3, 4) @ b (2, 4, 5): batched", _ab((2, 3, 4), (2, 4, 5)),
                 lambda ns, a, b: ns.MatMul.apply(a, b)),
        GradCase("a (2, 1, 3, 4) @ b (3, 4, 2): batch axes broadcast", _ab((2, 1, 3, 4), (3, 4, 2)),
                 lambda ns, a, b: ns.MatMul.apply(a, b)),
    ),
    hint="write y = a @ b for one element, y_mn = sum_k a_mk b_kn, and ask which g_mn each a_mk meets; "
         "check the shapes: the gradient for a has a's shape (..., M, K)",
    minutes=20, model="mlp",
)

SOFTMAX = Exercise(
    "softmax", "softmax along an axis: every output depends on every input of its row",
    parts=(Part("Softmax", ops.Softmax,
                shows=("minigrad.ops:_rowwise_backward", "minigrad.kernels.softmax:softmax_backward_numpy")),),
    cases=(
        GradCase("softmax of x (4, 5) over the last axis", _x((4, 5)), lambda ns, x: ns.Softmax.apply(x, axis=1)),
        GradCase("softmax of x (3, 4, 2) over axis 1", _x((3, 4, 2)), lambda ns, x: ns.Softmax.apply(x, axis=1)),
        GradCase("softmax of x (2, 6) with large values", lambda rng: {"x": leaf(3 * rng.standard_normal((2, 6)))},
                 lambda ns, x: ns.Softmax.apply(x, axis=1)),
        GradCase("softmax of x (3, 1): one class", _x((3, 1)), lambda ns, x: ns.Softmax.apply(x, axis=1),
                 hint="with one class y = 1 whatever x is: the gradient must be 0"),
    ),
    hint="dy_i/dx_j has the factor y_i, and one more term when i = j; then dx_j = sum_i g_i dy_i/dx_j",
    minutes=20, model="mlp",
)


def _ce_case(name, shape, targets, reduction="mean", smoothing=0.0, hint=""):
    def run(ns, logits):
        return ns.CrossEntropy.apply(logits, targets=np.array(targets, dtype=np.int64), ignore_index=-100,
                                     label_smoothing=smoothing, reduction=reduction)

    return GradCase(name, lambda rng: {"logits": normal(rng, *shape)}, run, hint)


CROSS_ENTROPY = Exercise(
    "cross_entropy", "log_softmax, and cross-entropy with targets, reductions, ignored ids and label smoothing",
    parts=(Part("LogSoftmax", ops.LogSoftmax,
                shows=("minigrad.ops:_rowwise_backward", "minigrad.kernels.softmax:log_softmax_backward_numpy")),
           Part("CrossEntropy", ops.CrossEntropy,
                shows=("minigrad.kernels.cross_entropy:cross_entropy_backward_numpy",))),
    cases=(
        GradCase("log_softmax of x (4, 5) over the last axis", _x((4, 5)),
                 lambda ns, x: ns.LogSoftmax.apply(x, axis=1)),
        GradCase("log_softmax of x (3, 4) over axis 0", _x((3, 4)), lambda ns, x: ns.LogSoftmax.apply(x, axis=0)),
        _ce_case("cross_entropy of logits (6, 5), mean", (6, 5), [0, 4, 2, 2, 1, 3]),
        _ce_case("cross_entropy of logits (2, 3, 5), sum", (2, 3, 5), [[0, 1, 2], [3, 4, 0]], reduction="sum"),
        _ce_case("cross_entropy of logits (4, 3), none", (4, 3), [2, 0, 1, 1], reduction="none"),
        _ce_case("targets equal to ignore_index (-100) count for nothing", (5, 4), [1, -100, 3, -100, 0],
                 hint="an ignored row has no loss, so no gradient; the mean divides by the rows counted"),
        _ce_case("label_smoothing 0.1", (4, 5), [0, 1, 2, 3], smoothing=0.1,
                 hint="the target distribution is (1 - eps) one_hot + eps / V"),
        _ce_case("every target ignored: loss 0", (2, 3), [-100, -100]),
    ),
    hint="the gradient of -log softmax(x)[t] is a probability minus a target probability; "
         "log_softmax: y = x - logsumexp(x), and e^y is the softmax",
    minutes=30, model="mlp", loss="cross_entropy",
)


def _layer_norm_inputs(shape, constant_row=False):
    def inputs(rng):
        x = normal(rng, *shape)
        if constant_row:
            x.data[0] = 0.7
        d = shape[-1]
        return {"x": x, "weight": leaf(rng.uniform(0.5, 1.5, d)), "bias": normal(rng, d)}

    return inputs


LAYER_NORM = Exercise(
    "layer_norm", "layer norm: the mean and the variance depend on every input of the row",
    parts=(Part("LayerNorm", ops.LayerNorm, shows=("minigrad.kernels.layernorm:layer_norm_backward_numpy",)),),
    cases=(
        GradCase("x (4, 6), weight and bias (6,)", _layer_norm_inputs((4, 6)),
                 lambda ns, x, w, b: ns.LayerNorm.apply(x, w, b)),
        GradCase("x (2, 3, 5): rows over the leading axes", _layer_norm_inputs((2, 3, 5)),
                 lambda ns, x, w, b: ns.LayerNorm.apply(x, w, b)),
        GradCase("eps 0.5", _layer_norm_inputs((3, 4)), lambda ns, x, w, b: ns.LayerNorm.apply(x, w, b, eps=0.5)),
        GradCase("a constant row (variance 0)", _layer_norm_inputs((3, 4), constant_row=True),
                 lambda ns, x, w, b: ns.LayerNorm.apply(x, w, b)),
    ),
    hint="with xhat = (x - mean) * rstd: weight and bias see xhat as a constant input of a mul and an add "
         "(summed over rows); for x, remember that mean and rstd move when any x of the row moves",
    minutes=40, model="gpt",
)


def _batch_norm_inputs(shape, constant_channel=False, affine_grad=True):
    def inputs(rng):
        x = 2.0 * rng.standard_normal(shape) + 1.0  # statistics away from 0 and 1: their terms matter
        if constant_channel:
            x[:, 0] = 0.7
        channels = shape[1]
        weight, bias = leaf(rng.uniform(0.5, 1.5, channels)), normal(rng, channels)
        if not affine_grad:
            weight, bias = weight.detach(), bias.detach()
        return {"x": leaf(x), "weight": weight, "bias": bias}

    return inputs


BATCH_NORM = Exercise(
    "batch_norm", "batch norm: each channel's mean and variance depend on the whole batch",
    parts=(Part("BatchNorm", ops.BatchNorm),),
    cases=(
        GradCase("x (8, 3): features, weight and bias (3,)", _batch_norm_inputs((8, 3)),
                 lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b)),
        GradCase("x (4, 3, 5): sequences, statistics over N and L", _batch_norm_inputs((4, 3, 5)),
                 lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b),
                 hint="n counts every value of a channel: N * L here, not N"),
        GradCase("x (2, 3, 2, 2): images", _batch_norm_inputs((2, 3, 2, 2)),
                 lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b)),
        GradCase("eps 0.5", _batch_norm_inputs((5, 2)), lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b, eps=0.5)),
        GradCase("weight and bias need no gradient", _batch_norm_inputs((6, 2), affine_grad=False),
                 lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b), hint="ctx.needs_input_grad tells which want one"),
        GradCase("a constant channel (variance 0)", _batch_norm_inputs((4, 3), constant_channel=True),
                 lambda ns, x, w, b: ns.BatchNorm.apply(x, w, b)),
    ),
    hint="with gh = g * weight: dx = rstd / n * (n gh - sum(gh) - xhat sum(gh xhat)), each sum over a "
         "channel's n values; the two sums are the mean's and the variance's paths back to every x",
    minutes=30, model="mlp_bn",
)


def _conv_case(name, x, weight, bias=True, stride=1, padding=0, dilation=1, groups=1, weight_grad=True, hint=""):
    def inputs(rng):
        w = normal(rng, *weight)
        tensors = {"x": normal(rng, *x), "weight": w if weight_grad else w.detach()}
        if bias:
            tensors["bias"] = normal(rng, weight[0])
        return tensors

    def run(ns, *tensors):
        return ns.Conv2d.apply(*tensors, stride=(stride, stride), padding=(padding,) * 4,
                               dilation=(dilation, dilation), groups=groups)

    return GradCase(name, inputs, run, hint)


CONV2D = Exercise(
    "conv2d", "a 2-D convolution: a matrix product on the windows, and the windows added back",
    parts=(Part("Conv2d", ops_conv.Conv2d, shows=("minigrad.kernels.conv:col2im_numpy",)),),
    cases=(
        _conv_case("x (2, 2, 5, 5), weight (3, 2, 3, 3), bias (3,)", (2, 2, 5, 5), (3, 2, 3, 3)),
        _conv_case("stride 2", (1, 2, 7, 7), (2, 2, 3, 3), stride=2,
                   hint="window (i, j) starts at row i * stride: so does the slice its gradient goes back to"),
        _conv_case("padding 1", (2, 1, 4, 4), (2, 1, 3, 3), padding=1,
                   hint="the padding is not part of x: add into a padded array, then cut the border off"),
        _conv_case("dilation 2", (1, 2, 6, 6), (2, 2, 2, 2), dilation=2,
                   hint="tap (ki, kj) reads row i stride + ki dilation"),
        _conv_case("groups 2: x (1, 4, 4, 4), weight (4, 2, 2, 2)", (1, 4, 4, 4), (4, 2, 2, 2), groups=2),
        _conv_case("no bias: backward returns (dx, dweight)", (1, 2, 4, 4), (2, 2, 2, 2), bias=False),
        _conv_case("weight needs no gradient (cols was not saved)", (1, 2, 4, 4), (2, 2, 3, 3), weight_grad=False,
                   hint="ctx.needs_input_grad tells which inputs want a gradient; cols is None when the weight "
                        "wants none"),
    ),
    hint="the forward is a linear layer on the windows, y = W cols + b: dW = g cols^T, dcols = W^T g, db sums g; "
         "then every number of dcols goes back (added) to the place of x its window read",
    minutes=40, model="cnn",
)


def _pool_case(name, x, kernel, stride=None, padding=0, dilation=1, hint=""):
    stride = kernel if stride is None else stride
    out = tuple(output_size(n, kernel, stride, padding, padding, dilation) for n in x[2:])

    def run(ns, x):
        y, _ = ns.MaxPool2d.apply(x, kernel_size=(kernel, kernel), stride=(stride, stride), padding=(padding, padding),
                                  dilation=(dilation, dilation), out_size=out)
        return y

    return GradCase(name, _x(x), run, hint)


MAX_POOL2D = Exercise(
    "max_pool2d", "2-D max pooling: each window's gradient goes to its largest input",
    parts=(Part("MaxPool2d", ops_conv.MaxPool2d),),
    cases=(
        _pool_case("x (2, 3, 4, 4), kernel 2", (2, 3, 4, 4), 2),
        _pool_case("kernel 3, stride 1: the windows overlap", (1, 2, 5, 5), 3, stride=1,
                   hint="an input that is the max of several windows gets all their gradients, added"),
        _pool_case("x (1, 2, 5, 7), kernel 3, stride 2", (1, 2, 5, 7), 3, stride=2),
        _pool_case("padding 1", (2, 1, 4, 4), 2, stride=1, padding=1),
        _pool_case("dilation 2", (1, 2, 6, 6), 2, stride=1, dilation=2),
    ),
    hint="ctx.indices says where each window's max sits in its (H, W) plane: add g there "
         "(np.add.at adds repeats; dx[...] = g keeps only one)",
    minutes=15, model="cnn",
)


def _embedding_case(name, rows, ids, hint=""):
    ids = np.array(ids, dtype=np.int64)
    return GradCase(name, lambda rng: {"weight": normal(rng, rows, 3)},
                    lambda ns, w: ns.Embedding.apply(w, ids=ids), hint)


EMBEDDING = Exercise(
    "embedding", "embedding lookup: a scatter-add of the rows' gradients",
    parts=(Part("Embedding", ops.Embedding, shows=("minigrad.kernels.embedding:embedding_backward_numpy",)),),
    cases=(
        _embedding_case("weight (5, 3) by ids (4,)", 5, [3, 0, 4, 1]),
        _embedding_case("ids (2, 3) with repeats", 6, [[1, 4, 1], [5, 1, 4]],
                        hint="an id used twice gets both gradients, added: `grad[ids] = ...` keeps only one"),
        _embedding_case("every id the same", 3, [2, 2, 2, 2]),
        _embedding_case("ids (2, 2, 2)", 4, [[[0, 3], [3, 3]], [[1, 0], [2, 0]]]),
    ),
    hint="row r of the gradient is the sum of g over every position whose id is r (np.add.at adds repeats)",
    minutes=15, model="mlp",
)


def _attention_inputs(q, k, v):
    return lambda rng: {"q": normal(rng, *q), "k": normal(rng, *k), "v": normal(rng, *v)}


def _attention(mask=None, scale=None):
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    return lambda ns, q, k, v: ns.ScaledDotProductAttention.apply(q, k, v, mask=mask, scale=scale)


_CAUSAL = np.tril(np.ones((4, 4), dtype=bool))
_NO_KEY = np.array([[True, True, False], [False, False, False]])  # query 1 may attend to nothing

ATTENTION = Exercise(
    "attention", "scaled dot-product attention: two matmuls and a softmax, backwards, with a mask",
    parts=(Part("ScaledDotProductAttention", ops.ScaledDotProductAttention,
                shows=("minigrad.kernels.attention:attention_backward_numpy",)),),
    cases=(
        GradCase("q (2, 3, 4), k (2, 5, 4), v (2, 5, 3)", _attention_inputs((2, 3, 4), (2, 5, 4), (2, 5, 3)),
                 _attention()),
        GradCase("(batch, heads) = (1, 2) with a causal mask",
                 _attention_inputs((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3)),
                 _attention(_CAUSAL)),
        GradCase("scale 0.5", _attention_inputs((3, 2), (4, 2), (4, 3)), _attention(scale=0.5)),
        GradCase("k, v (1, 5, 4) shared by q (2, 3, 4)", _attention_inputs((2, 3, 4), (1, 5, 4), (1, 5, 4)),
                 _attention()),
        GradCase("a query that may attend to no key", _attention_inputs((2, 3), (3, 3), (3, 2)), _attention(_NO_KEY),
                 hint="a query with no allowed key has weights 0 and output 0: its gradients are 0"),
    ),
    hint="go back one step at a time: out = W V, W = softmax(S) per row (masked weights are 0), "
         "S = scale Q K^T; each step is an exercise you have done",
    minutes=40, model="gpt",
)


# ---------------------------------------------------------------------------- the walk
def _twice(ns):
    """backward twice from two graphs: the leaf's .grad holds the sum."""
    x = leaf(seeded("twice").standard_normal((2, 3)))
    for _ in range(2):
        ns.backward((x * x).sum())
    return {"x.grad": x.grad}


def _not_wanted(ns):
    """a leaf that does not require grad gets no .grad (here: zeros would be as wrong as any)."""
    x = leaf(seeded("no grad").standard_normal(3))
    c = leaf([1.0, 2.0, 3.0], requires_grad=False)
    ns.backward((x * c).sum())
    return {"x.grad": x.grad, "c.grad is None": np.array(c.grad is None)}


WALK = Exercise(
    "backward_walk", "the backward walk: topological order and gradient accumulation",
    parts=(Part("backward", autograd.backward, patch=(autograd, "backward"),
                shows=("minigrad.autograd:_walk", "minigrad.autograd:_topological_order",
                       "minigrad.autograd:_accumulate")),),
    cases=(
        GradCase("a chain: tanh(x * y) * 2", lambda rng: {"x": normal(rng, 3), "y": normal(rng, 3)},
                 lambda ns, x, y: (x * y).tanh() * 2.0),
        GradCase("x used twice: x * x + x", _x((2, 3)), lambda ns, x: x * x + x,
                 hint="a tensor used by two ops gets a gradient from each: add them up"),
        GradCase("a diamond: h = tanh(x); h * y + exp(h)", lambda rng: {"x": normal(rng, 4), "y": normal(rng, 4)},
                 lambda ns, x, y: (lambda h: h * y + h.exp())(x.tanh()),
                 hint="h's backward may run only once both users of h have added their gradient: reverse "
                      "topological order"),
        GradCase("a long shared chain: h = x * 2, h2 = h * h, h2 * h + h", _x((3,)),
                 lambda ns, x: (lambda h: (lambda h2: h2 * h + h)(h * h))(x * 2.0)),
        GradCase("broadcasting: x (3, 1) + y (4,), times x", lambda rng: {"x": normal(rng, 3, 1), "y": normal(rng, 4)},
                 lambda ns, x, y: (x + y) * x,
                 hint="an op may return a gradient shaped like its broadcast output: unbroadcast it to the input"),
        GradCase("y needs no gradient", lambda rng: {"x": normal(rng, 3), "y": normal(rng, 3).detach()},
                 lambda ns, x, y: (x * y).exp()),
        CompareCase("backward twice: the leaf's .grad adds up", _twice,
                    hint="a leaf's .grad accumulates over backward calls; only zero_grad() resets it"),
        CompareCase("a leaf that needs no gradient gets no .grad", _not_wanted),
    ),
    hint="visit every tensor after all the ops that used it (a depth-first search gives the order); "
         "add each op's input gradients into a dict keyed by id(tensor)",
    minutes=40, model="mlp",
)


# ---------------------------------------------------------------------------- Adam
def adam_update(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    """The engine's Adam step on its numpy twin (kernels/adam.py), the one the tests prove equal to
    the compiled kernel; looked up when called, so that importing the exercises compiles nothing."""
    twin = kernels.implementation("adam_update", "numpy")
    return twin(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step)


def _adam_case(name, steps, weight_decay=0.0, decoupled=False, hint=""):
    def run(ns):
        rng = seeded(name)
        param = rng.standard_normal((3, 4))
        m, v = np.zeros_like(param), np.zeros_like(param)
        for step in range(1, steps + 1):
            ns.adam_update(param, rng.standard_normal((3, 4)), m, v, 0.01, 0.9, 0.999, 1e-8, weight_decay,
                           decoupled, step)
        return {"param": param, "exp_avg": m, "exp_avg_sq": v}

    return CompareCase(name, run, hint)


ADAM = Exercise(
    "adam", "one Adam / AdamW step: moving averages, bias correction, weight decay",
    parts=(Part("adam_update", adam_update, patch=(kernels, "adam_update"),
                shows=("minigrad.kernels.adam:adam_update_numpy",), show_reference=False),),
    cases=(
        _adam_case("the first step", 1),
        _adam_case("five steps (bias correction)", 5, hint="m and v start at 0: divide by 1 - beta^t, t = step"),
        _adam_case("Adam, weight_decay 0.1 (an L2 term in g)", 3, weight_decay=0.1),
        _adam_case("AdamW, weight_decay 0.1 (decoupled)", 3, weight_decay=0.1, decoupled=True,
                   hint="AdamW shrinks the parameter itself by lr * weight_decay, before the Adam step"),
    ),
    hint="update m, v, then the parameter, all in place (param -= ..., not param = ...)",
    minutes=20, model="mlp",
)

# ---------------------------------------------------------------------------- one step of an RNN
def _rnn_inputs(lead, h_lead=None, bias=True, h_grad=True, scale=0.4, inputs=4, hidden=5):
    """x (*lead, inputs), h (*h_lead, hidden) (h_lead: lead by default) and the cell's weights,
    scaled by `scale` (0.4 keeps the tanh away from saturation, so that a wrong tanh' shows)."""
    def make(rng):
        t = {"x": normal(rng, *lead, inputs), "h": normal(rng, *(lead if h_lead is None else h_lead), hidden),
             "w_ih": leaf(scale * rng.standard_normal((hidden, inputs))),
             "w_hh": leaf(scale * rng.standard_normal((hidden, hidden)))}
        if not h_grad:
            t["h"] = t["h"].detach()
        if bias:
            t["b_ih"], t["b_hh"] = leaf(scale * rng.standard_normal(hidden)), leaf(scale * rng.standard_normal(hidden))
        return t

    return make


def _rnn_step(ns, x, h, w_ih, w_hh, *biases):
    return ns.RNNTanhCell.apply(x, h, w_ih, w_hh, *biases)


def _rnn_two_steps(ns, x, h, w_ih, w_hh, b_ih, b_hh):
    """x (2, N, I): two time steps through the same weights."""
    h1 = ns.RNNTanhCell.apply(x[0], h, w_ih, w_hh, b_ih, b_hh)
    return ns.RNNTanhCell.apply(x[1], h1, w_ih, w_hh, b_ih, b_hh)


RNN_CELL = Exercise(
    "rnn_cell", "one step of a tanh RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), and through time",
    parts=(Part("RNNTanhCell", ops.RNNTanhCell),),
    cases=(
        GradCase("x (3, 4), h (3, 5): a batch of 3", _rnn_inputs((3,)), _rnn_step),
        GradCase("unbatched: x (4,), h (5,)", _rnn_inputs(()), _rnn_step,
                 hint="fold x and h into rows (1, I) and (1, H) first; give dx and dh back their own shapes"),
        GradCase("no biases (bias=False): 4 inputs, 4 gradients", _rnn_inputs((3,), bias=False), _rnn_step,
                 hint="len(ctx.needs_input_grad) is 4: return (dx, dh, dW_ih, dW_hh)"),
        GradCase("h needs no gradient (a first step from zeros)", _rnn_inputs((2,), h_grad=False), _rnn_step),
        GradCase("a saturated step (large weights): tanh' near 0", _rnn_inputs((3,), scale=1.5), _rnn_step),
        GradCase("two steps through time: x (2, 3, 4), the weights shared", _rnn_inputs((2, 3), h_lead=(3,)),
                 _rnn_two_steps,
                 hint="dh is what reaches the step before; each step returns its own weight gradients (the walk "
                      "adds them up)"),
    ),
    hint="back through the tanh first: da = g (1 - y^2); then a is a sum of two Linear layers, "
         "x W_ih^T + b_ih and h W_hh^T + b_hh, that both get da",
    minutes=25, model="rnn",
)

EXERCISES = (MUL, DIV, POW, EXP_LOG_TANH, SUM_MEAN, MATMUL, RNN_CELL, SOFTMAX, CROSS_ENTROPY, LAYER_NORM,
             BATCH_NORM, MAX_POOL2D, CONV2D, EMBEDDING, ATTENTION, WALK, ADAM)
BY_NAME = {e.name: e for e in EXERCISES}


def get(name):
    """The exercise called `name`; a KeyError that lists them all otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(BY_NAME)}") from None
