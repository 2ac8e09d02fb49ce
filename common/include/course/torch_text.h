// Text for the error messages of PyTorch extensions (m1.05, m3.01, ...): shapes as Python
// prints them. Include it only in code that includes PyTorch's headers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <string>

namespace course {

// "[6, 8]": a shape (tensor.sizes()) or strides as text, for error messages.
// Put this in a TORCH_CHECK message instead of tensor.sizes() itself, and std::to_string(n)
// instead of a bare integer: TORCH_CHECK formats its arguments with a C++ stream compiled
// into the extension, and with PyTorch 2.11 and a CUDA build of an extension, formatting a
// number that way crashed the process (a segmentation fault instead of the error).
// Text, and values PyTorch formats itself (a.dtype(), a.device()), are safe.
inline std::string shape_string(at::IntArrayRef values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(values[i]);
  }
  return text + "]";
}

}  // namespace course
