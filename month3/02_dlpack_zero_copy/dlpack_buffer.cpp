// Exercise m3.02: DLPack, zero-copy exchange between a library and PyTorch.
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
//
// Fill in the TODOs m3.02a to m3.02g in order, then run `./course grade m3_02` to check your
// work. The given code, the same in the reference solution, is in
// month3/02_dlpack_zero_copy/dlpack_buffer_given.h: leave it as it is.
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

// TODO(m3.02a): describe the memory. Fill `tensor` for the first element `first` of the
// export `context` (its shape is context.shape; its storage knows the device):
//   data        = first, but NULL when the array has no elements (the specification asks it);
//   device      = DLDevice{type, id} of context.storage->device;
//   ndim, shape = the number of dimensions and context.shape.data() (the context keeps the
//                 array alive as long as the consumer needs it);
//   dtype       = DLDataType{kDLFloat, 32 bits, 1 lane} (cast kDLFloat to std::uint8_t);
//   strides     = compact row-major strides IN ELEMENTS (not bytes): the last dimension 1,
//                 each one before it the product of the sizes after it. Write them into
//                 context.strides and point at its data(). Shape [2, 3, 4] -> [12, 4, 1].
//   byte_offset = 0, always: the view's offset is already in `first`. PyTorch 1.13 ignores
//                 byte_offset (wrong data, silently) and PyTorch 2.11 refuses a non-zero one.
void fill_dltensor(DLTensor& tensor, ExportContext& context, float* first) {
  (void)tensor;
  (void)context;
  (void)first;
  throw std::logic_error(
      "TODO(m3.02a) is not done: fill_dltensor must describe the memory (dlpack_buffer.cpp)");
}

// TODO(m3.02b): give the memory back exactly once.
// The deleters: the consumer calls one of them once, when it no longer needs the memory
// (maybe on another thread, without the GIL: touch no Python object). self->manager_ctx is
// the ExportContext this export made; delete it, which gives back its share of the storage
// (the memory itself goes when the last share goes).
void delete_legacy(DLManagedTensor* self) { (void)self; }
#if COURSE_DLPACK_VERSIONED
void delete_versioned(DLManagedTensorVersioned* self) { (void)self; }
#endif

// TODO(m3.02b), continued: the capsule's destructor, which Python calls when it frees the
// capsule object. A consumer that took the tensor renamed the capsule to "used_dltensor"
// (or "used_dltensor_versioned") and calls the deleter itself. So call the deleter here ONLY
// when the capsule still has its unused name kLegacyName (or kVersionedName):
// PyCapsule_IsValid(capsule, name) says so, PyCapsule_GetPointer(capsule, name) gives the
// DLManagedTensor (or DLManagedTensorVersioned) whose ->deleter to call. Declare a
// `PreservedPythonError keep;` first in each branch: this can run while an exception is
// being raised, and PyCapsule_GetPointer must not see (or clear) it.
void capsule_destructor(PyObject* capsule) { (void)capsule; }

// TODO(m3.02c): what the consumer asked for.
// wants_versioned: true when this build's header has the versioned struct
// (COURSE_DLPACK_VERSIONED) and the consumer passed a max_version whose major number is
// >= 1, e.g. (1, 0); None (the consumer does not know DLPack 1.x) or (0, x) means legacy.
// (max_version.cast<std::tuple<int, int>>() reads it.)
bool wants_versioned(const py::object& max_version) {
  (void)max_version;
  return false;
}

// wants_copy: copy=True asks for a copy (the given code then copies into a new allocation);
// None and False do not.
bool wants_copy(const py::object& copy) {
  (void)copy;
  return false;
}

// export_flags: the `flags` of a versioned capsule, when COURSE_DLPACK_VERSIONED:
// DLPACK_FLAG_BITMASK_READ_ONLY when read_only, DLPACK_FLAG_BITMASK_IS_COPIED when copied.
std::uint64_t export_flags(bool read_only, bool copied) {
  (void)read_only;
  (void)copied;
  return 0;
}

#if COURSE_WITH_CUDA
// TODO(m3.02d): the stream handshake (CUDA only; graded on a GPU).
// consumer_stream: the consumer names the stream it will use the memory on with an integer.
//   None or 1 -> cudaStreamLegacy (the legacy default stream), 2 -> cudaStreamPerThread,
//   > 2 -> that cudaStream_t (reinterpret_cast from std::uintptr_t), -1 -> no
//   synchronisation at all (return false), 0 -> py::value_error whose message says that
//   stream=0 is not allowed (ambiguous) and what to pass instead; other negatives -> a
//   py::value_error too. Set *out and return true otherwise.
bool consumer_stream(const py::object& stream, cudaStream_t* out) {
  (void)stream;
  *out = cudaStreamLegacy;
  return true;
}

// order_before_consumer: everything already queued on the library's stream
// (storage.stream) must happen before what the consumer queues next on `consumer`. Record
// storage.event on storage.stream, then make `consumer` wait for it (cudaStreamWaitEvent).
// Neither call blocks the host. Wrap both in CUDA_CHECK.
void order_before_consumer(Storage& storage, cudaStream_t consumer) {
  (void)storage;
  (void)consumer;
}
#endif

// The consumer's side (dlpack_buffer_given.h):
//   Imported        a tensor taken from a capsule: void* managed (a DLManagedTensor* or a
//                   DLManagedTensorVersioned*, as bool versioned says), DLTensor* tensor,
//                   flags, and the producer's DLPack version major.minor; its destructor
//                   calls release() (yours, part f)
//   ConsumerStream  the stream the kernel runs on: py::object as_int (what __dlpack__ is
//                   passed; None for CPU producers) and, with CUDA, cudaStream_t handle

// TODO(m3.02e): ask the producer for a capsule.
// A raw capsule (PyCapsule_CheckExact(object.ptr())) is returned as it is. Otherwise:
//   - an object without __dlpack__ -> py::type_error naming its type;
//   - ask where its memory is: object.attr("__dlpack_device__")() -> (device type, id);
//   - build the keyword arguments in a py::dict: for CUDA memory (kDLCUDA),
//     arguments["stream"] = stream.as_int (the stream our kernel runs on); for CPU memory
//     no stream (NumPy raises on one);
//   - where COURSE_DLPACK_VERSIONED, first try with max_version=(1, 0) as well
//     (py::make_tuple(1, 0)); producers older than DLPack 1.0 (NumPy 1.24, PyTorch 1.13)
//     raise TypeError on it: catch py::error_already_set, check error.matches(PyExc_TypeError)
//     (rethrow anything else), and ask again without max_version;
//   - call it as object.attr("__dlpack__")(**arguments) and return the capsule.
py::object request_capsule(const py::handle& object, const ConsumerStream& stream) {
  (void)object;
  (void)stream;
  throw std::logic_error(
      "TODO(m3.02e) is not done: request_capsule must call __dlpack__ (dlpack_buffer.cpp)");
}

// TODO(m3.02f): take ownership of the capsule, and give it back exactly once.
// release(): when `managed` is not NULL, call its deleter (if not NULL) once, then set
// managed and tensor to NULL so that it can never run again. `versioned` says whether
// `managed` is a DLManagedTensorVersioned* or a DLManagedTensor*.
void Imported::release() noexcept {}

// take_ownership: read the capsule's name (PyCapsule_GetName):
//   "dltensor"                  PyCapsule_GetPointer(raw, kLegacyName) is a DLManagedTensor*;
//   "dltensor_versioned"        (only where COURSE_DLPACK_VERSIONED) a DLManagedTensorVersioned*:
//                               also keep version.major/minor and flags;
//   "used_dltensor[_versioned]" consumed before: py::value_error saying "already consumed";
//   anything else               py::value_error naming it.
// RENAME IT AT ONCE, right after reading the pointer (PyCapsule_SetName(raw, kUsedLegacyName)
// or kUsedVersionedName), and store the pointer in the Imported before anything else can
// throw: from then on the capsule's destructor will not call the deleter, and the Imported's
// destructor will. Then, for a versioned capsule whose version.major is not
// DLPACK_MAJOR_VERSION, throw a py::value_error (the Imported still releases it: the
// deleter is the one thing one may call on a struct of another major version).
// A C API call that returns NULL (or -1) has set a Python error: throw py::error_already_set().
std::unique_ptr<Imported> take_ownership(const py::object& capsule) {
  (void)capsule;
  throw std::logic_error(
      "TODO(m3.02f) is not done: take_ownership must take the capsule (dlpack_buffer.cpp)");
}

// TODO(m3.02g): check what the kernel is about to touch, and find its first element.
// The m1.01 kernel adds flat ranges of float32. For imported.tensor (`what` names it in the
// messages, which start with "add_in_place: "), throw
//   py::type_error  unless dtype is {kDLFloat, 32 bits, 1 lane} (say "float32");
//   py::value_error unless it is compact row-major: strides NULL, or each stride equal to
//                   the product of the sizes after it, ignoring dimensions of size 1 (say
//                   "contiguous", and show the shape and strides);
//   py::value_error if byte_offset is not a multiple of sizeof(float);
//   py::value_error if will_write and the producer set DLPACK_FLAG_BITMASK_READ_ONLY in
//                   imported.flags (only where COURSE_DLPACK_VERSIONED; say "read-only").
// Return the first element: data + byte_offset (in bytes: go through char*). PyTorch never
// sets byte_offset, but other producers may, and then data alone is the wrong address.
float* checked_elements(const Imported& imported, const char* what, bool will_write) {
  (void)imported;
  (void)what;
  (void)will_write;
  throw std::logic_error(
      "TODO(m3.02g) is not done: checked_elements must check the import (dlpack_buffer.cpp)");
}

}  // namespace
}  // namespace course::m3_02
