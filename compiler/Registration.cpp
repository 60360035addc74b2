// Registers every dialect and pass of the compiler (used by neuron-opt and the Python module).
#include "compiler/Registration.h"
#include "compiler/Passes.h"
#include "compiler/Pipeline.h"
#include "dialects/NIsa/IR/NIsaDialect.h"
#include "dialects/NTile/IR/NTileDialect.h"
#include "dialects/NTorch/IR/NTorchDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace neuron::compiler {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<ntorch::NTorchDialect, ntile::NTileDialect, nisa::NIsaDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::arith::ArithDialect>();
}

void registerAllPasses() {
  registerNeuronPasses(); // generated from Passes.td
  registerLoweringPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}

} // namespace neuron::compiler
