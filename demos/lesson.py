"""The Transformer lesson's practice questions, answered by experiment with minigrad.

    python -m demos.lesson              # every question, about half a minute once compiled
    python -m demos.lesson --only q3    # one question (q2, q3, q4, q5, q6, q9, q10)

Each section runs a small experiment and prints what it measured; nothing is copied from the
lesson's answers. Every function returns its numbers (tests/test_lesson.py checks the properties).

  Q2/Q7  d_model must divide by num_heads: the error; W_i^Q is 512 x 64, read off a real layer
  Q3     why scale by 1/sqrt(d_k): attention's entropy, largest weight and gradient at d_k = 1024
  Q4     the attention matrix's memory at n = 1000, 8 heads: read off the arrays the engine keeps
  Q5     what the positional-encoding pairs do as i grows: wavelengths, and PE(p) . PE(p + k)
  Q6     the -inf additive mask and the boolean mask give the same bits, output and gradient
  Q9     attention's cost grows as n^2: time forward + backward for n = 64 ... 1024, fit the exponent
  Q10    why residual connections: the gradient that reaches the first of 2 ... 24 sublayers
"""
import math
import sys
import time

import numpy as np

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from transformer import MultiHeadAttention, scaled_dot_product_attention, sinusoidal_positional_encoding

from .common import parser, seed_everything


def heading(title):
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


# ====================================================================== Q2 and Q7
def heads(d_model=512, num_heads=8, bad_heads=7, tokens=5, seed=0):
    """Q2: MultiHeadAttention(d_model, bad_heads) refuses; Q7: head i's query projection W_i^Q is
    the (d_model, d_k) block of W_Q that gives exactly head i's queries."""
    heading(f"Q2, Q7. Heads: d_model = {d_model}, num_heads = {num_heads}")
    try:
        MultiHeadAttention(d_model, bad_heads)
        error = None
    except ValueError as e:
        error = str(e)
    print(f"  MultiHeadAttention({d_model}, {bad_heads}) -> ValueError: {error}")
    minigrad.manual_seed(seed)
    mha = MultiHeadAttention(d_model, num_heads)
    x = minigrad.randn(1, tokens, d_model)
    queries = mha._split_heads(mha.W_Q(x)).numpy()  # (1, h, T, d_k): what the layer computes
    d_k = mha.d_k
    W, b = mha.W_Q.weight.numpy(), mha.W_Q.bias.numpy()  # W_Q stores all heads: (d_model out, d_model in)
    worst = 0.0
    for i in range(num_heads):
        W_i = W[i * d_k:(i + 1) * d_k].T  # (d_model, d_k): x W_i^Q is head i's query
        worst = max(worst, float(np.abs(x.numpy()[0] @ W_i + b[i * d_k:(i + 1) * d_k] - queries[0, i]).max()))
    shape = W[:d_k].T.shape
    print(f"  d_k = d_model / h = {d_k}; W_i^Q = W_Q.weight[i d_k:(i+1) d_k].T has shape {shape[0]} x {shape[1]}")
    print(f"  x W_i^Q + b_i equals head i's queries for every i (largest difference {worst:.1e})")
    return {"error": error, "W_i_shape": shape, "d_k": d_k, "max_difference": worst}


# ====================================================================== Q3
def scaling(d_k=1024, keys=64, queries=256, seed=0):
    """Q3: random q, k ~ N(0, 1); the scores q.k have variance d_k. With and without 1/sqrt(d_k):
    the entropy of the weights, the largest weight, and the gradient that reaches the softmax's
    input for a random upstream gradient (per query: its norm; the median over queries)."""
    heading(f"Q3. Why 1/sqrt(d_k): {queries} random queries over {keys} random keys, d_k = {d_k}")
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((queries, d_k)) @ rng.standard_normal((keys, d_k)).T
    upstream = minigrad.tensor(rng.standard_normal((queries, keys)))
    result = {"std_of_scores": float(scores.std())}
    print(f"  std of q.k: {scores.std():.1f} (sqrt(d_k) = {math.sqrt(d_k):.1f}); a uniform row has entropy "
          f"ln({keys}) = {math.log(keys):.2f}")
    print(f"  {'':<22} {'entropy':>9} {'max weight':>11} {'median |grad|':>14}")
    for name, scale in (("scaled by 1/sqrt(d_k)", 1 / math.sqrt(d_k)), ("unscaled", 1.0)):
        logits = minigrad.tensor(scores * scale, requires_grad=True)  # what the softmax sees
        weights = logits.softmax(axis=-1)
        (weights * upstream).sum().backward()
        w = weights.numpy()
        entropy = float(-(w * np.log(np.where(w > 0, w, 1.0))).sum(-1).mean())
        grad = float(np.median(np.linalg.norm(logits.grad.numpy(), axis=-1)))
        result[name] = {"entropy": entropy, "max_weight": float(w.max(-1).mean()), "grad": grad}
        print(f"  {name:<22} {entropy:>9.3f} {w.max(-1).mean():>11.3f} {grad:>14.2e}")
    ratio = result["scaled by 1/sqrt(d_k)"]["grad"] / result["unscaled"]["grad"]
    print(f"  unscaled, the weights are nearly one-hot and the gradient through softmax is {ratio:.0f}x smaller")
    result["ratio"] = ratio
    return result


# ====================================================================== Q4
def memory(n=1000, heads=8, d_model=512, batch=1, seed=0):
    """Q4: run attention on (batch, heads, n, d_k) float32 and read the bytes of the (n, n) arrays
    it produced: the weights it returns, and what the fused op keeps for its backward."""
    heading(f"Q4. Memory of the attention matrix: n = {n}, {heads} heads, float32")
    minigrad.manual_seed(seed)
    d_k = d_model // heads
    q, k, v = (minigrad.randn(batch, heads, n, d_k, requires_grad=True) for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v)  # step by step: returns the weights
    fused = F.scaled_dot_product_attention(q, k, v)  # one op; keeps the weights for its backward
    kept = [a for a in fused._ctx.saved_tensors if a.shape[-2:] == (n, n)]
    weights_bytes = weights.numpy().nbytes
    kept_bytes = sum(a.nbytes for a in kept)
    print(f"  weights {weights.shape} {weights.dtype}: {weights_bytes:,} bytes = {weights_bytes / 1e6:.0f} MB")
    print(f"  the fused op keeps {kept[0].shape if kept else None} for its backward: {kept_bytes / 1e6:.0f} MB")
    print(f"  a batch of 32 would need {32 * weights_bytes / batch / 1e9:.2f} GB for the weights alone")
    return {"weights_bytes": weights_bytes, "kept_bytes": kept_bytes, "shape": weights.shape}


# ====================================================================== Q5
def positions(d_model=512, offsets=(0, 1, 2, 4, 8, 16, 64, 256), starts=(0, 37, 500), pairs=(0, 64, 128, 192, 255)):
    """Q5: each pair (2i, 2i+1) of PE turns by an angle w_i per position; read w_i off the table
    (the angle from position 0 to 1), its wavelength 2 pi / w_i, and the dot product PE(p) . PE(p + k)."""
    heading(f"Q5. Positional encoding, d_model = {d_model}: what the pairs do as i grows")
    longest = max(starts) + max(offsets) + 1
    table = sinusoidal_positional_encoding(longest, d_model, dtype=minigrad.float64).numpy()
    omega = np.arctan2(table[1, 0::2], table[1, 1::2])  # sin and cos of w_i at position 1
    wavelengths = {}
    for i in pairs:  # past the first pairs, w_i is too small to read off one step: read it at the far end
        step = longest - 1 if omega[i] * (longest - 1) < math.pi else 1
        w = math.atan2(table[step, 2 * i], table[step, 2 * i + 1]) / step
        wavelengths[i] = 2 * math.pi / w
        print(f"  pair i = {i:>3}: wavelength {wavelengths[i]:>12.1f} positions "
              f"(2 pi 10000^(2i/d) = {2 * math.pi * 10000 ** (2 * i / d_model):.1f})")
    dots = {p: [float(table[p] @ table[p + k]) for k in offsets] for p in starts}
    print("  PE(p) . PE(p + k):  k = " + "  ".join(f"{k:>6}" for k in offsets))
    for p, row in dots.items():
        print(f"  {'p = ' + str(p):>18}      " + "  ".join(f"{x:>6.1f}" for x in row))
    spread = max(abs(a - b) for row in dots.values() for a, b in zip(row, dots[starts[0]]))
    print(f"  the same for every p (largest difference {spread:.1e}): it depends on the offset k only, "
          f"and is largest ({d_model // 2}) at k = 0")
    return {"wavelengths": wavelengths, "dots": dots, "offsets": list(offsets), "spread": spread}


# ====================================================================== Q6
def masks(n=6, d_k=8, seed=0):
    """Q6: softmax(S + M) with M = 0 / -inf, against softmax over the allowed keys only (boolean
    mask): the weights and the gradient of the scores, compared bit for bit."""
    heading(f"Q6. Masked attention: the -inf mask against the boolean mask, {n} tokens, causal")
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal((n, d_k)) @ rng.standard_normal((n, d_k)).T / math.sqrt(d_k)).astype(np.float32)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    upstream = minigrad.tensor(rng.standard_normal((n, n)).astype(np.float32))
    additive = minigrad.tensor(np.where(allowed, 0.0, -np.inf).astype(np.float32))
    s1 = minigrad.tensor(scores, requires_grad=True)
    w1 = (s1 + additive).softmax(axis=-1)
    (w1 * upstream).sum().backward()
    s2 = minigrad.tensor(scores, requires_grad=True)
    w2 = s2.softmax(axis=-1, mask=minigrad.tensor(allowed))
    (w2 * upstream).sum().backward()
    same_weights = w1.numpy().tobytes() == w2.numpy().tobytes()
    same_grads = s1.grad.numpy().tobytes() == s2.grad.numpy().tobytes()
    print(f"  weights identical to the last bit: {same_weights}; masked weights all 0: "
          f"{bool((w1.numpy()[~allowed] == 0).all())}")
    print(f"  gradients of the scores identical to the last bit: {same_grads}; masked entries get 0: "
          f"{bool((s1.grad.numpy()[~allowed] == 0).all())}")
    return {"same_weights": same_weights, "same_grads": same_grads,
            "masked_zero": bool((w1.numpy()[~allowed] == 0).all() and (s1.grad.numpy()[~allowed] == 0).all())}


# ====================================================================== Q9
def cost(lengths=(64, 128, 256, 512, 1024), d_k=64, heads=4, repeats=3, seed=0, clock=time.perf_counter):
    """Q9: the best of `repeats` timings of attention forward + backward (the fused op) at each
    length n, and the exponent of a least-squares fit time ~ n^p (on the longer half).
    clock: the wall clock; ``time.thread_time`` counts only the CPU time of this thread, which on
    one thread (``minigrad.set_num_threads(1)``) no other program's turn on the core can lengthen."""
    heading(f"Q9. Cost of attention: forward + backward, {heads} heads, d_k = {d_k}")
    minigrad.manual_seed(seed)
    seconds = []
    for n in lengths:
        q, k, v = (minigrad.randn(1, heads, n, d_k, requires_grad=True) for _ in range(3))
        best = math.inf
        for _ in range(repeats + 1):  # (the first may compile or fill caches)
            start = clock()
            F.scaled_dot_product_attention(q, k, v).sum().backward()
            best = min(best, clock() - start)
        seconds.append(best)
        flops = 4 * 2 * heads * n * n * d_k  # Q K^T and W V forward; three products of that size backward
        print(f"  n = {n:>5}: {1e3 * best:>8.2f} ms  ({flops / best / 1e9:.1f} GFLOP/s for the 4 n^2 d_k products)")
    tail = len(lengths) // 2
    exponent = float(np.polyfit(np.log(lengths[tail:]), np.log(seconds[tail:]), 1)[0])
    print(f"  fit over n = {lengths[tail]} ... {lengths[-1]}: time ~ n^{exponent:.2f} (O(n^2 d_k) predicts 2; "
          "short sequences cost more than n^2 says: fixed overheads)")
    return {"lengths": list(lengths), "seconds": seconds, "exponent": exponent}


# ====================================================================== Q10
class Stack(nn.Module):
    """`depth` sublayers f(x) = tanh(x W + b), each wrapped as `kind` says:
    "plain" f(x); "post-LN" LN(f(x)); "pre-LN" f(LN(x)); "residual" x + f(x);
    "residual post-LN" LN(x + f(x)); "residual pre-LN" x + f(LN(x))."""

    def __init__(self, depth, kind, width):
        super().__init__()
        self.kind = kind
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth))

    def forward(self, x):
        residual, post, pre = "residual" in self.kind, "post-LN" in self.kind, "pre-LN" in self.kind
        for layer, norm in zip(self.layers, self.norms):
            y = layer(norm(x) if pre else x).tanh()
            y = x + y if residual else y
            x = norm(y) if post else y
        return x


KINDS = ("plain", "post-LN", "pre-LN", "residual", "residual post-LN", "residual pre-LN")


def residuals(depths=(2, 6, 12, 24), width=64, tokens=32, seed=0):
    """Q10: |gradient| of the first sublayer's weight, for a random projection of the stack's output."""
    heading("Q10. Why residual connections: |grad| of the FIRST sublayer's weight, sublayers tanh(x W + b)")
    print(f"  {'sublayers':<18}" + "".join(f"{d:>11}" for d in depths))
    norms = {}
    for kind in KINDS:
        row = []
        for depth in depths:
            minigrad.manual_seed(seed)
            stack = Stack(depth, kind, width)
            x = minigrad.randn(tokens, width)
            out = stack(x)
            projection = np.random.default_rng(seed).standard_normal(out.shape).astype(np.float32)
            (out * minigrad.tensor(projection)).sum().backward()
            row.append(float(np.linalg.norm(stack.layers[0].weight.grad.numpy())))
        norms[kind] = row
        print(f"  {kind:<18}" + "".join(f"{g:>11.2e}" for g in row))
    print("  without a residual path nor a norm, every sublayer multiplies the gradient by less than 1 and the\n"
          "  first layer stops learning; x + f(x) passes the gradient back unchanged besides f's own path.\n"
          "  LayerNorm alone also rescues it at initialisation (it rescales the signal at every layer).")
    return {"depths": list(depths), "norms": norms}


SECTIONS = {"q2": heads, "q3": scaling, "q4": memory, "q5": positions, "q6": masks, "q9": cost, "q10": residuals}


def main(argv=None):
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--only", choices=sorted(SECTIONS), action="append", help="run only these questions")
    args = p.parse_args(argv)
    seed_everything(args.seed)
    start = time.perf_counter()
    results = {name: SECTIONS[name]() for name in (args.only or SECTIONS)}
    print(f"\nlesson: {len(results)} practice questions answered by experiment in {time.perf_counter() - start:.1f} s")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
