// Registration of the ntorch dialect, its attributes and ops.
#include "dialects/NTorch/IR/NTorchDialect.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace neuron::ntorch;

#include "dialects/NTorch/IR/NTorchOpsDialect.cpp.inc"
#include "dialects/NTorch/IR/NTorchEnums.cpp.inc"

void NTorchDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/NTorch/IR/NTorchOps.cpp.inc"
      >();
}

Operation *NTorchDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                              Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}
