// Helpers that build small Programs by hand for the runtime tests.
#pragma once

#include "runtime/Program.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace neuron::runtime::test {

/// A tile on chip: `parts` partitions from `partition`, byte `offset`, and
/// contiguous row-major free dims `free`.
inline AccessPattern onChip(MemSpace space, DType dt, uint32_t partition,
                            int64_t offset, int64_t parts,
                            std::vector<int64_t> free) {
  AccessPattern ap;
  ap.space = space;
  ap.dtype = dt;
  ap.partition = partition;
  ap.offset = offset;
  ap.dims.push_back({1, parts});
  int64_t stride = 1;
  std::vector<std::array<int64_t, 2>> rev;
  for (auto it = free.rbegin(); it != free.rend(); ++it) {
    rev.push_back({stride, *it});
    stride *= *it;
  }
  ap.dims.insert(ap.dims.end(), rev.rbegin(), rev.rend());
  return ap;
}

inline AccessPattern sbuf(DType dt, uint32_t partition, int64_t offset,
                          int64_t parts, std::vector<int64_t> free) {
  return onChip(MemSpace::Sbuf, dt, partition, offset, parts, std::move(free));
}

inline AccessPattern psum(DType dt, uint32_t partition, int64_t offset,
                          int64_t parts, std::vector<int64_t> free) {
  return onChip(MemSpace::Psum, dt, partition, offset, parts, std::move(free));
}

/// An HBM view of buffer `buffer` with explicit {stride, size} dims.
inline AccessPattern hbm(uint32_t buffer, DType dt, int64_t offset,
                         std::vector<std::array<int64_t, 2>> dims) {
  AccessPattern ap;
  ap.space = MemSpace::Hbm;
  ap.dtype = dt;
  ap.buffer = buffer;
  ap.offset = offset;
  ap.dims = std::move(dims);
  return ap;
}

struct Builder {
  Program prog;
  int inputs = 0, outputs = 0;

  Builder() { prog.target = "trn2"; }

  uint32_t buffer(BufferDecl::Kind kind, const std::string &name, DType dt,
                  std::vector<int64_t> shape) {
    BufferDecl b;
    b.name = name;
    b.kind = kind;
    b.dtype = dt;
    b.shape = std::move(shape);
    if (kind == BufferDecl::Kind::Input)
      b.index = inputs++;
    if (kind == BufferDecl::Kind::Output)
      b.index = outputs++;
    prog.buffers.push_back(b);
    return uint32_t(prog.buffers.size() - 1);
  }
  uint32_t input(const std::string &n, DType dt, std::vector<int64_t> s) {
    return buffer(BufferDecl::Kind::Input, n, dt, std::move(s));
  }
  uint32_t output(const std::string &n, DType dt, std::vector<int64_t> s) {
    return buffer(BufferDecl::Kind::Output, n, dt, std::move(s));
  }

  size_t add(Instruction in) {
    prog.instructions.push_back(std::move(in));
    return prog.instructions.size() - 1;
  }

  size_t dma(int queue, AccessPattern dst, AccessPattern src,
             std::vector<SemWait> waits = {}) {
    Instruction in;
    in.opcode = Opcode::DmaCopy;
    in.queue = uint16_t(queue);
    in.dst = std::move(dst);
    in.srcs = {std::move(src)};
    in.waits = std::move(waits);
    return add(std::move(in));
  }

  size_t op(Opcode opc, int queue, AccessPattern dst,
            std::vector<AccessPattern> srcs, std::vector<SemWait> waits = {}) {
    Instruction in;
    in.opcode = opc;
    in.queue = uint16_t(queue);
    in.dst = std::move(dst);
    in.srcs = std::move(srcs);
    in.waits = std::move(waits);
    if (opc == Opcode::Activation)
      in.imm[0] = 1.0; // scale 1, bias 0
    return add(std::move(in));
  }

  Instruction &last() { return prog.instructions.back(); }
};

/// Raw bytes of a vector, e.g. for constant buffer data.
template <class T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(out.data(), v.data(), out.size());
  return out;
}

} // namespace neuron::runtime::test
