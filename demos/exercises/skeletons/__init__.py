"""The files `python -m demos.exercises start NAME` copies for the learner, one per exercise: the
op's real forward is inherited from minigrad/ops.py, its backward raises NotImplementedError until
the learner writes it."""
