// Helpers that build small Programs by hand for the runtime tests.
#pragma once

#include "runtime/program/Program.h"

#include <algorithm>
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

/// The loop term coef * iv[level], or coef * (iv[level] % modulus) if
/// modulus > 0.
inline LoopTerm term(int level, int64_t coef, int64_t modulus = 0) {
  LoopTerm t;
  t.level = uint8_t(level);
  t.coef = coef;
  t.modulus = modulus;
  return t;
}

/// `ap` with loop terms added to its offset.
inline AccessPattern withTerms(AccessPattern ap, std::vector<LoopTerm> terms) {
  ap.offsetTerms = std::move(terms);
  return ap;
}

/// Wait for `value` (+ `terms`) completions of `queue`.
inline SemWait waitFor(int queue, int64_t value,
                       std::vector<LoopTerm> terms = {}) {
  SemWait w;
  w.queue = uint16_t(queue);
  w.value = value;
  w.valueTerms = std::move(terms);
  return w;
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

  /// Orders a loop-free program completely: each instruction waits for every
  /// instruction before it on the other queues, so the simulated schedule
  /// follows program order (no hazards) whatever the tests' instructions
  /// touch. Tests of kernels use it; tests of scheduling set waits by hand.
  /// Idempotent; call it after the last instruction is added.
  void sequential() {
    if (sequenced_)
      return;
    sequenced_ = true;
    std::vector<int64_t> issued(kNumQueues, 0);
    for (Instruction &in : prog.instructions) {
      for (int q = 0; q < kNumQueues; ++q)
        if (q != in.queue && issued[size_t(q)] > 0)
          in.waits.push_back(waitFor(q, issued[size_t(q)]));
      ++issued[in.queue];
    }
  }

  Instruction &last() { return prog.instructions.back(); }
  bool sequenced_ = false;

  /// Index the next added instruction gets.
  size_t next() const { return prog.instructions.size(); }

  /// Makes the instructions added since index `begin` the body of a loop that
  /// runs `count` times. Call it after the body, so that a loop comes after
  /// the loops inside it; prog.loops is kept sorted (by begin, outer loops
  /// first; of two loops over the same range, the later one is outer).
  void loop(size_t begin, int64_t count) {
    Loop l;
    l.begin = uint32_t(begin);
    l.end = uint32_t(prog.instructions.size());
    l.count = count;
    auto at = std::find_if(prog.loops.begin(), prog.loops.end(),
                           [&](const Loop &o) {
                             return o.begin > l.begin ||
                                    (o.begin == l.begin && o.end <= l.end);
                           });
    prog.loops.insert(at, l);
  }
};

namespace detail {

inline int64_t termsAt(int64_t base, const std::vector<LoopTerm> &terms,
                       const std::vector<int64_t> &iv) {
  for (const LoopTerm &t : terms) {
    const int64_t v = iv.at(t.level);
    base += t.coef * (t.modulus > 0 ? v % t.modulus : v);
  }
  return base;
}

/// `in` with its loop terms evaluated at the induction variables `iv`.
inline Instruction instanceOf(const Instruction &in,
                              const std::vector<int64_t> &iv) {
  Instruction out = in;
  auto bind = [&](AccessPattern &ap) {
    ap.offset = termsAt(ap.offset, ap.offsetTerms, iv);
    ap.offsetTerms.clear();
  };
  bind(out.dst);
  for (AccessPattern &s : out.srcs)
    bind(s);
  for (SemWait &w : out.waits) {
    w.value = termsAt(w.value, w.valueTerms, iv);
    w.valueTerms.clear();
  }
  return out;
}

/// Appends instructions [begin, end) of `p` to `out`, expanding the loops
/// p.loops[k..] that start inside the range; `iv` holds the enclosing loops'
/// induction variables. `origin` receives each instance's static index.
inline void unrollRange(const Program &p, size_t begin, size_t end, size_t k,
                        std::vector<int64_t> &iv, Program &out,
                        std::vector<size_t> &origin) {
  for (size_t i = begin; i < end;) {
    if (k < p.loops.size() && p.loops[k].begin == i) {
      const Loop &l = p.loops[k];
      size_t after = k + 1; // the first loop not nested in l
      while (after < p.loops.size() && p.loops[after].begin < l.end)
        ++after;
      for (int64_t t = 0; t < l.count; ++t) {
        iv.push_back(t);
        unrollRange(p, l.begin, l.end, k + 1, iv, out, origin);
        iv.pop_back();
      }
      i = l.end;
      k = after;
    } else {
      out.instructions.push_back(instanceOf(p.instructions[i], iv));
      origin.push_back(i);
      ++i;
    }
  }
}

} // namespace detail

/// The loop-free program that runs the same instruction instances as `p`, in
/// the same order (an independent reference for the simulator's loops).
/// `origin` (optional) receives the static index of each instance.
inline Program unrolled(const Program &p,
                        std::vector<size_t> *origin = nullptr) {
  Program out = p;
  out.instructions.clear();
  out.loops.clear();
  std::vector<int64_t> iv;
  std::vector<size_t> ignored;
  detail::unrollRange(p, 0, p.instructions.size(), 0, iv, out,
                      origin ? *origin : ignored);
  return out;
}

/// Raw bytes of a vector, e.g. for constant buffer data.
template <class T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(out.data(), v.data(), out.size());
  return out;
}

} // namespace neuron::runtime::test
