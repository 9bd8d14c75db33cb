"""demos.char_gpt as a nanoGPT stand-in: resume from the checkpoint alone, the best checkpoint,
Ctrl-C, a NaN stop and a log that stays short. Every run is a tiny model for a few steps."""
import math
import os
import signal

import numpy as np
import pytest

import minigrad
from demos import char_gpt

TINY = ["--eval-iters", "1", "--n-layer", "1", "--d-model", "16", "--n-head", "2", "--block-size", "8",
        "--batch-size", "2", "--quiet", "--sample-chars", "5", "--warmup-iters", "2"]


@pytest.fixture
def text_file(tmp_path):
    """A text whose vocabulary (8 characters) differs from the built-in corpus's."""
    path = tmp_path / "text.txt"
    path.write_text("abc defg\nhab cafe\n" * 200, encoding="utf-8")
    return str(path)


def run(out, *flags):
    return char_gpt.main(["--out", str(out), *TINY, *flags])


def interrupt_at(monkeypatch, call, how):
    """Make the call-th training batch interrupt the run: by a real SIGINT (Ctrl-C) or by raising
    KeyboardInterrupt where it stands."""
    batch, calls = char_gpt.CharData.batch, []

    def interrupting(self, split, *args):
        if split == "train":
            calls.append(1)
            if len(calls) == call:
                if how == "signal":
                    os.kill(os.getpid(), signal.SIGINT)
                else:
                    raise KeyboardInterrupt
        return batch(self, split, *args)

    monkeypatch.setattr(char_gpt.CharData, "batch", interrupting)


def test_resume_takes_model_vocabulary_and_data_from_the_checkpoint(tmp_path, text_file, capsys):
    run(tmp_path, "--data", text_file, "--max-iters", "4", "--eval-interval", "2", "--position", "rope")
    ckpt = minigrad.load(tmp_path / "ckpt.npz")
    assert ckpt["chars"] == "\n abcdefgh" and ckpt["config"]["vocab_size"] == 10
    assert ckpt["config"]["position"] == "rope" and ckpt["settings"]["data"] == text_file
    capsys.readouterr()

    # neither --data nor the model's flags: both come from the checkpoint (the built-in corpus has
    # another vocabulary, so a model rebuilt from the defaults would not load the weights)
    losses = char_gpt.main(["--out", str(tmp_path), "--resume", "--max-iters", "6", "--quiet", "--sample-chars", "5"])
    out = capsys.readouterr().out
    assert f"resumed from {tmp_path / 'ckpt.npz'} at step 4" in out and "except --max-iters" in out
    assert "vocabulary 10," in out
    assert "char_gpt: 2 iterations" in out and math.isfinite(losses["val"])
    resumed = minigrad.load(tmp_path / "ckpt.npz" if losses["best_step"] == 6 else tmp_path / "last.npz")
    assert resumed["iter"] == 6 and resumed["config"] == ckpt["config"]
    assert resumed["settings"]["eval_iters"] == 1 and resumed["settings"]["max_iters"] == 6


def test_resume_refuses_flags_that_change_the_model(tmp_path, capsys):
    run(tmp_path, "--max-iters", "2", "--eval-interval", "2")
    with pytest.raises(SystemExit) as stop:
        char_gpt.main(["--out", str(tmp_path), "--resume", "--max-iters", "4", "--n-layer", "2", "--d-model", "16",
                       "--mlp", "swiglu"])
    message = str(stop.value.code)
    assert "--n-layer 2 (the checkpoint's model has n_layer = 1)" in message
    assert "--mlp swiglu (the checkpoint's model has mlp = gelu)" in message
    assert "d-model" not in message  # given, but the checkpoint's own value


def test_resume_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(SystemExit) as stop:
        char_gpt.main(["--out", str(tmp_path / "empty"), "--resume"])
    assert "no checkpoint in" in str(stop.value.code) and "leave out --resume" in str(stop.value.code)


def test_resume_refuses_a_text_outside_the_vocabulary(tmp_path, text_file):
    run(tmp_path, "--data", text_file, "--max-iters", "2", "--eval-interval", "2")
    other = tmp_path / "other.txt"
    other.write_text("xyz " * 100, encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        char_gpt.main(["--out", str(tmp_path), "--resume", "--max-iters", "4", "--data", str(other)])
    assert "does not fit the checkpoint's model" in str(stop.value.code) and "'xyz'" in str(stop.value.code)


def test_the_best_checkpoint_is_kept(tmp_path, monkeypatch, capsys):
    val_losses = iter([4.0, 3.0, 3.5, 3.2])  # steps 0, 2, 4, 6: the best is at step 2
    monkeypatch.setattr(char_gpt, "estimate_loss", lambda *a: {"train": 3.0, "val": next(val_losses)})
    result = run(tmp_path, "--max-iters", "6", "--eval-interval", "2")
    out = capsys.readouterr().out
    assert f"step 2: train loss 3.0000, val loss 3.0000; saved {tmp_path / 'ckpt.npz'} (best val loss so far)" in out
    assert "step 4: train loss 3.0000, val loss 3.5000; not saved (the best val loss is 3.0000, at step 2)" in out
    best, last = minigrad.load(tmp_path / "ckpt.npz"), minigrad.load(tmp_path / "last.npz")
    assert best["iter"] == 2 and best["best_val"] == 3.0 and result["best_step"] == 2
    assert last["iter"] == 6 and f"saved the final state to {tmp_path / 'last.npz'}" in out
    weights = {k: v for k, v in best["model"].items()}
    assert not all(np.array_equal(weights[k], last["model"][k]) for k in weights)

    val_losses = iter([4.0, 3.0, 3.5])
    run(tmp_path / "always", "--max-iters", "4", "--eval-interval", "2", "--always-save")
    assert minigrad.load(tmp_path / "always" / "ckpt.npz")["iter"] == 4
    assert "val loss 3.5000; saved" in capsys.readouterr().out


def test_a_nan_loss_stops_the_run_and_saves_nothing(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        run(tmp_path, "--max-iters", "30", "--eval-interval", "10", "--lr", "1e4")
    message = str(stop.value.code)
    assert "the training loss is nan" in message and "minigrad.detect_anomaly()" in message
    assert "--lr 10000" in message and "no checkpoint was written" in message
    assert not (tmp_path / "ckpt.npz").exists() and not (tmp_path / "last.npz").exists()


@pytest.mark.parametrize("how", ["signal", "raise"])
def test_ctrl_c_saves_and_says_how_to_resume(tmp_path, monkeypatch, capsys, how):
    interrupt_at(monkeypatch, 3, how)
    with pytest.raises(SystemExit) as stop:
        run(tmp_path, "--max-iters", "6", "--eval-interval", "2")
    assert stop.value.code == 130
    out = capsys.readouterr().out
    # the 3rd training batch is the 2nd step's (the 1st is the step-0 evaluation's): Ctrl-C (a signal)
    # lets that step finish, a KeyboardInterrupt raised inside it leaves 1 step done
    done = 2 if how == "signal" else 1
    assert f"interrupted at step {done}: saved {tmp_path / 'last.npz'}" in out
    assert f"continue with: python -m demos.char_gpt --resume --out {tmp_path}" in out
    assert minigrad.load(tmp_path / "last.npz")["iter"] == done
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


def test_a_resumed_run_continues_exactly(tmp_path, monkeypatch, capsys):
    whole = run(tmp_path / "whole", "--max-iters", "6", "--eval-interval", "2")
    interrupt_at(monkeypatch, 3, "signal")
    with pytest.raises(SystemExit):
        run(tmp_path / "parts", "--max-iters", "6", "--eval-interval", "2")
    monkeypatch.undo()
    resumed = char_gpt.main(["--out", str(tmp_path / "parts"), "--resume", "--quiet"])
    assert "resumed from" in capsys.readouterr().out
    assert resumed["val"] == whole["val"] and resumed["train"] == whole["train"]


def test_a_log_stays_short(tmp_path, capsys, monkeypatch):
    # not a terminal (pytest captures stderr): no bar, a line every --log-interval steps
    plotted = {}
    monkeypatch.setattr(char_gpt, "plot_losses", lambda history, path, title, train: plotted.update(train=train))
    flags = [f for f in TINY if f != "--quiet"]
    char_gpt.main(["--out", str(tmp_path), *flags, "--max-iters", "120", "--eval-interval", "60",
                   "--log-interval", "20"])
    captured = capsys.readouterr()
    assert "\r" not in captured.out + captured.err and "training" not in captured.err
    lines = captured.out.splitlines()
    assert len([line for line in lines if "(mean of the last 20 steps)" in line]) == 6
    assert len(lines) < 25 and len(captured.out) < 2500
    assert [step for step, _ in plotted["train"]] == [20, 40, 60, 80, 100, 120]
    assert "ETA" in next(line for line in lines if line.startswith("step 20: loss"))


def test_help_and_defaults():
    p = char_gpt.build_parser()
    text = p.format_help()
    assert text.startswith("usage: python -m demos.char_gpt")
    for flag in ("--log-interval", "--always-save", "--resume", "--threads"):
        assert flag in text
    args = p.parse_args([])  # nanoGPT's Shakespeare configuration for a CPU
    assert (args.n_layer, args.n_head, args.d_model, args.block_size, args.batch_size, args.max_iters) == \
        (4, 4, 128, 64, 12, 2000)
    assert (args.lr, args.min_lr, args.dropout, args.bias, args.eval_iters) == (1e-3, 1e-4, 0.0, False, 20)


def test_compile_trains_to_the_same_weights(tmp_path, capsys):
    """--compile replays the step (minigrad.compile): the same run, bit for bit, and its log says nothing new."""
    results = [run(tmp_path / name, "--max-iters", "6", "--eval-interval", "3", "--seed", "5", *flags)
               for name, flags in (("eager", ()), ("compiled", ("--compile",)))]
    (eager_losses, compiled_losses) = [(r["train"], r["val"], r["best_step"]) for r in results]
    assert compiled_losses == eager_losses
    eager, compiled = (minigrad.load(tmp_path / name / "ckpt.npz")["model"] for name in ("eager", "compiled"))
    assert eager.keys() == compiled.keys()
    assert all(np.array_equal(eager[k], compiled[k]) for k in eager)
    assert "runs eagerly" not in capsys.readouterr().err
