// The compiler's entry point: graph file (JSON) -> Program, through the one pipeline.
#pragma once

#include "runtime/program/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuron::compiler {

struct CompileOptions {
  std::string target = "trn2";  // a runtime target name
  std::string dumpDir;          // when set: graph.json, one .mlir per stage, program.json
};

struct CompileResult {
  bool ok = false;
  std::string error;            // every diagnostic, one per line, when !ok
  runtime::Program program;
};

/// Compiles a graph file's text (see compiler/Import/GRAPH_FORMAT.md). Never throws
/// for bad input: problems come back in `error`.
CompileResult compileGraph(const std::string &graphJson, const CompileOptions &options);

/// Version string of the compiler, part of every cache key.
const char *compilerVersion();

/// HBM bytes of one NeuronCore of `target` (the chip's HBM over its cores, HARDWARE.md),
/// 0 for an unknown target.
int64_t hbmBytesPerCore(const std::string &target);
/// "the 12.0 GiB of HBM of one trn2 NeuronCore", for messages.
std::string hbmDescription(const std::string &target);

/// `text` with every byte that is not part of valid UTF-8 replaced by '?': messages
/// quote graph files, and Python decodes them as UTF-8.
std::string validUtf8(const std::string &text);

} // namespace neuron::compiler
