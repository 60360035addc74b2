// Engine functions shared by ntile and nisa: ActFunc (Scalar engine), AluOp (Vector engine).
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

#include "dialects/Common/NeuronEnums.h.inc"
