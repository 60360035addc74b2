// Functional execution: elementwise ops, reductions, matmul, copies.
//
// Operands are streamed in chunks of kChunk elements: gathered into scratch
// arrays of the compute type (converting from the storage dtype), combined
// with one dispatch per chunk, and scattered back with conversion.
#include "runtime/Execute.h"

#include "runtime/ElementOps.h"
#include "runtime/Numerics.h"

#include <algorithm>

namespace neuron::runtime {

namespace {

constexpr int64_t kChunk = 4096;

bool anyIntegerOperand(const Instruction &inst) {
  if (isIntegerDType(inst.dst.dtype))
    return true;
  for (const auto &s : inst.srcs)
    if (isIntegerDType(s.dtype))
      return true;
  return false;
}

} // namespace

template <class T> T *Executor::scratch(int slot, size_t n) {
  auto &v = [&]() -> std::vector<T> & {
    if constexpr (std::is_same_v<T, float>)
      return fbuf_[slot];
    else
      return dbuf_[slot];
  }();
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

template <class T>
void Executor::elementwise(const Instruction &inst, const InstrShape &shape) {
  const View dv = mem_.view(inst.dst);
  Cursor d(dv);
  Cursor s0(inst.srcs.size() > 0 ? mem_.view(inst.srcs[0]) : dv);
  Cursor s1(inst.srcs.size() > 1 ? mem_.view(inst.srcs[1]) : dv);
  const int64_t total = dv.numElements();
  T *a = scratch<T>(0, kChunk), *b = scratch<T>(1, kChunk),
    *o = scratch<T>(2, kChunk);
  const T imm0 = T(inst.imm[0]), imm1 = T(inst.imm[1]);
  const int64_t freeElems = shape.freeElems;

  for (int64_t off = 0; off < total; off += kChunk) {
    const int64_t n = std::min(kChunk, total - off);
    switch (inst.opcode) {
    case Opcode::Activation:
      gather(s0, a, n);
      withActFunc<T>(inst.func, [&](auto f) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(a[i] * imm0 + imm1);
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

template <class T> void Executor::reduce(const Instruction &inst) {
  const AccessPattern &src = inst.srcs[0];
  int64_t group = 1; // elements reduced into one output
  for (size_t k = src.dims.size() - inst.axes; k < src.dims.size(); ++k)
    group *= src.dims[k][1];
  const View sv = mem_.view(src);
  Cursor s(sv), d(mem_.view(inst.dst));
  const int64_t total = sv.numElements();
  T *a = scratch<T>(0, kChunk), *o = scratch<T>(2, kChunk);
  const T init = reduceInit<T>(inst.alu);
  T acc = init;
  int64_t inGroup = 0, nout = 0;

  withAluOp<T>(inst.alu, [&](auto f) {
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

void Executor::matmul(const Instruction &inst, const InstrShape &shape) {
  const int64_t k = shape.matmulK, m = shape.matmulM, n = shape.matmulN;
  if (mmA_.size() < size_t(k * m))
    mmA_.resize(size_t(k * m));
  if (mmB_.size() < size_t(k * n))
    mmB_.resize(size_t(k * n));
  if (mmC_.size() < size_t(m * n))
    mmC_.resize(size_t(m * n));
  Cursor a(mem_.view(inst.srcs[0])), b(mem_.view(inst.srcs[1]));
  gather(a, mmA_.data(), k * m);
  gather(b, mmB_.data(), k * n);
  matmulKernel(mmA_.data(), mmB_.data(), mmC_.data(), k, m, n);
  const View dv = mem_.view(inst.dst);
  if (inst.accumulate) {
    if (mmD_.size() < size_t(m * n))
      mmD_.resize(size_t(m * n));
    Cursor old(dv);
    gather(old, mmD_.data(), m * n);
    for (int64_t i = 0; i < m * n; ++i)
      mmC_[i] += mmD_[i];
  }
  Cursor d(dv);
  scatter(d, mmC_.data(), m * n);
}

void matmulKernel(const float *a, const float *b, float *c, int64_t k,
                  int64_t m, int64_t n) {
  // Row by row of C; four rows of B per pass keeps C's row in registers/L1.
  for (int64_t row = 0; row < m; ++row) {
    float *__restrict cr = c + row * n;
    std::fill(cr, cr + n, 0.0f);
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
      const float a0 = a[kk * m + row], a1 = a[(kk + 1) * m + row],
                  a2 = a[(kk + 2) * m + row], a3 = a[(kk + 3) * m + row];
      const float *__restrict b0 = b + kk * n;
      const float *__restrict b1 = b0 + n;
      const float *__restrict b2 = b1 + n;
      const float *__restrict b3 = b2 + n;
      for (int64_t j = 0; j < n; ++j)
        cr[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
    }
    for (; kk < k; ++kk) {
      const float av = a[kk * m + row];
      const float *__restrict br = b + kk * n;
      for (int64_t j = 0; j < n; ++j)
        cr[j] += av * br[j];
    }
  }
}

void Executor::run(const Instruction &inst, const InstrShape &shape) {
  switch (inst.opcode) {
  case Opcode::DmaCopy:
    copyElements(mem_.view(inst.dst), mem_.view(inst.srcs[0]));
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
  case Opcode::TensorReduce:
    if (anyIntegerOperand(inst))
      reduce<double>(inst);
    else
      reduce<float>(inst);
    return;
  default:
    break;
  }
  if (anyIntegerOperand(inst) || inst.opcode == Opcode::Iota)
    elementwise<double>(inst, shape);
  else
    elementwise<float>(inst, shape);
}

} // namespace neuron::runtime
