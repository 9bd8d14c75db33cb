"""demos.lesson: each practice question's experiment shows the property the lesson states (small
sizes, so the file runs in seconds), and the demo runs end to end."""
import math
import time

import numpy as np

import minigrad
from demos import lesson


def test_heads_error_and_the_shape_of_W_i_Q(capsys):
    r = lesson.heads(d_model=64, num_heads=8, bad_heads=7, tokens=3)
    assert "not divisible" in r["error"] and "64" in r["error"] and "7" in r["error"]
    assert r["W_i_shape"] == (64, 8) and r["max_difference"] < 1e-5


def test_heads_at_the_lesson_size(capsys):
    assert lesson.heads(tokens=2)["W_i_shape"] == (512, 64)


def test_scaling_keeps_the_weights_spread_and_the_gradient_alive(capsys):
    r = lesson.scaling(d_k=256, keys=16, queries=64)
    scaled, unscaled = r["scaled by 1/sqrt(d_k)"], r["unscaled"]
    assert scaled["entropy"] > 2 * unscaled["entropy"]
    assert unscaled["max_weight"] > 0.8 > scaled["max_weight"]
    assert scaled["grad"] >= 10 * unscaled["grad"]
    assert abs(r["std_of_scores"] - 16) < 2  # sqrt(d_k)


def test_memory_is_read_off_the_arrays(capsys):
    r = lesson.memory(n=100, heads=8, d_model=64)
    assert r["shape"] == (1, 8, 100, 100)
    assert r["weights_bytes"] == r["kept_bytes"] == 8 * 100 * 100 * 4


def test_positional_wavelengths_and_offsets(capsys):
    r = lesson.positions(d_model=64, offsets=(0, 1, 2, 4, 8), starts=(0, 11), pairs=(0, 8, 31))
    for i, wavelength in r["wavelengths"].items():
        assert math.isclose(wavelength, 2 * math.pi * 10000 ** (2 * i / 64), rel_tol=1e-6)
    row = r["dots"][0]
    assert row[0] == max(row) and math.isclose(row[0], 32)  # sum of sin^2 + cos^2 over 32 pairs
    assert all(a > b for a, b in zip(row, row[1:]))  # falls with the offset here
    assert r["spread"] < 1e-9


def test_masks_agree_bit_for_bit(capsys):
    r = lesson.masks(n=5, d_k=4)
    assert r["same_weights"] and r["same_grads"] and r["masked_zero"]


def test_cost_exponent(capsys):
    # (a fit over three lengths, the best of three runs each, timed on one thread in its own CPU
    # time: other programs taking turns on the cores, as when CI runs two test legs side by side,
    # must not bend it)
    threads = minigrad.get_num_threads()
    minigrad.set_num_threads(1)
    try:
        r = lesson.cost(lengths=(64, 128, 256, 512, 1024), d_k=32, heads=2, repeats=3, clock=time.thread_time)
    finally:
        minigrad.set_num_threads(threads)
    assert all(s > 0 for s in r["seconds"]) and r["seconds"][-1] > r["seconds"][0]
    assert 1.4 < r["exponent"] < 2.6


def test_residuals_keep_the_first_layer_learning(capsys):
    r = lesson.residuals(depths=(2, 24), width=16, tokens=8)
    plain, residual = r["norms"]["plain"], r["norms"]["residual pre-LN"]
    assert plain[1] < plain[0] / 10  # without residual nor norm, 24 sublayers starve the first
    assert residual[1] > 10 * plain[1] and residual[1] > residual[0] / 10
    assert all(np.isfinite(v).all() for v in r["norms"].values())


def test_demo_runs(capsys):
    results = lesson.main(["--only", "q6", "--only", "q2"])
    assert set(results) == {"q6", "q2"}
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("lesson: 2 practice questions")
