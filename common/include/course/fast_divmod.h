// Division by a divisor known on the host, without a division instruction on the GPU.
//
// The GPU has no integer divider: `n / d` with a run-time d compiles to a call of about 20
// instructions. When d is fixed for a whole launch (a convolution's P Q, Q or C), the host
// can work out a "magic" multiplier once, and each quotient costs a multiply-high, an add and
// a shift (Granlund and Montgomery, "Division by invariant integers using multiplication",
// 1994; CUTLASS's FastDivmod, cutlass/fast_math.h, is the same idea):
//
//   shift = ceil(log2 d),  multiplier = floor(2^32 (2^shift - d) / d) + 1
//   n / d = (umulhi(n, multiplier) + n) >> shift          for 0 <= n < 2^31
//
// where umulhi is the high 32 bits of the 64-bit product (__umulhi on the GPU).
//
//   const course::FastDivmod by_q(Q);             // host, once per launch
//   int p, q;  by_q.divmod(pq, p, q);             // device: p = pq / Q, q = pq % Q
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "course/launch.h"

namespace course {

struct FastDivmod {
  int divisor = 1;
  unsigned multiplier = 0;
  int shift = 0;

  FastDivmod() = default;
  // Host only. Throws std::invalid_argument unless 1 <= d <= 2^31 - 1.
  explicit FastDivmod(int d) : divisor(d) {
    require(d >= 1, "FastDivmod", "the divisor must be >= 1, got " + std::to_string(d));
    while ((std::int64_t{1} << shift) < d) ++shift;  // ceil(log2 d), at most 31
    const std::uint64_t numerator = (std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d);
    multiplier = static_cast<unsigned>(numerator / static_cast<std::uint64_t>(d) + 1);
  }

  // n / divisor, for 0 <= n < 2^31.
  __host__ __device__ __forceinline__ int divide(int n) const {
    const unsigned u = static_cast<unsigned>(n);
#if defined(__CUDA_ARCH__)
    const unsigned high = __umulhi(u, multiplier);
#else
    const unsigned high = static_cast<unsigned>((static_cast<std::uint64_t>(u) * multiplier) >> 32);
#endif
    return static_cast<int>((high + u) >> shift);
  }

  // quotient = n / divisor, remainder = n % divisor, for 0 <= n < 2^31.
  __host__ __device__ __forceinline__ void divmod(int n, int& quotient, int& remainder) const {
    quotient = divide(n);
    remainder = n - quotient * divisor;
  }
};

}  // namespace course
