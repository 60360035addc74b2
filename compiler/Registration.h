// The one place that lists every dialect and pass the tools and the Python module register.
#pragma once

namespace mlir {
class DialectRegistry;
}

namespace neuron::compiler {
/// ntorch, ntile, nisa and the upstream dialects they use.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Every Neuron pass and the named lowering pipeline.
void registerAllPasses();
} // namespace neuron::compiler
