// Reads a graph file (GRAPH_FORMAT.md) into a module of ntorch ops.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <limits>
#include <string>
#include <vector>

namespace neuron::compiler {

/// The graph file version this importer reads.
inline constexpr int kGraphFormatVersion = 1;

/// Bounds on what a graph file may ask for, checked before anything is built.
struct ImportLimits {
  /// No single tensor (input, constant, node result) may need more bytes than this:
  /// the HBM of one NeuronCore of the target.
  int64_t maxTensorBytes = std::numeric_limits<int64_t>::max();
  std::string memoryName = "memory"; // for messages: "the 12 GiB of HBM of one trn2 core"
};

/// Imports `json` into a module holding `func.func @main`. On failure returns null
/// and sets `error` to a message that names every problem (for unsupported ops:
/// each op with its source line). Never throws for bad input.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const std::string &json, mlir::MLIRContext &ctx,
                                              std::string &error,
                                              const ImportLimits &limits = {});

/// The ATen overloads the importer supports, sorted, each with how it runs (for the
/// coverage table).
std::vector<std::pair<std::string, std::string>> supportedAtenOps();

} // namespace neuron::compiler
