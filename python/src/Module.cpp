// neuronsim._C: a thin pybind11 layer over the compiler and the simulator.
#include "Bindings.h"

#include "compiler/Compile.h"
#include "compiler/Import/GraphImporter.h"
#include "runtime/program/Isa.h"
#include "runtime/program/Serialize.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/Simulator.h"

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include <memory>
#include <string>

namespace py = pybind11;

namespace neuron::python {
namespace {

// options_json: {"target": "trn2", "dump_dir": "/path" | null}; anything else is an error.
compiler::CompileOptions parseOptions(const std::string &text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.empty() ? "{}" : text);
  } catch (const nlohmann::json::exception &e) {
    throw CompileFailure(std::string("compile options are not valid JSON: ") + e.what());
  }
  if (!json.is_object())
    throw CompileFailure("compile options must be a JSON object");
  compiler::CompileOptions options;
  for (const auto &[key, value] : json.items()) {
    if (key == "target" && value.is_string())
      options.target = value.get<std::string>();
    else if (key == "dump_dir" && (value.is_string() || value.is_null()))
      options.dumpDir = value.is_null() ? "" : value.get<std::string>();
    else if (key == "target" || key == "dump_dir")
      throw CompileFailure("compile option '" + key + "' must be a string");
    else
      throw CompileFailure("unknown compile option '" + key + "'; valid options: target, dump_dir");
  }
  return options;
}

std::shared_ptr<runtime::Program> compileGraph(const std::string &graphJson,
                                               const std::string &optionsJson) {
  compiler::CompileOptions options = parseOptions(optionsJson);
  compiler::CompileResult result;
  {
    py::gil_scoped_release release;
    try {
      result = compiler::compileGraph(graphJson, options);
    } catch (const std::exception &e) {
      result.ok = false;
      result.error = std::string("internal compiler error: ") + e.what();
    }
  }
  // Messages quote the graph file, which may hold any bytes: Python decodes them as UTF-8.
  if (!result.ok)
    throw CompileFailure(result.error.empty() ? "compilation failed without a diagnostic"
                                              : compiler::validUtf8(result.error));
  return std::make_shared<runtime::Program>(std::move(result.program));
}

} // namespace
} // namespace neuron::python

PYBIND11_MODULE(_C, m) {
  using namespace neuron;
  m.doc() = "NeuronSim native module: graph-file compiler and NeuronCore simulator.";

  py::register_exception<python::CompileFailure>(m, "CompileError", PyExc_RuntimeError);
  py::register_exception<runtime::SimulationError>(m, "SimulationError", PyExc_RuntimeError);
  py::register_exception<runtime::FormatError>(m, "FormatError", PyExc_ValueError);

  python::bindProgram(m);

  m.def("compile", &python::compileGraph, py::arg("graph_json"), py::arg("options_json") = "{}",
        "Compiles a graph file (compiler/Import/GRAPH_FORMAT.md) to a Program. options_json: "
        "{\"target\": name, \"dump_dir\": path}. Raises CompileError with every diagnostic.");
  m.def("supported_ops", &compiler::supportedAtenOps,
        "The ATen overloads the compiler imports, sorted: [(name, how it runs)]. An op in this "
        "list can still fail to lower for some arguments (compile raises CompileError then).");
  m.attr("PROGRAM_FORMAT_VERSION") = runtime::kProgramFormatVersion;
  m.def("targets", &runtime::targetNames, "Names of the known targets.");
  m.def(
      "default_target", [] { return runtime::defaultTarget().name; }, "The default target.");
  m.def(
      "target_facts",
      [](const std::string &name) {
        const runtime::Target *t = runtime::findTarget(name);
        if (!t)
          throw py::value_error("unknown target '" + name + "'");
        py::dict facts;
        facts["hbm_bytes_per_core"] = t->hbmBytesPerCore;
        facts["hbm_bytes_per_ns"] = t->hbmBytesPerNs;
        facts["host_link_bytes_per_ns"] = t->hostLinkBytesPerNs;
        facts["host_link_latency_ns"] = t->hostLinkLatencyNs;
        facts["logical_cores_per_chip"] = t->logicalCoresPerChip;
        facts["chips_per_node"] = t->chipsPerNode;
        facts["on_chip_bytes_per_ns"] = t->onChipBytesPerNs;
        facts["on_chip_latency_ns"] = t->onChipLatencyNs;
        facts["chip_link_bytes_per_ns"] = t->chipLinkBytesPerNs;
        facts["chip_link_latency_ns"] = t->chipLinkLatencyNs;
        facts["node_link_bytes_per_ns"] = t->nodeLinkBytesPerNs;
        facts["node_link_latency_ns"] = t->nodeLinkLatencyNs;
        facts["collective_launch_ns"] = t->collectiveLaunchNs;
        facts["collective_reduce_step_ns"] = t->collectiveReduceStepNs;
        facts["collective_gather_step_ns"] = t->collectiveGatherStepNs;
        facts["collective_flat_ring"] = t->collectiveFlatRing;
        facts["collective_ring_bytes_per_ns"] = t->collectiveRingBytesPerNs;
        facts["collective_rhd_bytes_per_ns"] = t->collectiveRhdBytesPerNs;
        facts["collective_mesh_max_bytes"] = t->collectiveMeshMaxBytes;
        facts["collective_ring_min_bytes"] = t->collectiveRingMinBytes;
        facts["partitions"] = t->partitions;
        facts["sbuf_bytes_per_partition"] = t->sbufBytesPerPartition;
        facts["psum_bytes_per_partition"] = t->psumBytesPerPartition;
        facts["psum_bank_bytes"] = t->psumBankBytes;
        facts["dma_queues"] = runtime::kNumDmaQueues * t->physicalCores;
        facts["generation"] = runtime::generationName(t->generation);
        facts["tensor_ghz"] = t->tensorGhz;
        facts["vector_ghz"] = t->vectorGhz;
        facts["scalar_ghz"] = t->scalarGhz;
        facts["gpsimd_ghz"] = t->gpsimdGhz;
        facts["min_ii_cycles"] = t->minII;
        facts["access_overhead_cycles"] = t->accessOverheadCycles;
        facts["dma_bytes_per_ns_per_queue"] = t->dmaBytesPerNsPerQueue;
        facts["dma_start_latency_ns"] = t->dmaStartLatencyNs;
        facts["dma_descriptor_min_bytes"] = t->dmaDescriptorMinBytes;
        facts["dma_short_run_bytes"] = t->dmaShortRunBytes;
        facts["dma_packet_min_bytes"] = t->dmaPacketMinBytes;
        return facts;
      },
      py::arg("name"), "The target's memory, DMA and host-link numbers (the neuron device and report use them).");
  m.def(
      "isa_table",
      [] {
        py::list rows;
        for (int i = 0; i < runtime::kNumOpcodes; ++i) {
          const runtime::InstructionInfo &info = runtime::instructionInfo(runtime::Opcode(i));
          py::list engines, generations;
          for (int e = 0; e < runtime::kNumEngines; ++e)
            if (runtime::runsOn(info.opcode, runtime::Engine(e)))
              engines.append(runtime::engineName(runtime::Engine(e)));
          for (auto g : {runtime::Generation::Trn1, runtime::Generation::Trn2,
                         runtime::Generation::Trn3})
            if (runtime::existsOn(info.opcode, g))
              generations.append(runtime::generationName(g));
          py::dict row;
          row["name"] = info.name;
          row["engines"] = engines;
          row["generations"] = generations;
          row["nki"] = info.nki;
          row["cost"] = info.cost;
          rows.append(row);
        }
        return rows;
      },
      "The instruction set (runtime/program/Isa.def): one dict per instruction with its name "
      "(the nki.isa name where NKI has one), engines, generations, nki (bool) and documented "
      "cost formula.");
  m.def(
      "version", [] { return std::string(compiler::compilerVersion()); },
      "Compiler version string (part of every cache key).");
}
