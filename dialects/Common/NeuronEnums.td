// Engine functions shared by ntile and nisa; names match runtime/Program.h.
#ifndef NEURON_ENUMS_TD
#define NEURON_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// Scalar-engine functions and Vector/GpSimd ALU ops: the cases come from
// runtime/program/IsaOperands.def (NeuronEnumCases.td is generated from it), so their values
// are the runtime enums' values.
include "NeuronEnumCases.td"

def Neuron_ActFunc : I32EnumAttr<"ActFunc", "Scalar-engine activation function",
                                 NeuronActFuncCases> {
  let cppNamespace = "::neuron";
}

def Neuron_AluOp : I32EnumAttr<"AluOp", "Vector-engine ALU operation", NeuronAluOpCases> {
  let cppNamespace = "::neuron";
}
// The instruction set: one case per row of runtime/program/Isa.def (its nki.isa name), values
// runtime::Opcode's, so the conversion is a checked cast.
def Neuron_Opcode : I32EnumAttr<"Opcode", "NeuronCore instruction (runtime/program/Isa.def)",
                                NeuronOpcodeCases> {
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
