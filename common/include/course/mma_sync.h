// The warp-level tensor-core instructions under WMMA, with the register layouts spelled out
// (PTX ISA, "Warp-level matrix fragments for mma.m16n8k16"): ldmatrix, which loads 8 x 8
// tiles of 16-bit values from shared memory into the lanes that mma.sync expects them in,
// and mma.sync.m16n8k16, one 16 x 8 x 16 product with float16 (or bfloat16) inputs and
// float32 accumulators (HMMA.16816 in the SASS on sm_80 and newer; two HMMA.1688 on sm_75).
//
// Lane `lane` of a warp is called (group, thread) = (lane / 4, lane % 4) below.
//  * A fragment, 16 x 16 row-major (4 registers of 2 halves): a[0] holds row group, columns
//    2 thread and 2 thread + 1; a[1] the same 8 rows down (row group + 8); a[2] and a[3] the
//    same 8 columns to the right.
//  * B fragment, 16 x 8 (2 registers): b[0] holds rows (k) 2 thread and 2 thread + 1 of
//    column group; b[1] the same 8 rows down.
//  * Accumulator, 16 x 8 float32 (4 registers): c[0], c[1] are row group, columns 2 thread
//    and 2 thread + 1; c[2], c[3] the same 8 rows down.
// Knowing the accumulator layout is what lets a kernel write C straight from registers,
// which WMMA's opaque fragments do not allow.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace course {

// Which GPUs run these: ldmatrix exists from sm_75 (Turing: T4, RTX 20xx). mma.sync
// m16n8k16 exists from sm_80 (Ampere); on sm_75 a 16 x 8 x 16 product is two m16n8k8
// products, one per half of k, which is what mma_16x8x16 does there, for float16. Turing
// has no bfloat16 tensor cores: the bfloat16 product stops the kernel with a trap on sm_75
// (launchers check course::require_compute_capability(8, 0, ...) first, so it is reached
// only by a kernel launched without that check). Nothing here ever computes zeros in place
// of a product.

// Stops the kernel: an instruction this GPU does not have was reached. The launch then fails
// with cudaErrorLaunchFailure instead of returning a wrong result.
__device__ __forceinline__ void instruction_missing_on_this_gpu() {
#if defined(__CUDA_ARCH__)
  __trap();
#endif
}

// Four 8 x 8 tiles of 16-bit values from shared memory, one register each. Lanes 0-7 give
// the addresses of the 8 rows (16 bytes each) of tile 0, lanes 8-15 of tile 1, 16-23 of
// tile 2, 24-31 of tile 3. In register r, lane (group, thread) gets row group, elements
// 2 thread and 2 thread + 1 of tile r: exactly an mma.sync fragment.
__device__ __forceinline__ void load_matrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  r[0] = r[1] = r[2] = r[3] = address;
  instruction_missing_on_this_gpu();
#endif
}

// The same, each tile transposed on the way: lane (group, thread) gets column group, rows
// 2 thread and 2 thread + 1. This turns a row-major [k][n] tile of B into mma.sync's
// B fragment, which holds two consecutive k of one column n per register.
__device__ __forceinline__ void load_matrix_x4_transposed(std::uint32_t (&r)[4],
                                                          std::uint32_t address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  r[0] = r[1] = r[2] = r[3] = address;
  instruction_missing_on_this_gpu();
#endif
}

// acc += a * b for one 16 x 8 x 16 tile: a (16 x 16) and b (16 x 8) of float16 (Element =
// __half, the default) or bfloat16 (m3.05's bf16 convolution), float32 acc. Both have the
// same fragment layouts; only the instruction's type suffix differs.
template <class Element = __half>
__device__ __forceinline__ void mma_16x8x16(float (&acc)[4], const std::uint32_t (&a)[4],
                                            const std::uint32_t (&b)[2]) {
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "mma_16x8x16: __half or __nv_bfloat16");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<Element, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  if constexpr (std::is_same_v<Element, __half>) {
    // k = 0..7 are a[0], a[1] (rows group and group + 8) and b[0]; k = 8..15 are a[2], a[3]
    // and b[1]: the m16n8k8 fragments are the two halves of the m16n8k16 ones.
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[2]), "r"(a[3]), "r"(b[1]));
  } else {
    (void)a;
    (void)b;
    instruction_missing_on_this_gpu();  // no bfloat16 tensor cores before sm_80
  }
#else
  (void)a;
  (void)b;
  (void)acc;
  instruction_missing_on_this_gpu();
#endif
}

// Where the 16-byte chunk `chunk` of row `row` of a shared tile goes, for tiles whose rows
// hold kChunksPerRow chunks (kChunksPerRow * 8 halves). ldmatrix reads one chunk from each
// of 8 consecutive rows at the same column; stored plainly, rows of 64 bytes or more put
// those 8 chunks in the same few of shared memory's 32 banks (a 2- to 8-way conflict).
// XOR-ing the chunk index with the row (rows of 128 bytes or more), or with row / 2 (rows
// of 64 bytes), places the 8 chunks in 8 different 16-byte bank groups: conflict free, with
// no padding, and every chunk stays 16-byte aligned for cp.async. The swizzle is its own
// inverse per row, so writer and reader use the same function.
template <int kChunksPerRow>
__host__ __device__ constexpr int swizzled_chunk(int row, int chunk) {
  static_assert(kChunksPerRow == 4 || kChunksPerRow % 8 == 0,
                "swizzled_chunk: rows of 4 chunks (64 bytes) or a multiple of 8 (128 bytes)");
  return kChunksPerRow == 4 ? chunk ^ ((row / 2) % 4) : chunk ^ (row % 8);
}

// The epilogue's store of two neighbours of a row-major M x N float32 matrix C, at (row, col)
// and (row, col + 1), as an accumulator tile holds them: c = alpha * value + beta * c, only
// inside C, and C never read when beta == 0 (it may hold NaN). One 8-byte store when both
// are inside and `pairs_aligned` (N even and C 8-byte aligned, so (row, col) with col even
// is 8-byte aligned); one float at a time at the right edge or when C is not aligned.
__device__ __forceinline__ void store_accumulator_pair(float* __restrict__ C, int M, int N, int row,
                                                       int col, float alpha, float beta,
                                                       float value0, float value1,
                                                       bool pairs_aligned) {
  if (row >= M || col >= N) return;
  float* c = C + static_cast<long long>(row) * N + col;
  float v0 = alpha * value0, v1 = alpha * value1;
  if (pairs_aligned && col + 1 < N) {
    if (beta != 0.0f) {
      const float2 old = *reinterpret_cast<const float2*>(c);
      v0 += beta * old.x;
      v1 += beta * old.y;
    }
    *reinterpret_cast<float2*>(c) = make_float2(v0, v1);
  } else {
    c[0] = beta == 0.0f ? v0 : v0 + beta * c[0];
    if (col + 1 < N) c[1] = beta == 0.0f ? v1 : v1 + beta * c[1];
  }
}

// True when C allows store_accumulator_pair's 8-byte stores: N even, C 8-byte aligned.
__host__ __device__ __forceinline__ bool pairs_aligned(const float* C, int N) {
  return N % 2 == 0 && reinterpret_cast<unsigned long long>(C) % 8 == 0;
}

// A warp's accumulators, kTilesM x kTilesN mma tiles of 4 floats per lane, set to 0 before
// the main loop adds the products to them.
template <int kTilesM, int kTilesN>
__device__ __forceinline__ void zero_accumulators(float (&acc)[kTilesM][kTilesN][4]) {
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }
  }
}

}  // namespace course
