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
# # Exercises: write the backward yourself
#
# Each exercise is one of minigrad's real ops with its backward taken out. Your class keeps the
# op's forward; you write `backward`. The check runs a float64 gradient check on every element,
# plus shape, broadcasting and edge cases, and tells you the first thing that is wrong: which
# input, which element, what it expected and what it got, and a hint.
#
# How to work: run an exercise's cell once (it writes the skeleton to `minigrad_exercises/NAME.py`
# next to this notebook, and checks it: an unfinished exercise says so in one line). Open the file,
# write the backward, and run the cell again. Your file is never overwritten.
#
# From a terminal the same is `python -m demos.exercises start NAME` and `... check NAME`, and
# `python -m demos.exercises train NAME` then trains a small model with your backward beside one
# with minigrad's, from the same seed.

# %%
from demos import exercises

FOLDER = "minigrad_exercises"
for e in exercises.EXERCISES:
    print(f"{e.name:15s} {e.title}")

# %% [markdown]
# ## mul
#
# a * b with broadcasting: the product rule, and where broadcast gradients go

# %%
exercises.start("mul", FOLDER)
exercises.check("mul", FOLDER);

# %% [markdown]
# ## div
#
# a / b with broadcasting: a quotient has two different derivatives

# %%
exercises.start("div", FOLDER)
exercises.check("div", FOLDER);

# %% [markdown]
# ## pow
#
# a ** c for a constant c, including c = 0 at a = 0

# %%
exercises.start("pow", FOLDER)
exercises.check("pow", FOLDER);

# %% [markdown]
# ## exp_log_tanh
#
# exp, log and tanh: three one-line backwards, from what each forward saved

# %%
exercises.start("exp_log_tanh", FOLDER)
exercises.check("exp_log_tanh", FOLDER);

# %% [markdown]
# ## sum_mean
#
# sum and mean over axes: copying g back over the reduced axes

# %%
exercises.start("sum_mean", FOLDER)
exercises.check("sum_mean", FOLDER);

# %% [markdown]
# ## matmul
#
# a @ b, batched: which transpose goes where

# %%
exercises.start("matmul", FOLDER)
exercises.check("matmul", FOLDER);

# %% [markdown]
# ## rnn_cell
#
# one step of a tanh RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), and through time

# %%
exercises.start("rnn_cell", FOLDER)
exercises.check("rnn_cell", FOLDER);

# %% [markdown]
# ## softmax
#
# softmax along an axis: every output depends on every input of its row

# %%
exercises.start("softmax", FOLDER)
exercises.check("softmax", FOLDER);

# %% [markdown]
# ## cross_entropy
#
# log_softmax, and cross-entropy with targets, reductions, ignored ids and label smoothing

# %%
exercises.start("cross_entropy", FOLDER)
exercises.check("cross_entropy", FOLDER);

# %% [markdown]
# ## layer_norm
#
# layer norm: the mean and the variance depend on every input of the row

# %%
exercises.start("layer_norm", FOLDER)
exercises.check("layer_norm", FOLDER);

# %% [markdown]
# ## batch_norm
#
# batch norm: each channel's mean and variance depend on the whole batch

# %%
exercises.start("batch_norm", FOLDER)
exercises.check("batch_norm", FOLDER);

# %% [markdown]
# ## max_pool2d
#
# 2-D max pooling: each window's gradient goes to its largest input

# %%
exercises.start("max_pool2d", FOLDER)
exercises.check("max_pool2d", FOLDER);

# %% [markdown]
# ## conv2d
#
# a 2-D convolution: a matrix product on the windows, and the windows added back

# %%
exercises.start("conv2d", FOLDER)
exercises.check("conv2d", FOLDER);

# %% [markdown]
# ## embedding
#
# embedding lookup: a scatter-add of the rows' gradients

# %%
exercises.start("embedding", FOLDER)
exercises.check("embedding", FOLDER);

# %% [markdown]
# ## attention
#
# scaled dot-product attention: two matmuls and a softmax, backwards, with a mask

# %%
exercises.start("attention", FOLDER)
exercises.check("attention", FOLDER);

# %% [markdown]
# ## backward_walk
#
# the backward walk: topological order and gradient accumulation

# %%
exercises.start("backward_walk", FOLDER)
exercises.check("backward_walk", FOLDER);

# %% [markdown]
# ## adam
#
# one Adam / AdamW step: moving averages, bias correction, weight decay

# %%
exercises.start("adam", FOLDER)
exercises.check("adam", FOLDER);
