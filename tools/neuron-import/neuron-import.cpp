// neuron-import: reads a graph file (compiler/Import/GRAPH_FORMAT.md) and prints its ntorch IR.
#include "compiler/Import/GraphImporter.h"
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<graph.json>"),
                                            llvm::cl::init("-"));

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "NeuronSim graph importer\n");
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!file) {
    llvm::errs() << "cannot read " << inputFile << ": " << file.getError().message() << "\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  neuron::compiler::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  std::string error;
  auto module = neuron::compiler::importGraph((*file)->getBuffer().str(), ctx, error);
  if (!module) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::verify(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
