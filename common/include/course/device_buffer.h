// DeviceBuffer<T>: an array in GPU memory that frees itself.
//
// The CUDA equivalent of a torch tensor's storage. cudaMalloc/cudaFree by hand leak
// memory as soon as an error (an exception, an early return) skips the free; this class
// frees in its destructor, so no error path needs a cleanup ladder (RAII).
//
//   DeviceBuffer<float> a = DeviceBuffer<float>::from_host(host_vector);
//   DeviceBuffer<float> c(n);
//   c.poison();                         // every byte 0xFF: a float NaN
//   my_kernel<<<...>>>(a.data(), c.data(), n);
//   std::vector<float> result = c.to_host();
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "course/cuda_check.h"

namespace course {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(&data_, bytes()));
  }
  static DeviceBuffer from_host(const std::vector<T>& host) {
    DeviceBuffer buffer(host.size());
    buffer.copy_from_host(host);
    return buffer;
  }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void copy_from_host(const std::vector<T>& host) {
    if (host.size() != count_) {
      throw std::invalid_argument("DeviceBuffer::copy_from_host: size mismatch");
    }
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

  // Fills every byte with 0xFF. For float, double, half and bfloat16 that is a NaN, which
  // no tolerance accepts, so any element a kernel forgets to write fails the test.
  void poison() {
    if (count_ > 0) CUDA_CHECK(cudaMemset(data_, 0xFF, bytes()));
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFree(data_);  // a destructor must not throw
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// GuardedDeviceBuffer<T>: `count` elements with kGuardElements poisoned elements before and
// after them, for tests. A kernel that writes past either end changes a guard (guards_intact
// says so); one that *uses* a value read past the end of an input gets NaN, which no
// tolerance accepts, even when it multiplies it by zero (NaN * 0 = NaN). 1024 elements keep
// data() as aligned as the allocation (4 KiB for float), so vector loads stay legal.
//
//   GuardedDeviceBuffer<float> y(n);            // everything NaN, guards included
//   launch(..., y.data());
//   std::vector<float> all = y.download_all();  // guard, the n elements, guard
//   if (!y.guards_intact(all)) ...              // written out of bounds
//   std::vector<float> out = y.inside(all);     // the n elements
template <typename T>
class GuardedDeviceBuffer {
 public:
  static constexpr std::size_t kGuardElements = 1024;

  explicit GuardedDeviceBuffer(std::size_t count)
      : count_(count), buffer_(count + 2 * kGuardElements) {
    buffer_.poison();
  }
  // Copies `values` (count() of them, or none) between the guards.
  void upload(const std::vector<T>& values) {
    if (values.empty()) return;
    if (values.size() != count_) {
      throw std::invalid_argument("GuardedDeviceBuffer::upload: size mismatch");
    }
    CUDA_CHECK(cudaMemcpy(data(), values.data(), values.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
  }
  T* data() { return buffer_.data() + kGuardElements; }
  std::size_t count() const { return count_; }
  std::vector<T> download_all() const { return buffer_.to_host(); }
  // Whether the guards of a download_all() result still hold the poison (every byte 0xFF).
  bool guard_before_intact(const std::vector<T>& all) const {
    return all_poison(all.data(), all.data() + kGuardElements);
  }
  bool guard_after_intact(const std::vector<T>& all) const {
    return all_poison(all.data() + kGuardElements + count_, all.data() + all.size());
  }
  bool guards_intact(const std::vector<T>& all) const {
    return guard_before_intact(all) && guard_after_intact(all);
  }
  // The count() elements between the guards of a download_all() result.
  std::vector<T> inside(const std::vector<T>& all) const {
    return std::vector<T>(all.begin() + kGuardElements, all.begin() + kGuardElements + count_);
  }

 private:
  static bool all_poison(const T* begin, const T* end) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(begin);
    const auto* last = reinterpret_cast<const unsigned char*>(end);
    for (; bytes != last; ++bytes) {
      if (*bytes != 0xFF) return false;
    }
    return true;
  }

  std::size_t count_;
  DeviceBuffer<T> buffer_;
};

}  // namespace course
