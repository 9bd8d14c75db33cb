"""Exercises: write an op's backward yourself, check it, then train a model with it.

    python -m demos.exercises list                 # the exercises, easiest first, and how yours fare
    python -m demos.exercises start softmax        # writes ./minigrad_exercises/softmax.py
    python -m demos.exercises check softmax        # gradient check, element by element, with a hint
    python -m demos.exercises train softmax        # a model trained with your backward, and with minigrad's
    python -m demos.exercises solution softmax     # your file with minigrad's own backward written in
    python -m demos.exercises grade SUBMISSIONS    # for teachers: one CSV row per learner and file

Each exercise is derived from the engine itself: the learner's class subclasses the real op of
minigrad/ops.py or minigrad/ops_conv.py (its forward is the real one) and writes `backward`; the
reference solution is the op. The files:

    catalogue.py   the exercises, their cases and hints, and the swap of the learner's code into the engine
    checker.py     checking one file in this process: gradient checks and comparisons, the report
    isolation.py   checking files in a child process, each with a time limit
    training.py    the small models `train` runs
    solution.py    the solution, as the learner's file with minigrad's own code written in
    grading.py     the teacher's CSV, several learners at a time
    skeletons/     the files `start` hands out
"""
from pathlib import Path

from .catalogue import BY_NAME, EXERCISES, Exercise, get, swapped
from .checker import Result, check_file, check_module, format_result

__all__ = ["BY_NAME", "EXERCISES", "Exercise", "Result", "check", "check_file", "check_module", "get", "start",
           "swapped"]


def start(name, folder="minigrad_exercises", force=False):
    """`python -m demos.exercises start NAME` from Python (a notebook cell): writes the skeleton to
    folder/NAME.py unless that file exists (your work is never overwritten without force=True).
    Returns the path."""
    import shutil

    exercise = get(name)
    path = Path(folder) / f"{name}.py"
    if path.exists() and not force:
        print(f"{path}: your file (start(..., force=True) would replace it with the skeleton)")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(exercise.skeleton, path)
    print(f"wrote {path}: {exercise.title}")
    return path


def check(name, folder="minigrad_exercises", timeout=60.0):
    """`python -m demos.exercises check NAME` from Python (a notebook cell): checks folder/NAME.py in
    a child process with a time limit, prints the report and returns the `Result`."""
    from .isolation import check_isolated

    exercise = get(name)
    (result,) = check_isolated([(name, Path(folder) / f"{name}.py")], timeout=timeout)
    print(format_result(result, exercise))
    return result
