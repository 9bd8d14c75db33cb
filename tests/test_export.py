"""demos.export and .safetensors: a char_gpt run handed to nanoGPT (ckpt.pt, meta.pkl, train.bin,
the run's settings) continues there with the same weights and the same AdamW moments; a nanoGPT
checkpoint comes back as a char_gpt one; any model's weights round-trip through .safetensors, and
broken or hostile .safetensors files are refused.

The PyTorch side is a nanoGPT-layout model written here from nanoGPT's published layout (its
state-dict names and shapes, its GPTConfig fields, its two AdamW groups): the tests need neither
nanoGPT nor a GPU, and skip without torch."""
import dataclasses
import io
import json
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad
from demos import char_gpt, export
from demos import sample as sample_demo
from minigrad.serialization import CheckpointError
from transformer import GPT, GPTConfig, Transformer

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\n" * 12
TINY = ["--n-layer", "2", "--n-head", "2", "--d-model", "16", "--block-size", "8", "--batch-size", "3",
        "--weight-decay", "0.1", "--beta2", "0.95", "--max-iters", "50"]


@pytest.fixture
def safetensors():
    """The safetensors package (the export extra), or skip."""
    return pytest.importorskip("safetensors")


# ---------------------------------------------------------------------------- a char_gpt run, by hand
def make_run(tmp_path, *flags, steps=3):
    """A char_gpt run of `steps` AdamW steps on TEXT, saved to tmp_path/run/ckpt.npz: (run, args, path)."""
    text = tmp_path / "tiny.txt"
    text.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "run"
    args = char_gpt.build_parser().parse_args(["--data", str(text), "--out", str(out), *TINY, *flags])
    minigrad.manual_seed(0)
    run = char_gpt.new_run(args)
    for _ in range(steps):
        train_step(run, *run.data.batch("train", args.batch_size, args.block_size), lr=1e-3)
    run.step, run.best_val, run.best_step = steps, 3.5, steps
    out.mkdir(exist_ok=True)
    run.save(out / "ckpt.npz", args)
    return run, args, out / "ckpt.npz"


def train_step(run, x, y, lr):
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    _, loss = run.model(minigrad.tensor(x), minigrad.tensor(y))
    run.optimizer.zero_grad()
    loss.backward()
    run.optimizer.step()


# ---------------------------------------------------------------------------- nanoGPT's layout, in torch
def nanogpt_layout():
    """A GPT with nanoGPT's module tree (so its state-dict keys and shapes) and its forward math:
    pre-LN blocks, LayerNorm(eps 1e-5) with an optional bias, exact (erf) GELU, causal attention,
    learned positions, lm_head tied to transformer.wte. Returns (Config, Model, optimizer_for)."""
    torch = pytest.importorskip("torch")
    nn, F = torch.nn, torch.nn.functional

    @dataclasses.dataclass
    class Config:  # nanoGPT's GPTConfig fields, no more (its sample.py calls GPTConfig(**model_args))
        block_size: int
        vocab_size: int
        n_layer: int
        n_head: int
        n_embd: int
        dropout: float
        bias: bool

    class Norm(nn.Module):
        def __init__(self, n, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.bias = nn.Parameter(torch.zeros(n)) if bias else None

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
            self.c_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
            self.n_head = c.n_head

        def forward(self, x):
            B, T, C = x.shape
            heads = [t.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                     for t in self.c_attn(x).split(C, dim=2)]  # q, k, v: (B, h, T, hd)
            y = F.scaled_dot_product_attention(*heads, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    class MLP(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
            self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.ln_1, self.attn = Norm(c.n_embd, c.bias), Attention(c)
            self.ln_2, self.mlp = Norm(c.n_embd, c.bias), MLP(c)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Model(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(c.vocab_size, c.n_embd), wpe=nn.Embedding(c.block_size, c.n_embd),
                drop=nn.Dropout(c.dropout), h=nn.ModuleList(Block(c) for _ in range(c.n_layer)),
                ln_f=Norm(c.n_embd, c.bias)))
            self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # tied

        def forward(self, idx, targets=None):
            t = self.transformer
            x = t.drop(t.wte(idx) + t.wpe(torch.arange(idx.shape[1])))
            for block in t.h:
                x = block(x)
            logits = self.lm_head(t.ln_f(x))  # every position (nanoGPT: every position when given targets)
            loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            return logits, loss

    def optimizer_for(model, weight_decay, lr, betas):
        """nanoGPT's configure_optimizers: dim >= 2 decays, in named_parameters() order, then the rest."""
        params = [p for _, p in model.named_parameters()]
        return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                                 lr=lr, betas=betas)

    return Config, Model, optimizer_for


def load_exported(out_dir):
    """ckpt.pt as nanoGPT's train.py reads it (weights_only=True), in the nanoGPT-layout model."""
    torch = pytest.importorskip("torch")
    Config, Model, optimizer_for = nanogpt_layout()
    ckpt = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location="cpu", weights_only=True)
    model = Model(Config(**ckpt["model_args"]))
    model.load_state_dict(ckpt["model"], strict=True)
    return ckpt, model, optimizer_for


def minigrad_logits(model, idx):
    model.eval()
    with minigrad.no_grad():
        return model(minigrad.tensor(idx))[0].numpy()


# Logit tolerance. Both sides compute in float32 from the same float32 weights; they differ only in
# the order of additions. A dot product of length K carries a relative error of at most ~K u
# (u = 2^-24) in its terms' magnitude; the longest here is K = 4 n_embd = 64, so ~64 u = 4e-6, and
# the two blocks, the LayerNorms' division by a standard deviation (not far from 1 with these
# weights) and the head add a few such terms each. Activations and logits are O(1): 1e-5 absolute
# holds every one of them with room to spare, and a mistake (a swapped or transposed matrix, a
# missing bias) moves logits by ~1e-2 or more.
LOGIT_ATOL = 1e-5


# ---------------------------------------------------------------------------- minigrad -> nanoGPT
@pytest.mark.parametrize("bias", [True, False])
def test_export_loads_strictly_and_gives_the_same_logits(tmp_path, bias, capsys):
    torch = pytest.importorskip("torch")
    run, args, path = make_run(tmp_path, *(["--bias"] if bias else []))
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(tmp_path / "nano")])
    ckpt, model, _ = load_exported(tmp_path / "nano")  # strict load_state_dict: every key and shape

    assert list(ckpt["model_args"]) == list(export.MODEL_ARGS)  # exactly nanoGPT's GPTConfig fields
    assert set(ckpt["model_args"]) == {f.name for f in dataclasses.fields(nanogpt_layout()[0])}
    assert ckpt["model_args"]["n_embd"] == 16 and ckpt["model_args"]["bias"] is bias
    assert ckpt["iter_num"] == 3 and ckpt["best_val_loss"] == 3.5 and ckpt["config"]["dataset"] == "tiny_char"
    # lm_head.weight is transformer.wte.weight, one storage, in the file as in the model
    assert ckpt["model"]["lm_head.weight"].data_ptr() == ckpt["model"]["transformer.wte.weight"].data_ptr()

    idx = np.stack([run.data.splits["val"][i:i + 8] for i in (0, 5)])
    with torch.no_grad():
        theirs = model.eval()(torch.tensor(idx))[0].numpy()
    np.testing.assert_allclose(theirs, minigrad_logits(run.model, idx), rtol=0, atol=LOGIT_ATOL)


def test_one_more_adamw_step_in_torch_equals_one_more_in_minigrad(tmp_path):
    torch = pytest.importorskip("torch")
    run, args, path = make_run(tmp_path, "--bias")
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(tmp_path / "nano")])
    ckpt, model, optimizer_for = load_exported(tmp_path / "nano")
    optimizer = optimizer_for(model, 0.1, 6e-4, (0.9, 0.99))
    optimizer.load_state_dict(ckpt["optimizer"])

    # the moments by name: a wrongly numbered state would load silently into the wrong parameters
    ours = dict(zip(export.minigrad_names(run.model, 0.1),
                    (p for g in run.optimizer.param_groups for p in g["params"])))
    named = dict(model.named_parameters())
    assert len(named) == len(ours)
    for name, p in ours.items():
        state, mine = optimizer.state[named[f"transformer.{name}"]], run.optimizer.state[p]
        assert float(state["step"]) == mine["step"] == 3, name
        np.testing.assert_array_equal(state["exp_avg"].numpy(), mine["exp_avg"], err_msg=name)
        np.testing.assert_array_equal(state["exp_avg_sq"].numpy(), mine["exp_avg_sq"], err_msg=name)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    assert [tuple(g["betas"]) for g in optimizer.param_groups] == [(0.9, 0.95)] * 2  # the run's, not the new ones

    x, y = run.data.batch("train", 3, 8)
    lr = 1e-3
    train_step(run, x, y, lr)
    model.train()
    for group in optimizer.param_groups:
        group["lr"] = lr
    _, loss = model(torch.tensor(x), torch.tensor(y))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    # Tolerance. Both sides apply the same AdamW formula in float32, in a different order of
    # operations: a weight may differ by a few units in its last place, rtol = 4 * 2^-23 = 4.8e-7 of
    # its value. On top, the gradients differ by float32 rounding (relative ~1e-5 after the backward
    # pass through two blocks), which enter m and v with weights 1 - β1 = 0.1 and 1 - β2 = 0.05 and
    # move lr m̂ / (√v̂ + eps) (at most ~lr = 1e-3) by ~1e-5 relative: ~1e-8; atol = 1e-7 is ten times
    # that. A missing decay (lr λ |w| ~ 1e-4 |w|, 6e-6 for a typical matrix entry) or a step on the
    # wrong moments (~lr) fails by far.
    # One exception: the key part of c_attn.bias. Adding b_k to every key adds q·b_k to all the scores
    # of a query, which the softmax ignores, so its gradient is exactly zero and both sides hold only
    # rounding noise, which Adam divides by its own running size into steps of up to ~lr. There the
    # two may differ by up to a step each: 2 lr.
    C = 16
    for name, p in ours.items():
        a, b = named[f"transformer.{name}"].detach().numpy(), p.numpy()
        if name.endswith("attn.c_attn.bias"):
            np.testing.assert_allclose(a[C:2 * C], b[C:2 * C], rtol=0, atol=2 * lr, err_msg=name)
            a, b = np.concatenate([a[:C], a[2 * C:]]), np.concatenate([b[:C], b[2 * C:]])
        np.testing.assert_allclose(a, b, rtol=4 * 2.0 ** -23, atol=1e-7, err_msg=name)


def test_meta_data_and_settings_are_what_nanogpt_reads(tmp_path, capsys):
    run, args, path = make_run(tmp_path)
    pytest.importorskip("torch")
    out = tmp_path / "nano"
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(out), "--dataset", "shakespeare_char"])
    printed = capsys.readouterr().out
    data = out / "data" / "shakespeare_char"
    with open(data / "meta.pkl", "rb") as f:
        info = pickle.load(f)
    chars = run.data.chars
    assert info == {"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                    "stoi": {c: i for i, c in enumerate(chars)}}
    # raw uint16 (np.fromfile, as train.py's memmap reads them), split 90 / 10 as char_gpt splits
    train, val = (np.fromfile(data / f"{s}.bin", dtype=np.uint16) for s in ("train", "val"))
    assert "".join(chars[i] for i in np.concatenate([train, val])) == TEXT
    assert len(train) == int(0.9 * len(TEXT))

    settings = {}
    exec((out / export.RESUME_CONFIG).read_text(), {}, settings)  # as nanoGPT's configurator does
    assert settings["init_from"] == "resume" and settings["out_dir"] == "."
    assert settings["dataset"] == "shakespeare_char"
    assert settings["learning_rate"] == args.lr and settings["beta2"] == 0.95 and settings["batch_size"] == 3
    assert settings["block_size"] == 8 and settings["gradient_accumulation_steps"] == 1
    assert settings["lr_decay_iters"] == settings["max_iters"] == 50
    for phrase in ("configurator.py", "data/shakespeare_char/", f"cd {out}", "train.py resume_config.py",
                   "torchrun --standalone --nproc_per_node=N", "--gradient_accumulation_steps=N", "sample.py",
                   "from-nanogpt"):
        assert phrase in printed, phrase


@pytest.mark.parametrize("flags, reason", [
    (["--norm", "rmsnorm"], "LayerNorm only"), (["--position", "rope"], "no RoPE"),
    (["--mlp", "swiglu"], "no SwiGLU"), (["--n-kv-head", "1"], "grouped-query")])
def test_export_refuses_what_nanogpt_cannot_hold(tmp_path, flags, reason):
    _, _, path = make_run(tmp_path, *flags, steps=1)
    with pytest.raises(SystemExit, match=reason) as error:
        export.main(["nanogpt", "--checkpoint", str(path), "--out", str(tmp_path / "nano")])
    assert "safetensors" in str(error.value) and not (tmp_path / "nano").exists()


def test_without_torch_the_export_says_what_to_install_and_exits_1(tmp_path):
    _, _, path = make_run(tmp_path, steps=1)
    code = ("import sys; sys.modules['torch'] = None\n"  # import torch now fails, as where it is not installed
            "from demos import export\n"
            f"export.main(['nanogpt', '--checkpoint', {str(path)!r}, '--out', {str(tmp_path / 'nano')!r}])")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "needs PyTorch" in done.stderr and "pip install torch" in done.stderr and '".[torch]"' in done.stderr
    assert not (tmp_path / "nano" / "ckpt.pt").exists()


# ---------------------------------------------------------------------------- nanoGPT -> minigrad
def test_imported_checkpoint_gives_the_same_logits_samples_and_resumes(tmp_path, capsys):
    pytest.importorskip("torch")
    run, args, path = make_run(tmp_path, "--bias")
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(tmp_path / "nano")])
    back = tmp_path / "back" / "ckpt.npz"
    export.main(["from-nanogpt", "--checkpoint", str(tmp_path / "nano" / "ckpt.pt"), "--out", str(back),
                 "--text", args.data])
    assert "demos.sample --checkpoint" in capsys.readouterr().out

    ckpt = minigrad.load(back)
    model, vocabulary = char_gpt.model_from_checkpoint(ckpt)
    idx = np.stack([run.data.splits["val"][:8]])
    # float32 -> torch float32 -> float32 changes no bit, so the logits are the very same
    np.testing.assert_array_equal(minigrad_logits(model, idx), minigrad_logits(run.model, idx))
    assert vocabulary.chars == run.data.chars and ckpt["iter"] == 3

    samples = sample_demo.main(["--checkpoint", str(back), "--num-samples", "1", "--max-new-tokens", "5",
                                "--start", "Speak"])
    assert samples[0].startswith("Speak") and len(samples[0]) == 10

    # char_gpt --resume takes it: the same step, moments, settings and text
    p = char_gpt.build_parser()
    argv = ["--resume", "--out", str(back.parent)]
    resumed = char_gpt.resume_run(p.parse_args(argv), char_gpt.given_flags(p, argv))
    assert resumed.step == 3 and resumed.data.chars == run.data.chars
    for mine, theirs in zip(run.model.parameters(), resumed.model.parameters()):
        np.testing.assert_array_equal(run.optimizer.state[mine]["exp_avg_sq"],
                                      resumed.optimizer.state[theirs]["exp_avg_sq"])
        assert resumed.optimizer.state[theirs]["step"] == 3
    assert [g["weight_decay"] for g in resumed.optimizer.param_groups] == [0.1, 0.0]


def test_import_strips_orig_mod_and_old_mask_buffers(tmp_path):
    torch = pytest.importorskip("torch")
    run, args, path = make_run(tmp_path)
    nano = tmp_path / "nano"
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(nano)])
    ckpt = torch.load(nano / "ckpt.pt", weights_only=True)
    # as torch.compile leaves it, with the causal-mask buffers of PyTorch < 2 checkpoints
    state = {f"_orig_mod.{k}": v for k, v in ckpt["model"].items()}
    for i in range(2):
        state[f"_orig_mod.transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
    ckpt["model"] = state
    del ckpt["optimizer"]
    ckpt["config"]["dataset"] = "elsewhere"
    torch.save(ckpt, nano / "compiled.pt")
    back = tmp_path / "new" / "compiled.npz"
    export.main(["from-nanogpt", "--checkpoint", str(nano / "compiled.pt"), "--out", str(back),
                 "--meta", str(nano / "data" / "tiny_char" / "meta.pkl")])
    ckpt = minigrad.load(back)
    model, _ = char_gpt.model_from_checkpoint(ckpt)
    idx = np.stack([run.data.splits["val"][:8]])
    np.testing.assert_array_equal(minigrad_logits(model, idx), minigrad_logits(run.model, idx))
    # no --text: the text comes back from train.bin and val.bin, for char_gpt --resume
    assert ckpt["settings"]["data"] == str(tmp_path / "new" / "elsewhere.txt")
    assert (tmp_path / "new" / "elsewhere.txt").read_text(encoding="utf-8") == TEXT


def test_import_refuses_pickled_code_and_finds_no_meta(tmp_path):
    torch = pytest.importorskip("torch")
    _, _, path = make_run(tmp_path, steps=1)
    nano = tmp_path / "nano"
    export.main(["nanogpt", "--checkpoint", str(path), "--out", str(nano)])
    ckpt = torch.load(nano / "ckpt.pt", weights_only=True)
    ckpt["best_val_loss"] = np.float64(3.5)  # a numpy scalar: weights_only=True refuses the file
    torch.save(ckpt, nano / "numpy.pt")
    with pytest.raises(SystemExit, match="--allow-pickle"):
        export.main(["from-nanogpt", "--checkpoint", str(nano / "numpy.pt"), "--out", str(tmp_path / "x.npz")])
    export.main(["from-nanogpt", "--checkpoint", str(nano / "numpy.pt"), "--out", str(tmp_path / "x.npz"),
                 "--allow-pickle"])
    assert minigrad.load(tmp_path / "x.npz")["best_val"] == 3.5

    with open(nano / "data" / "tiny_char" / "meta.pkl", "wb") as f:
        pickle.dump({"itos": {0: "a"}, "stoi": {"a": 0}, "vocab_size": 1, "x": io.BytesIO()}, f)
    with pytest.raises(SystemExit, match="names _io.BytesIO"):  # never built: find_class refuses it
        export.main(["from-nanogpt", "--checkpoint", str(nano / "ckpt.pt"), "--out", str(tmp_path / "y.npz")])
    os.remove(nano / "data" / "tiny_char" / "meta.pkl")
    with pytest.raises(SystemExit, match="no meta.pkl"):
        export.main(["from-nanogpt", "--checkpoint", str(nano / "ckpt.pt"), "--out", str(tmp_path / "y.npz")])


# ---------------------------------------------------------------------------- .safetensors
MODELS = {
    "gpt2": lambda: GPT(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=8),
    "gpt2-no-bias": lambda: GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, bias=False),
    "rmsnorm": lambda: GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, norm="rmsnorm"),
    "rope": lambda: GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, position="rope"),
    "swiglu": lambda: GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, mlp="swiglu"),
    "llama": lambda: GPT(vocab_size=11, block_size=8, n_layer=2, n_head=4, d_model=16, norm="rmsnorm",
                         position="rope", mlp="swiglu", n_kv_head=2, bias=False),
    "transformer": lambda: Transformer(9, 10, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0),
    "transformer-shared": lambda: Transformer(9, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0,
                                              share_embeddings=True, norm_first=True),
}


@pytest.mark.parametrize("kind", list(MODELS))
def test_safetensors_round_trip_for_every_model(safetensors, tmp_path, kind):
    minigrad.manual_seed(1)
    model = MODELS[kind]().eval()
    config = getattr(model, "config", None)
    metadata = {"config": json.dumps(dataclasses.asdict(config))} if config else {"kind": kind}
    minigrad.save_safetensors(model.state_dict(), tmp_path / "m.safetensors", metadata=metadata)
    weights, read = minigrad.load_safetensors(tmp_path / "m.safetensors", with_metadata=True)
    assert read == metadata
    minigrad.manual_seed(2)  # other weights, until loaded
    again = (GPT(GPTConfig(**json.loads(read["config"]))) if config else MODELS[kind]()).eval()
    again.load_state_dict(weights)  # strict: every name, every shape
    for (name, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    idx = minigrad.tensor(np.array([[1, 2, 3, 4, 5]]))
    with minigrad.no_grad():
        if config:  # the same logits, to the bit: the same weights in the same code
            np.testing.assert_array_equal(model(idx)[0].numpy(), again(idx)[0].numpy())
        else:
            np.testing.assert_array_equal(model(idx, idx).numpy(), again(idx, idx).numpy())


def test_safetensors_export_command_keeps_config_and_characters(safetensors, tmp_path, capsys):
    run, _, path = make_run(tmp_path, "--norm", "rmsnorm", "--position", "rope", steps=1)
    export.main(["safetensors", "--checkpoint", str(path), "--out", str(tmp_path / "m.safetensors")])
    weights, metadata = minigrad.load_safetensors(tmp_path / "m.safetensors", with_metadata=True)
    assert json.loads(metadata["config"]) == dataclasses.asdict(run.model.config)
    assert metadata["chars"] == "".join(run.data.chars) and metadata["iter"] == "1"
    model = GPT(GPTConfig(**json.loads(metadata["config"])))
    model.load_state_dict(weights)
    idx = np.stack([run.data.splits["val"][:8]])
    np.testing.assert_array_equal(minigrad_logits(model, idx), minigrad_logits(run.model, idx))


def test_save_safetensors_refuses_what_the_format_cannot_hold(safetensors, tmp_path):
    with pytest.raises(TypeError, match="holds only arrays"):
        minigrad.save_safetensors({"step": 3}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="dtype complex128"):
        minigrad.save_safetensors({"z": np.zeros(2, complex)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="str -> str"):
        minigrad.save_safetensors({"w": np.zeros(2)}, tmp_path / "x.safetensors", metadata={"n": 1})
    assert not (tmp_path / "x.safetensors").exists()


def safetensors_file(header, data=b"", length=None):
    """The bytes of a .safetensors file with this header (a dict, or raw bytes) and data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


HOSTILE = {
    "shorter than its header length": (b"\x01\x02", "only 2 bytes"),
    "a huge header": (struct.pack("<Q", 2 ** 62) + b"{}", "at most 100,000,000"),
    "a header longer than the file": (safetensors_file({}, length=1000), "holds only 2"),
    "a header that is not JSON": (safetensors_file(b"\xff{"), "not UTF-8 JSON"),
    "a deeply nested header": (safetensors_file(b"[" * 100_000 + b"]" * 100_000), "not UTF-8 JSON"),
    "a header that is a list": (safetensors_file(b"[]"), "not an object"),
    "metadata that is not str": (safetensors_file({"__metadata__": {"n": 1}}), "str -> str"),
    "an unknown dtype": (safetensors_file({"w": entry(dtype="Q7")}, b"\0" * 8), "dtype 'Q7'"),
    "a dtype that is not a name": (safetensors_file({"w": entry(dtype=[4])}, b"\0" * 8), "dtype '\\[4\\]'"),
    "bfloat16, which numpy lacks": (safetensors_file({"w": entry(dtype="BF16", offsets=(0, 4))}, b"\0" * 4),
                                    "numpy has no such dtype"),
    "a negative dimension": (safetensors_file({"w": entry(shape=(-2,))}, b"\0" * 8), "integers >= 0"),
    "a size that does not match the bytes": (safetensors_file({"w": entry(shape=(3,))}, b"\0" * 8),
                                             "12 bytes, but its data_offsets span 8"),
    "a shape of 2^80 elements": (safetensors_file({"w": entry(shape=(2 ** 40, 2 ** 40))}, b"\0" * 8),
                                 "but its data_offsets span 8"),
    "offsets past the end": (safetensors_file({"w": entry(offsets=(0, 8))}, b"\0" * 4), "within the 4 bytes"),
    "overlapping tensors": (safetensors_file({"a": entry(), "b": entry()}, b"\0" * 8), "overlapping"),
    "a gap before a tensor": (safetensors_file({"a": entry(offsets=(4, 12))}, b"\0" * 12), "a gap"),
    "bytes after the last tensor": (safetensors_file({"a": entry()}, b"\0" * 12), "cover 8 bytes"),
    "an entry without offsets": (safetensors_file({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "expected"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_safetensors_files_are_refused_with_a_clear_error(safetensors, tmp_path, case):
    data, message = HOSTILE[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=message):
        minigrad.load_safetensors(path)


def test_a_truncated_safetensors_file_is_refused(safetensors, tmp_path):
    minigrad.save_safetensors({"w": np.arange(100, dtype=np.float32)}, tmp_path / "w.safetensors")
    whole = (tmp_path / "w.safetensors").read_bytes()
    for cut in (4, 20, len(whole) - 1):
        (tmp_path / "cut.safetensors").write_bytes(whole[:cut])
        with pytest.raises(CheckpointError):
            minigrad.load_safetensors(tmp_path / "cut.safetensors")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_safetensors_files_raise_checkpoint_error_or_load(safetensors, tmp_path, data):
    """Random bytes of a valid file overwritten: CheckpointError, or (the format has no checksum: a
    byte of the data, a letter of a name, a shape of the same size) arrays that fit in the file, and
    never another error."""
    path = tmp_path / "w.safetensors"
    if not path.exists():
        minigrad.save_safetensors({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(4)}, path,
                                  metadata={"config": "{}"})
    whole = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        whole[data.draw(st.integers(0, len(whole) - 1))] = data.draw(st.integers(0, 255))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(whole))
    try:
        arrays = minigrad.load_safetensors(bad)
    except CheckpointError:
        return
    assert len(arrays) == 2 and all(isinstance(a, np.ndarray) for a in arrays.values())
    assert sum(a.nbytes for a in arrays.values()) == 6 * 4 + 4 * 8


def test_without_the_package_safetensors_says_what_to_install(tmp_path, monkeypatch):
    _, _, path = make_run(tmp_path, steps=1)
    monkeypatch.setitem(sys.modules, "safetensors", None)  # import safetensors now fails
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        minigrad.save_safetensors({"w": np.zeros(2)}, tmp_path / "w.safetensors")
    with pytest.raises(SystemExit) as error:
        export.main(["safetensors", "--checkpoint", str(path), "--out", str(tmp_path / "m.safetensors")])
    assert error.value.code == 1 and not (tmp_path / "m.safetensors").exists()
