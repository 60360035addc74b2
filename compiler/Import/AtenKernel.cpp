// Importer of custom tile kernels (python/neuronsim/kernels): the graph exporter writes a
// call of a kernel as a `neuronsim.kernel.default` node whose positional arguments are the input
// tensors and whose keywords carry the kernel's name and its ntile IR (the text of a
// module with one function). The IR is parsed and checked when the op is lowered
// (convert-ntorch-to-ntile inlines it).
#include "compiler/Import/AtenImporters.h"

namespace neuron::compiler::aten {

Values kernel(NodeContext &ctx) {
  std::string name = ctx.string(~size_t(0), "kernel_name", "");
  std::string ir = ctx.string(~size_t(0), "ir", "");
  if (name.empty() || ir.empty())
    throw ImportError("a neuronsim.kernel node needs the keywords 'kernel_name' and 'ir'");
  llvm::SmallVector<mlir::Value> inputs;
  for (size_t i = 0; ctx.hasArg(i); ++i) {
    if (!ctx.isTensorArg(i))
      throw ImportError("argument " + std::to_string(i) + " of kernel '" + name +
                        "' is not a tensor (scalar parameters are part of its IR)");
    inputs.push_back(ctx.tensor(i));
  }
  llvm::SmallVector<mlir::Type> results;
  for (size_t i = 0; i < ctx.numResults(); ++i)
    results.push_back(ctx.resultType(i));
  auto op = ctx.b.create<ntorch::KernelOp>(ctx.loc, results, ctx.b.getStringAttr(name),
                                           ctx.b.getStringAttr(ir), inputs);
  // The kernel's useful FLOPs, when it declares them: they count instead of its matmuls'
  // (transposes, masked blocks and other work of the kernel's own are no useful FLOPs).
  int64_t flops = ctx.integer(~size_t(0), "flops", -1);
  if (flops < -1 || (flops == -1 && ctx.hasArg(~size_t(0), "flops")))
    throw ImportError("the 'flops' of kernel '" + name + "' must be a non-negative integer");
  if (flops >= 0)
    op->setAttr("flops", ctx.b.getI64IntegerAttr(flops));
  return Values(op.getResults());
}

} // namespace neuron::compiler::aten
