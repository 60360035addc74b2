// neuron-opt: parse, verify, transform and print IR in the Neuron dialects.
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  neuron::compiler::registerAllDialects(registry);
  neuron::compiler::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "NeuronSim optimizer driver\n", registry));
}
