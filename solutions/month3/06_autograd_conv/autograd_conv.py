"""Exercise m3.06: the course's convolution as a PyTorch autograd function and an nn.Conv2d
drop-in. (Reference solution.)

    conv = load_extension.load_module("solution")   # builds the operators, binds this module
    y = conv.conv2d(x, weight, bias, stride=2, padding=1)   # differentiable
    layer = conv.Conv2d(3, 16, 3, padding=1)              # nn.Conv2d's constructor and state
    model = conv.convert_module(model)                    # every nn.Conv2d replaced

Two autograd mechanisms, one per PyTorch version, never both for one call:
  - Conv2dFunction, an old-style torch.autograd.Function (forward(ctx, ...) with
    ctx.save_for_backward; no setup_context, which PyTorch 1.13 lacks). It works on every
    version; conv2d() uses it where torch.library has no register_autograd (PyTorch < 2.4).
  - On PyTorch >= 2.4, bind() registers the backward on the dispatcher operator itself
    (torch.library.register_autograd) and fake kernels for all six operators
    (torch.library.register_fake), and conv2d() calls the operator directly: that is the
    path torch.compile traces without a graph break and torch.library.opcheck accepts.
Both run the same conv2d_backward(), which calls the gradient operators as dispatcher ops.
"""
import torch
from torch import nn

# float16 and bfloat16 run on CUDA only: the forward on m3.05's tensor cores (channels_last),
# the gradients by the float32 kernels, rounded once. The CPU kernels are float32 and float64.
SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
CPU_DTYPES = (torch.float32, torch.float64)

# Set by bind(): the torch.ops namespace of the extension, and whether the operator carries
# its own autograd (PyTorch >= 2.4).
_ops = None
_op_autograd = False


def ops():
    if _ops is None:
        raise RuntimeError("autograd_conv is not bound to its operators: load it with "
                           "load_extension.load_module(impl)")
    return _ops


def _pair(value, name):
    if isinstance(value, int):
        return [value, value]
    values = [int(v) for v in value]
    if len(values) != 2:
        raise ValueError(f"{name} must be an int or 2 ints (height, width), got {value!r}")
    return values


def _check_options(x, weight, groups):
    if groups != 1:
        raise NotImplementedError(f"conv2d: groups={groups} is not supported (only groups=1)")
    for name, t in (("input", x), ("weight", weight)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise NotImplementedError(f"conv2d: {name} dtype {t.dtype} is not supported "
                                      "(float32 or float64; float16 or bfloat16 on CUDA)")
        if t.dtype not in CPU_DTYPES and not t.is_cuda:
            raise NotImplementedError(f"conv2d: {name} dtype {t.dtype} runs on CUDA only (m3.05's "
                                      "tensor cores); on the CPU use float32 or float64")


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


class Conv2dFunction(torch.autograd.Function):
    """y = conv2d(x, weight, bias) with the course's kernels, differentiable in x, weight, bias.

    apply(x, weight, bias_or_None, stride, padding, dilation), the last three [h, w] lists."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation):
        ctx.save_for_backward(x, weight)  # what the gradients read (not the output)
        ctx.has_bias = bias is not None
        ctx.conv_args = (stride, padding, dilation)
        return ops().conv2d(x, weight, bias, stride, padding, dilation)

    @staticmethod
    @torch.autograd.function.once_differentiable  # the backward is not itself differentiable
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        dx, dw, db = conv2d_backward(grad_output, x, weight, ctx.has_bias, *ctx.conv_args,
                                     ctx.needs_input_grad[:3])
        return dx, dw, db, None, None, None  # nothing for stride, padding, dilation


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d on the course's kernels (groups=1, numeric padding)."""
    if isinstance(padding, str):
        raise NotImplementedError(f"conv2d: padding={padding!r} is not supported here; the "
                                  "Conv2d module resolves 'same' and 'valid' to numbers")
    _check_options(x, weight, groups)
    args = (_pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation"))
    if _op_autograd:
        return ops().conv2d(x, weight, bias, *args)  # the operator carries its autograd
    return Conv2dFunction.apply(x, weight, bias, *args)


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

    def _numeric_padding(self):
        """self.padding as two numbers: 'valid' is 0; 'same' is dilation * (kernel - 1) / 2
        per side, which needs an even dilation * (kernel - 1) (nn.Conv2d pads one side more
        otherwise, which this convolution cannot)."""
        if self.padding == "valid":
            return [0, 0]
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            if any(t % 2 for t in totals):
                raise NotImplementedError(
                    f"Conv2d: padding='same' with kernel_size={self.kernel_size} and "
                    f"dilation={self.dilation} pads one side more than the other, which is not "
                    "supported; give the padding as numbers")
            return [t // 2 for t in totals]
        return list(self.padding)

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


def convert_module(module):
    """Replaces every nn.Conv2d inside `module` (in place; also `module` itself) by a Conv2d
    with the same parameters; returns the module."""
    if type(module) is nn.Conv2d:
        return Conv2d.from_torch(module)
    for name, child in module.named_children():
        setattr(module, name, convert_module(child))
    return module


# ---- the dispatcher-op path (PyTorch >= 2.4) ----

def _output_memory_format(x):
    """The forward's output layout (output_memory_format in autograd_conv.h): channels_last for
    an input that is channels_last and not also NCHW-contiguous, else NCHW."""
    if x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return torch.channels_last
    return torch.contiguous_format


def _fake_conv2d(x, weight, bias, stride, padding, dilation):
    n, _, h, w = x.shape
    k, _, r, s = weight.shape
    p = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (w + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    return x.new_empty((n, k, p, q)).contiguous(memory_format=_output_memory_format(x))


def _fake_grad_input(grad_output, x, weight, stride, padding, dilation):
    return x.new_empty(x.shape)  # contiguous, as the kernels return it


def _fake_grad_weight(grad_output, x, weight, stride, padding, dilation):
    return weight.new_empty(weight.shape)


def _fake_grad_bias(grad_output):
    return grad_output.new_empty((grad_output.shape[1],))


FAKE_KERNELS = {
    "conv2d": _fake_conv2d,
    "conv2d_grad_input": _fake_grad_input,
    "conv2d_grad_input_gather": _fake_grad_input,
    "conv2d_grad_weight": _fake_grad_weight,
    "conv2d_grad_weight_direct": _fake_grad_weight,
    "conv2d_grad_bias": _fake_grad_bias,
}


def _setup_context(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None
    ctx.conv_args = (stride, padding, dilation)


def _op_backward(ctx, grad_output):
    x, weight = ctx.saved_tensors
    dx, dw, db = conv2d_backward(grad_output, x, weight, ctx.has_bias, *ctx.conv_args,
                                 ctx.needs_input_grad[:3])
    return dx, dw, db, None, None, None


def bind(namespace_ops, namespace):
    """Binds this module to torch.ops.<namespace>; on PyTorch >= 2.4 also registers the fake
    kernels and the operator's autograd. Called once by load_extension.load_module."""
    global _ops, _op_autograd
    _ops = namespace_ops
    register_fake = getattr(torch.library, "register_fake", None)
    register_autograd = getattr(torch.library, "register_autograd", None)
    if register_fake is None or register_autograd is None:
        _op_autograd = False  # PyTorch < 2.4: Conv2dFunction is the autograd
        return
    for name, fake in FAKE_KERNELS.items():
        register_fake(f"{namespace}::{name}")(fake)
    register_autograd(f"{namespace}::conv2d", _op_backward, setup_context=_setup_context)
    _op_autograd = True
