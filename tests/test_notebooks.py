"""The lesson notebooks in demos/notebooks run top to bottom in a fresh kernel, as a learner
opening them would run them: no cell fails, each shows at least one picture inline, nothing
writes a progress bar warning, and the text they print stays short. Their cells assert the
lesson's numbers, so a notebook that runs is a notebook that is right.

Needs the notebooks extra (pip install -e ".[notebooks]"); skipped without it."""
import json
import os
import pathlib
import time

import pytest

from demos.notebooks import NAMES

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "demos" / "notebooks"
LESSONS = ["backprop", "transformer", "gpt", "cnn", "names"]  # each shows at least one picture
MAX_TEXT_CHARS = 20_000  # all the text one notebook prints: a handful of lines per cell


def _saved(name):
    with open(NOTEBOOKS / f"{name}.ipynb", encoding="utf-8") as f:
        return json.load(f)


def _outputs(notebook):
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            yield from cell.get("outputs", [])


def _text(output):
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


@pytest.mark.parametrize("name", NAMES)
def test_saved_notebook_shows_its_results(name):
    """What a learner sees before running anything: the notebook as committed carries its outputs,
    pictures included, and no error."""
    notebook = _saved(name)
    outputs = list(_outputs(notebook))
    counts = [cell.get("execution_count") for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"{name}.ipynb was not saved run top to bottom: {counts}"
    assert not [o for o in outputs if o.get("output_type") == "error"], f"{name}.ipynb was saved with an error"
    assert name not in LESSONS or any("image/png" in o.get("data", {}) for o in outputs), \
        f"{name}.ipynb shows no picture"
    assert sum(len(_text(o)) for o in outputs) < MAX_TEXT_CHARS


@pytest.mark.parametrize("name", NAMES)
def test_notebook_has_the_code_of_its_source(name):
    """NAME.py is what is edited and reviewed; NAME.ipynb must be built from it (python -m
    demos.notebooks NAME), not edited apart."""
    jupytext = pytest.importorskip("jupytext")
    source = [c.source for c in jupytext.read(NOTEBOOKS / f"{name}.py").cells if c.cell_type == "code"]
    saved = [("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
             for c in _saved(name)["cells"] if c["cell_type"] == "code"]
    assert saved == source, f"{name}.ipynb differs from {name}.py: rebuild it with python -m demos.notebooks {name}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_in_a_fresh_kernel(name, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")

    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    env = {"MINIGRAD_QUIET_COMPILE": "1"}  # a cold numba cache would otherwise print a notice
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    start = time.perf_counter()
    try:
        # cwd: a folder of its own (the exercises notebook writes files there); an error in any
        # cell raises here
        nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    seconds = time.perf_counter() - start

    outputs = list(_outputs(notebook))
    stderr = "".join(_text(o) for o in outputs if o.get("name") == "stderr")
    assert "Warning" not in stderr and "IProgress" not in stderr, f"{name}: stderr says\n{stderr[:2000]}"
    assert name not in LESSONS or any("image/png" in o.get("data", {}) for o in outputs), f"{name}: no picture"
    text = sum(len(_text(o)) for o in outputs)
    assert text < MAX_TEXT_CHARS, f"{name}: {text} characters of output"
    print(f"{name}.ipynb ran in {seconds:.1f} s")
