"""What every demo shares: argument parsing defaults, seeding, progress bars, a text corpus that
needs no download, and plots."""
import argparse
import time

import minigrad


def parser(description):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seed", type=int, default=1337, help="random seed (minigrad.manual_seed)")
    return p


def seed_everything(seed):
    minigrad.manual_seed(seed)


def progress(iterable=None, total=None, desc=None, disable=False):
    """A tqdm progress bar (the demos extra installs tqdm)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=disable, dynamic_ncols=True, leave=False)


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


# modules whose docstrings make a small English corpus that every Python installation has
_CORPUS_MODULES = (
    "argparse", "collections", "functools", "itertools", "json", "logging", "pathlib", "re", "string",
    "textwrap", "unittest", "dataclasses", "decimal", "fractions", "statistics", "random",
    "datetime", "calendar", "heapq", "bisect", "difflib", "enum", "inspect", "pydoc", "shutil",
    "subprocess", "threading", "urllib.parse", "email.message", "http.client", "csv", "zipfile",
)


def read_text(path=None):
    """The text of the file at `path` (UTF-8), or without one the built-in corpus."""
    if not path:
        return builtin_corpus()
    with open(path, encoding="utf-8") as f:
        return f.read()


def builtin_corpus(min_chars=200_000):
    """English text from the docstrings of standard-library modules: no download needed."""
    import importlib
    import inspect

    pieces = []
    for name in _CORPUS_MODULES:
        module = importlib.import_module(name)
        members = [v for _, v in sorted(vars(module).items())
                   if (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == name]
        pieces += [inspect.getdoc(obj) or "" for obj in [module] + members]
    text = "\n\n".join(dict.fromkeys(pieces))  # drop repeats, keep order
    text = "".join(ch for ch in text if ch.isascii())
    while len(text) < min_chars:
        text += "\n\n" + text
    return text


def plot_losses(history, path, title="loss"):
    """history: list of (step, train_loss, val_loss) -> a PNG with both curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h[0] for h in history]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, [h[1] for h in history], label="train")
    if any(h[2] is not None for h in history):
        ax.plot(steps, [h[2] for h in history], label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
