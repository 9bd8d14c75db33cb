"""Generate text from a checkpoint of demos.char_gpt, as nanoGPT's sample.py does.

    python -m demos.sample                                         # out/char_gpt/ckpt.npz, from a newline
    python -m demos.sample --start "ROMEO:" --num-samples 2 --max-new-tokens 200
    python -m demos.sample --start FILE:prompt.txt --temperature 0.6 --top-k 10

The checkpoint holds the model's shape and its vocabulary, so nothing else is needed. Each sample
starts with --start and adds --max-new-tokens characters, each drawn from the softmax of the
model's logits divided by --temperature (below 1: safer, above 1: wilder), among the --top-k most
likely characters only, if given. --seed makes the draws repeatable.
"""
import argparse
import sys

import numpy as np

import minigrad

from . import char_gpt
from .common import parser, seed_everything

PROGRAM = "python -m demos.sample"


def positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.sample")
    p.add_argument("--checkpoint", default=char_gpt.DEFAULT_CHECKPOINT, metavar="PATH",
                   help="a checkpoint written by demos.char_gpt (its best one, unless --out was changed)")
    p.add_argument("--start", default="\n", metavar="TEXT",
                   help='the prompt, or FILE:path for the contents of a file (default: a newline)')
    p.add_argument("--num-samples", type=int, default=3, metavar="N", help="samples to draw")
    p.add_argument("--max-new-tokens", type=int, default=500, metavar="N", help="characters to add to each")
    p.add_argument("--temperature", type=positive_float, default=0.8, help="divides the logits before the softmax")
    p.add_argument("--top-k", type=int, default=None, metavar="K",
                   help="draw only among the K most likely characters (default: among all)")
    return p


def prompt_text(start):
    """--start: the text itself, or FILE:path for a file's contents."""
    if not start.startswith("FILE:"):
        return start
    path = start[len("FILE:"):]
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as error:
        raise SystemExit(f"{PROGRAM}: --start FILE:{path}: {error.strerror or error}") from None


def sample(args):
    """Print and return args.num_samples texts, each the prompt and its continuation."""
    if args.num_samples < 1 or args.max_new_tokens < 0 or (args.top_k is not None and args.top_k < 1):
        raise SystemExit(f"{PROGRAM}: --num-samples and --top-k must be at least 1 and --max-new-tokens at least 0 "
                         f"(got {args.num_samples}, {args.top_k} and {args.max_new_tokens})")
    ckpt = char_gpt.load_checkpoint(args.checkpoint, PROGRAM,
                                    "train a model first (python -m demos.char_gpt), or give --checkpoint PATH")
    model, vocabulary = char_gpt.model_from_checkpoint(ckpt)
    text = prompt_text(args.start)
    unknown = sorted(set(text) - set(vocabulary.index))
    if not text or unknown:
        raise SystemExit(f"{PROGRAM}: --start must be text made of the model's {len(vocabulary.chars)} characters "
                         f"({''.join(vocabulary.chars)!r})" + (f"; {''.join(unknown)!r} are not among them"
                                                             if unknown else ", not empty"))
    seed_everything(args.seed)
    prompt = minigrad.tensor(np.array([vocabulary.encode(text)] * args.num_samples))
    out = model.eval().generate(prompt, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k)
    samples = [vocabulary.decode(row) for row in out.numpy().tolist()]
    evaluations = ckpt.get("history") or [[None, np.nan, np.nan]]
    print(f"{args.checkpoint}: step {ckpt.get('iter', '?')}, val loss {float(evaluations[-1][2]):.4f}, "
          f"{model.num_parameters():,} parameters")
    for text in samples:
        print("-" * 60)
        print(text)
    print("-" * 60)
    return samples


def main(argv=None):
    try:
        return sample(build_parser().parse_args(argv))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main(sys.argv[1:])
