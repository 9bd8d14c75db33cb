"""Measurements in fresh Python processes (peak memory, start-up): how they are started and read.

A child prints one JSON object as the last line of its stdout; the parent parses that line.
"""
import json
import os
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env(**changes):
    """This process's environment, with the repository on PYTHONPATH and `changes` applied."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(changes)
    return env


def run_child(command, what, env=None, timeout=900):
    """Run `command` in the repository; -> (its JSON result, wall seconds from start to exit)."""
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env or child_env(), capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{what} subprocess failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall

