// The Program class of neuronsim._C: a compiled program, its buffer table, and running it.
#include "Bindings.h"
#include "TorchBridge.h"

#include "runtime/Program.h"
#include "runtime/Serialize.h"

#include <pybind11/stl.h>

#include <memory>
#include <string>

namespace py = pybind11;

namespace neuron::python {
namespace {

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
  py::dict out;
  out["sim_ns"] = stats.simNs;
  out["flops"] = stats.flops;
  out["hbm_bytes"] = stats.hbmBytes;
  out["instructions"] = stats.instructions;
  out["engine_busy_ns"] = busy;
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
      .def_readonly("target", &Program::target)
      .def_readonly("flops", &Program::flops)
      .def_readonly("origins", &Program::origins)
      .def_property_readonly("num_instructions",
                             [](const Program &p) { return p.instructions.size(); })
      .def_property_readonly("buffers", &bufferList,
                             "HBM buffers: dicts with name, kind, index, dtype, shape.")
      .def(
          "run",
          [](const Program &p, const py::sequence &inputs, bool timingOnly) {
            BridgeRunResult result = runWithDLPack(p, inputs, timingOnly);
            return py::make_tuple(result.outputs, statsToDict(result.stats));
          },
          py::arg("inputs"), py::arg("timing_only") = false,
          "Runs on the simulator. inputs: DLPack capsules (torch.utils.dlpack.to_dlpack) in "
          "graph-input order. Returns (output DLPack capsules, stats dict).")
      .def("__repr__", [](const Program &p) {
        return "<neuronsim._C.Program target=" + p.target +
               " instructions=" + std::to_string(p.instructions.size()) +
               " buffers=" + std::to_string(p.buffers.size()) + ">";
      });
}

} // namespace neuron::python
