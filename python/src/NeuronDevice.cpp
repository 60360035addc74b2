// The `neuron` device: PyTorch's PrivateUse1 backend, renamed by neuronsim/device/.
//
// This file holds what must be C++: the allocator whose storage is the simulated HBM (host
// memory standing in for it, with the target's capacity and OutOfMemoryError), the device
// guard (current device, streams, events with simulated timestamps), the PrivateUse1 hooks
// torch.accelerator looks for, and the handful of kernels every backend owns (empty, views,
// copies between devices, .item()). Every other ATen op reaches the Python fallback in
// neuronsim/device/eager.py, which runs it on the simulator as a one-op program.
//
// Each device has a simulated clock (ns). Host <-> device copies advance it by the target's
// host-link cost; eager ops and compiled programs advance it by their simulated time (from
// Python, neuronsim::advance_clock). Events record the clock, so elapsed_time is simulated.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace neuron::device {
namespace {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;
constexpr int kMaxDevices = 64;

/// Bytes moved and simulated time spent by one kind of copy.
struct TransferCounter {
  int64_t count = 0;
  int64_t bytes = 0;
  double ns = 0;
};

/// What one device counts: its HBM, its clock and its copies. Guarded by `mutex`.
struct DeviceState {
  int64_t allocatedBytes = 0;
  int64_t peakBytes = 0;
  int64_t allocations = 0;  // live allocations
  int64_t peakAllocations = 0;
  int64_t bytesAllocatedTotal = 0, bytesFreedTotal = 0;  // since resetAccumulatedStats
  int64_t allocationsTotal = 0, freesTotal = 0;
  int64_t ooms = 0;  // allocations refused with OutOfMemoryError
  double clockNs = 0;       // the device's simulated time
  TransferCounter hostToDevice, deviceToHost, deviceToDevice;
};

struct Config {
  int deviceCount = 1;
  int64_t capacityBytes = int64_t(12) << 30;
  double linkBytesPerNs = 50;
  double linkLatencyNs = 2000;
  double hbmBytesPerNs = 362.5;
};

std::mutex mutex;
Config config;
std::array<DeviceState, kMaxDevices> states;

thread_local c10::DeviceIndex currentDevice = 0;
thread_local std::array<c10::StreamId, kMaxDevices> currentStreams{};
std::atomic<c10::StreamId> nextStreamId{1};

DeviceState &state(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < config.deviceCount, "neuron: invalid device index ", int(index),
              " (device_count() is ", config.deviceCount, ")");
  return states[index];
}

std::string humanBytes(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  if (bytes >= (int64_t(1) << 30))
    os << double(bytes) / double(int64_t(1) << 30) << " GiB";
  else if (bytes >= (int64_t(1) << 20))
    os << double(bytes) / double(int64_t(1) << 20) << " MiB";
  else
    os << bytes << " bytes";
  return os.str();
}

// ---- Allocator: host memory standing in for the device's HBM, with its capacity. ----

struct Allocation {
  c10::DeviceIndex device;
  size_t bytes;
};

/// Counts `bytes` against the device's HBM, or raises OutOfMemoryError naming the sizes.
void reserve(c10::DeviceIndex device, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState &s = state(device);
  if (s.allocatedBytes + int64_t(bytes) > config.capacityBytes)
    s.ooms += 1;
  TORCH_CHECK_WITH(OutOfMemoryError, s.allocatedBytes + int64_t(bytes) <= config.capacityBytes,
                   "neuron: out of simulated HBM on neuron:", int(device),
                   ": tried to allocate ", humanBytes(int64_t(bytes)), " with ",
                   humanBytes(s.allocatedBytes), " already allocated of the ",
                   humanBytes(config.capacityBytes),
                   " the target has per core (torch.neuron.memory_allocated() counts what is "
                   "live; free tensors or pick a target with more HBM)");
  s.allocatedBytes += int64_t(bytes);
  s.peakBytes = std::max(s.peakBytes, s.allocatedBytes);
  s.allocations += 1;
  s.peakAllocations = std::max(s.peakAllocations, s.allocations);
  s.bytesAllocatedTotal += int64_t(bytes);
  s.allocationsTotal += 1;
}

/// Gives back what reserve() counted (the context is the Allocation).
void freeAllocation(void *context) {
  auto *allocation = static_cast<Allocation *>(context);
  {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceState &s = states[allocation->device];
    s.allocatedBytes -= int64_t(allocation->bytes);
    s.allocations -= 1;
    s.bytesFreedTotal += int64_t(allocation->bytes);
    s.freesTotal += 1;
  }
  delete allocation;
}

struct HbmDeleterContext {
  void *data;
  Allocation *allocation;
};

void freeHbm(void *context) {
  auto *ctx = static_cast<HbmDeleterContext *>(context);
  std::free(ctx->data);
  freeAllocation(ctx->allocation);
  delete ctx;
}

/// The allocator is a c10::DeviceAllocator, so that torch.accelerator.memory_stats() and
/// friends reach its counters. It caches nothing: reserved = active = allocated.
class HbmAllocator final : public c10::DeviceAllocator {
public:
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr &, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex);
    const DeviceState &s = state(device);
    c10::CachingDeviceAllocator::DeviceStats stats;
    auto fill = [](c10::CachingDeviceAllocator::StatArray &array, int64_t current, int64_t peak,
                   int64_t allocated, int64_t freed) {
      auto &all = array[size_t(c10::CachingDeviceAllocator::StatType::AGGREGATE)];
      all.current = current;
      all.peak = peak;
      all.allocated = allocated;
      all.freed = freed;
    };
    for (auto *bytes : {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                        &stats.requested_bytes})
      fill(*bytes, s.allocatedBytes, s.peakBytes, s.bytesAllocatedTotal, s.bytesFreedTotal);
    for (auto *count : {&stats.allocation, &stats.segment, &stats.active})
      fill(*count, s.allocations, s.peakAllocations, s.allocationsTotal, s.freesTotal);
    stats.num_ooms = s.ooms;
    return stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceState &s = state(device);
    s.bytesAllocatedTotal = s.bytesFreedTotal = s.allocationsTotal = s.freesTotal = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex);
    DeviceState &s = state(device);
    s.peakBytes = s.allocatedBytes;
    s.peakAllocations = s.allocations;
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex);
    const DeviceState &s = state(device);
    return {size_t(config.capacityBytes - s.allocatedBytes), size_t(config.capacityBytes)};
  }

  c10::DataPtr allocate(size_t bytes) override {
    const c10::DeviceIndex device = currentDevice;
    const c10::Device where(kNeuron, device);
    if (bytes == 0)
      return {nullptr, nullptr, &c10::detail::deleteNothing, where};
    reserve(device, bytes);
    // 64-byte aligned, rounded up as aligned_alloc requires.
    void *data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!data) {
      freeAllocation(new Allocation{device, bytes});
      TORCH_CHECK_WITH(OutOfMemoryError, false, "neuron: the host could not back ",
                       humanBytes(int64_t(bytes)), " of simulated HBM on neuron:", int(device));
    }
    auto *ctx = new HbmDeleterContext{data, new Allocation{device, bytes}};
    return {data, ctx, &freeHbm, where};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void *dest, const void *src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

HbmAllocator hbmAllocator;

/// Device memory taken over from a CPU tensor a program wrote (no copy): the storage stays
/// alive as long as the device tensor, and counts against the device's HBM.
struct AdoptedContext {
  c10::Storage storage;
  Allocation *allocation;
};

void freeAdopted(void *context) {
  auto *ctx = static_cast<AdoptedContext *>(context);
  freeAllocation(ctx->allocation);
  delete ctx;
}

// ---- Simulated time of copies. ----

enum class Direction { HostToDevice, DeviceToHost, DeviceToDevice };

void countTransfer(c10::DeviceIndex device, Direction direction, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState &s = state(device);
  TransferCounter &counter = direction == Direction::HostToDevice   ? s.hostToDevice
                             : direction == Direction::DeviceToHost ? s.deviceToHost
                                                                    : s.deviceToDevice;
  // Host copies cross the host link; a device-to-device copy reads and writes HBM.
  const double ns = direction == Direction::DeviceToDevice
                        ? 2.0 * double(bytes) / config.hbmBytesPerNs
                        : config.linkLatencyNs + double(bytes) / config.linkBytesPerNs;
  counter.count += 1;
  counter.bytes += bytes;
  counter.ns += ns;
  s.clockNs += ns;
}

// ---- Device guard: current device, streams (one ordered timeline), events. ----

struct Event {
  double timeNs = 0;
  c10::DeviceIndex device = 0;
};

class NeuronGuard final : public c10::impl::DeviceGuardImplInterface {
public:
  c10::DeviceType type() const override { return kNeuron; }

  c10::Device exchangeDevice(c10::Device device) const override {
    c10::Device previous = getDevice();
    setDevice(device);
    return previous;
  }
  c10::Device getDevice() const override { return {kNeuron, currentDevice}; }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == kNeuron, "neuron: expected a neuron device, got ", device);
    if (device.has_index()) {
      state(device.index()); // checks the index
      currentDevice = device.index();
    }
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.has_index() && device.index() >= 0 && device.index() < kMaxDevices)
      currentDevice = device.index();
  }

  c10::Stream getStream(c10::Device device) const override {
    const c10::DeviceIndex index = device.has_index() ? device.index() : currentDevice;
    return c10::Stream(c10::Stream::UNSAFE, {kNeuron, index}, currentStreams[index]);
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, {kNeuron, device.index()});
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
    return getNewStream(device, 0);
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return c10::Stream(c10::Stream::UNSAFE, {kNeuron, device.index()}, nextStreamId++);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::DeviceIndex index = stream.device_index();
    c10::Stream previous = getStream({kNeuron, index});
    currentStreams[index] = stream.id();
    return previous;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(config.deviceCount);
  }

  // The simulator runs each program to completion when it is called, so every stream is
  // always idle and events complete when recorded; their timestamps are simulated time.
  void record(void **event, const c10::Stream &stream, const c10::DeviceIndex device_index,
              const c10::EventFlag) const override {
    const c10::DeviceIndex index = device_index >= 0 ? device_index : stream.device_index();
    if (!*event)
      *event = new Event();
    auto *e = static_cast<Event *>(*event);
    std::lock_guard<std::mutex> lock(mutex);
    e->device = index;
    e->timeNs = state(index).clockNs;
  }
  void block(void *, const c10::Stream &) const override {}
  bool queryEvent(void *) const override { return true; }
  void synchronizeEvent(void *) const override {}
  void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<Event *>(event);
  }
  double elapsedTime(void *start, void *end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end,
                "neuron: both events must be recorded before elapsed_time() is called");
    return (static_cast<Event *>(end)->timeNs - static_cast<Event *>(start)->timeNs) / 1e6;
  }
  bool queryStream(const c10::Stream &) const override { return true; }
  void synchronizeStream(const c10::Stream &) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void recordDataPtrOnStream(const c10::DataPtr &, const c10::Stream &) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuard);

// ---- Hooks: what torch.accelerator and at::Context ask of the backend. ----

/// torch.Generator(device="neuron"): random ops run on the CPU over device memory (eager.py
/// hands the CPU kernel a CPU generator with this one's state), so it is a CPU (Philox-free
/// mt19937) generator on the neuron device.
class NeuronGenerator final : public at::CPUGeneratorImpl {
public:
  explicit NeuronGenerator(c10::DeviceIndex device,
                           uint64_t seed = c10::default_rng_seed_val)
      : at::CPUGeneratorImpl(seed) {
    device_ = c10::Device(kNeuron, device);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

private:
  NeuronGenerator *clone_impl() const override {
    auto *copy = new NeuronGenerator(device_.index());
    copy->set_state(*get_state());
    return copy;
  }
};

class NeuronHooks final : public at::PrivateUse1HooksInterface {
public:
  const at::Generator &getDefaultGenerator(c10::DeviceIndex device) const override {
    static std::array<at::Generator, kMaxDevices> defaults;
    static std::once_flag once;
    std::call_once(once, [] {
      for (int i = 0; i < kMaxDevices; ++i)
        defaults[i] = at::make_generator<NeuronGenerator>(c10::DeviceIndex(i));
    });
    const c10::DeviceIndex index = device < 0 ? currentDevice : device;
    state(index);  // checks the index
    return defaults[index];
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    const c10::DeviceIndex index = device < 0 ? currentDevice : device;
    state(index);
    return at::make_generator<NeuronGenerator>(index);
  }
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return config.deviceCount > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(config.deviceCount);
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    state(device);
    currentDevice = device;
  }
  c10::DeviceIndex getCurrentDevice() const override { return currentDevice; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = currentDevice;
    setCurrentDevice(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  at::Device getDeviceFromPtr(void *) const override { return {kNeuron, currentDevice}; }
  bool isPinnedPtr(const void *) const override { return false; }
  at::Allocator *getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t bytes) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), bytes);
  }
};

// ---- The kernels every backend owns. ----

/// A CPU tensor over the same memory as `t` (a neuron tensor), keeping its storage alive. It
/// keeps `t`'s negative and conjugate bits (a lazy `neg()`/`conj()` view, `_neg_view`,
/// `conj()` of a complex tensor, backward's conjugated gradients): the alias means the same
/// values as `t`, and the CPU kernels that read or write it resolve the bits as for any CPU
/// tensor.
at::Tensor hostAlias(const at::Tensor &t) {
  if (t.device().type() != kNeuron)
    return t;
  c10::Storage storage = t.storage();
  void *data = t.numel() == 0 ? nullptr : t.data_ptr();
  at::Tensor alias = at::from_blob(
      data, t.sizes(), t.strides(), [storage](void *) {}, t.options().device(at::kCPU));
  if (t.is_neg())
    alias._set_neg(true);
  if (t.is_conj())
    alias._set_conj(true);
  return alias;
}

/// Device memory holds any real dtype and complex64/complex128 (eager.py runs complex ops as
/// real arithmetic on planes, as compiled graphs do; other dtypes the simulator does not
/// compute in run on the CPU with the fallback warning). Half-precision complex, quantized and
/// bit-packed tensors have no place on a NeuronCore and are refused where they would be made.
c10::ScalarType checkedDtype(std::optional<c10::ScalarType> dtype) {
  const c10::ScalarType t = c10::dtype_or_default(dtype);
  TORCH_CHECK_TYPE(t != c10::ScalarType::ComplexHalf && !c10::isQIntType(t) &&
                       !c10::isBitsType(t),
                   "neuron: ", t, " tensors are not supported on the neuron device (the "
                   "NeuronCore has no half-precision complex, quantized or bit-packed types)");
  return t;
}

/// A neuron tensor over the memory of `result`, a contiguous CPU tensor the simulator wrote:
/// the program's output becomes device memory without a copy (and without a host transfer).
at::Tensor adoptHost(const at::Tensor &result, c10::Device device) {
  TORCH_CHECK(result.device().is_cpu() && device.type() == kNeuron,
              "neuron: adopt_host takes a CPU tensor and a neuron device");
  const at::Tensor source = result.is_contiguous() ? result : result.contiguous();
  const c10::DeviceIndex index = device.has_index() ? device.index() : currentDevice;
  checkedDtype(source.scalar_type());
  const size_t bytes = source.storage().nbytes();
  reserve(index, bytes);
  c10::Storage cpuStorage = source.storage();
  void *data = cpuStorage.mutable_data();
  auto *ctx = new AdoptedContext{cpuStorage, new Allocation{index, bytes}};
  c10::DataPtr ptr(data, ctx, &freeAdopted, c10::Device(kNeuron, index));
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, std::move(ptr), &hbmAllocator,
                       /*resizable=*/true);
  at::Tensor out = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), source.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(source.sizes(), source.strides(),
                                                   source.storage_offset());
  return out;
}

at::Tensor emptyMemoryFormat(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pinMemory,
                             std::optional<c10::MemoryFormat> memoryFormat) {
  const c10::Device where = c10::device_or_default(device);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron: only strided tensors are supported, not ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pinMemory), "neuron: pin_memory is for CPU tensors");
  const c10::DeviceGuard guard(where);
  return at::detail::empty_generic(size, &hbmAllocator,
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   checkedDtype(dtype), memoryFormat);
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pinMemory) {
  const c10::Device where = c10::device_or_default(device);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron: only strided tensors are supported, not ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pinMemory), "neuron: pin_memory is for CPU tensors");
  const c10::DeviceGuard guard(where);
  return at::detail::empty_strided_generic(size, stride, &hbmAllocator,
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           checkedDtype(dtype));
}

at::Tensor asStrided(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                     std::optional<c10::SymInt> offset) {
  std::optional<int64_t> concreteOffset;
  if (offset)
    concreteOffset = offset->expect_int();
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride), concreteOffset);
}

const at::Tensor &resize(const at::Tensor &self, c10::SymIntArrayRef size,
                         std::optional<c10::MemoryFormat> memoryFormat) {
  const c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memoryFormat);
}

at::Tensor reshapeAlias(const at::Tensor &self, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

/// Copies between the host and the device, or within the device, counted as transfers.
at::Tensor copyFrom(const at::Tensor &self, const at::Tensor &dst, bool nonBlocking) {
  const bool fromDevice = self.device().type() == kNeuron;
  const bool toDevice = dst.device().type() == kNeuron;
  TORCH_CHECK(fromDevice || self.device().is_cpu(), "neuron: cannot copy from ", self.device(),
              " to ", dst.device(), "; only CPU and neuron tensors are supported");
  TORCH_CHECK(toDevice || dst.device().is_cpu(), "neuron: cannot copy from ", self.device(),
              " to ", dst.device(), "; only CPU and neuron tensors are supported");
  at::Tensor target = hostAlias(dst);
  at::native::copy_(target, hostAlias(self), nonBlocking);
  const int64_t bytes = dst.numel() * int64_t(dst.element_size());
  if (fromDevice && toDevice)
    countTransfer(dst.device().index(), Direction::DeviceToDevice, bytes);
  else if (toDevice)
    countTransfer(dst.device().index(), Direction::HostToDevice, bytes);
  else
    countTransfer(self.device().index(), Direction::DeviceToHost, bytes);
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor &self, const at::Tensor &dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copyFrom(self, dst, false);
}

at::Scalar localScalarDense(const at::Tensor &self) {
  countTransfer(self.device().index(), Direction::DeviceToHost, int64_t(self.element_size()));
  // The bits are resolved on the host copy: the CPU kernel reads the raw element.
  return at::native::_local_scalar_dense_cpu(hostAlias(self).resolve_conj().resolve_neg());
}

at::Tensor &setTensor(at::Tensor &self, const at::Tensor &source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor &setStorage(at::Tensor &self, at::Storage source) {
  return at::native::set_(self, source);
}

at::Tensor &setStorageOffset(at::Tensor &self, at::Storage source, c10::SymInt offset,
                             c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, offset.expect_int(),
                                      C10_AS_INTARRAYREF_SLOW(size),
                                      C10_AS_INTARRAYREF_SLOW(stride));
}

/// Module.to("neuron") replaces parameters' data in place (param.data = ...), which keeps
/// tied weights tied, only if PyTorch sees CPU and neuron tensors as interchangeable.
bool compatibleShallowCopy(const at::Tensor &self, const at::Tensor &from) {
  auto dense = [](const at::Tensor &t) {
    return t.layout() == c10::kStrided && (t.device().is_cpu() || t.device().type() == kNeuron);
  };
  return dense(self) && dense(from);
}

// ---- neuronsim:: ops: what the Python side asks of the device. ----

void configure(int64_t deviceCount, int64_t capacityBytes, double linkBytesPerNs,
               double linkLatencyNs, double hbmBytesPerNs) {
  TORCH_CHECK(deviceCount >= 1 && deviceCount <= kMaxDevices, "neuron: device count must be 1 to ",
              kMaxDevices, ", got ", deviceCount);
  TORCH_CHECK(capacityBytes > 0 && linkBytesPerNs > 0 && hbmBytesPerNs > 0,
              "neuron: capacity and bandwidths must be positive");
  std::lock_guard<std::mutex> lock(mutex);
  config.deviceCount = int(deviceCount);
  config.capacityBytes = capacityBytes;
  config.linkBytesPerNs = linkBytesPerNs;
  config.linkLatencyNs = linkLatencyNs;
  config.hbmBytesPerNs = hbmBytesPerNs;
}

/// [allocated, peak, capacity, live allocations]
std::vector<int64_t> memoryStats(int64_t device) {
  std::lock_guard<std::mutex> lock(mutex);
  const DeviceState &s = state(c10::DeviceIndex(device));
  return {s.allocatedBytes, s.peakBytes, config.capacityBytes, s.allocations};
}

void resetPeak(int64_t device) {
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState &s = state(c10::DeviceIndex(device));
  s.peakBytes = s.allocatedBytes;
}

/// [count, bytes, ns] for host->device, device->host, device->device, then the clock.
std::vector<double> transferStats(int64_t device) {
  std::lock_guard<std::mutex> lock(mutex);
  const DeviceState &s = state(c10::DeviceIndex(device));
  std::vector<double> out;
  for (const TransferCounter *c : {&s.hostToDevice, &s.deviceToHost, &s.deviceToDevice}) {
    out.push_back(double(c->count));
    out.push_back(double(c->bytes));
    out.push_back(c->ns);
  }
  out.push_back(s.clockNs);
  return out;
}

void resetTransferStats(int64_t device) {
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState &s = state(c10::DeviceIndex(device));
  s.hostToDevice = s.deviceToHost = s.deviceToDevice = TransferCounter{};
}

double advanceClock(int64_t device, double ns) {
  TORCH_CHECK(ns >= 0, "neuron: the simulated clock cannot go back (", ns, " ns)");
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState &s = state(c10::DeviceIndex(device));
  s.clockNs += ns;
  return s.clockNs;
}

void countHostTransfer(int64_t device, bool toDevice, int64_t bytes) {
  countTransfer(c10::DeviceIndex(device),
                toDevice ? Direction::HostToDevice : Direction::DeviceToHost, bytes);
}

struct Registration {
  Registration() {
    c10::SetAllocator(kNeuron, &hbmAllocator);
    static NeuronHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
};
Registration registration;

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", emptyMemoryFormat);
  m.impl("empty_strided", emptyStrided);
  m.impl("as_strided", asStrided);
  m.impl("resize_", resize);
  m.impl("_reshape_alias", reshapeAlias);
  m.impl("view", view);
  m.impl("_copy_from", copyFrom);
  m.impl("_copy_from_and_resize", copyFromAndResize);
  m.impl("_local_scalar_dense", localScalarDense);
  m.impl("set_.source_Tensor", setTensor);
  m.impl("set_.source_Storage", setStorage);
  m.impl("set_.source_Storage_storage_offset", setStorageOffset);
  m.impl("_has_compatible_shallow_copy_type", compatibleShallowCopy);
}

// Copies, `.item()` and the host alias read and write memory themselves and honour the negative
// and conjugate bits (hostAlias keeps them; the CPU copy kernel resolves them, and writes into a
// negated or conjugated destination as it does for CPU tensors). Without these the Negative and
// Conjugate fallbacks would resolve the bits of `_copy_from`'s arguments first, with a clone
// whose copy_ calls `_copy_from` again: an infinite recursion (a stack overflow, seen as a
// segmentation fault in torchtitan's backward over its complex RoPE).
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(neuronsim, Negative, m) {
  m.impl("host_alias", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(neuronsim, Conjugate, m) {
  m.impl("host_alias", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY(neuronsim, m) {
  m.def("host_alias(Tensor self) -> Tensor");
  m.impl("host_alias", c10::DispatchKey::PrivateUse1, hostAlias);
  m.impl("host_alias", c10::DispatchKey::CPU, hostAlias);
  m.def("adopt_host(Tensor result, Device device) -> Tensor", adoptHost);
  m.def("configure(int device_count, int capacity_bytes, float link_bytes_per_ns, "
        "float link_latency_ns, float hbm_bytes_per_ns) -> ()",
        configure);
  m.def("memory_stats(int device) -> int[]", memoryStats);
  m.def("reset_peak_memory(int device) -> ()", resetPeak);
  m.def("transfer_stats(int device) -> float[]", transferStats);
  m.def("reset_transfer_stats(int device) -> ()", resetTransferStats);
  m.def("advance_clock(int device, float ns) -> float", advanceClock);
  m.def("count_host_transfer(int device, bool to_device, int bytes) -> ()", countHostTransfer);
}

} // namespace neuron::device
