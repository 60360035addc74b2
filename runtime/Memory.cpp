// Functional memory of one simulated core (see Memory.h).
#include "runtime/Memory.h"

#include "runtime/Simulator.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace neuron::runtime {

namespace {

// calloc, because the OS hands out zero pages lazily: a 28 MiB SBUF costs
// only the pages a program touches.
uint8_t *allocate(int64_t bytes, bool poison) {
  size_t n = size_t(bytes > 0 ? bytes : 1);
  void *p = std::calloc(n, 1);
  if (!p)
    throw std::bad_alloc();
  if (poison)
    std::memset(p, 0xff, n);
  return static_cast<uint8_t *>(p);
}

std::string bufferLabel(size_t i, const BufferDecl &b) {
  return "buffer " + std::to_string(i) + " (\"" + b.name + "\")";
}

} // namespace

Memory::Memory(const Program &program, const Target &target,
               const std::vector<const void *> &inputs,
               const std::vector<void *> &outputs, bool poison)
    : sbufPartBytes_(target.sbufBytesPerPartition),
      psumPartBytes_(target.psumBytesPerPartition) {
  try {
    hbm_.resize(program.buffers.size());
    for (size_t i = 0; i < program.buffers.size(); ++i) {
      const BufferDecl &b = program.buffers[i];
      switch (b.kind) {
      case BufferDecl::Kind::Input:
      case BufferDecl::Kind::Output: {
        bool in = b.kind == BufferDecl::Kind::Input;
        size_t count = in ? inputs.size() : outputs.size();
        if (b.index < 0 || size_t(b.index) >= count)
          throw SimulationError(bufferLabel(i, b) + " is " +
                                (in ? "input " : "output ") +
                                std::to_string(b.index) + " but " +
                                std::to_string(count) + " were passed");
        const void *p = in ? inputs[b.index] : outputs[b.index];
        if (!p && b.numBytes() > 0)
          throw SimulationError(bufferLabel(i, b) + ": null pointer passed");
        // Inputs are never written: checkInstruction rejects such writes.
        hbm_[i] = static_cast<uint8_t *>(const_cast<void *>(p));
        break;
      }
      case BufferDecl::Kind::Constant:
        if (int64_t(b.data.size()) != b.numBytes())
          throw SimulationError(
              bufferLabel(i, b) + " holds " + std::to_string(b.data.size()) +
              " bytes of data but declares " + std::to_string(b.numBytes()));
        // Constants are never written either.
        hbm_[i] = const_cast<uint8_t *>(b.data.data());
        break;
      case BufferDecl::Kind::Internal:
        owned_.push_back(allocate(b.numBytes(), poison));
        hbm_[i] = owned_.back();
        break;
      }
    }
    sbuf_ = allocate(int64_t(target.partitions) * sbufPartBytes_, poison);
    psum_ = allocate(int64_t(target.partitions) * psumPartBytes_, poison);
  } catch (...) {
    for (uint8_t *p : owned_)
      std::free(p);
    std::free(sbuf_);
    throw;
  }
}

Memory::~Memory() {
  for (uint8_t *p : owned_)
    std::free(p);
  std::free(sbuf_);
  std::free(psum_);
}

View Memory::view(const AccessPattern &ap) const {
  switch (ap.space) {
  case MemSpace::Hbm:
    return View::make(hbm_[ap.buffer] + ap.offset * dtypeSize(ap.dtype),
                      ap.dtype, ap.dims, 0, false);
  case MemSpace::Sbuf:
    return View::make(sbuf_ + int64_t(ap.partition) * sbufPartBytes_ +
                          ap.offset,
                      ap.dtype, ap.dims, sbufPartBytes_, true);
  case MemSpace::Psum:
    return View::make(psum_ + int64_t(ap.partition) * psumPartBytes_ +
                          ap.offset,
                      ap.dtype, ap.dims, psumPartBytes_, true);
  }
  return View();
}

} // namespace neuron::runtime
