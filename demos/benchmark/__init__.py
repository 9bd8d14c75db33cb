"""Benchmark minigrad against numpy and PyTorch, side by side in one run.

    python -m demos.benchmark                   # everything: several minutes
    python -m demos.benchmark --quick           # a smoke run, well under 30 s (no memory, no start-up)
    python -m demos.benchmark --only matmul,softmax --json > bench.json

Eight sections (choose with --only), one module each:

- matmul:  float32 GFLOP/s of minigrad's numba kernel, np.matmul and torch.matmul, at square
           sizes and at the shapes a GPT training step multiplies (2-D and batched attention).
- softmax: forward + backward over rows, numba kernel vs its numpy twin vs PyTorch.
- gpt:     a whole training step (forward, backward, AdamW, zero_grad) of minigrad's GPT and of
           the same model written in PyTorch, plus each one's peak memory (in subprocesses).
- busy:    the same training step on a quiet machine and with one busy process beside it.
- startup: what a newcomer waits for: a fresh Python process, an empty kernel cache, from process
           start to the end of the first GPT training step; then the same with the warm cache.
- train:   demos.char_gpt's whole training run (nanoGPT's CPU configuration on Shakespeare, 2000
           iterations with its evaluations) in minigrad and the same run in PyTorch: wall time of each.
- conv:    nn.Conv2d forward and backward at LeNet and small-ResNet shapes, and one training step of
           a LeNet-style CNN, minigrad against PyTorch.
- rnn:     one training step of a character model with nn.RNN, nn.GRU and nn.LSTM, minigrad against
           PyTorch.

The other modules: `timing` (how a candidate is timed), `report` (numbers and tables), `threads`
(thread counts of every library), `system` (the header), `models` (the two GPTs and their training
steps), `children` (measurements in fresh processes), `targets` (the goals), `cli` (the command line).

Every ratio of minigrad against another library is arranged so that > 1 means minigrad is faster.
On a machine shared with other work, multi-threaded timings can be far off: compare with
--threads 1, which gives every library one thread.
"""
from .cli import SECTIONS, build_parser, main
from .matmul import matmul_cases
from .models import GPT_CONFIGS, build_torch_gpt, make_minigrad_trainer, make_torch_trainer
from .softmax import SOFTMAX_SHAPES
from .targets import evaluate_targets
from .timing import race, settle

__all__ = ["SECTIONS", "GPT_CONFIGS", "SOFTMAX_SHAPES", "build_parser", "build_torch_gpt", "evaluate_targets",
           "main", "make_minigrad_trainer", "make_torch_trainer", "matmul_cases", "race", "settle"]
