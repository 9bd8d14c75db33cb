"""python -m demos.notebooks [NAME ...]: rebuild NAME.ipynb from NAME.py (jupytext's percent
format) and run it in a fresh kernel, saving its outputs; every notebook when no NAME is given."""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from . import NAMES

HERE = Path(__file__).resolve().parent


def build(name, timeout=600):
    """Read NAME.py, run its cells in a fresh kernel (in a scratch folder, so that a notebook that
    writes files leaves nothing behind), write NAME.ipynb; returns the seconds the run took."""
    import jupytext
    import nbclient
    import nbformat

    notebook = jupytext.read(HERE / f"{name}.py")
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata.pop("jupytext", None)
    for i, cell in enumerate(notebook.cells):
        cell["id"] = f"{name}-{i:02d}"
    os.environ.setdefault("MINIGRAD_QUIET_COMPILE", "1")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": scratch}}).execute()
    seconds = time.perf_counter() - start
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata = {}  # (execution timings: they would change the file at every rebuild)
    nbformat.write(notebook, HERE / f"{name}.ipynb")
    return seconds


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m demos.notebooks", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"notebooks to rebuild (default: all of {', '.join(NAMES)})")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in NAMES]
    if unknown:
        p.error(f"no notebook {', '.join(unknown)}; there are {', '.join(NAMES)}")
    try:
        import jupytext  # noqa: F401
        import nbclient  # noqa: F401
    except ImportError as e:
        sys.exit(f"python -m demos.notebooks needs the notebooks extra: pip install -e \".[notebooks]\" ({e})")
    for name in args.names or NAMES:
        print(f"{name}.ipynb: ran in {build(name):.1f} s", flush=True)


if __name__ == "__main__":
    main()
