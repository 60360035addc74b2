// The table of Isa.def as InstructionInfo rows.
#include "runtime/program/Isa.h"

namespace neuron::runtime {

namespace {

constexpr uint8_t engineBit(Engine e) { return uint8_t(1u << unsigned(e)); }
constexpr uint8_t generationBit(Generation g) { return uint8_t(1u << unsigned(g)); }
constexpr uint16_t fieldBit(Field f) { return uint16_t(1u << unsigned(f)); }

constexpr InstructionInfo kInstructions[] = {
#define E(engine) engineBit(Engine::engine)
#define G(generation) generationBit(Generation::generation)
#define F(field) fieldBit(Field::field)
#define NEURON_INSTRUCTION(Enum, name, engines, generations, fields, nki, cost)                   \
  {Opcode::Enum, name, uint8_t(engines), uint8_t(generations), uint16_t(fields), nki != 0, cost},
#include "runtime/program/Isa.def"
#undef E
#undef G
#undef F
};
static_assert(sizeof(kInstructions) / sizeof(*kInstructions) == size_t(kNumOpcodes));

constexpr bool rowsInOpcodeOrder() {
  for (int i = 0; i < kNumOpcodes; ++i)
    if (int(kInstructions[i].opcode) != i)
      return false;
  return true;
}
static_assert(rowsInOpcodeOrder());

const InstructionInfo kUnknown = {Opcode(255), "<invalid>", 0, 0, 0, false, ""};

} // namespace

const InstructionInfo &instructionInfo(Opcode op) {
  return size_t(op) < size_t(kNumOpcodes) ? kInstructions[size_t(op)] : kUnknown;
}

const char *generationName(Generation g) {
  switch (g) {
  case Generation::Trn1:
    return "trn1";
  case Generation::Trn2:
    return "trn2";
  case Generation::Trn3:
    return "trn3";
  }
  return "<invalid>";
}

} // namespace neuron::runtime
