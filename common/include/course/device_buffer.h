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

}  // namespace course
