"""Checking learners' files in child processes, each file with a time limit.

A learner's file may loop forever, exit the interpreter or crash it; none of that may stop the
checker. `check_isolated(jobs, timeout)` starts one child, `python -m demos.exercises.isolation
NAME=PATH ...`, which checks the files one after another and prints one result line per file. The
parent waits at most `timeout` seconds for each line. A file that takes longer, or during which
the child dies, gets a result saying so; the child is ended (by its own process id) and a new one
checks the files that are left.
"""
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from .checker import Result

MARK = "@minigrad-exercise-result "  # the prefix of a result line (anything else the child prints is not one)
READY = "@minigrad-exercise-ready"
STARTUP_SECONDS = 120  # importing minigrad and numba in the child, before any file's clock starts
_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds demos/ and minigrad/


def check_isolated(jobs, timeout=60.0, quiet=False):
    """jobs: [(exercise name, path)] -> [Result] in the same order. quiet: hide what the learners'
    code prints (a teacher grading many files) instead of passing it on to stderr."""
    jobs, results = [(name, str(path)) for name, path in jobs], []
    while len(results) < len(jobs):  # each child gets at least one result, if only "timed out"
        results += _one_child(jobs[len(results):], timeout, quiet)
    return results


def _one_child(jobs, timeout, quiet):
    """Check `jobs` in one child until it finishes, times out or dies: the results it got to."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])))
    args = [f"{name}={os.path.abspath(path)}" for name, path in jobs]
    child = subprocess.Popen([sys.executable, "-m", "demos.exercises.isolation", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None, text=True,
                             env=env, cwd=_ROOT)
    lines = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(child.stdout, lines), daemon=True)
    reader.start()
    results = []
    try:
        if not _wait_for(lines, READY, STARTUP_SECONDS):
            return [_broken(jobs[0], f"the checker could not start (exit code {child.poll()})")]
        for name, path in jobs:
            line = _wait_for(lines, MARK, timeout)
            if line is None:
                return results + [_broken((name, path), f"the check process ended (exit code {child.wait()}) "
                                                         "while checking this file")]
            if line is False:
                return results + [_broken((name, path), f"timed out after {timeout:g} s (an endless loop?)")]
            result = Result.from_dict(json.loads(line[len(MARK):]))
            result.path = path  # as the caller wrote it
            results.append(result)
        return results
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()


def _read_lines(stream, lines):
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _wait_for(lines, prefix, timeout):
    """The next line starting with `prefix`; None if the child's output ended, False on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            return False
        if line is None or line.startswith(prefix):
            return line


def _broken(job, error):
    return Result(job[0], str(job[1]), error=error)


def main(argv):
    """The child: check each NAME=PATH, one result line each, on the real stdout; whatever the
    learners' code prints goes to stderr."""
    out = sys.stdout
    sys.stdout = sys.stderr
    from .catalogue import get
    from .checker import check_file

    print(READY, file=out, flush=True)
    for job in argv:
        name, path = job.split("=", 1)
        result = check_file(get(name), path)
        print(MARK + json.dumps(result.to_dict()), file=out, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
