// Chrome trace-event / Perfetto JSON timelines (see Trace.h).
//
// Written by hand rather than through a JSON DOM: a trace of a large model has
// millions of events, and a DOM of them would take gigabytes.
#include "runtime/simulator/Trace.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <stdexcept>

namespace neuron::runtime {

namespace {

void appendEscaped(std::string &out, const std::string &s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c); // UTF-8 passes through
      }
    }
  }
  out += '"';
}

/// Fixed notation with 6 decimals (microseconds to the picosecond).
void appendFixed(std::string &out, double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) { // NaN/Inf are not JSON
    out += '0';
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6);
  out.append(buf, r.ptr);
}

/// Shortest round-trip notation, for stats.
void appendNumber(std::string &out, double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) {
    out += '0';
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void appendInt(std::string &out, uint64_t v) { out += std::to_string(v); }

int64_t operandBytes(const Instruction &inst) {
  if (inst.opcode == Opcode::DmaCopy || inst.opcode == Opcode::DmaGather)
    return inst.dst.numBytes();
  if (inst.opcode == Opcode::DmaScatter)
    return inst.srcs[0].numBytes();
  int64_t b = inst.dst.numBytes();
  for (const auto &s : inst.srcs)
    b += s.numBytes();
  return b;
}

/// "Scalar>=2", or with loop terms "Scalar>=1+2*i0+1*(i1%4)" (i<level> is
/// the induction variable of the loop at that level).
void appendWait(std::string &out, const SemWait &w) {
  out += '"';
  out += traceLaneName(w.queue);
  out += ">=";
  out += std::to_string(w.value);
  for (const LoopTerm &t : w.valueTerms) {
    out += t.coef < 0 ? "-" : "+";
    out += std::to_string(t.coef < 0 ? 0 - uint64_t(t.coef) : uint64_t(t.coef));
    out += t.modulus > 0 ? "*(i" : "*i";
    out += std::to_string(t.level);
    if (t.modulus > 0)
      out += "%" + std::to_string(t.modulus) + ")";
  }
  out += '"';
}

void appendMeta(std::string &out, const char *name, int tid,
                const char *argKey, const std::string &argValue,
                bool quoted = true) {
  out += "{\"name\":\"";
  out += name;
  out += "\",\"ph\":\"M\",\"pid\":0";
  if (tid >= 0) {
    out += ",\"tid\":";
    out += std::to_string(tid);
  }
  out += ",\"args\":{\"";
  out += argKey;
  out += "\":";
  if (quoted)
    appendEscaped(out, argValue);
  else
    out += argValue;
  out += "}},\n";
}

void appendStats(std::string &out, const RunStats &s) {
  auto field = [&](const char *key, double v) {
    out += ",\"";
    out += key;
    out += "\":";
    appendNumber(out, v);
  };
  field("sim_ns", s.simNs);
  field("flops", double(s.flops));
  field("mfu", s.mfu);
  field("roofline_ns", s.rooflineNs);
  field("hbm_bytes", double(s.hbmBytes));
  field("minimal_hbm_bytes", double(s.minimalHbmBytes));
  out += ",\"engine_utilization\":{";
  bool first = true;
  for (const auto &[engine, u] : s.engineUtilization) {
    if (!first)
      out += ',';
    first = false;
    appendEscaped(out, engine);
    out += ':';
    appendNumber(out, u);
  }
  out += '}';
}

} // namespace

std::string traceLaneName(int q) {
  if (q >= kQueuesPerCore && q < kNumQueues) // physical core 1.. of a logical core
    return "Core " + std::to_string(coreOfQueue(q)) + " " + traceLaneName(localQueue(q));
  switch (q) {
  case kQueueTensor:
    return "Tensor";
  case kQueueVector:
    return "Vector";
  case kQueueScalar:
    return "Scalar";
  case kQueueGpSimd:
    return "GpSimd";
  case kQueueCollective:
    return "Collective";
  default:
    if (q >= kQueueDma0 && q < kQueueDma0 + kNumDmaQueues)
      return "DMA q" + std::to_string(q - kQueueDma0);
    return "queue " + std::to_string(q);
  }
}

std::string traceToJson(const Program &program,
                        const std::vector<InstructionTiming> &timeline,
                        const RunStats *stats) {
  for (const InstructionTiming &t : timeline) {
    if (t.instruction >= program.instructions.size())
      throw std::invalid_argument(
          "trace: timeline names instruction " + std::to_string(t.instruction) +
          " but the program has " +
          std::to_string(program.instructions.size()));
    if (t.queue >= kNumQueues)
      throw std::invalid_argument("trace: timeline names queue " +
                                  std::to_string(t.queue));
  }

  std::string out;
  out.reserve(512 + timeline.size() * 200);
  out += "{\"traceEvents\":[\n";
  std::string process = "NeuronCore";
  if (!program.target.empty()) {
    process += " (";
    process += program.target;
    process += ')';
  }
  appendMeta(out, "process_name", -1, "name", process);
  int cores = 1; // lanes of the physical cores the timeline uses
  for (const InstructionTiming &t : timeline)
    cores = std::max(cores, coreOfQueue(t.queue) + 1);
  for (int q = 0; q < std::min(cores * kQueuesPerCore, kNumQueues); ++q) {
    appendMeta(out, "thread_name", q, "name", traceLaneName(q));
    appendMeta(out, "thread_sort_index", q, "sort_index", std::to_string(q),
               false);
  }

  // Escape each origin once.
  std::vector<std::string> origins(program.origins.size());
  for (size_t i = 0; i < origins.size(); ++i)
    appendEscaped(origins[i], program.origins[i]);

  std::vector<size_t> order(timeline.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const InstructionTiming &x = timeline[a], &y = timeline[b];
    if (x.startNs != y.startNs)
      return x.startNs < y.startNs;
    return x.queue < y.queue;
  });

  bool first = true;
  for (size_t k : order) {
    const InstructionTiming &t = timeline[k];
    const Instruction &inst = program.instructions[t.instruction];
    if (!first)
      out += ",\n";
    first = false;
    out += "{\"name\":\"";
    out += opcodeName(inst.opcode);
    out += "\",\"cat\":\"";
    out += engineName(engineOfQueue(t.queue));
    out += "\",\"ph\":\"X\",\"pid\":0,\"tid\":";
    out += std::to_string(t.queue);
    out += ",\"ts\":";
    appendFixed(out, t.startNs / 1e3);
    out += ",\"dur\":";
    appendFixed(out, (t.endNs - t.startNs) / 1e3);
    out += ",\"args\":{\"instruction\":";
    appendInt(out, t.instruction);
    if (inst.origin < origins.size()) {
      out += ",\"origin\":";
      out += origins[inst.origin];
    }
    out += ",\"bytes\":";
    appendInt(out, uint64_t(operandBytes(inst)));
    out += ",\"waits\":[";
    for (size_t w = 0; w < inst.waits.size(); ++w) {
      if (w)
        out += ',';
      appendWait(out, inst.waits[w]);
    }
    out += "],\"complete_us\":";
    appendFixed(out, t.completeNs / 1e3);
    if (inst.opcode == Opcode::Activation) {
      out += ",\"func\":\"";
      out += actFuncName(inst.func);
      out += '"';
    } else if (inst.opcode == Opcode::TensorTensor ||
               inst.opcode == Opcode::TensorScalar ||
               inst.opcode == Opcode::TensorReduce) {
      out += ",\"alu\":\"";
      out += aluOpName(inst.alu);
      out += '"';
    }
    out += "}}";
  }
  if (first) // no instruction events: drop the last metadata comma
    out.erase(out.size() - 2, 1);
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"target\":";
  appendEscaped(out, program.target);
  out += ",\"instructions\":";
  appendInt(out, program.instructions.size());
  if (stats)
    appendStats(out, *stats);
  out += "}}\n";
  return out;
}

void writeTrace(const std::string &path, const Program &program,
                const std::vector<InstructionTiming> &timeline,
                const RunStats *stats) {
  const std::string json = traceToJson(program, timeline, stats);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f)
    throw std::runtime_error("cannot open trace file '" + path +
                             "' for writing");
  f.write(json.data(), std::streamsize(json.size()));
  f.close();
  if (!f)
    throw std::runtime_error("cannot write trace file '" + path + "'");
}

} // namespace neuron::runtime
