// DLPack capsules <-> libtorch tensors <-> simulator buffers (the only libtorch user).
#include "TorchBridge.h"

#include "runtime/program/Target.h"
#include "runtime/simulator/Trace.h"

#include <ATen/DLConvertor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace neuron::python {
namespace {

using runtime::BufferDecl;
using runtime::DType;

constexpr const char *kCapsuleName = "dltensor";
constexpr const char *kUsedCapsuleName = "used_dltensor";

std::optional<DType> runtimeDType(c10::ScalarType t) {
  switch (t) {
  case c10::ScalarType::Float: return DType::F32;
  case c10::ScalarType::BFloat16: return DType::BF16;
  case c10::ScalarType::Half: return DType::F16;
  case c10::ScalarType::Long: return DType::I64;
  case c10::ScalarType::Int: return DType::I32;
  case c10::ScalarType::Char: return DType::I8;
  case c10::ScalarType::Byte: return DType::U8;
  case c10::ScalarType::Bool: return DType::Bool;
  case c10::ScalarType::UInt32: return DType::U32;
  case c10::ScalarType::UInt16: return DType::U16;
  case c10::ScalarType::Float8_e4m3fn: return DType::F8E4M3FN;
  case c10::ScalarType::Float8_e5m2: return DType::F8E5M2;
  default: return std::nullopt;
  }
}

c10::ScalarType torchDType(DType t) {
  switch (t) {
  case DType::F32: return c10::ScalarType::Float;
  case DType::BF16: return c10::ScalarType::BFloat16;
  case DType::F16: return c10::ScalarType::Half;
  case DType::I64: return c10::ScalarType::Long;
  case DType::I32: return c10::ScalarType::Int;
  case DType::I8: return c10::ScalarType::Char;
  case DType::U8: return c10::ScalarType::Byte;
  case DType::Bool: return c10::ScalarType::Bool;
  case DType::U32: return c10::ScalarType::UInt32;
  case DType::U16: return c10::ScalarType::UInt16;
  case DType::F8E4M3FN: return c10::ScalarType::Float8_e4m3fn;
  case DType::F8E5M2: return c10::ScalarType::Float8_e5m2;
  }
  throw std::invalid_argument("program buffer has an unknown dtype");
}

std::string shapeString(c10::IntArrayRef shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

// Takes ownership of the DLPack tensor in `obj` (marking the capsule used, as consumers must).
at::Tensor tensorFromPython(const py::handle &obj, size_t position) {
  py::object capsule = py::reinterpret_borrow<py::object>(obj);
  if (!PyCapsule_CheckExact(obj.ptr())) {
    if (!py::hasattr(obj, "__dlpack__"))
      throw std::invalid_argument("input " + std::to_string(position) +
                                  ": expected a DLPack capsule or an object with __dlpack__, "
                                  "got " + std::string(py::str(py::type::of(obj))));
    capsule = obj.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName))
    throw std::invalid_argument("input " + std::to_string(position) +
                                ": not an unused DLPack capsule named 'dltensor' (a capsule "
                                "can be consumed only once)");
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  at::Tensor tensor = at::fromDLPack(managed);
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  return tensor;
}

// Frees the tensor of a capsule that no consumer took.
void deleteUnusedCapsule(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName))
    return;
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed && managed->deleter)
    managed->deleter(managed);
}

py::object capsuleFromTensor(const at::Tensor &tensor) {
  DLManagedTensor *managed = at::toDLPack(tensor);
  PyObject *capsule = PyCapsule_New(managed, kCapsuleName, deleteUnusedCapsule);
  if (!capsule) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

// Buffers of `kind` ordered by their index; an index out of range or repeated is an error.
std::vector<const BufferDecl *> buffersByIndex(const runtime::Program &program,
                                               BufferDecl::Kind kind, const char *what) {
  std::vector<const BufferDecl *> byIndex;
  for (const BufferDecl &buffer : program.buffers) {
    if (buffer.kind != kind)
      continue;
    if (buffer.index < 0)
      throw std::invalid_argument(std::string("program ") + what + " buffer '" + buffer.name +
                                  "' has no index");
    if (static_cast<size_t>(buffer.index) >= byIndex.size())
      byIndex.resize(buffer.index + 1, nullptr);
    if (byIndex[buffer.index])
      throw std::invalid_argument(std::string("program has two ") + what + " buffers with index " +
                                  std::to_string(buffer.index));
    byIndex[buffer.index] = &buffer;
  }
  return byIndex;
}

at::Tensor checkedInput(at::Tensor tensor, const BufferDecl &buffer, size_t position) {
  std::string where = "input " + std::to_string(position) + " ('" + buffer.name + "')";
  if (!tensor.device().is_cpu())
    throw std::invalid_argument(where + ": expected a CPU tensor, got one on " +
                                tensor.device().str());
  std::optional<DType> dtype = runtimeDType(tensor.scalar_type());
  if (!dtype || *dtype != buffer.dtype)
    throw std::invalid_argument(where + ": expected dtype " + runtime::dtypeName(buffer.dtype) +
                                ", got " + c10::toString(tensor.scalar_type()));
  if (!tensor.sizes().equals(buffer.shape))
    throw std::invalid_argument(where + ": expected shape " + shapeString(buffer.shape) +
                                ", got " + shapeString(tensor.sizes()));
  return tensor.contiguous();
}

/// RunOptions::collective calling a Python callable (see BridgeRunOptions::collective).
runtime::CollectiveHook pythonCollectiveHook(const py::object &callable) {
  return [callable](const runtime::CollectiveCall &c) -> double {
    py::gil_scoped_acquire gil;
    auto view = [&](const void *data, int64_t elements) -> py::object {
      if (!data)
        return py::none();
      at::Tensor t = at::from_blob(const_cast<void *>(data), {elements},
                                   at::TensorOptions().dtype(torchDType(c.dtype)));
      return capsuleFromTensor(t);
    };
    try {
      const int64_t nbytes =
          std::max(c.srcElements, c.dstElements) * runtime::dtypeSize(c.dtype);
      py::object complete = callable(runtime::collectiveKindName(c.kind),
                                      runtime::aluOpName(c.reduce), c.group->name,
                                      c.group->size, nbytes, view(c.src, c.srcElements),
                                      view(c.dst, c.dstElements), c.readyNs);
      return complete.cast<double>();
    } catch (py::error_already_set &e) {
      throw runtime::SimulationError("instruction " + std::to_string(c.instruction) +
                                     " (collective over group \"" + c.group->name +
                                     "\"): " + e.what());
    } catch (const py::cast_error &) {
      throw runtime::SimulationError("instruction " + std::to_string(c.instruction) +
                                     " (collective): the collective hook must return the "
                                     "completion time in ns (a float)");
    }
  };
}

} // namespace

BridgeRunResult runWithDLPack(const runtime::Program &program, const py::sequence &inputs,
                              const BridgeRunOptions &runOptions) {
  const runtime::Target *target = runtime::findTarget(program.target);
  if (!target)
    throw runtime::SimulationError("program is for unknown target '" + program.target + "'");

  std::vector<const BufferDecl *> inputBuffers =
      buffersByIndex(program, BufferDecl::Kind::Input, "input");
  std::vector<const BufferDecl *> outputBuffers =
      buffersByIndex(program, BufferDecl::Kind::Output, "output");
  size_t numInputs = py::len(inputs);
  if (inputBuffers.size() > numInputs)
    throw std::invalid_argument("program takes " + std::to_string(inputBuffers.size()) +
                                " inputs, got " + std::to_string(numInputs));
  for (size_t i = 0; i < outputBuffers.size(); ++i)
    if (!outputBuffers[i])
      throw std::invalid_argument("program has no output buffer with index " + std::to_string(i));

  // Inputs without a buffer are unused by the program; they are still consumed.
  std::vector<at::Tensor> inputTensors;
  std::vector<const void *> inputPtrs(numInputs, nullptr);
  inputTensors.reserve(numInputs);
  for (size_t i = 0; i < numInputs; ++i) {
    at::Tensor tensor = tensorFromPython(inputs[i], i);
    if (i < inputBuffers.size() && inputBuffers[i]) {
      tensor = checkedInput(std::move(tensor), *inputBuffers[i], i);
      inputPtrs[i] = tensor.const_data_ptr();
    }
    inputTensors.push_back(std::move(tensor));
  }

  std::vector<at::Tensor> outputTensors;
  std::vector<void *> outputPtrs;
  for (const BufferDecl *buffer : outputBuffers) {
    outputTensors.push_back(
        at::empty(buffer->shape, at::TensorOptions().dtype(torchDType(buffer->dtype))));
    outputPtrs.push_back(outputTensors.back().data_ptr());
  }

  BridgeRunResult result;
  runtime::RunOptions options;
  options.timingOnly = runOptions.timingOnly;
  options.checkHazards = runOptions.checkHazards;
  options.seed = runOptions.seed;
  std::vector<runtime::InstructionTiming> timeline;
  if (!runOptions.tracePath.empty())
    options.timeline = &timeline;
  if (runOptions.originTimes)
    options.originCosts = &result.originCosts;
  if (!runOptions.collective.is_none())
    options.collective = pythonCollectiveHook(runOptions.collective);
  // Ctrl-C stops a run: Python's signal handlers run here (main thread), and the
  // KeyboardInterrupt they raise leaves the run as error_already_set.
  options.poll = [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0)
      throw py::error_already_set();
  };
  {
    py::gil_scoped_release release;
    result.stats = runtime::simulate(program, *target, inputPtrs, outputPtrs, options);
    if (!runOptions.tracePath.empty())
      runtime::writeTrace(runOptions.tracePath, program, timeline, &result.stats);
  }
  for (const at::Tensor &tensor : outputTensors)
    result.outputs.append(capsuleFromTensor(tensor));
  return result;
}

} // namespace neuron::python
