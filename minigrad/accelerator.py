"""`minigrad.accelerator`: PyTorch's question "is there a GPU (or another accelerator)?", answered
for a CPU-only library.

    device = minigrad.accelerator.current_accelerator().type if minigrad.accelerator.is_available() else "cpu"
"""


def is_available():
    """False: minigrad runs on the CPU only."""
    return False


def current_accelerator(check_available=False):
    """None: there is no accelerator."""
    return None


def device_count():
    return 0
