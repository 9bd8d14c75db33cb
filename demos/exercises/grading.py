"""`grade SUBMISSIONS_DIR`: every learner's files checked, one CSV row per file.

SUBMISSIONS_DIR holds one folder per learner, named after the learner; each holds the files the
learner wrote, named after their exercises (softmax.py, layer_norm.py, ...), as `start` names
them. Other files are skipped. Each learner's files are checked in a child process of their own,
each file with a time limit (isolation.py), so a file that hangs or crashes costs only its own row.

The CSV has the columns learner,exercise,passed,first_failure; passed is true or false, and
first_failure is empty for a pass, else one line: the case and the element, "not written yet",
an error, or "timed out".
"""
import csv
from pathlib import Path

from .catalogue import EXERCISES
from .isolation import check_isolated

COLUMNS = ("learner", "exercise", "passed", "first_failure")


def submissions(folder):
    """[(learner, exercise name, path)], learners in name order, exercises in the course's order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"grade: {folder} is not a folder (expected one subfolder per learner)")
    found = []
    for learner in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        found += [(learner.name, e.name, learner / f"{e.name}.py") for e in EXERCISES
                  if (learner / f"{e.name}.py").is_file()]
    return found


def grade(folder, out, timeout=60.0, progress=None):
    """Check every submission, write the CSV to `out`; returns the rows as dicts."""
    rows = []
    by_learner = {}
    for learner, name, path in submissions(folder):
        by_learner.setdefault(learner, []).append((name, path))
    for learner, jobs in by_learner.items():
        for (name, _), result in zip(jobs, check_isolated(jobs, timeout=timeout, quiet=True)):
            rows.append({"learner": learner, "exercise": name, "passed": "true" if result.ok else "false",
                         "first_failure": result.first_failure()})
            if progress:
                progress(rows[-1])
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def summary(rows):
    """Per learner: how many of their files pass."""
    learners = {}
    for row in rows:
        passed, total = learners.get(row["learner"], (0, 0))
        learners[row["learner"]] = (passed + (row["passed"] == "true"), total + 1)
    width = max([len(name) for name in learners] + [7])
    lines = [f"{'learner':<{width}}  passed"]
    lines += [f"{name:<{width}}  {p} of {t}" for name, (p, t) in learners.items()]
    return "\n".join(lines)

