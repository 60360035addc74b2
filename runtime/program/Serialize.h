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

} // namespace neuron::runtime
