// neuron-run: runs a program file (JSON or CBOR, runtime/program/Serialize.h) on
// the simulator and prints the report. Links only the runtime (no MLIR).
//
//   neuron-run PROGRAM [--target NAME] [--timing-only] [--seed N]
//              [--inputs FILE,FILE,...] [--outputs DIR] [--trace FILE] [--top N]
//
// Inputs: one file per Input buffer, in buffer index order. A file ending in
// .npy must hold the buffer's dtype and shape (bf16 as uint16 bits); any other
// file is raw little-endian bytes of exactly the buffer's size. Without
// --inputs, inputs are random from --seed: floats uniform in [-1, 1), integers
// uniform in [0, 8), bools 0/1. --outputs DIR writes DIR/output<i>.npy.
// Exit status: 0 on success, 1 on any error (message on stderr), 2 on bad usage.
#include "runtime/program/Serialize.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/Trace.h"
#include "tools/neuron-run/Npy.h"
#include "tools/neuron-run/Report.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <random>
#include <stdexcept>

using namespace neuron::runtime;
namespace fs = std::filesystem;

namespace {

const char *kUsage =
    "usage: neuron-run PROGRAM [options]\n"
    "  PROGRAM            program file: JSON or CBOR (told apart by content)\n"
    "  --target NAME      simulated chip (default: the program's target)\n"
    "  --timing-only      time the program only; outputs are not computed\n"
    "  --inputs F1,F2,..  one file per Input buffer, in index order: .npy (dtype and\n"
    "                     shape must match; bf16 as uint16) or raw bytes of the buffer\n"
    "  --seed N           seed of the random inputs used without --inputs (default 0)\n"
    "  --outputs DIR      write each Output buffer to DIR/output<i>.npy\n"
    "  --trace FILE       write the Chrome trace / Perfetto timeline of the run\n"
    "  --top N            ATen nodes listed by busy time (default 8)\n"
    "  --max-bytes N      refuse programs whose inputs and outputs exceed N bytes\n"
    "                     (default 4 GiB)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string program, target, trace, outputs;
  std::vector<std::string> inputs;
  bool timingOnly = false;
  uint64_t seed = 0;
  int top = 8;
  uint64_t maxBytes = uint64_t(4) << 30;
};

uint64_t parseCount(const std::string &flag, const std::string &text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 19)
    throw UsageError(flag + " needs a non-negative integer, got '" + text + "'");
  return std::stoull(text);
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--target") {
      o.target = value();
    } else if (a == "--timing-only") {
      o.timingOnly = true;
    } else if (a == "--trace") {
      o.trace = value();
    } else if (a == "--outputs") {
      o.outputs = value();
    } else if (a == "--seed") {
      o.seed = parseCount(a, value());
    } else if (a == "--top") {
      o.top = int(std::min<uint64_t>(parseCount(a, value()), 1000));
    } else if (a == "--max-bytes") {
      o.maxBytes = parseCount(a, value());
    } else if (a == "--inputs") {
      std::string list = value();
      for (size_t start = 0;;) {
        size_t comma = list.find(',', start);
        o.inputs.push_back(list.substr(start, comma - start));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a);
    } else if (o.program.empty()) {
      o.program = a;
    } else {
      throw UsageError("more than one program file: " + o.program + ", " + a);
    }
  }
  if (o.program.empty())
    throw UsageError("no program file given");
  if (o.timingOnly && !o.outputs.empty())
    throw UsageError("--outputs needs the outputs computed: drop --timing-only");
  if (o.timingOnly && !o.inputs.empty())
    throw UsageError("--inputs has no effect with --timing-only");
  return o;
}

Program loadProgram(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  // JSON starts with '{' (after white space); a CBOR map never starts with one of those bytes.
  size_t first = 0;
  while (first < bytes.size() && std::strchr(" \t\r\n", bytes[first]) && bytes[first])
    ++first;
  try {
    if (first < bytes.size() && bytes[first] == '{')
      return programFromJson(std::string(bytes.begin(), bytes.end()));
    return programFromCbor(bytes);
  } catch (const FormatError &e) {
    throw std::runtime_error(path + ": not a valid program file: " + e.what());
  }
}

/// Byte size of buffer `b`, or an error if its shape is negative or overflows.
uint64_t checkedBytes(const BufferDecl &b, size_t index) {
  unsigned __int128 n = dtypeSize(b.dtype);
  for (int64_t d : b.shape) {
    if (d < 0)
      throw std::runtime_error("buffer " + std::to_string(index) + " '" + b.name +
                               "' has a negative dimension");
    n *= uint64_t(d);
    if (n > (unsigned __int128)(INT64_MAX))
      throw std::runtime_error("buffer " + std::to_string(index) + " '" + b.name +
                               "' is larger than 2^63 bytes");
  }
  return uint64_t(n);
}

void fillRandom(std::vector<uint8_t> &data, DType t, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 7);
  const size_t n = data.size() / size_t(dtypeSize(t));
  for (size_t i = 0; i < n; ++i) {
    uint8_t *p = data.data() + i * size_t(dtypeSize(t));
    float f = real(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    switch (t) {
    case DType::F32: std::memcpy(p, &f, 4); break;
    case DType::BF16: { uint16_t h = uint16_t(bits >> 16); std::memcpy(p, &h, 2); break; }
    case DType::F16: {
      // |f| < 1: a normal or zero half from the float's exponent and top mantissa bits.
      int exp = int((bits >> 23) & 0xff) - 127 + 15;
      uint16_t h = uint16_t((bits >> 16) & 0x8000);
      if (exp > 0)
        h |= uint16_t(exp << 10 | ((bits >> 13) & 0x3ff));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::I64: { int64_t v = small(rng); std::memcpy(p, &v, 8); break; }
    case DType::I32: { int32_t v = small(rng); std::memcpy(p, &v, 4); break; }
    case DType::U32: { uint32_t v = uint32_t(small(rng) & 0xff); std::memcpy(p, &v, 4); break; }
    case DType::U16: { uint16_t v = uint16_t(small(rng) & 0xff); std::memcpy(p, &v, 2); break; }
    case DType::I8: case DType::U8: *p = uint8_t(small(rng)); break;
    // fp8: a random byte of small finite values (sign, exponent <= 6 of e4m3fn / 13 of e5m2)
    case DType::F8E4M3FN: case DType::F8E5M2: *p = uint8_t(small(rng)) & 0xb7; break;
    case DType::Bool: *p = uint8_t(small(rng) & 1); break;
    }
  }
}

void readInput(const std::string &path, const BufferDecl &b, std::vector<uint8_t> &data) {
  if (fs::path(path).extension() == ".npy")
    return neuron::tools::readNpy(path, b.dtype, b.shape, data);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  const auto size = uint64_t(in.tellg());
  if (size != data.size())
    throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, but input '" +
                             b.name + "' (" + dtypeName(b.dtype) + ") needs " +
                             std::to_string(data.size()));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(data.data()), std::streamsize(data.size()));
}

int run(const Options &o) {
  Program program = loadProgram(o.program);
  const std::string targetName = o.target.empty() ? program.target : o.target;
  const Target *target = findTarget(targetName);
  if (!target) {
    std::string names;
    for (const std::string &n : targetNames())
      names += (names.empty() ? "" : ", ") + n;
    throw std::runtime_error("unknown target '" + targetName + "' (known: " + names + ")");
  }

  // Host memory of the Input and Output buffers, indexed by BufferDecl::index.
  std::vector<std::vector<uint8_t>> inData, outData;
  std::vector<const BufferDecl *> inDecl, outDecl;
  uint64_t total = 0;
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const BufferDecl &b = program.buffers[i];
    if (b.kind != BufferDecl::Kind::Input && b.kind != BufferDecl::Kind::Output)
      continue;
    const uint64_t size = checkedBytes(b, i);
    const bool in = b.kind == BufferDecl::Kind::Input;
    auto &decls = in ? inDecl : outDecl;
    if (b.index < 0 || size_t(b.index) >= program.buffers.size())
      throw std::runtime_error("buffer " + std::to_string(i) + " '" + b.name + "' has " +
                               (in ? "input" : "output") + " index " + std::to_string(b.index));
    if (decls.size() <= size_t(b.index))
      decls.resize(size_t(b.index) + 1, nullptr);
    if (decls[b.index])
      throw std::runtime_error("buffers '" + decls[b.index]->name + "' and '" + b.name +
                               "' are both " + (in ? "input " : "output ") +
                               std::to_string(b.index));
    decls[b.index] = &b;
    total += size;
    if (total > o.maxBytes)
      throw std::runtime_error("the program's inputs and outputs need more than " +
                               std::to_string(o.maxBytes) + " bytes (--max-bytes)");
  }
  for (auto *decls : {&inDecl, &outDecl})
    for (size_t i = 0; i < decls->size(); ++i)
      if (!(*decls)[i])
        throw std::runtime_error(std::string("the program has no ") +
                                 (decls == &inDecl ? "input " : "output ") +
                                 std::to_string(i) + " buffer but a later one");

  std::vector<const void *> inputs(inDecl.size(), nullptr);
  std::vector<void *> outputs(outDecl.size(), nullptr);
  if (!o.timingOnly) {
    if (!o.inputs.empty() && o.inputs.size() != inDecl.size())
      throw std::runtime_error("--inputs has " + std::to_string(o.inputs.size()) +
                               " files but the program has " + std::to_string(inDecl.size()) +
                               " inputs");
    std::mt19937_64 rng(o.seed);
    inData.resize(inDecl.size());
    for (size_t i = 0; i < inDecl.size(); ++i) {
      inData[i].resize(checkedBytes(*inDecl[i], i));
      if (o.inputs.empty())
        fillRandom(inData[i], inDecl[i]->dtype, rng);
      else
        readInput(o.inputs[i], *inDecl[i], inData[i]);
      inputs[i] = inData[i].data();
    }
    outData.resize(outDecl.size());
    for (size_t i = 0; i < outDecl.size(); ++i) {
      outData[i].resize(checkedBytes(*outDecl[i], i));
      outputs[i] = outData[i].data();
    }
  }

  std::vector<InstructionTiming> timeline;
  std::vector<OriginCost> originCosts;
  RunOptions options;
  options.timingOnly = o.timingOnly;
  options.originCosts = &originCosts;
  if (!o.trace.empty())
    options.timeline = &timeline;
  RunStats stats = simulate(program, *target, inputs, outputs, options);
  std::vector<double> originBusyNs;
  for (const OriginCost &c : originCosts)
    originBusyNs.push_back(c.busyNs);

  std::cout << neuron::tools::formatReport(program, fs::path(o.program).filename().string(),
                                           target->name, o.timingOnly, stats, originBusyNs,
                                           o.top);
  if (!o.trace.empty()) {
    writeTrace(o.trace, program, timeline, &stats);
    std::cout << "\n  trace: " << o.trace << "\n";
  }
  if (!o.outputs.empty()) {
    fs::create_directories(o.outputs);
    for (size_t i = 0; i < outDecl.size(); ++i) {
      std::string path = (fs::path(o.outputs) / ("output" + std::to_string(i) + ".npy")).string();
      neuron::tools::writeNpy(path, outDecl[i]->dtype, outDecl[i]->shape, outData[i]);
      std::cout << "  output " << i << " (" << outDecl[i]->name << "): " << path << "\n";
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const UsageError &e) {
    std::cerr << "neuron-run: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const SimulationError &e) {
    std::cerr << "neuron-run: simulation failed: " << e.what() << "\n";
  } catch (const std::bad_alloc &) {
    std::cerr << "neuron-run: out of memory (the program's buffers are too large)\n";
  } catch (const std::exception &e) {
    std::cerr << "neuron-run: error: " << e.what() << "\n";
  }
  return 1;
}
