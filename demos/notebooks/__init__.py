"""The lessons as Jupyter notebooks.

Each notebook has two files: NAME.py, its source in jupytext's "percent" format (plain Python, one
`# %%` line per cell, markdown cells as comments: what you edit and review), and NAME.ipynb, the
same cells run top to bottom with their outputs (what you open, and what reads on GitHub).

    python -m demos.notebooks              # rebuild and run every NAME.ipynb from its NAME.py
    python -m demos.notebooks gpt          # only some

needs the notebooks extra (pip install -e ".[notebooks]"). tests/test_notebooks.py checks that each
.ipynb has the code cells of its source and runs each in a fresh kernel.
"""
NAMES = ["backprop", "transformer", "gpt", "cnn", "names", "exercises"]
