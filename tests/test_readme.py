"""The README's Python examples run exactly as written."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # examples may write files (a checkpoint)
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert out.strip(), "every example prints something"
    if "accuracy" in BLOCKS[index]:
        accuracy = float(re.search(r"accuracy (\d+)%", out).group(1))
        assert accuracy >= 90
    if "GradcheckReport" in out or "gradcheck" in BLOCKS[index]:
        assert "FAIL" not in out
