// Runs a Program on tensors that cross the Python boundary as DLPack capsules.
//
// TorchBridge.cpp is the only file that includes libtorch headers (they are slow to compile).
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/Simulator.h"

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace neuron::python {

struct BridgeRunOptions {
  /// Skip the numbers: outputs are allocated but not written (contents undefined).
  bool timingOnly = false;
  /// If not empty, the run's Chrome trace (runtime/Trace.h) is written to this file.
  std::string tracePath;
  /// Sum each instruction's cost per Program::origins entry (originCosts).
  bool originTimes = false;
  /// Functional runs: the simulator's hazard detection (RunOptions::checkHazards).
  bool checkHazards = true;
  /// None, or the Python callable that runs Collective instructions (RunOptions::collective):
  /// collective(kind, reduce, group_name, group_size, nbytes, src, dst, ready_ns) ->
  /// complete_ns, with nbytes the larger of its source and result, src/dst DLPack capsules
  /// of this rank's HBM bytes (1-D; None in timing-only runs), valid only during the call.
  /// It is called with the GIL held.
  pybind11::object collective = pybind11::none();
  /// Keys the numbers of Random instructions (RunOptions::seed).
  uint64_t seed = 0;
};

struct BridgeRunResult {
  pybind11::list outputs;   // one DLPack capsule per Output buffer, in index order
  runtime::RunStats stats;
  /// originTimes: the cost per Program::origins index (instructions whose origin is out of
  /// range count in a last extra entry); busy times sum over queues, so can exceed sim time.
  std::vector<runtime::OriginCost> originCosts;
};

/// Checks `inputs` (DLPack capsules, or objects with __dlpack__) against the program's
/// Input buffers, allocates the outputs, simulates with the GIL released, and returns the
/// outputs as DLPack capsules. Errors name the input and what was expected; a trace file
/// that cannot be written raises std::runtime_error.
BridgeRunResult runWithDLPack(const runtime::Program &program, const pybind11::sequence &inputs,
                              const BridgeRunOptions &options);

} // namespace neuron::python
