"""A decoder-only GPT learns two-digit addition and is tested on sums it never saw (minGPT's "adder").

Every pair (a, b) with 0 <= a, b <= 99 is one example: 10,000 in all. A seeded shuffle keeps 90%
for training and holds out the other 10%; the score is exact accuracy on the held-out pairs.

A sequence is 7 digit tokens (the vocabulary is just 0..9): a in 2 digits, b in 2 digits, then
c = a + b in 3 digits written BACKWARDS, ones digit first:

    12 + 34 = 046    ->    1 2 3 4 | 6 4 0
    95 + 87 = 182    ->    9 5 8 7 | 2 8 1

Why backwards? The model writes one token at a time, left to right. The ones digit of the sum
depends only on the ones digits of a and b, and each later digit only on the carry out of the
digit before it: the order in which we add on paper. (Forwards, the model would have to decide the
hundreds digit first, which depends on every carry at once.)

Training is the usual next-token prediction, x = tokens 0..5, y = tokens 1..6, except that the
loss counts only the three answer digits: the targets at the other positions are -100, the
`ignore_index` of cross_entropy (predicting b from a is impossible, and not the task).
At test time the model reads the 4 question digits and greedily writes 3 answer digits.

    python -m demos.addition                      # the defaults reach >= 99% held-out accuracy
    python -m demos.addition --steps 500 --d-model 32
"""
import sys

import numpy as np

import minigrad
from minigrad import optim
from transformer import GPT

from .char_gpt import param_groups
from .common import Timer, parser, progress, seed_everything, start

N_DIGITS = 2  # each operand has 2 digits; the sum has N_DIGITS + 1
QUESTION = 2 * N_DIGITS  # 4 tokens: a then b
ANSWER = N_DIGITS + 1  # 3 tokens: the sum, reversed
IGNORE = -100  # cross_entropy's ignore_index


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.addition", training=True)
    p.add_argument("--n-layer", type=int, default=2, help="Transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--steps", type=int, default=800, help="training steps (batches)")
    p.add_argument("--batch-size", type=int, default=128, help="sums per batch")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (linear warmup, cosine decay)")
    p.add_argument("--warmup", type=int, default=100, help="warmup steps")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decay for matrices")
    p.add_argument("--test-fraction", type=float, default=0.1, help="share of the 10,000 pairs held out")
    p.add_argument("--eval-interval", type=int, default=250, help="report held-out accuracy every N steps")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-step reports")
    return p


# ------------------------------------------------------------------ data
def digits(n, width):
    """123, 3 -> [1, 2, 3]: most significant digit first."""
    return [int(ch) for ch in str(n).zfill(width)]


def encode(a, b):
    """The 7 tokens for a + b: question digits, then the sum's digits reversed."""
    return digits(a, N_DIGITS) + digits(b, N_DIGITS) + digits(a + b, ANSWER)[::-1]


def decode_answer(tokens):
    """The 3 answer tokens (reversed sum) -> the number: [6, 4, 0] -> 46."""
    return int("".join(str(t) for t in reversed(tokens)))


def make_dataset(test_fraction, seed):
    """All 10,000 sequences, (10000, 7) int64, split by a seeded permutation into (train, test)."""
    pairs = [(a, b) for a in range(10 ** N_DIGITS) for b in range(10 ** N_DIGITS)]
    data = np.array([encode(a, b) for a, b in pairs], dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(data))
    n_test = int(round(test_fraction * len(data)))
    return data[order[n_test:]], data[order[:n_test]]


def inputs_and_targets(sequences):
    """x = tokens 0..5, y = tokens 1..6 with the non-answer targets set to IGNORE.

    Position t predicts token t + 1; the answer tokens are 4, 5, 6, predicted at positions 3, 4, 5."""
    x = sequences[:, :-1]
    y = sequences[:, 1:].copy()
    y[:, : QUESTION - 1] = IGNORE
    return x, y


# ------------------------------------------------------------------ evaluation
def greedy_answers(model, questions):
    """questions (N, 4) -> the model's answer tokens (N, 3), always taking the most likely digit."""
    model.eval()
    idx = minigrad.tensor(questions)
    with minigrad.no_grad():
        for _ in range(ANSWER):
            logits, _ = model(idx)
            next_digit = logits[:, -1, :].argmax(axis=-1, keepdims=True)  # the last position's
            idx = minigrad.cat([idx, next_digit], axis=1)
    model.train()
    return idx.numpy()[:, QUESTION:]


def exact_accuracy(model, sequences):
    """The share of sequences whose 3 answer digits the model gets all right."""
    answers = greedy_answers(model, sequences[:, :QUESTION])
    return float(np.mean(np.all(answers == sequences[:, QUESTION:], axis=1))), answers


def show(sequence, answer):
    a = int("".join(map(str, sequence[:N_DIGITS])))
    b = int("".join(map(str, sequence[N_DIGITS:QUESTION])))
    got = decode_answer(answer)
    return f"{a:2d} + {b:2d} = {got:3d}  {'ok' if got == a + b else f'wrong (is {a + b})'}"


# ------------------------------------------------------------------ training
def train(args):
    seed_everything(args.seed)
    rng = minigrad.random.generator()
    train_set, test_set = make_dataset(args.test_fraction, args.seed)
    model = GPT(vocab_size=10, block_size=QUESTION + ANSWER - 1, n_layer=args.n_layer, n_head=args.n_head,
                d_model=args.d_model)
    optimizer = optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.98))
    schedule = optim.WarmupCosineLR(optimizer, min(args.warmup, args.steps), args.steps, min_lr=args.lr / 20)
    if not args.quiet:
        print(f"{model.num_parameters():,} parameters; {len(train_set)} training sums, {len(test_set)} held out")

    loss = None
    with Timer() as timer:
        bar = progress(range(args.steps), desc="addition", disable=args.quiet)
        for step in bar:
            batch = train_set[rng.integers(0, len(train_set), size=args.batch_size)]
            x, y = inputs_and_targets(batch)
            _, loss = model(minigrad.tensor(x), minigrad.tensor(y))  # mean over the 3 answer digits
            optimizer.zero_grad()
            loss.backward()
            optim.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if not args.quiet and (step + 1) % args.eval_interval == 0 and step + 1 < args.steps:
                bar.write(f"step {step + 1}: loss {loss.item():.4f}, "
                          f"held-out accuracy {100 * exact_accuracy(model, test_set)[0]:.1f}%")

    test_accuracy, answers = exact_accuracy(model, test_set)
    train_accuracy, _ = exact_accuracy(model, train_set)
    for sequence, answer in zip(test_set[:4], answers[:4]):
        print("  " + show(sequence, answer))
    wrong = np.flatnonzero(~np.all(answers == test_set[:, QUESTION:], axis=1))
    for i in wrong[:3]:
        print("  " + show(test_set[i], answers[i]))
    print(f"addition: {args.steps} steps in {timer.seconds:.1f} s, final loss {loss.item():.4f}, "
          f"held-out exact accuracy {100 * test_accuracy:.1f}% ({len(test_set) - len(wrong)}/{len(test_set)}), "
          f"train {100 * train_accuracy:.1f}%")
    return {"accuracy": test_accuracy, "train_accuracy": train_accuracy, "loss": loss.item(),
            "seconds": timer.seconds, "model": model}


def main(argv=None):
    args = build_parser().parse_args(argv)
    start(args, "python -m demos.addition")
    return train(args)


if __name__ == "__main__":
    main(sys.argv[1:])
