# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Backpropagation, from one neuron to a tensor graph
#
# The backward pass is the chain rule, applied op by op in the reverse of the order the forward pass
# ran. This notebook shows it three ways: a picture of the graph with each node's value and gradient,
# a narrated walk that prints every step with its rule, and a gradient check that compares every
# gradient with a finite difference and, when one is wrong, names the op to blame.
#
# Every op in `minigrad/ops.py` has its forward and its backward side by side, with the one-line
# derivation (its `rule`) that the narrated walk prints.

# %%
import numpy as np
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad import viz

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## 1. One neuron
#
# $o = \tanh(x_1 w_1 + x_2 w_2 + b)$, with numbers chosen so that $n = x_1 w_1 + x_2 w_2 + b \approx 0.8814$
# and $o = \tanh n = 1/\sqrt 2$. We work in float64, as gradient checks do.

# %%
def scalar(value):
    return mg.tensor(value, dtype=mg.float64, requires_grad=True)

x1, x2 = scalar(2.0), scalar(0.0)     # inputs
w1, w2 = scalar(-3.0), scalar(1.0)    # weights
b = scalar(6.8813735870195432)        # bias
x1w1 = x1 * w1
x2w2 = x2 * w2
x1w1x2w2 = x1w1 + x2w2
n = x1w1x2w2 + b
o = n.tanh()
print(f"n = {n.item():.4f}, o = {o.item():.4f}")
assert abs(o.item() - 2 ** -0.5) < 1e-12

# %% [markdown]
# `o.backward()` walks the graph from `o` back to the leaves. Each op receives the gradient of `o`
# with respect to its output, `g`, and sends $g \cdot \partial(\text{output})/\partial(\text{input})$
# to each input. `explain_backward` is the same walk, printing each step as it runs:

# %%
names = dict(x1=x1, x2=x2, w1=w1, w2=w2, b=b, x1w1=x1w1, x2w2=x2w2, x1w1x2w2=x1w1x2w2, n=n, o=o)
mg.explain_backward(o, names=names)

# %% [markdown]
# By hand: $\partial o/\partial n = 1 - \tanh^2 n = 1 - 1/2 = 0.5$. An add passes its gradient on
# unchanged to both inputs, and a product sends each input the other one: $\partial o/\partial w_1 =
# 0.5 \cdot x_1 = 1$, $\partial o/\partial x_1 = 0.5 \cdot w_1 = -1.5$.

# %%
expected = dict(x1=-1.5, w1=1.0, x2=0.5, w2=0.0, b=0.5)
for name, value in expected.items():
    print(f"{name}.grad = {names[name].grad.item():+.4f}   by hand {value:+.4f}")
    assert abs(names[name].grad.item() - value) < 1e-12

# %% [markdown]
# The graph, drawn after `backward()`: leaves (orange) on the left, each op (blue) between the
# tensors it reads and the one it makes, and in each box the value and the gradient. (As in
# PyTorch, `.grad` stays only on the leaves, unless you call `t.retain_grad()`; for a graph of
# single numbers like this one, backward also keeps each node's value and gradient for the picture.)

# %%
viz.draw(o, names=names, title="o = tanh(x1 w1 + x2 w2 + b)")

# %% [markdown]
# ## 2. The same walk on tensors
#
# A two-layer network on a batch of 4 examples. Each op now works on arrays, and each rule is the
# matrix form of the scalar one: for a product $y = x W$, the input gets $g W^T$ and the weight
# gets $x^T g$; a bias added to every row gets its gradient summed over the rows (broadcasting in
# the forward pass is a sum in the backward pass).

# %%
mg.manual_seed(0)
x = mg.randn(4, 3, dtype=mg.float64)
W1 = mg.randn(3, 5, dtype=mg.float64, requires_grad=True)
b1 = mg.zeros(5, dtype=mg.float64, requires_grad=True)
W2 = mg.randn(5, 1, dtype=mg.float64, requires_grad=True)
h = (x @ W1 + b1).tanh()
loss = ((h @ W2) ** 2).mean()
mg.explain_backward(loss, names=dict(x=x, W1=W1, b1=b1, W2=W2, h=h, loss=loss))

# %%
# the weight's gradient of the first layer is x^T (g * (1 - h^2)), with g the gradient reaching h
g_out = 2 * (h.numpy() @ W2.numpy()) / 4                 # d loss / d (h @ W2)
g_h = g_out @ W2.numpy().T                               # d loss / d h
by_hand = x.numpy().T @ (g_h * (1 - h.numpy() ** 2))    # d loss / d W1
print(W1.grad)
assert np.allclose(W1.grad, by_hand)
assert np.allclose(b1.grad, (g_h * (1 - h.numpy() ** 2)).sum(axis=0))

# %%
viz.draw(loss, names=dict(x=x, W1=W1, b1=b1, W2=W2, h=h, loss=loss), title="a two-layer network")

# %% [markdown]
# ## 3. Checking gradients
#
# A gradient check compares each analytic gradient with a central difference,
# $\big(f(x + \epsilon) - f(x - \epsilon)\big) / 2\epsilon$, element by element, in float64. It projects
# the output on a random direction first, so that every output element counts.

# %%
report = mg.gradcheck(lambda x, W1, b1, W2: (x @ W1 + b1).tanh() @ W2, [x, W1, b1, W2])
print(report)
assert report


# %% [markdown]
# ## 4. Your own op, with a bug, and how the check finds it
#
# A `Function` has a `forward` on numpy arrays and a `backward` that turns the gradient of the
# output into one gradient per input. Here is $x^3$ with a planted mistake: its backward says
# $2x^2$ where the derivative is $3x^2$. Used inside a small network, the network's gradient check
# fails, and `locate` (on by default when a check fails) replays the graph, checks each op alone
# against central differences of its own forward, and names the first op whose backward is wrong,
# with the line that called it.

# %%
class Cube(mg.Function):
    rule = "d(x^3)/dx = 3 x^2"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x ** 2          # wrong: the derivative of x^3 is 3 x^2

def network(x, W1, W2):
    h = Cube.apply(x @ W1)
    return h.tanh() @ W2

report = mg.gradcheck(network, [x, W1, W2], raise_exception=False)
assert not report
report      # in a notebook, the table with the failing row in red; print(report) gives the text

# %%
location = mg.find_bad_backward(network, [x, W1, W2])
print(location)
assert "Cube" in str(location)


# %% [markdown]
# The fix is the one-line derivation: $d(x^3)/dx = 3x^2$.

# %%
def fixed_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * 3 * x ** 2

Cube.backward = staticmethod(fixed_backward)
report = mg.gradcheck(network, [x, W1, W2])
print(report)
assert report

# %% [markdown]
# ## Where next
#
# - `python -m demos.exercises list`: write the backward of the real ops yourself (softmax, layer
#   norm, attention, the walk itself), check them, then train a model with your own code.
# - `minigrad/ops.py`: every op's forward, backward and rule, side by side.
# - The transformer and gpt notebooks: the same engine, running the Transformer.
