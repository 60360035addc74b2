// Declarations of every Neuron pass (generated from Passes.td).
#pragma once

#include "dialects/NIsa/IR/NIsaDialect.h"
#include "dialects/NTile/IR/NTileDialect.h"
#include "dialects/NTorch/IR/NTorchDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace neuron::compiler {
#define GEN_PASS_DECL
#include "compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Passes.h.inc"
} // namespace neuron::compiler
