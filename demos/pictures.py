"""Pictures of a Transformer: attention maps, positional encodings, loss curves, computation graph.

Attention weights per head as heat maps over the tokens, the positional-encoding matrix, the
training and validation loss, and the computation graph that backward walks.

    python -m demos.pictures --out out/pictures     # trains the tour's small copy model first

Every picture is a PNG drawn by matplotlib (without pyplot: no window, no backend changed, so the
functions also serve a notebook, where a call without a path returns the figure to show). The computation graph is
written as Graphviz DOT text, and also as an SVG when Graphviz's `dot` program is installed.
The tour (`python -m demos.tour`) calls `draw_all` with the model it trained.
"""
import os
import sys

import numpy as np

import minigrad
from minigrad import viz
from minigrad.nn import functional as F
from transformer import EncoderLayer, sinusoidal_positional_encoding

from . import copy_task
from .common import Timer, parser, plot_losses, start


def _done(fig, path, **save):
    """Save `fig` to `path` and return the path; or, without a path, return the figure (a notebook
    shows it)."""
    if path is None:
        return fig
    fig.savefig(path, dpi=110, **save)
    return path


# ------------------------------------------------------------------ attention
def attention_heatmaps(weights, query_tokens, key_tokens, path=None, title=""):
    """weights (h, T_q, T_k), one heat map per head: row i is how query i spreads its attention
    over the keys (each row sums to 1). Axes are labelled with the tokens. Saved to `path` (its
    path returned), or without one the figure is returned."""
    weights = np.asarray(weights)
    h = weights.shape[0]
    fig = viz.figure(figsize=(3.2 * h + 0.8, 3.4))
    axes = fig.subplots(1, h, squeeze=False)
    for head, ax in enumerate(axes[0]):
        image = ax.imshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(key_tokens)), key_tokens, fontsize=7)
        ax.set_yticks(range(len(query_tokens)), query_tokens, fontsize=7)
        ax.set_xlabel("key (attended to)")
        if head == 0:
            ax.set_ylabel("query (attending)")
        ax.set_title(f"head {head + 1}")
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="weight")
    fig.suptitle(title)
    return _done(fig, path, bbox_inches="tight")


def transformer_attention(model, src, tgt_in, src_labels, tgt_labels, out_dir=None):
    """Run one (src, tgt_in) pair through an encoder-decoder `Transformer` and draw the weights
    every layer kept: encoder self-attention, decoder masked self-attention (a triangle: no
    position sees the future) and encoder-decoder (cross) attention. Returns the PNG paths in
    out_dir, or without one the figures."""

    def in_out_dir(name):
        return None if out_dir is None else os.path.join(out_dir, name)

    model.eval()
    with minigrad.no_grad():
        model(minigrad.tensor(np.asarray(src)[None]), minigrad.tensor(np.asarray(tgt_in)[None]))
    paths = []
    for i, layer in enumerate(model.encoder.layers):
        paths.append(attention_heatmaps(layer.attn_weights.numpy()[0], src_labels, src_labels,
                                        in_out_dir(f"attention_encoder{i + 1}_self.png"),
                                        f"encoder layer {i + 1}: self-attention"))
    for i, layer in enumerate(model.decoder.layers):
        paths.append(attention_heatmaps(layer.self_attn_weights.numpy()[0], tgt_labels, tgt_labels,
                                        in_out_dir(f"attention_decoder{i + 1}_self.png"),
                                        f"decoder layer {i + 1}: masked self-attention"))
        paths.append(attention_heatmaps(layer.cross_attn_weights.numpy()[0], tgt_labels, src_labels,
                                        in_out_dir(f"attention_decoder{i + 1}_cross.png"),
                                        f"decoder layer {i + 1}: encoder-decoder attention"))
    model.train()
    return paths


# ------------------------------------------------------------------ positional encoding
def positional_encoding_picture(path=None, positions=100, d_model=64):
    """The sinusoid table of section 3.5 as an image: a row per position, a column per feature.
    Left columns change fast (short wavelengths), right columns slowly. Saved to `path` (its path
    returned), or without one the figure is returned (a notebook cell shows it)."""
    table = sinusoidal_positional_encoding(positions, d_model).numpy()
    fig = viz.figure(figsize=(7, 5))
    ax = fig.subplots()
    image = ax.imshow(table, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
    ax.set_xlabel("feature (even: sin, odd: cos)")
    ax.set_ylabel("position")
    ax.set_title(f"sinusoidal positional encoding, {positions} positions x {d_model} features")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return _done(fig, path)


# ------------------------------------------------------------------ computation graph
def graph_picture(path):
    """The computation graph of one tiny encoder layer (d_model 4, 2 heads) to a loss: what
    backward walks, node by node. Writes path.dot, and path.svg when Graphviz is installed."""
    layer = EncoderLayer(d_model=4, num_heads=2, d_ff=8, dropout=0.0)
    x = minigrad.randn(1, 3, 4, requires_grad=True)  # 3 tokens
    target = minigrad.randn(1, 3, 4)
    # mean squared error to a random target. (Not (out ** 2).mean(): the layer ends in a LayerNorm,
    # whose outputs always have mean square 1, so that loss would be constant, its gradient zero.)
    loss = F.mse_loss(layer(x), target)
    viz.backward_keeping_grads(loss)  # every node keeps its .grad, so the boxes can show |grad|
    names = dict(layer.named_parameters())
    names.update(x=x, loss=loss)
    return viz.render(loss, path, names=names)


# ------------------------------------------------------------------ all of them
def draw_all(out_dir, model=None, example=None, history=None):
    """Every picture into out_dir; returns their paths.

    model: a trained `Transformer`, with example = (src, tgt_in, src_labels, tgt_labels) to run
    through it for the attention maps. history: [(step, train_loss, val_loss)] for the loss curve."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [positional_encoding_picture(os.path.join(out_dir, "positional_encoding.png"))]
    if history:
        paths.append(plot_losses(history, os.path.join(out_dir, "loss.png"), "copy task"))
    if model is not None:
        paths += transformer_attention(model, *example, out_dir)
    paths.append(graph_picture(os.path.join(out_dir, "graph")))
    return paths


def build_parser():
    p = parser(__doc__.splitlines()[0], "demos.pictures", training=True)
    p.add_argument("--out", default="out/pictures", help="folder for the pictures")
    p.add_argument("--steps", type=int, default=copy_task.SMALL_STEPS,
                   help="training steps of the copy model whose attention is drawn")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    start(args, "python -m demos.pictures", needs=("tqdm", "matplotlib"))
    with Timer() as timer:
        result = copy_task.train_small(args.steps, args.seed, quiet=args.quiet)  # the tour's copy model
        paths = draw_all(args.out, result["model"], copy_task.attention_example(result), result["history"])
    for path in paths:
        print(f"  {path}")
    print(f"pictures: {len(paths)} files in {args.out} in {timer.seconds:.1f} s "
          f"(copy model: {args.steps} steps, exact match {100 * result['exact_match']:.1f}%)")
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
