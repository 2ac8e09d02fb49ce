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

#include <cuda.h>          // CUtensorMap and its enums (types only: no driver library to link)
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
#include "course/requirements.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define COURSE_HAVE_TMA 1
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define COURSE_HAVE_WGMMA 1
#endif

namespace course::hopper {

// --- Host: the GPU --------------------------------------------------------------------------

// True when the current GPU is a Hopper (compute capability 9.0), the only one that runs
// code built for sm_90a. It asks course/requirements.h, so COURSE_COMPUTE_CAPABILITY can
// make a Hopper look like an older GPU in tests.
inline bool is_hopper_gpu() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  return device_compute_capability().number() == 90;
}

inline void require_hopper_gpu(const char* function) {
  require_compute_capability(9, 0, std::string(function) +
                                        ": wgmma and the TMA, in sm_90a code; H100, H200");
  if (!is_hopper_gpu()) {
    throw UnsupportedDevice(std::string(function) +
                            ": needs a Hopper GPU (compute capability 9.0: H100, H200); "
                            "wgmma and this kernel's sm_90a code run nowhere else");
  }
}

// --- Host: which machine code the runtime took ----------------------------------------------

// A file that holds wgmma kernels is often built for older GPUs too (sm_80, sm_90 without the
// "a"), and on a Hopper the runtime picks one of its machine codes. This kernel, never
// launched, says which: built for sm_90a it holds kMarkerInts ints of shared memory, otherwise
// none, and its attributes cost no launch and no synchronisation (a launcher may ask while
// its stream is being captured into a CUDA graph). Tag: a type of the asking file's own (in
// an unnamed namespace), so that each file gets its own instantiation, compiled with that
// file's machine codes.
inline constexpr int kMarkerInts = 256;
template <class Tag>
__global__ void sm90a_marker_kernel(int* sink) {
#if defined(COURSE_HAVE_WGMMA)
  __shared__ int marker[kMarkerInts];
  const int i = static_cast<int>(threadIdx.x) % kMarkerInts;
  marker[i] = i;
  __syncthreads();
  *sink = marker[(i + 1) % kMarkerInts];
#else
  (void)sink;
#endif
}

// True when the runtime took the sm_90a machine code of the file whose Tag this is (so its
// wgmma kernels are real); false where that file was not built for sm_90a or the GPU is not
// a Hopper.
template <class Tag>
bool sm90a_code_loaded() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, sm90a_marker_kernel<Tag>));
  return attributes.sharedSizeBytes == kMarkerInts * sizeof(int);
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
        "bytes is a multiple of 16, got " +
        std::to_string(cols) + " columns");
  }
  // The encoder lives in the driver (libcuda); the runtime hands out its address, so
  // the program needs no link to the driver library. The toolkits before 12.5 have no
  // cudaGetDriverEntryPointByVersion, and the later ones deprecate the lookup without a
  // version: each toolkit takes the one it has. The function has one version, 12.0's.
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                                cudaEnableDefault, &found));
#else
    CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &function, cudaEnableDefault,
                                       &found));
#endif
    if (found != cudaDriverEntryPointSuccess || function == nullptr) {
      throw std::runtime_error("make_tensor_map_2d: the driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  CUtensorMap map{};
  const cuuint64_t sizes[2] = {cols, rows};  // innermost dimension first
  const cuuint64_t pitches[1] = {cols * 2};  // bytes from one row to the next
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result =
      encode(&map, type, 2, const_cast<void*>(base), sizes, pitches, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
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

// Makes this thread's earlier writes to shared memory, by ordinary stores or by cp.async
// once they have landed (the "generic proxy"), visible to the TMA and to wgmma (the "async
// proxy"), which read shared memory on their own path. Other threads' writes need it too:
// each writer fences its own, then a barrier publishes them (m3.05's wgmma loop).
__device__ __forceinline__ void fence_shared_for_async_proxy() {
#if defined(COURSE_HAVE_TMA)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Makes initialised barriers visible to the TMA (the "async proxy"); call before the
// __syncthreads() that follows the inits.
__device__ __forceinline__ void fence_barrier_init() {
#if defined(COURSE_HAVE_TMA)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
  fence_shared_for_async_proxy();
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
__device__ __forceinline__ void copy_tile_async(void* destination, const CUtensorMap* map, int row,
                                                int col, std::uint64_t* barrier) {
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

// copy_tile_async, delivered to every block of the cluster whose bit is set in `blocks` (bit
// r: block rank r), at the same shared-memory offset in each, its bytes completing on each
// one's barrier at `barrier`'s offset ("multicast": one read of global memory, several
// copies). Each receiver expects these bytes on its own barrier.
__device__ __forceinline__ void copy_tile_to_cluster_async(void* destination,
                                                           const CUtensorMap* map, int row, int col,
                                                           std::uint64_t* barrier,
                                                           std::uint16_t blocks) {
#if defined(COURSE_HAVE_TMA)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem(destination)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(smem(barrier)), "h"(blocks)
      : "memory");
#else
  (void)destination;
  (void)map;
  (void)row;
  (void)col;
  (void)barrier;
  (void)blocks;
#endif
}

// --- Device: thread block clusters ----------------------------------------------------------
// A cluster is a group of blocks that the GPU starts together on SMs of one GPC; each block
// can read the others' shared memory ("distributed shared memory"). The cluster's size is a
// launch attribute (cudaLaunchAttributeClusterDimension). Every thread of every block of
// the cluster must call cluster_sync(), all threads of a warp together.

// A barrier for the whole cluster: shared-memory writes before it, in any of its blocks, are
// visible after it to every thread of the cluster (arrive has release, wait acquire
// semantics).
__device__ __forceinline__ void cluster_sync() {
#if defined(COURSE_HAVE_TMA)
  asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}

// This block's rank in its cluster (0 .. cluster_blocks() - 1), and the cluster's size.
__device__ __forceinline__ int cluster_block_rank() {
  std::uint32_t rank = 0;
#if defined(COURSE_HAVE_TMA)
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
#endif
  return static_cast<int>(rank);
}
__device__ __forceinline__ int cluster_blocks() {
  std::uint32_t blocks = 1;
#if defined(COURSE_HAVE_TMA)
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(blocks));
#endif
  return static_cast<int>(blocks);
}

// The address, in the cluster's shared memory window, of this block's shared variable at
// `pointer` as it lies in block `rank` of the cluster (every block has the same layout).
__device__ __forceinline__ std::uint32_t cluster_shared_address(const void* pointer, int rank) {
  std::uint32_t address = 0;
#if defined(COURSE_HAVE_TMA)
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(address)
               : "r"(smem(pointer)), "r"(static_cast<std::uint32_t>(rank)));
#else
  (void)pointer;
  (void)rank;
#endif
  return address;
}

// An arrival on the barrier at `barrier`'s offset in block `rank` of the cluster (this block's
// own for its own rank). The default semantics, release at the block's scope, as for a local
// arrival: on the H200, .release.cluster made m2.09's pairs of tiles far slower.
__device__ __forceinline__ void arrive_in_block(std::uint64_t* barrier, int rank) {
#if defined(COURSE_HAVE_TMA)
  asm volatile(
      "mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_shared_address(barrier, rank))
      : "memory");
#else
  (void)barrier;
  (void)rank;
#endif
}

// 16 bytes from an address that cluster_shared_address gave (any block of the cluster).
__device__ __forceinline__ float4 load_cluster_float4(std::uint32_t address) {
  float4 value = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#if defined(COURSE_HAVE_TMA)
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(value.x), "=f"(value.y), "=f"(value.z), "=f"(value.w)
               : "r"(address)
               : "memory");
#else
  (void)address;
#endif
  return value;
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

// d += A * B for a 64 x kN x 16 tile (kN = 64, 128 or 256): A (64 x 16) and B (16 x kN) in
// shared memory, described by `a` and `b`, A K-major; B MN-major (kBRowsHoldN: rows of B hold
// N, as in a row-major K x N matrix; m2.08) or K-major (rows of B hold K, as in W's filters of
// m3.05). d is in the registers of the warpgroup's 128 threads: thread t of warp w holds, for
// each 8 columns j (d[4 j] ... d[4 j + 3]), rows 16 w + t / 4 and 16 w + t / 4 + 8, columns
// 8 j + 2 (t % 4) and the next one, as mma.sync's accumulators (course/mma_sync.h).
//
// One asm template for all of them. The accumulators are operands %0 .. %(kN / 2 - 1) (the
// register lists below, cut at 32, 64 or 128), then a, b and the "accumulate" flag.
#define COURSE_WGMMA_D32                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define COURSE_WGMMA_D64                                                        \
  COURSE_WGMMA_D32                                                              \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "    \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, " \
  "%61, %62, %63"
#define COURSE_WGMMA_D128                                                       \
  COURSE_WGMMA_D64                                                              \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "    \
  "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, " \
  "%93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, "     \
  "%106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "    \
  "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// Eight accumulators from d[i] on, as read-write asm operands.
#define COURSE_WGMMA_F8(i)                                                                    \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define COURSE_WGMMA_F32 \
  COURSE_WGMMA_F8(0), COURSE_WGMMA_F8(8), COURSE_WGMMA_F8(16), COURSE_WGMMA_F8(24)
#define COURSE_WGMMA_F64                                                           \
  COURSE_WGMMA_F32, COURSE_WGMMA_F8(32), COURSE_WGMMA_F8(40), COURSE_WGMMA_F8(48), \
      COURSE_WGMMA_F8(56)
#define COURSE_WGMMA_F128                                                                   \
  COURSE_WGMMA_F64, COURSE_WGMMA_F8(64), COURSE_WGMMA_F8(72), COURSE_WGMMA_F8(80),          \
      COURSE_WGMMA_F8(88), COURSE_WGMMA_F8(96), COURSE_WGMMA_F8(104), COURSE_WGMMA_F8(112), \
      COURSE_WGMMA_F8(120)
// SHAPE "m64n128k16", TYPE "f16" or "bf16", TRANS_B "1" (B MN-major) or "0" (B K-major);
// AB and SCALE: the operand numbers of a, b and the flag, which come after the accumulators.
#define COURSE_WGMMA(SHAPE, TYPE, TRANS_B, D_LIST, AB, SCALE, ...)                              \
  asm volatile("{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, " SCALE                      \
               ", 0;\n"                                                                         \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " {" D_LIST "}, " AB \
               ", accumulate, 1, 1, 0, " TRANS_B ";\n}\n"                                       \
               : __VA_ARGS__                                                                    \
               : "l"(a), "l"(b), "r"(1))
#define COURSE_WGMMA_TYPED(SHAPE, TRANS_B, D_LIST, AB, SCALE, ...)        \
  if constexpr (std::is_same_v<Element, __half>) {                        \
    COURSE_WGMMA(SHAPE, "f16", TRANS_B, D_LIST, AB, SCALE, __VA_ARGS__);  \
  } else {                                                                \
    COURSE_WGMMA(SHAPE, "bf16", TRANS_B, D_LIST, AB, SCALE, __VA_ARGS__); \
  }
#define COURSE_WGMMA_SIZED(TRANS_B)                                                    \
  if constexpr (kN == 64) {                                                            \
    COURSE_WGMMA_TYPED("m64n64k16", TRANS_B, COURSE_WGMMA_D32, "%32, %33", "%34",      \
                       COURSE_WGMMA_F32)                                               \
  } else if constexpr (kN == 128) {                                                    \
    COURSE_WGMMA_TYPED("m64n128k16", TRANS_B, COURSE_WGMMA_D64, "%64, %65", "%66",     \
                       COURSE_WGMMA_F64)                                               \
  } else {                                                                             \
    COURSE_WGMMA_TYPED("m64n256k16", TRANS_B, COURSE_WGMMA_D128, "%128, %129", "%130", \
                       COURSE_WGMMA_F128)                                              \
  }

template <int kN, bool kBRowsHoldN, typename Element>
__device__ __forceinline__ void wgmma_64xNx16(float (&d)[kN / 2], std::uint64_t a,
                                              std::uint64_t b) {
  static_assert(kN == 64 || kN == 128 || kN == 256, "wgmma_64xNx16: N = 64, 128 or 256");
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma_64xNx16: float16 (__half) or bfloat16 (__nv_bfloat16) inputs");
#if defined(COURSE_HAVE_WGMMA)
  if constexpr (kBRowsHoldN) {
    COURSE_WGMMA_SIZED("1")
  } else {
    COURSE_WGMMA_SIZED("0")
  }
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}
#undef COURSE_WGMMA_SIZED
#undef COURSE_WGMMA_TYPED
#undef COURSE_WGMMA
#undef COURSE_WGMMA_F128
#undef COURSE_WGMMA_F64
#undef COURSE_WGMMA_F32
#undef COURSE_WGMMA_F8
#undef COURSE_WGMMA_D128
#undef COURSE_WGMMA_D64
#undef COURSE_WGMMA_D32

// m2.08's product: 64 x 256 x 16 with B MN-major (rows of B hold N).
template <typename Element>
__device__ __forceinline__ void wgmma_64x256x16(float (&d)[128], std::uint64_t a, std::uint64_t b) {
  wgmma_64xNx16<256, true, Element>(d, a, b);
}

}  // namespace course::hopper
