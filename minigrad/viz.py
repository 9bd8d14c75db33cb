"""Draw a computation graph: tensors as boxes, ops as ovals, arrows in the forward direction.

    loss = model(x).sum()
    viz.backward_keeping_grads(loss)                    # keeps the graph and every node's .grad
    viz.render(loss, "graph", names=dict(model.named_parameters()))   # graph.dot (+ graph.svg)

Each tensor box shows its name (if given), shape, dtype and the norm of its gradient.
`to_dot` returns Graphviz DOT text; `render` also runs Graphviz's `dot` program when it is
installed, and otherwise says how to get it.
"""
import os
import shutil
import subprocess

import numpy as np

from .autograd import _topological_order


def backward_keeping_grads(root):
    """Backward that keeps the graph and stores `.grad` on every intermediate tensor too."""
    for node in _topological_order(root):
        node.retain_grad()
    root.backward(retain_graph=True)


def _label(t, name):
    parts = [name] if name else []
    parts.append(f"{tuple(t.shape)} {t.dtype}")
    if t.grad is not None:
        parts.append(f"|grad| = {float(np.linalg.norm(np.asarray(t.grad, dtype=np.float64))):.3g}")
    return "\\n".join(parts)


def to_dot(root, names=None):
    """The graph that produced `root`, as DOT text. `names` maps name -> tensor (for example
    `dict(model.named_parameters())`) to label parameters."""
    by_id = {id(t): n for n, t in (names or {}).items()}
    lines = ["digraph minigrad {", '  rankdir=LR; node [fontname="Helvetica", fontsize=10];']
    nodes, edges, stack = {}, [], [root]
    while stack:
        t = stack.pop()
        if id(t) in nodes:
            continue
        nodes[id(t)] = t
        ctx = t._ctx
        if ctx is None:
            continue
        if ctx.inputs is None:
            raise RuntimeError("to_dot: the graph was freed by backward; use viz.backward_keeping_grads(root)")
        op = f"op{id(ctx)}"
        lines.append(f'  {op} [label="{ctx.name}", shape=ellipse, style=filled, fillcolor="#dde8f7"];')
        edges.append(f"  {op} -> t{id(t)};")
        for parent in ctx.inputs:
            edges.append(f"  t{id(parent)} -> {op};")
            stack.append(parent)
    for key, t in nodes.items():
        color = "#f7e3c4" if t._ctx is None and t.requires_grad else "white"
        lines.append(f'  t{key} [label="{_label(t, by_id.get(key))}", shape=box, style=filled, fillcolor="{color}"];')
    return "\n".join(lines + edges + ["}"]) + "\n"


def render(root, path, names=None, format="svg"):
    """Write `path`.dot, and `path`.svg/.png when Graphviz's `dot` is installed.
    Returns the path of the picture, or of the .dot file when there is no `dot`."""
    base = os.path.splitext(str(path))[0]
    dot_path = base + ".dot"
    with open(dot_path, "w") as f:
        f.write(to_dot(root, names))
    if shutil.which("dot") is None:
        print(f"wrote {dot_path}; to turn it into a picture install Graphviz "
              "(Debian/Ubuntu: apt-get install graphviz, macOS: brew install graphviz) "
              f"and run: dot -T{format} {dot_path} -o {base}.{format}")
        return dot_path
    out = f"{base}.{format}"
    subprocess.run(["dot", f"-T{format}", dot_path, "-o", out], check=True)
    return out
