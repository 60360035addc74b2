// Enums shared by ntile and nisa: ActFunc (Scalar engine), AluOp (Vector engine), Opcode (the
// instruction set).
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

#include "dialects/Common/NeuronEnums.h.inc"

#include "runtime/program/Program.h"

namespace neuron {

// Both sides come from runtime/program/IsaOperands.def, so an MLIR enumerator and the runtime
// one of the same op have the same value: the conversions are casts, checked here.
static_assert(getMaxEnumValForActFunc() + 1 == unsigned(runtime::kNumActFuncs));
static_assert(getMaxEnumValForAluOp() + 1 == unsigned(runtime::kNumAluOps));
static_assert(getMaxEnumValForOpcode() + 1 == unsigned(runtime::kNumOpcodes));
static_assert(getMaxEnumValForCollectiveKind() ==
              unsigned(runtime::CollectiveKind::AllToAll));

inline runtime::ActFunc toRuntime(ActFunc f) { return runtime::ActFunc(unsigned(f)); }
inline runtime::AluOp toRuntime(AluOp a) { return runtime::AluOp(unsigned(a)); }
inline runtime::Opcode toRuntime(Opcode o) { return runtime::Opcode(unsigned(o)); }
inline runtime::CollectiveKind toRuntime(CollectiveKind k) {
  return runtime::CollectiveKind(unsigned(k));
}

} // namespace neuron
