"""Smoke test: demos/modern_blocks.py runs end to end with tiny settings and reports sensibly."""
import math
import re

import pytest

from demos import modern_blocks

TINY = ["--steps", "3", "--n-layer", "1", "--d-model", "16", "--n-head", "4", "--n-kv-head", "2",
        "--block-size", "8", "--batch-size", "2", "--eval-batches", "1", "--new-tokens", "6", "--quiet"]


def test_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        modern_blocks.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--seed" in out and "--steps" in out and "usage" in out


def test_modern_blocks_quick(capsys):
    losses = modern_blocks.main([*TINY, "--one-at-a-time"])
    out = capsys.readouterr().out
    assert list(losses) == ["nanoGPT-style", "+ rmsnorm", "+ rope", "+ swiglu", "+ n_kv_head=2", "LLaMA-style"]
    assert all(math.isfinite(v) and 0 < v < 10 for v in losses.values())
    # the properties: RoPE scores equal for equal offsets, RMSNorm keeps the mean, the cache changes nothing
    scores = dict(re.findall(r"\(m - n = (\d)\)\s+score (\S+)", out)[i] for i in (0, 3))
    assert len(set(re.findall(r"\(m - n = 2\)\s+score (\S+)", out))) == 1 and scores["2"] != scores["3"]
    assert "RMSNorm [0.302 0.603 0.905 1.206 1.508] mean +0.905" in out
    assert out.count("same tokens: True") == 2
    # the table: a row per model with its parameter count
    assert re.search(r"LLaMA-style\s+rmsnorm\s+rope\s+swiglu\s+2\s+[\d,]+\s+\d+\.\d{4}", out)
    assert re.search(r"nanoGPT-style\s+layernorm\s+learned\s+gelu\s+4\s+[\d,]+\s+\d+\.\d{4}", out)
