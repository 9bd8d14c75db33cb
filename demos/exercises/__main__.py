"""python -m demos.exercises {list, start, check, solution, train, grade}: see --help, and the
README's "Learn by writing the backward"."""
import argparse
import importlib
import inspect
import shutil
import sys
from pathlib import Path

from . import catalogue, checker, grading, training
from .isolation import check_isolated

DEFAULT_DIR = "minigrad_exercises"
_ROOT = Path(__file__).resolve().parents[2]


def build_parser():
    p = argparse.ArgumentParser(prog="python -m demos.exercises", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def with_dir(q):
        q.add_argument("--dir", default=DEFAULT_DIR, help="the folder of your exercise files")

    q = sub.add_parser("list", help="the exercises, easiest first, and whether your file passes")
    with_dir(q)
    q.add_argument("--timeout", type=float, default=60.0, help="seconds allowed to check each file")
    q = sub.add_parser("start", help="write the skeleton of an exercise to DIR/NAME.py")
    q.add_argument("name")
    with_dir(q)
    q.add_argument("--force", action="store_true", help="overwrite an existing file")
    q = sub.add_parser("check", help="check your file: exit 0 if it passes, 1 if not")
    q.add_argument("name")
    with_dir(q)
    q.add_argument("--timeout", type=float, default=60.0, help="seconds allowed before the check gives up")
    q = sub.add_parser("solution", help="print minigrad's own code for the exercise")
    q.add_argument("name")
    q = sub.add_parser("train", help="train a small model with your code and with minigrad's, from one seed")
    q.add_argument("name")
    with_dir(q)
    q.add_argument("--steps", type=int, default=None, help="training steps (default: 150 for the MLPs, 40 for the GPT, 60 for the CNN)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--no-plot", action="store_true", help="no PNG of the two loss curves")
    q = sub.add_parser("grade", help="for teachers: check SUBMISSIONS/<learner>/<exercise>.py, write a CSV")
    q.add_argument("submissions")
    q.add_argument("--out", default="grades.csv", help="the CSV to write")
    q.add_argument("--timeout", type=float, default=60.0, help="seconds allowed to check each file")
    return p


def _exercise(name):
    try:
        return catalogue.get(name)
    except KeyError as e:
        raise SystemExit(f"error: {e.args[0]}") from None


def _file(args, exercise):
    return Path(args.dir) / f"{exercise.name}.py"


# ============================================================================ the commands
def cmd_list(args):
    files = [(e.name, _file(args, e)) for e in catalogue.EXERCISES if _file(args, e).is_file()]
    results = dict(zip([n for n, _ in files], check_isolated(files, args.timeout, quiet=True))) if files else {}
    print(f"{'#':>2}  {'exercise':<14} {'minutes':>7}  {'your file':<16} what")
    for i, e in enumerate(catalogue.EXERCISES, 1):
        r = results.get(e.name)
        status = "-" if r is None else "passes" if r.ok else "not written yet" if r.unfinished else \
            "error" if r.error else "fails"
        print(f"{i:>2}  {e.name:<14} {e.minutes:>7}  {status:<16} {e.title}")
    print(f"\nstart one with: python -m demos.exercises start NAME --dir {args.dir}")
    return 0


def cmd_start(args):
    exercise = _exercise(args.name)
    path = _file(args, exercise)
    if path.exists() and not args.force:
        print(f"{path} exists already; it was not changed (--force overwrites it)", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(exercise.skeleton, path)
    print(f"wrote {path}: {exercise.title}")
    print(f"edit it, then: python -m demos.exercises check {exercise.name}"
          + ("" if args.dir == DEFAULT_DIR else f" --dir {args.dir}"))
    return 0


def cmd_check(args):
    exercise = _exercise(args.name)
    path = _file(args, exercise)
    if not path.is_file():
        print(f"{exercise.name}: no file {path} (write it with: python -m demos.exercises start {exercise.name})")
        return 1
    (result,) = check_isolated([(exercise.name, path)], timeout=args.timeout)
    print(checker.format_result(result, exercise))
    return 0 if result.ok else 1


def cmd_solution(args):
    exercise = _exercise(args.name)
    print(f"# {exercise.name}: {exercise.title}\n# the reference solution is minigrad's own code:\n")
    for part in exercise.parts:
        for obj in ([part.reference] if part.show_reference else []) + list(part.shows):
            if isinstance(obj, str):  # "module:name"
                module, name = obj.split(":")
                obj = getattr(importlib.import_module(module), name, None)
                if obj is None:
                    continue
            where = Path(inspect.getsourcefile(obj)).resolve()
            where = where.relative_to(_ROOT) if _ROOT in where.parents else where
            print(f"# ---- {where}\n{inspect.getsource(obj)}")
    return 0


def cmd_train(args):
    exercise = _exercise(args.name)
    if exercise.model is None:
        print(f"{exercise.name}: this exercise has no model to train")
        return 1
    path = _file(args, exercise)
    result = check_isolated([(exercise.name, path)])[0] if path.is_file() else None
    if result is None or result.error or result.unfinished:
        reason = f"no file {path}" if result is None else result.first_failure()
        print(f"{exercise.name}: cannot train: {reason}")
        return 1
    if not result.ok:
        print(f"{exercise.name}: note: your file does not pass check yet ({result.first_failure()})")
    try:
        trained = training.train(exercise, checker.load(path), steps=args.steps, seed=args.seed)
    except NotImplementedError:
        print(f"{exercise.name}: cannot train: part of your code raises NotImplementedError")
        return 1
    except Exception as e:
        print(f"{exercise.name}: training with your code raised {type(e).__name__}: {e}")
        return 1
    print(training.format_train(trained, exercise))
    if not args.no_plot:
        png = training.plot(trained, exercise, path.with_name(f"{exercise.name}_train.png"))
        print(f"plot: {png}" if png else "(install matplotlib for a plot of both loss curves)")
    return 0 if trained.agree else 1


def cmd_grade(args):
    rows = grading.grade(args.submissions, args.out, timeout=args.timeout,
                         progress=lambda r: print(f"{r['learner']}/{r['exercise']}: "
                                                  f"{'pass' if r['passed'] == 'true' else r['first_failure']}"))
    if not rows:
        print(f"grade: no exercise files found in {args.submissions}/<learner>/ (expected e.g. softmax.py)")
        return 1
    print(grading.summary(rows))
    print(f"wrote {args.out}: {len(rows)} rows")
    return 0


COMMANDS = {"list": cmd_list, "start": cmd_start, "check": cmd_check, "solution": cmd_solution,
            "train": cmd_train, "grade": cmd_grade}


def main(argv=None):
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
