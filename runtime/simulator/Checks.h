// Legality checks of one instruction: engines, operands, capacity, partitions,
// loop terms and waits.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/program/Target.h"

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
  int64_t bytes = 0; // DmaCopy, DmaGather, DmaScatter: bytes moved
  int hbmSides = 0;  // DmaCopy, DmaGather, DmaScatter: HBM sides (an accumulate: 2)
  int64_t runBytes = 0; // DMA: bytes of one descriptor, the shorter contiguous run of src/dst
  int64_t gatherRows = 0; // DmaGather, DmaScatter: rows moved (one descriptor each)
  int64_t tableRows = 0;  // DmaGather, DmaScatter: rows of the table (valid indices)
  bool touchesSbuf = false, touchesPsum = false;
  // SBUF/PSUM dst: the byte range inside a partition at the base offset (the
  // first iteration of the loops around the instruction).
  int64_t dstByteLo = 0, dstByteHi = 0;
};

/// Checks instruction `index` of `program` against `target`, for every
/// iteration of the loops around it: their trip counts are
/// `loopCounts[0 .. loopDepth)`, outermost first. Offsets that vary with the
/// loops are checked at their lowest and highest value; a matmul's PSUM bank
/// rule only at the base offset (see psumBankVaries). Throws
/// SimulationError("instruction <index> (<opcode>): <problem>") if illegal.
InstrShape checkInstruction(const Program &program, const Target &target,
                            size_t index, const int64_t *loopCounts,
                            int loopDepth);

/// The same, with the loops around the instruction taken from the program.
InstrShape checkInstruction(const Program &program, const Target &target,
                            size_t index);

/// Checks the semaphore waits of instruction `index` (inside loops of
/// `loopCounts[0 .. loopDepth)`): queues exist, value terms name loops around
/// the instruction and values stay far inside the int64 range.
void checkWaits(const Program &program, size_t index, const int64_t *loopCounts,
                int loopDepth);

/// Whether a matmul's dst offset terms can move its PSUM access across bank
/// boundaries in some iteration (a coefficient that is no multiple of the
/// bank size): then checkPsumBank runs per instance.
bool psumBankVaries(const Instruction &inst, const Target &target);

/// Throws SimulationError for a matmul whose dst PSUM bytes [byteLo, byteHi)
/// cross a bank boundary.
[[noreturn]] void failPsumBank(size_t index, const Instruction &inst,
                               const Target &target, int64_t byteLo,
                               int64_t byteHi);

/// Throws if a matmul's dst PSUM bytes [byteLo, byteHi) inside a partition
/// cross a bank boundary.
inline void checkPsumBank(size_t index, const Instruction &inst,
                          const Target &target, int64_t byteLo,
                          int64_t byteHi) {
  if (byteLo / target.psumBankBytes != (byteHi - 1) / target.psumBankBytes)
    failPsumBank(index, inst, target, byteLo, byteHi);
}

/// Bytes of the longest contiguous run that starts each row of `ap`'s innermost dims: the
/// whole pattern if it is contiguous, at most one partition's free elements on chip.
int64_t contiguousRunBytes(const AccessPattern &ap);

/// "HBM", "SBUF" or "PSUM", for messages.
const char *spaceName(MemSpace s);

/// Throws SimulationError with the standard "instruction i (op): " prefix.
[[noreturn]] void failInstruction(size_t index, const Instruction &inst,
                                  const std::string &problem);

} // namespace neuron::runtime
