"""`minigrad.autograd.functional`, as torch.autograd.functional: whole derivative matrices of a
function, built from the gradients backward gives.

    jacobian(f, x)   J[i, j] = d f(x)_i / d x_j      one backward per output element i (a row each)
    hessian(f, x)    H[i, j] = d² f(x) / dx_i dx_j    the jacobian of the gradient (create_graph=True)

Shapes as PyTorch's: for an output of shape (m...) and an input of shape (n...), the jacobian has
shape (m..., n...). With several inputs (a tuple), a tuple of them, one per input. Slow (a backward
per output element) and meant for small checks and lessons, as PyTorch's default is.
"""
import numpy as np

from .autograd import grad
from .grad_mode import enable_grad
from .tensor import Tensor

__all__ = ["jacobian", "hessian"]


def _fresh(inputs):
    """Each input as a new leaf that requires grad (its values, outside any graph it was in)."""
    return tuple(Tensor(np.array(t.detach().numpy() if isinstance(t, Tensor) else t), requires_grad=True)
                 for t in inputs)


def jacobian(func, inputs, create_graph=False, strict=False):
    """d func(inputs) / d inputs: a Tensor of shape output.shape + input.shape, or (several inputs)
    a tuple with one per input. An output element that does not depend on an input gives zeros
    there (PyTorch's; strict=True raises instead)."""
    single = isinstance(inputs, Tensor)
    xs = _fresh((inputs,) if single else tuple(inputs))
    with enable_grad():
        out = func(*xs)
        if not isinstance(out, Tensor):
            raise TypeError(f"jacobian: func must return one Tensor, got {type(out).__name__}")
        flat = out.reshape(-1)
        rows = [[] for _ in xs]
        for i in range(flat.shape[0]):
            grads = grad(flat[i], xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
            for k, (g, x) in enumerate(zip(grads, xs)):
                if g is None and strict:
                    raise RuntimeError(f"jacobian: output {i} does not depend on input {k} (strict=True)")
                rows[k].append(g if g is not None else Tensor(np.zeros(x.shape, dtype=x.dtype)))
    from .creation import stack  # (creation imports this module's neighbours: no cycle at import time)

    results = tuple(stack(r).reshape(out.shape + x.shape) if r else Tensor(np.zeros(out.shape + x.shape))
                    for r, x in zip(rows, xs))
    return results[0] if single else results


def hessian(func, inputs, create_graph=False, strict=False):
    """The matrix of second derivatives of a scalar function: the jacobian of its gradient, which
    backward(create_graph=True) makes differentiable. Shape input.shape + input.shape."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        y = func(*xs)
        if y.numel() != 1:
            raise ValueError(f"hessian: func must return a single number (a scalar), got shape {y.shape}")
        grads = grad(y, xs, create_graph=True, allow_unused=True)
        return grads[0] if single else grads

    if not single:
        raise NotImplementedError("hessian: of one input Tensor only (pass one, or concatenate them)")
    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)
