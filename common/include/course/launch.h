// Small helpers every launcher uses.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "course/cuda_check.h"

namespace course {

// Number of blocks of `divisor` items needed to cover `count` items, rounding up:
// ceil_div(1000, 256) == 4. The last block usually has threads with nothing to do,
// which is why every kernel checks its index against the size.
//
// The two arguments may be different integer types, as in ceil_div(n, kThreadsPerBlock)
// with a 64-bit n and an int constant: the arithmetic and the result use the wider of the
// two (std::common_type), so a 64-bit count never wraps in 32 bits.
template <typename Count, typename Divisor>
__host__ __device__ constexpr std::common_type_t<Count, Divisor> ceil_div(Count count, Divisor divisor) {
  static_assert(std::is_integral_v<Count> && std::is_integral_v<Divisor>,
                "ceil_div counts whole items: both arguments must be integers");
  using Wide = std::common_type_t<Count, Divisor>;
  return (static_cast<Wide>(count) + static_cast<Wide>(divisor) - 1) / static_cast<Wide>(divisor);
}

// True when `pointer` is a multiple of `bytes` (a power of two): what 16-byte loads and
// stores, cp.async, the tensor cores' loads and the TMA need of the addresses they take.
inline bool is_aligned(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

// Throws std::invalid_argument("<function>: <message>") when `condition` is false.
// Launchers use it to reject bad sizes before anything touches the GPU.
inline void require(bool condition, const char* function, const std::string& message) {
  if (!condition) throw std::invalid_argument(std::string(function) + ": " + message);
}

// The same check with the message made only when it fails: `make_message` is a callable
// returning it (a lambda), for checks that run before every launch, where formatting the
// message each time would cost the CPU more than the launch itself.
template <typename MakeMessage,
          typename = std::enable_if_t<std::is_invocable_r_v<std::string, MakeMessage>>>
inline void require(bool condition, const char* function, MakeMessage&& make_message) {
  if (!condition) throw std::invalid_argument(std::string(function) + ": " + make_message());
}

// The most blocks a grid may have in y (and in z); x may have up to 2^31 - 1.
inline constexpr unsigned kMaxGridY = 65535;

// The grid-limit check of launchers whose grid puts one block per tile in y: throws
// std::invalid_argument("<function>: <what> needs more than 65535 blocks in y, the grid's
// limit") when `blocks_y` is more than kMaxGridY. `what` names the size, e.g. "M = 70000".
inline void require_grid_y(long long blocks_y, const char* function, const std::string& what) {
  require(blocks_y <= static_cast<long long>(kMaxGridY), function,
          what + " needs more than " + std::to_string(kMaxGridY) +
              " blocks in y, the grid's limit");
}

// The blocks of a one-dimensional grid that gives each of `items` work items its own thread:
// ceil_div(items, threads_per_block), checked against the grid's limit in x, 2^31 - 1 blocks
// (in y and z it is only 65535, which is why one-thread-per-item launches use x). Throws
// std::invalid_argument naming `function` and the counts when the grid would be larger.
// The kernel computes its index in 64 bits, blockIdx.x * (std::int64_t)blockDim.x +
// threadIdx.x: in the last block that product can pass 2^31 - 1 even when `items` does not.
//   const unsigned blocks = grid_blocks_1d("my_launcher", n, 256);   // n = 1000: 4 blocks
constexpr std::int64_t kMaxGridBlocksX = 2147483647;  // gridDim.x's limit (compute capability >= 3.0)
inline unsigned int grid_blocks_1d(const char* function, std::int64_t items, int threads_per_block) {
  require(items >= 0, function, "the number of items must be >= 0, got " + std::to_string(items));
  require(threads_per_block >= 1, function,
          "threads per block must be >= 1, got " + std::to_string(threads_per_block));
  const std::int64_t blocks = ceil_div(items, threads_per_block);
  require(blocks <= kMaxGridBlocksX, function,
          std::to_string(items) + " items at " + std::to_string(threads_per_block) +
              " threads per block need " + std::to_string(blocks) +
              " blocks, more than a grid's 2^31 - 1 in x");
  return static_cast<unsigned int>(blocks);
}

// Blocks that fill the GPU once: multiprocessors times the blocks of `kernel` (at this
// block size) one multiprocessor holds at the same time. The occupancy calculator knows
// every limit that applies (threads, blocks, registers and shared memory per multiprocessor)
// for the kernel as compiled. Exercise m1.02 has you write this yourself.
template <typename Kernel>
int resident_blocks_to_fill_gpu(Kernel kernel, int threads_per_block) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  int blocks_per_multiprocessor = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, kernel,
                                                           threads_per_block, 0));
  return multiprocessors * std::max(blocks_per_multiprocessor, 1);
}

}  // namespace course
