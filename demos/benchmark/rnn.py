"""Section `rnn`: one training step of a character-level recurrent model, nn.RNN, nn.GRU and nn.LSTM,
minigrad against PyTorch on the same CPU in one run.

The model is the one a course trains on a text: embedding (65 characters -> 64), one recurrent layer
of 128 units over 32 steps, a linear layer back to 65 logits at every step, cross-entropy and Adam;
a batch of 32 sequences. Both frameworks get the same weights and batch, and their first losses are
checked against each other before anything is timed.

minigrad's LSTM and GRU layers are one op each (minigrad/ops_rnn.py), whose loop over the steps runs
in compiled code, each thread taking its own rows of the batch (minigrad/kernels/rnn.py); its tanh
RNN is one fused op per step (ops.RNNTanhCell). PyTorch runs its own CPU kernels. Ratios are torch
time / minigrad time: > 1 means minigrad is faster.
"""
import numpy as np

from .report import fmt, fmt_ratio, format_table, log, ratio
from .timing import race

KINDS = ("RNN", "GRU", "LSTM")
VOCAB, EMBED, HIDDEN, STEPS, BATCH = 65, 64, 128, 32, 32


def char_model(nn, kind):
    """Embedding -> one `kind` layer (batch_first) -> Linear, the logits of every step (N L, V)."""
    class CharModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, EMBED)
            self.rnn = getattr(nn, kind)(EMBED, HIDDEN, batch_first=True)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def forward(self, ids):
            h, _ = self.rnn(self.embed(ids))
            return self.head(h.reshape(-1, HIDDEN))

    return CharModel()


def _steps(torch, kind, rng):
    """One Adam step (zero_grad, forward, cross-entropy, backward, update) of the same model in each framework."""
    import minigrad as mg
    from minigrad import nn, optim
    from minigrad.nn import functional as F

    model = char_model(nn, kind)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    ids_np = rng.integers(0, VOCAB, (BATCH, STEPS))
    targets = rng.integers(0, VOCAB, BATCH * STEPS)
    ids = mg.tensor(ids_np)

    def ours():
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), targets)
        loss.backward()
        opt.step()
        return loss

    candidates = {"minigrad": ours}
    if torch is not None:
        tmodel = char_model(torch.nn, kind)
        tmodel.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()})
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
        tids, ttargets = torch.from_numpy(ids_np), torch.from_numpy(targets)
        first = F.cross_entropy(model(ids), targets).item()
        tfirst = torch.nn.functional.cross_entropy(tmodel(tids), ttargets).item()
        if abs(first - tfirst) > 1e-4:  # the same weights and batch: the same loss, up to float32 rounding
            raise AssertionError(f"{kind}: minigrad's loss {first} and PyTorch's {tfirst} differ")

        def theirs():
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tmodel(tids), ttargets)
            loss.backward()
            topt.step()
            return loss

        candidates["torch"] = theirs
    return candidates


def bench_rnn(args, torch):
    rng = np.random.default_rng(args.seed + 11)
    rows = []
    for kind in KINDS:
        log(f"  rnn {kind} training step")
        seconds, rounds = race(_steps(torch, kind, rng), args.budget, args.repeats, args.min_samples,
                               args.sample_seconds)
        rows.append({"layer": kind, "seconds": seconds, "samples": rounds,
                     "ratio": {"torch/minigrad": ratio(seconds.get("torch"), seconds["minigrad"])}})
    return {"model": {"vocab": VOCAB, "embed": EMBED, "hidden": HIDDEN, "steps": STEPS, "batch": BATCH},
            "steps": rows}


def format_rnn(result):
    m = result["model"]
    table = []
    for r in result["steps"]:
        torch_seconds = r["seconds"].get("torch")
        table.append([f"{r['layer']}, {m['batch']} x {m['steps']} steps, {m['hidden']} units",
                      fmt(r["seconds"]["minigrad"] * 1e3), fmt(None if torch_seconds is None else torch_seconds * 1e3),
                      fmt_ratio(r["ratio"]["torch/minigrad"])])
    return format_table(["char model training step (float32, Adam)", "minigrad ms", "torch ms", "torch/mg"], table,
                        title="rnn: > 1x means minigrad is faster")
