// Given code for exercise m3.02 (dlpack_buffer.cpp): the capsule names and counters, the
// library's memory (Storage) and what one export holds (ExportContext), the consumer's types
// (Imported, ConsumerStream), the Buffer class and its export, the consumer's entry points and
// the module's definition. Your skeleton and the reference both include it; the functions you
// write are in dlpack_buffer.cpp.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

// PyTorch's copy of dlpack.h: DLPack 0.6 in PyTorch 1.13, 1.3 in PyTorch 2.11.
#include <ATen/dlpack.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#if COURSE_WITH_CUDA
#include <cuda_runtime.h>

#include "course/cuda_check.h"
#include "slow_fill.h"
#include "vector_add.h"  // m1.01's kernel, yours or the reference (load_extension.py)
#endif

namespace py = pybind11;

// The versioned struct (DLManagedTensorVersioned, with flags) exists from DLPack 1.0 on.
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define COURSE_DLPACK_VERSIONED 1
#else
#define COURSE_DLPACK_VERSIONED 0
#endif

namespace course::m3_02 {
// Everything here is internal to this module (and pybind11 wants its types hidden).
namespace {

// The capsule names of the DLPack Python specification. They must be string literals (or
// otherwise live forever): a capsule keeps the pointer, not a copy.
constexpr const char* kLegacyName = "dltensor";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

// Counters the tests read through stats(): how many buffers' memory is alive, how many
// exports were made and how many of them were released (their deleter ran).
std::atomic<std::int64_t> g_live_storages{0};
std::atomic<std::int64_t> g_exports{0};
std::atomic<std::int64_t> g_released{0};
// Set only by the stream-ordering test: skip the event wait, to show the race it prevents.
std::atomic<bool> g_skip_stream_wait{false};

// BufferError is what the DLPack specification asks producers to raise when they cannot
// export as asked; pybind11 has no C++ exception for it, so set it by hand.
[[noreturn]] void throw_buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

// Keeps a pending Python error (if any) aside while a capsule destructor runs, which can
// happen in the middle of raising an exception. (Python 3.12 replaced PyErr_Fetch.)
class PreservedPythonError {
 public:
#if PY_VERSION_HEX >= 0x030C0000
  PreservedPythonError() : error_(PyErr_GetRaisedException()) {}
  ~PreservedPythonError() { PyErr_SetRaisedException(error_); }

 private:
  PyObject* error_;
#else
  PreservedPythonError() { PyErr_Fetch(&type_, &value_, &traceback_); }
  ~PreservedPythonError() { PyErr_Restore(type_, value_, traceback_); }

 private:
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
#endif
};

// Where memory lives, in DLPack's words: (kDLCPU, 0) or (kDLCUDA, GPU number).
struct Device {
  DLDeviceType type = kDLCPU;
  int id = 0;
  bool is_cuda() const { return type == kDLCUDA; }
  bool operator==(const Device& other) const { return type == other.type && id == other.id; }
  std::string name() const { return (is_cuda() ? "cuda:" : "cpu:") + std::to_string(id); }
};

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t size : shape) n *= size;
  return n;
}

std::string shape_string(const std::int64_t* shape, int ndim) {
  std::string text = "[";
  for (int d = 0; d < ndim; ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

// One allocation: the library's own memory, and on the GPU the library's own stream (where
// its kernels run) and an event (to tell consumers' streams when that work is done).
// Buffers share a Storage through std::shared_ptr; so does every export that is not yet
// released, which is what keeps the memory alive while PyTorch still uses it.
struct Storage {
  float* data = nullptr;
  std::int64_t elements = 0;
  Device device;
#if COURSE_WITH_CUDA
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
#endif

  Storage(std::int64_t n, Device where) : elements(n), device(where) {
    if (n < 0)
      throw py::value_error("Buffer: the number of elements must be >= 0, got " +
                            std::to_string(n));
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    if (device.is_cuda()) {
#if COURSE_WITH_CUDA
      int current = 0;
      CUDA_CHECK(cudaGetDevice(&current));
      if (device.id != current) {
        throw py::value_error("Buffer: " + device.name() + " is not the current device (cuda:" +
                              std::to_string(current) + "); make it current first");
      }
      // Non-blocking: the library's stream does not wait for the legacy default stream (and
      // the legacy default stream does not wait for it), like PyTorch's side streams. Any
      // order between our work and a consumer's must come from DLPack's stream handshake.
      try {
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        if (bytes > 0) CUDA_CHECK(cudaMalloc(&data, bytes));
      } catch (...) {
        release_cuda();  // what was created before the failure
        throw;
      }
#else
      throw std::runtime_error(
          "Buffer: this build has no CUDA (the PyTorch it was built with has none)");
#endif
    } else if (bytes > 0) {
      // 64-byte aligned, like PyTorch's CPU allocator; aligned_alloc wants a multiple of it.
      data = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
      if (data == nullptr) throw std::bad_alloc();
    }
    ++g_live_storages;
  }

  ~Storage() {
    if (device.is_cuda()) {
#if COURSE_WITH_CUDA
      release_cuda();
#endif
    } else {
      std::free(data);
    }
    --g_live_storages;
  }

#if COURSE_WITH_CUDA
  // No exceptions here: this runs in destructors, maybe from a DLPack deleter on another
  // thread, maybe while Python shuts down (when the CUDA runtime may be gone already and
  // every call fails; then there is nothing left to free anyway).
  void release_cuda() noexcept {
    if (data != nullptr) cudaFree(data);  // waits for the GPU to finish with it
    if (event != nullptr) cudaEventDestroy(event);
    if (stream != nullptr) cudaStreamDestroy(stream);
    data = nullptr;
    event = nullptr;
    stream = nullptr;
  }
#endif

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

// What one export hands to the consumer: the struct DLPack defines, plus what it points
// to (shape and strides arrays) and a share of the storage. manager_ctx points here; the
// deleter deletes it, which gives the share back.
struct ExportContext {
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensor legacy{};
#if COURSE_DLPACK_VERSIONED
  DLManagedTensorVersioned versioned{};
#endif
  ExportContext() { ++g_exports; }
  ~ExportContext() { ++g_released; }
};

// A tensor taken from a capsule: the consumer owns it until release(), which calls the
// producer's deleter. The destructor releases too, so an exception on the way (a failed
// check) cannot leak it, and `managed` is cleared so it can never be released twice.
struct Imported {
  void* managed = nullptr;  // DLManagedTensor* or DLManagedTensorVersioned*
  bool versioned = false;
  DLTensor* tensor = nullptr;
  std::uint64_t flags = 0;
  int major = 0;  // the DLPack version the producer wrote (0 for a legacy capsule)
  int minor = 0;

  Imported() = default;
  Imported(const Imported&) = delete;
  Imported& operator=(const Imported&) = delete;
  ~Imported() { release(); }
  void release() noexcept;
};

// How the consumer reads an import: the stream its kernel runs on, as the integer it passes
// to the producer's __dlpack__ (1 for the legacy default stream) and as a CUDA handle.
struct ConsumerStream {
  py::object as_int = py::none();  // None for CPU producers
#if COURSE_WITH_CUDA
  cudaStream_t handle = nullptr;
#endif
};

// The functions you write in dlpack_buffer.cpp, declared here for the code below.
void fill_dltensor(DLTensor& tensor, ExportContext& context, float* first);
void delete_legacy(DLManagedTensor* self);
#if COURSE_DLPACK_VERSIONED
void delete_versioned(DLManagedTensorVersioned* self);
#endif
void capsule_destructor(PyObject* capsule);
bool wants_versioned(const py::object& max_version);
bool wants_copy(const py::object& copy);
std::uint64_t export_flags(bool read_only, bool copied);
#if COURSE_WITH_CUDA
bool consumer_stream(const py::object& stream, cudaStream_t* out);
void order_before_consumer(Storage& storage, cudaStream_t consumer);
#endif
py::object request_capsule(const py::handle& object, const ConsumerStream& stream);
std::unique_ptr<Imported> take_ownership(const py::object& capsule);
float* checked_elements(const Imported& imported, const char* what, bool will_write);

// Makes the capsule; if that fails, the export is released here, so nothing leaks.
py::object make_capsule(std::unique_ptr<ExportContext> context, bool versioned) {
  void* pointer = &context->legacy;
  const char* name = kLegacyName;
#if COURSE_DLPACK_VERSIONED
  if (versioned) {
    pointer = &context->versioned;
    name = kVersionedName;
  }
#else
  (void)versioned;
#endif
  PyObject* capsule = PyCapsule_New(pointer, name, capsule_destructor);
  if (capsule == nullptr) throw py::error_already_set();  // context is deleted on the way out
  context.release();  // from now on the capsule (or its consumer) owns it
  return py::reinterpret_steal<py::object>(capsule);
}

class Buffer {
 public:
  Buffer(std::vector<std::int64_t> shape, const std::string& device, bool read_only)
      : shape_(std::move(shape)), read_only_(read_only) {
    for (std::int64_t size : shape_) {
      if (size < 0)
        throw py::value_error("Buffer: sizes must be >= 0, got " +
                              shape_string(shape_.data(), ndim()));
    }
    storage_ = std::make_shared<Storage>(product(shape_), parse_device(device));
  }

  // A view of rows [row, shape[0]) of `base`: the same storage, `row` rows further in.
  Buffer(const Buffer& base, std::int64_t row) : Buffer(base) {
    if (ndim() == 0 || row < 0 || row > shape_[0]) {
      throw py::index_error("Buffer.view_from: row " + std::to_string(row) + " is outside shape " +
                            shape_string(shape_.data(), ndim()));
    }
    offset_ += row * (product(shape_) / (shape_[0] ? shape_[0] : 1));
    shape_[0] -= row;
  }

  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return product(shape_); }
  float* first() const { return storage_->data == nullptr ? nullptr : storage_->data + offset_; }
  const Device& device() const { return storage_->device; }

  py::object dlpack(const py::object& stream, const py::object& max_version,
                    const py::object& dl_device, const py::object& copy) const {
    if (!dl_device.is_none()) {
      const auto wanted = dl_device.cast<std::tuple<int, int>>();
      if (std::get<0>(wanted) != device().type || std::get<1>(wanted) != device().id) {
        throw_buffer_error("Buffer.__dlpack__: cannot export to device (" +
                           std::to_string(std::get<0>(wanted)) + ", " +
                           std::to_string(std::get<1>(wanted)) + "): this buffer is on " +
                           device().name() + " and the library copies only within a device");
      }
    }
    const bool versioned = wants_versioned(max_version);
    const bool copied = wants_copy(copy);
    std::shared_ptr<Storage> storage = storage_;
    float* data = first();
    if (copied) {
      storage = std::make_shared<Storage>(numel(), device());
      data = storage->data;
      copy_elements(*storage, data);
    }

    if (device().is_cuda()) {
#if COURSE_WITH_CUDA
      cudaStream_t consumer = nullptr;
      if (consumer_stream(stream, &consumer) && !g_skip_stream_wait)
        order_before_consumer(*storage, consumer);
#endif
    } else if (!stream.is_none() &&
               !(py::isinstance<py::int_>(stream) && stream.cast<std::int64_t>() == -1)) {
      throw_buffer_error("Buffer.__dlpack__: a CPU buffer takes stream=None, got stream=" +
                         py::str(stream).cast<std::string>());
    }

    auto context = std::make_unique<ExportContext>();
    context->storage = storage;
    context->shape = shape_;
    // A copy is a new allocation nobody else writes to: read-only no longer applies.
    const std::uint64_t flags = export_flags(read_only_ && !copied, copied);
#if COURSE_DLPACK_VERSIONED
    if (versioned) {
      DLManagedTensorVersioned& managed = context->versioned;
      managed.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
      managed.manager_ctx = context.get();
      managed.deleter = delete_versioned;
      managed.flags = flags;
      fill_dltensor(managed.dl_tensor, *context, data);
      return make_capsule(std::move(context), true);
    }
#else
    (void)versioned;
    (void)flags;
#endif
    DLManagedTensor& managed = context->legacy;
    managed.manager_ctx = context.get();
    managed.deleter = delete_legacy;
    fill_dltensor(managed.dl_tensor, *context, data);
    return make_capsule(std::move(context), false);
  }

  py::tuple dlpack_device() const {
    return py::make_tuple(static_cast<int>(device().type), device().id);
  }

  void fill(float value) {
    if (device().is_cuda()) {
#if COURSE_WITH_CUDA
      launch_fill(first(), numel(), value, storage_->stream);  // queued on the library's stream
#endif
    } else {
      for (std::int64_t i = 0; i < numel(); ++i) first()[i] = value;
    }
  }

  // The stream-ordering test's producer: spin for `seconds` on the library's stream, then
  // write `value`; returns at once, while the GPU is still spinning.
  void fill_slowly(float value, double seconds) {
    if (!device().is_cuda()) throw py::value_error("Buffer.fill_slowly: needs a CUDA buffer");
#if COURSE_WITH_CUDA
    launch_spin_then_fill(first(), numel(), value, static_cast<std::int64_t>(seconds * 1e9),
                          storage_->stream);
#else
    (void)value;
    (void)seconds;
#endif
  }

  void synchronize() const {
#if COURSE_WITH_CUDA
    if (device().is_cuda()) CUDA_CHECK(cudaStreamSynchronize(storage_->stream));
#endif
  }

  // A copy of the elements, read by the library (waits for the library's own stream; work
  // that consumers queued on their streams must be finished by the caller).
  std::vector<float> read() const {
    std::vector<float> values(static_cast<std::size_t>(numel()));
    if (values.empty()) return values;
    if (device().is_cuda()) {
#if COURSE_WITH_CUDA
      synchronize();
      CUDA_CHECK(cudaMemcpy(values.data(), first(), values.size() * sizeof(float),
                            cudaMemcpyDeviceToHost));
#endif
    } else {
      std::memcpy(values.data(), first(), values.size() * sizeof(float));
    }
    return values;
  }

  std::uintptr_t ptr() const { return reinterpret_cast<std::uintptr_t>(first()); }
  std::uintptr_t stream_handle() const {
#if COURSE_WITH_CUDA
    return reinterpret_cast<std::uintptr_t>(storage_->stream);
#else
    return 0;
#endif
  }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  bool read_only() const { return read_only_; }
  std::int64_t nbytes() const { return numel() * static_cast<std::int64_t>(sizeof(float)); }

 private:
  static Device parse_device(const std::string& text) {
    if (text == "cpu") return Device{kDLCPU, 0};
    if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
#if COURSE_WITH_CUDA
      int id = 0;
      if (text == "cuda") {
        CUDA_CHECK(cudaGetDevice(&id));
      } else {
        id = std::stoi(text.substr(5));
      }
      return Device{kDLCUDA, id};
#else
      throw py::value_error("Buffer: device '" + text + "' needs CUDA, and this build has none");
#endif
    }
    throw py::value_error("Buffer: device must be 'cpu', 'cuda' or 'cuda:N', got '" + text + "'");
  }

  // Copies this view's elements into `target` (a new storage on the same device): after the
  // library's queued work, on the new storage's stream, which the export then orders.
  void copy_elements(Storage& target, float* destination) const {
    (void)target;  // used by the CUDA branch only
    const std::size_t bytes = static_cast<std::size_t>(numel()) * sizeof(float);
    if (bytes == 0) return;
    if (device().is_cuda()) {
#if COURSE_WITH_CUDA
      CUDA_CHECK(cudaEventRecord(storage_->event, storage_->stream));
      CUDA_CHECK(cudaStreamWaitEvent(target.stream, storage_->event, 0));
      CUDA_CHECK(
          cudaMemcpyAsync(destination, first(), bytes, cudaMemcpyDeviceToDevice, target.stream));
#endif
    } else {
      std::memcpy(destination, first(), bytes);
    }
  }

  std::shared_ptr<Storage> storage_;
  std::vector<std::int64_t> shape_;
  std::int64_t offset_ = 0;  // in elements, from the start of the storage
  bool read_only_ = false;
};

Device device_of(const DLTensor& t) { return Device{t.device.device_type, t.device.device_id}; }

std::int64_t numel_of(const DLTensor& t) {
  std::int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

ConsumerStream parse_consumer_stream(const py::object& stream, bool cuda) {
  ConsumerStream result;
  if (!cuda) return result;
#if COURSE_WITH_CUDA
  if (!consumer_stream(stream, &result.handle)) {
    throw py::value_error(
        "add_in_place: stream=-1 is for producers; name the stream the kernel runs on");
  }
  // What the producer is told: the same integer, or 1 for "the legacy default stream".
  result.as_int = stream.is_none() ? py::int_(1) : stream;
#else
  (void)stream;
#endif
  return result;
}

// Where an object's memory is, before asking it for a capsule (for the stream argument).
bool is_cuda_object(const py::handle& object) {
  if (PyCapsule_CheckExact(object.ptr()) || !py::hasattr(object, "__dlpack_device__")) return false;
  return std::get<0>(object.attr("__dlpack_device__")().cast<std::tuple<int, int>>()) == kDLCUDA;
}

// target += addend, in place, on the memory of any two DLPack producers (or capsules).
void add_in_place(const py::object& target_object, const py::object& addend_object,
                  const py::object& stream) {
  const bool cuda = is_cuda_object(target_object) || is_cuda_object(addend_object);
  const ConsumerStream consumer = parse_consumer_stream(stream, cuda);
  std::unique_ptr<Imported> target = take_ownership(request_capsule(target_object, consumer));
  std::unique_ptr<Imported> addend = take_ownership(request_capsule(addend_object, consumer));
  const DLTensor& t = *target->tensor;
  const DLTensor& a = *addend->tensor;
  const Device device = device_of(t);
  if (!(device == device_of(a))) {
    throw py::value_error("add_in_place: target and addend must be on the same device, got " +
                          device.name() + " and " + device_of(a).name());
  }
  if (device.type != kDLCPU && device.type != kDLCUDA) {
    throw py::value_error("add_in_place: DLPack device type " + std::to_string(device.type) +
                          " is not supported (only kDLCPU = 1 and kDLCUDA = 2)");
  }
  if (t.ndim != a.ndim || !std::equal(t.shape, t.shape + t.ndim, a.shape)) {
    throw py::value_error("add_in_place: target has shape " + shape_string(t.shape, t.ndim) +
                          " and addend " + shape_string(a.shape, a.ndim) + "; they must be equal");
  }
  float* x = checked_elements(*target, "target", true);
  const float* y = checked_elements(*addend, "addend", false);
  const std::int64_t n = numel_of(t);
  // Overlapping but different ranges would race between GPU threads (one thread's write
  // is another's read); the very same range is fine: each element is read, then written,
  // by one thread.
  const std::uintptr_t xs = reinterpret_cast<std::uintptr_t>(x),
                       ys = reinterpret_cast<std::uintptr_t>(y);
  const std::uintptr_t bytes = static_cast<std::uintptr_t>(n) * sizeof(float);
  if (n > 0 && xs != ys && xs < ys + bytes && ys < xs + bytes) {
    throw py::value_error(
        "add_in_place: target and addend overlap without being the same elements");
  }
  if (n == 0) return;
  if (device.is_cuda()) {
#if COURSE_WITH_CUDA
    int current = 0;
    CUDA_CHECK(cudaGetDevice(&current));
    if (device.id != current) {
      throw py::value_error("add_in_place: the memory is on " + device.name() +
                            " but the current device is cuda:" + std::to_string(current));
    }
    // m1.01's kernel with c == a. Its pointers are __restrict__, which promises no aliasing;
    // here each element is loaded and then stored by the same thread, the store depending
    // on the loads, so no reordering the promise allows can change the result.
    course::impl::vector_add(x, y, x, n, consumer.handle);
    // Wait before the deleters run: once released, the producer may free or reuse the
    // memory, and our kernel must be done with it by then.
    CUDA_CHECK(cudaStreamSynchronize(consumer.handle));
#else
    throw py::value_error("add_in_place: the memory is on CUDA and this build has no CUDA");
#endif
  } else {
    for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
  }
  // target and addend are released here (their destructors call the deleters once each).
}

// What an import sees, for the tests and the benchmark: the capsule is taken and released.
py::dict describe(const py::object& object, const py::object& stream) {
  const ConsumerStream consumer = parse_consumer_stream(stream, is_cuda_object(object));
  std::unique_ptr<Imported> imported = take_ownership(request_capsule(object, consumer));
  const DLTensor& t = *imported->tensor;
  py::dict info;
  info["data"] = reinterpret_cast<std::uintptr_t>(t.data);
  info["byte_offset"] = t.byte_offset;
  info["device"] = py::make_tuple(static_cast<int>(t.device.device_type), t.device.device_id);
  info["dtype"] = py::make_tuple(static_cast<int>(t.dtype.code), static_cast<int>(t.dtype.bits),
                                 static_cast<int>(t.dtype.lanes));
  info["shape"] = std::vector<std::int64_t>(t.shape, t.shape + t.ndim);
  info["strides"] =
      t.strides == nullptr
          ? py::object(py::none())
          : py::object(py::cast(std::vector<std::int64_t>(t.strides, t.strides + t.ndim)));
  info["versioned"] = imported->versioned;
  info["version"] = py::make_tuple(imported->major, imported->minor);
  info["flags"] = imported->flags;
  return info;
}

}  // namespace
}  // namespace course::m3_02

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace course::m3_02;
  m.doc() =
      "m3.02: a library-owned float32 buffer exchanged through DLPack, and an in-place import";
  m.attr("WITH_CUDA") = static_cast<bool>(COURSE_WITH_CUDA);
#if COURSE_DLPACK_VERSIONED
  m.attr("DLPACK_HEADER_VERSION") = py::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
#else
  m.attr("DLPACK_HEADER_VERSION") = py::make_tuple(0, DLPACK_VERSION / 10 % 10);
#endif
  py::class_<Buffer>(m, "Buffer", "float32 memory the library allocates and owns")
      .def(py::init<std::vector<std::int64_t>, const std::string&, bool>(), py::arg("shape"),
           py::arg("device") = "cpu", py::arg("read_only") = false)
      .def("__dlpack__", &Buffer::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &Buffer::dlpack_device)
      .def(
          "view_from", [](const Buffer& self, std::int64_t row) { return Buffer(self, row); },
          py::arg("row"), "the rows [row:] of this buffer: the same memory, row rows further in")
      .def("fill", &Buffer::fill, py::arg("value"),
           "writes value everywhere (on the library's stream)")
      .def("fill_slowly", &Buffer::fill_slowly, py::arg("value"), py::arg("seconds") = 0.15,
           "CUDA: spins `seconds` on the library's stream, then writes value; returns at once")
      .def("synchronize", &Buffer::synchronize, "waits for the library's stream")
      .def("read", &Buffer::read, "the elements, as the library reads them (flattened)")
      .def_property_readonly("ptr", &Buffer::ptr)
      .def_property_readonly("stream", &Buffer::stream_handle)
      .def_property_readonly("shape",
                             [](const Buffer& self) { return py::tuple(py::cast(self.shape())); })
      .def_property_readonly("nbytes", &Buffer::nbytes)
      .def_property_readonly("read_only", &Buffer::read_only);
  m.def("add_in_place", &add_in_place, py::arg("target"), py::arg("addend"), py::kw_only(),
        py::arg("stream") = py::none(),
        "target += addend in place, for any DLPack producers or capsules");
  m.def("describe", &describe, py::arg("object"), py::kw_only(), py::arg("stream") = py::none(),
        "imports, reports what the capsule says, and releases it");
  m.def(
      "stats",
      [] {
        py::dict d;
        d["live_buffers"] = g_live_storages.load();
        d["exports"] = g_exports.load();
        d["released"] = g_released.load();
        return d;
      },
      "counters: buffers alive, exports made, exports released (deleter calls)");
  m.def(
      "_testing_skip_stream_wait", [](bool skip) { g_skip_stream_wait = skip; }, py::arg("skip"),
      "tests only: export without the event wait, to show the race it prevents");
}
