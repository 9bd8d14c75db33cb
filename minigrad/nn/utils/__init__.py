"""minigrad.nn.utils, as torch.nn.utils: gradient clipping and parameters as one flat vector; and
`nn.utils.rnn` (rnn.py): sequences of different lengths padded into one batch.

    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)   # all gradients together
    optimizer.step()

The clipping functions change the gradients' arrays in place (`p.grad.numpy()`), outside the
graph, as an optimizer step does."""
import math

import numpy as np

from ... import kernels
from ...compile import replayed_as_a_call
from ...creation import cat
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _grads(parameters):
    """The gradient arrays of `parameters` (a Tensor or an iterable of them) that have one; a
    parameter listed twice counts once (as `minigrad.optim.clip_grad_norm_`)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return list({id(p): p.grad.numpy() for p in parameters if p.grad is not None}.values())


def _total_norm(grads, norm_type):
    """The p-norm of all gradient entries together, as if concatenated into one vector, in float64:
        p = inf:  max |g|        else:  (sum |g|^p)^(1/p)"""
    if not grads:
        return 0.0
    if norm_type == math.inf:
        return max(float(np.max(np.abs(g), initial=0.0)) for g in grads)
    if norm_type == 2.0:  # the usual case: sum g^2 (a kernel, in float64), no abs and no power
        return math.sqrt(sum(kernels.sum_squares(g.ravel()) for g in grads))
    if norm_type == 1.0:
        return sum(float(np.abs(g).sum(dtype=np.float64)) for g in grads)
    return sum(float((np.abs(g.astype(np.float64)) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)


@replayed_as_a_call
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so that their total p-norm is at most `max_norm`:

        total = || all gradient entries as one vector ||_p     (p = norm_type: 2, 1, inf, any p > 0)
        g <- g * min(1, max_norm / (total + 1e-6))            for every gradient, in place

    Returns `total` (before clipping) as a 0-d tensor in the gradients' dtype, as PyTorch (log it
    with `.item()`). Parameters whose .grad is None are skipped. Two differences from PyTorch,
    as `minigrad.optim.clip_grad_norm_` (this one, norm_type 2, returning a float): a parameter listed twice
    counts once, and a total that is inf or NaN leaves the gradients alone (PyTorch would scale
    them by 0 or NaN), so the caller can see it and skip the step; error_if_nonfinite=True raises
    instead. `foreach` is accepted and ignored (PyTorch's choice of kernel)."""
    norm_type = float(norm_type)  # (PyTorch accepts 'inf' too)
    if not norm_type > 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be > 0 (or inf), got {norm_type}")
    grads = _grads(parameters)
    total = _total_norm(grads, norm_type)
    if not math.isfinite(total):
        if error_if_nonfinite:
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}, "
                               "so they cannot be clipped; to leave them alone instead, pass "
                               "error_if_nonfinite=False")
    else:
        scale = max_norm / (total + 1e-6)
        if scale < 1.0:
            for g in grads:
                g *= scale
    dtype = np.result_type(*grads) if grads else np.float32
    return Tensor(np.asarray(total, dtype=dtype))


@replayed_as_a_call
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient entry into [-clip_value, clip_value], in place. Returns None."""
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for g in _grads(parameters):
        np.clip(g, -clip_value, clip_value, out=g)


def parameters_to_vector(parameters):
    """The parameters flattened and joined into one 1-D tensor (in order), in the graph: gradients
    flow back to each parameter."""
    flat = [p.reshape(-1) for p in parameters]
    if not flat:
        raise ValueError("parameters_to_vector: got no parameters")
    return cat(flat)


@replayed_as_a_call
def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D tensor `vec` into the parameters (each reshaped to its
    parameter's shape and cast to its dtype), in place and outside the graph: the inverse of
    `parameters_to_vector`. Returns None."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: vec must be a Tensor, got {type(vec).__name__}")
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec must be 1-D with {total} elements (the parameters' "
                         f"{[tuple(p.shape) for p in parameters]}), got shape {tuple(vec.shape)}")
    values = vec.numpy()
    start = 0
    for p in parameters:
        p.numpy()[...] = values[start:start + p.numel()].reshape(p.shape)
        p._bump("vector_to_parameters")
        start += p.numel()


from . import rnn  # noqa: E402  (nn.utils.rnn.pad_sequence, as torch.nn.utils.rnn)
