"""Weight initialisation, in place, from minigrad's seeded generator (`minigrad.manual_seed`), with
PyTorch's names and arguments (`nn.init.kaiming_normal_(w, nonlinearity="relu")`).

Each function fills the tensor's array directly (no autograd record, as under `no_grad()`),
counts the change and returns the tensor. The random ones draw from `generator` (a
`minigrad.Generator`) or the default one; the numbers are not PyTorch's for the same seed.

Fans: for a weight (out, in, *kernel) (Linear's (out, in), Conv2d's (out, in, kH, kW)),
    fan_in = in * prod(kernel),  fan_out = out * prod(kernel)
the number of inputs that feed one output, and of outputs that one input feeds."""
import math
import numbers
import warnings

import numpy as np

from ..random import rng


def _fill(tensor, values, by):
    tensor.numpy()[...] = values
    tensor._bump(by)
    return tensor


def _calculate_fan_in_and_fan_out(tensor, op="_calculate_fan_in_and_fan_out"):
    """(fan_in, fan_out) of a weight (out, in, *kernel): (in * k, out * k), k = prod(kernel)."""
    if tensor.ndim < 2:
        raise ValueError(f"{op}: fan in and fan out need a tensor with at least 2 dims (out, in, *kernel), got "
                         f"shape {tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])  # (1 for a 2-D weight)
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode, op):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, op)
    return fan_in if mode == "fan_in" else fan_out


_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The factor by which to scale a weight's std so that the activations after `nonlinearity` keep
    their variance from layer to layer:

        linear, conv*, sigmoid: 1     tanh: 5/3     relu: sqrt(2)     selu: 3/4
        leaky_relu: sqrt(2 / (1 + slope^2)), slope = param (default 0.01)"""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope (param) must be a number, got {param!r}")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; expected one of "
                     f"{', '.join(_LINEAR + ('sigmoid', 'tanh', 'relu', 'leaky_relu', 'selu'))}")


def _is_empty(tensor, op):
    if tensor.numel() == 0:
        warnings.warn(f"{op}: the tensor has no elements (shape {tuple(tensor.shape)}); nothing to initialise",
                      UserWarning, stacklevel=3)
        return True
    return False


# ---------------------------------------------------------------------- constants
def constant_(tensor, val):
    """Every element = val."""
    return _fill(tensor, val, "init.constant_")


def zeros_(tensor):
    return _fill(tensor, 0.0, "init.zeros_")


def ones_(tensor):
    return _fill(tensor, 1.0, "init.ones_")


def eye_(tensor):
    """The identity matrix (a 2-D tensor; 1 on the diagonal, 0 elsewhere, rectangular too): a Linear
    layer that passes its inputs through."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: needs a 2-D tensor, got shape {tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape), "init.eye_")


def dirac_(tensor, groups=1):
    """A conv weight (out, in, *kernel) that passes its inputs through: 1 at the kernel's centre from
    input channel d to output channel d (in each of `groups` groups of out / groups channels),
    0 elsewhere. Output channels beyond the inputs stay 0."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: needs a 3-, 4- or 5-D conv weight (out, in, *kernel), got shape "
                         f"{tuple(tensor.shape)}")
    if groups < 1 or tensor.shape[0] % groups:
        raise ValueError(f"dirac_: {tensor.shape[0]} output channels (shape {tuple(tensor.shape)}) do not split "
                         f"into groups={groups}")
    per_group = tensor.shape[0] // groups
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per_group, tensor.shape[1])):
            values[(g * per_group + d, d) + centre] = 1
    return _fill(tensor, values, "init.dirac_")


# ---------------------------------------------------------------------- random
def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Samples from N(mean, std^2), from `generator` (a `minigrad.Generator`) or the default one."""
    return _fill(tensor, rng(generator).normal(mean, std, tensor.shape), "init.normal_")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Samples from U(a, b), from `generator` or the default one."""
    return _fill(tensor, rng(generator).uniform(a, b, tensor.shape), "init.uniform_")


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Samples from N(mean, std^2) truncated to [a, b] (a and b are values, not numbers of stds):
    a sample outside [a, b] is drawn again until it falls inside. ViT and GPT-style models use it
    with std=0.02."""
    if not a < b:
        raise ValueError(f"trunc_normal_: needs a < b, got a={a}, b={b}")
    if not std > 0:
        raise ValueError(f"trunc_normal_: std must be > 0, got {std}")
    phi = lambda z: 0.5 * (1 + math.erf((z - mean) / (std * math.sqrt(2))))  # noqa: E731  (the normal's CDF)
    accepted = phi(b) - phi(a)  # the chance that one draw lands in [a, b]
    if not accepted > 0:
        raise ValueError(f"trunc_normal_: [a, b] = [{a}, {b}] is too far from mean={mean} (std={std}): a draw "
                         "would (nearly) never land inside")
    g = rng(generator)
    values = np.empty(tensor.numel())
    filled = 0
    while filled < values.size:  # draw about as many as still missing, divided by the chance to land inside
        want = values.size - filled
        draws = g.normal(mean, std, min(int(want / accepted * 1.1) + 16, 1 << 24))
        inside = draws[(draws >= a) & (draws <= b)][:want]
        values[filled:filled + inside.size] = inside
        filled += inside.size
    return _fill(tensor, values.reshape(tensor.shape), "init.trunc_normal_")


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), so activations keep
    their variance both forwards and backwards. For a weight (out, in): fan_in = in, fan_out = out."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_uniform_")
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio, normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, "xavier_normal_")
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al.: U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a)
    (`a`: the negative slope of leaky_relu; a=0 is relu's sqrt(2)). mode='fan_in' keeps the variance
    of the activations forwards, 'fan_out' that of the gradients backwards."""
    if _is_empty(tensor, "kaiming_uniform_"):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_uniform_")
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)  # (the std of U(-b, b) is b / sqrt(3))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al.: N(0, std^2) with std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)
    (see kaiming_uniform_ for `a` and `mode`)."""
    if _is_empty(tensor, "kaiming_normal_"):
        return tensor
    fan = _calculate_correct_fan(tensor, mode, "kaiming_normal_")
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix times `gain`: W W^T = gain^2 I if rows <= columns, W^T W = gain^2 I
    otherwise (Saxe et al.). Dims after the first are flattened into the columns. Drawn as the Q of
    the QR decomposition of a standard normal matrix, with Q's columns multiplied by the signs of
    R's diagonal (so that Q is uniformly distributed over the orthogonal matrices)."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: needs a tensor with at least 2 dims, got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T  # QR of the tall matrix; transposed back below
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))  # column j times sign(R_jj)
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape), "init.orthogonal_")
