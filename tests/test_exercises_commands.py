"""The exercise commands as a learner and a teacher meet them: `solution NAME` prints a file that
`check` passes for every exercise, every command's help is made of whole sentences, and `grade`
grades learners side by side, so that one hanging submission delays only its own learner."""
import csv
import os
import re
import textwrap

import pytest

from demos.exercises import __main__ as cli
from demos.exercises import catalogue, checker, grading
from demos.exercises.checker import check_file


# ============================================================================ solution
def _in_this_process(jobs, timeout=60.0, quiet=False):
    """check_isolated's answer, computed here: the checks are the same, without a child per file
    (the child itself is tested by the grade tests below and by tests/test_exercises.py)."""
    return [check_file(catalogue.get(name), path) for name, path in jobs]


def test_the_solution_saved_as_the_learners_file_passes_check_for_every_exercise(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "check_isolated", _in_this_process)
    folder = tmp_path / "solutions"
    folder.mkdir()
    for exercise in catalogue.EXERCISES:
        assert cli.main(["solution", exercise.name]) == 0  # solution NAME > DIR/NAME.py
        text = capsys.readouterr().out
        (folder / f"{exercise.name}.py").write_text(text)
        assert cli.main(["check", exercise.name, "--dir", str(folder)]) == 0, capsys.readouterr().out
        assert capsys.readouterr().out.splitlines()[-1].startswith(f"{exercise.name}: ok")
        # the learner's own file: the skeleton's docstring and classes, no NotImplementedError left
        assert exercise.skeleton.read_text().split('"""')[1] in text
        assert "NotImplementedError" not in text.split('"""', 2)[2]
        assert "Function)" not in text  # (not the library's own class, which the learner's file cannot define)
        for part in exercise.parts:
            assert (f"class {part.name}({part.base})" if part.is_op
                    else f"def {part.name}(") in text
        # and where the code lives in the library, with a line number
        assert re.search(r"# minigrad's own: minigrad/[\w/]+\.py line \d+", text), exercise.name


def test_the_solution_runs_the_kernels_numpy_twin_and_names_where_it_lives(capsys):
    assert cli.main(["solution", "softmax"]) == 0
    text = capsys.readouterr().out
    assert "def softmax_backward_numpy(y, g):" in text and "minigrad/kernels/softmax.py line" in text
    assert "return _rowwise_backward(ctx, g, softmax_backward_numpy)" in text
    assert "kernels.softmax_backward" not in text


def test_the_solution_file_passes_check_in_its_child_process(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    assert cli.main(["solution", "cross_entropy"]) == 0
    (folder / "cross_entropy.py").write_text(capsys.readouterr().out)
    assert cli.main(["check", "cross_entropy", "--dir", str(folder)]) == 0
    assert "cross_entropy: ok, all 8 cases pass" in capsys.readouterr().out


# ============================================================================ help
def _help(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _sentences(text):
    """Every help text ends as a sentence does; none stops at 'and the' or a comma."""
    text = " ".join(text.split())
    assert text and text[0].isupper() and text.endswith((".", ")")), text
    assert not re.search(r"\b(and|the|of|see|a|to)\.?$", text.rstrip(".")), text


def test_every_commands_help_is_whole_sentences(capsys):
    parser = cli.build_parser()
    _sentences(parser.description)
    assert "see --help, and the" not in _help(["--help"], capsys)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert set(subparsers.choices) == set(cli.COMMANDS) == set(cli.HELP)
    for name, sub in subparsers.choices.items():
        _sentences(cli.HELP[name])
        out = _help([name, "--help"], capsys)
        assert " ".join(cli.HELP[name].split()) in " ".join(out.split())
        for action in sub._actions:
            if action.dest != "help":
                _sentences(action.help)


# ============================================================================ grade
SOLVED_MUL = """
import numpy as np
from minigrad import ops

class Mul(ops.Mul):
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a
"""


SOLVED_DIV = SOLVED_MUL.replace("Mul", "Div").replace("g * b, g * a", "g / b, -g * a / (b * b)")


def _learner(folder, learner, files):
    (folder / learner).mkdir(parents=True)
    for name, text in files.items():
        (folder / learner / f"{name}.py").write_text(textwrap.dedent(text))


def test_grade_grades_learners_side_by_side_and_stops_a_hanging_child_once(tmp_path):
    subs = tmp_path / "class"
    pid_file = tmp_path / "hung.pid"
    hangs = SOLVED_MUL.replace("a, b = ctx", f"open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid()))\n"
                                             "        while True: pass\n        a, b = ctx")
    _learner(subs, "a_loops", {"mul": hangs, "div": SOLVED_DIV})  # first in name order
    _learner(subs, "b_fine", {"mul": SOLVED_MUL})
    _learner(subs, "c_fine", {"mul": SOLVED_MUL})
    seen = []
    out = tmp_path / "grades.csv"
    rows = grading.grade(subs, out, timeout=5, jobs=2, progress=lambda *args: seen.append(args))
    # graded side by side: both healthy learners finished while the first learner's file was hanging
    # (one after another, a_loops would have come first)
    assert [learner for learner, _, _ in seen] == ["b_fine", "c_fine", "a_loops"]
    assert seen[-1][2] >= 5  # the hang cost its own learner the time limit
    with open(out, newline="") as f:
        assert list(csv.DictReader(f)) == rows
    got = {(r["learner"], r["exercise"]): (r["passed"], r["first_failure"]) for r in rows}
    assert [r["learner"] for r in rows] == ["a_loops", "a_loops", "b_fine", "c_fine"]  # learner order
    assert got["a_loops", "mul"] == ("false", "timed out after 5 s (an endless loop?)")
    assert got["a_loops", "div"] == ("true", "")  # checked after the hang, by a new child
    assert got["b_fine", "mul"] == ("true", "") and got["c_fine", "mul"] == ("true", "")
    # the hung child was stopped, and is gone (not left spinning)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    line = grading.progress_line(*seen[-1])
    assert line.startswith("a_loops: 1 of 2 pass (") and line.endswith("; mul: timed out after 5 s (an endless loop?)")


def test_the_grade_command_prints_a_line_per_learner(tmp_path, capsys):
    subs = tmp_path / "class"
    _learner(subs, "ada", {"mul": SOLVED_MUL})
    _learner(subs, "bo", {"mul": SOLVED_MUL.replace("g * b, g * a", "g * b, g * b")})
    assert cli.main(["grade", str(subs), "--out", str(tmp_path / "g.csv"), "--timeout", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    progress = sorted((line for line in lines if line.startswith("[")), key=lambda line: line.split()[1])
    assert len(progress) == 2
    assert re.fullmatch(r"\[\d/2\] ada: 1 of 1 pass \([\d.]+ s\)", progress[0])
    assert re.fullmatch(r"\[\d/2\] bo: 0 of 1 pass \([\d.]+ s\); mul: .*input b, element.*", progress[1])
    assert cli.main(["grade", str(tmp_path / "nobody")]) == 1
    assert "is not a folder" in capsys.readouterr().err
