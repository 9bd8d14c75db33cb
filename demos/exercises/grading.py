"""`grade SUBMISSIONS_DIR`: every learner's files checked, one CSV row per file.

SUBMISSIONS_DIR holds one folder per learner, named after the learner; each holds the files the
learner wrote, named after their exercises (softmax.py, layer_norm.py, ...), as `start` names
them. Other files are skipped.

Learners are graded side by side, as many at a time as there are cores (`jobs`). Each learner's
files are checked one after another in a child process of that learner's own (isolation.py), and
each FILE gets at most `timeout` seconds. A file that takes longer (an endless loop, or a mistake
that makes the check crawl) is marked "timed out"; the learner's child is stopped, once, by its
own process id, and a new child checks that learner's remaining files. A crash costs only its own
row too. So a hung file delays only its own learner, by `timeout`, while the other learners are
graded meanwhile: a class with one broken submission takes about as long as the healthy ones.

The CSV has the columns learner,exercise,passed,first_failure; passed is true or false, and
first_failure is empty for a pass, else one line: the case and the element, "not written yet",
an error, or "timed out". Rows are in learner order, whatever order the learners finish in.
"""
import csv
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
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


def default_jobs():
    """How many learners to grade at a time: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


def grade(folder, out, timeout=60.0, progress=None, jobs=None):
    """Check every submission, write the CSV to `out`; returns the rows as dicts, in learner order.

    timeout: seconds for each file. jobs: learners graded at a time (default: the cores).
    progress(learner, rows, seconds): called in this thread as each learner finishes."""
    by_learner = {}
    for learner, name, path in submissions(folder):
        by_learner.setdefault(learner, []).append((name, path))

    def one(learner):
        start = time.monotonic()
        jobs_of = by_learner[learner]
        rows = [{"learner": learner, "exercise": name, "passed": "true" if result.ok else "false",
                 "first_failure": result.first_failure()}
                for (name, _), result in zip(jobs_of, check_isolated(jobs_of, timeout=timeout, quiet=True))]
        return rows, time.monotonic() - start

    done = {}
    if by_learner:  # (the children do the work: threads are enough to wait for them side by side)
        with ThreadPoolExecutor(max_workers=min(jobs or default_jobs(), len(by_learner))) as pool:
            futures = {pool.submit(one, learner): learner for learner in by_learner}
            for future in as_completed(futures):
                learner = futures[future]
                done[learner], seconds = future.result()
                if progress:
                    progress(learner, done[learner], seconds)
    rows = [row for learner in by_learner for row in done[learner]]
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def progress_line(learner, rows, seconds):
    """One line as a learner finishes: how many files pass, and the first that does not."""
    passed = sum(row["passed"] == "true" for row in rows)
    line = f"{learner}: {passed} of {len(rows)} pass ({seconds:.1f} s)"
    first = next((row for row in rows if row["passed"] != "true"), None)
    return line if first is None else f"{line}; {first['exercise']}: {first['first_failure']}"


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

