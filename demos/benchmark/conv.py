"""Section `conv`: nn.Conv2d forward and forward + backward, and one training step of a LeNet-style CNN,
minigrad against PyTorch on the same CPU in one run.

Shapes: the two convolutions of LeNet-5 on 28x28 digits (batch 64: 1 -> 6 channels on 28x28 and
6 -> 16 on 14x14, kernel 5) and the 3x3 convolution of a small ResNet (batch 32, 64 -> 64 channels,
padding 1) on 16x16 and 32x32 maps. The first layer's input needs no gradient (it is the image);
the others' do. Both frameworks get the same weights and inputs, and their outputs are checked
against each other before anything is timed.

minigrad's convolution is im2col plus a matrix product through its own matmul kernel, one image
and a few output rows at a time (then col2im in the backward, see minigrad/kernels/conv2d.py);
PyTorch calls oneDNN (mkldnn) on x86 CPUs, which convolves directly, with no im2col copy. Ratios are torch time / minigrad time: > 1 means
minigrad is faster.
"""
import numpy as np

from .report import fmt, fmt_ratio, format_table, log, ratio
from .timing import race

# (name, batch, in channels, out channels, height = width, kernel, padding, input needs a gradient)
CONV_CASES = [
    ("LeNet conv1", 64, 1, 6, 28, 5, 2, False),
    ("LeNet conv2", 64, 6, 16, 14, 5, 0, True),
    ("ResNet 3x3, 16x16", 32, 64, 64, 16, 3, 1, True),
    ("ResNet 3x3, 32x32", 32, 64, 64, 32, 3, 1, True),
]
QUICK_CASES = CONV_CASES[:3]
CNN_BATCH = 64


def _conv_pair(torch, case, rng):
    """(minigrad forward, minigrad forward+backward, torch forward, torch forward+backward) for one case."""
    import minigrad as mg
    from minigrad import nn

    name, n, cin, cout, size, k, pad, input_grad = case
    layer = nn.Conv2d(cin, cout, k, padding=pad)
    x_np = rng.standard_normal((n, cin, size, size)).astype(np.float32)
    x = mg.tensor(x_np, requires_grad=input_grad)
    out_shape = layer(x).shape
    g_np = rng.standard_normal(out_shape).astype(np.float32)
    g = mg.tensor(g_np)

    def ours_forward():
        return layer(x)

    def ours_step():
        layer.zero_grad()
        x.grad = None
        layer(x).backward(g)

    candidates = {"minigrad fwd": ours_forward, "minigrad fwd+bwd": ours_step}
    if torch is not None:
        tlayer = torch.nn.Conv2d(cin, cout, k, padding=pad)
        with torch.no_grad():
            tlayer.weight.copy_(torch.from_numpy(layer.weight.numpy()))
            tlayer.bias.copy_(torch.from_numpy(layer.bias.numpy()))
        tx = torch.from_numpy(x_np).requires_grad_(input_grad)
        tg = torch.from_numpy(g_np)
        # sums of cin k k products of values ~1 (weights ~1/sqrt(cin k k)): float32 rounding stays below 1e-4
        if not np.allclose(layer(x).numpy(), tlayer(tx).detach().numpy(), atol=1e-4, rtol=1e-4):
            raise AssertionError(f"conv {name}: minigrad and PyTorch disagree")

        def torch_step():
            tlayer.zero_grad()
            tx.grad = None
            tlayer(tx).backward(tg)

        candidates["torch fwd"] = lambda: tlayer(tx)
        candidates["torch fwd+bwd"] = torch_step
    return candidates


def lenet(nn, flatten):
    """conv(1->6, 5, pad 2)-relu-maxpool(2), conv(6->16, 5)-relu-maxpool(2), 400-120-84-10 with relus."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        flatten, nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
    )


def _cnn_steps(torch, rng):
    """One SGD step (zero_grad, forward, cross-entropy, backward, update) of the same LeNet in each framework."""
    import minigrad as mg
    from minigrad import nn, optim
    from minigrad.nn import functional as F

    model = lenet(nn, nn.Flatten())
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x_np = rng.standard_normal((CNN_BATCH, 1, 28, 28)).astype(np.float32)
    y_np = rng.integers(0, 10, CNN_BATCH)
    x = mg.tensor(x_np)

    def ours():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y_np)
        loss.backward()
        opt.step()
        return loss

    candidates = {"minigrad": ours}
    if torch is not None:
        tmodel = lenet(torch.nn, torch.nn.Flatten())
        with torch.no_grad():
            for (_, p), (_, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
                tp.copy_(torch.from_numpy(p.numpy()))
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
        first = F.cross_entropy(model(x), y_np).item()
        tfirst = torch.nn.functional.cross_entropy(tmodel(tx), ty).item()
        if abs(first - tfirst) > 1e-4:  # the same weights and batch: the same loss, up to float32 rounding
            raise AssertionError(f"CNN: minigrad's loss {first} and PyTorch's {tfirst} differ")

        def theirs():
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tmodel(tx), ty)
            loss.backward()
            topt.step()
            return loss

        candidates["torch"] = theirs
    return candidates


def bench_conv(args, torch):
    rng = np.random.default_rng(args.seed + 7)
    rows = []
    for case in QUICK_CASES if args.quick else CONV_CASES:
        name, n, cin, cout, size, k, pad, _ = case
        log(f"  conv {name}")
        seconds, rounds = race(_conv_pair(torch, case, rng), args.budget, args.repeats, args.min_samples,
                               args.sample_seconds)
        rows.append({
            "name": name, "input": [n, cin, size, size], "out_channels": cout, "kernel": k, "padding": pad,
            "seconds": seconds, "samples": rounds,
            "ratio": {"torch/minigrad fwd": ratio(seconds.get("torch fwd"), seconds["minigrad fwd"]),
                      "torch/minigrad fwd+bwd": ratio(seconds.get("torch fwd+bwd"), seconds["minigrad fwd+bwd"])},
        })
    log("  conv LeNet training step")
    seconds, rounds = race(_cnn_steps(torch, rng), args.budget, args.repeats, args.min_samples, args.sample_seconds)
    step = {"model": "LeNet-5 style (conv-relu-maxpool x2, 3 linear), SGD momentum", "batch": CNN_BATCH,
            "input": [1, 28, 28], "seconds": seconds, "samples": rounds,
            "ratio": {"torch/minigrad": ratio(seconds.get("torch"), seconds["minigrad"])}}
    return {"layers": rows, "cnn_step": step}


def _ms(seconds):
    return None if seconds is None else seconds * 1e3


def format_conv(result):
    table = []
    for r in result["layers"]:
        s = r["seconds"]
        n, cin, h, w = r["input"]
        shape = f"{r['name']}: {n}x{cin}x{h}x{w} -> {r['out_channels']}, k{r['kernel']}"
        table.append([shape, fmt(_ms(s["minigrad fwd"])), fmt(_ms(s.get("torch fwd"))),
                      fmt_ratio(r["ratio"]["torch/minigrad fwd"]), fmt(_ms(s["minigrad fwd+bwd"])),
                      fmt(_ms(s.get("torch fwd+bwd"))), fmt_ratio(r["ratio"]["torch/minigrad fwd+bwd"])])
    step = result["cnn_step"]
    table.append([f"training step, batch {step['batch']} (1x28x28)", "", "", "", fmt(_ms(step["seconds"]["minigrad"])),
                  fmt(_ms(step["seconds"].get("torch"))), fmt_ratio(step["ratio"]["torch/minigrad"])])
    return format_table(["nn.Conv2d (float32)", "fwd ms", "torch ms", "torch/mg", "fwd+bwd ms", "torch ms",
                         "torch/mg"], table, title="conv: > 1x means minigrad is faster; PyTorch runs oneDNN")
