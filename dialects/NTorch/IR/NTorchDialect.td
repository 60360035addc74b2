// The ntorch dialect: one op per core-ATen family, on static ranked tensors.
#ifndef NTORCH_DIALECT_TD
#define NTORCH_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/Common/NeuronEnums.td"
include "dialects/NTorch/IR/NTorchEnums.td"

def NTorch_Dialect : Dialect {
  let name = "ntorch";
  let cppNamespace = "::neuron::ntorch";
  let summary = "Graph-level tensor ops imported from core ATen";
  let description = [{
    Value-semantics ops on static ranked tensors, one per supported core-ATen
    family. Shapes and dtypes are checked by verifiers; the importer maps each
    ATen overload onto these ops (see compiler/Import/AtenOps.cpp).
  }];
  let hasConstantMaterializer = 1;
}

class NTorch_Op<string mnemonic, list<Trait> traits = []>
    : Op<NTorch_Dialect, mnemonic, traits>;

#endif // NTORCH_DIALECT_TD
