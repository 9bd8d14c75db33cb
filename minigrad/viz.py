"""Draw a computation graph: tensors as boxes, ops as ovals, arrows in the forward direction.

    loss = model(x).sum()
    loss.backward()
    fig = viz.draw(loss, names=dict(model.named_parameters(), x=x))   # a matplotlib Figure
    fig.savefig("graph.png")

`draw` needs only matplotlib (the demos extra: pip install -e ".[demos]"); it lays the graph out
by depth, leaves on the left, the output on the right. Each tensor box shows its name (if given),
shape and the norm of its gradient; a tensor of one number shows its value and its gradient, as
micrograd's draw_dot does. `to_dot` gives the same graph as Graphviz DOT text, and `render` also
runs Graphviz's `dot` program when it is installed.

Both work before and after `backward()`. backward frees the graph's saved arrays, but keeps each
op's name, its inputs' shapes and the links between ops (autograd's `_keep_links`), so the
picture is the same; only the tensors in the middle that nobody holds are gone, so their boxes
show the shape and no values. `backward_keeping_grads(root)` keeps them, with their `.grad`, for a picture with
the gradient at every box.
"""
import os
import shutil
import subprocess

import numpy as np

from . import _arguments as check


def backward_keeping_grads(root):
    """Backward that keeps the graph and stores `.grad` on every intermediate tensor too."""
    check.tensor("backward_keeping_grads(root)", "root", root)
    stack, seen = [root], set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t._ctx is not None and t._ctx.inputs is not None:
            t.retain_grad()
            stack.extend(t._ctx.inputs)
    root.backward(retain_graph=True)


# ----------------------------------------------------------------------------- the graph, live or freed
class _Box:
    """A tensor in the picture: shape, dtype, the tensor itself while it is alive, and `small`: the
    (value, gradient) backward kept of a tiny op output (autograd._keep_small), or None."""

    def __init__(self, key, shape, dtype, tensor, small=None):
        self.key, self.shape, self.dtype, self.tensor, self.small = key, tuple(shape), dtype, tensor, small
        self.depth = 0


class _Oval:
    """An op in the picture: its name, the keys of its input boxes and of its output box."""

    def __init__(self, key, name):
        self.key, self.name, self.inputs, self.outputs = key, name, [], []
        self.depth = 0


def _graph(root):
    """(boxes, ovals) of the graph that produced `root`: followed through the live inputs of each
    op, or, once backward has freed them, through the links it kept."""
    boxes, ovals = {}, {}

    def box(key, shape, dtype, tensor, small=None):
        if key not in boxes:
            boxes[key] = _Box(key, shape, dtype, tensor, small)
        return boxes[key]

    kept = {} if root._ctx is None else root._ctx.__dict__.get("small", {})
    stack = [] if root._ctx is None else [(root._ctx, box(id(root), root.shape, root.dtype, root, kept.get(root.shape)))]
    box(id(root), root.shape, root.dtype, root)
    while stack:
        op, out_box = stack.pop()
        key, name, parents = _expand(op)
        first = key not in ovals
        oval = ovals.setdefault(key, _Oval(key, name))
        if out_box.key not in oval.outputs:
            oval.outputs.append(out_box.key)
        if not first:
            continue
        for up, tensor, shape, dtype in parents:
            if tensor is not None:
                key = id(tensor)
            elif up is None:
                key = ("constant", len(boxes))  # a leaf that no longer exists
            else:
                key = (id(up[1]), shape, str(dtype))  # a freed op's output: one box per shape
            # a freed op's tiny output: the value and gradient backward kept of it
            small = up[2].get(tuple(shape)) if isinstance(up, tuple) and len(up) > 2 else None
            b = box(key, shape, dtype, tensor, small)
            oval.inputs.append(b.key)
            if up is not None:
                stack.append((up, b))
    return boxes, ovals


def _expand(op):
    """(key, name, parents) of an op: a live Context, or (name, links) of one that backward freed.
    parents: [(the op that made the input or None, the input tensor if still alive, shape, dtype)]."""
    if not isinstance(op, tuple):
        ctx = op
        if ctx.inputs is not None:
            return id(ctx), ctx.fn.__name__, [(t._ctx, t, t.shape, t.dtype) for t in ctx.inputs]
        if "links" not in ctx.__dict__:
            raise RuntimeError("viz: this graph was freed without its links; draw it before backward, or "
                               "use viz.backward_keeping_grads(root)")
        op = (ctx.fn.__name__, ctx.__dict__["links"])
    name, links = op[0], op[1]
    return id(links), name, [(up, ref(), shape, dtype) for up, ref, shape, dtype in links]


def _depths(boxes, ovals):
    """Lay the graph out by depth: an op one past its deepest input, its output one past the op,
    a leaf just before the first op that reads it. Returns {key: depth} for boxes and ovals."""
    made_by = {b: o.key for o in ovals.values() for b in o.outputs}
    depth = {}
    for start in list(boxes) + list(ovals):
        stack = [start]
        while stack:
            key = stack[-1]
            if key in depth:
                stack.pop()
                continue
            below = [made_by[key]] if key in made_by else ovals[key].inputs if key in ovals else []
            todo = [k for k in below if k not in depth]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            depth[key] = 1 + max((depth[k] for k in below), default=-1)
    first_use = {}
    for o in ovals.values():
        for key in o.inputs:
            if key not in made_by:
                first_use[key] = min(first_use.get(key, depth[o.key]), depth[o.key])
    depth.update((key, d - 1) for key, d in first_use.items())  # a leaf, just before the first op that reads it
    return depth


def _label(b, name):
    """The text of a tensor's box: its name, shape and dtype, and its gradient (for one number,
    its value and gradient, as micrograd draws them)."""
    t = b.tensor
    lines = [name] if name else []
    grad = None if t is None or t.grad is None else np.asarray(t.grad, dtype=np.float64)
    data = None if t is None else t.numpy()
    if b.small is not None:  # what backward kept of a tiny op output
        data = b.small[0] if data is None else data
        grad = np.asarray(b.small[1], dtype=np.float64) if grad is None and b.small[1] is not None else grad
    if data is not None and data.size == 1 and data.dtype.kind in "fc":
        value = f"data {float(data.reshape(-1)[0]):.4f}"
        lines.append(value + (f" | grad {float(grad.reshape(-1)[0]):.4f}" if grad is not None else ""))
    else:
        lines.append(f"{b.shape} {b.dtype}")
        if grad is not None:
            lines.append(f"|grad| = {float(np.linalg.norm(grad)):.3g}")
    return lines


def _names(root, names, signature):
    check.tensor(signature, "root", root)
    by_id = {id(t): n for n, t in check.names(signature, names).items()}
    by_id.setdefault(id(root), "output")
    return by_id


def to_dot(root, names=None):
    """The graph that produced `root`, as DOT text. `names` maps name -> tensor (for example
    `dict(model.named_parameters())`) to label parameters."""
    by_id = _names(root, names, "to_dot(root, names=None)")
    boxes, ovals = _graph(root)
    ids = {key: f"n{i}" for i, key in enumerate(list(boxes) + list(ovals))}
    lines = ["digraph minigrad {", '  rankdir=LR; node [fontname="Helvetica", fontsize=10];']
    for key, b in boxes.items():
        color = "#f7e3c4" if b.tensor is not None and b.tensor._ctx is None and b.tensor.requires_grad else "white"
        label = "\\n".join(_label(b, by_id.get(key)))
        lines.append(f'  {ids[key]} [label="{label}", shape=box, style=filled, fillcolor="{color}"];')
    for key, o in ovals.items():
        lines.append(f'  {ids[key]} [label="{o.name}", shape=ellipse, style=filled, fillcolor="#dde8f7"];')
        lines += [f"  {ids[i]} -> {ids[key]};" for i in o.inputs] + [f"  {ids[key]} -> {ids[out]};" for out in o.outputs]
    return "\n".join(lines + ["}"]) + "\n"


def render(root, path, names=None, format="svg"):
    """Write `path`.dot, and `path`.svg/.png when Graphviz's `dot` is installed.
    Returns the path of the picture, or of the .dot file when there is no `dot` (`draw` makes a
    picture with matplotlib instead)."""
    signature = "render(root, path, names=None, format='svg')"
    check.tensor(signature, "root", root)
    check.path(signature, "path", path)
    check.names(signature, names)
    base = os.path.splitext(os.fsdecode(path))[0]
    dot_path = base + ".dot"
    with open(dot_path, "w") as f:
        f.write(to_dot(root, names))
    if shutil.which("dot") is None:
        print(f"wrote {dot_path}; to turn it into a picture install Graphviz "
              "(Debian/Ubuntu: apt-get install graphviz, macOS: brew install graphviz) "
              f"and run: dot -T{format} {dot_path} -o {base}.{format}, or use minigrad.viz.draw (matplotlib)")
        return dot_path
    out = f"{base}.{format}"
    subprocess.run(["dot", f"-T{format}", dot_path, "-o", out], check=True)
    return out


# ----------------------------------------------------------------------------- matplotlib
_GRAPH_FIGURE = None  # Figure with a PNG form, made on first use


def _figure_class():
    """matplotlib's Figure, imported on first use (matplotlib is optional: the demos extra), with
    a PNG form for notebooks: Jupyter shows a returned figure even if pyplot was never started."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("viz.draw needs matplotlib, which comes with the demos extra: "
                          'pip install -e ".[demos]" (or pip install matplotlib); '
                          "viz.to_dot and viz.render need no matplotlib") from None

    global _GRAPH_FIGURE
    if _GRAPH_FIGURE is None:
        class GraphFigure(Figure):
            def _repr_png_(self):
                import io

                buffer = io.BytesIO()
                self.savefig(buffer, format="png", dpi=100)
                return buffer.getvalue()

        _GRAPH_FIGURE = GraphFigure
    return _GRAPH_FIGURE


def figure(**kwargs):
    """A matplotlib Figure (``figure(figsize=(6, 4))``) drawn without pyplot: it changes no backend
    (a notebook's inline plots keep working), ``fig.savefig(path)`` writes a file, and a notebook
    cell that ends with it shows it as a picture."""
    return _figure_class()(**kwargs)


def draw(root, names=None, path=None, title=None):
    """Draw the graph that produced `root` with matplotlib, before or after backward.

    Leaves on the left, the output on the right, each node in the column of its depth; tensors
    are boxes (name, shape, |grad|; value and gradient for one number), ops are rounded ovals.
    names: name -> tensor, as in `to_dot`. path: also save the picture there (PNG, SVG, PDF by
    its extension); a path in the place of `names`, `draw(y, "graph.png")` as with `render`, is
    the path. Returns the matplotlib Figure (a notebook shows it as the cell's result)."""
    signature = "draw(root, names=None, path=None, title=None)"
    if check.is_path(names):
        if path is not None:
            raise TypeError(f"{signature}: got two paths, {names!r} in the place of names and path={path!r}")
        names, path = None, names
    if path is not None:
        check.path(signature, "path", path)
    by_id = _names(root, names, signature)
    Figure = _figure_class()
    boxes, ovals = _graph(root)
    depth = _depths(boxes, ovals)
    columns = {}
    for key in list(boxes) + list(ovals):
        columns.setdefault(depth[key], []).append(key)
    row = {}
    sources = {}  # key -> keys that point at it (for ordering each column by its inputs' rows)
    for o in ovals.values():
        sources[o.key] = o.inputs
        for out in o.outputs:
            sources.setdefault(out, []).append(o.key)
    for d in sorted(columns):
        keys = columns[d]
        keys.sort(key=lambda k: np.mean([row[s] for s in sources.get(k, []) if s in row] or [0.0]))
        for i, k in enumerate(keys):
            row[k] = i - (len(keys) - 1) / 2
    tallest = max(len(keys) for keys in columns.values())
    fig = Figure(figsize=(max(4.0, 1.4 * len(columns)), max(2.5, 0.95 * tallest + (0.5 if title else 0))))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_xlim(-0.6, max(columns) + 0.6)
    ax.set_ylim(-tallest / 2 - 0.1, tallest / 2 + 0.1)
    if title:
        ax.set_title(title)
    texts = {}
    for key, b in boxes.items():
        leaf = b.tensor is not None and b.tensor._ctx is None and b.tensor.requires_grad
        texts[key] = ax.text(depth[key], -row[key], "\n".join(_label(b, by_id.get(key))), ha="center",
                             va="center", fontsize=7, bbox=dict(boxstyle="square,pad=0.4",
                                                                fc="#f7e3c4" if leaf else "white", ec="#555555"))
    for key, o in ovals.items():
        texts[key] = ax.text(depth[key], -row[key], o.name, ha="center", va="center", fontsize=7,
                             bbox=dict(boxstyle="round,pad=0.4", fc="#dde8f7", ec="#4a6fa5"))
    for o in ovals.values():
        for a, b in [(i, o.key) for i in o.inputs] + [(o.key, out) for out in o.outputs]:
            ax.annotate("", xy=texts[b].get_position(), xytext=texts[a].get_position(),
                        arrowprops=dict(arrowstyle="-|>", color="#777777", lw=0.8, shrinkA=0, shrinkB=0,
                                        patchA=texts[a].get_bbox_patch(), patchB=texts[b].get_bbox_patch()))
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
