"""Exercise m3.07: a small CNN on scikit-learn's digits, trained with the course's Conv2d, and its
nn.Conv2d twin from the same initial state. (Reference solution.)

    capstone = load_extension.load_capstone("solution")
    Conv2d = load_extension.load_conv2d("solution")          # m3.06's drop-in
    model, twin = capstone.make_twins(Conv2d, (8, 16), seed=0)
    loss = capstone.train_step(model, optimizer, images, labels)

cnn_training.py (given) holds the data, the recipe and the loop that calls these three
functions; train.py is the command; test_capstone_cnn.py grades each function.
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
    # The solution: nn.Sequential, so the state_dict keys are "0.weight", "3.weight", "7.weight"
    # ..., the same for any conv_class; padding 1 keeps the 8x8 size, each pool halves it.
    return nn.Sequential(
        conv_class(1, c1, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        conv_class(c1, c2, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(c2 * 2 * 2, 10),
        nn.LogSoftmax(dim=1),
    )


def train_step(model, optimizer, images, labels):
    """One step of training on one batch; returns the batch's mean loss as a detached 0-D
    tensor (no .item(): on the GPU that would wait for the GPU after every step)."""
    # The solution: clear the previous step's gradients (backward() adds to .grad), forward,
    # the negative log-likelihood of the log-probabilities (= cross-entropy), backward (the
    # course's conv2d_backward runs here, for both convolutions), then the update.
    optimizer.zero_grad(set_to_none=True)
    loss = F.nll_loss(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss.detach()


def make_twins(conv_class, channels=(8, 16), seed=0):
    """(model, twin): make_model(conv_class) initialised from `seed`, and a make_model(nn.Conv2d)
    holding exactly the same parameters (copies, not shared), so the two can be trained side
    by side and compared."""
    # The solution: seed, build the course model (its initialisation is nn.Conv2d's, drawn from
    # the seed), build the twin, then copy the whole state_dict across: the keys match because
    # the course Conv2d IS an nn.Conv2d (m3.06e). load_state_dict copies values into the twin's
    # own tensors, so training one leaves the other alone.
    torch.manual_seed(seed)
    model = make_model(conv_class, channels)
    twin = make_model(nn.Conv2d, channels)
    twin.load_state_dict(model.state_dict())
    return model, twin
