"""From the 2017 block to today's: a nanoGPT-style and a LLaMA-style GPT, trained on the same batches.

    python -m demos.modern_blocks                     # built-in corpus, no download, about a minute
    python -m demos.modern_blocks --one-at-a-time     # also each switch alone (slower)
    python -m demos.modern_blocks --data ../shared/data/tinyshakespeare.txt

LLaMA's block is GPT-2's with four pieces swapped, each a GPTConfig switch: RMSNorm for LayerNorm,
rotary embeddings (RoPE) for learned positions, a SwiGLU feed-forward network for the GELU MLP, and
grouped-query attention (fewer key/value heads than query heads). First each piece shows its
defining property on numbers, then both models train on the same characters and batches, then the
KV cache generates the same tokens as plain generation, faster.
"""
import sys
import time

import numpy as np

import minigrad
from minigrad import nn, optim
from transformer import GPT, GPTConfig, RMSNorm, RotaryEmbedding, SwiGLU, repeat_kv
from transformer.model import MLP

from .char_gpt import CharData, param_groups
from .common import Timer, parser, progress, read_text, seed_everything, start

GPT2 = dict(norm="layernorm", position="learned", mlp="gelu", n_kv_head=None)


def llama(args):
    return dict(norm="rmsnorm", position="rope", mlp="swiglu", n_kv_head=args.n_kv_head)


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.modern_blocks", training=True)
    p.add_argument("--steps", type=int, default=800, help="training steps per model")
    p.add_argument("--data", help="a UTF-8 text file, e.g. ../shared/data/tinyshakespeare.txt "
                                  "(default: a corpus built from Python's own docstrings)")
    p.add_argument("--n-layer", type=int, default=2, help="Transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention (query) heads per block")
    p.add_argument("--n-kv-head", type=int, default=2, help="key/value heads of the LLaMA-style model")
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--block-size", type=int, default=64, help="characters of context")
    p.add_argument("--batch-size", type=int, default=12, help="sequences per step")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (warmup, then cosine decay)")
    p.add_argument("--eval-batches", type=int, default=8, help="validation batches (the same for every model)")
    p.add_argument("--new-tokens", type=int, default=200, help="tokens to generate for the KV cache timing")
    p.add_argument("--one-at-a-time", action="store_true", help="also train GPT-2's block with one switch flipped")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


# ---------------------------------------------------------------------- the properties, on numbers
def show_rmsnorm():
    print("RMSNorm  y = x / sqrt(mean(x^2) + eps) * weight: divides out the scale, keeps the mean")
    layer_norm, rms_norm = nn.LayerNorm(5).double(), RMSNorm(5).double()
    x = minigrad.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=minigrad.float64)
    for label, v in (("x", x), ("10 x", x * 10.0), ("x + 3", x + 3.0)):
        ln, rms = layer_norm(v).numpy()[0], rms_norm(v).numpy()[0]
        print(f"  {label:<6} LayerNorm {np.array2string(ln, precision=3, floatmode='fixed')} mean {ln.mean():+.3f}"
              f"   RMSNorm {np.array2string(rms, precision=3, floatmode='fixed')} mean {rms.mean():+.3f}")


def show_rope():
    print("RoPE  rotate pair i of q and k at position m by m theta_i: the score q_m . k_n depends on m - n only")
    rope = RotaryEmbedding(head_dim=8, max_len=128)
    rng = np.random.default_rng(0)
    q, k = (minigrad.tensor(rng.standard_normal((1, 1, 1, 8))) for _ in range(2))
    for m, n in ((3, 1), (40, 38), (100, 98), (40, 37), (100, 97)):
        score = (rope(q, m) * rope(k, n)).sum().item()
        print(f"  q at {m:>3}, k at {n:>3}  (m - n = {m - n})   score {score:+.6f}")


def show_swiglu(d_model):
    print("SwiGLU  (silu(x W_1) * (x W_3)) W_2, silu(z) = z sigmoid(z): a gate on a linear path")
    z = minigrad.tensor([-4.0, -1.0, 0.0, 1.0, 4.0], dtype=minigrad.float64)
    print(f"  z       {np.array2string(z.numpy(), precision=3, floatmode='fixed')}")
    print(f"  silu(z) {np.array2string((z * z.sigmoid()).numpy(), precision=3, floatmode='fixed')}"
          "  (smooth, ~0 for z << 0, ~z for z >> 0)")
    gelu_mlp = MLP(GPTConfig(1, 1, 1, 1, d_model, bias=False)).num_parameters()
    swiglu = SwiGLU(d_model).num_parameters()
    print(f"  d_model {d_model}: GELU MLP 2 x {d_model} x {4 * d_model} = {gelu_mlp:,} weights; "
          f"SwiGLU 3 x {d_model} x {SwiGLU(d_model).d_ff} = {swiglu:,}")


def show_gqa(args):
    print(f"Grouped-query attention  {args.n_head} query heads share {args.n_kv_head} key/value heads")
    head_dim = args.d_model // args.n_head
    k = minigrad.tensor(np.arange(args.n_kv_head, dtype=np.float64).reshape(1, args.n_kv_head, 1, 1))
    print(f"  query head -> key/value head it reads: {repeat_kv(k, args.n_head // args.n_kv_head).numpy().ravel()}")
    for h_kv in (args.n_head, args.n_kv_head, 1):
        per_token = 2 * args.n_layer * h_kv * head_dim * 4  # k and v, every layer, float32
        print(f"  n_kv_head {h_kv}: KV cache {per_token:,} bytes per token, "
              f"c_attn {(args.n_head + 2 * h_kv) * head_dim * args.d_model:,} weights per layer")


# ---------------------------------------------------------------------- training
def train(name, config, data, batches, val_batches, args):
    seed_everything(args.seed)  # the same initial draws for every model
    model = GPT(config)
    optimizer = optim.AdamW(param_groups(model, 0.1), lr=args.lr, betas=(0.9, 0.99))
    warmup = min(30, args.steps)
    bar = progress(batches, total=len(batches), desc=name, disable=args.quiet)
    with Timer() as timer:
        for step, (x, y) in enumerate(bar):
            for group in optimizer.param_groups:
                group["lr"] = optim.cosine_with_warmup(step, args.lr, args.lr / 10, warmup, args.steps)
            _, loss = model(minigrad.tensor(x), minigrad.tensor(y))
            optimizer.zero_grad()
            loss.backward()
            optim.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    with minigrad.no_grad():
        val = float(np.mean([model(minigrad.tensor(x), minigrad.tensor(y))[1].item() for x, y in val_batches]))
    return model, val, timer.seconds


def fixed_batches(ids, n, args, rng):
    """n (x, y) batches of ids drawn once, so that every model sees the same ones."""
    starts = rng.integers(0, len(ids) - args.block_size - 1, size=(n, args.batch_size))
    return [(np.stack([ids[s:s + args.block_size] for s in row]), np.stack([ids[s + 1:s + 1 + args.block_size]
                                                                              for s in row])) for row in starts]


def tokens_per_second(model, prompt, new_tokens, use_cache):
    minigrad.manual_seed(0)
    start = time.perf_counter()
    out = model.generate(prompt, new_tokens, temperature=0.8, use_cache=use_cache)
    return out, new_tokens / (time.perf_counter() - start)


def show_kv_cache(trained, args):
    print(f"KV cache  {args.new_tokens} new tokens after a 16-token prompt, batch 1, sampled (temperature 0.8)")
    for name, model in trained.items():
        # a model as wide as the trained one but with room for the whole text (its speed does not
        # depend on the weights; learned positions have no rows past the trained block_size)
        config = GPTConfig(**{**vars(model.config), "block_size": 16 + args.new_tokens})
        seed_everything(args.seed)
        wide = GPT(config).eval()
        prompt = minigrad.tensor(np.arange(16, dtype=np.int64).reshape(1, 16) % config.vocab_size)
        tokens_per_second(wide, prompt, 4, True)  # warm up the kernels for these shapes
        plain, plain_speed = tokens_per_second(wide, prompt, args.new_tokens, use_cache=False)
        cached, cached_speed = tokens_per_second(wide, prompt, args.new_tokens, use_cache=True)
        same = np.array_equal(plain.numpy(), cached.numpy())
        print(f"  {name:<14} without cache {plain_speed:7.1f} tokens/s   with cache {cached_speed:7.1f} tokens/s"
              f"   ({cached_speed / plain_speed:.1f}x)   same tokens: {same}")
    print("  (a model this small spends its time on Python's cost per op, the same with or without the cache;\n"
          "   the saved arithmetic, and so the gain, grows with d_model and the length of the text)")


def run(args):
    start(args, "python -m demos.modern_blocks")
    if args.n_head % args.n_kv_head != 0:
        raise SystemExit(f"modern_blocks: --n-head {args.n_head} must be a multiple of --n-kv-head {args.n_kv_head}")
    show_rmsnorm()
    print()
    show_rope()
    print()
    show_swiglu(args.d_model)
    print()
    show_gqa(args)
    print()

    data = CharData(read_text(args.data))
    rng = np.random.default_rng(args.seed)
    batches = fixed_batches(data.splits["train"], args.steps, args, rng)
    val_batches = fixed_batches(data.splits["val"], args.eval_batches, args, rng)
    base = dict(vocab_size=len(data.chars), block_size=args.block_size, n_layer=args.n_layer, n_head=args.n_head,
                d_model=args.d_model, dropout=0.0, bias=False)
    variants = {"nanoGPT-style": GPT2}
    if args.one_at_a_time:
        variants.update({"+ rmsnorm": dict(GPT2, norm="rmsnorm"), "+ rope": dict(GPT2, position="rope"),
                         "+ swiglu": dict(GPT2, mlp="swiglu"),
                         f"+ n_kv_head={args.n_kv_head}": dict(GPT2, n_kv_head=args.n_kv_head)})
    variants["LLaMA-style"] = llama(args)

    print(f"training {len(variants)} models, {args.steps} steps each, on the same {args.batch_size} x "
          f"{args.block_size} character batches ({len(data.chars)} characters, {len(data.splits['train']):,} "
          "for training)")
    results, trained = [], {}
    for name, switches in variants.items():
        model, val, seconds = train(name, GPTConfig(**base, **switches), data, batches, val_batches, args)
        results.append((name, switches, model.num_parameters(), val, seconds))
        if name in ("nanoGPT-style", "LLaMA-style"):
            trained[name] = model
    print(f"\n{'model':<16}{'norm':<11}{'position':<10}{'mlp':<8}{'kv heads':>9}{'parameters':>12}"
          f"{'val loss':>10}{'ms/step':>9}")
    for name, s, n_params, val, seconds in results:
        kv = args.n_head if s["n_kv_head"] is None else s["n_kv_head"]
        print(f"{name:<16}{s['norm']:<11}{s['position']:<10}{s['mlp']:<8}{kv:>9}{n_params:>12,}{val:>10.4f}"
              f"{1000 * seconds / max(args.steps, 1):>9.1f}")
    print()

    show_kv_cache(trained, args)
    print()
    prompt = minigrad.tensor(np.array([data.encode("\n")]))
    for name, model in trained.items():
        minigrad.manual_seed(args.seed)
        sample = data.decode(model.generate(prompt, 80, temperature=0.8).numpy()[0, 1:].tolist())
        print(f"{name} sample: {sample!r}")
    return {name: val for name, _, _, val, _ in results}


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
