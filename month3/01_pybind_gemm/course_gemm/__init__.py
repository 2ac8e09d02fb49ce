"""course_gemm: exercise m3.01 as an installed package (built by setup.py as a wheel).

    import course_gemm
    c = course_gemm.optimized_gemm(a, b, alpha=2.0)   # the pybind11 function
    c = course_gemm.gemm(a, b, 2.0)                    # the dispatcher operator, torch.ops.course_gemm.gemm
"""
import torch  # first: the compiled module links against PyTorch's libraries, which this loads

from . import _C
from ._C import optimized_gemm  # noqa: F401
from .fake import gemm_fake

NAMESPACE = _C.ops_namespace          # "course_gemm": the TORCH_LIBRARY namespace setup.py sets
try:
    gemm = getattr(torch.ops, NAMESPACE).gemm
except (AttributeError, RuntimeError):  # not declared (PyTorch 2 raises AttributeError, 1.x RuntimeError)
    gemm = None

# torch.compile and opcheck need the operator's fake kernel; PyTorch 2.4 and later have
# register_fake (older ones have neither torch.compile's tracing of custom ops nor opcheck).
_register_fake = getattr(torch.library, "register_fake", None)
if _register_fake is not None and gemm is not None:
    _register_fake(f"{NAMESPACE}::gemm")(gemm_fake)

__all__ = ["optimized_gemm", "gemm", "NAMESPACE"]
