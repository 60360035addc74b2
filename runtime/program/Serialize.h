// Encoding of Program as JSON (readable) and CBOR (compact, for storage).
#pragma once

#include "runtime/program/Program.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace neuron::runtime {

/// A malformed or other-version program encoding.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string programToJson(const Program &p, int indent = -1);
Program programFromJson(const std::string &text);             // throws FormatError
std::vector<uint8_t> programToCbor(const Program &p);
Program programFromCbor(const std::vector<uint8_t> &bytes);    // throws FormatError

/// Sets the fields of `in` named in a JSON object of the program format's instruction fields
/// (`{"imm": [0, -1], "alu": "add"}`: what an instruction holds besides op, queue, dst, srcs
/// and waits). Throws FormatError naming an unknown field or a bad value.
void instructionFieldsFromJson(const std::string &fields, Instruction &in);

} // namespace neuron::runtime
