"""Activations as modules, with PyTorch's names: each calls its Tensor method or functional twin
(the derivative is beside the op, in ops.py)."""
import numpy as np

from .. import devices
from ..tensor import default_float
from . import functional as F
from .module import Module, Parameter


class _Activation(Module):
    """An activation with PyTorch's `inplace` argument: inplace=True writes the result into the input's
    memory and returns the input (F._maybe_in_place says what that means for the gradient)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def _inplace_repr(self, before=""):
        return before + (", " if before and self.inplace else "") + ("inplace=True" if self.inplace else "")

    def extra_repr(self):
        return self._inplace_repr()


class ReLU(_Activation):
    def forward(self, x):
        return F.relu(x, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return x.gelu(self.approximate)


class SiLU(_Activation):
    def forward(self, x):
        return F.silu(x, self.inplace)


class LeakyReLU(_Activation):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self):
        return self._inplace_repr(f"negative_slope={self.negative_slope}")


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return x.softplus(self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(_Activation):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return self._inplace_repr(f"alpha={self.alpha}")


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    def forward(self, x):
        return F.relu6(x, self.inplace)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(inplace)
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not be larger than max_val ({max_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return self._inplace_repr(f"min_val={self.min_val}, max_val={self.max_val}")


class LogSigmoid(Module):
    """log sigmoid(x) = -log(1 + e^-x), computed stably."""

    def forward(self, x):
        return F.logsigmoid(x)


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    def forward(self, x):
        return F.mish(x, self.inplace)


class SELU(_Activation):
    """scale * elu(x, alpha), with SELU's fixed scale and alpha."""

    def forward(self, x):
        return F.selu(x, self.inplace)


class PReLU(Module):
    """x where x > 0, a * x elsewhere, with the slope a learned: one for all (num_parameters=1) or one
    per channel (num_parameters = C, the input's dim 1). weight (num_parameters,) starts at `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        devices.check_device(device, "PReLU")
        dtype = default_float() if dtype is None else dtype
        self.num_parameters = num_parameters
        self.weight = Parameter(np.full(num_parameters, init, dtype=dtype))

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxLike(Module):
    """Softmax, LogSoftmax and Softmin: dim=None takes PyTorch's implicit (deprecated) choice, with a
    warning; pass the dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def _dim(self, x):
        if self.dim is not None:
            return self.dim
        return F._implicit_dim(type(self).__name__, F.as_tensor(x).ndim, stacklevel=5)  # (the caller of model(x))

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxLike):
    """softmax along `dim`: e^x_i / sum_j e^x_j, each slice sums to 1."""

    def forward(self, x):
        return F.softmax(x, dim=self._dim(x))


class LogSoftmax(_SoftmaxLike):
    """log softmax along `dim` (for NLLLoss), computed stably: x_i - logsumexp(x)."""

    def forward(self, x):
        return F.log_softmax(x, dim=self._dim(x))


class Softmin(_SoftmaxLike):
    """softmax(-x) along `dim`."""

    def forward(self, x):
        return F.softmin(x, dim=self._dim(x))


class CosineSimilarity(Module):
    """x1 . x2 / (max(||x1||, eps) max(||x2||, eps)) along `dim`, which the result drops."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self):
        return f"dim={self.dim}, eps={self.eps}"


class Hardsigmoid(_Activation):
    """min(max(x + 3, 0), 6) / 6; see F.hardsigmoid."""

    def forward(self, x):
        return F.hardsigmoid(x, self.inplace)


class Hardswish(_Activation):
    """x * min(max(x + 3, 0), 6) / 6; see F.hardswish."""

    def forward(self, x):
        return F.hardswish(x, self.inplace)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x):
        return F.softsign(x)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x):
        return F.tanhshrink(x)


class Threshold(_Activation):
    """x if x > threshold else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return self._inplace_repr(f"threshold={self.threshold}, value={self.value}")


class GLU(Module):
    """a * sigmoid(b), with a and b the halves of the input along `dim`; see F.glu."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class CELU(_Activation):
    """max(0, x) + min(0, alpha (e^(x / alpha) - 1)); see F.celu."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return self._inplace_repr(f"alpha={self.alpha}")


class Softshrink(Module):
    """x - lambd if x > lambd, x + lambd if x < -lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        if not lambd >= 0:
            raise ValueError(f"Softshrink: lambd must be >= 0, got {lambd}")
        self.lambd = lambd

    def forward(self, x):
        return F.softshrink(x, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Module):
    """x if |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.hardshrink(x, self.lambd)

    def extra_repr(self):
        return str(self.lambd)
