"""L-BFGS, as PyTorch's `optim.LBFGS`: a quasi-Newton method for small, full-batch problems (the
style-transfer lesson fits an image with it).

Newton's step would be −H⁻¹g, with H the matrix of second derivatives, too large to form. L-BFGS
builds the product H⁻¹g from the last `history_size` steps s = θ_{k+1} − θ_k and the gradient
changes y = g_{k+1} − g_k they caused (y ≈ H s), by the two-loop recursion:

    q = −g
    for the pairs (s_i, y_i), newest first:  ρ_i = 1 / (y_i · s_i),  α_i = ρ_i s_i · q,  q ← q − α_i y_i
    r = q · (s·y / y·y of the newest pair)                        (the first guess of H⁻¹, a scale)
    for the pairs, oldest first:             β = ρ_i y_i · r,     r ← r + (α_i − β) s_i
    d = r                                                          (the direction; θ ← θ + t d)

A pair is kept only if y · s > 1e-10 (the curvature is positive: otherwise H⁻¹ would not stay
positive definite). The step is t = lr (the first one min(1, 1/|g|₁) · lr); PyTorch's default has
no line search, and so does this one.

`step(closure)` runs up to `max_iter` such iterations, calling `closure()` (which clears the
gradients, computes the loss, calls backward and returns the loss) after each move; it stops early
when the gradient or the change of the loss or of θ falls below the tolerances. It returns the
first loss. Every parameter is one flat vector here, as in PyTorch.
"""
import numpy as np

from ..compile import replayed_as_a_call
from ..grad_mode import enable_grad
from . import Optimizer, _check, _check_not_negative


class LBFGS(Optimizer):
    """L-BFGS (see the module docstring), PyTorch's arguments and defaults:
    `LBFGS(params, lr=1, max_iter=20, max_eval=None (max_iter · 5/4), tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None)`; one parameter group."""

    calls_its_closure = True

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        _check_not_negative("LBFGS", lr=lr)
        if line_search_fn is not None:
            raise NotImplementedError(f"LBFGS: line_search_fn={line_search_fn!r} is not supported (only None, "
                                      "PyTorch's default: a fixed step lr)")
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        _check(len(self.param_groups) == 1, "LBFGS: doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return np.concatenate([(np.zeros(p.numel(), p.dtype) if p.grad is None else
                                p.grad.numpy().reshape(-1).astype(p.dtype)) for p in self._params])

    def _move(self, t, d):
        """θ ← θ + t d, each parameter its piece of the flat vector d."""
        start = 0
        for p in self._params:
            n = p.numel()
            theta = p.numpy()
            theta += (t * d[start:start + n]).reshape(theta.shape).astype(theta.dtype)
            p._bump("LBFGS.step")
            start += n

    @replayed_as_a_call
    def step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change, history = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        state = self.state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})  # (as PyTorch keeps it)
        with enable_grad():
            first_loss = closure()
        loss, evals = float(first_loss), 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if np.abs(g).max() <= tol_grad:
            return first_loss
        d, t = state.get("d"), state.get("t")
        dirs, steps, rho, h_diag = state.get("dirs"), state.get("steps"), state.get("rho"), state.get("h_diag")
        g_prev, loss_prev = state.get("g_prev"), state.get("loss_prev")
        n = 0
        while n < max_iter:
            n += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, dirs, steps, rho, h_diag = -g, [], [], [], 1.0
            else:
                y, s = g - g_prev, d * t
                ys = y @ s
                if ys > 1e-10:  # a pair with positive curvature: keep it (dropping the oldest)
                    if len(dirs) == history:
                        dirs.pop(0), steps.pop(0), rho.pop(0)
                    dirs.append(y), steps.append(s), rho.append(1.0 / ys)
                    h_diag = ys / (y @ y)
                q, alpha = -g, [0.0] * len(dirs)  # the two-loop recursion: r = H⁻¹(−g)
                for i in range(len(dirs) - 1, -1, -1):
                    alpha[i] = (steps[i] @ q) * rho[i]
                    q = q - alpha[i] * dirs[i]
                d = r = q * h_diag
                for i in range(len(dirs)):
                    beta = (dirs[i] @ r) * rho[i]
                    r += (alpha[i] - beta) * steps[i]
            g_prev, loss_prev = g.copy(), loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if state["n_iter"] == 1 else lr
            if g @ d > -tol_change:  # not a descent direction any more
                break
            self._move(t, d)
            if n != max_iter:
                with enable_grad():
                    loss = float(closure())
                g = self._flat_grad()
                evals += 1
                state["func_evals"] += 1
            if n == max_iter or evals >= max_eval or np.abs(g).max() <= tol_grad:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - loss_prev) < tol_change:
                break
        state.update(d=d, t=t, dirs=dirs, steps=steps, rho=rho, h_diag=h_diag, g_prev=g_prev, loss_prev=loss_prev)
        return first_loss
