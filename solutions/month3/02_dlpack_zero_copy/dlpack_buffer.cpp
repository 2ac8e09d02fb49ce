// Exercise m3.02: DLPack, zero-copy exchange between a library and PyTorch. (Reference solution.)
//
// A small library with its own memory: `Buffer` allocates float32 arrays itself (cudaMalloc
// on the GPU, an aligned malloc on the CPU) and owns a CUDA stream of its own. Nothing here
// includes a PyTorch header: the library speaks DLPack, the C struct that torch, CuPy, NumPy,
// JAX and others all read, and pybind11 makes it a Python module. (<ATen/dlpack.h> is only
// PyTorch's copy of the DLPack header: plain C, no PyTorch types.)
//
// Two directions:
//   export  Buffer.__dlpack__() hands out a capsule that describes the buffer's memory,
//           so `torch.from_dlpack(buf)` is a tensor on the same bytes, with no copy;
//   import  add_in_place(target, addend) takes any object with __dlpack__ (a torch
//           tensor, a CuPy or NumPy array, one of our Buffers) or a raw capsule, and runs the
//           m1.01 vector_add kernel on its memory, in place.
// What changed from m1.05: there, PyTorch owned every tensor and called our kernels; here our
// library owns memory PyTorch uses, and PyTorch owns memory our library uses. Read README.md.
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

// ---- given: versions, counters, errors and the buffer (you do not edit this block)
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
// ---- end of given

// Parts a and b (TODOs m3.02a and m3.02b of the skeleton): describe the memory, give it back once.
//
// fill_dltensor: DLPack describes an array by its first element's address, device, dtype,
// shape and strides. Strides count ELEMENTS (not bytes, unlike NumPy's), and `data` is where
// element [0, 0, ...] is: the view's offset is folded into `data` and byte_offset is 0,
// because PyTorch 1.13 ignores byte_offset (it silently reads the wrong elements) and 2.11
// refuses a non-zero one. An empty array has data == NULL, as the specification asks.
void fill_dltensor(DLTensor& tensor, ExportContext& context, float* first) {
  const std::int64_t n = product(context.shape);
  tensor.data = n == 0 ? nullptr : first;
  tensor.device = DLDevice{context.storage->device.type, context.storage->device.id};
  tensor.ndim = static_cast<int>(context.shape.size());
  tensor.dtype = DLDataType{static_cast<std::uint8_t>(kDLFloat), 32, 1};
  tensor.shape = context.shape.data();
  // Compact row-major strides, in elements: the last dimension 1, each one before it the
  // product of the sizes after it. (NULL would mean the same, but some consumers have
  // crashed on NULL, so say it explicitly.)
  context.strides.assign(context.shape.size(), 1);
  for (int d = tensor.ndim - 2; d >= 0; --d)
    context.strides[d] = context.strides[d + 1] * context.shape[d + 1];
  tensor.strides = context.strides.data();
  tensor.byte_offset = 0;
}

// The deleters: the consumer calls one exactly once, when it no longer needs the memory,
// maybe on another thread and without the GIL. Deleting the context gives back its share
// of the storage; the memory is freed when the last share (a Buffer or an export) goes.
// Nothing here touches Python, so no GIL is needed.
void delete_legacy(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }
#if COURSE_DLPACK_VERSIONED
void delete_versioned(DLManagedTensorVersioned* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
}
#endif

// The capsule's destructor runs when Python frees the capsule object. A consumer that took
// the tensor renamed the capsule to "used_..." and will call the deleter itself; so the
// deleter runs here only when the capsule still has its unused name (nobody consumed it).
// It saves and restores any pending Python error, since it may run during error handling.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    PreservedPythonError keep;
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
#if COURSE_DLPACK_VERSIONED
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    PreservedPythonError keep;
    auto* managed =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
#endif
}

// Part c (TODO m3.02c of the skeleton): what the consumer asked for.
// A versioned capsule only for a consumer that says it reads DLPack >= 1.0 (max_version),
// and only if this build's header has the versioned struct. The version we write is the
// header's (1.3 with PyTorch 2.11): minor versions are ABI-compatible, and consumers check
// the major version. copy=True: we can copy (into a new allocation of our own), so we do,
// and say so with IS_COPIED; copy=False or None: we never need a copy, so no copy.
bool wants_versioned(const py::object& max_version) {
  if (!COURSE_DLPACK_VERSIONED || max_version.is_none()) return false;
  const auto requested = max_version.cast<std::tuple<int, int>>();
  return std::get<0>(requested) >= 1;
}

bool wants_copy(const py::object& copy) { return !copy.is_none() && copy.cast<bool>(); }

std::uint64_t export_flags(bool read_only, bool copied) {
  std::uint64_t flags = 0;
#if COURSE_DLPACK_VERSIONED
  if (read_only) flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  if (copied) flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
#else
  (void)read_only;
  (void)copied;
#endif
  return flags;
}

#if COURSE_WITH_CUDA
// Part d (TODO m3.02d of the skeleton): the stream handshake.
// The consumer names, with an integer, the stream it will use the memory on:
//   None  the legacy default stream (the specification's default), 1 the same, 2 the
//   per-thread default stream (the CUDA runtime's own handles cudaStreamLegacy and
//   cudaStreamPerThread have exactly these values), > 2 a cudaStream_t's address,
//   -1 "do not synchronise", and 0 is an error: it is ambiguous between the two defaults.
// Returns false for -1 (nothing to order).
bool consumer_stream(const py::object& stream, cudaStream_t* out) {
  if (stream.is_none()) {
    *out = cudaStreamLegacy;
    return true;
  }
  const auto value = stream.cast<std::int64_t>();
  if (value == -1) return false;
  if (value == 0) {
    throw py::value_error(
        "stream=0 is not allowed by DLPack (it is ambiguous): pass 1 for the legacy "
        "default stream, 2 for the per-thread default stream, or a stream's address");
  }
  if (value < -1)
    throw py::value_error("stream must be None, -1, 1, 2 or a stream's address, got " +
                          std::to_string(value));
  if (value == 1) {
    *out = cudaStreamLegacy;
  } else if (value == 2) {
    *out = cudaStreamPerThread;
  } else {
    *out = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(value));
  }
  return true;
}

// Everything queued so far on the library's stream must happen before anything the consumer
// queues next on its stream: mark the point with an event, and make the consumer's stream
// wait for it. The host does not wait: both calls return at once, and the GPU keeps order.
void order_before_consumer(Storage& storage, cudaStream_t consumer) {
  CUDA_CHECK(cudaEventRecord(storage.event, storage.stream));
  CUDA_CHECK(cudaStreamWaitEvent(consumer, storage.event, 0));
}
#endif

// ---- given: the Buffer class and its export (you do not edit this block)
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
// ---- end of given

// ---- given: the consumer's side, its types (you do not edit this block)
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
// ---- end of given

// Part e (TODO m3.02e of the skeleton): ask the producer for a capsule.
// A raw capsule is taken as it is. Otherwise ask the object where its memory is
// (__dlpack_device__), then call its __dlpack__: for CUDA memory with the stream we will
// use, so that the producer can order its pending work before ours; with the newest
// max_version we read (DLPack 1.x) where this header has the versioned struct. Producers
// written before DLPack 1.0 (NumPy 1.24, PyTorch 1.13) do not know max_version and raise
// TypeError: then ask again without it. A CPU producer gets no stream (NumPy raises on one).
py::object request_capsule(const py::handle& object, const ConsumerStream& stream) {
  if (PyCapsule_CheckExact(object.ptr())) return py::reinterpret_borrow<py::object>(object);
  if (!py::hasattr(object, "__dlpack__")) {
    throw py::type_error(
        std::string("expected a DLPack capsule or an object with __dlpack__, got ") +
        Py_TYPE(object.ptr())->tp_name);
  }
  const auto where = object.attr("__dlpack_device__")().cast<std::tuple<int, int>>();
  py::dict arguments;
  if (std::get<0>(where) == kDLCUDA) arguments["stream"] = stream.as_int;
  if (COURSE_DLPACK_VERSIONED) {
    py::dict newest;  // the same arguments, plus max_version
    for (const auto& item : arguments) newest[item.first] = item.second;
    newest["max_version"] = py::make_tuple(1, 0);
    try {
      return object.attr("__dlpack__")(**newest);
    } catch (py::error_already_set& error) {
      if (!error.matches(PyExc_TypeError)) throw;
    }
  }
  return object.attr("__dlpack__")(**arguments);
}

// Part f (TODO m3.02f of the skeleton): take ownership of the capsule, and give it back exactly
// once. The rename to "used_..." comes first, right after reading the pointer: from that moment the
// capsule's destructor will not call the deleter, and the Imported (whose destructor releases)
// will, even when a later check throws. A capsule whose name is already "used_..." was consumed
// before: taking it again would free the memory twice.
void Imported::release() noexcept {
  if (managed == nullptr) return;
#if COURSE_DLPACK_VERSIONED
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(managed);
    if (m->deleter != nullptr) m->deleter(m);
    managed = nullptr;
    tensor = nullptr;
    return;
  }
#endif
  auto* m = static_cast<DLManagedTensor*>(managed);
  if (m->deleter != nullptr) m->deleter(m);
  managed = nullptr;
  tensor = nullptr;
}

std::unique_ptr<Imported> take_ownership(const py::object& capsule) {
  PyObject* raw = capsule.ptr();
  if (!PyCapsule_CheckExact(raw)) {
    throw py::type_error(std::string("__dlpack__ returned a ") + Py_TYPE(raw)->tp_name +
                         ", not a capsule");
  }
  const char* name = PyCapsule_GetName(raw);
  if (name == nullptr) throw py::error_already_set();
  auto imported = std::make_unique<Imported>();
  if (std::strcmp(name, kLegacyName) == 0) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, kLegacyName));
    if (m == nullptr) throw py::error_already_set();
    if (PyCapsule_SetName(raw, kUsedLegacyName) != 0) throw py::error_already_set();
    imported->managed = m;
    imported->tensor = &m->dl_tensor;
    return imported;
  }
#if COURSE_DLPACK_VERSIONED
  if (std::strcmp(name, kVersionedName) == 0) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(raw, kVersionedName));
    if (m == nullptr) throw py::error_already_set();
    if (PyCapsule_SetName(raw, kUsedVersionedName) != 0) throw py::error_already_set();
    imported->managed = m;
    imported->versioned = true;
    imported->major = static_cast<int>(m->version.major);
    imported->minor = static_cast<int>(m->version.minor);
    // A different major version may lay the struct out differently after `flags`: the only
    // thing we may still do is call the deleter (the Imported's destructor does).
    if (m->version.major != DLPACK_MAJOR_VERSION) {
      throw py::value_error("the capsule is DLPack " + std::to_string(m->version.major) + "." +
                            std::to_string(m->version.minor) + ", and this library reads DLPack " +
                            std::to_string(DLPACK_MAJOR_VERSION) + ".x");
    }
    imported->tensor = &m->dl_tensor;
    imported->flags = m->flags;
    return imported;
  }
#endif
  if (std::strcmp(name, kUsedLegacyName) == 0 || std::strcmp(name, kUsedVersionedName) == 0) {
    throw py::value_error(std::string("this capsule was already consumed (its name is '") + name +
                          "'): a DLPack capsule can be consumed only once");
  }
  throw py::value_error(std::string("not a DLPack capsule this library reads (its name is '") +
                        name + "'" +
                        (COURSE_DLPACK_VERSIONED ? ""
                                                 : "; this build's DLPack header is 0.x, "
                                                   "without versioned capsules") +
                        ")");
}

// Part g (TODO m3.02g of the skeleton): check what the kernel is about to touch.
// The m1.01 kernel adds two flat ranges of float32 elements. So: float32 only; compact
// row-major only (strides NULL, or equal to the row-major strides, ignoring dimensions of
// size 1, whose stride means nothing); the first element at data + byte_offset (a
// producer may use byte_offset, even though PyTorch does not), on a float boundary; and a
// target that the producer did not mark read-only. Other layouts are refused with the
// reason rather than handled: a strided kernel is a different exercise.
float* checked_elements(const Imported& imported, const char* what, bool will_write) {
  const DLTensor& t = *imported.tensor;
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) {
    throw py::type_error(std::string("add_in_place: ") + what +
                         " must be float32, got DLPack dtype (code " +
                         std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) +
                         " bits, " + std::to_string(t.dtype.lanes) + " lanes)");
  }
  if (t.strides != nullptr) {
    std::int64_t expected = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != expected) {
        throw py::value_error(std::string("add_in_place: ") + what + " is not contiguous: shape " +
                              shape_string(t.shape, t.ndim) + " with strides " +
                              shape_string(t.strides, t.ndim) +
                              " (in elements) is not compact row-major; pass a .contiguous() copy");
      }
      expected *= t.shape[d];
    }
  }
  if (t.byte_offset % sizeof(float) != 0) {
    throw py::value_error(std::string("add_in_place: ") + what + " has byte_offset " +
                          std::to_string(t.byte_offset) +
                          ", which is not a whole number of float32 elements");
  }
#if COURSE_DLPACK_VERSIONED
  if (will_write && (imported.flags & DLPACK_FLAG_BITMASK_READ_ONLY)) {
    throw py::value_error(std::string("add_in_place: ") + what +
                          " is read-only (its producer set DLPACK_FLAG_BITMASK_READ_ONLY)");
  }
#else
  (void)will_write;
#endif
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset);
}

// ---- given: the consumer's entry points (you do not edit this block)
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
// ---- end of given
