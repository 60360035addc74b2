// Declarations shared by the binding files of the neuronsim._C extension module.
#pragma once

#include "runtime/simulator/Simulator.h"

#include <pybind11/pybind11.h>

#include <stdexcept>

namespace neuron::python {

/// Compiler diagnostics; surfaces in Python as neuronsim._C.CompileError.
struct CompileFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adds the Program class to the module.
void bindProgram(pybind11::module_ &m);

/// RunStats as the dict neuronsim.last_run_stats() documents.
pybind11::dict statsToDict(const runtime::RunStats &stats);

} // namespace neuron::python
