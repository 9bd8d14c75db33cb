"""Smoke test of `python -m demos.benchmark`: it runs, and its JSON document has the expected shape.
No timing assertions: the numbers depend on the machine."""
import importlib.util
import json
import math

import pytest

from demos import benchmark

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _positive(x):
    return isinstance(x, (int, float)) and x > 0


def test_quick_matmul_and_softmax_json(capsys):
    argv = ["--quick", "--only", "matmul,softmax", "--json", "--repeats", "1"]
    if not HAS_TORCH:
        argv.append("--no-torch")
    results = benchmark.main(argv)
    printed = json.loads(capsys.readouterr().out)  # --json: stdout is exactly one JSON document
    assert printed["settings"] == results["settings"]
    assert results["settings"]["sections"] == ["matmul", "softmax"]
    assert "gpt" not in results and "startup" not in results
    assert {"cpu", "numpy", "numba", "blas", "minigrad_backend"} <= set(results["system"])

    frameworks = {"numba", "numpy"} | ({"torch"} if HAS_TORCH else set())
    assert len(results["matmul"]) == len(benchmark.matmul_cases())
    assert {r["kind"] for r in results["matmul"]} >= {"square", "gpt2d", "batched"}
    for row in results["matmul"]:
        assert set(row["gflops"]) == frameworks
        assert all(_positive(v) for v in row["gflops"].values())
        assert _positive(row["ratio"]["numba/numpy"])
        assert _positive(row["ratio"]["numba/torch"]) if HAS_TORCH else row["ratio"]["numba/torch"] is None

    assert [tuple(r["shape"]) for r in results["softmax"]] == benchmark.SOFTMAX_SHAPES
    for row in results["softmax"]:
        assert set(row["seconds"]) == frameworks
        assert all(_positive(v) for v in row["seconds"].values())
        assert _positive(row["ratio"]["numpy/numba"])

    targets = {t["target"]: t for t in results["targets"]}
    assert len(targets) == 6
    for t in results["targets"]:
        if t["ratio"] is None:
            assert t["met"] is None
        else:
            assert _positive(t["ratio"]) and t["met"] == (t["ratio"] >= t["threshold"])
    gpt_targets = [t for t in results["targets"] if t["target"].startswith("GPT training step")]
    assert all(t["met"] is None for t in gpt_targets)  # the gpt section did not run


def test_quick_training_run_json(capsys):
    argv = ["--quick", "--only", "train", "--train-iters", "3", "--json"] + ([] if HAS_TORCH else ["--no-torch"])
    results = benchmark.main(argv)
    json.loads(capsys.readouterr().out)
    train = results["train"]
    assert train["iterations"] == 3 and train["data"] == "built-in corpus"
    assert set(train["seconds"]) == {"minigrad"} | ({"torch"} if HAS_TORCH else set())
    assert all(_positive(v) for v in train["seconds"].values())
    for loss in train["val_loss"].values():  # 3 steps from the initialisation: about ln(vocabulary)
        assert 0.5 * math.log(train["vocab_size"]) < loss < 1.5 * math.log(train["vocab_size"])
    target = next(t for t in results["targets"] if t["target"].startswith("char_gpt"))
    assert (target["ratio"] is not None) == HAS_TORCH


def test_torch_gpt_matches_minigrad_parameter_count():
    torch = pytest.importorskip("torch")
    for _, config, batch_size in benchmark.GPT_CONFIGS:
        step_t, n_torch = benchmark.make_torch_trainer(torch, config, batch_size, seed=0)
        _, n_minigrad = benchmark.make_minigrad_trainer(config, batch_size, seed=0)
        assert n_torch == n_minigrad
    assert 3.5 < step_t().item() < 5.0  # about ln(65) = 4.17 at initialisation


def test_unknown_section_is_an_error():
    with pytest.raises(SystemExit):
        benchmark.main(["--only", "nope"])
