// for_each_block_item: the block's threads share out kItems items, thread t taking items
// t, t + kThreads, t + 2 kThreads, ... (consecutive threads on consecutive items, so that
// their memory accesses coalesce).
//
// Why not the plain loop `for (int i = threadIdx.x; i < kItems; i += kThreads)`: its trip
// count depends on threadIdx.x, which the compiler cannot know, so it compiles a generic loop
// (a trip-count computation, a remainder, a branch per pass) and recomputes every address
// inside it. Here the trip count is the compile-time ceil(kItems / kThreads): the loop unrolls
// completely, and each pass's index is threadIdx.x plus a constant. In m2.07's part 3 the tile
// copies, issued by every warp right after each barrier, become straight code: on the 128 x 256
// step of its table the main loop drops from 649 to 236 instructions per k-tile, and from 17
// branches to 2 (cuobjdump -sass; month2/07_wmma/README.md, part 3). Unrolling keeps more
// values live, though: where a kernel is already at its register limit it can spill (ptxas -v
// says), and the plain loop is the better choice there.
#pragma once

namespace course {

// Calls item(i) for every i = tid + j * kThreads < kItems (j = 0, 1, ...). tid is the
// thread's index in a block of kThreads threads.
template <int kItems, int kThreads, class Item>
__device__ __forceinline__ void for_each_block_item(int tid, Item&& item) {
  static_assert(kItems >= 0 && kThreads > 0, "kItems >= 0 items for kThreads > 0 threads");
#pragma unroll
  for (int j = 0; j < (kItems + kThreads - 1) / kThreads; ++j) {
    const int i = tid + j * kThreads;
    if (kItems % kThreads == 0 || i < kItems) item(i);  // the test vanishes when it divides
  }
}

}  // namespace course
