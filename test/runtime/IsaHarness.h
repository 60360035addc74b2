// Helpers of the ISA instruction tests (test_isa_*.cpp): a harness that loads f32 inputs into
// SBUF, runs one program and reads tiles back, the cost of one instruction on a target, and the
// legality error of one instruction.
#pragma once

#include "runtime/program/Isa.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/timing/CostModel.h"

#include "ProgramBuilder.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace neuron::runtime::test::isa {

inline const Target &target(const char *name) { return *findTarget(name); }

inline std::vector<float> randoms(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline Instruction make(Opcode op, int queue, AccessPattern dst, std::vector<AccessPattern> srcs) {
  Instruction in;
  in.opcode = op;
  in.queue = uint16_t(queue);
  in.dst = std::move(dst);
  in.srcs = std::move(srcs);
  return in;
}

/// A program on f32 inputs loaded into SBUF by their own DMAs; `read` stores SBUF tiles to
/// outputs and runs it, returning each tile's values.
struct Harness {
  Builder b;
  std::vector<std::vector<float>> data;
  int64_t sbufOffset = 0;
  int queue = 0;
  RunOptions options; // the run's options (seed, ...)

  explicit Harness(const char *targetName = "trn2") { b.prog.target = targetName; }

  AccessPattern in(int64_t rows, int64_t cols, std::vector<float> values) {
    uint32_t buf = b.input("in" + std::to_string(data.size()), DType::F32, {rows, cols});
    AccessPattern tile = sbuf(DType::F32, 0, sbufOffset, rows, {cols});
    sbufOffset += cols * 4;
    b.dma(kQueueDma0 + (queue++ % 8), tile, hbm(buf, DType::F32, 0, {{cols, rows}, {1, cols}}));
    data.push_back(std::move(values));
    return tile;
  }
  AccessPattern tile(int64_t rows, int64_t cols) {
    AccessPattern t = sbuf(DType::F32, 0, sbufOffset, rows, {cols});
    sbufOffset += cols * 4;
    return t;
  }
  std::vector<std::vector<float>> read(const std::vector<AccessPattern> &tiles) {
    std::vector<std::vector<float>> out;
    std::vector<void *> outs;
    for (size_t k = 0; k < tiles.size(); ++k) {
      const int64_t rows = tiles[k].dims[0][1], cols = tiles[k].numElements() / rows;
      uint32_t o = b.output("out" + std::to_string(k), DType::F32, {rows, cols});
      b.dma(kQueueDma0 + 9 + int(k), hbm(o, DType::F32, 0, {{cols, rows}, {1, cols}}),
            tiles[k]);
      out.emplace_back(size_t(rows * cols));
    }
    for (auto &v : out)
      outs.push_back(v.data());
    b.sequential();
    std::vector<const void *> ins;
    for (const auto &d : data)
      ins.push_back(d.data());
    simulate(b.prog, *findTarget(b.prog.target), ins, outs, options);
    return out;
  }
};

/// Cycles of a one-instruction program's instruction on `t`, from the cost model.
inline double cyclesOf(const Target &t, Instruction in) {
  Program p;
  p.target = t.name;
  p.instructions = {std::move(in)};
  return computeCycles(t, p.instructions[0], checkInstruction(p, t, 0));
}

/// The first legality error of a one-instruction program, or "" if it is legal.
inline std::string rejection(const Target &t, Instruction in) {
  Program p;
  p.target = t.name;
  p.instructions = {std::move(in)};
  try {
    checkInstruction(p, t, 0);
  } catch (const SimulationError &e) {
    return e.what();
  }
  return "";
}

} // namespace neuron::runtime::test::isa
