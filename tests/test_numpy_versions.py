"""minigrad runs on numpy 1.24 and later: what moved between numpy versions is imported, in one
place, from where each version has it. Here: numpy.AxisError, which numpy 1.25 moved into
numpy.exceptions (and numpy 2 removed from the top level)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minigrad as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_minigrad_raises_numpys_axis_error_and_exports_it():
    assert issubclass(mg.AxisError, (ValueError, IndexError))
    if hasattr(np, "exceptions"):
        assert mg.AxisError is np.exceptions.AxisError
    for reduce in (lambda: mg.ones(2, 3).sum(axis=2), lambda: mg.ones(2).softmax(axis=1)):
        with pytest.raises(mg.AxisError, match="out of range"):
            reduce()


NUMPY_1_24 = textwrap.dedent("""
    # make this numpy look like numpy 1.24: no numpy.exceptions, AxisError at the top level
    import sys
    import numpy

    AxisError = numpy.exceptions.AxisError
    del sys.modules["numpy.exceptions"], numpy.exceptions
    numpy.AxisError = AxisError

    class NoExceptionsModule:
        def find_spec(self, name, path=None, target=None):
            if name == "numpy.exceptions":
                raise ImportError("No module named 'numpy.exceptions'")

    sys.meta_path.insert(0, NoExceptionsModule())

    import minigrad
    try:
        minigrad.ones(2, 3).mean(axis=-3)
    except AxisError as error:
        print("raised:", error)
    assert minigrad.AxisError is AxisError
""")


@pytest.mark.skipif(not hasattr(np, "exceptions"), reason="this numpy is older than 1.25 already")
def test_without_numpy_exceptions_as_in_numpy_1_24():
    env = dict(os.environ, MINIGRAD_BACKEND="numpy", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", NUMPY_1_24], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "raised: mean: axis -3 is out of range" in done.stdout
