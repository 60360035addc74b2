#include "runtime/simulator/functional/Control.h"

#include "runtime/simulator/functional/StridedView.h"

#include <array>
#include <cstring>
#include <vector>

namespace neuron::runtime {

int64_t loadRegisterValue(Memory &mem, const AccessPattern &ap) {
  mem.prepare(ap, false);
  const uint8_t *p = mem.view(ap).base;
  switch (ap.dtype) {
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I8:
    return int8_t(*p);
  default: // U8 (Checks.cpp admits i32, i8, u8)
    return *p;
  }
}

void storeRegisterValue(Memory &mem, const AccessPattern &ap, int32_t value) {
  mem.prepare(ap, true);
  uint8_t *p = mem.view(ap).base;
  if (ap.dtype == DType::I32)
    std::memcpy(p, &value, 4);
  else // I8, U8: the low byte
    *p = uint8_t(uint32_t(value) & 0xFF);
}

void exchangeTiles(Memory &mem, const Instruction &a, const Instruction &b) {
  const Instruction *ends[2] = {&a, &b};
  std::vector<uint8_t> sent[2];
  for (int k = 0; k < 2; ++k) { // read both sources first
    const AccessPattern &src = ends[k]->srcs[0];
    mem.prepare(src, false);
    sent[k].resize(size_t(src.numBytes()));
    const std::vector<std::array<int64_t, 2>> flat = {{1, src.numElements()}};
    copyElements(View::make(sent[k].data(), src.dtype, flat, 0, false), mem.view(src));
  }
  for (int k = 0; k < 2; ++k) { // each dst receives the other end's source
    const AccessPattern &dst = ends[k]->dst;
    mem.prepare(dst, true);
    const std::vector<std::array<int64_t, 2>> flat = {{1, dst.numElements()}};
    copyElements(mem.view(dst), View::make(sent[1 - k].data(), dst.dtype, flat, 0, false));
  }
}

} // namespace neuron::runtime
