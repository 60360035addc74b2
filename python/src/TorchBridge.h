// Runs a Program on tensors that cross the Python boundary as DLPack capsules.
//
// TorchBridge.cpp is the only file that includes libtorch headers (they are slow to compile).
#pragma once

#include "runtime/Program.h"
#include "runtime/Simulator.h"

#include <pybind11/pybind11.h>

namespace neuron::python {

struct BridgeRunResult {
  pybind11::list outputs;   // one DLPack capsule per Output buffer, in index order
  runtime::RunStats stats;
};

/// Checks `inputs` (DLPack capsules, or objects with __dlpack__) against the program's
/// Input buffers, allocates the outputs, simulates with the GIL released, and returns the
/// outputs as DLPack capsules. Errors name the input and what was expected.
BridgeRunResult runWithDLPack(const runtime::Program &program, const pybind11::sequence &inputs,
                              bool timingOnly);

} // namespace neuron::python
