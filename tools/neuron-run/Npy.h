// .npy files (NumPy format 1.0/2.0/3.0) for neuron-run's inputs and outputs.
// Only what neuron-run needs: C-order arrays of the program's dtypes. bf16 has
// no NumPy dtype: it is read and written as uint16 bit patterns ('<u2').
#pragma once

#include "runtime/program/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuron::tools {

/// NumPy descr of `t` ("<f4", "|b1", ...; bf16: "<u2").
std::string npyDescr(runtime::DType t);

/// Reads the .npy file `path` into `data`, which must already have the size of
/// a buffer of dtype `t` and shape `shape`. Throws std::runtime_error naming
/// the file if the header is malformed or its dtype, shape or size differ.
void readNpy(const std::string &path, runtime::DType t, const std::vector<int64_t> &shape,
             std::vector<uint8_t> &data);

/// Writes `data` (dtype `t`, C order, shape `shape`) to `path` as .npy
/// version 1.0. Throws std::runtime_error if the file cannot be written.
void writeNpy(const std::string &path, runtime::DType t, const std::vector<int64_t> &shape,
              const std::vector<uint8_t> &data);

} // namespace neuron::tools
