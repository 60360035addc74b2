// Functional semantics of the Isa.def instructions beyond the elementwise core: statistics
// (bn_stats, bn_aggr), scans, partition reductions, transposes, top-8 search, predicated
// copies, scalar_tensor_tensor, reciprocal and tensor_scalar with two ops or a per-partition
// scalar. Each follows the semantics its Isa.def row documents; floats compute in fp32 and
// round once to dst's dtype, as the engines do.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/functional/Memory.h"

#include <cstddef>

namespace neuron::runtime {

/// Executes `inst` (checked, its memory prepared) if it is one of these instructions;
/// returns false for every other instruction.
bool runIsaOp(Memory &mem, size_t index, const Instruction &inst, const InstrShape &shape);

} // namespace neuron::runtime
