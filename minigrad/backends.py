"""`minigrad.backends`: the questions and switches about GPUs that PyTorch code has, answered for a
CPU-only library.

    device = "cuda" if minigrad.cuda.is_available() else "mps" if minigrad.backends.mps.is_available() else "cpu"
    minigrad.backends.cudnn.deterministic = True      # accepted; minigrad's results are deterministic anyway
"""


class _MPS:
    """Apple's Metal GPU backend: not here."""

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_built():
        return False


class _CuDNN:
    """NVIDIA's cuDNN switches: set freely, they change nothing (there is no GPU, and minigrad's
    kernels give the same result on every run)."""

    enabled = True
    benchmark = False
    deterministic = False

    @staticmethod
    def is_available():
        return False


mps = _MPS()
cudnn = _CuDNN()
