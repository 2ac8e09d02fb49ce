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
// The given code is in month3/02_dlpack_zero_copy/dlpack_buffer_given.h.
// dlpack_buffer_given.h includes Python.h, pybind11 and PyTorch's copy of dlpack.h (DLPack 0.6
// in PyTorch 1.13, 1.3 in PyTorch 2.11), and with CUDA cuda_runtime.h, CUDA_CHECK and the
// m1.01 kernel (yours or the reference: load_extension.py).
#include "dlpack_buffer_given.h"

namespace course::m3_02 {
namespace {

// From dlpack_buffer_given.h (read it for the details):
//   py                    pybind11
//   COURSE_DLPACK_VERSIONED   1 when this dlpack.h has DLManagedTensorVersioned (DLPack >= 1.0)
//   kLegacyName, kUsedLegacyName, kVersionedName, kUsedVersionedName   the capsule names
//   PreservedPythonError  keeps a pending Python error aside while it lives
//   Device                where memory lives: {DLDeviceType type, int id}
//   Storage               one allocation: float* data, elements, Device device and, with CUDA,
//                         the library's cudaStream_t stream and a cudaEvent_t event; Buffers
//                         and unreleased exports share it through std::shared_ptr
//   ExportContext         one export: std::shared_ptr<Storage> storage, the shape and strides
//                         vectors, and the DLManagedTensor legacy (DLManagedTensorVersioned
//                         versioned) handed out; manager_ctx points to it
// The Buffer class calls your functions a to d when it exports; add_in_place calls e to g.

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

// The consumer's side (dlpack_buffer_given.h):
//   Imported        a tensor taken from a capsule: void* managed (a DLManagedTensor* or a
//                   DLManagedTensorVersioned*, as bool versioned says), DLTensor* tensor,
//                   flags, and the producer's DLPack version major.minor; its destructor
//                   calls release() (yours, part f)
//   ConsumerStream  the stream the kernel runs on: py::object as_int (what __dlpack__ is
//                   passed; None for CPU producers) and, with CUDA, cudaStream_t handle

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

}  // namespace
}  // namespace course::m3_02
