"""python -m demos.exercises {list, start, check, solution, train, grade}: write the backward of a
real op yourself, check it, and train a model with it. Run any command with --help for its
options; the README's "Learn by writing the backward" walks through them."""
import argparse
import shutil
import sys
from pathlib import Path

from . import catalogue, checker, grading, solution, training
from .isolation import check_isolated

DEFAULT_DIR = "minigrad_exercises"

DESCRIPTION = """Exercises: write the backward of a real op of minigrad yourself, check it element by element,
then train a model with it. Start with `list`, then `start NAME`, edit the file it writes, and run
`check NAME` until it passes."""

HELP = {  # one complete sentence per command: its line in --help, and the head of its own --help
    "list": "List the exercises, easiest first, and say whether your file for each one passes.",
    "start": "Write the skeleton of an exercise to DIR/NAME.py: the op's real forward, and a backward for you "
             "to write.",
    "check": "Check your file with a gradient check of every element, and exit with 0 if it passes, 1 if not.",
    "solution": "Print the solution in the form of your file (the skeleton with minigrad's own backward written "
                "in, and where that code lives in the library), so that `solution NAME > DIR/NAME.py` passes "
                "`check NAME --dir DIR`.",
    "train": "Train a small model twice from one seed, with minigrad's code and with yours, and compare the "
             "losses.",
    "grade": "For teachers: check every SUBMISSIONS/<learner>/<exercise>.py, several learners at a time, print "
             "a line per learner and write one CSV row per file.",
}


def build_parser():
    p = argparse.ArgumentParser(prog="python -m demos.exercises", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name):
        return sub.add_parser(name, help=HELP[name], description=HELP[name])

    def with_dir(q):
        q.add_argument("--dir", default=DEFAULT_DIR, help=f"The folder of your exercise files (default: {DEFAULT_DIR}).")

    def with_name(q):
        q.add_argument("name", metavar="NAME", help="The exercise's name, as `list` shows it (for example softmax).")

    q = command("list")
    with_dir(q)
    q.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="The seconds allowed to check each file (default: 60).")
    q = command("start")
    with_name(q)
    with_dir(q)
    q.add_argument("--force", action="store_true", help="Overwrite an existing file (your work in it is lost).")
    q = command("check")
    with_name(q)
    with_dir(q)
    q.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="The seconds allowed before the check gives up (default: 60).")
    q = command("solution")
    with_name(q)
    q = command("train")
    with_name(q)
    with_dir(q)
    q.add_argument("--steps", type=int, default=None,
                   help="The number of training steps (default: 150 for the MLPs, 40 for the GPT, 60 for the CNN).")
    q.add_argument("--seed", type=int, default=0, help="The seed of both runs (default: 0).")
    q.add_argument("--no-plot", action="store_true", help="Do not write a PNG of the two loss curves.")
    q = command("grade")
    q.add_argument("submissions", metavar="SUBMISSIONS",
                   help="The folder that holds one folder per learner, each with that learner's exercise files.")
    q.add_argument("--out", default="grades.csv", help="The CSV to write (default: grades.csv).")
    q.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="The seconds allowed to check each file; a file that takes longer is marked as timed "
                        "out, and its learner's check process is stopped (default: 60).")
    q.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="How many learners to grade at a time (default: the number of cores, here "
                        f"{grading.default_jobs()}).")
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
    print(solution.solution_text(_exercise(args.name)), end="")
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
    try:
        learners = len({learner for learner, _, _ in grading.submissions(args.submissions)})
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    finished = []

    def progress(learner, rows, seconds):
        finished.append(learner)
        print(f"[{len(finished)}/{learners}] {grading.progress_line(learner, rows, seconds)}", flush=True)

    rows = grading.grade(args.submissions, args.out, timeout=args.timeout, progress=progress, jobs=args.jobs)
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
