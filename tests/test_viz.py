"""Pictures of the graph: matplotlib (no Graphviz needed) and DOT, before and after backward; the
graph that backward frees keeps only names, shapes and links, not the arrays."""
import builtins
import gc
import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad import viz

pytest.importorskip("matplotlib")


def small_graph():
    x = mg.tensor([[1.0, -2.0]])
    W1 = mg.tensor([[0.5, -0.3], [0.8, 0.2]], requires_grad=True)
    b1 = mg.tensor([0.1, -0.1], requires_grad=True)
    W2 = mg.tensor([[1.5], [-1.0]], requires_grad=True)
    loss = ((((x @ W1 + b1).tanh()) @ W2 - 1.0) ** 2).sum()
    return loss, dict(x=x, W1=W1, b1=b1, W2=W2, loss=loss)


def shape_of_dot(text):
    """(node labels, number of edges) of DOT text, ignoring node ids."""
    labels = sorted(line.split('label="')[1].split('"')[0].split("\\n|grad|")[0] for line in text.splitlines()
                    if 'label="' in line)
    return labels, text.count(" -> ")


def test_dot_is_the_same_graph_before_and_after_backward():
    loss, names = small_graph()
    before = viz.to_dot(loss, names)
    loss.backward()
    after = viz.to_dot(loss, names)
    labels_before, edges_before = shape_of_dot(before)
    labels_after, edges_after = shape_of_dot(after)
    assert edges_before == edges_after == 18  # 4 ops with 2 inputs, 3 with 1 (Tanh, PowScalar, Sum); 1 output each
    ops = ["MatMul", "Add", "Tanh", "MatMul", "Sub", "PowScalar", "Sum"]
    for text in (before, after):
        assert sorted(op for op in ops) == sorted(line.split('label="')[1].split('"')[0] for line in text.splitlines()
                                                  if "shape=ellipse" in line)
    assert "W1\\n(2, 2) float32\\n|grad| = " in after  # leaves keep their gradient after backward
    assert len(labels_before) == len(labels_after)


def test_draw_after_a_plain_backward_writes_a_png(tmp_path):
    loss, names = small_graph()
    loss.backward()
    path = tmp_path / "graph.png"
    fig = viz.draw(loss, names, path=path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t in ("MatMul", "Add", "Tanh", "Sub", "PowScalar", "Sum") for t in texts) == 7
    w1 = next(t for t in texts if t.startswith("W1"))
    assert f"|grad| = {np.linalg.norm(names['W1'].grad):.3g}" in w1
    positions = {t.get_text(): t.get_position() for t in fig.axes[0].texts}
    assert positions["Tanh"][0] < positions["PowScalar"][0] < positions["Sum"][0]  # by depth, left to right


def test_scalars_show_data_and_grad_like_micrograd():
    a = mg.tensor(2.0, requires_grad=True)
    b = mg.tensor(-3.0, requires_grad=True)
    c = a * b + a
    viz.backward_keeping_grads(c)
    texts = [t.get_text() for t in viz.draw(c, dict(a=a, b=b, c=c)).axes[0].texts]
    assert "a\ndata 2.0000 | grad -2.0000" in texts  # dc/da = b + 1
    assert "b\ndata -3.0000 | grad 2.0000" in texts
    assert "data -6.0000 | grad 1.0000" in texts  # a * b, kept by backward_keeping_grads
    assert "c\ndata -4.0000 | grad 1.0000" in texts  # the root retains its gradient too


def test_backward_frees_the_arrays_but_keeps_the_picture():
    x = mg.randn(50, 40, requires_grad=True)
    h = x.tanh()
    hidden = weakref.ref(h)
    loss = (h * h).sum()
    del h
    loss.backward()
    gc.collect()
    assert hidden() is None  # the intermediate tensor (and its array) is gone
    ctx = loss._ctx
    assert ctx.inputs is None and ctx.saved_tensors == ()
    (up, ref, shape, dtype), = ctx.links
    assert up[0] == "Mul" and ref() is None and shape == (50, 40)
    assert all(not isinstance(v, np.ndarray) for link in up[1] for v in link)  # no arrays in the links
    texts = [t.get_text() for t in viz.draw(loss, dict(x=x)).axes[0].texts]
    assert {"Sum", "Mul", "Tanh"} <= set(texts)


def test_missing_matplotlib_names_the_demos_extra(monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    loss, names = small_graph()
    with pytest.raises(ImportError, match=r'pip install -e "\.\[demos\]"'):
        viz.draw(loss, names)
    assert "digraph" in viz.to_dot(loss, names)  # DOT needs no matplotlib


def test_render_writes_dot_with_or_without_graphviz(tmp_path, capsys):
    loss, names = small_graph()
    loss.backward()
    path = viz.render(loss, tmp_path / "g", names)
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    assert path.endswith((".dot", ".svg"))


def test_the_tour_draws_the_walked_graph_as_a_png(tmp_path, capsys):
    from demos import tour

    path = tour.backward_walk(str(tmp_path))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "d(tanh a)/da = 1 - tanh^2 a" in out and "W1.grad = " in out and path in out
    assert tour.backward_walk(None) is None


def test_a_drawn_graph_shows_itself_in_a_notebook():
    """Jupyter shows an object through its _repr_png_ even when pyplot was never started (a cell
    ending in viz.draw(...) must show the picture, not '<Figure size ...>')."""
    pytest.importorskip("matplotlib")
    loss, names = small_graph()
    loss.backward()
    png = viz.draw(loss, names)._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_figure_leaves_the_backend_alone():
    """viz.figure (and the demos' pictures built on it) draws without pyplot, so a notebook's inline
    backend is not switched to Agg behind the learner's back."""
    matplotlib = pytest.importorskip("matplotlib")
    before = matplotlib.get_backend()
    from demos.pictures import positional_encoding_picture

    fig = positional_encoding_picture()
    assert matplotlib.get_backend() == before
    assert fig._repr_png_()[:4] == b"\x89PNG"


def test_after_a_plain_backward_a_tiny_graph_shows_every_value_and_gradient():
    """micrograd's picture after loss.backward(), with no retain_grad: backward keeps the value and
    gradient of each tiny op output (and nothing of a large one), so every box can show both."""
    def scalar(v):
        return mg.tensor(v, dtype=mg.float64, requires_grad=True)

    x1, x2, w1, w2, b = scalar(2.0), scalar(0.0), scalar(-3.0), scalar(1.0), scalar(6.8813735870195432)
    o = (x1 * w1 + x2 * w2 + b).tanh()
    o.backward()
    dot = viz.to_dot(o, names=dict(x1=x1, o=o))
    assert 'label="o\\ndata 0.7071 | grad 1.0000"' in dot
    assert 'label="data 0.8814 | grad 0.5000"' in dot  # tanh's input, freed: kept by backward
    assert dot.count('label="data -6.0000 | grad 0.5000"') == 2  # x1 * w1, and x1 w1 + x2 w2
    big = (mg.randn(8, 8, requires_grad=True) * 2.0).sum()
    big.backward()
    assert big._ctx.__dict__["small"][()][1] == 1.0 and len(big._ctx.__dict__["links"]) == 1
    (up, _, shape, _), = big._ctx.__dict__["links"]
    assert shape == (8, 8) and up[2] == {}  # the 8 x 8 product kept nothing
