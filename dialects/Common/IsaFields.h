// The fields of a generic ISA-table instruction (ntile.isa, nisa.inst): a DictionaryAttr with the
// program format's field names, read by the runtime's own field reader (one place for them).
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "runtime/program/Program.h"

namespace neuron {

/// Sets `inst`'s fields from `fields` (`{imm = [0.0, -1.0], alu = "add"}`: strings, integers,
/// floats, booleans and arrays of them). Emits an error on `op` naming a bad field.
mlir::LogicalResult applyIsaFields(mlir::Operation *op, mlir::DictionaryAttr fields,
                                   runtime::Instruction &inst);

} // namespace neuron
