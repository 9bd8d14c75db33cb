"""Smoke tests of `python -m demos.benchmark`: it runs, and its JSON document has the expected shape.
No timing assertions: the numbers depend on the machine. The start-up section compiles every kernel
in a fresh cache, which takes minutes: it runs only with MINIGRAD_SLOW_TESTS=1."""
import importlib.util
import json
import math
import os

import pytest

from demos import benchmark, common
from demos.benchmark import system, targets, threads

HAS_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = [] if HAS_TORCH else ["--no-torch"]
SLOW = pytest.mark.skipif(os.environ.get("MINIGRAD_SLOW_TESTS") != "1", reason="slow: set MINIGRAD_SLOW_TESTS=1")


def _positive(x):
    return isinstance(x, (int, float)) and x > 0


def _check_targets(results):
    assert len(results["targets"]) == 9
    for t in results["targets"]:
        assert t["needs"] in (">=", "<=")
        if t["ratio"] is None:
            assert t["met"] is None
        else:
            met = t["ratio"] >= t["threshold"] if t["needs"] == ">=" else t["ratio"] <= t["threshold"]
            assert _positive(t["ratio"]) and t["met"] == met


def test_quick_matmul_and_softmax_json(capsys):
    results = benchmark.main(["--quick", "--only", "matmul,softmax", "--json", "--repeats", "1"] + NO_TORCH)
    printed = json.loads(capsys.readouterr().out)  # --json: stdout is exactly one JSON document
    assert printed["settings"] == results["settings"]
    assert results["settings"]["sections"] == ["matmul", "softmax"]
    assert "gpt" not in results and "startup" not in results and "busy" not in results

    info = results["system"]
    assert {"cpu", "numpy", "numba", "blas", "minigrad_backend", "llvm_cpu", "matmul_tile",
            "minigrad_parallel"} <= set(info)
    assert info["simd"] in ("avx512", "avx2", "neon", "sse")
    assert isinstance(info["minigrad_threads"], int) and info["minigrad_threads"] >= 1
    assert "x" in info["matmul_tile"]

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

    _check_targets(results)
    others = [t for t in results["targets"] if not t["target"].startswith(("numba matmul", "softmax"))]
    assert all(t["met"] is None for t in others)  # their sections did not run


def test_quick_busy_json(capsys):
    results = benchmark.main(["--quick", "--only", "busy", "--busy-steps", "2", "--json"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    busy = results["busy"]
    assert busy["config"] == "nanoGPT-cpu" and busy["steps"] == 2
    expected = ["minigrad", "minigrad-1t"] + (["torch-1t", "torch-2t"] if HAS_TORCH else [])
    assert [r["candidate"] for r in busy["rows"]] == expected
    for row in busy["rows"]:
        assert _positive(row["quiet_ms"]) and _positive(row["busy_ms"]) and row["threads"] >= 1
        assert math.isclose(row["ratio"]["busy/quiet"], row["busy_ms"] / row["quiet_ms"])
    _check_targets(results)
    target = results["targets"][-1]
    assert target["target"].startswith("with one busy process") and target["needs"] == "<="
    assert target["ratio"] == busy["rows"][0]["ratio"]["busy/quiet"]


def test_busy_process_is_killed():
    with benchmark.busy.busy_process() as spinner:
        assert spinner.poll() is None  # running
    assert spinner.poll() is not None


def test_quick_training_run_json(capsys, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(common.builtin_corpus(min_chars=20_000)[:20_000], encoding="utf-8")
    results = benchmark.main(["--quick", "--only", "train", "--train-iters", "3", "--train-data", str(text),
                              "--json"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    train = results["train"]
    assert train["iterations"] == 3 and train["data"] == str(text)
    assert set(train["seconds"]) == {"minigrad", "compiled"} | ({"torch"} if HAS_TORCH else set())
    assert all(_positive(v) for v in train["seconds"].values())
    assert train["val_loss"]["compiled"] == train["val_loss"]["minigrad"]  # a replay: the same bits
    for loss in train["val_loss"].values():  # 3 steps from the initialisation: about ln(vocabulary)
        assert 0.5 * math.log(train["vocab_size"]) < loss < 1.5 * math.log(train["vocab_size"])
    if HAS_TORCH:  # the same weights, batches and updates: the same losses, up to float32 rounding
        assert train["same_initial_weights"]
        assert train["val_loss"]["torch"] == pytest.approx(train["val_loss"]["minigrad"], abs=1e-3)
    target = next(t for t in results["targets"] if t["target"].startswith("char_gpt"))
    assert (target["ratio"] is not None) == HAS_TORCH


def test_training_run_without_data_is_skipped(capsys, monkeypatch):
    monkeypatch.setattr(benchmark.train, "shakespeare_path", lambda: None)
    results = benchmark.main(["--quick", "--only", "train", "--json"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    assert "tinyshakespeare.txt" in results["train"]["skipped"]
    target = next(t for t in results["targets"] if t["target"].startswith("char_gpt"))
    assert target["met"] is None and target["detail"] == results["train"]["skipped"]


@SLOW
def test_startup_json(capsys):
    results = benchmark.main(["--only", "startup", "--startup-runs", "1", "--json"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    startup = results["startup"]
    assert startup["runs"] == 1 and len(startup["cold_runs_s"]) == len(startup["warm_runs_s"]) == 1
    assert 0 < startup["warm_s"] < startup["cold_s"]
    assert list(startup["cold"])[-2:] == ["+ first training step", "process wall"]
    assert len(startup["ahead_tail_s"]) == 1 and startup["ahead_tail_s"][0] >= 0  # (waited for before the warm run)
    # the warm process compiles nothing: less CPU than the cold one, which may have waited for the other process
    assert 0 < startup["warm_cpu_s"] < startup["cold_cpu_s"] and 0 <= startup["cold_waited_s"] < startup["cold_s"]
    assert set(startup["kernels"]["warm"]) >= {"import minigrad", "+ float32 matmul", "+ softmax fwd/bwd"}


def test_measurements_wait_for_the_background_compile(monkeypatch):
    """On an empty cache the first kernel starts minigrad's compile-ahead process; the benchmark
    times nothing until it has exited (timed beside it, every section would see a busy machine)."""
    import subprocess
    import sys
    import threading
    import types

    from minigrad.kernels import _warm

    monkeypatch.setattr(_warm, "_ahead", None)
    assert system.finish_background_compile() is None
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    monkeypatch.setattr(_warm, "_ahead", types.SimpleNamespace(process=process, ready=threading.Condition(),
                                                               pending=set()))
    waited = system.finish_background_compile()
    assert process.poll() == 0 and waited >= 0.2
    info = dict(system_info_for_format(), background_compile_wait_s=waited)
    assert f"waited {waited:.1f} s for its background compile" in system.format_system(info)


def system_info_for_format():
    """The fields format_system reads, with placeholder values."""
    return {"cpu": "a CPU", "cpu_flags": ["avx2"], "cores": 2, "usable_cores": 2, "llvm_cpu": "haswell",
            "simd": "avx2", "matmul_tile": "4x16", "kernels": {}, "minigrad_threads": 2,
            "minigrad_parallel": "pool", "torch_threads": None, "blas_threads": None, "python": "3",
            "numpy": "2", "numba": "0", "torch": None, "blas": "openblas", "minigrad_backend": "numba",
            "first_matmul_call_s": 0.1, "environment": {}}


def test_simd_target_and_thread_control():
    name, level = system.simd_target()
    assert name and level in ("avx512", "avx2", "neon", "sse")
    before = threads.minigrad_threads()
    with threads.using_threads("minigrad", 1):
        assert threads.minigrad_threads() == 1
    assert threads.minigrad_threads() == before


def test_targets_without_results_are_not_measured():
    for t in targets.evaluate_targets({}, torch_missing="no torch"):
        assert t["ratio"] is None and t["met"] is None and t["detail"]


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


def test_quick_rnn_json(capsys):
    results = benchmark.main(["--quick", "--only", "rnn", "--json", "--repeats", "1"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    steps = results["rnn"]["steps"]
    assert [r["layer"] for r in steps] == ["RNN", "GRU", "LSTM"]
    for row in steps:
        assert set(row["seconds"]) == {"minigrad"} | ({"torch"} if HAS_TORCH else set())
        assert all(_positive(v) for v in row["seconds"].values())
        assert _positive(row["ratio"]["torch/minigrad"]) if HAS_TORCH else row["ratio"]["torch/minigrad"] is None
    _check_targets(results)


def test_quick_conv_json(capsys):
    results = benchmark.main(["--quick", "--only", "conv", "--json", "--repeats", "1"] + NO_TORCH)
    json.loads(capsys.readouterr().out)
    conv = results["conv"]
    assert [r["name"] for r in conv["layers"]] == [case[0] for case in benchmark.conv.QUICK_CASES]
    expected = {"minigrad fwd", "minigrad fwd+bwd"} | ({"torch fwd", "torch fwd+bwd"} if HAS_TORCH else set())
    for row in conv["layers"]:
        assert set(row["seconds"]) == expected and all(_positive(v) for v in row["seconds"].values())
        for value in row["ratio"].values():
            assert _positive(value) if HAS_TORCH else value is None
    step = conv["cnn_step"]
    assert set(step["seconds"]) == {"minigrad"} | ({"torch"} if HAS_TORCH else set())
    assert _positive(step["ratio"]["torch/minigrad"]) if HAS_TORCH else step["ratio"]["torch/minigrad"] is None
    _check_targets(results)
