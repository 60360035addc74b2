// Private glue between Serialize.cpp (writer) and SerializeRead.cpp (reader).
#pragma once

#include "runtime/program/Program.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace neuron::runtime::detail {

/// Decodes padded RFC 4648 base64; false on malformed input.
bool base64Decode(const std::string &in, std::vector<uint8_t> &out);

/// Builds a Program from a parsed document; throws FormatError.
Program programFromTree(const nlohmann::json &tree);

/// Reads an object of instruction fields (as in a program's instruction: "imm", "alu", ...) into
/// `in`; throws FormatError on an unknown key or a bad value.
void instructionFieldsFromTree(const nlohmann::json &fields, Instruction &in);

} // namespace neuron::runtime::detail
