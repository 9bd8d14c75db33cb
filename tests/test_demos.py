"""Smoke tests: every demo runs end to end with tiny settings, in seconds, and reports sensibly."""
import math
import os
from pathlib import Path

import numpy as np
import pytest

from demos import addition, char_gpt, copy_task, pictures, tour

SHAKESPEARE = Path(__file__).parents[2] / "shared/data/tinyshakespeare.txt"
TINY_CHAR_GPT = ["--eval-interval", "2", "--eval-iters", "1", "--n-layer", "1", "--d-model", "16", "--n-head", "2",
                 "--block-size", "8", "--batch-size", "2", "--quiet", "--sample-chars", "20"]


@pytest.mark.parametrize("demo", [tour, pictures, addition, copy_task, char_gpt])
def test_help(demo, capsys):
    with pytest.raises(SystemExit) as exit_info:
        demo.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--seed" in out and "usage" in out


def test_tour_quick(tmp_path, capsys):
    result = tour.main(["--quick", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out

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


def test_char_gpt_checkpoint_and_resume(tmp_path, capsys):
    losses = char_gpt.main(["--max-iters", "3", "--out", str(tmp_path), *TINY_CHAR_GPT])
    assert math.isfinite(losses["val"])
    assert (tmp_path / "ckpt.npz").stat().st_size > 0 and (tmp_path / "loss.png").exists()
    capsys.readouterr()

    char_gpt.main(["--max-iters", "5", "--out", str(tmp_path), "--resume", *TINY_CHAR_GPT])
    out = capsys.readouterr().out
    assert "resumed from" in out and "at iteration 3" in out
    assert "char_gpt: 2 iterations" in out  # only the iterations after the checkpoint ran


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason=f"{SHAKESPEARE} is not there")
def test_char_gpt_on_shakespeare(tmp_path):
    losses = char_gpt.main(["--data", str(SHAKESPEARE), "--max-iters", "3", "--out", str(tmp_path), *TINY_CHAR_GPT])
    assert math.isfinite(losses["train"]) and math.isfinite(losses["val"])
