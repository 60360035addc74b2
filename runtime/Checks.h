// Legality checks of one instruction: engines, operands, capacity, partitions.
#pragma once

#include "runtime/Program.h"
#include "runtime/Target.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace neuron::runtime {

/// What the cost model and the functional model need to know about a checked
/// instruction's operands.
struct InstrShape {
  int64_t partitions = 1; // partitions of dst (compute instructions)
  int64_t freeElems = 0;  // N of the cost formulas: free elements per partition
  int64_t matmulK = 0, matmulM = 0, matmulN = 0;
  int64_t bytes = 0; // DmaCopy, DmaGather: bytes moved
  int hbmSides = 0;  // DmaCopy, DmaGather: how many of src/dst are in HBM
  int64_t gatherRows = 0; // DmaGather: rows gathered (= dst partitions)
  int64_t tableRows = 0;  // DmaGather: rows of the table (valid indices)
  bool touchesSbuf = false, touchesPsum = false;
};

/// Checks instruction `index` of `program` against `target`. Throws
/// SimulationError("instruction <index> (<opcode>): <problem>") if illegal.
InstrShape checkInstruction(const Program &program, const Target &target,
                            size_t index);

/// Throws SimulationError with the standard "instruction i (op): " prefix.
[[noreturn]] void failInstruction(size_t index, const Instruction &inst,
                                  const std::string &problem);

} // namespace neuron::runtime
