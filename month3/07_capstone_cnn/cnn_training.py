"""Exercise m3.07 (given code, not edited): the digits data, the training recipe, the loop that
trains the two twins, the evaluation, the progress bar and the curves.

    from cnn_training import Config, load_data, train_twins
    data = load_data()                                   # sklearn's digits, split and normalised
    result = train_twins(capstone, Conv2d, Config(epochs=10), data)
    result.course.accuracy[-1], result.twin.accuracy[-1] # test accuracy (%) after each epoch

`capstone` is YOUR capstone_cnn.py (or the reference's): this file calls its make_twins()
and train_step(), the two functions with TODOs, and nothing else of it. What is fixed here
and why:
  - the data: scikit-learn's load_digits() (1797 grey 8x8 images of 16 levels, shipped inside
    the package: no download), divided by 16, then standardised with the mean and standard
    deviation of the TRAINING pixels (one number each, so the test set stays unseen);
  - the split: 80/20 by a random permutation from a fixed seed (SPLIT_SEED = 0): 1438
    training and 359 test images, the same on every machine. A random split mixes the
    writers (the 1797 images are UCI's writer-independent test set, about 30 writers), so
    the test accuracy is optimistic compared with digits of new writers;
  - the recipe: Adam, learning rate 1e-2 decayed to 0 along a cosine over the whole run,
    batches of 32 in an order drawn from the seed (both twins see the same batches), fp32;
  - the bar (README.md): after at most 30 epochs the course model's test accuracy is at least
    97% and within 1 point of the nn.Conv2d twin's. The tests train DEFAULT_EPOCHS = 15.
"""
import math
import os
import sys
import sysconfig
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

SPLIT_SEED = 0  # the permutation that splits the 1797 images, fixed on purpose
TEST_FRACTION = 0.2
DEFAULT_EPOCHS = 15  # what the tests and train.py train; the bar allows up to MAX_BAR_EPOCHS
MAX_BAR_EPOCHS = 30
BAR_ACCURACY = 97.0  # percent, on the 359 test images
BAR_TWIN_POINTS = 1.0  # |course - twin| in accuracy points


@dataclass(frozen=True)
class Config:
    """One training run. Every field is checked by check() (bad values raise ValueError)."""
    epochs: int = DEFAULT_EPOCHS
    batch_size: int = 32
    lr: float = 1e-2
    channels: tuple = (8, 16)  # the two convolutions' output channels
    seed: int = 0  # the initial state_dict and the batch order
    device: str = "cpu"

    def check(self):
        def whole(name, value, low):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        whole("epochs", self.epochs, 1)
        whole("batch_size", self.batch_size, 1)
        whole("seed", self.seed, 0)
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not (
                math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        channels = tuple(self.channels) if isinstance(self.channels, (tuple, list)) else None
        if channels is None or len(channels) != 2:
            raise ValueError(f"channels must be 2 integers (conv1's and conv2's output channels), "
                             f"got {self.channels!r}")
        for value in channels:
            whole("each of channels", value, 1)
        check_device(self.device)
        return self


def check_device(device):
    """'cpu' or 'cuda' (or 'cuda:N'); 'cuda' without a usable GPU raises, naming why."""
    if not isinstance(device, str) or not (device == "cpu" or device == "cuda" or
                                           device.startswith("cuda:")):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but this PyTorch ({torch.__version__}) "
                         "finds no CUDA GPU")


def set_fp32_precision():
    """fp32 means fp32: cuDNN's convolutions default to TF32 on Ampere and later, which would
    make the nn.Conv2d twin less precise than the course's kernels. Both switches, explicitly."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def sklearn_install_command():
    """How to install scikit-learn for the Python running this: pip, for that very Python; or,
    for a system Python that pip may not change (Debian's and Ubuntu's are EXTERNALLY-MANAGED),
    Debian's package."""
    in_environment = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    marker = os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")
    if not in_environment and os.path.isfile(marker):
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        return ("" if root else "sudo ") + "apt-get install python3-sklearn"
    return f"{sys.executable} -m pip install scikit-learn"


def sklearn_status():
    """(True, version) when scikit-learn's digits can be loaded, else (False, why not), the
    reason ending with "; to fix: <command>" (the course's wording for a skip you can fix)."""
    try:
        import sklearn
        from sklearn.datasets import load_digits  # noqa: F401
    except Exception as error:  # ImportError, or a broken install
        return False, (f"scikit-learn is not importable by {sys.executable} ({type(error).__name__}: "
                       f"{error}); to fix: {sklearn_install_command()}")
    return True, sklearn.__version__


@dataclass
class Data:
    x_train: torch.Tensor  # [1438, 1, 8, 8] float32, standardised
    y_train: torch.Tensor  # [1438] int64, the digits 0..9
    x_test: torch.Tensor  # [359, 1, 8, 8]
    y_test: torch.Tensor
    train_index: torch.Tensor  # which of load_digits()'s images each split holds
    test_index: torch.Tensor
    mean: float
    std: float

    def to(self, device):
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) and k.startswith(("x_", "y_")) else v)
                 for k, v in self.__dict__.items()}
        return Data(**moved)


def load_data(split_seed=SPLIT_SEED):
    ok, why = sklearn_status()
    if not ok:
        raise RuntimeError(why)
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # [1797, 1, 8, 8]
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(split_seed))
    n_test = int(len(images) * TEST_FRACTION)  # 359
    test_index, train_index = order[:n_test], order[n_test:]
    mean = float(images[train_index].mean())
    std = float(images[train_index].std())
    images = (images - mean) / std
    return Data(images[train_index], labels[train_index], images[test_index], labels[test_index],
                train_index, test_index, mean, std)


def batch_orders(n, config):
    """The batches of every epoch, as index tensors: a permutation per epoch from config.seed."""
    generator = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        order = torch.randperm(n, generator=generator)
        yield [order[i:i + config.batch_size] for i in range(0, n, config.batch_size)]


def first_batch(data, config):
    """The first training batch the seeded run sees (images, labels)."""
    index = next(iter(batch_orders(len(data.x_train), config)))[0].to(data.x_train.device)
    return data.x_train[index], data.y_train[index]


def forward_backward(model, images, labels):
    """One step's forward and backward without an update: (log-probabilities, loss,
    {parameter name: gradient}). The test of the first step compares the twins with it."""
    model.zero_grad(set_to_none=True)
    log_probs = model(images)
    loss = F.nll_loss(log_probs, labels)
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return log_probs.detach(), loss.detach(), grads


@torch.no_grad()
def evaluate(model, images, labels):
    """(mean loss, accuracy in percent) on a whole split, in eval mode, one batch."""
    was_training = model.training
    model.eval()
    log_probs = model(images)
    loss = float(F.nll_loss(log_probs, labels))
    accuracy = 100.0 * float((log_probs.argmax(dim=1) == labels).float().mean())
    model.train(was_training)
    return loss, accuracy


@dataclass
class History:
    label: str
    train_loss: list = field(default_factory=list)  # mean over the epoch's batches
    test_loss: list = field(default_factory=list)
    accuracy: list = field(default_factory=list)  # test accuracy (%), after each epoch
    epoch_seconds: list = field(default_factory=list)  # training only (no evaluation)

    @property
    def train_seconds(self):
        return sum(self.epoch_seconds)


@dataclass
class Result:
    course: History
    twin: History
    course_model: torch.nn.Module
    twin_model: torch.nn.Module
    config: Config


class Progress:
    """A plain-text progress bar: redrawn in place on a terminal, one line per epoch otherwise."""

    def __init__(self, stream=None, width=24, enabled=True):
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.enabled = enabled
        self.live = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()

    def step(self, label, epoch, epochs, batch, batches, loss):
        if not self.live:
            return
        done = int(self.width * batch / batches)
        bar = "#" * done + "." * (self.width - done)
        self.stream.write(f"\r{label:>9} epoch {epoch:>2}/{epochs} [{bar}] {batch:>3}/{batches} "
                          f"loss {loss:.4f}")
        self.stream.flush()

    def epoch(self, label, epoch, epochs, history):
        if not self.enabled:
            return
        line = (f"{label:>9} epoch {epoch:>2}/{epochs} train loss {history.train_loss[-1]:.4f}  "
                f"test loss {history.test_loss[-1]:.4f}  test accuracy {history.accuracy[-1]:6.2f}%  "
                f"{history.epoch_seconds[-1]:.2f} s")
        self.stream.write(("\r" if self.live else "") + line + "\n")
        self.stream.flush()


def synchronize(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def make_optimizer(model, config, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    # The learning rate falls from lr to 0 along a half cosine over the whole run: fast at the
    # start, gentle at the end, so the last epoch's accuracy is a settled one.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, steps) / steps)))
    return optimizer, schedule


def train_model(capstone, model, data, config, label, progress=None):
    """Trains `model` with capstone.train_step for config.epochs; returns its History.
    `data` must already be on config.device."""
    progress = progress or Progress(enabled=False)
    n = len(data.x_train)
    batches = math.ceil(n / config.batch_size)
    optimizer, schedule = make_optimizer(model, config, config.epochs * batches)
    history = History(label)
    model.train()
    for epoch, order in enumerate(batch_orders(n, config), 1):
        synchronize(config.device)
        start = time.perf_counter()
        total = torch.zeros((), device=data.x_train.device)
        for b, index in enumerate(order, 1):
            index = index.to(data.x_train.device)
            loss = capstone.train_step(model, optimizer, data.x_train[index], data.y_train[index])
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                raise TypeError(f"train_step must return the batch's loss as a 0-D tensor, got "
                                f"{type(loss).__name__}{list(loss.shape) if isinstance(loss, torch.Tensor) else ''}"
                                " (see train_step in capstone_cnn.py)")
            schedule.step()
            total += loss.detach() * len(index)
            if progress.live:  # reading the loss waits for the GPU: only for a visible bar
                progress.step(label, epoch, config.epochs, b, batches, float(loss))
        synchronize(config.device)
        history.epoch_seconds.append(time.perf_counter() - start)
        history.train_loss.append(float(total) / n)
        test_loss, accuracy = evaluate(model, data.x_test, data.y_test)
        history.test_loss.append(test_loss)
        history.accuracy.append(accuracy)
        progress.epoch(label, epoch, config.epochs, history)
    return history


def train_twins(capstone, conv_class, config, data=None, progress=None):
    """make_twins() from config.seed, then trains the course model and its nn.Conv2d twin alike."""
    config.check()
    set_fp32_precision()
    # Deterministic cuDNN for the twin on the GPU: a seeded run repeats exactly. (The course's
    # kernels are deterministic by construction: a gather for grad-input, no atomics.)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    data = (data if data is not None else load_data()).to(config.device)
    course_model, twin_model = capstone.make_twins(conv_class, tuple(config.channels), config.seed)
    course_model, twin_model = course_model.to(config.device), twin_model.to(config.device)
    course = train_model(capstone, course_model, data, config, "course", progress)
    twin = train_model(capstone, twin_model, data, config, "nn.Conv2d", progress)
    return Result(course, twin, course_model, twin_model, config)


# ---- the curves ------------------------------------------------------------------------

def curves_table(result):
    """The per-epoch numbers of both models as a text table."""
    lines = [f"{'epoch':>5} | {'course train':>12} {'test loss':>9} {'acc %':>6} | "
             f"{'nn train':>9} {'test loss':>9} {'acc %':>6}"]
    c, t = result.course, result.twin
    for i in range(len(c.accuracy)):
        lines.append(f"{i + 1:>5} | {c.train_loss[i]:>12.4f} {c.test_loss[i]:>9.4f} {c.accuracy[i]:>6.2f} | "
                     f"{t.train_loss[i]:>9.4f} {t.test_loss[i]:>9.4f} {t.accuracy[i]:>6.2f}")
    return "\n".join(lines)


def write_curves(result, path, title=""):
    """The loss and accuracy curves as a picture (matplotlib), or as a text table beside it
    (path with .txt) where matplotlib is missing. Returns the path written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        text_path = str(path).rsplit(".", 1)[0] + ".txt"
        with open(text_path, "w") as out:
            out.write((title + "\n" if title else "") + curves_table(result) + "\n")
        return text_path
    epochs = list(range(1, len(result.course.accuracy) + 1))
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for history, colour in ((result.course, "tab:red"), (result.twin, "tab:blue")):
        name = "course Conv2d" if history is result.course else "nn.Conv2d twin"
        left.plot(epochs, history.train_loss, color=colour, label=f"{name}: train")
        left.plot(epochs, history.test_loss, color=colour, linestyle="--", label=f"{name}: test")
        right.plot(epochs, history.accuracy, color=colour, marker="o", markersize=3, label=name)
    left.set_xlabel("epoch")
    left.set_ylabel("cross-entropy loss")
    left.set_yscale("log")
    left.legend()
    right.axhline(BAR_ACCURACY, color="grey", linestyle=":", label=f"the bar: {BAR_ACCURACY:g}%")
    right.set_xlabel("epoch")
    right.set_ylabel("test accuracy (%), 359 images")
    right.set_ylim(80, 100)
    right.legend(loc="lower right")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return str(path)
