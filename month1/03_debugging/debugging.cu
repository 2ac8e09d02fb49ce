// Exercise m1.03: debugging. Make failures loud, then find a bug with the tools.
//
// What changes from m1.02: nothing gets faster. A GPU program that ignores a status code
// keeps running after the failure and prints wrong numbers later, far from the cause. This
// step checks every status where it is produced (CUDA_CHECK, CUDA_CHECK_LAUNCH), and fixes
// a row-sum kernel that reads outside its matrix and adds up the wrong elements, bugs that
// the tests, compute-sanitizer and Nsight make visible (README.md shows how).
//
// Read README.md first. Fill in the TODOs, then run `./course grade m1_03`.
#include "debugging.h"

#include <cstddef>
#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// ---- Part (a): errors that CUDA reports only if you ask --------------------------------

float* allocate_device_floats(std::int64_t count) {
  require(count >= 0, "allocate_device_floats", "count must be >= 0, got " + std::to_string(count));
  float* pointer = nullptr;
  // TODO(m1.03a): cudaMalloc returns a status that nobody looks at. Wrap the call in
  // CUDA_CHECK(...) so that a failure throws course::CudaError naming the call. Do the same
  // for cudaFree in free_device_floats below.
  cudaMalloc(&pointer, static_cast<std::size_t>(count) * sizeof(float));
  return pointer;
}

void free_device_floats(float* pointer) {
  cudaFree(pointer);  // TODO(m1.03a): check this status too.
}

__global__ void write_thread_index_kernel(float* out) {
  out[threadIdx.x] = static_cast<float>(threadIdx.x);
}

void launch_with_block_size(float* out, int threads, cudaStream_t stream) {
  // No require() here on purpose: this launcher lets CUDA judge the configuration, so the
  // tests can show what an unchecked launch error looks like.
  write_thread_index_kernel<<<1, threads, 0, stream>>>(out);
  // TODO(m1.03b): a launch returns nothing, so a configuration CUDA cannot run (try
  // threads = 2048) fails silently here. Check the launch the way every launcher in this
  // course does (course/cuda_check.h).
}

// ---- Part (b): row sums ------------------------------------------------------------------

constexpr int kRowSumThreads = 256;  // a power of two, for the halving reduction below

// One block per row. The block's threads walk along the row together, thread t reading
// columns t, t + 256, t + 512, ..., so each warp reads 32 neighbouring floats at a time
// (coalesced). Each thread keeps a partial sum, and the 256 partial sums are added in
// shared memory, halving the number of active threads at each step.
//
// TODO(m1.03c): this kernel reads memory outside the matrix. Run the tests, then
// compute-sanitizer (README.md, "Finding it with compute-sanitizer"), find the line, fix it.
// TODO(m1.03d): it also adds up the wrong elements, though only on some shapes. Compare
// the shapes that pass with the ones that fail, find the wrong index expression, fix it.
__global__ void __launch_bounds__(kRowSumThreads)
    row_sum_kernel(const float* __restrict__ matrix, float* __restrict__ sums, int rows, int cols) {
  __shared__ float partial[kRowSumThreads];
  const int row = blockIdx.x;  // the launcher starts exactly `rows` blocks

  float sum = 0.0f;
  for (int col = threadIdx.x; col <= cols; col += kRowSumThreads) {
    sum += matrix[static_cast<std::int64_t>(col) * rows + row];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();  // every partial sum is in shared memory before anyone reads them

  for (int active = kRowSumThreads / 2; active > 0; active /= 2) {
    if (threadIdx.x < active) partial[threadIdx.x] += partial[threadIdx.x + active];
    __syncthreads();  // this step's sums are written before the next step reads them
  }
  if (threadIdx.x == 0) sums[row] = partial[0];
}

void row_sum(const float* matrix, float* sums, int rows, int cols, cudaStream_t stream) {
  require(rows >= 0, "row_sum", "rows must be >= 0, got " + std::to_string(rows));
  require(cols >= 0, "row_sum", "cols must be >= 0, got " + std::to_string(cols));
  if (rows == 0) return;  // a launch of zero blocks is an error
  row_sum_kernel<<<rows, kRowSumThreads, 0, stream>>>(matrix, sums, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
