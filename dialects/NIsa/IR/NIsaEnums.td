// Kinds of HBM buffers in a program.
#ifndef NISA_ENUMS_TD
#define NISA_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def NIsa_BufferKind : I32EnumAttr<"BufferKind", "role of an HBM buffer", [
  I32EnumAttrCase<"input", 0>, I32EnumAttrCase<"output", 1>,
  I32EnumAttrCase<"internal", 2>, I32EnumAttrCase<"constant", 3>
]> {
  let cppNamespace = "::neuron::nisa";
}

#endif // NISA_ENUMS_TD
