"""`minigrad.cuda`: the questions PyTorch code asks about CUDA, answered for a CPU-only library.

    device = "cuda" if minigrad.cuda.is_available() else "cpu"     # 'cpu'
"""


def is_available():
    """False: minigrad runs on the CPU only."""
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Seeds the CUDA generators in PyTorch; there are none here, so it does nothing (as PyTorch
    without a GPU). Seed minigrad's generator with `minigrad.manual_seed`."""


manual_seed_all = manual_seed
