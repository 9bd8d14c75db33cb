"""A char_gpt run handed to nanoGPT (one GPU, or several with torchrun) and back, or to .safetensors.

    python -m demos.export nanogpt --checkpoint out/char_gpt/ckpt.npz --out nanogpt_run [--text FILE]
    python -m demos.export from-nanogpt --checkpoint nanogpt_run/ckpt.pt --out out/from_nanogpt/ckpt.npz
    python -m demos.export safetensors --checkpoint out/char_gpt/ckpt.npz --out model.safetensors

nanogpt writes what nanoGPT's train.py and sample.py read (github.com/karpathy/nanoGPT):
    OUT/ckpt.pt                    the weights under nanoGPT's names (transformer.wte.weight, ...,
                                   lm_head.weight tied to transformer.wte.weight), model_args,
                                   iter_num, best_val_loss, config, and the AdamW state in nanoGPT's
                                   two parameter groups, so that `train.py --init_from=resume`
                                   continues the same run, moments included
    OUT/data/DATASET/meta.pkl      the characters (stoi, itos, vocab_size), for sample.py
    OUT/data/DATASET/train.bin     the run's text as uint16 ids, 90% / 10% as char_gpt splits it
    OUT/data/DATASET/val.bin       (from --text, else the text the run trained on)
    OUT/resume_config.py           the run's settings for train.py (it ignores those in ckpt.pt)
train.py and sample.py read configurator.py and data/DATASET/ from the folder they run in: run them
from OUT, with nanoGPT's configurator.py copied there. The command prints the exact commands.
Writing a .pt file needs PyTorch (pip install -e ".[torch]"). nanoGPT's block is GPT-2's: a model
with RMSNorm, RoPE, SwiGLU or grouped-query heads is refused (the safetensors export takes it).

from-nanogpt turns a nanoGPT ckpt.pt (with or without torch.compile's `_orig_mod.` prefix) and its
meta.pkl (found in data/DATASET/ beside the checkpoint, beside its folder, or in the current folder,
or named by --meta) into a char_gpt checkpoint: `demos.sample --checkpoint` and, named ckpt.npz,
`demos.char_gpt --resume` accept it. The checkpoint records the text the run trained on: --text,
else input.txt beside meta.pkl, else train.bin and val.bin decoded into DATASET.txt beside it.
The .pt is loaded with weights_only=True (no code runs); a file that needs more is refused unless
--allow-pickle says it is trusted.
"""
import argparse
import dataclasses
import json
import math
import os
import pickle
import re
import sys

import numpy as np

import minigrad
from minigrad import optim
from minigrad.serialization import write_atomically
from transformer import GPT, GPTConfig

from . import char_gpt
from .common import HelpFormatter, program_name, read_text

PROGRAM = "python -m demos.export"
TORCH_EXTRA = 'pip install torch   (or, in a clone of minigrad: pip install -e ".[torch]")'
SAFETENSORS_EXTRA = 'pip install safetensors   (or, in a clone of minigrad: pip install -e ".[export]")'
MODEL_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size", "dropout")  # nanoGPT's GPTConfig
RESUME_CONFIG = "resume_config.py"


def require_torch(command):
    """torch, or exit 1 with what to install."""
    try:
        import torch
    except ImportError:
        print(f"{PROGRAM} {command} reads and writes PyTorch's .pt files, which needs PyTorch:\n    {TORCH_EXTRA}",
              file=sys.stderr)
        raise SystemExit(1) from None
    return torch


# ---------------------------------------------------------------------------- nanoGPT's layout
def nanogpt_parameter_names(n_layer, bias):
    """nanoGPT's GPT.named_parameters(), in its order (transformer.wte, wpe, the blocks, ln_f;
    lm_head.weight is transformer.wte.weight, so it is not listed twice). Its configure_optimizers
    puts those with dim >= 2 in group 0 (decayed) and the rest in group 1, each in this order."""
    def linear_or_norm(prefix):
        return [f"{prefix}.weight"] + ([f"{prefix}.bias"] if bias else [])
    names = ["transformer.wte.weight", "transformer.wpe.weight"]
    for i in range(n_layer):
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            names += linear_or_norm(f"transformer.h.{i}.{part}")
    return names + linear_or_norm("transformer.ln_f")


def is_decayed(name):
    """nanoGPT's rule by name: the weight matrices and embeddings (dim >= 2), not norms or biases."""
    return name.endswith("weight") and not re.search(r"(ln_\d|ln_f)\.weight$", name)


def nanogpt_groups(n_layer, bias):
    """[decayed names, other names]: nanoGPT's two AdamW groups, parameter index = position in them."""
    names = nanogpt_parameter_names(n_layer, bias)
    return [[n for n in names if is_decayed(n)], [n for n in names if not is_decayed(n)]]


def refusals(config):
    """Why nanoGPT's GPT cannot hold a model of this GPTConfig (dict): [] if it can."""
    reasons = []
    if config["norm"] != "layernorm":
        reasons.append(f"norm={config['norm']!r}: nanoGPT's blocks normalize with LayerNorm only")
    if config["position"] != "learned":
        reasons.append(f"position={config['position']!r}: nanoGPT adds learned positions (wpe); it has no RoPE")
    if config["mlp"] != "gelu":
        reasons.append(f"mlp={config['mlp']!r}: nanoGPT's MLP is c_fc, GELU, c_proj; it has no SwiGLU")
    if config.get("n_kv_head") not in (None, config["n_head"]):
        reasons.append(f"n_kv_head={config['n_kv_head']} < n_head={config['n_head']}: nanoGPT's attention has "
                       "as many key/value heads as query heads (no grouped-query attention)")
    return reasons


def minigrad_names(model, weight_decay):
    """The names of the parameters in char_gpt's optimizer, by its index (group after group)."""
    name_of = {id(p): name for name, p in model.named_parameters()}
    return [name_of[id(p)] for group in char_gpt.param_groups(model, weight_decay) for p in group["params"]]


# ---------------------------------------------------------------------------- minigrad -> nanoGPT
def nanogpt_checkpoint(ckpt, torch, dataset):
    """The dict that nanoGPT's train.py saves, from a char_gpt checkpoint: torch tensors and plain
    Python values only (nanoGPT's torch.load(..., weights_only=True) refuses numpy objects)."""
    config, settings = ckpt["config"], ckpt.get("settings", {})
    model = GPT(GPTConfig(**config))
    model.load_state_dict(ckpt["model"])  # checks every name and shape
    weights = {f"transformer.{name}": torch.tensor(np.asarray(array, dtype=np.float32))
               for name, array in ckpt["model"].items()}
    state_dict = {name: weights[name] for name in nanogpt_parameter_names(config["n_layer"], config["bias"])}
    state_dict["lm_head.weight"] = state_dict["transformer.wte.weight"]  # one tensor: torch.save keeps it shared
    model_args = dict(n_layer=int(config["n_layer"]), n_head=int(config["n_head"]), n_embd=int(config["d_model"]),
                      block_size=int(config["block_size"]), bias=bool(config["bias"]),
                      vocab_size=int(config["vocab_size"]), dropout=float(config["dropout"]))
    return {
        "model": state_dict,
        "optimizer": nanogpt_optimizer_state(ckpt["optimizer"], model, config, settings, torch),
        "model_args": model_args,
        "iter_num": int(ckpt.get("iter", 0)),
        "best_val_loss": float(ckpt.get("best_val", 1e9)),
        "config": train_config(config, settings, dataset),
    }


def nanogpt_optimizer_state(saved, model, config, settings, torch):
    """char_gpt's AdamW state_dict -> torch.optim.AdamW's, as nanoGPT's configure_optimizers builds it:
    parameters numbered 0, 1, ... through group 0 (decayed) then group 1, state keyed by that int."""
    ours = minigrad_names(model, float(settings.get("weight_decay", 0.0)))  # our index -> name
    groups = nanogpt_groups(config["n_layer"], config["bias"])
    theirs = {name: i for i, name in enumerate(groups[0] + groups[1])}  # name -> nanoGPT's index
    if len(saved["param_groups"]) != 2:
        raise SystemExit(f"{PROGRAM} nanogpt: the checkpoint's optimizer has {len(saved['param_groups'])} parameter "
                         "groups; char_gpt's (and nanoGPT's) has two, decayed and not")
    state = {}
    for key, entry in saved["state"].items():
        name = f"transformer.{ours[int(key)]}"
        state[theirs[name]] = {"step": torch.tensor(float(entry["step"]), dtype=torch.float32),  # as torch keeps it
                               "exp_avg": torch.tensor(np.asarray(entry["exp_avg"], dtype=np.float32)),
                               "exp_avg_sq": torch.tensor(np.asarray(entry["exp_avg_sq"], dtype=np.float32))}
    param_groups = []
    start = 0
    for group, names in zip(saved["param_groups"], groups):
        beta1, beta2 = (float(b) for b in group["betas"])
        param_groups.append({"lr": float(group["lr"]), "betas": (beta1, beta2), "eps": float(group["eps"]),
                             "weight_decay": float(group["weight_decay"]), "amsgrad": False, "maximize": False,
                             "foreach": None, "capturable": False, "differentiable": False, "fused": None,
                             "params": list(range(start, start + len(names)))})
        start += len(names)
    return {"state": state, "param_groups": param_groups}


def train_config(config, settings, dataset):
    """nanoGPT train.py's settings (its global names) that continue the run as char_gpt ran it.
    char_gpt takes one batch per step, so gradient_accumulation_steps = 1; its cosine schedule ends
    at max_iters (lr_decay_iters) and, after the warmup, is nanoGPT's exactly."""
    defaults = vars(char_gpt.build_parser().parse_args([]))
    s = {**defaults, **settings}
    return {
        "out_dir": ".", "eval_interval": int(s["eval_interval"]), "log_interval": int(s["log_interval"]),
        "eval_iters": int(s["eval_iters"]), "always_save_checkpoint": bool(s["always_save"]),
        "init_from": "resume", "dataset": dataset, "gradient_accumulation_steps": 1,
        "batch_size": int(s["batch_size"]), "block_size": int(config["block_size"]),
        "n_layer": int(config["n_layer"]), "n_head": int(config["n_head"]), "n_embd": int(config["d_model"]),
        "dropout": float(s["dropout"]), "bias": bool(config["bias"]),
        "learning_rate": float(s["lr"]), "max_iters": int(s["max_iters"]), "weight_decay": float(s["weight_decay"]),
        "beta1": 0.9, "beta2": float(s["beta2"]), "grad_clip": float(s["grad_clip"]), "decay_lr": True,
        "warmup_iters": min(int(s["warmup_iters"]), int(s["max_iters"])),  # char_gpt's, for a run shorter than it
        "lr_decay_iters": int(s["max_iters"]), "min_lr": float(s["min_lr"]),
    }


def meta(chars):
    """nanoGPT's meta.pkl for a character vocabulary: plain dicts."""
    return {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}


def default_dataset(data_path):
    """data/DATASET's name: the text file's name and _char (nanoGPT's shakespeare_char style)."""
    stem = os.path.splitext(os.path.basename(data_path))[0] if data_path else "minigrad_corpus"
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
    return stem if stem.endswith("_char") else stem + "_char"


def export_nanogpt(args):
    ckpt = char_gpt.load_checkpoint(args.checkpoint, f"{PROGRAM} nanogpt", "give --checkpoint a char_gpt checkpoint")
    reasons = refusals(ckpt["config"])
    if reasons:
        raise SystemExit(f"{PROGRAM} nanogpt: nanoGPT's model cannot hold this one:\n    " + "\n    ".join(reasons) +
                         f"\n(the weights can still be written as .safetensors: {PROGRAM} safetensors "
                         f"--checkpoint {args.checkpoint} --out model.safetensors)")
    torch = require_torch("nanogpt")
    if "optimizer" not in ckpt:
        raise SystemExit(f"{PROGRAM} nanogpt: {args.checkpoint} holds no optimizer state, which train.py's "
                         "resume loads")
    settings = ckpt.get("settings", {})
    dataset = args.dataset or default_dataset(settings.get("data"))
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", dataset) or dataset in (".", ".."):
        raise SystemExit(f"{PROGRAM} nanogpt: --dataset {dataset!r} must be a plain folder name "
                         "(letters, digits, _ . -)")
    chars = ckpt["chars"]
    data_dir = os.path.join(args.out, "data", dataset)
    os.makedirs(data_dir, exist_ok=True)

    checkpoint = nanogpt_checkpoint(ckpt, torch, dataset)
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    write_atomically(ckpt_path, lambda f: torch.save(checkpoint, f))
    torch.load(ckpt_path, map_location="cpu", weights_only=True)  # what nanoGPT's scripts do: must not raise
    with open(os.path.join(data_dir, "meta.pkl"), "wb") as f:
        pickle.dump(meta(chars), f)
    data_note = write_data(args, settings, chars, data_dir)
    write_resume_config(checkpoint["config"], os.path.join(args.out, RESUME_CONFIG), args.checkpoint)
    print(f"wrote {ckpt_path} (step {checkpoint['iter_num']}, best val loss {checkpoint['best_val_loss']:.4f}, "
          f"model_args {checkpoint['model_args']})")
    print(f"wrote {data_dir}/meta.pkl ({len(chars)} characters){data_note}")
    print(f"wrote {os.path.join(args.out, RESUME_CONFIG)} (the run's settings: train.py ignores those in ckpt.pt)")
    print(resume_instructions(args.out, dataset))


def write_data(args, settings, chars, data_dir):
    """train.bin and val.bin (uint16 ids, raw, as nanoGPT's prepare.py writes them) from --text or the
    run's own text; a note for the summary line."""
    source = args.text or settings.get("data")
    if source and not os.path.exists(source):
        return (f"; no train.bin / val.bin: the run's text {source} is not there (give it with --text); "
                "train.py needs them, sample.py does not")
    if len(chars) > 2 ** 16:
        return f"; no train.bin / val.bin: {len(chars)} characters do not fit nanoGPT's uint16 ids"
    try:
        data = char_gpt.CharData(read_text(source), chars)
    except ValueError as error:
        raise SystemExit(f"{PROGRAM} nanogpt: the text of {source or 'the built-in corpus'} does not fit the "
                         f"model's vocabulary: {error}") from None
    for split in ("train", "val"):
        data.splits[split].astype(np.uint16).tofile(os.path.join(data_dir, f"{split}.bin"))
    return (f", train.bin and val.bin ({len(data.splits['train']):,} and {len(data.splits['val']):,} ids "
            f"of {source or 'the built-in corpus'})")


def write_resume_config(config, path, source):
    lines = [f"# nanoGPT train.py settings that continue the minigrad run {source}",
             "# (written by python -m demos.export nanogpt). Run from this folder, which must also hold",
             "# nanoGPT's configurator.py:  python /path/to/nanoGPT/train.py " + RESUME_CONFIG]
    lines += [f"{name} = {value!r}" for name, value in config.items()]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def resume_instructions(out, dataset):
    return f"""
nanoGPT's train.py and sample.py read configurator.py and data/{dataset}/ from the folder they run in,
so run them from {out}, with nanoGPT's configurator.py copied there (NANOGPT: your clone of
github.com/karpathy/nanoGPT):
    cd {out}
    cp NANOGPT/configurator.py .
    python NANOGPT/train.py {RESUME_CONFIG}                    # one GPU (add --device=cpu --compile=False for the CPU)
    torchrun --standalone --nproc_per_node=N NANOGPT/train.py {RESUME_CONFIG} --gradient_accumulation_steps=N
                                                                  # N GPUs, each a batch of batch_size per step
    python NANOGPT/sample.py --out_dir=.                          # text from ckpt.pt (add --device=cpu on a CPU)
nanoGPT's scripts need torch and numpy; sample.py also imports tiktoken (pip install tiktoken).
To train past the run's end, add --max_iters=M --lr_decay_iters=M (M > max_iters in {RESUME_CONFIG}).
Back to minigrad: {PROGRAM} from-nanogpt --checkpoint {os.path.join(out, 'ckpt.pt')} --out OUT/ckpt.npz"""


# ---------------------------------------------------------------------------- nanoGPT -> minigrad
class _PlainDataUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, strings and numbers only: meta.pkl's contents. Anything that names a
    class or a function (the way a pickle runs code) is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"meta.pkl names {module}.{name}; a nanoGPT meta.pkl holds plain dicts only")


def read_meta(path):
    with open(path, "rb") as f:
        try:
            return _PlainDataUnpickler(f).load()
        except Exception as error:  # noqa: BLE001
            raise SystemExit(f"{PROGRAM} from-nanogpt: cannot read {path}: {error}") from None


def find_meta(ckpt_path, dataset, given=None):
    """The path of meta.pkl: --meta, else data/DATASET/meta.pkl beside the checkpoint, beside its
    folder (nanoGPT's own layout: out-x/ckpt.pt next to data/), or in the current folder."""
    if given:
        return given
    folder = os.path.dirname(os.path.abspath(ckpt_path))
    candidates = [os.path.join(base, "data", dataset, "meta.pkl")
                  for base in (folder, os.path.dirname(folder), os.getcwd())] if dataset else []
    for path in candidates:
        if os.path.exists(path):
            return path
    where = "\n    ".join(candidates) if candidates else "(the checkpoint names no dataset in its config)"
    raise SystemExit(f"{PROGRAM} from-nanogpt: no meta.pkl with the characters; looked in\n    {where}\n"
                     "give it with --meta PATH (a char-level nanoGPT model: data/DATASET/meta.pkl)")


def load_pt(path, torch, allow_pickle):
    """torch.load with weights_only=True (only tensors and plain data, no code runs); if the file
    needs more, refuse unless allow_pickle."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        if not allow_pickle:
            first = str(error).strip().splitlines()[0][:300]
            raise SystemExit(f"{PROGRAM} from-nanogpt: {path} holds more than tensors and plain data, so "
                             f"torch.load(weights_only=True) refuses it ({first}).\nLoading it in full runs "
                             "code stored in the file: only if you trust where it came from, add --allow-pickle")
    except Exception as error:  # noqa: BLE001  (not a .pt file, truncated, ...)
        raise SystemExit(f"{PROGRAM} from-nanogpt: cannot read {path}: {error}") from None
    print(f"{path}: loading with weights_only=False (--allow-pickle): the file is trusted to run code")
    return torch.load(path, map_location="cpu", weights_only=False)


def minigrad_state_dict(state_dict, torch):
    """nanoGPT's state_dict -> GPT's: without the `_orig_mod.` (torch.compile) and `transformer.`
    prefixes, without lm_head.weight (tied to wte: checked) and the causal-mask buffers h.N.attn.bias
    of checkpoints from before PyTorch 2 (attn.c_attn.bias and attn.c_proj.bias are weights: kept)."""
    out = {}
    for key, value in state_dict.items():
        name = key.removeprefix("_orig_mod.").removeprefix("transformer.")
        if re.fullmatch(r"h\.\d+\.attn\.bias", name):
            continue
        out[name] = value.detach().to(device="cpu", dtype=torch.float32).numpy().copy()
    head = out.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(head, out.get("wte.weight")):
        raise SystemExit(f"{PROGRAM} from-nanogpt: lm_head.weight differs from transformer.wte.weight; minigrad's "
                         "GPT ties them (as nanoGPT does), so it cannot hold this model")
    return out


def minigrad_optimizer_state(saved, model, model_args, weight_decay):
    """torch.optim.AdamW's state_dict (nanoGPT's groups) -> char_gpt's AdamW state_dict, by name."""
    groups = nanogpt_groups(model_args["n_layer"], model_args["bias"])
    theirs = groups[0] + groups[1]  # nanoGPT's index -> name
    sizes = [len(g["params"]) for g in saved["param_groups"]]
    if sizes != [len(g) for g in groups]:
        raise SystemExit(f"{PROGRAM} from-nanogpt: the optimizer's groups hold {sizes} parameters; nanoGPT's "
                         f"configure_optimizers makes {[len(g) for g in groups]} for this model")
    index = {name: i for i, name in enumerate(minigrad_names(model, weight_decay))}  # name -> our index
    state = {}
    for key, entry in saved["state"].items():
        name = theirs[int(key)].removeprefix("transformer.")
        state[str(index[name])] = {"step": int(round(float(entry["step"]))),
                                   "exp_avg": entry["exp_avg"].detach().float().cpu().numpy().copy(),
                                   "exp_avg_sq": entry["exp_avg_sq"].detach().float().cpu().numpy().copy()}
    param_groups = [{"lr": float(g["lr"]), "betas": [float(b) for b in g["betas"]], "eps": float(g["eps"]),
                     "weight_decay": float(g["weight_decay"]), "params": []} for g in saved["param_groups"]]
    optimizer = optim.AdamW(char_gpt.param_groups(model, weight_decay))  # checks every shape, by loading it
    for saved_group, group in zip(param_groups, optimizer.state_dict()["param_groups"]):
        saved_group["params"] = group["params"]
    optimizer.load_state_dict({"state": state, "param_groups": param_groups})
    return optimizer.state_dict()


def recover_text(data_dir, chars, out, dataset):
    """The text a char-level nanoGPT run trained on, for char_gpt --resume: data_dir/input.txt (where
    nanoGPT's shakespeare_char/prepare.py keeps it), else train.bin and val.bin decoded into a file
    beside `out` (char_gpt splits it 90 / 10 again, as prepare.py did). None if neither is there."""
    beside = os.path.join(data_dir, "input.txt")
    if os.path.exists(beside):
        return beside
    bins = [os.path.join(data_dir, f"{split}.bin") for split in ("train", "val")]
    if not all(os.path.exists(b) for b in bins):
        return None
    ids = np.concatenate([np.fromfile(b, dtype=np.uint16) for b in bins])
    if ids.size and int(ids.max()) >= len(chars):
        raise SystemExit(f"{PROGRAM} from-nanogpt: {bins[0]} holds ids up to {int(ids.max())}, beyond the "
                         f"{len(chars)} characters of meta.pkl")
    path = os.path.join(os.path.dirname(os.path.abspath(out)), f"{dataset or 'nanogpt'}.txt")
    text = "".join(np.array(list(chars))[ids]) if ids.size else ""
    write_atomically(path, lambda f: f.write(text.encode("utf-8")))
    print(f"wrote {path}: the text of {bins[0]} and {os.path.basename(bins[1])}, {len(text):,} characters")
    return path


def char_gpt_settings(config, text):
    """char_gpt's run settings (its RUN_FLAGS) from nanoGPT's train.py config, its defaults elsewhere."""
    s = vars(char_gpt.build_parser().parse_args([]))
    names = {"batch_size": "batch_size", "max_iters": "max_iters", "lr": "learning_rate", "min_lr": "min_lr",
             "warmup_iters": "warmup_iters", "weight_decay": "weight_decay", "beta2": "beta2",
             "grad_clip": "grad_clip", "dropout": "dropout", "eval_interval": "eval_interval",
             "eval_iters": "eval_iters", "log_interval": "log_interval", "always_save": "always_save_checkpoint"}
    for ours, theirs in names.items():
        if theirs in config:
            s[ours] = type(s[ours])(config[theirs]) if s[ours] is not None else config[theirs]
    s["data"] = text
    return {name: s[name] for name in char_gpt.RUN_FLAGS}


def import_nanogpt(args):
    torch = require_torch("from-nanogpt")
    if not os.path.exists(args.checkpoint):
        raise SystemExit(f"{PROGRAM} from-nanogpt: no file at {args.checkpoint}")
    ckpt = load_pt(args.checkpoint, torch, args.allow_pickle)
    if not isinstance(ckpt, dict) or not {"model", "model_args"} <= ckpt.keys():
        raise SystemExit(f"{PROGRAM} from-nanogpt: {args.checkpoint} is not a nanoGPT checkpoint "
                         "(a dict with 'model' and 'model_args', as train.py saves)")
    model_args, config = ckpt["model_args"], ckpt.get("config") or {}
    gpt_config = GPTConfig(vocab_size=int(model_args["vocab_size"]), block_size=int(model_args["block_size"]),
                           n_layer=int(model_args["n_layer"]), n_head=int(model_args["n_head"]),
                           d_model=int(model_args["n_embd"]), dropout=float(model_args.get("dropout", 0.0)),
                           bias=bool(model_args.get("bias", True)))
    model = GPT(gpt_config)
    try:
        model.load_state_dict(minigrad_state_dict(ckpt["model"], torch))
    except ValueError as error:
        raise SystemExit(f"{PROGRAM} from-nanogpt: the weights do not fit model_args {model_args}: {error}") from None

    meta_path = find_meta(args.checkpoint, config.get("dataset"), args.meta)
    info = read_meta(meta_path)
    itos = info.get("itos") if isinstance(info, dict) else None
    if not isinstance(itos, dict) or sorted(itos) != list(range(len(itos))) or \
            not all(isinstance(c, str) and len(c) == 1 for c in itos.values()):
        raise SystemExit(f"{PROGRAM} from-nanogpt: {meta_path} holds no character vocabulary (itos: id -> one "
                         "character); char_gpt models read characters (a GPT-2 BPE model is not one)")
    chars = "".join(itos[i] for i in range(len(itos)))
    if len(chars) != gpt_config.vocab_size:
        raise SystemExit(f"{PROGRAM} from-nanogpt: {meta_path} has {len(chars)} characters, the model "
                         f"vocab_size = {gpt_config.vocab_size}")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    text = args.text or recover_text(os.path.dirname(meta_path), chars, args.out, config.get("dataset"))
    settings = char_gpt_settings(config, text)
    if "optimizer" in ckpt:
        optimizer = minigrad_optimizer_state(ckpt["optimizer"], model, model_args, settings["weight_decay"])
    else:
        optimizer = optim.AdamW(char_gpt.param_groups(model, settings["weight_decay"]), lr=settings["lr"],
                                betas=(0.9, settings["beta2"])).state_dict()
    step = int(ckpt.get("iter_num", 0))
    best_val = float(ckpt.get("best_val_loss", math.inf))
    minigrad.save({
        "model": model.state_dict(), "optimizer": optimizer, "config": dataclasses.asdict(gpt_config),
        "chars": chars, "settings": settings, "iter": step, "best_val": best_val, "best_iter": step,
        # nanoGPT keeps the validation loss of the saved step (best_val_loss), not its training loss
        "history": [[step, math.nan, best_val]] if math.isfinite(best_val) else [], "train_log": [],
        "rng": minigrad.Generator().manual_seed(1337).get_state(),
    }, args.out)
    print(f"wrote {args.out}: step {step}, {model.num_parameters():,} parameters, {len(chars)} characters "
          f"from {meta_path}" + ("" if "optimizer" in ckpt else "; no optimizer state in the file (fresh moments)"))
    print(f"    python -m demos.sample --checkpoint {args.out}")
    folder, name = os.path.split(args.out)
    resume = f"python -m demos.char_gpt --resume --out {folder or '.'}" + ("" if text else " --data TEXT")
    if name not in (char_gpt.BEST, char_gpt.LAST):
        print(f"    (demos.char_gpt --resume reads {char_gpt.BEST} in its --out folder: rename the file to train on)")
    print(f"    {resume}" + ("" if text else "   (TEXT: the text it trained on; give --text to record it)"))


# ---------------------------------------------------------------------------- .safetensors
def export_safetensors(args):
    ckpt = char_gpt.load_checkpoint(args.checkpoint, f"{PROGRAM} safetensors",
                                    "give --checkpoint a char_gpt checkpoint")
    model, _ = char_gpt.model_from_checkpoint(ckpt)  # checks the weights against the config
    metadata = {"format": "minigrad GPT", "config": json.dumps(ckpt["config"]), "chars": ckpt["chars"],
                "iter": str(int(ckpt.get("iter", 0)))}
    try:
        minigrad.save_safetensors(model.state_dict(), args.out, metadata=metadata)
    except ImportError:
        print(f"{PROGRAM} safetensors needs the safetensors package:\n    {SAFETENSORS_EXTRA}", file=sys.stderr)
        raise SystemExit(1) from None
    print(f"wrote {args.out}: {len(model.state_dict())} tensors, {model.num_parameters():,} parameters; "
          "its metadata holds the config (JSON) and the characters")


# ---------------------------------------------------------------------------- command line
def build_parser():
    p = argparse.ArgumentParser(prog=program_name("demos.export"), description=__doc__.splitlines()[0],
                                formatter_class=HelpFormatter)
    commands = p.add_subparsers(dest="command", required=True, metavar="{nanogpt,from-nanogpt,safetensors}")
    to = commands.add_parser("nanogpt", help="a char_gpt checkpoint -> nanoGPT's ckpt.pt, meta.pkl, data, settings",
                             formatter_class=HelpFormatter)
    to.add_argument("--checkpoint", default=char_gpt.DEFAULT_CHECKPOINT, metavar="CKPT.npz",
                    help="a demos.char_gpt checkpoint")
    to.add_argument("--out", required=True, metavar="DIR", help="the folder to write (train.py's out_dir)")
    to.add_argument("--text", metavar="FILE", help="the text for train.bin / val.bin (default: the run's own text)")
    to.add_argument("--dataset", help="the name of data/DATASET (default: the text file's name + _char)")
    back = commands.add_parser("from-nanogpt", help="a nanoGPT ckpt.pt -> a char_gpt checkpoint",
                               formatter_class=HelpFormatter)
    back.add_argument("--checkpoint", required=True, metavar="CKPT.pt", help="a ckpt.pt saved by nanoGPT's train.py")
    back.add_argument("--out", required=True, metavar="CKPT.npz", help="the char_gpt checkpoint to write")
    back.add_argument("--meta", metavar="PATH", help="its meta.pkl (default: data/DATASET/meta.pkl, looked for)")
    back.add_argument("--text", metavar="FILE", help="the text it trained on, recorded for char_gpt --resume "
                                                     "(default: input.txt beside meta.pkl, else its "
                                                     "train.bin and val.bin decoded)")
    back.add_argument("--allow-pickle", action="store_true",
                      help="load a file that weights_only=True refuses (it can run code: trusted files only)")
    st = commands.add_parser("safetensors", help="a char_gpt checkpoint's weights -> .safetensors (any GPT block)",
                             formatter_class=HelpFormatter)
    st.add_argument("--checkpoint", default=char_gpt.DEFAULT_CHECKPOINT, metavar="CKPT.npz",
                    help="a demos.char_gpt checkpoint")
    st.add_argument("--out", required=True, metavar="FILE.safetensors", help="the file to write")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    run = {"nanogpt": export_nanogpt, "from-nanogpt": import_nanogpt, "safetensors": export_safetensors}
    return run[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
