"""Probability distributions, as `torch.distributions`: Categorical, Bernoulli, Normal, Uniform and
`kl_divergence`.

    from minigrad.distributions import Categorical
    policy = Categorical(logits=model(state))          # logits (B, A): one distribution per row
    action = policy.sample()                           # (B,) int64, outside the graph
    loss = -(policy.log_prob(action) * reward).mean()  # REINFORCE: the graph runs through log_prob
    loss.backward()

Two ways to draw:
- `sample(sample_shape)`: numbers drawn outside the graph (no gradient), from minigrad's default
  generator (`minigrad.manual_seed(n)` makes them reproducible; they are not PyTorch's numbers).
- `rsample(sample_shape)` (Normal and Uniform, `has_rsample = True`): the reparameterisation trick,
  a draw written as a differentiable function of the parameters and of parameter-free noise,
  x = loc + scale * eps with eps ~ N(0, 1), so that gradients flow to loc and scale.

`log_prob`, `entropy`, `mean`, `variance` and `kl_divergence` are made of Tensor ops: in the graph.
A sample has shape sample_shape + batch_shape + event_shape (event_shape is () for all four here).

Arguments are checked as PyTorch's validate_args does (on by default; `validate_args=False` turns
it off): parameters when the distribution is made, values when log_prob is called, with a
ValueError naming the distribution, the argument, the rule and the values that break it."""
import math
import numbers

import numpy as np

from . import random
from .creation import as_tensor, where
from .nn import functional as F
from .tensor import Tensor, default_float

__all__ = ["Distribution", "Categorical", "Bernoulli", "Normal", "Uniform", "kl_divergence", "register_kl"]


def _values(t):
    return t.detach().numpy()


def _float_params(*values):
    """The parameters as Tensors of one float dtype, broadcast to one shape (PyTorch's broadcast_all):
    a Tensor keeps its dtype (the first one's is taken by numbers and arrays; none: the default
    float dtype). Broadcasting is in the graph, so gradients reach the parameters as given."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    dtype = tensors[0].dtype if tensors and tensors[0].dtype.kind == "f" else default_float()
    params = [v if isinstance(v, Tensor) and v.dtype.kind == "f" else as_tensor(np.asarray(_values(v) if
              isinstance(v, Tensor) else v, dtype=dtype)) for v in values]
    shape = np.broadcast_shapes(*(p.shape for p in params))
    return [p if p.shape == shape else p.broadcast_to(shape) for p in params], shape


class Distribution:
    """What the distributions share: batch_shape and event_shape, the checks, stddev and repr."""

    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        self._validate_args = True if validate_args is None else bool(validate_args)

    @property
    def batch_shape(self):
        """The shape of the batch of independent distributions this object holds."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw of one distribution (() here: every distribution is of scalars)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        """sample_shape + batch_shape + event_shape: the shape of sample(sample_shape)."""
        if isinstance(sample_shape, numbers.Integral):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        raise NotImplementedError

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__}: has no rsample (it is not reparameterisable: its draws "
                                  "are discrete); use sample() and log_prob (REINFORCE)")

    def log_prob(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    @property
    def stddev(self):
        """sqrt(variance)."""
        return self.variance.sqrt()

    def _params_repr(self):
        return {}

    def __repr__(self):
        def show(t):
            return f"{_values(t).item()}" if t.numel() == 1 else f"Size({list(t.shape)})"

        return f"{type(self).__name__}(" + ", ".join(f"{k}: {show(v)}" for k, v in self._params_repr().items()) + ")"

    def _refuse(self, what, constraint, bad_mask, values, shape):
        """PyTorch's validate_args error: which argument, of which distribution, broke which rule, with what."""
        bad = np.asarray(values)[np.broadcast_to(bad_mask, np.shape(values))] if np.ndim(values) else values
        raise ValueError(f"Expected {what} (Tensor of shape {tuple(shape)}) of distribution {self!r} to satisfy the "
                         f"constraint {constraint}, but found invalid values:\n{bad}")

    def _check_param(self, name, tensor, ok, constraint):
        if self._validate_args and not np.all(ok):
            values = _values(tensor)
            self._refuse(f"parameter {name}", constraint, ~np.asarray(ok), values, tensor.shape)

    def _check_value(self, value, ok, support):
        if self._validate_args and not np.all(ok):
            values = _values(value)
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within the "
                             f"support ({support}) of the distribution {self!r}, but found invalid values:\n"
                             f"{values[~np.broadcast_to(np.asarray(ok), values.shape)] if values.ndim else values}")

    def _float_value(self, value, dtype):
        return value if isinstance(value, Tensor) else as_tensor(np.asarray(value, dtype=dtype))


class Normal(Distribution):
    """N(loc, scale^2), the Gaussian:
        log p(x) = -(x - loc)^2 / (2 scale^2) - log scale - log sqrt(2 pi)
        entropy = 1/2 + 1/2 log(2 pi) + log scale
    loc and scale broadcast to batch_shape; scale > 0."""

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        numbers_only = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        (self.loc, self.scale), shape = _float_params(loc, scale)
        super().__init__(() if numbers_only else shape, validate_args=validate_args)
        self._check_param("loc", self.loc, ~np.isnan(_values(self.loc)), "Real()")
        self._check_param("scale", self.scale, _values(self.scale) > 0, "GreaterThan(lower_bound=0.0)")

    def _params_repr(self):
        return {"loc": self.loc, "scale": self.scale}

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        """scale^2."""
        return self.scale ** 2

    def _noise(self, sample_shape):
        shape = self._extended_shape(sample_shape)
        return random.rng().standard_normal(shape).astype(self.loc.dtype)

    def sample(self, sample_shape=()):
        """loc + scale * eps, eps ~ N(0, 1): outside the graph."""
        eps = self._noise(sample_shape)
        return Tensor((_values(self.loc) + eps * _values(self.scale)).astype(self.loc.dtype))

    def rsample(self, sample_shape=()):
        """loc + scale * eps, eps ~ N(0, 1) a constant: in the graph, d x / d loc = 1, d x / d scale = eps."""
        return self.loc + Tensor(self._noise(sample_shape)) * self.scale

    def log_prob(self, value):
        """-(x - loc)^2 / (2 scale^2) - log scale - log sqrt(2 pi)."""
        value = self._float_value(value, self.loc.dtype)
        self._check_value(value, ~np.isnan(_values(value)), "Real()")
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        """1/2 + 1/2 log(2 pi) + log scale."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """U(low, high), constant density on [low, high):
        log p(x) = -log(high - low) inside, -inf outside;   entropy = log(high - low)
    low and high broadcast to batch_shape; low < high."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        numbers_only = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
        (self.low, self.high), shape = _float_params(low, high)
        super().__init__(() if numbers_only else shape, validate_args=validate_args)
        high_values = _values(self.high)
        self._check_param("low", self.low, _values(self.low) < high_values,
                          f"LessThan(upper_bound={high_values.item() if high_values.size == 1 else 'high'})")

    def _params_repr(self):
        return {"low": self.low, "high": self.high}

    @property
    def mean(self):
        """(low + high) / 2."""
        return (self.high + self.low) / 2

    @property
    def stddev(self):
        """(high - low) / sqrt(12)."""
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        """(high - low)^2 / 12."""
        return (self.high - self.low) ** 2 / 12

    def _noise(self, sample_shape):
        return random.rng().random(self._extended_shape(sample_shape)).astype(self.low.dtype)

    def sample(self, sample_shape=()):
        """low + u (high - low), u ~ U(0, 1): outside the graph."""
        low, high = _values(self.low), _values(self.high)
        return Tensor((self._noise(sample_shape) * (high - low) + low).astype(self.low.dtype))

    def rsample(self, sample_shape=()):
        """low + u (high - low), u ~ U(0, 1) a constant: in the graph."""
        return Tensor(self._noise(sample_shape)) * (self.high - self.low) + self.low

    def log_prob(self, value):
        """log [low <= x < high] - log(high - low): the first term is 0 or -inf, a constant."""
        value = self._float_value(value, self.low.dtype)
        x, low, high = _values(value), _values(self.low), _values(self.high)
        self._check_value(value, (low <= x) & (x <= high),
                          f"Interval(lower_bound={low.item() if low.size == 1 else 'low'}, "
                          f"upper_bound={high.item() if high.size == 1 else 'high'})")
        with np.errstate(divide="ignore"):
            inside = np.log(((low <= x) & (high > x)).astype(self.low.dtype))
        return Tensor(inside) - (self.high - self.low).log()

    def entropy(self):
        """log(high - low)."""
        return (self.high - self.low).log()


def _clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] (eps of the dtype), PyTorch's, before a log."""
    eps = float(np.finfo(probs.dtype).eps)
    return probs.clip(eps, 1 - eps)


class _ProbsOrLogits(Distribution):
    """Bernoulli and Categorical: made from probs or from logits (exactly one), and give both."""

    def _one_of(self, probs, logits):
        if (probs is None) == (logits is None):
            raise ValueError(f"{type(self).__name__}: either `probs` or `logits` must be specified, but not both "
                             f"(got probs={'None' if probs is None else 'a value'}, "
                             f"logits={'None' if logits is None else 'a value'})")
        given = probs if probs is not None else logits
        if not isinstance(given, Tensor) or given.dtype.kind != "f":
            given = as_tensor(np.asarray(_values(given) if isinstance(given, Tensor) else given,
                                         dtype=default_float()))
        return given

    def _params_repr(self):
        return {"probs": self._probs} if self._probs is not None else {"logits": self._logits}

    @property
    def param_shape(self):
        return tuple((self._probs if self._probs is not None else self._logits).shape)


class Bernoulli(_ProbsOrLogits):
    """1 with probability p, 0 with 1 - p; p = probs, or sigmoid(logits):
        log p(x) = x log p + (1 - x) log(1 - p)  (= -binary_cross_entropy_with_logits(logits, x))
        entropy = -(p log p + (1 - p) log(1 - p))
    probs in [0, 1]; samples are floats (0. and 1.), in the parameters' dtype."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = self._one_of(probs, logits)
        self._probs, self._logits = (given, None) if probs is not None else (None, given)
        super().__init__(given.shape, validate_args=validate_args)
        if probs is not None:
            p = _values(given)
            self._check_param("probs", given, (p >= 0) & (p <= 1), "Interval(lower_bound=0.0, upper_bound=1.0)")
        else:
            self._check_param("logits", given, ~np.isnan(_values(given)), "Real()")

    @property
    def probs(self):
        """p: as given, or sigmoid(logits)."""
        return self._probs if self._probs is not None else self._logits.sigmoid()

    @property
    def logits(self):
        """log(p / (1 - p)): as given, or from probs clamped to [eps, 1 - eps]."""
        if self._logits is not None:
            return self._logits
        p = _clamp_probs(self._probs)
        return p.log() - (-p).log1p()

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        """p (1 - p)."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """1 where u < p, u ~ U(0, 1): outside the graph."""
        shape = self._extended_shape(sample_shape)
        p = _values(self.probs)
        return Tensor((random.rng().random(shape) < p).astype(p.dtype))

    def log_prob(self, value):
        """x log p + (1 - x) log(1 - p), computed stably as -bce_with_logits(logits, x)."""
        logits = self.logits
        value = self._float_value(value, logits.dtype)
        x = _values(value)
        self._check_value(value, (x == 0) | (x == 1), "Boolean()")
        shape = np.broadcast_shapes(logits.shape, value.shape)
        return -F.binary_cross_entropy_with_logits(logits.broadcast_to(shape), value.broadcast_to(shape),
                                                   reduction="none")

    def entropy(self):
        """-(p log p + (1 - p) log(1 - p)) = bce_with_logits(logits, p)."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class Categorical(_ProbsOrLogits):
    """One of K classes 0..K-1, with probabilities probs (..., K) (normalised along the last dim), or
    softmax(logits) (logits (..., K), normalised to log-probabilities: logits - logsumexp(logits)):
        log p(k) = logits[k]        entropy = -sum_k p_k log p_k
    batch_shape is the parameter's shape without K; samples are int64 class ids."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = self._one_of(probs, logits)
        if given.ndim == 0:
            raise ValueError(f"Categorical: `{'probs' if probs is not None else 'logits'}` parameter must be at "
                             "least one-dimensional (..., K), got a 0-d tensor")
        if probs is not None:
            self._probs, self._logits = given / given.sum(-1, keepdim=True), None
        else:
            self._probs, self._logits = None, given - given.logsumexp(-1, keepdim=True)
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], validate_args=validate_args)
        if probs is not None:
            p = _values(self._probs)
            ok = np.all(p >= 0, axis=-1) & (np.abs(p.sum(-1) - 1) < 1e-6)
            self._check_param("probs", self._probs, np.broadcast_to(ok[..., None], p.shape), "Simplex()")
        else:
            self._check_param("logits", self._logits, ~np.isnan(_values(self._logits)),
                              "IndependentConstraint(Real(), 1)")

    @property
    def probs(self):
        """p (..., K): as given (normalised), or softmax(logits)."""
        return self._probs if self._probs is not None else self._logits.softmax(-1)

    @property
    def logits(self):
        """log p (..., K): as given (normalised), or log of probs clamped to [eps, 1 - eps]."""
        return self._logits if self._logits is not None else _clamp_probs(self._probs).log()

    @property
    def mean(self):
        """Undefined for class ids: NaN (PyTorch's)."""
        return Tensor(np.full(self._batch_shape, np.nan, dtype=self.param_dtype))

    @property
    def variance(self):
        """Undefined for class ids: NaN (PyTorch's)."""
        return Tensor(np.full(self._batch_shape, np.nan, dtype=self.param_dtype))

    @property
    def param_dtype(self):
        return (self._probs if self._probs is not None else self._logits).dtype

    def sample(self, sample_shape=()):
        """The inverse of the cumulative distribution at u ~ U(0, 1): the class k with
        cdf[k-1] <= u < cdf[k], i.e. k = the number of cdf values <= u. Outside the graph."""
        p = _values(self.probs).astype(np.float64)
        cdf = np.cumsum(p, axis=-1)
        cdf /= cdf[..., -1:]  # (exactly 1 at the end, so u < 1 never runs past class K-1)
        u = random.rng().random(self._extended_shape(sample_shape))
        return Tensor((cdf <= u[..., None]).sum(-1).astype(np.int64))

    def log_prob(self, value):
        """logits[value] (log-probabilities), value (...) of class ids broadcast against batch_shape."""
        value = value if isinstance(value, Tensor) else as_tensor(np.asarray(value))
        v = _values(value)
        k = self._num_events
        self._check_value(value, (v % 1 == 0) & (v >= 0) & (v <= k - 1),
                          f"IntegerInterval(lower_bound=0, upper_bound={k - 1})")
        shape = np.broadcast_shapes(v.shape, self._batch_shape)
        ids = np.broadcast_to(v, shape).astype(np.int64)[..., None]
        return self.logits.broadcast_to(shape + (k,)).gather(-1, ids).squeeze(-1)

    def entropy(self):
        """-sum_k p_k log p_k (log p clamped at the dtype's lowest number: 0 log 0 counts 0)."""
        logits = self.logits.clip(min=float(np.finfo(self.param_dtype).min))
        return -(logits * self.probs).sum(-1)


# ---------------------------------------------------------------------- KL divergence
_KL = {}


def register_kl(type_p, type_q):
    """Decorator: `@register_kl(Normal, Normal) def f(p, q): ...` makes kl_divergence use f for them."""
    def register(fn):
        _KL[type_p, type_q] = fn
        return fn

    return register


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], per distribution of the batch (batch_shape), in the graph."""
    for (type_p, type_q), fn in _KL.items():
        if isinstance(p, type_p) and isinstance(q, type_q):
            return fn(p, q)
    raise NotImplementedError(f"kl_divergence: no KL(p || q) is implemented for p a {type(p).__name__} and q a "
                              f"{type(q).__name__} (implemented: "
                              + ", ".join(f"{a.__name__}-{b.__name__}" for a, b in _KL) + ")")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    """KL = 1/2 (r + ((mu_p - mu_q) / s_q)^2 - 1 - log r), r = (s_p / s_q)^2."""
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    """KL = sum_k p_k (log p_k - log q_k); a class with p_k = 0 adds 0, one with p_k > 0 = q_k adds inf."""
    p_probs, q_probs = p.probs, q.probs
    terms = p_probs * (p.logits - q.logits)
    p_zero, q_zero = _values(p_probs) == 0, _values(q_probs) == 0
    terms = where(p_zero, 0.0, where(q_zero, math.inf, terms))
    return terms.sum(-1)
