// The text report neuron-run prints: the same table as neuronsim.report() in Python.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/Simulator.h"

#include <string>
#include <vector>

namespace neuron::tools {

/// `originBusyNs`: OriginCost::busyNs per origin of the run (may be empty); the
/// `top` origins by busy time are listed.
std::string formatReport(const runtime::Program &program, const std::string &title,
                         const std::string &target, bool timingOnly,
                         const runtime::RunStats &stats,
                         const std::vector<double> &originBusyNs, int top);

} // namespace neuron::tools
