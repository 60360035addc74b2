// Reads a graph file (GRAPH_FORMAT.md) into a module of ntorch ops.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace neuron::compiler {

/// The graph file version this importer reads.
inline constexpr int kGraphFormatVersion = 1;

/// Imports `json` into a module holding `func.func @main`. On failure returns null
/// and sets `error` to a message that names every problem (for unsupported ops:
/// each op with its source line).
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const std::string &json, mlir::MLIRContext &ctx,
                                              std::string &error);

/// The ATen overloads the importer supports, sorted, each with how it runs (for the
/// coverage table).
std::vector<std::pair<std::string, std::string>> supportedAtenOps();

} // namespace neuron::compiler
