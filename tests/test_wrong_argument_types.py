"""An argument of the wrong kind, given to the helpers around the engine (viz, gradcheck, opcheck,
explain_backward, save and load), gets a TypeError that shows the function's signature and what it
got, never an AttributeError from an internal helper. The usual slip is an argument in the wrong
place; `draw(y, "graph.png")`, the path where `render` has it, is taken as the path."""
import io
import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import explain, opcheck, viz


@pytest.fixture
def graph():
    x = mg.tensor([1.0, -2.0, 3.0], dtype="float64", requires_grad=True)
    return x, (x * 2.0).tanh().sum()


def test_draw_takes_a_path_in_the_place_of_names(graph, tmp_path):
    pytest.importorskip("matplotlib")
    x, y = graph
    for path in (str(tmp_path / "graph.png"), tmp_path / "pathlike.png"):
        fig = viz.draw(y, path)
        assert (tmp_path / "graph.png").stat().st_size > 0 and hasattr(fig, "savefig")
    assert (tmp_path / "pathlike.png").stat().st_size > 0
    viz.draw(y, [("x", x)])  # pairs, as model.named_parameters() gives them, are names
    with pytest.raises(TypeError, match=r"draw\(root, names=None, path=None, title=None\): got two paths"):
        viz.draw(y, "a.png", path="b.png")


SIGNATURES = {
    "draw": r"draw\(root, names=None, path=None, title=None\)",
    "to_dot": r"to_dot\(root, names=None\)",
    "render": r"render\(root, path, names=None, format='svg'\)",
    "backward_keeping_grads": r"backward_keeping_grads\(root\)",
    "gradcheck": r"gradcheck\(fn, inputs=\(\), \.\.\.\)",
    "find_bad_backward": r"find_bad_backward\(fn, inputs=\(\), \.\.\.\)",
    "record": r"record\(fn, inputs\)",
    "check_op": r"check_op\(call, \.\.\.\)",
    "forward_order": r"forward_order\(root\)",
    "explain_backward": r"explain_backward\(root, grad=None, names=None, retain_graph=False, file=None, "
                        r"values_up_to=8\)",
    "save": r"save\(obj, path\)",
    "load": r"load\(path\)",
}

SLIPS = [  # (function, call, what the message names)
    ("draw", lambda x, y: viz.draw("graph.png"), "root must be a Tensor, got str 'graph.png'"),
    ("draw", lambda x, y: viz.draw(y, names=[x]), "names must map names to tensors"),
    ("draw", lambda x, y: viz.draw(y, path=3), "path must be a file path"),
    ("to_dot", lambda x, y: viz.to_dot(y, "graph.dot"), "names must map names to tensors"),
    ("to_dot", lambda x, y: viz.to_dot(3.0), "root must be a Tensor, got float 3.0"),
    ("render", lambda x, y: viz.render(y, {"x": x}), "path must be a file path"),
    ("render", lambda x, y: viz.render("graph", y), "root must be a Tensor"),
    ("render", lambda x, y: viz.render(y, "graph", names="x"), "names must map names to tensors"),
    ("backward_keeping_grads", lambda x, y: viz.backward_keeping_grads(1.0), "root must be a Tensor"),
    ("gradcheck", lambda x, y: mg.gradcheck([x], lambda t: t.sum()), "fn must be a function or a Module, got list"),
    ("gradcheck", lambda x, y: mg.gradcheck(lambda t: t.sum(), x.numpy()),
     "inputs must be a Tensor or a list of Tensors, got ndarray"),
    ("gradcheck", lambda x, y: mg.gradcheck(lambda t: t.sum(), 3.0), "inputs must be a Tensor or a list"),
    ("find_bad_backward", lambda x, y: opcheck.find_bad_backward(x, lambda t: t.sum()), "fn must be a function"),
    ("record", lambda x, y: opcheck.record(lambda t: t.sum(), x.numpy()), "inputs must be a Tensor"),
    ("check_op", lambda x, y: opcheck.check_op(x), "call must be an OpCall"),
    ("forward_order", lambda x, y: explain.forward_order([y]), "root must be a Tensor, got list"),
    ("explain_backward", lambda x, y: mg.explain_backward("y"), "root must be a Tensor"),
    ("explain_backward", lambda x, y: mg.explain_backward(y, "walk.txt"), "grad must be a Tensor, an array or a number"),
    ("explain_backward", lambda x, y: mg.explain_backward(y, names="x"), "names must map names to tensors"),
    ("explain_backward", lambda x, y: mg.explain_backward(y, file="walk.txt"), "file must be a text stream"),
    ("save", lambda x, y: mg.save("model.npz", {"w": x}), "the object comes first, then the path"),
    ("save", lambda x, y: mg.save({"w": x}, 3), "path must be a file path (a str or a pathlib.Path), got int 3"),
    ("load", lambda x, y: mg.load({"w": 1}), "path must be a file path"),
]


@pytest.mark.parametrize("name, call, expected", SLIPS, ids=[f"{s[0]}-{i}" for i, s in enumerate(SLIPS)])
def test_a_wrong_argument_gets_a_type_error_with_the_signature(graph, tmp_path, monkeypatch, name, call, expected):
    monkeypatch.chdir(tmp_path)  # (nothing may be written, but if it were, not here)
    x, y = graph
    with pytest.raises(TypeError) as error:
        call(x, y)
    message = str(error.value)
    assert re.match(SIGNATURES[name] + ": ", message), message
    assert expected in message
    assert list(tmp_path.iterdir()) == []  # the slip wrote no file named after a tensor or a dict


def test_the_right_calls_still_work(graph, tmp_path):
    x, y = graph
    assert "digraph" in viz.to_dot(y, {"x": x}) and "x\\n" in viz.to_dot(y, dict(x=x))
    assert mg.gradcheck(lambda t: (t * t).sum(), x) and mg.gradcheck(lambda t: (t * t).sum(), [x])
    out = io.StringIO()
    mg.explain_backward((x * x).sum(), np.float64(1.0), names={"x": x}, file=out)
    assert "backward from" in out.getvalue()
    mg.save({"w": x}, tmp_path / "w.npz")
    np.testing.assert_array_equal(mg.load(tmp_path / "w.npz")["w"], x.numpy())
