"""Devices, as PyTorch names them: minigrad has one, the CPU.

PyTorch code says where its tensors live (`device="cpu"`, `x.to(device)`, `model.cuda()`). On
minigrad such code runs unchanged as long as the device is the CPU; any other device is refused
with one clear message, at the line that names it.

    device = minigrad.device("cuda" if minigrad.cuda.is_available() else "cpu")   # device(type='cpu')
    x = minigrad.zeros(3, device=device)
    x.to(device), x.cpu(), x.device                                               # no-ops, and 'cpu'
"""

# what PyTorch accepts as a device type: recognised (so the error can say why), but not available here
_OTHER_DEVICE_TYPES = frozenset(
    "cuda mps xpu xla meta hip ipu hpu mtia ve lazy vulkan opengl opencl mkldnn ideep fpga maia "
    "privateuseone".split()
)


class device:
    """A device name, `type` ('cpu') and optional `index`, as `torch.device`. Only 'cpu' exists:

        minigrad.device("cpu"), minigrad.device("cpu:0"), minigrad.device("cpu", 0)

    Compares equal to another device of the same type and index, and to its string ('cpu')."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string such as 'cpu' (or a device), got {type!r}")
        name, _, number = type.partition(":")
        if number:
            if index is not None:
                raise ValueError(f"device: the index is given twice, in {type!r} and as index={index}")
            if not number.isdigit():
                raise ValueError(f"device: {type!r} is not a device name; expected 'cpu' or 'cpu:0'")
            index = int(number)
        _check_type(name, type)
        self.type, self.index = name, index

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            return str(self) == other
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


def _check_type(name, given):
    if name == "cpu":
        return
    if name in _OTHER_DEVICE_TYPES:
        raise RuntimeError(
            f"minigrad runs on the CPU only: got device {given!r}. Use 'cpu' (PyTorch code such as "
            "`device = 'cuda' if torch.cuda.is_available() else 'cpu'` picks it by itself: "
            "minigrad.cuda.is_available() is False)"
        )
    raise ValueError(f"device: {given!r} is not a device name; minigrad has one device, 'cpu'")


CPU = device("cpu")


def is_device(x):
    """Whether `x` names a device (a `device`, or a string such as 'cpu' or 'cuda:0') rather than a dtype."""
    return isinstance(x, device) or (isinstance(x, str) and (x.partition(":")[0] == "cpu"
                                                              or x.partition(":")[0] in _OTHER_DEVICE_TYPES))


def check_device(where, op="device"):
    """Accept None or the CPU (as a `device` or a string) for `op`'s device= argument; refuse anything else."""
    if where is None or where is CPU:
        return
    if isinstance(where, device):
        return  # a device object can only be the CPU (the constructor refuses the others)
    if isinstance(where, int) and not isinstance(where, bool):
        raise RuntimeError(f"{op}: minigrad runs on the CPU only: got device={where} (a CUDA device number); "
                           "use device='cpu'")
    try:
        device(where)  # raises for anything but 'cpu'
    except (RuntimeError, ValueError, TypeError) as error:
        raise type(error)(f"{op}: {error}") from None


def set_default_device(where):
    """Where new tensors go by default: only 'cpu' (or None) is possible, so this only checks."""
    check_device(where, "set_default_device")


def get_default_device():
    return CPU
