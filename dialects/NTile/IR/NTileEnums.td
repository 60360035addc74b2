// Memory spaces of a NeuronCore, as ntile buffers and nisa access patterns name them.
#ifndef NTILE_ENUMS_TD
#define NTILE_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def NTile_MemSpace : I32EnumAttr<"MemSpace", "NeuronCore memory", [
  I32EnumAttrCase<"hbm", 0>, I32EnumAttrCase<"sbuf", 1>, I32EnumAttrCase<"psum", 2>
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::neuron::ntile";
}
#endif // NTILE_ENUMS_TD
