// The ntorch dialect: graph-level tensor ops imported from core ATen.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NTorch/IR/NTorchOpsDialect.h.inc"
#include "dialects/Common/NeuronEnums.h"
#include "dialects/NTorch/IR/NTorchEnums.h.inc"
