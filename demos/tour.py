"""The guided tour: the lesson's numbers, a gradient check of every layer, a Transformer learning.

    python -m demos.tour                # the whole tour
    python -m demos.tour --quick        # every step, with a tiny training run

1. The worked examples of "Attention Is All You Need", computed by minigrad: scaled dot-product
   attention on 3 tokens (and its gradients, by backward), the positional-encoding table, and the
   practice question.
2. A gradient check of every Transformer layer: backward against central differences, in float64.
3. An encoder-decoder Transformer learns to copy sequences, and copies ones it never saw.
4. Pictures: attention maps, the positional encodings, the loss curves, the computation graph.
"""
import math
import sys

import numpy as np

import minigrad
from minigrad import optim
from minigrad.nn import functional as F
from transformer import (
    GPT,
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    MultiHeadAttention,
    PositionalEncoding,
    PositionwiseFeedForward,
    SublayerConnection,
    Transformer,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
)

from . import copy_task
from .common import Timer, parser, progress, start

QUICK_COPY_STEPS = 30  # --quick: the copy model trains this long instead of copy_task.SMALL_STEPS


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.tour", training=True)
    p.add_argument("--out", default="out/tour", help="folder for the pictures")
    p.add_argument("--quick", action="store_true", help="a tiny training run (for tests); every step still runs")
    p.add_argument("--no-pictures", action="store_true", help="skip the pictures (and so the need for matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def heading(title):
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def show(name, array):
    """Print a matrix under its name, 4 decimals, no scientific notation."""
    text = np.array2string(np.asarray(array), precision=4, suppress_small=True, floatmode="fixed")
    print(f"{name}\n  " + text.replace("\n", "\n  "))


def t64(values, requires_grad=False):
    return minigrad.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ====================================================================== 1. worked examples
def worked_attention():
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V for 3 tokens, d_k = 4, d_v = 3."""
    heading("1a. Scaled dot-product attention, Eq. (1): 3 tokens, d_k = 4, d_v = 3")
    Q = t64([[1, 0, 2, 1], [0, 2, 1, 0], [1, 1, 0, 2]], requires_grad=True)
    K = t64([[0, 1, 1, 0], [2, 0, 0, 1], [1, 2, 1, 0]], requires_grad=True)
    V = t64([[1, 0, 1], [1, 1, 0], [0, 1, 1]], requires_grad=True)
    for name, matrix in (("Q", Q), ("K", K), ("V", V)):
        show(name, matrix.numpy())

    scores = Q @ K.transpose() / math.sqrt(4)  # row i: how well query i matches each key
    output, weights = scaled_dot_product_attention(Q, K, V)
    show("scores = Q K^T / sqrt(d_k) = Q K^T / 2", scores.numpy())
    show("weights = softmax(scores), row by row (each row sums to 1)", weights.numpy())
    show("output = weights V (row i: a weighted average of the rows of V)", output.numpy())

    # backward: the gradient of a scalar with respect to every input
    output.sum().backward()
    show("d(sum of output)/dQ", Q.grad)
    show("d(sum of output)/dK", K.grad)
    show("d(sum of output)/dV (entry (j, c) = how much weight key j gets in total)", V.grad)
    print("  dQ and dK are zero: every row of V sums to 2, so every output row sums to 2 whatever\n"
          "  the weights are, and sum(output) = 6 for any Q and K. (This is why a gradient check\n"
          "  projects the output on a random direction instead of summing it.) A scalar that\n"
          "  does depend on the weights, output[0, 0]:")
    Q.grad = K.grad = V.grad = None
    output, _ = scaled_dot_product_attention(Q, K, V)
    output[0, 0].backward()
    show("d(output[0, 0])/dQ (only query 0 shapes output row 0)", Q.grad)
    show("d(output[0, 0])/dK", K.grad)
    return output.numpy(), weights.numpy()


def worked_positional():
    """The sinusoid table of section 3.5 for d_model = 6 at positions 0..3."""
    heading("1b. Positional encoding, section 3.5: d_model = 6, positions 0..3")
    print("  PE(pos, 2i) = sin(pos / 10000^(2i/6)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/6))")
    table = sinusoidal_positional_encoding(4, 6, dtype=minigrad.float64).numpy()
    print("  pos " + "".join(f"{f'{fn} i={i}':>10}" for i in range(3) for fn in ("sin", "cos")))
    for pos, row in enumerate(table):
        print(f"  {pos:>3} " + "".join(f"{x:>10.4f}" for x in row))
    print("  position 0 is [0, 1, 0, 1, 0, 1] (sin 0, cos 0); column pair i=0 turns fastest (wavelength 2 pi).")
    return table


def worked_practice():
    """The practice question: one query over three keys."""
    heading("1c. Practice: attention of q = [1, 0] over 3 keys, d_k = 2")
    q = t64([[1, 0]])
    k = t64([[1, 0], [0, 1], [1, 1]])
    v = t64([[1], [0], [1]])
    output, weights = scaled_dot_product_attention(q, k, v)
    show("K", k.numpy())
    show("V", v.numpy())
    show("scores = q K^T / sqrt(2)", (q @ k.transpose() / math.sqrt(2)).numpy())
    show("weights = softmax(scores)", weights.numpy())
    show("output = weights V", output.numpy())
    print(f"  keys 1 and 3 match q equally (score 1/sqrt(2)), key 2 not at all (score 0): weights "
          f"{weights.numpy()[0, 0]:.4f}, {weights.numpy()[0, 1]:.4f}, {weights.numpy()[0, 2]:.4f}; "
          f"output {output.item():.4f}")
    return weights.numpy(), output.item()


def backward_walk(out_dir=None):
    """A two-layer network on one example: its backward pass narrated step by step (each op's rule
    and numbers, minigrad.explain_backward), then the graph it walked drawn with matplotlib after
    the backward, into out_dir/backward_graph.png (no picture when out_dir is None)."""
    import os

    from minigrad import viz

    heading("1d. The backward pass, narrated: h = tanh(x W1 + b1), y = h W2, loss = (y - 1)^2")
    x = minigrad.tensor([[1.0, -2.0]])
    W1 = minigrad.tensor([[0.5, -0.3], [0.8, 0.2]], requires_grad=True)
    b1 = minigrad.tensor([0.1, -0.1], requires_grad=True)
    W2 = minigrad.tensor([[1.5], [-1.0]], requires_grad=True)
    h = (x @ W1 + b1).tanh()
    y = h @ W2
    loss = ((y - 1.0) ** 2).sum()
    names = dict(x=x, W1=W1, b1=b1, W2=W2, h=h, y=y, loss=loss)
    minigrad.explain_backward(loss, names=names)
    if out_dir is None:
        return None
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "backward_graph.png")
    viz.draw(loss, names, path=path, title="the graph backward walked (leaves: |grad|)")
    print(f"  the graph it walked, drawn after the backward (matplotlib, no Graphviz): {path}")
    return path


# ====================================================================== 2. gradient checks
D, H, D_FF = 4, 2, 6  # tiny sizes: a gradient check runs the forward pass twice per checked number


def _randn(*shape, seed):
    return t64(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _ids(*shape, high, seed):
    return minigrad.tensor(np.random.default_rng(seed).integers(0, high, shape))


def _module_case(module, fn, inputs):
    """(fn, inputs + the module's parameters): the check covers the weights too. The module is
    float64 (central differences need it) and in eval mode (dropout would make it random)."""
    module.double().eval()
    n = len(inputs)
    return (lambda *args: fn(*args[:n])), [*inputs, *module.parameters()]


def gradcheck_cases():
    """name -> (fn, inputs) for every layer of the Transformer, smallest first."""
    x, memory = _randn(2, 3, D, seed=1), _randn(2, 5, D, seed=2)
    src_mask = padding_mask(minigrad.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 0, 0]]), 0)  # 2nd source padded
    q, k, v = _randn(2, 4, 3, seed=3), _randn(2, 4, 3, seed=4), _randn(2, 4, 2, seed=5)
    # causal, and in the second sequence key 0 is blocked too: its query 0 may attend to nothing
    blocked_first = minigrad.tensor(np.array([[[True, True, True, True]], [[False, True, True, True]]]))
    masked = causal_mask(4) & blocked_first

    mha, cross = MultiHeadAttention(D, H), MultiHeadAttention(D, H)
    pe, ffn = PositionalEncoding(D, max_len=8), PositionwiseFeedForward(D, D_FF)
    post_ln, pre_ln = SublayerConnection(D, 0.0, norm_first=False), SublayerConnection(D, 0.0, norm_first=True)
    post_ffn, pre_ffn = PositionwiseFeedForward(D, D_FF), PositionwiseFeedForward(D, D_FF)
    post_ln.ffn, pre_ln.ffn = post_ffn, pre_ffn  # registered as sub-modules, so their weights are checked too
    enc_layer, dec_layer = EncoderLayer(D, H, D_FF, dropout=0.0), DecoderLayer(D, H, D_FF, dropout=0.0)
    encoder = Encoder(D, H, D_FF, num_layers=2, dropout=0.0)
    decoder = Decoder(D, H, D_FF, num_layers=2, dropout=0.0, norm_first=True)
    model = Transformer(6, 6, d_model=D, num_heads=H, num_layers=1, d_ff=D_FF, dropout=0.0, max_len=8)
    src, tgt, tgt_out = _ids(2, 5, high=6, seed=6), _ids(2, 3, high=6, seed=7), _ids(2, 3, high=6, seed=8)
    gpt = GPT(vocab_size=7, block_size=5, n_layer=1, n_head=H, d_model=D)
    idx, targets = _ids(2, 5, high=7, seed=9), _ids(2, 5, high=7, seed=10)

    return {
        "attention, Eq. (1)": (lambda a, b, c: scaled_dot_product_attention(a, b, c)[0], [q, k, v]),
        "masked attention": (lambda a, b, c: scaled_dot_product_attention(a, b, c, masked)[0], [q, k, v]),
        "MultiHeadAttention, self": _module_case(mha, lambda y: mha(y, y, y)[0], [x]),
        "MultiHeadAttention, cross": _module_case(cross, lambda y, m: cross(y, m, m, src_mask)[0], [x, memory]),
        "positional encoding": _module_case(pe, pe, [x]),
        "feed-forward, Eq. (2)": _module_case(ffn, ffn, [x]),
        "sublayer, post-LN": _module_case(post_ln, lambda y: post_ln(y, post_ffn), [x]),
        "sublayer, pre-LN": _module_case(pre_ln, lambda y: pre_ln(y, pre_ffn), [x]),
        "EncoderLayer": _module_case(enc_layer, lambda y: enc_layer(y, src_mask), [memory]),
        "DecoderLayer": _module_case(dec_layer, lambda y, m: dec_layer(y, m, src_mask, causal_mask(3)), [x, memory]),
        "Encoder (2 layers)": _module_case(encoder, lambda y: encoder(y, src_mask), [memory]),
        "Decoder (2 layers, pre-LN)": _module_case(decoder, lambda y, m: decoder(y, m, src_mask, causal_mask(3)),
                                                   [x, memory]),
        "Transformer -> loss": _module_case(model, lambda: F.cross_entropy(model(src, tgt), tgt_out), []),
        "GPT -> loss": _module_case(gpt, lambda: gpt(idx, targets)[1], []),
    }


def gradient_check_table(quiet=False):
    """Check every case; print one row each. Returns [(name, elements, max_abs, max_rel, passed)]."""
    heading("2. Gradient check of every layer: backward vs central differences, float64")
    print("  every number of every input and weight is nudged by +-1e-6; pass: |a - n| <= 1e-5 + 1e-3 |n|")
    print(f"  {'layer':<28} {'checked':>8} {'max abs err':>12} {'max rel err':>12}  result")
    rows = []
    cases = gradcheck_cases()
    bar = progress(cases.items(), total=len(cases), desc="gradcheck", disable=quiet, every=0)  # rows show progress
    for name, (fn, inputs) in bar:
        report = minigrad.gradcheck(fn, inputs, raise_exception=False)
        elements = sum(int(np.prod(r.shape)) for r in report.inputs)
        max_abs = max(r.max_abs_error for r in report.inputs)
        # relative error where the gradient is not ~0 (0 vs 1e-12 would be "100% wrong")
        max_rel = max(_relative_error(r) for r in report.inputs)
        rows.append((name, elements, max_abs, max_rel, report.passed))
        bar.write(f"  {name:<28} {elements:>8} {max_abs:>12.2e} {max_rel:>12.2e}  {'ok' if report.passed else 'FAIL'}")
        if not report.passed:
            bar.write(str(report))  # the worst element of each input
    print("  max rel err counts elements whose numeric gradient exceeds 1e-5 (the absolute tolerance)")
    return rows


def _relative_error(input_report, floor=1e-5):
    numeric, analytic = input_report.numeric, input_report.analytic
    significant = np.abs(numeric) > floor
    if not significant.any():
        return 0.0
    return float(np.max(np.abs(analytic - numeric)[significant] / np.abs(numeric)[significant]))


# ====================================================================== 3. the copy task
def copy_lesson(steps, seed, quiet):
    heading(f"3. An encoder-decoder Transformer learns to copy ({steps} steps)")
    print("  sequences of 10 tokens: <s> then 9 symbols from 2..10; the target is the source itself.\n"
          "  " + " ".join(copy_task.SMALL_SETTINGS))
    result = copy_task.train_small(steps, seed, quiet=quiet)
    label = copy_task.token_label
    for src, out in zip(result["src"][:4], result["decoded"][:4]):
        mark = "ok" if np.array_equal(src, out[: len(src)]) else "WRONG"
        print(f"  source {' '.join(map(label, src))}  ->  greedy decode {' '.join(map(label, out))}  {mark}")
    print(f"  exact match {100 * result['exact_match']:.1f}% of {result['held_out']} held-out sequences, "
          f"final loss {result['loss']:.4f}, {result['seconds']:.1f} s")
    return result


# ====================================================================== 4. pictures
def pictures_lesson(out_dir, copy_result):
    from .pictures import draw_all  # matplotlib loads only when pictures are drawn

    heading(f"4. Pictures, in {out_dir}")
    paths = draw_all(out_dir, copy_result["model"], copy_task.attention_example(copy_result),
                     copy_result["history"])
    for path in paths:
        print(f"  {path}")
    print("  what to look for: in the cross-attention maps, the decoder position that has just read\n"
          "  token i looks at source position i + 1, the token it must write next (a shifted diagonal);\n"
          "  the decoder's self-attention is a lower triangle (no peeking at the future); the graph\n"
          "  shows every op of one encoder layer with the size of the gradient that reached it.")
    return paths


def main(argv=None):
    args = build_parser().parse_args(argv)
    start(args, "python -m demos.tour", needs=("tqdm",) if args.no_pictures else ("tqdm", "matplotlib"))
    with Timer() as total:
        worked_attention()
        worked_positional()
        worked_practice()
        backward_walk(None if args.no_pictures else args.out)
        rows = gradient_check_table(args.quiet)
        copy = copy_lesson(QUICK_COPY_STEPS if args.quick else copy_task.SMALL_STEPS, args.seed, args.quiet)
        pictures = [] if args.no_pictures else pictures_lesson(args.out, copy)
    passed = sum(row[4] for row in rows)
    print(f"\ntour: {passed}/{len(rows)} gradient checks ok; copy task exact match {100 * copy['exact_match']:.1f}% "
          f"on {copy['held_out']} held-out sequences ({copy['seconds']:.1f} s); "
          f"{f'{len(pictures)} pictures in {args.out}' if pictures else 'no pictures'}; total {total.seconds:.1f} s")
    return {"gradcheck": rows, "copy": copy, "pictures": pictures, "seconds": total.seconds}


if __name__ == "__main__":
    main(sys.argv[1:])
