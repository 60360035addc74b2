// neuron-compile: graph file -> program file, through the same pipeline as the Python
// backend (compiler/Compile.h). Feeds neuron-run in tests and by hand.
//
//   neuron-compile GRAPH.json -o PROGRAM [--target NAME] [--cbor] [--dump-dir DIR]
#include "compiler/Compile.h"
#include "runtime/program/Serialize.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

namespace {
const char *kUsage = "usage: neuron-compile GRAPH -o PROGRAM [--target NAME] [--cbor] "
                     "[--dump-dir DIR]\n"
                     "  writes the program as JSON (default) or CBOR (--cbor)\n";

int fail(const std::string &message) {
  std::cerr << "neuron-compile: " << message << "\n";
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  std::string graph, output;
  bool cbor = false;
  neuron::compiler::CompileOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    if ((a == "-o" || a == "--target" || a == "--dump-dir") && !hasValue) {
      std::cerr << "neuron-compile: " << a << " needs a value\n" << kUsage;
      return 2;
    }
    if (a == "-o")
      output = argv[++i];
    else if (a == "--target")
      options.target = argv[++i];
    else if (a == "--dump-dir")
      options.dumpDir = argv[++i];
    else if (a == "--cbor")
      cbor = true;
    else if (a == "-h" || a == "--help")
      return std::cout << kUsage, 0;
    else if (a.empty() || a[0] == '-' || !graph.empty())
      return std::cerr << "neuron-compile: unexpected argument '" << a << "'\n" << kUsage, 2;
    else
      graph = a;
  }
  if (graph.empty() || output.empty())
    return std::cerr << kUsage, 2;

  std::ifstream in(graph, std::ios::binary);
  if (!in)
    return fail(graph + ": cannot open: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  neuron::compiler::CompileResult result = neuron::compiler::compileGraph(text, options);
  if (!result.ok)
    return fail(graph + ": compilation failed:\n" + result.error);

  std::ofstream out(output, std::ios::binary);
  if (cbor) {
    std::vector<uint8_t> bytes = neuron::runtime::programToCbor(result.program);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  } else {
    out << neuron::runtime::programToJson(result.program, 1) << "\n";
  }
  if (!out)
    return fail(output + ": cannot write");
  return 0;
}
