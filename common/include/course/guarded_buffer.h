// GuardedBuffer<T>: a device array between two zones of poisoned "guard" elements, for the
// tests that must catch a kernel writing (or reading) outside its array.
//
//   auto a = course::GuardedBuffer<float>::from_host(values);  // [guard | values | guard]
//   course::GuardedBuffer<float> c(n);                          // [guard | n x poison | guard]
//   kernel(a.data(), c.data(), n);
//   const auto out = c.download();
//   EXPECT_TRUE(course::verify(out.values, expected, tol));
//   EXPECT_FALSE(out.first_stray_write) << "wrote c[" << *out.first_stray_write << "]";
//
// Every element starts as the poison (DeviceBuffer::poison: a NaN), so a read outside the
// array turns a result into NaN, an element the kernel never wrote fails verify() as "never
// written", and a write outside it shows in first_stray_write. `offset` places the array
// that many elements after an aligned start (tests of misaligned pointers); the front guard
// of kGuard elements (4 KiB of floats) keeps an offset-0 array as aligned as the allocation.
// `guard_after` makes the zone after the array longer, for kernels whose wrong indices can
// reach further.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/verify.h"

namespace course {

template <typename T>
class GuardedBuffer {
 public:
  static constexpr std::size_t kGuard = 1024;

  explicit GuardedBuffer(std::size_t count, std::size_t offset = 0,
                         std::size_t guard_after = kGuard)
      : count_(count), front_(kGuard + offset), storage_(kGuard + offset + count + guard_after) {
    storage_.poison();
  }

  // The array holds `values`; the guards (and the offset) are poison.
  static GuardedBuffer from_host(const std::vector<T>& values, std::size_t offset = 0,
                                 std::size_t guard_after = kGuard) {
    GuardedBuffer buffer(values.size(), offset, guard_after);
    if (!values.empty()) {
      CUDA_CHECK(cudaMemcpy(buffer.data(), values.data(), values.size() * sizeof(T),
                            cudaMemcpyHostToDevice));
    }
    return buffer;
  }

  T* data() { return storage_.data() + front_; }
  const T* data() const { return storage_.data() + front_; }
  std::size_t size() const { return count_; }

  struct Contents {
    std::vector<T> values;  // the array, as the kernel left it
    // The first element outside the array that is no longer the poison, as an index relative
    // to data() (negative: before the array); empty when every guard is untouched.
    std::optional<std::int64_t> first_stray_write;
  };

  // Downloads the whole allocation once and splits it into the array and the guard report.
  Contents download() const {
    const std::vector<T> all = storage_.to_host();
    Contents contents;
    contents.values.assign(all.begin() + front_, all.begin() + front_ + count_);
    for (std::size_t i = 0; i < all.size(); ++i) {
      const bool inside = i >= front_ && i < front_ + count_;
      if (!inside && !is_poison(all[i])) {
        contents.first_stray_write =
            static_cast<std::int64_t>(i) - static_cast<std::int64_t>(front_);
        break;
      }
    }
    return contents;
  }

 private:
  std::size_t count_;
  std::size_t front_;  // elements before the array: the front guard and the offset
  DeviceBuffer<T> storage_;
};

}  // namespace course
