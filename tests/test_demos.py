"""Smoke tests: every demo runs end to end with tiny settings, in seconds, and reports sensibly; the
demos' shared plumbing (help texts, missing extras, --threads, progress in a log)."""
import importlib.util
import io
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad
from demos import addition, char_gpt, cnn, common, copy_task, modern_blocks, names, pictures, sample, tour

SHAKESPEARE = Path(__file__).parents[2] / "shared/data/tinyshakespeare.txt"
TINY_CHAR_GPT = ["--eval-interval", "2", "--eval-iters", "1", "--n-layer", "1", "--d-model", "16", "--n-head", "2",
                 "--block-size", "8", "--batch-size", "2", "--quiet", "--sample-chars", "20"]
DEMOS = {"tour": tour, "pictures": pictures, "addition": addition, "copy_task": copy_task, "char_gpt": char_gpt,
         "modern_blocks": modern_blocks, "sample": sample, "cnn": cnn, "names": names}
TRAINING = ["tour", "pictures", "addition", "copy_task", "char_gpt", "modern_blocks", "cnn", "names"]


@pytest.mark.parametrize("name", DEMOS)
def test_help(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        DEMOS[name].main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m demos.{name} ") and "--seed" in out
    assert ("--threads N" in out) == (name in TRAINING)


@pytest.mark.parametrize("name", DEMOS)
def test_every_flag_has_help_and_one_default(name):
    p = DEMOS[name].build_parser()
    formatter = p._get_formatter()
    for action in p._actions:
        text = formatter._expand_help(action) if action.help else ""
        flag = action.option_strings[-1]
        assert text.strip(), f"{flag} has no help"
        assert text.count("default") <= 1, f"{flag}: {text}"
        assert "(default: None)" not in text and "default: True" not in text and "default: False" not in text, flag
        if action.nargs != 0 and action.default is not None and flag != "--help":
            assert "default" in text, f"{flag} does not show its default: {text}"


def test_the_formatter_on_the_usual_traps():
    p = common.parser("x", "demos.x")
    p.add_argument("--data", help="a file (default: the built-in corpus)")
    p.add_argument("--no-gpt", dest="gpt", action="store_false", help="leave the GPT out")
    p.add_argument("--steps", type=int, default=5, help="steps")
    text = " ".join(p.format_help().split())
    assert "a file (default: the built-in corpus) --no-gpt" in text  # not "(default: None)" after it
    assert "leave the GPT out --steps" in text  # a switch: no "(default: True)"
    assert "steps (default: 5)" in text and text.startswith("usage: python -m demos.x")


@pytest.mark.parametrize("name, missing", [(name, "tqdm") for name in TRAINING] +
                         [(name, "matplotlib") for name in ("tour", "pictures", "char_gpt", "cnn")] +
                         [("cnn", "sklearn")])
def test_a_missing_extra_is_named_before_any_work(name, missing, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, missing, None)  # what "import tqdm" meets when tqdm is not installed
    monkeypatch.chdir(tmp_path)  # any output folder would appear here
    for module in DEMOS.values():  # no training at all: every model class refuses to be built
        for cls in ("GPT", "Transformer"):
            if hasattr(module, cls):
                monkeypatch.setattr(module, cls, None)
    with pytest.raises(SystemExit) as stop:
        DEMOS[name].main([])
    message = str(stop.value.code)
    assert f"python -m demos.{name} needs {missing}" in message and 'pip install -e ".[demos]"' in message
    assert os.listdir(tmp_path) == [] and capsys.readouterr().out == ""


class Started(Exception):
    """Raised by the first step of a demo's work: every check before it passed."""


def test_the_tour_without_pictures_needs_no_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)

    def first_step():
        raise Started

    monkeypatch.setattr(tour, "worked_attention", first_step)
    with pytest.raises(Started):
        tour.main(["--no-pictures"])


def test_threads(monkeypatch):
    before = minigrad.get_num_threads()
    try:
        addition.main(["--steps", "1", "--n-layer", "1", "--d-model", "8", "--n-head", "2", "--batch-size", "2",
                       "--quiet", "--threads", "1"])
        assert minigrad.get_num_threads() == 1
    finally:
        minigrad.set_num_threads(before)
    with pytest.raises(SystemExit):
        addition.build_parser().parse_args(["--threads", "0"])


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_in_a_log_prints_a_few_whole_lines(capsys):
    clock = FakeClock()
    bar = common.Progress(range(100), desc="copy task", clock=clock)
    for step in bar:
        clock.now += 0.5
        bar.set_postfix(loss=f"{1 / (step + 1):.3f}")
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 10 and "\r" not in err
    assert lines[0] == "copy task: 10/100 (10%), loss 0.100, 500 ms/step, ETA 0:00:45"
    assert lines[-1].startswith("copy task: 100/100 (100%), loss 0.010, 500 ms/step, ETA 0:00:00")


def test_progress_eta_leaves_out_paused_time():
    clock = FakeClock()
    bar = common.Progress(total=2000, clock=clock, disable=True)
    with bar.paused():  # the evaluation before the first step
        clock.now += 13.0
    clock.now += 0.1
    bar.update()
    assert bar.pace() == "100 ms/step, ETA 0:03:20"  # not 13.1 s/step, ETA 7:16:40
    for _ in range(10):
        clock.now += 0.2
        bar.update()
    assert bar.pace() == "200 ms/step, ETA 0:06:38"  # the speed since the last report


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_a_bar_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    bar = common.Progress(range(3), desc="steps")
    assert bar.bar is not None and type(bar.bar).__module__ == "tqdm.std"  # never tqdm's notebook widget
    list(bar)
    bar.close()
    assert "steps" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file, a pipe, a notebook's stream
    assert common.Progress(range(3)).bar is None


def test_tour_quick(tmp_path, capsys):
    result = tour.main(["--quick", "--out", str(tmp_path)])  # not a terminal: progress as a few plain lines
    captured = capsys.readouterr()
    out = captured.out
    progress_lines = [line for line in captured.err.splitlines() if line.startswith("copy task:")]
    assert len(progress_lines) == 10 and progress_lines[-1].startswith("copy task: 30/30 (100%), loss ")
    assert "\r" not in out + captured.err and "gradcheck" not in captured.err

    # the worked examples
    assert "[[1.0000 1.5000 1.5000]" in out  # scores, first row: (2, 3, 3) / 2
    assert "[[0.4011 0.1978 0.4011]]" in out and "[[0.8022]]" in out  # the practice question
    assert "0.8415    0.5403    0.0464    0.9989    0.0022    1.0000" in out  # PE, position 1

    # one gradient-check row per layer, all ok
    rows = result["gradcheck"]
    assert len(rows) == 14
    for name, elements, max_abs, max_rel, passed in rows:
        assert passed and elements > 0 and max_abs < 1e-6, name
    table = out[out.index("2. Gradient check"):out.index("3. An encoder-decoder")]
    assert table.count("  ok\n") == 14 and "FAIL" not in table
    rows = [line for line in table.splitlines()[2:] if line and not line.startswith("=")]
    assert all(line.startswith("  ") for line in rows)  # nothing of a progress bar before a row

    copy = result["copy"]
    assert 0.0 <= copy["exact_match"] <= 1.0 and math.isfinite(copy["loss"])
    assert copy["history"] and all(math.isfinite(h[2]) for h in copy["history"])

    for path in result["pictures"]:
        assert os.path.getsize(path) > 0
    assert sum(p.endswith(".png") for p in result["pictures"]) == 5
    assert out.strip().splitlines()[-1].startswith("tour: 14/14 gradient checks ok")


def test_tour_no_pictures(tmp_path, monkeypatch):
    # skip the slow part (the gradient checks are covered above): only the flag is tested here
    monkeypatch.setattr(tour, "gradient_check_table", lambda quiet: [])
    result = tour.main(["--quick", "--quiet", "--no-pictures", "--out", str(tmp_path / "none")])
    assert result["pictures"] == [] and not (tmp_path / "none").exists()


def test_pictures(tmp_path, capsys):
    paths = pictures.main(["--out", str(tmp_path), "--steps", "3", "--quiet"])
    names = {os.path.basename(p) for p in paths}
    assert {"positional_encoding.png", "loss.png", "attention_encoder1_self.png", "attention_decoder1_self.png",
            "attention_decoder1_cross.png"} <= names
    for path in paths:
        assert os.path.getsize(path) > 0
    assert (tmp_path / "graph.dot").read_text().startswith("digraph")  # with or without Graphviz
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("pictures:")


def test_attention_heatmaps_given_weights(tmp_path):
    weights = np.full((3, 2, 4), 0.25)
    path = pictures.attention_heatmaps(weights, ["a", "b"], list("wxyz"), tmp_path / "w.png", "uniform")
    assert os.path.getsize(path) > 0


def test_copy_task(capsys):
    result = copy_task.main(["--steps", "3", "--d-model", "8", "--num-heads", "2", "--d-ff", "16", "--num-layers", "1",
                             "--batch-size", "4", "--eval-size", "5", "--quiet"])
    assert 0.0 <= result["exact_match"] <= 1.0 and math.isfinite(result["loss"])
    assert "copy_task (copy): 3 steps" in capsys.readouterr().out


def test_addition_encoding():
    assert addition.encode(12, 34) == [1, 2, 3, 4, 6, 4, 0]  # 046 reversed
    assert addition.encode(95, 87) == [9, 5, 8, 7, 2, 8, 1]
    assert addition.decode_answer([6, 4, 0]) == 46
    train, test = addition.make_dataset(0.1, seed=0)
    assert len(train) == 9000 and len(test) == 1000
    assert len({tuple(s) for s in np.concatenate([train, test])}) == 10_000  # every pair exactly once
    x, y = addition.inputs_and_targets(train[:2])
    assert x.shape == y.shape == (2, 6)
    assert (y[:, :3] == -100).all() and (y[:, 3:] == train[:2, 4:]).all()  # loss on the answer only


def test_addition(capsys):
    result = addition.main(["--steps", "3", "--n-layer", "1", "--d-model", "8", "--n-head", "2", "--batch-size", "8",
                            "--quiet"])
    assert 0.0 <= result["accuracy"] <= 1.0 and math.isfinite(result["loss"])
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("addition: 3 steps")


def test_names_data_split_and_encodings():
    words = names.load_names()
    assert len(words) == 32_033 and words[:3] == ["emma", "olivia", "ava"]  # makemore's list, unchanged
    assert (names.DATA.parent / "NAMES_LICENSE").read_text().count("Copyright (c) 2022 Andrej Karpathy") == 1
    data = names.Names(words, seed=3)
    sizes = {k: len(v) for k, v in data.splits.items()}
    assert sizes == {"train": 25_626, "dev": 3_203, "test": 3_204}  # 80/10/10
    assert sorted(sum(data.splits.values(), [])) == sorted(words)  # every name in exactly one split
    assert data.splits == names.Names(words, seed=3).splits != names.Names(words, seed=4).splits
    assert data.chars[0] == "." and data.vocab == 27 and data.block == 16
    data.splits["train"] = ["ab", "c"]
    x, y = data.sequences("train")
    assert x[0, :4].tolist() == [0, 1, 2, 0] and y[0, :4].tolist() == [1, 2, 0, names.IGNORE]
    assert (y[1, 2:] == names.IGNORE).all() and (x[1, 2:] == 0).all()
    x, y = data.windows("train")
    assert x.tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 2], [0, 0, 0], [0, 0, 3]] and y.tolist() == [1, 2, 0, 3, 0]


def test_names_quick(capsys):
    result = names.main(["--quick", "--quiet", "--samples", "3"])
    out = capsys.readouterr().out
    assert set(result["results"]) == set(names.MODELS)
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split() == ["model", "parameters", "steps", "seconds", "train", "dev", "test"]
    for model, r in result["results"].items():
        assert f"\n{model} " in out  # its row of the table
        assert 1.5 < r["test"] < math.log(27) + 0.5, (model, r)  # between a good model and a bad guess
        assert len(result["samples"][model]) == 3 and all(set(s) <= set("abcdefghijklmnopqrstuvwxyz")
                                                           for s in result["samples"][model])
    assert result["results"]["bigram"]["test"] < 2.5  # counting needs no training: ~2.45 on this list
    assert out.strip().splitlines()[-1].startswith("names: 5 models in ")
    with pytest.raises(SystemExit, match="unknown model lstm"):
        names.main(["--models", "lstm", "--quiet"])


def test_char_gpt_checkpoint_and_resume(tmp_path, capsys):
    losses = char_gpt.main(["--max-iters", "3", "--out", str(tmp_path), *TINY_CHAR_GPT])
    assert math.isfinite(losses["val"])
    assert (tmp_path / "ckpt.npz").stat().st_size > 0 and (tmp_path / "loss.png").exists()
    capsys.readouterr()

    char_gpt.main(["--max-iters", "5", "--out", str(tmp_path), "--resume", *TINY_CHAR_GPT])
    out = capsys.readouterr().out
    assert "resumed from" in out and "at step 3" in out
    assert "char_gpt: 2 iterations" in out  # only the iterations after the checkpoint ran


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason=f"{SHAKESPEARE} is not there")
def test_char_gpt_on_shakespeare(tmp_path):
    losses = char_gpt.main(["--data", str(SHAKESPEARE), "--max-iters", "3", "--out", str(tmp_path), *TINY_CHAR_GPT])
    assert math.isfinite(losses["train"]) and math.isfinite(losses["val"])


def test_cnn_shapes_and_the_mlp_of_about_its_size():
    model = cnn.LeNet(channels=4)
    x = minigrad.tensor(np.random.default_rng(0).random((3, 1, 8, 8)), dtype=np.float32)
    assert model(x).shape == (3, 10)
    maps = cnn.feature_maps(model, x.numpy()[0])
    assert [m.shape for _, m in maps] == [(4, 8, 8), (8, 4, 4)] and all((m >= 0).all() for _, m in maps)  # ReLU
    assert model.training  # feature_maps looks in eval mode, then puts the model back
    for size in (cnn.count(model), cnn.count(cnn.LeNet())):
        mlp = cnn.mlp_like(size)
        assert abs(cnn.count(mlp) - size) <= 75 // 2 + 1  # the nearest hidden width: within half a unit's 75


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="the digits come with scikit-learn")
def test_cnn_quick(tmp_path, capsys):
    result = cnn.main(["--quick", "--out", str(tmp_path), "--quiet"])  # one epoch of each model
    out = capsys.readouterr().out
    for name in ("cnn", "mlp"):
        # one epoch already labels most digits; a model that learned nothing gets about 10%
        assert 0.5 < result[name]["accuracy"] <= 1.0 and math.isfinite(result[name]["loss"]), name
        assert len(result[name]["losses"]) == math.ceil(cnn.TRAIN_SIZE / 32)
    assert sorted(os.path.basename(p) for p in result["pictures"]) == ["feature_maps.png", "filters.png"]
    assert all(os.path.getsize(p) > 0 for p in result["pictures"])
    assert "MLP 64-" in out and "parameters, test accuracy" in out
    assert out.strip().splitlines()[-1].startswith("cnn: LeNet-style CNN ") and "1 epoch in" in out
