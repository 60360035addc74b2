// nisa -> runtime::Program: the serialization of instructions the simulator runs.
#pragma once

#include "runtime/program/Program.h"

#include "mlir/IR/BuiltinOps.h"

namespace neuron::compiler {

/// Translates the nisa function of `module` into `program`. Emits a diagnostic
/// and fails on anything the program format cannot express.
mlir::LogicalResult exportProgram(mlir::ModuleOp module, const std::string &target,
                                  runtime::Program &program);

} // namespace neuron::compiler
