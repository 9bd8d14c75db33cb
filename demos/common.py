"""What every demo shares: its command line, the start of a run (extras, threads, seed), progress
that suits a terminal and a log file alike, Ctrl-C that stops after a whole step, a text corpus
that needs no download, and plots."""
import argparse
import contextlib
import importlib.util
import math
import signal
import sys
import threading
import time

import minigrad

EXTRA = 'pip install -e ".[demos]"'  # installs tqdm and matplotlib


# ---------------------------------------------------------------------------- the command line
class HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, "(default: 64)", unless the help already says what
    the default is, the default is None (the help then says what happens without the flag), or
    the flag is a switch (--quiet: off unless given, nothing to show)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.nargs == 0 or action.default in (None, argparse.SUPPRESS) or "default" in text:
            return text
        return text + " (default: %(default)s)"


def program_name(module=None):
    """"python -m demos.tour" for module "demos.tour"; without a module, the one Python runs as
    __main__ (python -m demos.benchmark), or argparse's own choice (the script's file name)."""
    if module is None:
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        name = getattr(spec, "name", "") or ""
        if not name.startswith("demos."):
            return None
        module = name.removesuffix(".__main__")
    return f"python -m {module}"


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def parser(description, module=None, training=False):
    """An ArgumentParser with the usage line `python -m MODULE`, every default in the help, and
    --seed; with training=True also --threads."""
    p = argparse.ArgumentParser(prog=program_name(module), description=description, formatter_class=HelpFormatter)
    p.add_argument("--seed", type=int, default=1337, help="random seed (minigrad.manual_seed)")
    if training:
        p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                       help="threads for minigrad's kernels (default: the cores this process may use, or "
                            "MINIGRAD_NUM_THREADS); try 1 when another program keeps a core busy")
    return p


def given_flags(p, argv):
    """The destinations of the flags that argv spells out, e.g. {"n_layer", "resume"}: what the user
    asked for, as opposed to what the defaults filled in (even when both are the same value)."""
    unset = object()
    namespace = argparse.Namespace(**{dest: unset for dest in vars(p.parse_args([]))})
    p.parse_args(argv, namespace=namespace)
    return {dest for dest, value in vars(namespace).items() if value is not unset}


# ---------------------------------------------------------------------------- the start of a run
def require(program, *modules):
    """Stop with a clear message, before any work, if an optional package the demo needs is missing."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(f"{program} needs {' and '.join(missing)}, which come with the demos extra:\n"
                         f"    {EXTRA}")


def start(args, program, needs=("tqdm",)):
    """What a demo does first: check its optional packages, set the kernels' thread count
    (--threads), and seed the random generator."""
    require(program, *needs)
    if getattr(args, "threads", None) is not None:
        minigrad.set_num_threads(args.threads)
    seed_everything(args.seed)


def seed_everything(seed):
    minigrad.manual_seed(seed)


# ---------------------------------------------------------------------------- progress
def is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def clock_text(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """The steps of a loop. On a terminal (stderr is a tty) a tqdm bar; anywhere else (a log file,
    a pipe, a notebook) one plain line every `every` steps and at the last, so a log stays short
    and no line of it starts with pieces of a bar. A notebook's stderr is no tty either: it gets
    the plain lines too, and tqdm's notebook widget (which needs ipywidgets) is never asked for.

    Use it as tqdm: `for x in progress(items): ...`, with `set_postfix(loss=...)` and `write(text)`;
    or without an iterable, calling `update()` after each step. Time spent inside `with
    bar.paused():` (an evaluation) counts neither in the speed nor in the time left."""

    def __init__(self, iterable=None, total=None, desc=None, disable=False, every=None, clock=time.perf_counter):
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.clock = iterable, total, desc or "progress", clock
        self.n, self.postfix = 0, {}
        self.bar = None
        if not disable and is_terminal(sys.stderr):
            from tqdm import tqdm  # tqdm.std: the text bar (tqdm.auto would look for a notebook widget)

            self.bar = tqdm(total=total, desc=desc, dynamic_ncols=True, leave=False)
        self.every = 0 if disable or self.bar is not None else \
            (every if every is not None else max(1, math.ceil((total or 100) / 10)))
        self.paused_seconds = 0.0
        self.started = clock()
        self.window = (0, 0.0)  # (n, active seconds) when the speed was last measured

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update()

    def __len__(self):
        return self.total

    def update(self, n=1, **postfix):
        self.n += n
        if postfix:
            self.set_postfix(**postfix)
        if self.bar is not None:
            self.bar.update(n)
        elif self.every and (self.n % self.every == 0 or self.n == self.total):
            done = f"{self.n}/{self.total} ({100 * self.n / self.total:.0f}%)" if self.total else f"{self.n}"
            extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
            sys.stdout.flush()  # what was printed before comes before this line in a shared log
            print(f"{self.desc}: {done}{extra}, {self.pace()}", file=sys.stderr, flush=True)

    def set_postfix(self, **values):
        self.postfix = values
        if self.bar is not None:
            self.bar.set_postfix(values, refresh=False)

    def write(self, text):
        """Print a line of the demo's output (above the bar, on a terminal)."""
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def active_seconds(self):
        return self.clock() - self.started - self.paused_seconds

    def pace(self):
        """"112 ms/step, ETA 0:03:37": the speed of the steps since the last call, and the time the
        rest would take at that speed."""
        n0, t0 = self.window
        n, t = self.n, self.active_seconds()
        self.window = (n, t)
        if n <= n0:
            return "no step yet"
        per_step = (t - t0) / (n - n0)
        text = f"{1000 * per_step:.0f} ms/step"
        if self.total:
            text += f", ETA {clock_text(per_step * (self.total - n))}"
        return text

    @contextlib.contextmanager
    def paused(self):
        """Inside, the clock of the speed and of the ETA stands still."""
        start = self.clock()
        try:
            yield
        finally:
            self.paused_seconds += self.clock() - start
            if self.bar is not None:
                self.bar.unpause()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def progress(iterable=None, total=None, desc=None, disable=False, every=None):
    """A `Progress` over iterable (or over `total` steps, moved on by `update`)."""
    return Progress(iterable, total, desc, disable, every)


# ---------------------------------------------------------------------------- Ctrl-C
class CtrlC:
    """Ctrl-C that lets a training loop finish its step: inside `with CtrlC() as ctrl_c:`, the first
    Ctrl-C only sets `ctrl_c.pressed`, and `ctrl_c.check()`, called where stopping leaves a whole
    state (between two steps), raises KeyboardInterrupt then. A second Ctrl-C interrupts at once.
    Outside the main thread (only the main thread may handle signals) Ctrl-C interrupts at once."""

    def __enter__(self):
        self.pressed, self.previous = False, None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not None:
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True
        print("\nCtrl-C: stopping after this step (press it again to stop at once)", file=sys.stderr, flush=True)

    def check(self):
        if self.pressed:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


# ---------------------------------------------------------------------------- text
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


# ---------------------------------------------------------------------------- plots
def plot_losses(history, path=None, title="loss", train=None):
    """history: [(step, train_loss, val_loss)] -> a PNG with both curves. train: [(step, loss)],
    if given, draws the training curve instead of history's train column (history's evaluations
    are then drawn as points on top)."""
    from minigrad import viz

    steps = [h[0] for h in history]
    fig = viz.figure(figsize=(6, 4))
    ax = fig.subplots()
    if train:
        ax.plot([t[0] for t in train], [t[1] for t in train], label="train", linewidth=1)
        ax.plot(steps, [h[1] for h in history], "o", markersize=3, color="C0", label="train (evaluation)")
    else:
        ax.plot(steps, [h[1] for h in history], label="train")
    if any(h[2] is not None for h in history):
        ax.plot(steps, [h[2] for h in history], "o-" if train else "-", markersize=3, color="C1", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    if path is None:  # a notebook shows the returned figure
        return fig
    fig.savefig(path, dpi=110)
    return path
