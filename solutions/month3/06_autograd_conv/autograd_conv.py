"""Exercise m3.06: the course's convolution as a PyTorch autograd function and an nn.Conv2d
drop-in. (Reference solution.)

    conv = load_extension.load_module("solution")   # builds the operators, binds this module
    y = conv.conv2d(x, weight, bias, stride=2, padding=1)   # differentiable
    layer = conv.Conv2d(3, 16, 3, padding=1)              # nn.Conv2d's constructor and state
    model = conv.convert_module(model)                    # every nn.Conv2d replaced

This file holds your two pieces: conv2d_backward, the backward's wiring to the gradient
operators, and Conv2d, the nn.Conv2d drop-in. The rest is given, in autograd_conv_given.py:
the operators (ops()), conv2d() (the checks, autocast, and PyTorch's two autograd mechanisms:
an autograd.Function on every version, the operator's own autograd on PyTorch >= 2.4; both
call your conv2d_backward), Conv2dFunction, convert_module(), and bind().
"""
import torch
from torch import nn

import autograd_conv_given as given  # the given code (load_extension.py puts it on the path)
from autograd_conv_given import SUPPORTED_DTYPES


def conv2d_backward(grad_output, x, weight, has_bias, stride, padding, dilation, needs_input_grad):
    """(dx, dw, db) of y = conv2d(x, weight, bias): each only when needs_input_grad asks for
    it (None otherwise); db is None without a bias. Calls the gradient operators."""
    needs_x, needs_w, needs_b = needs_input_grad
    ns = ops()
    # The solution: dx needs only dy and the weights, dw only dy and the input, db only dy.
    # grad_output is often a strided view (an expand from sum(), a transpose): the operators
    # read a contiguous copy, made once here for all three.
    grad_output = grad_output.contiguous()
    dx = ns.conv2d_grad_input(grad_output, x, weight, stride, padding, dilation) if needs_x else None
    dw = ns.conv2d_grad_weight(grad_output, x, weight, stride, padding, dilation) if needs_w else None
    db = ns.conv2d_grad_bias(grad_output) if has_bias and needs_b else None
    return dx, dw, db


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
        # The solution: refuse what the kernels cannot do, naming the option.
        if self.groups != 1:
            raise NotImplementedError(f"Conv2d: groups={self.groups} is not supported (only groups=1)")
        if self.padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode={self.padding_mode!r} is not "
                                      "supported (only 'zeros')")
        if self.weight.dtype not in SUPPORTED_DTYPES:
            raise NotImplementedError(f"Conv2d: dtype {self.weight.dtype} is not supported "
                                      "(float32, float64, float16 or bfloat16)")
        self._numeric_padding()  # padding='same' that needs uneven sides raises here

    # Given (autograd_conv_given.numeric_padding): the padding as two numbers, 'same' and
    # 'valid' resolved; raises for a 'same' that would pad one side more than the other.
    _numeric_padding = given.numeric_padding

    def forward(self, input):
        # The solution: nn.Conv2d's forward with the course's conv2d in place of F.conv2d.
        # The options are checked again: they are plain attributes and may have changed.
        self._check_supported()
        return conv2d(input, self.weight, self.bias, list(self.stride), self._numeric_padding(),
                      list(self.dilation))

    @classmethod
    def from_torch(cls, conv):
        """A Conv2d with the configuration and the parameters (copies) of nn.Conv2d `conv`."""
        # The solution: the same constructor arguments, then the same state.
        made = cls(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride,
                   padding=conv.padding, dilation=conv.dilation, groups=conv.groups,
                   bias=conv.bias is not None, padding_mode=conv.padding_mode,
                   device=conv.weight.device, dtype=conv.weight.dtype)
        made.load_state_dict(conv.state_dict())
        made.train(conv.training)
        return made


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
