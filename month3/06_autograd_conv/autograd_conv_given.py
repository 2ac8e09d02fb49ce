"""Given code of exercise m3.06 (nothing to write here): what autograd_conv.py needs around
your two pieces there, conv2d_backward and the Conv2d drop-in. Your autograd_conv.py and the
reference one (solutions/) both import this one file.

    given.Plumbing(conv2d_backward, Conv2d)   # what the last lines of autograd_conv.py make:
        .ops()            this version's operators, torch.ops.m3_06_<impl> (after bind())
        .bind(ops, ns)    called once by load_extension.load_module; on PyTorch >= 2.4 it also
                          registers the operators' fake kernels and the operator's autograd
        .conv2d(...)      the entry point, F.conv2d's arguments: checks, autocast, autograd
        .Conv2dFunction   the autograd.Function (every PyTorch version)
        .convert_module(model)   every nn.Conv2d of a model replaced by a Conv2d

One Plumbing per autograd_conv.py, so yours and the reference can be loaded side by side
(the benchmark does) without sharing operators.

Two autograd mechanisms, never both for one call:
  - Conv2dFunction, an old-style torch.autograd.Function (forward(ctx, ...) with
    ctx.save_for_backward; no setup_context, which PyTorch 1.13 lacks). It works on every
    version, and conv2d() runs it for every eager call: it costs the CPU less per call than
    the operator's registered autograd (torch.library's wrapper is Python of its own around
    the same backward), and a training step of small layers waits on the CPU. Its forward
    calls the operator below the autograd dispatch key, so that on PyTorch >= 2.4 the
    operator's own autograd does not wrap the call a second time.
  - On PyTorch >= 2.4, bind() registers the backward on the dispatcher operator itself
    (torch.library.register_autograd) and fake kernels for all six operators
    (torch.library.register_fake), and conv2d() calls the operator directly while
    torch.compile traces it: that is the path torch.compile traces without a graph break
    and torch.library.opcheck accepts.
Both run the same backward(): your conv2d_backward, then the second-order guard.

Autocast: under torch.autocast("cuda", dtype=torch.float16 or torch.bfloat16), conv2d() (and so
Conv2d) runs in that dtype, as nn.Conv2d does: the CUDA floating-point inputs other than
float64 are cast to it (casts autograd sees, so fp32 parameters get fp32 gradients). The
operators themselves have no autocast kernel: ops().conv2d and Conv2dFunction.apply called
directly under autocast stay in their inputs' dtype. CPU tensors are never cast (the CPU
kernels are float32 and float64 only), also under torch.autocast("cpu").

Double backward (create_graph=True, then a gradient of a gradient) is not supported: the
gradient operators have no autograd of their own. Asking for it raises a RuntimeError that
says so, on both mechanisms. Without this guard, register_autograd's backward would run the
gradient operators as constants: a gradient penalty's weight gradient silently missing (in
effect zero).
"""
import contextlib

import torch
from torch import nn

from course_harness import requirements  # on the path: load_extension.py puts it there

# float16 and bfloat16 run on CUDA only: the forward and grad-input on m3.05's tensor cores
# (channels_last), the float16 grad-weight on m2.09's (bfloat16's by the float32 kernels), and
# grad-bias by the float32 kernels, each summed in float32 and rounded once. The CPU kernels are
# float32 and float64.
SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
CPU_DTYPES = (torch.float32, torch.float64)

DOUBLE_BACKWARD_MESSAGE = (
    "double backward (create_graph=True) of the course's conv2d is not supported: its gradient "
    "operators (conv2d_grad_input, conv2d_grad_weight, conv2d_grad_bias) have no autograd of "
    "their own, so a gradient of its gradients cannot be computed; use torch.nn.Conv2d where "
    "second-order gradients are needed (a gradient penalty, a Hessian-vector product)")


def pair(value, name):
    """An int or two ints as [height, width]."""
    if isinstance(value, int):
        return [value, value]
    values = [int(v) for v in value]
    if len(values) != 2:
        raise ValueError(f"{name} must be an int or 2 ints (height, width), got {value!r}")
    return values


def check_options(x, weight, groups):
    """What conv2d() refuses before it reaches an operator: groups, and dtypes."""
    if groups != 1:
        raise NotImplementedError(f"conv2d: groups={groups} is not supported (only groups=1)")
    for name, t in (("input", x), ("weight", weight)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise NotImplementedError(f"conv2d: {name} dtype {t.dtype} is not supported "
                                      "(float32 or float64; float16 or bfloat16 on CUDA)")
        if t.dtype not in CPU_DTYPES and not t.is_cuda:
            raise NotImplementedError(f"conv2d: {name} dtype {t.dtype} runs on CUDA only (m3.05's "
                                      "tensor cores); on the CPU use float32 or float64")


def numeric_padding(layer):
    """An nn.Conv2d's padding as two numbers: 'valid' is 0; 'same' is dilation * (kernel - 1) / 2
    per side, which needs an even dilation * (kernel - 1) (nn.Conv2d pads one side more
    otherwise, which this convolution cannot). Conv2d._numeric_padding in autograd_conv.py."""
    if layer.padding == "valid":
        return [0, 0]
    if layer.padding == "same":
        totals = [d * (k - 1) for d, k in zip(layer.dilation, layer.kernel_size)]
        if any(t % 2 for t in totals):
            raise NotImplementedError(
                f"Conv2d: padding='same' with kernel_size={layer.kernel_size} and "
                f"dilation={layer.dilation} pads one side more than the other, which is not "
                "supported; give the padding as numbers")
        return [t // 2 for t in totals]
    return list(layer.padding)


# ---- autocast ----

def cuda_autocast_dtype():
    """The dtype torch.autocast("cuda") runs a convolution in, or None when it is off. PyTorch
    >= 2.4 asks per device (is_autocast_enabled("cuda"), get_autocast_dtype("cuda")); 1.13 to
    2.3 have the CUDA-only is_autocast_enabled() and get_autocast_gpu_dtype()."""
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
    return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


def autocast_eligible(t):
    """Whether CUDA autocast casts `t` for a convolution: a CUDA floating-point tensor that is
    not float64 (autocast leaves float64 alone, and CPU tensors to CPU autocast)."""
    return t is not None and t.is_cuda and t.is_floating_point() and t.dtype != torch.float64


def autocast_inputs(tensors, dtype):
    """`tensors` as torch.autocast("cuda", dtype) hands them to nn.Conv2d: the eligible ones in
    `dtype` (.to() is differentiable: an fp32 leaf gets its gradient back in fp32)."""
    return tuple(t.to(dtype) if autocast_eligible(t) else t for t in tensors)


# ---- double backward: refused, never silently zero ----

class SecondOrderGuard(torch.autograd.Function):
    """apply(count, *tensors) returns tensors[:count] (the gradients) unchanged; the others are
    what the gradients depend on (dy, x, weight), so that the outputs carry this function as
    their grad_fn. Differentiating the outputs raises: the double backward that the gradient
    operators cannot do."""

    @staticmethod
    def forward(ctx, count, *tensors):
        return tuple(t.detach() for t in tensors[:count])  # the same data, no copy

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(DOUBLE_BACKWARD_MESSAGE)


def guard_second_order(grads, depends_on):
    """`grads` (dx, dw, db; None where not asked for) as backward() returns them. Under
    create_graph=True (grad mode on inside the backward), when something they depend on
    requires grad, each one is routed through SecondOrderGuard, so that a gradient of them
    raises instead of being taken as zero."""
    present = [g for g in grads if g is not None]
    if not (torch.is_grad_enabled() and present and any(t.requires_grad for t in depends_on)):
        return grads
    guarded = iter(SecondOrderGuard.apply(len(present), *present, *depends_on))
    return tuple(None if g is None else next(guarded) for g in grads)


# ---- which mechanism: eager or torch.compile ----

def is_compiling():
    """Whether torch.compile (TorchDynamo) is tracing this call: torch.compiler.is_compiling
    on PyTorch >= 2.3, torch._dynamo.is_compiling on 2.0 to 2.2, never on 1.13."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    dynamo = getattr(torch, "_dynamo", None)
    return dynamo is not None and hasattr(dynamo, "is_compiling") and dynamo.is_compiling()


def below_autograd(operator_has_autograd):
    """Inside Conv2dFunction.forward: the dispatcher below its autograd keys, as torch.library's
    own autograd wrapper calls an operator, where the operator carries a registered autograd
    (PyTorch >= 2.4), which has nothing to do there; else nothing to skip."""
    if not operator_has_autograd:
        return contextlib.nullcontext()
    return torch._C._AutoDispatchBelowAutograd()


# ---- the dispatcher-op path (PyTorch >= 2.4): fake kernels ----

def output_memory_format(x):
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
    return x.new_empty((n, k, p, q)).contiguous(memory_format=output_memory_format(x))


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


def _save_for_backward(ctx, x, weight, bias, stride, padding, dilation):
    """What the gradients read (the inputs, not the output), for both mechanisms."""
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None
    ctx.conv_args = (stride, padding, dilation)


def _make_conv2d_function(plumbing):
    """Conv2dFunction for one Plumbing (its operators, its conv2d_backward)."""

    class Conv2dFunction(torch.autograd.Function):
        """y = conv2d(x, weight, bias) with the course's kernels, differentiable in x, weight,
        bias. apply(x, weight, bias_or_None, stride, padding, dilation), the last three [h, w]
        lists. Its backward raises on double backward (SecondOrderGuard)."""

        @staticmethod
        def forward(ctx, x, weight, bias, stride, padding, dilation):
            _save_for_backward(ctx, x, weight, bias, stride, padding, dilation)
            with below_autograd(plumbing.op_autograd):
                return plumbing.ops().conv2d(x, weight, bias, stride, padding, dilation)

        @staticmethod
        def backward(ctx, grad_output):
            return (*plumbing.backward(ctx, grad_output), None, None, None)  # none for the lists

    return Conv2dFunction


class Plumbing:
    """ops(), bind(), conv2d(), Conv2dFunction and convert_module() around one
    autograd_conv.py's conv2d_backward and Conv2d class."""

    def __init__(self, conv2d_backward, conv2d_class):
        self.conv2d_backward = conv2d_backward
        self.conv2d_class = conv2d_class
        self.namespace_ops = None  # torch.ops.m3_06_<impl>, set by bind()
        self.op_autograd = False  # whether the operator carries its own autograd (>= 2.4)
        self.Conv2dFunction = _make_conv2d_function(self)

    def ops(self):
        if self.namespace_ops is None:
            raise RuntimeError("autograd_conv is not bound to its operators: load it with "
                               "load_extension.load_module(impl)")
        return self.namespace_ops

    def bind(self, namespace_ops, namespace):
        """Binds to torch.ops.<namespace>; on PyTorch >= 2.4 also registers the fake kernels
        and the operator's autograd. Called once by load_extension.load_module."""
        self.namespace_ops = namespace_ops
        register_fake = getattr(torch.library, "register_fake", None)
        register_autograd = getattr(torch.library, "register_autograd", None)
        if register_fake is None or register_autograd is None:
            self.op_autograd = False  # PyTorch < 2.4: Conv2dFunction is the autograd
            return
        for name, fake in FAKE_KERNELS.items():
            register_fake(f"{namespace}::{name}")(fake)
        register_autograd(f"{namespace}::conv2d", self._op_backward, setup_context=self._op_setup_context)
        self.op_autograd = True

    def backward(self, ctx, grad_output):
        """(dx, dw, db) for both mechanisms: conv2d_backward runs outside autograd (its
        operators have none), and under create_graph=True the result goes through
        guard_second_order."""
        x, weight = ctx.saved_tensors
        args = (grad_output, x, weight, ctx.has_bias, *ctx.conv_args, ctx.needs_input_grad[:3])
        if not torch.is_grad_enabled():  # the usual backward: nothing records a graph
            return tuple(self.conv2d_backward(*args))
        with torch.no_grad():
            grads = self.conv2d_backward(*args)
        return guard_second_order(tuple(grads), (grad_output, x, weight))

    @staticmethod
    def _op_setup_context(ctx, inputs, output):
        _save_for_backward(ctx, *inputs)

    def _op_backward(self, ctx, grad_output):
        return (*self.backward(ctx, grad_output), None, None, None)

    def conv2d(self, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        """torch.nn.functional.conv2d on the course's kernels (groups=1, numeric padding), in
        the autocast dtype under torch.autocast("cuda") as F.conv2d."""
        if isinstance(padding, str):
            raise NotImplementedError(f"conv2d: padding={padding!r} is not supported here; the "
                                      "Conv2d module resolves 'same' and 'valid' to numbers")
        args = (pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation"))
        dtype = cuda_autocast_dtype()
        if dtype is None or not any(autocast_eligible(t) for t in (x, weight, bias)):
            return self._run(x, weight, bias, args, groups)
        x, weight, bias = autocast_inputs((x, weight, bias), dtype)
        try:
            return self._run(x, weight, bias, args, groups)
        except RuntimeError as error:  # this GPU cannot run the dtype autocast asked for
            if not requirements.MACHINE_LIMIT.search(str(error)):
                raise
            way_out = ("; torch.autocast with dtype=torch.float16 runs on every GPU of the course"
                       if dtype == torch.bfloat16 else "")
            raise RuntimeError(f"conv2d under torch.autocast('cuda', dtype={dtype}): {error}"
                               f"{way_out}") from error

    def _run(self, x, weight, bias, args, groups):
        check_options(x, weight, groups)
        if self.op_autograd and is_compiling():
            return self.ops().conv2d(x, weight, bias, *args)  # the operator carries its autograd
        return self.Conv2dFunction.apply(x, weight, bias, *args)

    def convert_module(self, module):
        """Replaces every nn.Conv2d inside `module` (in place; also `module` itself) by a
        Conv2d with the same parameters; returns the module."""
        if type(module) is nn.Conv2d:
            return self.conv2d_class.from_torch(module)
        for name, child in module.named_children():
            setattr(module, name, self.convert_module(child))
        return module
