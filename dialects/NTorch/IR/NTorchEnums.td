// The ntorch enums (their C++ is generated from this file alone; NTorchDialect.td
// includes it together with the shared Neuron enums).
#ifndef NTORCH_ENUMS_TD
#define NTORCH_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// Element functions with one operand. Each lowers to one Scalar-engine activation.
def NTorch_UnaryFn : I32EnumAttr<"UnaryFn", "elementwise function of one operand", [
  I32EnumAttrCase<"relu", 0>, I32EnumAttrCase<"exp", 1>, I32EnumAttrCase<"log", 2>,
  I32EnumAttrCase<"tanh", 3>, I32EnumAttrCase<"sigmoid", 4>, I32EnumAttrCase<"sqrt", 5>,
  I32EnumAttrCase<"rsqrt", 6>, I32EnumAttrCase<"erf", 7>, I32EnumAttrCase<"gelu", 8>,
  I32EnumAttrCase<"gelu_tanh", 9>, I32EnumAttrCase<"silu", 10>, I32EnumAttrCase<"square", 11>,
  I32EnumAttrCase<"abs", 12>, I32EnumAttrCase<"neg", 13>, I32EnumAttrCase<"reciprocal", 14>,
  I32EnumAttrCase<"sin", 15>, I32EnumAttrCase<"cos", 16>, I32EnumAttrCase<"softplus", 17>,
  I32EnumAttrCase<"arctan", 18>
]> {
  let cppNamespace = "::neuron::ntorch";
}

// Element functions with two operands (numpy broadcasting). Vector engine.
def NTorch_BinaryFn : I32EnumAttr<"BinaryFn", "elementwise function of two operands", [
  I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>, I32EnumAttrCase<"mul", 2>,
  I32EnumAttrCase<"div", 3>, I32EnumAttrCase<"max", 4>, I32EnumAttrCase<"min", 5>,
  I32EnumAttrCase<"pow", 6>, I32EnumAttrCase<"eq", 7>, I32EnumAttrCase<"ne", 8>,
  I32EnumAttrCase<"lt", 9>, I32EnumAttrCase<"le", 10>, I32EnumAttrCase<"gt", 11>,
  I32EnumAttrCase<"ge", 12>, I32EnumAttrCase<"And", 13, "and">, I32EnumAttrCase<"Or", 14, "or">,
  I32EnumAttrCase<"mod", 15>, I32EnumAttrCase<"fmod", 16>
]> {
  let cppNamespace = "::neuron::ntorch";
}

// Reductions over dimensions. Vector engine.
def NTorch_ReduceFn : I32EnumAttr<"ReduceFn", "reduction", [
  I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>, I32EnumAttrCase<"min", 2>
]> {
  let cppNamespace = "::neuron::ntorch";
}

def NTorch_PoolFn : I32EnumAttr<"PoolFn", "window reduction", [
  I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"avg", 1>
]> {
  let cppNamespace = "::neuron::ntorch";
}

#endif // NTORCH_ENUMS_TD
