// The compiler's entry point: graph file (JSON) -> Program, through the one pipeline.
#pragma once

#include "runtime/program/Program.h"

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

} // namespace neuron::compiler
