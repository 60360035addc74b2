// The Program class of neuronsim._C: a compiled program, its buffer table, and running it.
#include "Bindings.h"
#include "TorchBridge.h"

#include "runtime/program/Program.h"
#include "runtime/program/Serialize.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace neuron::python {
namespace {

/// stats["origin_busy_ns"] = {origin: busy ns} and stats["origin_costs"] = {origin: {busy_ns,
/// engine_ns: {engine: ns}, hbm_bytes, flops}}, largest busy time first; "<no origin>" for
/// instructions without one.
void addOriginStats(const runtime::Program &p, const std::vector<runtime::OriginCost> &costs,
                    py::dict &stats) {
  std::vector<size_t> order;
  for (size_t i = 0; i < costs.size(); ++i)
    if (costs[i].busyNs > 0)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a].busyNs > costs[b].busyNs; });
  py::dict busy, detail;
  for (size_t i : order) {
    py::str name(i < p.origins.size() ? p.origins[i] : std::string("<no origin>"));
    const runtime::OriginCost &c = costs[i];
    busy[name] = c.busyNs;
    py::dict engines;
    for (int e = 0; e < runtime::kNumEngines; ++e)
      if (c.engineNs[e] > 0)
        engines[runtime::engineName(runtime::Engine(e))] = c.engineNs[e];
    py::dict one;
    one["busy_ns"] = c.busyNs;
    one["engine_ns"] = engines;
    one["hbm_bytes"] = c.hbmBytes;
    one["flops"] = c.flops;
    detail[name] = one;
  }
  stats["origin_busy_ns"] = busy;
  stats["origin_costs"] = detail;
}

using runtime::BufferDecl;
using runtime::Program;

const char *kindName(BufferDecl::Kind kind) {
  switch (kind) {
  case BufferDecl::Kind::Input: return "input";
  case BufferDecl::Kind::Output: return "output";
  case BufferDecl::Kind::Internal: return "internal";
  case BufferDecl::Kind::Constant: return "constant";
  }
  return "unknown";
}

py::list bufferList(const Program &program) {
  py::list buffers;
  for (const BufferDecl &buffer : program.buffers) {
    py::dict entry;
    entry["name"] = buffer.name;
    entry["kind"] = kindName(buffer.kind);
    entry["index"] = buffer.index;
    entry["dtype"] = runtime::dtypeName(buffer.dtype);
    entry["shape"] = py::tuple(py::cast(buffer.shape));
    buffers.append(std::move(entry));
  }
  return buffers;
}

} // namespace

py::dict statsToDict(const runtime::RunStats &stats) {
  py::dict busy;
  for (const char *engine : {"tensor", "vector", "scalar", "gpsimd", "dma"})
    busy[engine] = 0.0;
  for (const auto &[engine, ns] : stats.engineBusyNs)
    busy[py::str(engine)] = ns;
  py::dict utilization;
  for (const char *engine : {"tensor", "vector", "scalar", "gpsimd", "dma"})
    utilization[engine] = 0.0;
  for (const auto &[engine, share] : stats.engineUtilization)
    utilization[py::str(engine)] = share;
  py::dict out;
  out["sim_ns"] = stats.simNs;
  out["flops"] = stats.flops;
  out["hbm_bytes"] = stats.hbmBytes;
  out["instructions"] = stats.instructions;
  out["engine_busy_ns"] = busy;
  out["mfu"] = stats.mfu;
  out["roofline_ns"] = stats.rooflineNs;
  out["engine_utilization"] = utilization;
  out["peak_tflops"] = stats.peakFlopsPerNs / 1000.0;
  out["min_hbm_bytes"] = stats.minimalHbmBytes;
  out["dma_transfers"] = stats.dmaTransfers;
  out["dma_bytes"] = stats.dmaBytes;
  out["matmuls"] = stats.matmuls;
  out["collectives"] = stats.collectives;
  out["collective_ns"] = stats.collectiveNs;
  out["exposed_collective_ns"] = stats.exposedCollectiveNs;
  return out;
}

void bindProgram(py::module_ &m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "Program",
                                                "A compiled program for one simulated NeuronCore.")
      .def_static(
          "from_json", [](const std::string &text) { return runtime::programFromJson(text); },
          py::arg("text"), "Reads a program from its JSON form (raises FormatError).")
      .def(
          "to_json", [](const Program &p, int indent) { return runtime::programToJson(p, indent); },
          py::arg("indent") = -1, "The program's JSON form.")
      .def_static(
          "from_bytes",
          [](const py::bytes &data) {
            std::string_view view(data);
            std::vector<uint8_t> bytes(view.begin(), view.end());
            py::gil_scoped_release release;
            return runtime::programFromCbor(bytes);
          },
          py::arg("data"),
          "Reads a program from its CBOR form (Program.to_bytes(); raises FormatError).")
      .def(
          "to_bytes",
          [](const Program &p) {
            std::vector<uint8_t> bytes;
            {
              py::gil_scoped_release release;
              bytes = runtime::programToCbor(p);
            }
            return py::bytes(reinterpret_cast<const char *>(bytes.data()), bytes.size());
          },
          "The program's CBOR form: compact, for storage (the disk compile cache).")
      .def_readonly("target", &Program::target)
      .def_readonly("flops", &Program::flops)
      .def_readonly("origins", &Program::origins)
      .def_property_readonly(
          "num_instructions", [](const Program &p) { return p.instructions.size(); },
          "Static instructions (a loop body counts once; run stats count executed ones).")
      .def_property_readonly(
          "num_loops", [](const Program &p) { return p.loops.size(); },
          "Counted loops over ranges of the instructions.")
      .def_property_readonly(
          "uses_random",
          [](const Program &p) {
            return std::any_of(p.instructions.begin(), p.instructions.end(),
                               [](const runtime::Instruction &i) {
                                 return i.opcode == runtime::Opcode::Random;
                               });
          },
          "Whether the program draws random numbers (its runs take a seed).")
      .def_property_readonly(
          "groups",
          [](const Program &p) {
            py::list groups;
            for (const runtime::CollectiveGroup &g : p.groups)
              groups.append(py::make_tuple(g.name, g.size));
            return groups;
          },
          "Process groups of the program's collectives: (name, ranks) tuples.")
      .def_property_readonly("buffers", &bufferList,
                             "HBM buffers: dicts with name, kind, index, dtype, shape.")
      .def(
          "run",
          [](const Program &p, const py::sequence &inputs, bool timingOnly,
             const std::optional<std::string> &trace, bool originTimes, bool checkHazards,
             const py::object &collective, uint64_t seed) {
            BridgeRunOptions options;
            options.collective = collective;
            options.seed = seed;
            options.checkHazards = checkHazards;
            options.timingOnly = timingOnly;
            options.tracePath = trace.value_or("");
            options.originTimes = originTimes;
            BridgeRunResult result = runWithDLPack(p, inputs, options);
            py::dict stats = statsToDict(result.stats);
            if (originTimes)
              addOriginStats(p, result.originCosts, stats);
            return py::make_tuple(result.outputs, stats);
          },
          py::arg("inputs"), py::arg("timing_only") = false, py::arg("trace") = py::none(),
          py::arg("origin_times") = false, py::arg("check_hazards") = true,
          py::arg("collective") = py::none(), py::arg("seed") = 0,
          "Runs on the simulator. inputs: DLPack capsules (torch.utils.dlpack.to_dlpack) in "
          "graph-input order. timing_only: skip the numbers (outputs have the right shapes, "
          "contents undefined). trace: path of a Chrome trace / Perfetto JSON file to write. "
          "origin_times: add stats['origin_busy_ns'], queue time per ATen origin. check_hazards: "
          "functional runs raise SimulationError when the simulated schedule breaks program "
          "order between queues or a read finds on-chip memory never written. collective: "
          "runs the program's collectives, collective(kind, reduce, group_name, group_size, "
          "nbytes, src, dst, ready_ns) -> complete_ns, src/dst DLPack capsules of HBM (None "
          "when timing_only), valid during the call. seed: keys the numbers of random instructions. "
          "Returns (output DLPack capsules, stats dict).")
      .def("__repr__", [](const Program &p) {
        return "<neuronsim._C.Program target=" + p.target +
               " instructions=" + std::to_string(p.instructions.size()) +
               " buffers=" + std::to_string(p.buffers.size()) + ">";
      });
}

} // namespace neuron::python
