"""Train a LeNet-style convolutional network on the 8x8 handwritten digits, and an MLP beside it.

    python -m demos.cnn                        # about 99% test accuracy in seconds; pictures in out/cnn
    python -m demos.cnn --no-batch-norm        # without BatchNorm2d after each convolution
    python -m demos.cnn --quick                # one epoch (a smoke test)

The 1,797 digits that scikit-learn ships (minigrad.datasets.load_digits: images (1, 8, 8) in
[0, 1]) are split once, from --seed, into 1,437 training and 360 test images with random_split.
LeCun et al.'s LeNet-5 (1998) shrunk to 8x8 images:

    (N, 1, 8, 8) -conv 3x3, pad 1-> (N, C, 8, 8) -BatchNorm2d, ReLU, max-pool 2-> (N, C, 4, 4)
                 -conv 3x3, pad 1-> (N, 2C, 4, 4) -BatchNorm2d, ReLU, max-pool 2-> (N, 2C, 2, 2)
                 -flatten-> (N, 8C) -linear, ReLU-> (N, 64) -linear-> (N, 10) logits

trained with Adam and a cosine learning rate on batches from a DataLoader. The MLP it is compared
with sees the same 64 pixels as a flat vector, with one hidden layer as wide as gives it about the
CNN's parameter count. Pictures (PNG, in --out): the first layer's learned 3x3 filters, and the
feature maps of both convolutions for one test image.
"""
import os
import sys

import numpy as np

import minigrad
from minigrad import nn, optim
from minigrad.nn import functional as F
from minigrad.utils.data import DataLoader, random_split

from .common import Timer, parser, progress, start

PROGRAM = "python -m demos.cnn"
TRAIN_SIZE, TEST_SIZE = 1437, 360  # of the 1,797 digits: 80% to train, 20% to test
CLASSES = 10


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.cnn", training=True)
    p.add_argument("--epochs", type=int, default=15, help="passes over the 1,437 training images")
    p.add_argument("--batch-size", type=int, default=32, help="images per step")
    p.add_argument("--lr", type=float, default=0.01, help="Adam's peak learning rate (cosine decay to 1/100 of it)")
    p.add_argument("--channels", type=int, default=16, help="channels of the first convolution (the second has twice)")
    p.add_argument("--no-batch-norm", dest="batch_norm", action="store_false",
                   help="leave out the BatchNorm2d after each convolution")
    p.add_argument("--no-mlp", dest="mlp", action="store_false", help="train the CNN only")
    p.add_argument("--out", default="out/cnn", help="folder for the pictures")
    p.add_argument("--no-pictures", dest="pictures", action="store_false", help="draw nothing")
    p.add_argument("--quick", action="store_true", help="one epoch (for tests); every step still runs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


# ============================================================================ the two models
class LeNet(nn.Module):
    """(N, 1, 8, 8) -> (N, 10) logits: two convolution blocks (conv 3x3, [BatchNorm2d], ReLU,
    max-pool 2), then two linear layers. `features` is the convolutional part, kept apart so that
    `feature_maps` can look inside it."""

    def __init__(self, channels=16, batch_norm=True, hidden=64):
        super().__init__()
        c1, c2 = channels, 2 * channels

        def block(c_in, c_out):
            norm = [nn.BatchNorm2d(c_out)] if batch_norm else []
            # a convolution followed by batch norm needs no bias: the norm's own shift replaces it
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=not batch_norm), *norm, nn.ReLU(), nn.MaxPool2d(2)]

        self.features = nn.Sequential(*block(1, c1), *block(c1, c2))  # (N, 2C, 2, 2)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(c2 * 2 * 2, hidden), nn.ReLU(),
                                        nn.Linear(hidden, CLASSES))

    def forward(self, x):
        return self.classifier(self.features(x))


def mlp_like(parameters):
    """64 -> hidden -> ReLU -> 10, with `hidden` chosen so that its parameter count, 75 hidden + 10,
    is about `parameters`."""
    hidden = max(1, round((parameters - CLASSES) / (64 + 1 + CLASSES)))
    return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


def count(model):
    return sum(p.numel() for p in model.parameters())


# ============================================================================ training
def digits_split(seed):
    """(train, test): the digits cut into 1,437 and 360 images by a generator seeded with `seed`."""
    from minigrad.datasets import load_digits

    return random_split(load_digits(), [TRAIN_SIZE, TEST_SIZE], generator=minigrad.Generator().manual_seed(seed))


def accuracy(model, dataset, batch_size=360):
    """The fraction of `dataset` that `model` (in eval mode) labels right."""
    model.eval()
    correct = 0
    with minigrad.no_grad():
        for x, y in DataLoader(dataset, batch_size=batch_size):
            correct += int((model(x).argmax(axis=-1).numpy() == y.numpy()).sum())
    model.train()
    return correct / len(dataset)


def fit(model, train, test, args, name):
    """Train `model` for args.epochs with Adam and a cosine schedule; returns {"accuracy" (on test),
    "loss" (the last step's), "losses" (every step's), "seconds", "parameters"}."""
    generator = minigrad.Generator().manual_seed(args.seed + 1)  # the order of the batches
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, generator=generator)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    steps = args.epochs * len(loader)
    schedule = optim.WarmupCosineLR(optimizer, 0, steps, min_lr=args.lr / 100)
    losses = []
    with Timer() as timer:
        bar = progress(total=steps, desc=name, disable=args.quiet)
        for epoch in range(args.epochs):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                losses.append(loss.item())
                bar.update(loss=f"{losses[-1]:.3f}", epoch=epoch + 1)
        bar.close()
    return {"accuracy": accuracy(model, test), "loss": losses[-1], "losses": losses, "seconds": timer.seconds,
            "parameters": count(model)}


# ============================================================================ pictures
def _done(fig, path):
    """Save `fig` to `path` and return the path; without a path return the figure (a notebook shows it)."""
    if path is None:
        return fig
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def draw_filters(model, path=None):
    """The first convolution's learned 3x3 filters, one per output channel (red > 0, blue < 0,
    each on a scale symmetric about 0)."""
    from minigrad import viz

    weight = model.features[0].weight.detach().numpy()[:, 0]  # (C, 3, 3)
    weight = weight / np.abs(weight).max(axis=(1, 2), keepdims=True)
    columns = min(8, len(weight))
    fig = viz.figure(figsize=(1.1 * columns, 1.1 * -(-len(weight) // columns) + 0.5))
    axes = fig.subplots(-(-len(weight) // columns), columns, squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if k < len(weight):
            ax.imshow(weight[k], cmap="RdBu_r", vmin=-1, vmax=1)
            ax.set_title(str(k), fontsize=7)
    fig.suptitle("first layer: the learned 3x3 filters")
    return _done(fig, path)


def feature_maps(model, image):
    """image (1, 8, 8) -> [(name, maps (C, h, w))]: the output of each ReLU of model.features (the
    maps after each convolution block, before its pooling), in eval mode."""
    model.eval()
    maps, x = [], minigrad.tensor(np.asarray(image)[None])
    with minigrad.no_grad():
        for i, layer in enumerate(model.features):
            x = layer(x)
            if isinstance(layer, nn.ReLU):
                maps.append((f"conv {len(maps) + 1} + ReLU: {x.shape[1]} maps of {x.shape[2]}x{x.shape[3]}",
                             x.numpy()[0]))
    model.train()
    return maps


def draw_feature_maps(model, image, label, predicted, path=None):
    """One image, then what each convolution block of `model` makes of it."""
    from minigrad import viz

    maps = feature_maps(model, image)
    columns = 16
    rows = 1 + sum(-(-len(m) // columns) for _, m in maps)
    fig = viz.figure(figsize=(0.8 * columns, 0.9 * rows + 0.6))
    grid = fig.add_gridspec(rows, columns)
    ax = fig.add_subplot(grid[0, 0])
    ax.imshow(np.asarray(image)[0], cmap="gray_r")
    ax.set_axis_off()
    ax.set_title(f"input: {label}", fontsize=8, loc="left")
    row = 1
    for name, m in maps:
        for k in range(len(m)):
            ax = fig.add_subplot(grid[row + k // columns, k % columns])
            ax.imshow(m[k], cmap="viridis")
            ax.set_axis_off()
            if k == 0:
                ax.set_title(name, fontsize=8, loc="left")
        row += -(-len(m) // columns)
    fig.suptitle(f"feature maps of one test image (a {label}, predicted {predicted})")
    return _done(fig, path)


def draw_all(out_dir, model, test):
    """filters.png and feature_maps.png (the first test image) in out_dir; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    image, label = test[0]
    model.eval()
    with minigrad.no_grad():
        predicted = int(model(image.unsqueeze(0)).argmax(axis=-1).item())
    model.train()
    return [draw_filters(model, os.path.join(out_dir, "filters.png")),
            draw_feature_maps(model, image.numpy(), int(label.item()), predicted,
                              os.path.join(out_dir, "feature_maps.png"))]


# ============================================================================ the run
def main(argv=None):
    args = build_parser().parse_args(argv)
    start(args, PROGRAM, needs=("tqdm", "sklearn") + (("matplotlib",) if args.pictures else ()))
    if args.quick:
        args.epochs = 1
    train, test = digits_split(args.seed)
    cnn = LeNet(args.channels, args.batch_norm)
    result = {"cnn": fit(cnn, train, test, args, "CNN"), "model": cnn, "pictures": []}
    kind = "LeNet-style CNN" + ("" if args.batch_norm else " without BatchNorm2d")
    print(f"  {kind}: {result['cnn']['parameters']:,} parameters, test accuracy {100 * result['cnn']['accuracy']:.1f}%")
    summary = (f"cnn: {kind} {100 * result['cnn']['accuracy']:.1f}% on {len(test)} test digits "
               f"({result['cnn']['parameters']:,} parameters, {args.epochs} epoch{'s' * (args.epochs != 1)} in {result['cnn']['seconds']:.1f} s)")
    if args.mlp:
        minigrad.manual_seed(args.seed)
        mlp = mlp_like(result["cnn"]["parameters"])
        result["mlp"] = fit(mlp, train, test, args, "MLP")
        print(f"  MLP 64-{mlp[1].out_features}-10: {result['mlp']['parameters']:,} parameters, "
              f"test accuracy {100 * result['mlp']['accuracy']:.1f}%")
        summary += f"; MLP {100 * result['mlp']['accuracy']:.1f}% ({result['mlp']['parameters']:,} parameters)"
    if args.pictures:
        result["pictures"] = draw_all(args.out, cnn, test)
        for path in result["pictures"]:
            print(f"  {path}")
    print(summary)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
