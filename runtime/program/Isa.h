// The instruction set as data: what Isa.def says of each opcode, for the checks, the
// serializer, the reports and the Python view.
#pragma once

#include "runtime/program/Program.h"

#include <cstdint>

namespace neuron::runtime {

/// NeuronCore generations (Target::generation).
enum class Generation : uint8_t { Trn1, Trn2, Trn3 };
/// "trn1", "trn2", "trn3".
const char *generationName(Generation g);

/// Instruction fields besides queue, dst, srcs and waits (Isa.def's `fields`).
/// ReduceRes is structural, not a field: the instruction's last source is a second output it
/// writes (a [P, 1] reduce result), which the hazard detector counts as a write.
/// ReadsDst likewise: the instruction reads dst before writing it (keeps some of its elements).
/// Reg: `reg` (and regSrc, regInit) name a register of the instruction's queue (register_*).
/// Rng likewise: the instruction draws random numbers (the run's seed and the numbers it drew
/// in earlier iterations key them, as a Random instruction's).
enum class Field : uint8_t {
  Func, Alu, Alu2, Imm, Accumulate, Reverse, Axes, Collective, Affine, ReduceRes, ReadsDst,
  ReduceCmd, Rng, ReduceOp, Reg
};

/// One row of Isa.def.
struct InstructionInfo {
  Opcode opcode;
  const char *name;      // serialized / IR / report name (the nki.isa name if nki)
  uint8_t engines;       // bit (1 << Engine) per engine that may run it
  uint8_t generations;   // bit (1 << Generation) per generation that has it
  uint16_t fields;       // bit (1 << Field) per field it uses
  bool nki;              // an nki.isa instruction (else a NeuronSim one)
  const char *cost;      // the documented cost formula
};

/// The row of `op` (every Opcode has one).
const InstructionInfo &instructionInfo(Opcode op);

inline bool runsOn(Opcode op, Engine e) {
  return instructionInfo(op).engines & (1u << unsigned(e));
}
inline bool existsOn(Opcode op, Generation g) {
  return instructionInfo(op).generations & (1u << unsigned(g));
}
inline bool usesField(Opcode op, Field f) {
  return instructionInfo(op).fields & (1u << unsigned(f));
}

/// The instructions whose reduce result is optional, a last source after their others, which
/// receives the accumulator registers: an activation or activate2 that reduces (`accumulate`)
/// with a source after data, scale and bias; an exponential with one after data and its max
/// tile.
inline bool optionalReduceResult(const Instruction &inst) {
  switch (inst.opcode) {
  case Opcode::Activation:
  case Opcode::Activate2:
    return inst.accumulate &&
           inst.srcs.size() == 2 + size_t(inst.scaleTile) + size_t(inst.biasTile);
  case Opcode::Exponential:
    return inst.srcs.size() == 2 + size_t(inst.scaleTile);
  default:
    return false;
  }
}

/// `inst` writes its last source as well as dst: an optional reduce result (activation,
/// activate2, exponential) and the reduce results of the rows with F(ReduceRes).
inline bool writesLastSource(const Instruction &inst) {
  return !inst.srcs.empty() &&
         (optionalReduceResult(inst) || usesField(inst.opcode, Field::ReduceRes));
}

/// `inst` reads dst's old values: an accumulating matmul or dma_scatter, and the instructions
/// whose Isa.def row has F(ReadsDst).
inline bool readsDst(const Instruction &inst) {
  return ((inst.opcode == Opcode::Matmul || inst.opcode == Opcode::DmaScatter) &&
          inst.accumulate) ||
         usesField(inst.opcode, Field::ReadsDst);
}

/// Whether `op`'s dst is a memory operand it writes: not register_alloc / move / load (their
/// target is a register) nor core_barrier (whose dst names the synchronized tensor).
inline bool dstIsOperand(Opcode op) {
  return op != Opcode::RegisterAlloc && op != Opcode::RegisterMove &&
         op != Opcode::RegisterLoad && op != Opcode::CoreBarrier;
}

} // namespace neuron::runtime
