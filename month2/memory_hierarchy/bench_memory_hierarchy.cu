// The memory hierarchy of this GPU, measured: the figures behind month2/README.md.
//
// Bandwidth rows (GBps), each a kernel that streams a working set of the given size:
//   memory_hierarchy/hbm_copy/bytes:...     float4 copy of a buffer far larger than L2:
//                                           DRAM (HBM) read + write bandwidth
//   memory_hierarchy/l2_read/bytes:...      float4 reads (__ldcg: past L1, into L2) of a set
//                                           that fits in L2, read many times per launch
//   memory_hierarchy/shared_read/bytes:...  float4 reads from shared memory, every block
//                                           reading its own 32 KiB over and over
// Latency rows (latency_ns): one thread follows a chain of pointers, each load's address
// the value of the previous load, so loads cannot overlap and the time per step is the
// latency of one load from where the chain lives:
//   memory_hierarchy/latency_shared/...     the chain in shared memory
//   memory_hierarchy/latency_l1/...         a 16 KiB chain in global memory, cached in L1
//   memory_hierarchy/latency_l2/...         an 8 MiB chain read past L1 (__ldcg), in L2
//   memory_hierarchy/latency_hbm/...        a 1 GiB chain read past L1, in random order:
//                                           DRAM (including the address translation misses
//                                           that random addresses over 1 GiB cause)
// The sizes of each level (registers and shared memory per multiprocessor, L2, DRAM) are
// recorded in the output's context from the device's properties.
//
//   ./build/month2/memory_hierarchy/m2_memory_hierarchy_bench
//   ./course bench memory_hierarchy   (the table, under the build folder)
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "course/benchmark.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gpu_timer.h"
#include "course/launch.h"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = in[i];
  }
}

// Reads `count` float4s `passes` times. The sum is written only if it equals a value it
// never takes, so the compiler must keep every load but the kernel writes nothing.
__global__ void __launch_bounds__(kThreads)
    l2_read_kernel(const float4* __restrict__ in, std::int64_t count, int passes, float* sink) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  float sum = 0.0f;
  for (int pass = 0; pass < passes; ++pass) {
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
      const float4 v = __ldcg(in + i);  // cache in L2 only, so L1 cannot serve the repeats
      sum += v.x + v.y + v.z + v.w;
    }
  }
  if (sum == -1.0f) *sink = sum;
}

constexpr int kSharedFloat4s = 32 * 1024 / 16;  // 32 KiB per block

__global__ void __launch_bounds__(kThreads) shared_read_kernel(int passes, float* sink) {
  __shared__ float4 tile[kSharedFloat4s];
  for (int i = threadIdx.x; i < kSharedFloat4s; i += blockDim.x) {
    tile[i] = make_float4(i, i + 1, i + 2, i + 3);
  }
  __syncthreads();
  float sum = 0.0f;
  for (int pass = 0; pass < passes; ++pass) {
#pragma unroll 8
    for (int i = threadIdx.x; i < kSharedFloat4s; i += kThreads) {
      const float4 v = tile[i];  // consecutive threads, consecutive float4s: no bank conflicts
      sum += v.x + v.y + v.z + v.w;
    }
  }
  if (sum == -1.0f) *sink = sum;
}

enum class ChaseIn { kShared, kL1, kL2 };

constexpr int kSharedChainEntries = 1024;

// One thread follows next[] `steps` times, starting at 0, and writes where it ended.
template <ChaseIn kWhere>
__global__ void chase_kernel(const std::uint32_t* __restrict__ next, std::int64_t steps,
                             std::uint32_t* end) {
  __shared__ std::uint32_t shared_next[kSharedChainEntries];
  std::uint32_t at = 0;
  if (kWhere == ChaseIn::kShared) {
    for (int i = 0; i < kSharedChainEntries; ++i) shared_next[i] = next[i];
    for (std::int64_t s = 0; s < steps; ++s) at = shared_next[at];
  } else if (kWhere == ChaseIn::kL1) {
    for (std::int64_t s = 0; s < steps; ++s) at = __ldca(next + at);  // cache in L1 and L2
  } else {
    for (std::int64_t s = 0; s < steps; ++s) at = __ldcg(next + at);  // cache in L2 only
  }
  *end = at;
}

// A chain that visits `entries` slots `spacing` entries apart in a random order (a single
// cycle, so the chain never settles into a short loop).
std::vector<std::uint32_t> random_chain(std::size_t entries, std::size_t spacing) {
  std::vector<std::uint32_t> order(entries);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 generator(12345);
  std::shuffle(order.begin() + 1, order.end(), generator);
  std::vector<std::uint32_t> next(entries * spacing, 0u);
  for (std::size_t i = 0; i < entries; ++i) {
    next[order[i] * spacing] = static_cast<std::uint32_t>(order[(i + 1) % entries] * spacing);
  }
  return next;
}

void record_sizes() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  benchmark::AddCustomContext("registers_per_sm_bytes", std::to_string(4LL * properties.regsPerMultiprocessor));
  benchmark::AddCustomContext("shared_memory_per_sm_bytes",
                              std::to_string(properties.sharedMemPerMultiprocessor));
  benchmark::AddCustomContext("global_memory_bytes", std::to_string(properties.totalGlobalMem));
}

void bm_hbm_copy(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0) / 16);
  course::DeviceBuffer<float4> in(count), out(count);
  CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));
  const int blocks = course::resident_blocks_to_fill_gpu(copy_kernel, kThreads);
  course::bench::measure(state, course::bench::Work{2.0 * in.bytes()}, [&](cudaStream_t stream) {
    copy_kernel<<<blocks, kThreads, 0, stream>>>(in.data(), out.data(), static_cast<std::int64_t>(count));
  });
}

void bm_l2_read(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0) / 16);
  constexpr int kPasses = 20;
  course::DeviceBuffer<float4> in(count);
  course::DeviceBuffer<float> sink(1);
  CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));
  const int blocks = course::resident_blocks_to_fill_gpu(l2_read_kernel, kThreads);
  // No L2 flush: the warm-up launches bring the set into L2, where every pass finds it.
  course::bench::measure(state, course::bench::Work{static_cast<double>(kPasses) * in.bytes()},
                         [&](cudaStream_t stream) {
                           l2_read_kernel<<<blocks, kThreads, 0, stream>>>(
                               in.data(), static_cast<std::int64_t>(count), kPasses, sink.data());
                         },
                         course::bench::L2Cache::keep);
}

void bm_shared_read(benchmark::State& state) {
  constexpr int kPasses = 200;
  course::DeviceBuffer<float> sink(1);
  const int blocks = course::resident_blocks_to_fill_gpu(shared_read_kernel, kThreads);
  const double bytes = static_cast<double>(blocks) * kPasses * kSharedFloat4s * 16.0;
  course::bench::measure(state, course::bench::Work{bytes}, [&](cudaStream_t stream) {
    shared_read_kernel<<<blocks, kThreads, 0, stream>>>(kPasses, sink.data());
  }, course::bench::L2Cache::keep);
  state.counters.erase("peak_pct");  // a share of the DRAM's peak means nothing here
}

template <ChaseIn kWhere>
void bm_latency(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  // L1 and shared: neighbouring 4-byte entries; L2 and DRAM: one entry per 128-byte line,
  // so every step is a new line.
  const std::size_t spacing = bytes <= 64 * 1024 ? 1 : 32;
  const auto chain = random_chain(bytes / 4 / spacing, spacing);
  course::DeviceBuffer<std::uint32_t> next(chain.size()), end(1);
  CUDA_CHECK(cudaMemcpy(next.data(), chain.data(), next.bytes(), cudaMemcpyHostToDevice));
  // 2^20 steps. For the DRAM chain they visit 2^20 lines, 128 MiB, twice the L2: the
  // warm-up leaves only the chain's last 60 MiB in L2, and a chain walked in the same order
  // again evicts each line before it comes back to it, so every step misses L2.
  const std::int64_t steps = 1 << 20;
  auto launch = [&] { chase_kernel<kWhere><<<1, 1>>>(next.data(), steps, end.data()); };
  launch();  // warm-up: loads the kernel, and brings small chains into the caches
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  course::GpuTimer timer;
  double total_ms = 0.0;
  for (auto _ : state) {
    timer.start();
    launch();
    timer.stop();
    const double ms = timer.elapsed_ms();
    state.SetIterationTime(ms / 1e3);
    total_ms += ms;
  }
  CUDA_CHECK_LAUNCH();
  state.counters["latency_ns"] = total_ms * 1e6 / static_cast<double>(state.iterations()) / steps;
  state.SetLabel("u32 loads");  // what each step reads: a 4-byte index, the next address
}

void register_all() {
  const std::int64_t l2_bytes = course::bench::device().l2_cache_bytes;
  auto bandwidth = [](const char* name, void (*body)(benchmark::State&), std::int64_t bytes) {
    course::bench::register_row(name, body)->ArgName("bytes")->Arg(bytes)->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
  bandwidth("memory_hierarchy/hbm_copy", bm_hbm_copy, std::int64_t{1} << 30);
  // A quarter of L2: the set fits even where L2 is split into halves that each keep their
  // own copy of what the other half's multiprocessors read.
  bandwidth("memory_hierarchy/l2_read", bm_l2_read, std::max<std::int64_t>(l2_bytes / 4 / 16 * 16, 1 << 20));
  bandwidth("memory_hierarchy/shared_read", bm_shared_read, kSharedFloat4s * 16);
  auto latency = [](const char* name, void (*body)(benchmark::State&), std::int64_t bytes) {
    course::bench::register_row(name, body)->ArgName("bytes")->Arg(bytes)->UseManualTime()
        ->Unit(benchmark::kMicrosecond)->Iterations(5);
  };
  latency("memory_hierarchy/latency_shared", bm_latency<ChaseIn::kShared>, kSharedChainEntries * 4);
  latency("memory_hierarchy/latency_l1", bm_latency<ChaseIn::kL1>, 16 * 1024);
  latency("memory_hierarchy/latency_l2", bm_latency<ChaseIn::kL2>, 8 << 20);
  latency("memory_hierarchy/latency_hbm", bm_latency<ChaseIn::kL2>, std::int64_t{1} << 30);
}

}  // namespace

int main(int argc, char** argv) {
  std::string why_not;
  if (course::cuda_device_available(&why_not)) {
    record_sizes();
    register_all();
  }
  return course::bench::run_benchmarks(argc, argv);
}
