// Functional execution: elementwise ops, reductions, matmul, copies.
//
// Float instructions run the fp32 kernels of Kernels.h on chunks of at most
// kChunkF elements, aligned to the operands' contiguous runs: an fp32 operand
// whose run covers the chunk is used in place; any other operand is gathered
// into (or scattered from) an L1-sized scratch array with dtype conversion.
// Instructions whose operands and dst are all integers (integerPath) compute
// exactly in int64 with two's-complement wrap, as torch's integer tensors;
// an integer division by zero raises SimulationError (torch raises
// ZeroDivisionError). Mixed integer and float operands take the float path,
// the integers converted to fp32 first, as torch promotes them. Iota, and
// integer instructions that int64 cannot do exactly (a fractional immediate),
// compute in double through the generic functors of ElementOps.h. Matmul
// packs its operands into panels (bf16 rows in one step:
// kernels::packBf16Panels) and runs the blocked kernel of MatmulKernel.cpp
// straight into PSUM.
// Select takes the float path when its two value operands and dst are float
// (the condition, often i1, converts to float without turning non-zero into
// zero); on a 1-byte condition with bf16 or fp32 values and dst it copies the
// values' bits instead (selectBits: the same result). Sources may be
// broadcast along the row (innermost free stride 0): they never run in place
// and are gathered with one load per run; a tensor_tensor whose one source
// is broadcast over a chunk runs as tensor_scalar. bf16 -> fp32 copies
// convert straight into a contiguous dst. DmaGather copies one table row per
// destination partition, checking each index; DmaScatter writes (or combines
// into) one table row per source partition, in partition order. Every fast path gives the bits
// of the general path it replaces (test_fast_paths.cpp).
#include "runtime/simulator/functional/Execute.h"
#include "runtime/simulator/functional/IsaOps.h"
#include "runtime/simulator/functional/Random.h"

#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/ElementOps.h"
#include "runtime/simulator/functional/Kernels.h"
#include "runtime/simulator/functional/Numerics.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace neuron::runtime {

namespace {

constexpr int64_t kChunk = 4096;  // double path
constexpr int64_t kChunkF = 2048; // float path: 3 x 8 KiB of scratch
constexpr int64_t kMinInPlaceRun = 64;

/// The next `n` elements of `c` are fp32 and contiguous: usable in place.
bool directF32(const Cursor &c, int64_t n) {
  return c.view().dtype == DType::F32 && c.innerStride() == 4 &&
         c.run() >= n && (reinterpret_cast<uintptr_t>(c.ptr()) & 3) == 0;
}

/// Byte range of the next `n` elements of `c` if they lie in its current run;
/// else the whole address space (unknown: assume it overlaps everything).
struct Range {
  const uint8_t *lo, *hi;
};
Range nextRange(const Cursor &c, int64_t n) {
  if (c.run() < n)
    return {nullptr, reinterpret_cast<const uint8_t *>(~uintptr_t(0))};
  const int64_t span = (n - 1) * c.innerStride();
  const uint8_t *p = c.ptr();
  return {std::min(p, p + span), std::max(p, p + span) + c.view().elemBytes};
}
bool overlap(Range a, Range b) { return a.lo < b.hi && b.lo < a.hi; }

float combine(AluOp op, float a, float b) {
  switch (op) {
  case AluOp::Mul:
    return a * b;
  case AluOp::Max:
    return (a > b || a != a) ? a : b;
  case AluOp::Min:
    return (a < b || a != a) ? a : b;
  default:
    return a + b;
  }
}

/// Lowest and one-past-highest byte of `ap` inside a partition (SBUF/PSUM)
/// or its buffer (HBM).
void bytesOf(const AccessPattern &ap, int64_t &lo, int64_t &hi) {
  const int64_t eb = dtypeSize(ap.dtype);
  lo = ap.space == MemSpace::Hbm ? ap.offset * eb : ap.offset;
  hi = lo + eb;
  for (size_t i = ap.space == MemSpace::Hbm ? 0 : 1; i < ap.dims.size(); ++i) {
    const int64_t ext = ap.dims[i][0] * (ap.dims[i][1] - 1) * eb;
    (ext < 0 ? lo : hi) += ext;
  }
}

/// Whether two (checked) access patterns share no byte. Conservative: false
/// when unsure.
bool disjoint(const AccessPattern &x, const AccessPattern &y) {
  if (x.space != y.space)
    return true;
  if (x.space == MemSpace::Hbm && x.buffer != y.buffer)
    return true;
  int64_t xlo, xhi, ylo, yhi;
  bytesOf(x, xlo, xhi);
  bytesOf(y, ylo, yhi);
  if (xhi <= ylo || yhi <= xlo)
    return true;
  if (x.space == MemSpace::Hbm)
    return false;
  // On chip: partitions first .. last of each (any stride) must not meet.
  auto last = [](const AccessPattern &a) {
    return int64_t(a.partition) + a.dims[0][0] * (a.dims[0][1] - 1);
  };
  const int64_t x0 = std::min<int64_t>(x.partition, last(x)),
                x1 = std::max<int64_t>(x.partition, last(x)),
                y0 = std::min<int64_t>(y.partition, last(y)),
                y1 = std::max<int64_t>(y.partition, last(y));
  return x1 < y0 || y1 < x0;
}

/// Whether two access patterns visit the same elements in the same order.
bool sameElements(const AccessPattern &x, const AccessPattern &y) {
  return x.space == y.space && x.dtype == y.dtype && x.buffer == y.buffer &&
         x.partition == y.partition && x.offset == y.offset &&
         x.dims == y.dims;
}

/// Whether `inst` computes in double (Executor::elementwise): an iota, or an
/// integer instruction that integerPath rejects (a fractional immediate, an
/// inexact activation). Instructions with a float value operand or a float
/// dst compute in fp32 like the float ones, their integer operands converted
/// to fp32 first (rounded once): torch promotes int and float operands to
/// the float dtype and computes in it, so 2^24 + 1 < 16777216.0 is false.
bool doublePath(const Instruction &inst) {
  if (inst.opcode == Opcode::Iota)
    return true;
  if (!isIntegerDType(inst.dst.dtype))
    return false;
  for (size_t k = inst.opcode == Opcode::Select ? 1 : 0; k < inst.srcs.size();
       ++k)
    if (!isIntegerDType(inst.srcs[k].dtype))
      return false;
  return true;
}

/// Whether `inst` computes exactly in int64 (Executor::elementwiseInt,
/// reduceInt): its dst and value sources are integers (a select's condition
/// may be anything) and the immediates it uses are int64 integers. Immediates
/// are doubles: an integer instruction whose immediate is fractional or
/// beyond int64 computes in double instead (exact up to 2^53, then stored
/// as Numerics.h converts).
bool integerPath(const Instruction &inst) {
  auto intSrc = [&](size_t k) { return isIntegerDType(inst.srcs[k].dtype); };
  // int -> float copies too: int64 -> fp32 rounds once, as torch (through
  // double it would round twice).
  if (inst.opcode == Opcode::TensorCopy)
    return intSrc(0);
  if (!isIntegerDType(inst.dst.dtype))
    return false;
  switch (inst.opcode) {
  case Opcode::TensorTensor:
    return intSrc(0) && intSrc(1);
  case Opcode::TensorScalar:
    return intSrc(0) && isExactInt64(inst.imm[0]);
  case Opcode::TensorReduce:
    return intSrc(0);
  case Opcode::Select:
    return intSrc(1) && intSrc(2);
  case Opcode::Memset:
    return isExactInt64(inst.imm[0]);
  case Opcode::Iota:
    return isExactInt64(inst.imm[0]) && isExactInt64(inst.imm[1]);
  case Opcode::Activation:
    return intSrc(0) && isIntActFunc(inst.func) &&
           isExactInt64(inst.imm[0]) && isExactInt64(inst.imm[1]);
  default:
    return false;
  }
}

/// Throws if an integer div or mod divides by zero: divisor[0..n) are the
/// divisors of the dst elements from flat index `first` (-1: one immediate
/// for all); `operand` names them.
void checkDivisors(size_t index, const Instruction &inst,
                   const int64_t *divisor, int64_t n, int64_t first,
                   const char *operand) {
  if (inst.alu != AluOp::Div && inst.alu != AluOp::Mod && inst.alu != AluOp::Fmod)
    return;
  for (int64_t i = 0; i < n; ++i)
    if (divisor[i] == 0)
      failInstruction(
          index, inst,
          std::string("integer ") + aluOpName(inst.alu) +
              " by zero (torch raises ZeroDivisionError): " + operand +
              " is 0" +
              (first < 0 ? std::string()
                         : " at element " + std::to_string(first + i)) +
              " (" + dtypeName(inst.dst.dtype) + " dst)");
}

} // namespace

template <class T> T *Executor::scratch(int slot, size_t n) {
  auto &v = [&]() -> std::vector<T> & {
    if constexpr (std::is_same_v<T, float>)
      return fbuf_[slot];
    else if constexpr (std::is_same_v<T, int64_t>)
      return ibuf_[slot];
    else
      return dbuf_[slot];
  }();
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

void Executor::random(const Instruction &inst, uint64_t seed, uint64_t first) {
  mem_.prepare(inst);
  if (inst.opcode == Opcode::Dropout) {
    dropout(inst, seed, first);
    return;
  }
  const View dv = mem_.view(inst.dst);
  Cursor d(dv);
  const int64_t total = dv.numElements();
  const uint64_t stream = uint64_t(inst.imm[0]);
  const DType dt = inst.dst.dtype; // the significand bits of dst (a u < 1 stays below 1)
  const int bits = dt == DType::BF16     ? 8
                   : dt == DType::F16    ? 11
                   : dt == DType::F8E4M3FN ? 4
                   : dt == DType::F8E5M2 ? 3
                                         : 24;
  float *o = scratch<float>(0, kChunk);
  for (int64_t off = 0; off < total; off += kChunk) {
    const int64_t n = std::min(kChunk, total - off);
    for (int64_t j = 0; j < n; ++j)
      o[j] = uniform01(seed, stream, first + uint64_t(off + j), bits);
    scatter(d, o, n);
  }
}

/// dst = u < prob ? 0 : src, u the element's number of stream imm[1] (Random.h, 24 bits).
void Executor::dropout(const Instruction &inst, uint64_t seed, uint64_t first) {
  const int64_t parts = inst.dst.dims[0][1], total = inst.dst.numElements(),
                n = total / std::max<int64_t>(parts, 1);
  std::vector<float> prob(size_t(parts), float(inst.imm[0]));
  if (inst.scaleTile) {
    std::vector<float> tile(size_t(inst.srcs[1].numElements()));
    Cursor c(mem_.view(inst.srcs[1]));
    gather(c, tile.data(), int64_t(tile.size()));
    const size_t m = tile.size() / size_t(parts);
    for (int64_t p = 0; p < parts; ++p)
      prob[size_t(p)] = tile[size_t(p) * m];
  }
  const uint64_t stream = uint64_t(inst.imm[1]);
  Cursor s(mem_.view(inst.srcs[0])), d(mem_.view(inst.dst));
  auto drop = [&](int64_t e) {
    return uniform01(seed, stream, first + uint64_t(e)) < prob[size_t(e / n)];
  };
  if (isIntegerDType(inst.dst.dtype)) {
    std::vector<int64_t> v(static_cast<size_t>(total));
    gather(s, v.data(), total);
    for (int64_t e = 0; e < total; ++e)
      if (drop(e))
        v[size_t(e)] = 0;
    scatter(d, v.data(), total);
    return;
  }
  std::vector<float> v(static_cast<size_t>(total));
  gather(s, v.data(), total);
  for (int64_t e = 0; e < total; ++e)
    if (drop(e))
      v[size_t(e)] = 0;
  scatter(d, v.data(), total);
}

void Executor::elementwiseInt(size_t index, const Instruction &inst,
                              const InstrShape &shape) {
  const View dv = mem_.view(inst.dst);
  Cursor d(dv);
  Cursor s0(inst.srcs.size() > 0 ? mem_.view(inst.srcs[0]) : dv);
  Cursor s1(inst.srcs.size() > 1 ? mem_.view(inst.srcs[1]) : dv);
  Cursor s2(inst.srcs.size() > 2 ? mem_.view(inst.srcs[2]) : dv);
  const int64_t total = dv.numElements();
  int64_t *a = scratch<int64_t>(0, kChunk), *b = scratch<int64_t>(1, kChunk),
          *o = scratch<int64_t>(2, kChunk), *c = scratch<int64_t>(3, kChunk);
  // Only the immediates the opcode uses are int64 integers (integerPath).
  auto imm = [&](int k) { return int64_t(inst.imm[k]); };
  const bool logical = inst.dst.dtype == DType::Bool;
  const int64_t freeElems = shape.freeElems;

  for (int64_t off = 0; off < total; off += kChunk) {
    const int64_t n = std::min(kChunk, total - off);
    switch (inst.opcode) {
    case Opcode::Activation: {
      const int64_t scale = imm(0), bias = imm(1);
      gather(s0, a, n);
      withIntActFunc(inst.func, [&](auto f) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(wrapAdd(wrapMul(a[i], scale), bias));
      });
      break;
    }
    case Opcode::TensorTensor:
      gather(s0, a, n);
      gather(s1, b, n);
      checkDivisors(index, inst, b, n, off, "srcs[1]");
      withIntAluOp(inst.alu, logical, [&](auto f) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(a[i], b[i]);
      });
      break;
    case Opcode::TensorScalar: {
      const int64_t s = imm(0);
      gather(s0, a, n);
      if (inst.reverse)
        checkDivisors(index, inst, a, n, off, "srcs[0]");
      else
        checkDivisors(index, inst, &s, 1, -1, "the immediate");
      withIntAluOp(inst.alu, logical, [&](auto f) {
        if (inst.reverse)
          for (int64_t i = 0; i < n; ++i)
            o[i] = f(s, a[i]);
        else
          for (int64_t i = 0; i < n; ++i)
            o[i] = f(a[i], s);
      });
      break;
    }
    case Opcode::TensorCopy:
      gather(s0, o, n);
      break;
    case Opcode::Select:
      if (isIntegerDType(s0.view().dtype)) {
        gather(s0, a, n);
      } else { // a float condition: tested in float (0.5 and NaN are true)
        double *fc = scratch<double>(0, size_t(n));
        gather(s0, fc, n);
        for (int64_t i = 0; i < n; ++i)
          a[i] = fc[i] != 0.0;
      }
      gather(s1, b, n);
      gather(s2, c, n);
      for (int64_t i = 0; i < n; ++i)
        o[i] = a[i] != 0 ? b[i] : c[i];
      break;
    case Opcode::Memset:
      std::fill(o, o + n, imm(0));
      break;
    case Opcode::Iota: {
      // dst[p, i] = imm0 + imm1 * p + i, p relative to the first partition.
      int64_t p = off / freeElems, i = off % freeElems;
      for (int64_t j = 0; j < n; ++j) {
        o[j] = wrapAdd(wrapAdd(imm(0), wrapMul(imm(1), p)), i);
        if (++i == freeElems) {
          i = 0;
          ++p;
        }
      }
      break;
    }
    default:
      break;
    }
    scatter(d, o, n);
  }
}

void Executor::reduceInt(const Instruction &inst) {
  const AccessPattern &src = inst.srcs[0];
  int64_t group = 1; // elements reduced into one output
  for (size_t k = src.dims.size() - inst.axes; k < src.dims.size(); ++k)
    group *= src.dims[k][1];
  const View sv = mem_.view(src);
  Cursor s(sv), d(mem_.view(inst.dst));
  const int64_t total = sv.numElements();
  int64_t *a = scratch<int64_t>(0, kChunk), *o = scratch<int64_t>(2, kChunk);
  const int64_t init = intReduceInit(inst.alu);
  int64_t acc = init, inGroup = 0, nout = 0;

  withIntAluOp(inst.alu, false, [&](auto f) {
    for (int64_t off = 0; off < total; off += kChunk) {
      const int64_t n = std::min(kChunk, total - off);
      gather(s, a, n);
      for (int64_t i = 0; i < n; ++i) {
        acc = f(acc, a[i]);
        if (++inGroup == group) {
          o[nout++] = acc;
          acc = init;
          inGroup = 0;
          if (nout == kChunk) {
            scatter(d, o, nout);
            nout = 0;
          }
        }
      }
    }
  });
  scatter(d, o, nout);
}

template <class T>
void Executor::elementwise(const Instruction &inst, const InstrShape &shape) {
  const View dv = mem_.view(inst.dst);
  Cursor d(dv);
  Cursor s0(inst.srcs.size() > 0 ? mem_.view(inst.srcs[0]) : dv);
  Cursor s1(inst.srcs.size() > 1 ? mem_.view(inst.srcs[1]) : dv);
  Cursor s2(inst.srcs.size() > 2 ? mem_.view(inst.srcs[2]) : dv);
  const int64_t total = dv.numElements();
  T *a = scratch<T>(0, kChunk), *b = scratch<T>(1, kChunk),
    *o = scratch<T>(2, kChunk), *c = scratch<T>(3, kChunk);
  const T imm0 = T(inst.imm[0]), imm1 = T(inst.imm[1]);
  const int64_t freeElems = shape.freeElems;

  for (int64_t off = 0; off < total; off += kChunk) {
    const int64_t n = std::min(kChunk, total - off);
    switch (inst.opcode) {
    case Opcode::Activation:
      gather(s0, a, n);
      withActFunc<T>(inst.func, [&](auto f) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(imm1 == T(0) ? a[i] * imm0 : a[i] * imm0 + imm1); // bias 0: none (-0 kept)
      });
      break;
    case Opcode::TensorTensor:
      gather(s0, a, n);
      gather(s1, b, n);
      withAluOp<T>(inst.alu, [&](auto f) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(a[i], b[i]);
      });
      break;
    case Opcode::TensorScalar:
      gather(s0, a, n);
      withAluOp<T>(inst.alu, [&](auto f) {
        if (inst.reverse)
          for (int64_t i = 0; i < n; ++i)
            o[i] = f(imm0, a[i]);
        else
          for (int64_t i = 0; i < n; ++i)
            o[i] = f(a[i], imm0);
      });
      break;
    case Opcode::TensorCopy:
      gather(s0, o, n);
      break;
    case Opcode::Select:
      gather(s0, a, n);
      gather(s1, b, n);
      gather(s2, c, n);
      for (int64_t i = 0; i < n; ++i)
        o[i] = a[i] != T(0) ? b[i] : c[i];
      break;
    case Opcode::Memset:
      std::fill(o, o + n, imm0);
      break;
    case Opcode::Iota: {
      // dst[p, i] = imm0 + imm1 * p + i, p relative to the first partition.
      int64_t p = off / freeElems, i = off % freeElems;
      for (int64_t j = 0; j < n; ++j) {
        o[j] = T(inst.imm[0] + inst.imm[1] * double(p) + double(i));
        if (++i == freeElems) {
          i = 0;
          ++p;
        }
      }
      break;
    }
    default:
      break;
    }
    scatter(d, o, n);
  }
}

void Executor::elementwiseF32(const Instruction &inst) {
  const View dv = mem_.view(inst.dst);
  // An activation that reduces (`accumulate`) sums its rows into the Scalar engine's
  // accumulator registers; its reduce result, if any, is its last source, written.
  const bool rowSums = inst.opcode == Opcode::Activation && inst.accumulate;
  const bool result = optionalReduceResult(inst);
  const size_t nsrc = inst.srcs.size() - (result ? 1 : 0);
  const int64_t rowLength = std::max<int64_t>(1, inst.dst.numElements() / inst.dst.dims[0][1]);
  std::vector<float> sums(rowSums ? size_t(inst.dst.dims[0][1]) : 0, 0.0f);
  Cursor d(dv);
  Cursor s0(nsrc > 0 ? mem_.view(inst.srcs[0]) : dv);
  Cursor s1(nsrc > 1 ? mem_.view(inst.srcs[1]) : dv);
  Cursor s2(nsrc > 2 ? mem_.view(inst.srcs[2]) : dv);
  const int64_t total = dv.numElements();
  float *ba = scratch<float>(0, kChunkF), *bb = scratch<float>(1, kChunkF),
        *bo = scratch<float>(2, kChunkF), *bc = scratch<float>(3, kChunkF);
  const float imm0 = float(inst.imm[0]), imm1 = float(inst.imm[1]);

  for (int64_t off = 0; off < total;) {
    int64_t n = std::min(kChunkF, total - off);
    // Cut chunks at the end of long runs so that each can be used in place.
    auto align = [&](const Cursor &c) {
      if (c.run() >= kMinInPlaceRun)
        n = std::min(n, c.run());
    };
    align(d);
    if (nsrc > 0)
      align(s0);
    if (nsrc > 1)
      align(s1);
    if (nsrc > 2)
      align(s2);
    const Range dr = nextRange(d, n);

    // bf16 -> fp32 copy into a disjoint contiguous dst: convert in place.
    if (inst.opcode == Opcode::TensorCopy &&
        s0.view().dtype == DType::BF16 && s0.innerStride() == 2 &&
        s0.run() >= n && (reinterpret_cast<uintptr_t>(s0.ptr()) & 1) == 0 &&
        directF32(d, n) && !overlap(nextRange(s0, n), dr)) {
      kernels::bf16ToF32(reinterpret_cast<const uint16_t *>(s0.ptr()),
                         reinterpret_cast<float *>(d.ptr()), n);
      s0.advance(n);
      d.advance(n);
      off += n;
      continue;
    }

    // A tensor_tensor source that is one value over the chunk (broadcast
    // along the row) is a scalar operand: tensor_scalar with that value
    // computes the same (each element is one IEEE operation either way).
    int scalarSide = -1; // which source, if any
    float scalar = 0;
    if (inst.opcode == Opcode::TensorTensor) {
      const bool b0 = s0.innerStride() == 0 && s0.run() >= n,
                 b1 = s1.innerStride() == 0 && s1.run() >= n;
      if (b0 != b1) {
        Cursor &sc = b0 ? s0 : s1;
        loadRun(sc.ptr(), 0, sc.view().dtype, &scalar, 1);
        sc.advance(n);
        scalarSide = b0 ? 0 : 1;
      }
    }

    // Sources: in place, or converted into scratch.
    const float *a = nullptr, *b = nullptr, *c = nullptr;
    bool aliasOk = true; // no in-place source partially overlaps dst
    auto fetch = [&](Cursor &c, float *buf) -> const float * {
      if (!directF32(c, n)) {
        gather(c, buf, n);
        return buf;
      }
      const float *p = reinterpret_cast<const float *>(c.ptr());
      if (reinterpret_cast<const uint8_t *>(p) != dr.lo &&
          overlap(nextRange(c, n), dr))
        aliasOk = false;
      c.advance(n);
      return p;
    };
    if (nsrc > 0 && scalarSide != 0)
      a = fetch(s0, ba);
    if (nsrc > 1 && scalarSide != 1)
      b = fetch(s1, bb);
    if (nsrc > 2)
      c = fetch(s2, bc);

    if (inst.opcode == Opcode::TensorCopy) { // a dtype conversion
      if (a != ba && !aliasOk) {
        std::copy(a, a + n, bo);
        a = bo;
      }
      scatter(d, a, n);
      off += n;
      continue;
    }

    float *o = bo;
    if (aliasOk && directF32(d, n))
      o = reinterpret_cast<float *>(d.ptr());
    switch (inst.opcode) {
    case Opcode::Activation:
      if (inst.scaleTile || inst.biasTile) {
        // Per-partition scale and bias: x * scale + bias in fp32, then the function. With
        // no bias at all the product is the value (a product of -0 stays -0).
        const float *sc = inst.scaleTile ? b : nullptr;
        const float *bi = inst.biasTile ? (inst.scaleTile ? c : b) : nullptr;
        float *t = inst.func == ActFunc::Identity ? o : scratch<float>(4, size_t(n));
        if (sc && bi)
          for (int64_t i = 0; i < n; ++i)
            t[i] = a[i] * (sc[i] * imm0) + bi[i] * imm1;
        else if (sc && imm1 == 0.0f)
          for (int64_t i = 0; i < n; ++i)
            t[i] = a[i] * (sc[i] * imm0);
        else if (sc)
          for (int64_t i = 0; i < n; ++i)
            t[i] = a[i] * (sc[i] * imm0) + imm1;
        else
          for (int64_t i = 0; i < n; ++i)
            t[i] = a[i] * imm0 + bi[i] * imm1;
        if (t != o)
          kernels::activation(inst.func, t, o, n, 1.0f, 0.0f);
      } else {
        kernels::activation(inst.func, a, o, n, imm0, imm1);
      }
      // Row sums of the activated fp32 values, in order along each row.
      for (int64_t i = 0; rowSums && i < n;) {
        const int64_t row = (off + i) / rowLength;
        const int64_t end = std::min(n, (row + 1) * rowLength - off);
        float sum = 0.0f;
        for (int64_t j = i; j < end; ++j)
          sum += o[j];
        sums[size_t(row)] += sum;
        i = end;
      }
      break;
    case Opcode::TensorTensor:
      if (scalarSide == 1)
        kernels::tensorScalar(inst.alu, a, scalar, false, o, n);
      else if (scalarSide == 0)
        kernels::tensorScalar(inst.alu, b, scalar, true, o, n);
      else
        kernels::tensorTensor(inst.alu, a, b, o, n);
      break;
    case Opcode::TensorScalar:
      kernels::tensorScalar(inst.alu, a, imm0, inst.reverse, o, n);
      break;
    case Opcode::Memset:
      std::fill(o, o + n, imm0);
      break;
    case Opcode::Select:
      for (int64_t i = 0; i < n; ++i)
        o[i] = a[i] != 0.0f ? b[i] : c[i];
      break;
    default:
      break;
    }
    if (o == bo)
      scatter(d, bo, n);
    else
      d.advance(n);
    off += n;
  }
  if (rowSums) {
    // reduce_cmd on the registers of dst's partitions: reset zeroes them, reduce adds the row
    // sums (reset_reduce both); the reduce result reads them.
    float *regs = mem_.scalarAccumulators(coreOfQueue(inst.queue));
    const int64_t step = inst.dst.dims[0][1] > 1 ? inst.dst.dims[0][0] : 1;
    const ReduceCmd cmd = inst.reduceCmd;
    for (size_t p = 0; p < sums.size(); ++p) {
      float &r = regs[size_t(int64_t(inst.dst.partition) + int64_t(p) * step)];
      if (cmd == ReduceCmd::Reset || cmd == ReduceCmd::ResetReduce)
        r = 0.0f;
      if (cmd == ReduceCmd::Reduce || cmd == ReduceCmd::ResetReduce)
        r += sums[p];
      sums[p] = r;
    }
    if (result) {
      Cursor r(mem_.view(inst.srcs.back()));
      scatter(r, sums.data(), int64_t(sums.size()));
    }
  }
}

/// Select of bf16 or fp32 values on a 1-byte condition, when the views
/// allow: the values' bits are copied (a bf16 signaling NaN made quiet),
/// which is what the fp32 path computes. False: not done, use that path.
bool Executor::selectBits(const Instruction &inst) {
  const DType vt = inst.dst.dtype, ct = inst.srcs[0].dtype;
  if ((vt != DType::BF16 && vt != DType::F32) || inst.srcs[1].dtype != vt ||
      inst.srcs[2].dtype != vt ||
      (ct != DType::U8 && ct != DType::I8 && ct != DType::Bool))
    return false;
  // dst must not overlap a source (the fp32 path reads a chunk before it
  // writes it), unless it is that source exactly.
  for (int k = 0; k < 3; ++k)
    if (!disjoint(inst.dst, inst.srcs[size_t(k)]) &&
        !sameElements(inst.dst, inst.srcs[size_t(k)]))
      return false;
  const View dv = mem_.view(inst.dst), cv = mem_.view(inst.srcs[0]),
             av = mem_.view(inst.srcs[1]), bv = mem_.view(inst.srcs[2]);
  const int64_t eb = dtypeSize(vt);
  Cursor d(dv), c(cv), a(av), b(bv);
  for (int64_t left = dv.numElements(); left > 0;) {
    const int64_t k =
        std::min({left, d.run(), c.run(), a.run(), b.run()});
    if (c.innerStride() == 1 && a.innerStride() == eb &&
        b.innerStride() == eb && d.innerStride() == eb &&
        (reinterpret_cast<uintptr_t>(d.ptr()) & (eb - 1)) == 0 &&
        (reinterpret_cast<uintptr_t>(a.ptr()) & (eb - 1)) == 0 &&
        (reinterpret_cast<uintptr_t>(b.ptr()) & (eb - 1)) == 0) {
      if (eb == 2)
        kernels::selectBf16(c.ptr(), reinterpret_cast<const uint16_t *>(a.ptr()),
                            reinterpret_cast<const uint16_t *>(b.ptr()),
                            reinterpret_cast<uint16_t *>(d.ptr()), k);
      else
        kernels::selectF32(c.ptr(), reinterpret_cast<const uint32_t *>(a.ptr()),
                           reinterpret_cast<const uint32_t *>(b.ptr()),
                           reinterpret_cast<uint32_t *>(d.ptr()), k);
    } else {
      const uint8_t *cp = c.ptr(), *ap = a.ptr(), *bp = b.ptr();
      uint8_t *dp = d.ptr();
      for (int64_t i = 0; i < k; ++i) {
        const uint8_t *src = cp[i * c.innerStride()] != 0
                                 ? ap + i * a.innerStride()
                                 : bp + i * b.innerStride();
        if (eb == 2) {
          uint16_t v;
          std::memcpy(&v, src, 2);
          if ((v & 0x7fff) > 0x7f80)
            v |= 0x40;
          std::memcpy(dp + i * d.innerStride(), &v, 2);
        } else {
          std::memcpy(dp + i * d.innerStride(), src, 4);
        }
      }
    }
    d.advance(k);
    c.advance(k);
    a.advance(k);
    b.advance(k);
    left -= k;
  }
  return true;
}

void Executor::reduceF32(const Instruction &inst) {
  const AccessPattern &src = inst.srcs[0];
  int64_t group = 1; // elements reduced into one output
  for (size_t k = src.dims.size() - inst.axes; k < src.dims.size(); ++k)
    group *= src.dims[k][1];
  const View sv = mem_.view(src);
  Cursor s(sv), d(mem_.view(inst.dst));
  const int64_t outputs = sv.numElements() / group;
  float *ba = scratch<float>(0, kChunkF), *o = scratch<float>(2, kChunkF);
  int64_t nout = 0;
  for (int64_t g = 0; g < outputs; ++g) {
    float acc = 0;
    for (int64_t done = 0; done < group;) {
      const int64_t n = std::min(kChunkF, group - done);
      const float *p = ba;
      if (directF32(s, n)) {
        p = reinterpret_cast<const float *>(s.ptr());
        s.advance(n);
      } else {
        gather(s, ba, n);
      }
      const float part = kernels::reduce(inst.alu, p, n);
      acc = done == 0 ? part : combine(inst.alu, acc, part);
      done += n;
    }
    o[nout++] = acc;
    if (nout == kChunkF) {
      scatter(d, o, nout);
      nout = 0;
    }
  }
  scatter(d, o, nout);
}

namespace {

/// Packs the [rows, cols] operand under `c` (row-major walk) into panels of
/// `width` columns: out[(j / width) * rows * width + r * width + j % width].
/// Columns past `cols` up to the panel width are zero.
template <int width>
void packPanels(Cursor &c, int64_t rows, int64_t cols, float *out,
                std::vector<float> &rowBuf) {
  const int64_t panels = (cols + width - 1) / width;
  if (rowBuf.size() < size_t(cols))
    rowBuf.resize(size_t(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = rowBuf.data();
    if (directF32(c, cols)) {
      row = reinterpret_cast<const float *>(c.ptr());
      c.advance(cols);
    } else {
      gather(c, rowBuf.data(), cols);
    }
    const int64_t full = cols / width;
    for (int64_t p = 0; p < full; ++p) { // fixed-size copies: no memmove calls
      float *dst = out + (p * rows + r) * width;
      const float *src = row + p * width;
      for (int j = 0; j < width; ++j)
        dst[j] = src[j];
    }
    if (full < panels) {
      float *dst = out + (full * rows + r) * width;
      const int64_t w = cols - full * width;
      for (int j = 0; j < width; ++j)
        dst[j] = j < w ? row[full * width + j] : 0.0f;
    }
  }
}

/// Whether the [rows, cols] view `v` is `rows` runs of `cols` contiguous
/// bf16 elements, `rowStride` bytes apart.
bool bf16Rows(const View &v, int64_t rows, int64_t cols, int64_t &rowStride) {
  if (v.dtype != DType::BF16 || (reinterpret_cast<uintptr_t>(v.base) & 1))
    return false;
  if (v.ndims == 2 && v.size[0] == rows && v.size[1] == cols &&
      v.stride[1] == 2) {
    rowStride = v.stride[0];
    return true;
  }
  if (v.ndims == 1 && rows == 1 && v.size[0] == cols && v.stride[0] == 2) {
    rowStride = 0;
    return true;
  }
  return false;
}

/// Whether element (i, j) of the [m, n] fp32 view `v` is at
/// base + (i * ldc + j) floats (and then ldc).
bool asRows(const View &v, int64_t m, int64_t n, int64_t &ldc) {
  if (v.dtype != DType::F32 || (reinterpret_cast<uintptr_t>(v.base) & 3))
    return false;
  if (v.ndims == 2 && v.size[0] == m && v.size[1] == n && v.stride[1] == 4 &&
      v.stride[0] > 0 && v.stride[0] % 4 == 0) {
    ldc = v.stride[0] / 4;
    return true;
  }
  if (v.ndims == 1 && m == 1 && v.size[0] == n && v.stride[0] == 4) {
    ldc = n;
    return true;
  }
  if (v.ndims == 1 && n == 1 && v.size[0] == m && v.stride[0] > 0 &&
      v.stride[0] % 4 == 0) {
    ldc = v.stride[0] / 4;
    return true;
  }
  return false;
}

} // namespace

/// Packs the [rows, cols] operand `v` into panels of `width` columns
/// (packPanels).
template <int width>
void Executor::pack(const View &v, int64_t rows, int64_t cols, float *out) {
  int64_t rowStride = 0;
  if (bf16Rows(v, rows, cols, rowStride)) {
    kernels::packBf16Panels(v.base, rowStride, rows, cols, width, out);
    return;
  }
  Cursor c(v);
  packPanels<width>(c, rows, cols, out, mmRow_);
}

void Executor::matmul(const Instruction &inst, const InstrShape &shape) {
  const int64_t k = shape.matmulK, m = shape.matmulM, n = shape.matmulN;
  constexpr int MR = kernels::kMatmulMR, NR = kernels::kMatmulNR;
  const size_t aSize = size_t((m + MR - 1) / MR * MR * k),
               bSize = size_t((n + NR - 1) / NR * NR * k);
  if (mmA_.size() < aSize)
    mmA_.resize(aSize);
  if (mmB_.size() < bSize)
    mmB_.resize(bSize);
  pack<MR>(mem_.view(inst.srcs[0]), k, m, mmA_.data());
  pack<NR>(mem_.view(inst.srcs[1]), k, n, mmB_.data());
  const View dv = mem_.view(inst.dst);
  int64_t ldc = 0;
  if (asRows(dv, m, n, ldc)) {
    kernels::matmulPanels(mmA_.data(), mmB_.data(),
                          reinterpret_cast<float *>(dv.base), k, m, n, ldc,
                          inst.accumulate);
    return;
  }
  if (mmC_.size() < size_t(m * n))
    mmC_.resize(size_t(m * n));
  if (inst.accumulate) {
    Cursor old(dv);
    gather(old, mmC_.data(), m * n);
  }
  kernels::matmulPanels(mmA_.data(), mmB_.data(), mmC_.data(), k, m, n, n,
                        inst.accumulate);
  Cursor d(dv);
  scatter(d, mmC_.data(), m * n);
}

void matmulKernel(const float *a, const float *b, float *c, int64_t k,
                  int64_t m, int64_t n) {
  View va, vb;
  va = View::make(const_cast<uint8_t *>(reinterpret_cast<const uint8_t *>(a)),
                  DType::F32, {{m, k}, {1, m}}, 0, false);
  vb = View::make(const_cast<uint8_t *>(reinterpret_cast<const uint8_t *>(b)),
                  DType::F32, {{n, k}, {1, n}}, 0, false);
  constexpr int MR = kernels::kMatmulMR, NR = kernels::kMatmulNR;
  std::vector<float> ap(size_t((m + MR - 1) / MR * MR * k)),
      bp(size_t((n + NR - 1) / NR * NR * k)), row;
  Cursor ca(va), cb(vb);
  packPanels<MR>(ca, k, m, ap.data(), row);
  packPanels<NR>(cb, k, n, bp.data(), row);
  kernels::matmulPanels(ap.data(), bp.data(), c, k, m, n, n, false);
}

void Executor::gatherRows(size_t index, const Instruction &inst,
                          const InstrShape &shape) {
  const int64_t parts = shape.gatherRows, rows = shape.tableRows;
  int64_t *idx = scratch<int64_t>(0, size_t(parts));
  Cursor ic(mem_.view(inst.srcs[1]));
  gather(ic, idx, parts); // exact for every integer dtype
  const AccessPattern &table = inst.srcs[0];
  AccessPattern row = table; // one row: the table's dims without the first
  row.dims.erase(row.dims.begin());
  AccessPattern dstRow = inst.dst; // one partition of dst
  const int64_t pstride = parts > 1 ? inst.dst.dims[0][0] : 0;
  dstRow.dims[0] = {1, 1};
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t r = idx[p];
    if (!(r >= 0 && r < rows))
      failInstruction(index, inst,
                      "index " + std::to_string(r) + " (partition " +
                          std::to_string(p) + ") is outside the table's " +
                          std::to_string(rows) + " rows");
    row.offset = table.offset + r * table.dims[0][0];
    dstRow.partition = uint32_t(int64_t(inst.dst.partition) + p * pstride);
    copyElements(mem_.view(dstRow), mem_.view(row));
  }
}

/// dst row idx[p] = srcs[0][p, :], or dst row <alu>= it (accumulate), in
/// partition order. Floats combine in fp32 and round to dst's dtype once per
/// row element and write; integers combine exactly in int64 (wrapping).
void Executor::scatterRows(size_t index, const Instruction &inst,
                           const InstrShape &shape) {
  const int64_t parts = shape.gatherRows, rows = shape.tableRows;
  const int64_t width = shape.freeElems;
  int64_t *idx = scratch<int64_t>(0, size_t(parts));
  Cursor ic(mem_.view(inst.srcs[1]));
  gather(ic, idx, parts);
  const AccessPattern &table = inst.dst, &src = inst.srcs[0];
  AccessPattern row = table; // one row: the table's dims without the first
  row.dims.erase(row.dims.begin());
  AccessPattern srcRow = src; // one partition of srcs[0]
  const int64_t pstride = parts > 1 ? src.dims[0][0] : 0;
  srcRow.dims[0] = {1, 1};
  const bool ints = isIntegerDType(table.dtype);
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t r = idx[p];
    if (!(r >= 0 && r < rows))
      failInstruction(index, inst,
                      "index " + std::to_string(r) + " (partition " +
                          std::to_string(p) + ") is outside the table's " +
                          std::to_string(rows) + " rows");
    row.offset = table.offset + r * table.dims[0][0];
    srcRow.partition = uint32_t(int64_t(src.partition) + p * pstride);
    if (!inst.accumulate) {
      copyElements(mem_.view(row), mem_.view(srcRow));
      continue;
    }
    Cursor dc(mem_.view(row)), sc(mem_.view(srcRow)), out(mem_.view(row));
    if (ints) {
      int64_t *a = scratch<int64_t>(1, size_t(width)), *b = scratch<int64_t>(2, size_t(width));
      gather(dc, a, width);
      gather(sc, b, width);
      for (int64_t i = 0; i < width; ++i) {
        const uint64_t x = uint64_t(a[i]), y = uint64_t(b[i]);
        switch (inst.alu) {
        case AluOp::Mul: a[i] = int64_t(x * y); break;
        case AluOp::Max: a[i] = std::max(a[i], b[i]); break;
        case AluOp::Min: a[i] = std::min(a[i], b[i]); break;
        default: a[i] = int64_t(x + y); break;
        }
      }
      scatter(out, a, width);
    } else {
      float *a = scratch<float>(1, size_t(width)), *b = scratch<float>(2, size_t(width));
      gather(dc, a, width);
      gather(sc, b, width);
      for (int64_t i = 0; i < width; ++i)
        a[i] = combine(inst.alu, a[i], b[i]);
      scatter(out, a, width);
    }
  }
}

void Executor::run(size_t index, const Instruction &inst,
                   const InstrShape &shape) {
  mem_.prepare(inst);
  if (runIsaOp(mem_, index, inst, shape))
    return;
  switch (inst.opcode) {
  case Opcode::DmaCopy:
    copyElements(mem_.view(inst.dst), mem_.view(inst.srcs[0]));
    return;
  case Opcode::DmaGather:
    gatherRows(index, inst, shape);
    return;
  case Opcode::DmaScatter:
    scatterRows(index, inst, shape);
    return;
  case Opcode::Select:
    if (integerPath(inst))
      elementwiseInt(index, inst, shape);
    else if (doublePath(inst))
      elementwise<double>(inst, shape);
    else if (!selectBits(inst))
      elementwiseF32(inst);
    return;
  case Opcode::Matmul:
    matmul(inst, shape);
    return;
  case Opcode::TensorCopy:
    if (inst.dst.dtype == inst.srcs[0].dtype) {
      copyElements(mem_.view(inst.dst), mem_.view(inst.srcs[0]));
      return;
    }
    break;
  case Opcode::TensorReduce: // integer sources: always integerPath
    if (integerPath(inst))
      reduceInt(inst);
    else
      reduceF32(inst);
    return;
  default:
    break;
  }
  if (integerPath(inst))
    elementwiseInt(index, inst, shape);
  else if (doublePath(inst))
    elementwise<double>(inst, shape);
  else
    elementwiseF32(inst);
}

} // namespace neuron::runtime
