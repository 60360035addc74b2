// Lowering of ntorch.kernel (a custom tile kernel from python/neuronsim/kernels): its IR
// is a module with one ntile function whose arguments are the HBM buffers of the inputs,
// then of the results. The function's body (already in loop form: ntile.loop, tiles,
// DMAs and engine ops, with the kernel's source lines as locations) is inlined where the
// op stands, its arguments replaced by the buffers of the graph's tensors.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

namespace neuron::compiler {

LogicalResult lowerKernel(TileEmitter &e, Operation *op) {
  auto kernel = cast<ntorch::KernelOp>(op);
  StringRef name = kernel.getKernelName();
  // Parsing verifies the kernel's ops; their diagnostics carry the kernel's source lines.
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kernel.getIr(), ParserConfig(op->getContext()), name);
  if (!module)
    return op->emitError("the IR of kernel '") << name << "' is invalid";
  auto func = module->lookupSymbol<func::FuncOp>(name);
  if (!func || func.getBody().empty())
    return op->emitError("the IR of kernel '") << name << "' has no function @" << name;
  size_t numInputs = kernel.getInputs().size(), numResults = kernel.getNumResults();
  if (func.getNumArguments() != numInputs + numResults || func.getNumResults() != 0)
    return op->emitError("kernel '") << name << "' takes " << func.getNumArguments()
                                     << " buffers, the call passes " << numInputs
                                     << " inputs and " << numResults << " results";
  IRMapping mapping;
  for (auto [i, input] : llvm::enumerate(kernel.getInputs()))
    mapping.map(func.getArgument(i), e.buffer(input));
  for (auto [i, result] : llvm::enumerate(kernel.getResults()))
    mapping.map(func.getArgument(numInputs + i), e.createResultBuffer(result, op->getLoc()));
  for (BlockArgument arg : func.getArguments()) {
    Value buffer = mapping.lookup(arg);
    if (buffer.getType() != arg.getType())
      return op->emitError("argument ") << arg.getArgNumber() << " of kernel '" << name
                                        << "' is " << arg.getType() << ", the call passes "
                                        << buffer.getType();
  }
  auto declared = op->getAttrOfType<IntegerAttr>("flops");
  for (Operation &inner : func.getBody().front().without_terminator()) {
    Operation *copy = e.b.clone(inner, mapping);
    // A kernel that declares its useful FLOPs: its matmuls are not counted (the program's
    // FLOPs get the declared number instead, from the function's neuron.kernel_flops).
    if (declared)
      copy->walk([&](ntile::MatmulOp m) { m->setAttr("ntile.uncounted", e.b.getUnitAttr()); });
  }
  if (declared) {
    auto parent = op->getParentOfType<func::FuncOp>();
    auto sum = parent->getAttrOfType<IntegerAttr>("neuron.kernel_flops");
    parent->setAttr("neuron.kernel_flops",
                    e.b.getI64IntegerAttr((sum ? sum.getInt() : 0) + declared.getInt()));
  }
  return success();
}

} // namespace neuron::compiler
