// Engine functions shared by ntile and nisa; names match runtime/Program.h.
#ifndef NEURON_ENUMS_TD
#define NEURON_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// Scalar-engine functions; names match runtime/Program.h ActFunc.
def Neuron_ActFunc : I32EnumAttr<"ActFunc", "Scalar-engine activation function", [
  I32EnumAttrCase<"identity", 0>, I32EnumAttrCase<"relu", 1>, I32EnumAttrCase<"exp", 2>,
  I32EnumAttrCase<"log", 3>, I32EnumAttrCase<"tanh", 4>, I32EnumAttrCase<"sigmoid", 5>,
  I32EnumAttrCase<"sqrt", 6>, I32EnumAttrCase<"rsqrt", 7>, I32EnumAttrCase<"erf", 8>,
  I32EnumAttrCase<"gelu", 9>, I32EnumAttrCase<"gelu_tanh", 10>, I32EnumAttrCase<"silu", 11>,
  I32EnumAttrCase<"square", 12>, I32EnumAttrCase<"abs", 13>, I32EnumAttrCase<"neg", 14>,
  I32EnumAttrCase<"reciprocal", 15>, I32EnumAttrCase<"sin", 16>, I32EnumAttrCase<"cos", 17>,
  I32EnumAttrCase<"softplus", 18>, I32EnumAttrCase<"arctan", 19>
]> {
  let cppNamespace = "::neuron";
}

// Vector/GpSimd ALU ops; names match runtime/Program.h AluOp.
def Neuron_AluOp : I32EnumAttr<"AluOp", "Vector-engine ALU operation", [
  I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>, I32EnumAttrCase<"mul", 2>,
  I32EnumAttrCase<"div", 3>, I32EnumAttrCase<"max", 4>, I32EnumAttrCase<"min", 5>,
  I32EnumAttrCase<"pow", 6>, I32EnumAttrCase<"eq", 7>, I32EnumAttrCase<"ne", 8>,
  I32EnumAttrCase<"lt", 9>, I32EnumAttrCase<"le", 10>, I32EnumAttrCase<"gt", 11>,
  I32EnumAttrCase<"ge", 12>, I32EnumAttrCase<"And", 13, "and">, I32EnumAttrCase<"Or", 14, "or">,
  I32EnumAttrCase<"Xor", 15, "xor">, I32EnumAttrCase<"mod", 16>,
  I32EnumAttrCase<"fmod", 17>
]> {
  let cppNamespace = "::neuron";
}
// Collective-communication kinds; names match runtime/Program.h CollectiveKind.
def Neuron_CollectiveKind : I32EnumAttr<"CollectiveKind", "collective over a process group", [
  I32EnumAttrCase<"all_reduce", 0>, I32EnumAttrCase<"all_gather", 1>,
  I32EnumAttrCase<"reduce_scatter", 2>, I32EnumAttrCase<"all_to_all", 3>
]> {
  let cppNamespace = "::neuron";
}

#endif // NEURON_ENUMS_TD
