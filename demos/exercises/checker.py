"""Checking a learner's file, in this process: `check_file(exercise, path)` -> `Result`.

For every case of the exercise (catalogue.py):
- a `GradCase` runs the learner's backward once and checks that each input's gradient has the
  input's shape, then `minigrad.gradcheck` compares it with central differences for every element
  in float64; the first element out of tolerance is reported with the numeric value (expected)
  and the learner's (got);
- a `CompareCase` compares the learner's arrays with the reference's, element by element.

A `NotImplementedError` from the learner's code means "not written yet" and stops the check
there; any other exception fails its case and the check goes on with the next one. Endless loops
cannot be caught in-process: `isolation.py` runs this in a child process with a time limit.
"""
import importlib.util
import inspect
import itertools
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import minigrad

from .catalogue import CompareCase, seeded, swapped

ATOL, RTOL = 1e-5, 1e-3  # minigrad.gradcheck's defaults, the rule that decides a GradCase


@dataclass
class Failure:
    """What went wrong in one case. For a wrong value: `input` (its name in the case), `index` (the
    first wrong element, in C order), `expected` and `got`, and how many elements are `wrong` of
    `total`; otherwise just `message`."""

    case: str
    message: str = ""
    input: str = None
    index: tuple = None
    expected: float = None
    got: float = None
    wrong: int = 0
    total: int = 0
    hint: str = ""
    blame: str = None  # the backward found wrong on its own, when the case runs several ops

    def line(self):
        """One line: the case, then where and what."""
        if self.index is None:
            return f"{self.case}: {self.message}"
        return (f"{self.case}: input {self.input}, element {tuple(self.index)}: expected {self.expected:.6g}, "
                f"got {self.got:.6g} ({self.wrong} of {self.total} elements wrong)")


@dataclass
class Result:
    exercise: str
    path: str
    passed: list = field(default_factory=list)  # names of the cases that passed
    failures: list = field(default_factory=list)  # Failure per failed case, in case order
    unfinished: str = None  # the learner's function that raises NotImplementedError
    error: str = None  # why the file could not be checked at all

    @property
    def ok(self):
        return not (self.failures or self.unfinished or self.error)

    def first_failure(self):
        """One line for the teacher's CSV; empty when the exercise passes."""
        if self.error:
            return self.error
        if self.unfinished:
            return f"not written yet ({self.unfinished} raises NotImplementedError)"
        return self.failures[0].line() if self.failures else ""

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["failures"] = [Failure(**f) for f in d["failures"]]
        return cls(**d)


# ============================================================================ loading the learner's file
_loaded = itertools.count()


def load(path):
    """The learner's file as a fresh module (a new one each call, so an edited file is re-read)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"minigrad_exercise_{path.stem}_{next(_loaded)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _problems_with(exercise, module):
    """Why the learner's module cannot be checked (a name missing, a forward replaced), or None."""
    for part in exercise.parts:
        mine = getattr(module, part.name, None)
        if mine is None:
            kind = "class" if part.is_op else "function"
            return (f"the file defines no {kind} {part.name} (start again from the skeleton with "
                    f"`start {exercise.name} --force`, after saving your work)")
        if part.is_op:
            op = f"{part.reference.__module__}.{part.reference.__name__}"
            if not (isinstance(mine, type) and issubclass(mine, part.reference)):
                return f"{part.name} must be a subclass of {op}, whose forward it keeps"
            if mine is not part.reference and "forward" in vars(mine):
                return f"{part.name} redefines forward; the exercise keeps {op}.forward: write backward only"
        elif not callable(mine):
            return f"{part.name} must be a function"
    return None


def check_file(exercise, path):
    """Load the learner's file and check it: a `Result`, whatever the file does (short of hanging)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = load(path)
    except NotImplementedError:
        return Result(exercise.name, str(path), unfinished=f"the file {Path(path).name}")
    except BaseException as e:  # noqa: B036  (a learner's sys.exit() at import is reported too)
        if isinstance(e, KeyboardInterrupt):
            raise
        return Result(exercise.name, str(path), error=f"the file raised at import: {_describe(e, path)}")
    problem = _problems_with(exercise, module)
    if problem:
        return Result(exercise.name, str(path), error=problem)
    return check_module(exercise, module, path)


def check_module(exercise, ns, path=""):
    """Run every case of `exercise` on the parts found in `ns` (a module or a namespace)."""
    result = Result(exercise.name, str(path))
    reference = exercise.reference()
    with swapped(exercise, ns, functions_only=True), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in exercise.cases:
            try:
                if isinstance(case, CompareCase):
                    failure = _compare_case(case, ns, reference)
                else:
                    failure = _grad_case(case, ns)
            except NotImplementedError as e:
                result.unfinished = _unfinished_where(e, path) or exercise.parts[0].label
                return result
            except Exception as e:
                failure = Failure(case.name, f"raised {_describe(e, path)}")
            if failure is None:
                result.passed.append(case.name)
            else:
                failure.hint = failure.hint or case.hint or exercise.hint
                result.failures.append(failure)
    return result


# ============================================================================ the two kinds of case
def _grad_case(case, ns):
    tensors = case.inputs(seeded(case.name))
    names, values = list(tensors), list(tensors.values())

    def fn(*inputs):
        return case.run(ns, *inputs)

    # one backward of our own first: a gradient of the wrong shape is named here (gradcheck
    # would compare it by broadcasting, or fail to find its element)
    out = fn(*values)
    out.backward(np.random.default_rng(0).standard_normal(out.shape))
    for name, t in zip(names, values):
        if t.requires_grad and t.grad is not None and t.grad.shape != t.shape:
            return Failure(case.name, f"the gradient of input {name} has shape {t.grad.shape}, expected "
                                      f"{name}'s shape {t.shape}", input=name)
        t.grad = None

    report = minigrad.gradcheck(fn, values, atol=ATOL, rtol=RTOL, raise_exception=False, **_NO_LOCATE)
    for r in report.inputs:
        if not r.passed:
            failure = _first_wrong(case.name, names[r.position], r.analytic, r.numeric, ATOL, RTOL)
            failure.blame = _blame(fn, values)
            return failure
    return None


# gradcheck's locate= and minigrad.opcheck, where this minigrad has them: the op whose backward is wrong
_NO_LOCATE = {"locate": False} if "locate" in inspect.signature(minigrad.gradcheck).parameters else {}


def _blame(fn, values):
    """'Tanh.backward' when a case runs several ops and one of them is found wrong on its own; None
    where this minigrad cannot tell (no opcheck) or finds none."""
    try:
        from minigrad.opcheck import find_bad_backward
    except ImportError:
        return None
    try:
        bad = getattr(find_bad_backward(fn, values, atol=ATOL, rtol=RTOL), "bad", None)
        return None if bad is None else f"{bad.name}.backward"
    except Exception:  # the learner's backward may break the search too: the failure itself is reported
        return None


def _compare_case(case, ns, reference):
    got, expected = case.run(ns), case.run(reference)
    for name, e in expected.items():
        g = got.get(name)
        if g is None:
            return Failure(case.name, f"{name} is None", input=name)
        g, e = np.asarray(g, dtype=np.float64), np.asarray(e, dtype=np.float64)
        if g.shape != e.shape:
            return Failure(case.name, f"{name} has shape {g.shape}, expected {e.shape}", input=name)
        failure = _first_wrong(case.name, name, g, e, case.atol, case.rtol)
        if failure:
            return failure
    return None


def _first_wrong(case_name, input_name, got, expected, atol, rtol):
    """The first element (C order) where |got - expected| > atol + rtol |expected|; NaN counts as wrong."""
    wrong = ~(np.abs(got - expected) <= atol + rtol * np.abs(expected))
    if not wrong.any():
        return None
    index = tuple(int(i) for i in np.argwhere(wrong)[0]) if wrong.ndim else ()
    return Failure(case_name, input=input_name, index=index, expected=float(expected[index]), got=float(got[index]),
                   wrong=int(wrong.sum()), total=int(wrong.size))


# ============================================================================ naming the learner's line
def _qualname(frame):
    """"Softmax.backward": the function a frame runs, with its class. (Python 3.11 keeps this in
    the code object; before, the class is found among the module's classes by the code it runs.)"""
    code = frame.f_code
    if hasattr(code, "co_qualname"):
        return code.co_qualname
    for value in list(frame.f_globals.values()):
        if isinstance(value, type):
            function = inspect.getattr_static(value, code.co_name, None)
            function = getattr(function, "__func__", function)  # a staticmethod's function
            if getattr(function, "__code__", None) is code:
                return f"{value.__name__}.{code.co_name}"
    return code.co_name


def _learner_frames(error, path):
    """(function name, line) of the traceback's frames in the learner's file, outermost first."""
    if not path:
        return []
    target = Path(path).resolve()
    frames = []
    for frame, line in traceback.walk_tb(error.__traceback__):
        try:
            if Path(frame.f_code.co_filename).resolve() == target:
                frames.append((_qualname(frame), line))
        except OSError:
            continue
    return frames


def _unfinished_where(error, path):
    frames = _learner_frames(error, path)
    return frames[-1][0] if frames else None


def _describe(error, path):
    """'ValueError: ... (line 12, in Softmax.backward)': the error and the learner's innermost line."""
    text = f"{type(error).__name__}: {error}".strip().splitlines()[0] if str(error) else type(error).__name__
    frames = _learner_frames(error, path)
    if frames:
        name, line = frames[-1]
        text += f" (line {line}" + ("" if name == "<module>" else f", in {name}") + ")"
    return text


# ============================================================================ the report
def format_result(result, exercise):
    """The report `check` prints: each case, then the first failure in detail with a hint."""
    name = exercise.name
    if result.error:
        return f"{name}: could not be checked: {result.error}"
    if result.unfinished:
        return f"{name}: not written yet: {result.unfinished} raises NotImplementedError ({result.path})"
    failed = {f.case: f for f in result.failures}
    lines = [f"check {name}: {result.path}"]
    for case in exercise.cases:
        lines.append(f"  {'FAIL' if case.name in failed else 'ok  '}  {case.name}")
    if result.failures:
        first = result.failures[0]
        lines.append(f"first failure: {first.case}")
        if first.index is not None:
            compared = isinstance(_case(exercise, first.case), CompareCase)
            kind = "the reference" if compared else "central differences"
            lines.append(f"  input {first.input}, element {tuple(first.index)}: expected {first.expected:.6g} "
                         f"({kind}), got {first.got:.6g} (yours); {first.wrong} of {first.total} elements wrong")
        else:
            lines.append(f"  {first.message}")
        if first.blame and len(exercise.parts) > 1:
            lines.append(f"  each op checked on its own: the first wrong backward is {first.blame}")
        lines.append(f"  hint: {first.hint}")
        lines.append(f"{name}: FAIL, {len(result.passed)} of {len(exercise.cases)} cases pass")
    else:
        lines.append(f"{name}: ok, all {len(exercise.cases)} cases pass; now try "
                     f"`python -m demos.exercises train {name}`" if exercise.model else f"{name}: ok")
    return "\n".join(lines)


def _case(exercise, name):
    return next((c for c in exercise.cases if c.name == name), None)
