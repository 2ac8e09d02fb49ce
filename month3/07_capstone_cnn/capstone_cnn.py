"""Exercise m3.07: a small CNN on scikit-learn's digits, trained with the course's Conv2d, and its
nn.Conv2d twin from the same initial state.

    capstone = load_extension.load_capstone("exercise")
    Conv2d = load_extension.load_conv2d("exercise")          # YOUR m3.06 drop-in
    model, twin = capstone.make_twins(Conv2d, (8, 16), seed=0)
    loss = capstone.train_step(model, optimizer, images, labels)

cnn_training.py (given) holds the data, the recipe and the loop that calls these three
functions; train.py is the command; test_capstone_cnn.py grades each function.
Fill in TODO(m3.07a) to TODO(m3.07c), then run `./course grade m3_07`.
"""
import torch
import torch.nn.functional as F
from torch import nn


def make_model(conv_class, channels=(8, 16)):
    """The capstone CNN for [N, 1, 8, 8] digits, its two convolutions made by `conv_class`
    (nn.Conv2d, or the course's Conv2d: the same constructor):

        conv 1 -> c1, 3x3, padding 1   [N, c1, 8, 8]
        ReLU, max-pool 2x2             [N, c1, 4, 4]
        conv c1 -> c2, 3x3, padding 1  [N, c2, 4, 4]
        ReLU, max-pool 2x2             [N, c2, 2, 2]
        flatten, linear 4*c2 -> 10     [N, 10]
        log-softmax over the 10 digits [N, 10]  (log-probabilities: F.nll_loss takes them)
    """
    c1, c2 = channels
    # TODO(m3.07a): return an nn.Sequential of the nine layers above, in that order, both
    # convolutions built with conv_class(in_channels, out_channels, kernel_size=3, padding=1)
    # (never nn.Conv2d here: the caller chooses). nn.MaxPool2d(2), nn.Flatten(),
    # nn.Linear(c2 * 2 * 2, 10), nn.LogSoftmax(dim=1).
    raise NotImplementedError("TODO(m3.07a): make_model in capstone_cnn.py is not written yet")


def train_step(model, optimizer, images, labels):
    """One step of training on one batch; returns the batch's mean loss as a detached 0-D
    tensor (no .item(): on the GPU that would wait for the GPU after every step)."""
    # TODO(m3.07b): the four lines of every PyTorch training step: clear the gradients
    # (optimizer.zero_grad(set_to_none=True): backward() ADDS to .grad), the loss
    # F.nll_loss(model(images), labels) (the model returns log-probabilities), its backward
    # (your m3.06 backward runs here), optimizer.step(); return loss.detach().
    raise NotImplementedError("TODO(m3.07b): train_step in capstone_cnn.py is not written yet")


def make_twins(conv_class, channels=(8, 16), seed=0):
    """(model, twin): make_model(conv_class) initialised from `seed`, and a make_model(nn.Conv2d)
    holding exactly the same parameters (copies, not shared), so the two can be trained side
    by side and compared."""
    # TODO(m3.07c): torch.manual_seed(seed), then the course model with conv_class, then the
    # twin with nn.Conv2d, then copy the course model's whole state_dict into the twin
    # (twin.load_state_dict(...): it copies values, so the two never share a tensor).
    # Return (model, twin).
    raise NotImplementedError("TODO(m3.07c): make_twins in capstone_cnn.py is not written yet")
