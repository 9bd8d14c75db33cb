"""Exercise: one Adam / AdamW step (minigrad/kernels/adam.py; minigrad.optim.Adam calls it once per
parameter per step).

For a parameter p with gradient g, running averages m (exp_avg) and v (exp_avg_sq), step number
t = step (1 for the first step), learning rate lr and weight decay wd:

    Adam  (decoupled=False): weight decay is an L2 penalty, added to the gradient: g + wd * p
    AdamW (decoupled=True):  weight decay shrinks the parameter itself by the factor 1 - lr * wd
    m = beta1 * m + (1 - beta1) * g              a moving average of g
    v = beta2 * v + (1 - beta2) * g^2            a moving average of g^2
    m_hat, v_hat: m and v corrected for starting at 0 (Kingma & Ba, 2015, section 3)
    p = p - lr * m_hat / (sqrt(v_hat) + eps)

param, exp_avg, exp_avg_sq: arrays of one shape, updated IN PLACE (param -= ..., m *= ...: the
optimizer keeps these very arrays). grad: the same shape, not to be changed.

    python -m demos.exercises check adam
    python -m demos.exercises train adam       # a model trains with your step
"""
import numpy as np  # noqa: F401  (yours to use)


def adam_update(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    raise NotImplementedError("adam_update")
