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
# # A convolutional network learns handwritten digits
#
# This notebook trains a LeNet-style convolutional network (LeCun et al., 1998, shrunk to 8x8
# images) on the 1,797 handwritten digits that scikit-learn ships, then looks inside it: the
# filters its first layer learned, and what each convolution makes of one image. An MLP with about
# as many parameters is trained beside it. It runs in well under a minute on two cores.
#
# Everything is minigrad, with PyTorch's names: `nn.Conv2d`, `nn.BatchNorm2d`, `nn.MaxPool2d`,
# `DataLoader` and `random_split`. `python -m demos.cnn` is the same run from a terminal.

# %%
import numpy as np
import matplotlib.pyplot as plt

import minigrad as mg
from minigrad import nn, optim
from minigrad.nn import functional as F
from minigrad.datasets import load_digits
from minigrad.utils.data import DataLoader, random_split
from demos import cnn

mg.manual_seed(0)  # the weights
print("minigrad threads:", mg.get_num_threads())

# %% [markdown]
# ## 1. The digits
#
# `load_digits()` is a dataset of 1,797 pairs (image, label): images `(1, 8, 8)` float32 in [0, 1]
# (each pixel counts how many of 16 dots of a 32x32 bitmap were ink) and labels 0..9.
# `random_split` cuts it once, from a seeded generator, into 1,437 images to train on and 360 to
# test on.

# %%
digits = load_digits()
train, test = random_split(digits, [1437, 360], generator=mg.Generator().manual_seed(0))
print(digits, "->", len(train), "to train,", len(test), "to test")

fig, axes = plt.subplots(1, 10, figsize=(10, 1.4))
for ax, i in zip(axes, range(10)):
    image, label = digits[i]
    ax.imshow(image.numpy()[0], cmap="gray_r")
    ax.set_title(int(label.item()))
    ax.set_axis_off()
plt.show()
assert len(train) == 1437 and len(test) == 360 and digits[0][0].shape == (1, 8, 8)

# %% [markdown]
# ## 2. Batches
#
# A `DataLoader` walks the training set in shuffled batches of 32 (a new order every epoch) and
# stacks each batch's images and labels into two tensors.

# %%
loader = DataLoader(train, batch_size=32, shuffle=True, generator=mg.Generator().manual_seed(1))
images, labels = next(iter(loader))
print(images.shape, images.dtype, labels.shape, labels.dtype, len(loader), "batches per epoch")
assert images.shape == (32, 1, 8, 8) and len(loader) == 45

# %% [markdown]
# ## 3. The network
#
# Two blocks of convolution (3x3, padded so the size stays), batch norm, ReLU and 2x2 max pooling,
# then two linear layers. Each block doubles the channels and halves the image:
# `(N, 1, 8, 8) -> (N, 16, 4, 4) -> (N, 32, 2, 2) -> 128 numbers -> 64 -> 10 logits`.
# A 3x3 filter has 9 weights per input channel, shared by every position of the image: that is
# why a convolution has so few parameters for what it computes.

# %%
model = cnn.LeNet(channels=16)
print(model)
print(f"{cnn.count(model):,} parameters; logits for a batch:", model(images).shape)

# %% [markdown]
# ## 4. Training
#
# Adam, with a cosine learning rate, for 15 epochs (675 steps).

# %%
epochs = 15
optimizer = optim.Adam(model.parameters(), lr=0.01)
schedule = optim.WarmupCosineLR(optimizer, 0, epochs * len(loader), min_lr=1e-4)
losses = []
for epoch in range(epochs):
    for images, labels in loader:
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    if epoch % 5 == 4:
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

cnn_accuracy = cnn.accuracy(model, test)  # in eval mode: batch norm uses its running statistics
print(f"test accuracy {cnn_accuracy:.1%}")
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(losses, linewidth=0.8)
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy loss")
ax.set_yscale("log")
plt.show()
assert cnn_accuracy >= 0.97

# %% [markdown]
# ## 5. What the first layer learned
#
# Each of the 16 filters of the first convolution is a 3x3 pattern of weights (red positive, blue
# negative). Sliding over the image, a filter answers strongly where the image looks like it:
# edges of a given direction, corners, the end of a stroke.

# %%
cnn.draw_filters(model)

# %% [markdown]
# ## 6. Feature maps
#
# One test image, then the output of each block's ReLU: 16 maps of 8x8 after the first
# convolution, each showing where its filter found its pattern; 32 maps of 4x4 after the second,
# each combining the first block's maps into larger parts of a digit.

# %%
image, label = test[0]
with mg.no_grad():
    model.eval()
    predicted = int(model(image.unsqueeze(0)).argmax(axis=-1).item())
    model.train()
cnn.draw_feature_maps(model, image.numpy(), int(label.item()), predicted)

# %% [markdown]
# ## 7. Against an MLP of the same size
#
# The same 64 pixels as a flat vector, one hidden layer as wide as gives about the CNN's
# parameter count, trained the same way. On images this small and this well centred the MLP is a
# strong baseline; the CNN's weight sharing and pooling pay off more as images grow (on 28x28
# MNIST, LeCun et al. report 0.95% test errors for LeNet-5 and 2.95% to 4.7% for fully connected
# networks).

# %%
mg.manual_seed(0)
mlp = cnn.mlp_like(cnn.count(model))
optimizer = optim.Adam(mlp.parameters(), lr=0.01)
schedule = optim.WarmupCosineLR(optimizer, 0, epochs * len(loader), min_lr=1e-4)
for epoch in range(epochs):
    for images, labels in loader:
        loss = F.cross_entropy(mlp(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
mlp_accuracy = cnn.accuracy(mlp, test)
print(f"CNN: {cnn.count(model):,} parameters, test accuracy {cnn_accuracy:.1%}")
print(f"MLP: {cnn.count(mlp):,} parameters, test accuracy {mlp_accuracy:.1%}")
assert abs(cnn.count(mlp) - cnn.count(model)) < 0.01 * cnn.count(model) and mlp_accuracy > 0.9

# %% [markdown]
# ## Next
#
# - Write the backward of the convolution and of max pooling yourself: the `conv2d` and
#   `max_pool2d` exercises (the `exercises` notebook, or `python -m demos.exercises start conv2d`),
#   and `batch_norm`'s famous one-line backward.
# - `python -m demos.cnn --help`: the same run from a terminal, with the pictures saved as files.
