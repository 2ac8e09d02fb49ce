"""Exercise m3.06: the course's convolution as a PyTorch autograd function and an nn.Conv2d
drop-in.

    conv = load_extension.load_module("solution")   # builds the operators, binds this module
    y = conv.conv2d(x, weight, bias, stride=2, padding=1)   # differentiable
    layer = conv.Conv2d(3, 16, 3, padding=1)              # nn.Conv2d's constructor and state
    model = conv.convert_module(model)                    # every nn.Conv2d replaced

This file holds your two pieces: conv2d_backward, the backward's wiring to the gradient
operators, and Conv2d, the nn.Conv2d drop-in. The rest is given, in autograd_conv_given.py:
the operators (ops()), conv2d() (the checks, autocast, and PyTorch's two autograd mechanisms:
an autograd.Function on every version, the operator's own autograd on PyTorch >= 2.4; both
call your conv2d_backward), Conv2dFunction, convert_module(), and bind().

Fill in TODO(m3.06d) (conv2d_backward) and TODO(m3.06e) (the Conv2d drop-in), then run
`./course grade m3_06`.
"""
import torch
from torch import nn

import autograd_conv_given as given  # the given code (load_extension.py puts it on the path)
from autograd_conv_given import SUPPORTED_DTYPES


def conv2d_backward(grad_output, x, weight, has_bias, stride, padding, dilation, needs_input_grad):
    """(dx, dw, db) of y = conv2d(x, weight, bias): each only when needs_input_grad asks for
    it (None otherwise); db is None without a bias. Calls the gradient operators."""
    # TODO(m3.06d): the backward's wiring. Each gradient is one operator of ops():
    #   dx = ops().conv2d_grad_input(grad_output, x, weight, stride, padding, dilation)
    #   dw = ops().conv2d_grad_weight(grad_output, x, weight, stride, padding, dilation)
    #   db = ops().conv2d_grad_bias(grad_output)
    # Which saved tensor does each read? Compute each only when needs_input_grad says so
    # (needs_x, needs_w, needs_b = needs_input_grad), else return None in its place; db is
    # None without a bias (has_bias False). grad_output may be a strided view: make it
    # .contiguous() once, here, rather than in each operator.
    raise NotImplementedError("TODO(m3.06d): conv2d_backward in autograd_conv.py is not written yet")


class Conv2d(nn.Conv2d):
    """A drop-in for torch.nn.Conv2d that runs the course's kernels.

    It IS an nn.Conv2d: the same constructor, parameters (weight [K, C, R, S], bias [K]),
    initialisation, extra_repr and state_dict keys, so state dicts load both ways. Only the
    forward differs. Raises NotImplementedError for what the kernels do not support:
    groups != 1, padding_mode other than 'zeros', padding='same' with an odd total padding,
    dtypes other than float32 and float64 (and float16 and bfloat16, which run on CUDA only).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._check_supported()

    def _check_supported(self):
        # TODO(m3.06e): refuse what the kernels cannot do, naming the option in the message:
        #   self.groups != 1               -> NotImplementedError("Conv2d: groups=2 is not supported ...")
        #   self.padding_mode != "zeros"   -> NotImplementedError naming padding_mode
        #   self.weight.dtype not in SUPPORTED_DTYPES -> NotImplementedError naming the dtype
        self._numeric_padding()  # padding='same' that needs uneven sides raises here

    # Given (autograd_conv_given.numeric_padding): the padding as two numbers, 'same' and
    # 'valid' resolved; raises for a 'same' that would pad one side more than the other.
    _numeric_padding = given.numeric_padding

    def forward(self, input):
        # TODO(m3.06e): nn.Conv2d.forward calls F.conv2d(input, self.weight, self.bias,
        # self.stride, self.padding, self.dilation, self.groups). Call this module's conv2d()
        # instead, with self._numeric_padding() for the padding (it may be 'same'/'valid'),
        # after self._check_supported() (the options are attributes: they may have changed).
        raise NotImplementedError("TODO(m3.06e): Conv2d.forward in autograd_conv.py is not written yet")

    @classmethod
    def from_torch(cls, conv):
        """A Conv2d with the configuration and the parameters (copies) of nn.Conv2d `conv`."""
        # TODO(m3.06e): construct cls(...) with conv's in_channels, out_channels, kernel_size,
        # stride, padding, dilation, groups, bias (a bool: conv.bias is not None), padding_mode,
        # device and dtype (those of conv.weight), then copy the parameters with
        # load_state_dict(conv.state_dict()) and the training mode with train(conv.training).
        raise NotImplementedError("TODO(m3.06e): Conv2d.from_torch in autograd_conv.py is not written yet")


# ---- given: the rest of this module, made around the two pieces above ----
# autograd_conv_given.Plumbing builds, for this file's conv2d_backward and Conv2d: ops() (this
# version's operators, torch.ops.m3_06_<impl>, once bind() has run: load_extension calls it),
# conv2d() (F.conv2d's arguments: the checks, autocast, and one autograd mechanism per call:
# Conv2dFunction eagerly, the operator's own under torch.compile), Conv2dFunction and
# convert_module(). Each autograd_conv.py has its own, so yours and the reference can be
# loaded side by side.
_plumbing = given.Plumbing(conv2d_backward, Conv2d)
ops, bind, conv2d = _plumbing.ops, _plumbing.bind, _plumbing.conv2d
Conv2dFunction, convert_module = _plumbing.Conv2dFunction, _plumbing.convert_module
