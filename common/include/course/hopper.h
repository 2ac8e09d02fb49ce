// The Hopper (sm_90) pieces behind the GEMM cuBLAS runs on an H100 or H200, wrapped one
// instruction at a time, for exercise m2.08 (and any later kernel built the same way).
//
//  * The Tensor Memory Accelerator (TMA) copies a whole 2-D tile from global to shared memory
//    with one instruction issued by one thread (cp.async.bulk.tensor). What to copy is
//    described once, on the host, by a tensor map (make_tensor_map_2d): the matrix's address,
//    sizes and row pitch, the tile ("box") size, and a swizzle. Elements outside the matrix
//    arrive as zeros, so edge tiles need no code.
//  * An mbarrier is a barrier object in shared memory. The TMA counts the bytes it delivered
//    on one (expect_bytes / complete_tx), and threads wait for a phase of it to complete
//    (wait_for_phase); another one counts arrivals, to say a stage may be refilled.
//  * wgmma (sm_90a) is the warpgroup-wide tensor-core instruction: 4 warps (128 threads)
//    multiply a 64 x N x 16 tile with A and B read straight from shared memory, described by
//    64-bit "matrix descriptors", and accumulate in registers. It runs asynchronously:
//    wgmma_commit() closes a group of them, wgmma_wait<N>() waits until N groups are left.
//    In the SASS it is HGMMA. It exists only in code compiled for sm_90a (the "a" is for
//    architecture-specific features), so these wrappers compile to nothing elsewhere and
//    the launcher checks the GPU before it runs the kernel.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only: no driver library to link)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "course/cuda_check.h"
#include "course/launch.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define COURSE_HAVE_TMA 1
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define COURSE_HAVE_WGMMA 1
#endif

namespace course::hopper {

// --- Host: the GPU --------------------------------------------------------------------------

// True when the current GPU is a Hopper (compute capability 9.0), the only one that runs
// code built for sm_90a.
inline bool is_hopper_gpu() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

inline void require_hopper_gpu(const char* function) {
  if (!is_hopper_gpu()) {
    throw std::runtime_error(std::string(function) +
                             ": needs a Hopper GPU (compute capability 9.0: H100, H200); "
                             "wgmma and this kernel's sm_90a code run nowhere else");
  }
}

// --- Host: tensor maps ---------------------------------------------------------------------

// A tensor map for a row-major rows x cols matrix of 16-bit elements at `base`, copied in
// boxes of box_rows x box_cols elements, with shared memory swizzled in 128-byte rows (the
// layout wgmma reads without bank conflicts). The TMA needs the row pitch (cols * 2 bytes)
// to be a multiple of 16 and `base` 16-byte aligned; box_cols * 2 must be at most 128 bytes
// for the 128-byte swizzle. Throws std::invalid_argument or course::CudaError.
inline CUtensorMap make_tensor_map_2d(const void* base, CUtensorMapDataType type,
                                      std::uint64_t rows, std::uint64_t cols,
                                      std::uint32_t box_rows, std::uint32_t box_cols) {
  if (!is_aligned(base, 16) || (cols * 2) % 16 != 0) {
    throw std::invalid_argument(
        "make_tensor_map_2d: the TMA needs a 16-byte aligned base and rows whose length in "
        "bytes is a multiple of 16, got " + std::to_string(cols) + " columns");
  }
  // The encoder lives in the driver (libcuda); the runtime hands out its address, so
  // the program needs no link to the driver library.
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                                cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || function == nullptr) {
      throw std::runtime_error("make_tensor_map_2d: the driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  CUtensorMap map{};
  const cuuint64_t sizes[2] = {cols, rows};           // innermost dimension first
  const cuuint64_t pitches[1] = {cols * 2};           // bytes from one row to the next
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = encode(&map, type, 2, const_cast<void*>(base), sizes, pitches, box,
                                 element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                 CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    throw std::invalid_argument("make_tensor_map_2d: cuTensorMapEncodeTiled failed with error " +
                                std::to_string(static_cast<int>(result)) + " for a " +
                                std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }
  return map;
}

// --- Device: mbarriers ---------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t smem(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// Prepares a barrier that completes a phase after `arrivals` arrivals (and, where
// expect_bytes was called, once those bytes have landed).
__device__ __forceinline__ void barrier_init(std::uint64_t* barrier, int arrivals) {
#if defined(COURSE_HAVE_TMA)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem(barrier)), "r"(arrivals));
#else
  (void)barrier;
  (void)arrivals;
#endif
}

// Makes initialised barriers visible to the TMA (the "async proxy"); call before the
// __syncthreads() that follows the inits.
__device__ __forceinline__ void fence_barrier_init() {
#if defined(COURSE_HAVE_TMA)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// One arrival that also announces `bytes` more bytes to wait for (the tiles a TMA copy
// will deliver on this barrier).
__device__ __forceinline__ void arrive_expecting_bytes(std::uint64_t* barrier, int bytes) {
#if defined(COURSE_HAVE_TMA)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem(barrier)),
               "r"(bytes)
               : "memory");
#else
  (void)barrier;
  (void)bytes;
#endif
}

__device__ __forceinline__ void arrive(std::uint64_t* barrier) {
#if defined(COURSE_HAVE_TMA)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem(barrier)) : "memory");
#else
  (void)barrier;
#endif
}

// Waits until the phase of parity `parity` (0, 1, 0, ...: phases alternate) has completed.
// A wait that cannot end (a phase nobody completes: a missing arrival or copy) would hang
// the GPU; after 10 seconds it stops the kernel instead, and the launch reports an error.
__device__ __forceinline__ void wait_for_phase(std::uint64_t* barrier, int parity) {
#if defined(COURSE_HAVE_TMA)
  std::uint32_t done = 0;
  std::uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(start));
  do {
    asm volatile(
        "{\n.reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n}\n"
        : "=r"(done)
        : "r"(smem(barrier)), "r"(parity)
        : "memory");
    if (done == 0) {
      asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(now));
      if (now - start > 10'000'000'000ull) __trap();  // nanoseconds
    }
  } while (done == 0);
#else
  (void)barrier;
  (void)parity;
#endif
}

// --- Device: TMA ---------------------------------------------------------------------------

// Copies the box whose first element is (row, col) of the matrix `map` describes into
// shared memory at `destination` (1024-byte aligned for the 128-byte swizzle); the bytes
// complete on `barrier`. One thread issues it.
__device__ __forceinline__ void copy_tile_async(void* destination, const CUtensorMap* map,
                                                int row, int col, std::uint64_t* barrier) {
#if defined(COURSE_HAVE_TMA)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem(destination)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(smem(barrier))
      : "memory");
#else
  (void)destination;
  (void)map;
  (void)row;
  (void)col;
  (void)barrier;
#endif
}

// --- Device: wgmma -------------------------------------------------------------------------

// The matrix descriptor of a tile in shared memory, swizzled in 128-byte rows (as the TMA
// wrote it). `leading_bytes` and `stride_bytes` are the two strides the hardware needs
// (PTX ISA, "Matrix Descriptor Format"): for a K-major tile (A: rows of K), stride_bytes is
// the distance between groups of 8 rows (8 x 128 bytes) and leading_bytes is unused; for an
// MN-major tile (B: rows of N), leading_bytes is the distance between 64-column blocks and
// stride_bytes between groups of 8 rows of K.
__device__ __forceinline__ std::uint64_t matrix_descriptor(const void* tile, int leading_bytes,
                                                           int stride_bytes) {
  constexpr std::uint64_t kSwizzle128B = 1;
  return static_cast<std::uint64_t>((smem(tile) & 0x3FFFF) >> 4) |
         static_cast<std::uint64_t>((leading_bytes >> 4) & 0x3FFF) << 16 |
         static_cast<std::uint64_t>((stride_bytes >> 4) & 0x3FFF) << 32 | kSwizzle128B << 62;
}

// Orders this warpgroup's register accesses before the wgmma that follow.
__device__ __forceinline__ void wgmma_fence() {
#if defined(COURSE_HAVE_WGMMA)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(COURSE_HAVE_WGMMA)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(COURSE_HAVE_WGMMA)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Keeps the compiler from moving reads or writes of an accumulator across a wgmma_wait.
__device__ __forceinline__ void fence_accumulator(float& value) {
  asm volatile("" : "+f"(value)::"memory");
}

// Moves this warpgroup's register budget: producers give registers back, consumers take
// them (sm_90a; the kernel needs __launch_bounds__(threads, 1)).
template <int kRegisters>
__device__ __forceinline__ void release_registers() {
#if defined(COURSE_HAVE_WGMMA)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}
template <int kRegisters>
__device__ __forceinline__ void claim_registers() {
#if defined(COURSE_HAVE_WGMMA)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}

// d += A * B for a 64 x 256 x 16 tile: A (64 x 16) and B (16 x 256) in shared memory,
// described by `a` and `b` (A K-major, B MN-major: rows of B hold N, as in a row-major
// matrix), d in the registers of the warpgroup's 128 threads: thread t of warp w holds, for
// each 8 columns j (d[4 j] ... d[4 j + 3]), rows 16 w + t / 4 and 16 w + t / 4 + 8,
// columns 8 j + 2 (t % 4) and the next one, as mma.sync's accumulators (course/mma_sync.h).
// The wgmma instruction for 16-bit inputs of PTX type TYPE ("f16" or "bf16").
#define COURSE_WGMMA_64x256x16(TYPE)                                                              \
  asm volatile(                                                                                   \
      "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %130, 0;\n"                             \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"                           \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"           \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"           \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"           \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"           \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"           \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}," \
      " %128, %129, accumulate, 1, 1, 0, 1;\n}\n"                                                 \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(a), "l"(b), "r"(1));

template <typename Element>
__device__ __forceinline__ void wgmma_64x256x16(float (&d)[128], std::uint64_t a, std::uint64_t b) {
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma_64x256x16: float16 (__half) or bfloat16 (__nv_bfloat16) inputs");
#if defined(COURSE_HAVE_WGMMA)
  if constexpr (std::is_same_v<Element, __half>) {
    COURSE_WGMMA_64x256x16("f16");
  } else {
    COURSE_WGMMA_64x256x16("bf16");
  }
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}
#undef COURSE_WGMMA_64x256x16

}  // namespace course::hopper
