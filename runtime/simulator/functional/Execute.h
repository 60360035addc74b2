// Functional execution: computes one checked instruction's result in Memory.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/functional/Memory.h"

#include <cstddef>
#include <vector>

namespace neuron::runtime {

class Executor {
public:
  explicit Executor(Memory &memory) : mem_(memory) {}

  /// Executes `inst`, instruction `index` of its program; `shape` is what
  /// checkInstruction returned for it. Throws SimulationError on a
  /// data-dependent error (a DmaGather/DmaScatter index out of range, an integer
  /// division by zero).
  void run(size_t index, const Instruction &inst, const InstrShape &shape);

  /// Executes a Random instruction: dst's elements, in row-major order, get
  /// numbers `first`, `first` + 1, ... of stream imm[0] under `seed`.
  /// Random and Dropout (Isa.def F(Rng)): `first` is the number of numbers the instruction
  /// drew in earlier iterations.
  void random(const Instruction &inst, uint64_t seed, uint64_t first);

private:
  void dropout(const Instruction &inst, uint64_t seed, uint64_t first);
  // Integer operands and dst (integerPath in Execute.cpp): exact int64.
  void elementwiseInt(size_t index, const Instruction &inst,
                      const InstrShape &shape);
  void reduceInt(const Instruction &inst);
  // Iota, and integer instructions not exact in int64: in double.
  template <class T>
  void elementwise(const Instruction &inst, const InstrShape &shape);
  // Float operands or dst (integer operands converted): fp32 kernels
  // (Kernels.h) on contiguous runs.
  void elementwiseF32(const Instruction &inst);
  void reduceF32(const Instruction &inst);
  bool selectBits(const Instruction &inst);
  void matmul(const Instruction &inst, const InstrShape &shape);
  template <int width>
  void pack(const View &v, int64_t rows, int64_t cols, float *out);
  void gatherRows(size_t index, const Instruction &inst,
                  const InstrShape &shape);
  void scatterRows(size_t index, const Instruction &inst,
                   const InstrShape &shape);
  template <class T> T *scratch(int slot, size_t n);

  Memory &mem_;
  std::vector<float> fbuf_[5];   // slots: srcs[0], srcs[1], result, srcs[2], activation x*s+b
  std::vector<double> dbuf_[4];
  std::vector<int64_t> ibuf_[4];
  std::vector<float> mmA_, mmB_, mmC_, mmRow_;
};

/// C[M][N] = A[K][M]^T @ B[K][N], all row-major fp32.
void matmulKernel(const float *a, const float *b, float *c, int64_t k,
                  int64_t m, int64_t n);

} // namespace neuron::runtime
