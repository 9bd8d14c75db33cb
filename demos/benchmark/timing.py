"""How a candidate is timed: median of samples, taken in turns, each after the cores have settled.

Candidates are timed round-robin (the order rotates every round) so that machine noise hits all of
them. Before each timed sample the benchmark waits until the previous candidate's worker threads
stop spinning (`settle`) and runs the candidate untimed for a moment, which gets idle cores going
again and warms the caches (`warm_up`). The reported number is the median over samples.
"""
import time

import numpy as np

_settled = [0.0]  # seconds spent in settle() so far


def median(values):
    return float(np.median(np.asarray(values, dtype=np.float64)))


def settle(quantum=0.004, limit=0.3):
    """Wait until no thread of this process burns CPU any more (at most `limit` seconds).

    After a call, a library's worker threads keep spinning for a while, waiting for more work
    (OpenBLAS's for longest, OpenMP's for less). Whatever runs next would share the cores with them,
    so a candidate timed right after numpy would pay for numpy's spinning threads. The main thread
    sleeps in short quanta until a quantum passes in which the whole process used less than a tenth
    of it in CPU time."""
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < limit:
            cpu = time.process_time()
            time.sleep(quantum)
            if time.process_time() - cpu < 0.1 * quantum:
                return
    finally:
        _settled[0] += time.perf_counter() - start


def settle_seconds():
    """Total time spent in settle() so far (reported in the JSON document)."""
    return _settled[0]


# After the process has been idle (as settle() makes it), the first milliseconds of a parallel
# library run several times slower on a virtual machine, whose idle virtual CPUs take a while to get
# going again. A few ms of continuous work before a timed sample was not enough to hide that; this is.
WARM_SECONDS = 0.03


def warm_up(f):
    """Call f repeatedly for WARM_SECONDS (at least once): the cores are running when timing starts."""
    start = time.perf_counter()
    f()
    while time.perf_counter() - start < WARM_SECONDS:
        f()


def time_steps(step, n):
    """Seconds of each of n calls of step()."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def race(candidates, budget, repeats=None, min_samples=5, sample_seconds=0.01):
    """Time zero-argument callables against each other; -> ({name: median seconds per call}, rounds).

    After a warm-up call each, every candidate is calibrated: a sample is `inner` calls in a row,
    enough to last `sample_seconds`. Then rounds run until the slowest candidate has had about
    `budget` seconds (at least `min_samples` rounds; exactly `repeats` rounds if given). In each
    round every candidate, in turn, waits for the other libraries' threads to go idle (`settle`),
    runs untimed for WARM_SECONDS (`warm_up`), and then takes one timed sample; the order rotates
    every round so no candidate always follows the same one. The result is the median over rounds
    of (sample time / inner).
    """
    names = list(candidates)
    for f in candidates.values():
        f()  # warm-up: compilation, first-touch allocations
    inner, cost = {}, {}
    for name, f in candidates.items():
        best = min(time_steps(f, 3))
        inner[name] = max(1, min(10_000, int(sample_seconds / max(best, 1e-9))))
        cost[name] = inner[name] * best + max(best, WARM_SECONDS)  # a timed sample and its warm-up
    if repeats:
        rounds = repeats
    else:
        rounds = max(min_samples, min(int(budget / max(cost.values())), 500))
    samples = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            f, n = candidates[name], inner[name]
            settle()
            warm_up(f)
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: median(s) for name, s in samples.items()}, rounds

