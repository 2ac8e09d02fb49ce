// Exercise m1.03: debugging. Make failures loud, then find a bug with the tools.
// (Reference solution.)
//
// What changes from m1.02: nothing gets faster. A GPU program that ignores a status code
// keeps running after the failure and prints wrong numbers later, far from the cause. This
// step checks every status where it is produced (CUDA_CHECK, CUDA_CHECK_LAUNCH), and fixes
// a row-sum kernel that read outside its matrix and added up the wrong elements, bugs that
// the tests, compute-sanitizer and Nsight make visible (README.md shows how).
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
  // cudaMalloc reports "out of memory" only through its return value; unchecked, the caller
  // gets a null pointer and the failure shows up later as a crash somewhere else.
  // CUDA_CHECK throws course::CudaError with the call's text, file and line.
  CUDA_CHECK(cudaMalloc(&pointer, static_cast<std::size_t>(count) * sizeof(float)));
  return pointer;
}

void free_device_floats(float* pointer) {
  // cudaFree also reports errors from earlier kernels that crashed: worth checking too.
  CUDA_CHECK(cudaFree(pointer));
}

__global__ void write_thread_index_kernel(float* out) {
  out[threadIdx.x] = static_cast<float>(threadIdx.x);
}

void launch_with_block_size(float* out, int threads, cudaStream_t stream) {
  // No require() here on purpose: this launcher lets CUDA judge the configuration, so the
  // tests can show what an unchecked launch error looks like. (Real launchers check their
  // arguments first, as in m1.02.)
  write_thread_index_kernel<<<1, threads, 0, stream>>>(out);
  // A launch returns nothing. A configuration CUDA cannot run (more than 1024 threads per
  // block) is recorded as the "last error", which cudaGetLastError() returns AND clears.
  // Check it right here, or the next check anywhere in the program reports it, blamed on
  // the wrong line.
  CUDA_CHECK_LAUNCH();
}

// ---- Part (b): row sums ------------------------------------------------------------------

constexpr int kRowSumThreads = 256;  // a power of two, for the halving reduction below

// One block per row. The block's threads walk along the row together, thread t reading
// columns t, t + 256, t + 512, ..., so each warp reads 32 neighbouring floats at a time
// (coalesced). Each thread keeps a partial sum, and the 256 partial sums are added in
// shared memory, halving the number of active threads at each step.
__global__ void __launch_bounds__(kRowSumThreads)
    row_sum_kernel(const float* __restrict__ matrix, float* __restrict__ sums, int rows, int cols) {
  __shared__ float partial[kRowSumThreads];
  const int row = blockIdx.x;  // the launcher starts exactly `rows` blocks
  // Row-major: row r starts r * cols elements into the matrix, and its columns follow one
  // after another. (The planted bug read matrix[col * rows + row], the column-major
  // position: right only when the matrix has one row or one column.)
  const float* row_start = matrix + static_cast<std::int64_t>(row) * cols;

  float sum = 0.0f;
  // Columns 0 .. cols - 1: `<`, not `<=`. (The planted bug's `col <= cols` read one element
  // past the row, and past the whole matrix on the last row.)
  for (int col = threadIdx.x; col < cols; col += kRowSumThreads) sum += row_start[col];
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
