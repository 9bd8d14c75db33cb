"""demos.sample: text from a char_gpt checkpoint, with nanoGPT's sample.py flags."""
import pytest

from demos import char_gpt, sample


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("char_gpt")
    text = out / "text.txt"
    text.write_text("to be or not to be\n" * 100, encoding="utf-8")
    char_gpt.main(["--data", str(text), "--out", str(out), "--max-iters", "4", "--eval-interval", "4",
                   "--eval-iters", "1", "--n-layer", "1", "--d-model", "16", "--n-head", "2", "--block-size", "8",
                   "--batch-size", "2", "--quiet", "--sample-chars", "1"])
    return str(out / "ckpt.npz")


def draw(checkpoint, *flags):
    return sample.main(["--checkpoint", checkpoint, *flags])


def test_samples_start_with_the_prompt_and_use_the_vocabulary(checkpoint, capsys):
    texts = draw(checkpoint, "--start", "to be", "--num-samples", "3", "--max-new-tokens", "12", "--seed", "7")
    assert len(texts) == 3
    for text in texts:
        assert text.startswith("to be") and len(text) == 5 + 12 and set(text) <= set("to ber\nn")
    out = capsys.readouterr().out
    assert out.startswith(f"{checkpoint}: step 4, val loss") and all(text in out for text in texts)
    assert draw(checkpoint, "--start", "to be", "--num-samples", "3", "--max-new-tokens", "12", "--seed", "7") == texts
    assert draw(checkpoint, "--start", "to be", "--num-samples", "3", "--max-new-tokens", "12", "--seed", "8") != texts


def test_top_k_1_is_greedy_and_a_prompt_may_come_from_a_file(checkpoint, tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("not to", encoding="utf-8")
    texts = draw(checkpoint, "--start", f"FILE:{prompt}", "--top-k", "1", "--num-samples", "2",
                 "--max-new-tokens", "20", "--temperature", "2.0")
    assert texts[0] == texts[1] and texts[0].startswith("not to") and len(texts[0]) == 26


def test_prompts_longer_than_the_context_are_cut(checkpoint):
    (text,) = draw(checkpoint, "--start", "to be or not to be", "--num-samples", "1", "--max-new-tokens", "3")
    assert text.startswith("to be or not to be") and len(text) == 21  # block_size is 8


@pytest.mark.parametrize("flags, message", [
    (["--start", "xyz"], "'xyz' are not among them"),
    (["--start", "FILE:/no/such/file.txt"], "--start FILE:/no/such/file.txt: No such file"),
    (["--num-samples", "0"], "--num-samples and --top-k must be at least 1"),
])
def test_bad_flags_are_explained(checkpoint, flags, message):
    with pytest.raises(SystemExit) as stop:
        draw(checkpoint, *flags)
    assert message in str(stop.value.code)


def test_a_missing_checkpoint_is_explained(tmp_path):
    with pytest.raises(SystemExit) as stop:
        sample.main(["--checkpoint", str(tmp_path / "ckpt.npz")])
    message = str(stop.value.code)
    assert f"no checkpoint at {tmp_path / 'ckpt.npz'}" in message and "python -m demos.char_gpt" in message


def test_a_checkpoint_of_something_else_is_explained(tmp_path):
    import minigrad

    minigrad.save({"model": {}}, tmp_path / "other.npz")
    with pytest.raises(SystemExit) as stop:
        sample.main(["--checkpoint", str(tmp_path / "other.npz")])
    assert "not one of demos.char_gpt (it has no config, chars)" in str(stop.value.code)


def test_defaults():
    args = sample.build_parser().parse_args([])
    assert args.checkpoint == char_gpt.DEFAULT_CHECKPOINT == "out/char_gpt/ckpt.npz"
    assert (args.start, args.num_samples, args.max_new_tokens, args.temperature, args.top_k) == ("\n", 3, 500, 0.8, None)
    with pytest.raises(SystemExit):
        sample.build_parser().parse_args(["--temperature", "0"])
